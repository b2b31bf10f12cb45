/**
 * The cluster credential (M2): what managers sharing one database prove to each other on the peer
 * service. It comes from `server.cluster_secret`, else from the database (the first manager writes
 * a random one). It never crosses the wire: a request carries the caller's manager id, a time and
 * an HMAC-SHA256 of both under the secret, accepted within five minutes of the receiver's clock.
 * A user's API token is never accepted there, and this proof is accepted nowhere else.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { eq } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { clusterSecrets } from "../db/schema/index.ts";
import { OngridError } from "../../skill/errors.ts";

/** Header naming the calling manager. */
export const PEER_HEADER = "ongrid-peer";
/** Header carrying `<unix seconds>.<hex HMAC>`. */
export const PEER_PROOF_HEADER = "ongrid-peer-proof";
/** How far a proof's time may be from the receiver's clock. */
const SKEW_S = 300;
/** Manager ids as server.manager_id allows them (and the generated ones). */
const MANAGER_ID = /^[a-z0-9][a-z0-9.-]{0,62}$/;

/** The secret of the configuration, else the database's (written once by whichever manager gets there first). */
export async function clusterSecret(database: Database, configured: string): Promise<string> {
  if (configured) return configured;
  await database.db
    .insert(clusterSecrets)
    .values({ name: "peer", secret: randomBytes(32).toString("base64url"), createdAt: new Date() })
    .onConflictDoNothing();
  const [row] = await database.db.select().from(clusterSecrets).where(eq(clusterSecrets.name, "peer"));
  if (!row) throw new OngridError("internal", "the cluster secret could not be read back from the database");
  return row.secret;
}

function mac(secret: string, managerId: string, at: number): Buffer {
  return createHmac("sha256", secret).update(`ongrid-peer\n${managerId}\n${at}`).digest();
}

/** The headers a peer request of `managerId` carries. */
export function peerHeaders(secret: string, managerId: string, nowMs = Date.now()): Record<string, string> {
  const at = Math.floor(nowMs / 1000);
  return { [PEER_HEADER]: managerId, [PEER_PROOF_HEADER]: `${at}.${mac(secret, managerId, at).toString("hex")}` };
}

/** The calling manager's id when the headers prove it; otherwise why not (for the log, never for the caller). */
export function verifyPeer(secret: string, headers: { get(name: string): string | null }, nowMs = Date.now()): { ok: true; managerId: string } | { ok: false; reason: string } {
  if (!secret) return { ok: false, reason: "this manager has not loaded the cluster secret yet" };
  const id = headers.get(PEER_HEADER) ?? "";
  const proof = headers.get(PEER_PROOF_HEADER) ?? "";
  if (!MANAGER_ID.test(id)) return { ok: false, reason: `${PEER_HEADER} is missing or not a manager id` };
  const m = /^(\d{1,12})\.([0-9a-f]{64})$/.exec(proof);
  if (!m) return { ok: false, reason: `${PEER_PROOF_HEADER} is missing or malformed` };
  const at = Number(m[1]);
  if (Math.abs(nowMs / 1000 - at) > SKEW_S) return { ok: false, reason: `${PEER_PROOF_HEADER} is older or newer than ${SKEW_S} s` };
  if (!timingSafeEqual(Buffer.from(m[2], "hex"), mac(secret, id, at))) return { ok: false, reason: `${PEER_PROOF_HEADER} does not match the cluster secret` };
  return { ok: true, managerId: id };
}
