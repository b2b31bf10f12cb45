/** Enrolled edges in the database: tokens (hashed), revocation and last known presence (C4). */
import { createHash, randomBytes } from "node:crypto";
import { and, asc, eq, inArray, isNull } from "drizzle-orm";
import { OngridError } from "../../skill/errors.ts";
import type { Database } from "../db/client.ts";
import { edges, type EdgeRow } from "../db/schema/index.ts";

import { EDGE_ID_PATTERN } from "../../skill/identity.ts";
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

/** What the hub needs of an edge's row to admit it and to re-check it: not its skills or labels (≈15 KB of JSON an edge). */
export interface EdgeCredential {
  id: string;
  tokenHash: string;
  revokedAt: Date | null;
}

const CREDENTIAL = { id: edges.id, tokenHash: edges.tokenHash, revokedAt: edges.revokedAt };

/** What the hub records when an edge says hello. */
export interface Presence {
  version: string;
  hostname: string;
  os: string;
  labels: Record<string, string>;
  skills: unknown[];
}

/** Creates the edge store over the manager's database. */
export function createEdgeStore(database: Database, managerId: string) {
  const { db } = database;
  return {
    /** Creates the edge or rotates its token; the token is returned once and stored hashed. */
    async enroll(id: string): Promise<{ id: string; token: string; rotated: boolean }> {
      checkEdgeId(id);
      const token = TOKEN_PREFIX + randomBytes(32).toString("base64url");
      const now = new Date();
      const existing = await db.select({ id: edges.id }).from(edges).where(eq(edges.id, id));
      await db
        .insert(edges)
        .values({ id, tokenHash: hashToken(token), enrolledAt: now })
        .onConflictDoUpdate({ target: edges.id, set: { tokenHash: hashToken(token), enrolledAt: now, revokedAt: null } });
      return { id, token, rotated: existing.length > 0 };
    },

    /** Revokes the edge's token; false when no such edge is enrolled. */
    async revoke(id: string): Promise<boolean> {
      const rows = await db.update(edges).set({ revokedAt: new Date(), online: false }).where(eq(edges.id, id)).returning({ id: edges.id });
      return rows.length > 0;
    },

    /**
     * The edge a token belongs to. Unknown and revoked tokens are refused alike (no oracle for
     * which ids exist). Tokens are 256 random bits, so looking them up by hash leaks nothing.
     */
    async authenticate(token: string): Promise<EdgeCredential> {
      const fail = () => new OngridError("unauthenticated", "edge token is unknown or revoked", "enroll the edge again with `ongrid edge enroll ID` and use the new token");
      if (!token.startsWith(TOKEN_PREFIX)) throw fail();
      const hash = hashToken(token);
      const [row] = await db.select(CREDENTIAL).from(edges).where(eq(edges.tokenHash, hash));
      if (!row || row.revokedAt) throw fail();
      return row;
    },

    /** One edge's row (the hub re-reads it to notice revocation and rotation of a live edge). */
    async get(id: string): Promise<EdgeRow | undefined> {
      const [row] = await db.select().from(edges).where(eq(edges.id, id));
      return row;
    },

    /** The credentials of many edges in one query (the hub's periodic re-check of live edges). */
    async credentials(ids: string[]): Promise<Map<string, EdgeCredential>> {
      if (!ids.length) return new Map();
      const rows = await db.select(CREDENTIAL).from(edges).where(inArray(edges.id, ids));
      return new Map(rows.map((r) => [r.id, r]));
    },

    async list(): Promise<EdgeRow[]> {
      return db.select().from(edges).orderBy(asc(edges.id));
    },

    /** Records a welcomed edge; a revoked edge is never marked online. */
    async markOnline(id: string, p: Presence): Promise<void> {
      await db
        .update(edges)
        .set({ online: true, lastSeenAt: new Date(), managerId, version: p.version, hostname: p.hostname, os: p.os, labels: p.labels, skills: p.skills })
        .where(and(eq(edges.id, id), isNull(edges.revokedAt)));
    },

    async markOffline(id: string, lastSeen: Date): Promise<void> {
      await db.update(edges).set({ online: false, lastSeenAt: lastSeen }).where(eq(edges.id, id));
    },

    /** At start: edges this manager held when it stopped are not online any more. */
    async resetPresence(): Promise<void> {
      await db.update(edges).set({ online: false }).where(eq(edges.managerId, managerId));
    },
  };
}

/** The edge store's interface. */
export type EdgeStore = ReturnType<typeof createEdgeStore>;
