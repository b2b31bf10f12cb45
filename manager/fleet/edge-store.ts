/** Enrolled edges in the database: tokens (hashed), revocation and last known presence (C4). */
import { createHash, randomBytes } from "node:crypto";
import { and, asc, eq, getTableColumns, inArray, isNull, sql } from "drizzle-orm";
import { OngridError } from "../../skill/errors.ts";
import type { Database } from "../db/client.ts";
import { edges, type EdgeRow } from "../db/schema/index.ts";

import { EDGE_ID_PATTERN, labelProblem } from "../../skill/identity.ts";
const TOKEN_PREFIX = "ogt_";

/** SHA-256 of a token, hex: the only form stored. */
export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** Refuses an edge id that is not a lower-case DNS label. */
export function checkEdgeId(id: string, field = "id"): string {
  if (!EDGE_ID_PATTERN.test(id)) {
    throw new OngridError(
      "invalid_argument",
      `${field}: "${id.slice(0, 80)}" is not a valid edge id (rule: pattern ${EDGE_ID_PATTERN.source})`,
      "use lower-case letters, digits, dots and dashes, 1 to 63 characters",
    );
  }
  return id;
}

/** What the hub needs of an edge's row to admit it and to re-check it: not its skills (≈15 KB of JSON an edge); its labels, which are the manager's. */
export interface EdgeCredential {
  id: string;
  tokenHash: string;
  revokedAt: Date | null;
  labels: Record<string, string>;
}

const CREDENTIAL = { id: edges.id, tokenHash: edges.tokenHash, revokedAt: edges.revokedAt, labels: edges.labels };

/** What the hub records when an edge says hello. */
export interface Presence {
  version: string;
  hostname: string;
  os: string;
  labels: Record<string, string>;
  skills: unknown[];
  /** The inventory digest of `skills`. */
  skillsDigest: string;
}

/** Creates the edge store over the manager's database. */
export function createEdgeStore(database: Database, managerId: string, opts: { onPresenceWritten?: () => void } = {}) {
  const { db } = database;
  /** Brief skill lists by inventory digest, most recently used last. */
  const briefs = new Map<string, unknown[]>();
  const remember = (digest: string, brief: unknown[]) => {
    briefs.set(digest, brief);
    if (briefs.size > BRIEF_CACHE) briefs.delete(briefs.keys().next().value!);
  };
  const presence = createPresenceWriter(database, managerId, () => opts.onPresenceWritten?.());
  // Token lookups, batched like the hub's re-checks: the edges dialling in the same tick (a fleet
  // reconnecting after a restart) are looked up in one query per 1,000.
  const tokens = batched<string, EdgeCredential | undefined>(async (hashes) => {
    const rows = await db.select(CREDENTIAL).from(edges).where(inArray(edges.tokenHash, hashes));
    return new Map(rows.map((r) => [r.tokenHash, r]));
  });
  const byId = batched<string, EdgeCredential>(async (ids) => {
    const rows = await db.select(CREDENTIAL).from(edges).where(inArray(edges.id, ids));
    return new Map(rows.map((r) => [r.id, r]));
  });
  return {
    /**
     * Creates the edge or rotates its token; the token is returned once and stored hashed. `labels`
     * (for reach and selectors) are set when given; a rotation without them keeps the edge's labels.
     */
    async enroll(id: string, opts: { labels?: Record<string, string> } = {}): Promise<{ id: string; token: string; rotated: boolean }> {
      checkEdgeId(id);
      const labels = opts.labels === undefined ? undefined : checkLabels(opts.labels);
      const token = TOKEN_PREFIX + randomBytes(32).toString("base64url");
      const now = new Date();
      const existing = await db.select({ id: edges.id }).from(edges).where(eq(edges.id, id));
      await db
        .insert(edges)
        .values({ id, tokenHash: hashToken(token), enrolledAt: now, labels: labels ?? {} })
        .onConflictDoUpdate({ target: edges.id, set: { tokenHash: hashToken(token), enrolledAt: now, revokedAt: null, ...(labels ? { labels } : {}) } });
      return { id, token, rotated: existing.length > 0 };
    },

    /** Replaces an edge's labels (an admin's change); not_found for an edge that is not enrolled. */
    async setLabels(id: string, labels: Record<string, string>): Promise<Record<string, string>> {
      checkEdgeId(id);
      const checked = checkLabels(labels);
      const rows = await db.update(edges).set({ labels: checked, presenceAt: sql`now()` }).where(eq(edges.id, id)).returning({ id: edges.id });
      if (!rows.length) throw new OngridError("not_found", `unknown edge "${id}"`, "`ongrid edge list` shows the enrolled edges");
      return checked;
    },

    /** Revokes the edge's token; false when no such edge is enrolled. */
    async revoke(id: string): Promise<boolean> {
      const rows = await db.update(edges).set({ revokedAt: new Date(), online: false, presenceAt: sql`now()` }).where(eq(edges.id, id)).returning({ id: edges.id });
      return rows.length > 0;
    },

    /**
     * The edge a token belongs to. Unknown and revoked tokens are refused alike (no oracle for
     * which ids exist). Tokens are 256 random bits, so looking them up by hash leaks nothing.
     */
    async authenticate(token: string): Promise<EdgeCredential> {
      if (!token.startsWith(TOKEN_PREFIX)) throw tokenRefused();
      const row = await tokens.lookup(hashToken(token));
      if (!row || row.revokedAt) throw tokenRefused();
      return row;
    },

    /** One edge's row (the hub re-reads it to notice revocation and rotation of a live edge). */
    async get(id: string): Promise<EdgeRow | undefined> {
      const [row] = await db.select().from(edges).where(eq(edges.id, id));
      return row;
    },

    /**
     * One edge's credentials, batched with the other lookups of the same tick (or, with
     * `withinMs`, of that window: the hub's periodic re-checks of live edges).
     */
    credential(id: string, withinMs = 0): Promise<EdgeCredential | undefined> {
      return byId.lookup(id, withinMs);
    },

    /**
     * Every enrolled edge, its stored skills brief (key, class and scope of each): an edge's full
     * metadata is ≈ 15 KB, and 15,000 edges' of it made ListEdges take seconds. The brief list is
     * read once per inventory digest (edges of one version share one) and remembered.
     */
    async list(): Promise<EdgeRow[]> {
      const { skills: _skills, ...columns } = getTableColumns(edges);
      const rows = await db.select(columns).from(edges).orderBy(asc(edges.id));
      const missing = [...new Set(rows.map((r) => r.skillsDigest))].filter((d) => d && !briefs.has(d));
      for (let i = 0; i < missing.length; i += LOOKUP_CHUNK) {
        const found = await db
          .selectDistinctOn([edges.skillsDigest], { digest: edges.skillsDigest, brief: BRIEF })
          .from(edges)
          .where(inArray(edges.skillsDigest, missing.slice(i, i + LOOKUP_CHUNK)));
        for (const f of found) remember(f.digest, f.brief);
      }
      // Rows written before digests were recorded: their own brief, one by one (rare, and shrinking).
      const legacy = rows.filter((r) => !r.skillsDigest).map((r) => r.id);
      const own = new Map<string, unknown[]>();
      for (let i = 0; i < legacy.length; i += LOOKUP_CHUNK) {
        const found = await db.select({ id: edges.id, brief: BRIEF }).from(edges).where(inArray(edges.id, legacy.slice(i, i + LOOKUP_CHUNK)));
        for (const f of found) own.set(f.id, f.brief);
      }
      return rows.map((r) => ({ ...r, skills: (r.skillsDigest ? briefs.get(r.skillsDigest) : own.get(r.id)) ?? [] }));
    },

    /** Records a welcomed edge; a revoked edge is never marked online. Batched with other presence writes. */
    markOnline(id: string, p: Presence): Promise<void> {
      return presence.queue(id, { online: true, lastSeen: new Date(), presence: p });
    },

    /** Records an edge gone. Batched with other presence writes. */
    markOffline(id: string, lastSeen: Date): Promise<void> {
      return presence.queue(id, { online: false, lastSeen });
    },

    /** Resolves once every presence write queued so far is in the database. */
    flushPresence(): Promise<void> {
      return presence.flush();
    },

    /**
     * After this manager's lease lapsed and was renewed: the edges it still holds (`ids`) are
     * online again, unless revoked or meanwhile held by another manager.
     */
    async reassert(ids: string[]): Promise<number> {
      let n = 0;
      for (let i = 0; i < ids.length; i += LOOKUP_CHUNK) {
        const rows = await db
          .update(edges)
          .set({ online: true, presenceAt: sql`now()` })
          .where(and(inArray(edges.id, ids.slice(i, i + LOOKUP_CHUNK)), eq(edges.managerId, managerId), isNull(edges.revokedAt)))
          .returning({ id: edges.id });
        n += rows.length;
      }
      return n;
    },

    /** At start: edges this manager held when it stopped are not online any more. */
    async resetPresence(): Promise<void> {
      await db.update(edges).set({ online: false, presenceAt: sql`now()` }).where(and(eq(edges.managerId, managerId), eq(edges.online, true)));
    },
  };
}

/** Refuses labels that are not k=v pairs a selector can name. */
function checkLabels(labels: Record<string, string>): Record<string, string> {
  const problem = labelProblem(labels);
  if (problem) throw new OngridError("invalid_argument", `labels: ${problem} (rule: label)`, "labels are key=value pairs like team=payments, env=prod");
  return { ...labels };
}

const tokenRefused = () => new OngridError("unauthenticated", "edge token is unknown or revoked", "enroll the edge again with `ongrid edge enroll ID` and use the new token");

/** Keys one batched lookup reads. */
const LOOKUP_CHUNK = 1000;

/**
 * Batches lookups by key: every lookup waiting when a read starts is answered by one `read` per
 * 1,000 distinct keys. A lookup asks for a read in the next tick, or (`withinMs`) within that
 * long, gathering the lookups of that window. A failed read rejects the lookups it carried.
 */
function batched<K, V>(read: (keys: K[]) => Promise<Map<K, V>>) {
  let waiting = new Map<K, Array<{ resolve(v: V | undefined): void; reject(err: Error): void }>>();
  let soon = false;
  let later: NodeJS.Timeout | undefined;
  async function flush(): Promise<void> {
    soon = false;
    clearTimeout(later);
    later = undefined;
    const batch = waiting;
    waiting = new Map();
    const keys = [...batch.keys()];
    for (let i = 0; i < keys.length; i += LOOKUP_CHUNK) {
      const chunk = keys.slice(i, i + LOOKUP_CHUNK);
      try {
        const found = await read(chunk);
        for (const k of chunk) for (const w of batch.get(k)!) w.resolve(found.get(k));
      } catch (err) {
        for (const k of chunk) for (const w of batch.get(k)!) w.reject(err as Error);
      }
    }
  }
  return {
    lookup(key: K, withinMs = 0): Promise<V | undefined> {
      return new Promise((resolve, reject) => {
        let list = waiting.get(key);
        if (!list) waiting.set(key, (list = []));
        list.push({ resolve, reject });
        if (withinMs <= 0) {
          if (!soon) {
            soon = true;
            setImmediate(() => void flush());
          }
        } else if (!soon && !later) {
          later = setTimeout(() => void flush(), withinMs);
          later.unref();
        }
      });
    },
  };
}

/** Distinct brief skill lists remembered. */
const BRIEF_CACHE = 256;
/** An edge's stored skills as key, class and scope only (computed by PostgreSQL, so the metadata never leaves it). */
const BRIEF = sql<unknown[]>`(select coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object('key', s -> 'key', 'class', s -> 'class', 'scope', s -> 'scope'))), '[]'::jsonb) from jsonb_array_elements(${edges.skills}) as s)`;

/** Presence rows written per statement. */
const PRESENCE_CHUNK = 500;

interface PresenceOp {
  online: boolean;
  lastSeen: Date;
  /** What the last hello said (absent for an edge that only went offline). */
  presence?: Presence;
  waiters: Array<{ resolve(): void; reject(err: Error): void }>;
}

/**
 * Presence writes, batched: everything queued while a write runs goes in the next one, as one
 * statement per 500 edges (a jsonb parameter unpacked by jsonb_to_recordset) instead of one
 * UPDATE per edge — 10,000 edges reconnecting after a restart cost 20 statements, not 10,000.
 * Per edge the last state wins, in order (a hello followed by a loss in the same batch writes the
 * hello's fields and offline); an edge revoked meanwhile is never marked online.
 */
function createPresenceWriter(database: Database, managerId: string, written: () => void) {
  const { db } = database;
  let pending = new Map<string, PresenceOp>();
  let running: Promise<void> | undefined;

  async function write(batch: Array<[string, PresenceOp]>): Promise<void> {
    const full = batch.filter(([, op]) => op.presence);
    const bare = batch.filter(([, op]) => !op.presence);
    if (full.length) {
      // Each distinct skill list is sent once and rows point at it by index: edges of one version
      // share one list object (the hub's inventory, ≈ 15 KB for the builtins), and 500 copies of
      // it in one parameter were a 7.5 MB string per statement — transient, but it left ≈ 10 KB
      // an edge of the manager's native heap fragmented after 10,000 hellos.
      const lists: unknown[][] = [];
      const index = new Map<unknown[], number>();
      const rows = full.map(([id, op]) => {
        const p = op.presence!;
        let i = index.get(p.skills);
        if (i === undefined) index.set(p.skills, (i = lists.push(p.skills) - 1));
        return { id, online: op.online, last_seen: op.lastSeen.toISOString(), version: p.version, hostname: p.hostname, os: p.os, labels: p.labels, skills: i, digest: p.skillsDigest };
      });
      await db.execute(
        sql`update edges as e set online = r.online, last_seen_at = r.last_seen, manager_id = ${managerId}, version = r.version, hostname = r.hostname, os = r.os, reported_labels = r.labels, skills = (${JSON.stringify(lists)}::jsonb) -> r.skills, skills_digest = r.digest, presence_at = now()
            from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(id text, online boolean, last_seen timestamptz, version text, hostname text, os text, labels jsonb, skills int, digest text)
            where e.id = r.id and (e.revoked_at is null or not r.online)`,
      );
    }
    if (bare.length) {
      // Only while this manager is the holder: an edge that moved to another manager (failover,
      // rebalancing) before this one noticed the loss stays online there.
      const rows = bare.map(([id, op]) => ({ id, last_seen: op.lastSeen.toISOString() }));
      await db.execute(
        sql`update edges as e set online = false, last_seen_at = r.last_seen, presence_at = now() from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(id text, last_seen timestamptz) where e.id = r.id and (e.manager_id = ${managerId} or not e.online)`,
      );
    }
    written();
  }

  async function drain(): Promise<void> {
    // Yield once so the writes of this tick join the first batch.
    await new Promise<void>((r) => setImmediate(r));
    while (pending.size) {
      const batch = [...pending];
      pending = new Map();
      for (let i = 0; i < batch.length; i += PRESENCE_CHUNK) {
        const chunk = batch.slice(i, i + PRESENCE_CHUNK);
        try {
          await write(chunk);
          for (const [, op] of chunk) for (const w of op.waiters) w.resolve();
        } catch (err) {
          for (const [, op] of chunk) for (const w of op.waiters) w.reject(err as Error);
        }
      }
    }
  }

  function kick(): void {
    running ??= drain().finally(() => {
      running = undefined;
      if (pending.size) kick();
    });
  }

  return {
    queue(id: string, patch: Omit<PresenceOp, "waiters">): Promise<void> {
      return new Promise((resolve, reject) => {
        const op = pending.get(id) ?? { online: patch.online, lastSeen: patch.lastSeen, waiters: [] };
        op.online = patch.online;
        op.lastSeen = patch.lastSeen;
        if (patch.presence) op.presence = patch.presence;
        op.waiters.push({ resolve, reject });
        pending.set(id, op);
        kick();
      });
    },
    async flush(): Promise<void> {
      while (running || pending.size) {
        if (!running) kick();
        await running;
      }
    },
  };
}

/** The edge store's interface. */
export type EdgeStore = ReturnType<typeof createEdgeStore>;
