/** Users, roles and API tokens (G1) with their reach over edges (G4); tokens are stored only as SHA-256. */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { and, asc, count, eq, isNull, sql } from "drizzle-orm";
import { OngridError } from "../../skill/errors.ts";
import type { Database } from "../db/client.ts";
import { apiTokens, users, type ApiTokenRow, type UserRow } from "../db/schema/index.ts";
import { hashToken } from "../fleet/edge-store.ts";
import { parseSelector } from "../fleet/selector.ts";
import type { Caller } from "./caller.ts";

/** The roles, each allowed what the ones before it are. */
export const ROLES = ["viewer", "operator", "approver", "admin"] as const;
/** A user's role. */
export type Role = (typeof ROLES)[number];

/** User ids: lower-case names. */
export const USER_ID_PATTERN = /^[a-z][a-z0-9._-]{0,63}$/;
/** Prefix of user API tokens (edge tokens start with ogt_). */
const TOKEN_PREFIX = "ogu_";
/** last_used_at is written at most this often per token (it is on every call's path). */
const LAST_USED_EVERY_MS = 60_000;

/** Whether `role` is at least `min` (unknown roles are below everything). */
export function roleAtLeast(role: string, min: Role): boolean {
  const have = ROLES.indexOf(role as Role);
  return have >= 0 && have >= ROLES.indexOf(min);
}

/** Refuses anything but a known role, naming the field. */
export function checkRole(role: string, field = "role"): Role {
  if (!ROLES.includes(role as Role)) throw new OngridError("invalid_argument", `${field}: "${role}" is not a role (rule: enum ${ROLES.join("|")})`);
  return role as Role;
}

/** Refuses a user id that is not a lower-case name. */
export function checkUserId(id: string, field = "id"): string {
  if (!USER_ID_PATTERN.test(id)) {
    throw new OngridError("invalid_argument", `${field}: "${id.slice(0, 80)}" is not a valid user id (rule: pattern ${USER_ID_PATTERN.source})`, "use a lower-case name, e.g. alice or ci-bot");
  }
  return id;
}

function checkReach(reach: string, field: string): string {
  parseSelector(reach, field);
  return reach.trim();
}

/** A token as shown: never the token itself. */
export type TokenInfo = Omit<ApiTokenRow, "tokenHash">;

/** An authenticated caller plus the rows it came from. */
export interface Authenticated {
  caller: Caller;
  user: UserRow;
  token: TokenInfo;
}

function info(row: ApiTokenRow): TokenInfo {
  const { tokenHash: _, ...rest } = row;
  return rest;
}

/** Most tokens whose lookup the identity store keeps (the oldest is dropped first). */
const TOKEN_CACHE_MAX = 10_000;

/** The identity store's options. */
export interface IdentityStoreOptions {
  /**
   * How long a token's lookup (its row and its user's) is reused before the database is asked
   * again, in ms (server.token_cache); 0 asks on every request. Revocations and user changes made
   * through this store apply at once; made elsewhere (another manager on the same database), within
   * this time. Every check (revoked, expired, disabled) runs on every request either way.
   */
  tokenCacheMs?: number;
  /** Monotonic ms for the token cache's ages (tests pass their own). */
  clock?: () => number;
}

type TokenLookup = { token: ApiTokenRow; user: UserRow | null } | undefined;

/** Creates the identity store over the manager's database. */
export function createIdentityStore(database: Database, options: IdentityStoreOptions = {}) {
  const { db } = database;
  const lastUsedWritten = new Map<string, number>();
  const cacheMs = options.tokenCacheMs ?? 0;
  const clock = options.clock ?? (() => performance.now());
  // Lookups by token hash: the promise, so concurrent requests with one token share one query.
  // Only lookups that found a token are kept. A change made here (a revoke, a user update) drops
  // every kept lookup, those still in flight too, so none that raced the change is reused.
  const lookups = new Map<string, { at: number; lookup: Promise<TokenLookup> }>();
  /** Token lookups answered by a query, and by a kept (or in-flight) lookup. */
  const counts = { database: 0, reused: 0 };
  function forgetLookups(): void {
    lookups.clear();
  }
  function query(hash: string): Promise<TokenLookup> {
    counts.database++;
    return tokenLookup.execute({ hash }).then((rows) => rows[0]);
  }
  function lookUp(hash: string): Promise<TokenLookup> {
    if (cacheMs <= 0) return query(hash);
    const now = clock();
    const kept = lookups.get(hash);
    if (kept && now - kept.at < cacheMs) {
      counts.reused++;
      return kept.lookup;
    }
    if (kept) lookups.delete(hash);
    const lookup = query(hash);
    const entry = { at: now, lookup };
    lookups.set(hash, entry);
    if (lookups.size > TOKEN_CACHE_MAX) lookups.delete(lookups.keys().next().value!);
    lookup.then(
      (found) => {
        if (!found && lookups.get(hash) === entry) lookups.delete(hash);
      },
      () => {
        if (lookups.get(hash) === entry) lookups.delete(hash);
      },
    );
    return lookup;
  }
  // On every RPC's path: the token and its user in one query, built once. Built per request it
  // cost ≈ 280 µs of CPU a call and held authenticate() to ≈ 2,400 a second on PostgreSQL;
  // prepared, ≈ 50 µs and ≈ 16,000 (ExecuteSkill RPCs/s in bench:fleet on a 2-core machine: 573–575 → 814–950).
  const tokenLookup = db
    .select({ token: apiTokens, user: users })
    .from(apiTokens)
    .leftJoin(users, eq(users.id, apiTokens.userId))
    .where(eq(apiTokens.tokenHash, sql.placeholder("hash")))
    .prepare("ongrid_authenticate");

  async function getUser(id: string): Promise<UserRow | undefined> {
    return (await db.select().from(users).where(eq(users.id, id)))[0];
  }

  async function userOrThrow(id: string): Promise<UserRow> {
    const u = await getUser(id);
    if (!u) throw new OngridError("not_found", `unknown user "${id}"`, "ongrid users list shows the users");
    return u;
  }

  const store = {
    getUser,

    /** How many API token lookups asked the database, and how many reused a kept one (server.token_cache), since start. */
    tokenLookups(): { database: number; reused: number } {
      return { ...counts };
    },

    /** Creates a user; `by` is who did it (kept for separation of duties: G3). */
    async createUser(id: string, role: string, reach = "", by = ""): Promise<UserRow> {
      checkUserId(id);
      checkRole(role);
      checkReach(reach, "reach");
      const rows = await db.insert(users).values({ id, role, reach: reach.trim(), createdAt: new Date(), createdBy: by }).onConflictDoNothing().returning();
      if (!rows.length) throw new OngridError("already_exists", `user "${id}" already exists`);
      return rows[0];
    },

    async listUsers(): Promise<UserRow[]> {
      return db.select().from(users).orderBy(asc(users.id));
    },

    /** Changes a user's role, reach or disabled state; the change's time and `by` are kept (G3). */
    async updateUser(id: string, change: { role?: string; reach?: string; disabled?: boolean }, by = ""): Promise<UserRow> {
      await userOrThrow(id);
      const set: Partial<UserRow> = {};
      if (change.role) set.role = checkRole(change.role);
      if (change.reach !== undefined) set.reach = checkReach(change.reach, "reach");
      if (change.disabled !== undefined) set.disabledAt = change.disabled ? new Date() : null;
      if (!Object.keys(set).length) return userOrThrow(id);
      set.changedAt = new Date();
      set.changedBy = by;
      try {
        return (await db.update(users).set(set).where(eq(users.id, id)).returning())[0];
      } finally {
        forgetLookups();
      }
    },

    /** Issues a token; the token is returned once. */
    async createToken(userId: string, opts: { description?: string; ttlMs?: number; reach?: string; by?: string } = {}): Promise<{ token: string; info: TokenInfo }> {
      const user = await userOrThrow(userId);
      if (user.disabledAt) throw new OngridError("failed_precondition", `user "${userId}" is disabled`, "enable the user first");
      if (opts.ttlMs !== undefined && (!Number.isFinite(opts.ttlMs) || opts.ttlMs < 0)) throw new OngridError("invalid_argument", "ttl: must be >= 0 (rule: minimum)");
      const id = randomBytes(6).toString("hex");
      const token = `${TOKEN_PREFIX}${id}_${randomBytes(32).toString("base64url")}`;
      const now = new Date();
      const row = (
        await db
          .insert(apiTokens)
          .values({
            id,
            userId,
            tokenHash: hashToken(token),
            description: (opts.description ?? "").slice(0, 200),
            reach: checkReach(opts.reach ?? "", "reach"),
            createdAt: now,
            createdBy: opts.by ?? "",
            expiresAt: opts.ttlMs ? new Date(now.getTime() + opts.ttlMs) : null,
          })
          .returning()
      )[0];
      return { token, info: info(row) };
    },

    async listTokens(userId?: string): Promise<TokenInfo[]> {
      const rows = await db
        .select()
        .from(apiTokens)
        .where(userId ? eq(apiTokens.userId, userId) : undefined)
        .orderBy(asc(apiTokens.userId), asc(apiTokens.createdAt));
      return rows.map(info);
    },

    /** Revokes a token; not_found when there is none, failed_precondition when already revoked. */
    async revokeToken(id: string): Promise<TokenInfo> {
      let rows: ApiTokenRow[];
      try {
        rows = await db.update(apiTokens).set({ revokedAt: new Date() }).where(and(eq(apiTokens.id, id), isNull(apiTokens.revokedAt))).returning();
      } finally {
        forgetLookups();
      }
      if (rows.length) return info(rows[0]);
      const existing = (await db.select().from(apiTokens).where(eq(apiTokens.id, id)))[0];
      if (!existing) throw new OngridError("not_found", `unknown token "${id}"`, "ongrid tokens list shows token ids");
      throw new OngridError("failed_precondition", `token "${id}" was already revoked at ${existing.revokedAt!.toISOString()}`);
    },

    /**
     * Checks a bearer token: unknown, malformed, expired, revoked and disabled-user tokens are
     * refused, each with its own message (none of which quotes the token).
     */
    async authenticate(token: string | undefined, now = new Date()): Promise<Authenticated> {
      if (!token) throw new OngridError("unauthenticated", "no API token was sent; send one in the `authorization` header, as `Bearer` followed by the token", "ask an admin for a token (`ongrid tokens create --user NAME`)");
      const m = /^ogu_([0-9a-f]{12})_[A-Za-z0-9_-]{43}$/.exec(token);
      if (!m) throw new OngridError("unauthenticated", "the API token is malformed", "tokens look like ogu_<12 hex>_<43 characters>");
      const hash = hashToken(token);
      const found = await lookUp(hash);
      const row = found?.token;
      if (!row || !timingSafeEqual(Buffer.from(row.tokenHash), Buffer.from(hash)) || row.id !== m[1]) {
        throw new OngridError("unauthenticated", `unknown API token (id ${m[1]})`, "the token is wrong or was never issued here");
      }
      if (row.revokedAt) throw new OngridError("unauthenticated", `API token ${row.id} was revoked at ${row.revokedAt.toISOString()}`, "ask an admin for a new token");
      if (row.expiresAt && row.expiresAt.getTime() <= now.getTime()) {
        throw new OngridError("unauthenticated", `API token ${row.id} expired at ${row.expiresAt.toISOString()}`, "ask an admin for a new token");
      }
      const user = found.user;
      if (!user) throw new OngridError("unauthenticated", `API token ${row.id} belongs to no user`);
      if (user.disabledAt) throw new OngridError("unauthenticated", `user "${user.id}" is disabled`, "ask an admin");
      const last = lastUsedWritten.get(row.id) ?? 0;
      if (now.getTime() - last >= LAST_USED_EVERY_MS) {
        lastUsedWritten.set(row.id, now.getTime());
        await db.update(apiTokens).set({ lastUsedAt: now }).where(eq(apiTokens.id, row.id));
      }
      return {
        caller: { userId: user.id, role: user.role, reach: [user.reach, row.reach].filter(Boolean), tokenId: row.id },
        user,
        token: info(row),
      };
    },

    /**
     * On a database without users: creates "admin" (role admin) and returns its token, to be
     * printed once. Returns undefined when any user exists.
     */
    /** A user's account and one of their tokens as stored, for the separation-of-duties check (G3). */
    async provenance(userId: string, tokenId?: string): Promise<{ user?: UserRow; token?: TokenInfo }> {
      const user = await getUser(userId);
      const token = tokenId ? (await db.select().from(apiTokens).where(and(eq(apiTokens.id, tokenId), eq(apiTokens.userId, userId))))[0] : undefined;
      return { user, token: token ? info(token) : undefined };
    },

    async bootstrap(): Promise<{ userId: string; token: string } | undefined> {
      const [{ n }] = await db.select({ n: count() }).from(users);
      if (n > 0) return undefined;
      const rows = await db.insert(users).values({ id: "admin", role: "admin", reach: "", createdAt: new Date() }).onConflictDoNothing().returning();
      if (!rows.length) return undefined; // another manager bootstrapped at the same moment
      const { token } = await store.createToken("admin", { description: "created on first start" });
      return { userId: "admin", token };
    },
  };
  return store;
}

/** The identity store's interface. */
export type IdentityStore = ReturnType<typeof createIdentityStore>;
