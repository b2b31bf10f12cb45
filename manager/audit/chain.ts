/** The hash chain of the audit log (H2): a canonical form of each row and the SHA-256 link to its predecessor. */
import { createHash } from "node:crypto";
import { canonicalJson, encodeCanonical as encode } from "../../skill/canonical.ts";

export { canonicalJson };

/** prev_hash of the first row. */
export const GENESIS_HASH = "0".repeat(64);

/**
 * What is hashed for one row: its seq and every recorded field. Text columns that are nullable in the
 * table may be null when read back, and are hashed as null, so a row altered to NULL no longer matches.
 */
export interface ChainInput {
  seq: number;
  sessionId: string;
  toolName: string;
  args: unknown;
  result: unknown;
  error: string;
  deviceId: string;
  startedAt: Date;
  finishedAt: Date;
  durationMs: number;
  callerUserId: string | null;
  callerRole: string | null;
  decision: string | null;
  decisionReason: string | null;
  approvalId: string | null;
  sopHash: string | null;
  /** Hashed only when not empty, so rows written before the column existed keep their hashes. */
  approvedBy?: string | null;
  /** Hashed only when not empty, like approvedBy. */
  onBehalfOf?: string | null;
}

/**
 * sha256 hex of `prevHash + "\n" + canonicalJson(row)`; identical for a row rebuilt from jsonb.
 * The row's own fields are written in their sorted order directly (this is on every call's path);
 * the text is exactly what canonicalJson would make of the same object (a test holds the two together).
 */
export function rowHash(prevHash: string, row: ChainInput): string {
  const text =
    `{"approvalId":${str(row.approvalId)},${row.approvedBy ? `"approvedBy":${str(row.approvedBy)},` : ""}"args":${canonicalJson(row.args ?? null)},"callerRole":${str(row.callerRole)},` +
    `"callerUserId":${str(row.callerUserId)},"decision":${str(row.decision)},"decisionReason":${str(row.decisionReason)},` +
    `"deviceId":${str(row.deviceId)},"durationMs":${num(row.durationMs)},"error":${str(row.error)},"finishedAt":${date(row.finishedAt)},` +
    `${row.onBehalfOf ? `"onBehalfOf":${str(row.onBehalfOf)},` : ""}` +
    `"result":${canonicalJson(row.result ?? null)},"seq":${num(row.seq)},"sessionId":${str(row.sessionId)},"sopHash":${str(row.sopHash)},` +
    `"startedAt":${date(row.startedAt)},"toolName":${str(row.toolName)}}`;
  return createHash("sha256").update(`${prevHash}\n${text}`, "utf8").digest("hex");
}

const str = (v: string | null | undefined): string => (v === null || v === undefined ? "null" : JSON.stringify(v));
const num = (v: number): string => (Number.isFinite(v) ? JSON.stringify(v) : "null");
const date = (v: Date): string => encode(v)!;

