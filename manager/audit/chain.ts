/** The hash chain of the audit log (H2): a canonical form of each row and the SHA-256 link to its predecessor. */
import { hash } from "node:crypto";
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
  /** The client program that made the call (an MCP client's "name/version"); hashed only when not empty, like approvedBy. */
  client?: string | null;
}

/**
 * sha256 hex of `prevHash + "\n" + canonicalJson(row)`; identical for a row rebuilt from jsonb.
 * The row's own fields are written in their sorted order directly (this is on every call's path);
 * the text is exactly what canonicalJson would make of the same object (a test holds the two together).
 */
export function rowHash(prevHash: string, row: ChainInput): string {
  return hashRow(prevHash, rowTexts(row), row.seq, canonicalJson(row.args ?? null), canonicalJson(row.result ?? null));
}

/** The JSON texts of a row's scalar fields, made once for both its hash and its insert. */
export interface RowTexts {
  approvalId: string;
  /** "" when the row has no approvers (the hash then leaves the field out). */
  approvedBy: string;
  callerRole: string;
  callerUserId: string;
  /** "" when no client was recorded (the hash then leaves the field out). */
  client: string;
  decision: string;
  decisionReason: string;
  deviceId: string;
  durationMs: string;
  error: string;
  finishedAt: string;
  /** "" when the row was not made on someone's behalf (the hash then leaves the field out). */
  onBehalfOf: string;
  sessionId: string;
  sopHash: string;
  startedAt: string;
  toolName: string;
}

/**
 * The JSON texts of a row's scalar fields. With `like` (a row of the same batch, and its texts),
 * a field equal to that row's takes its text instead of being written again: a fan-out's rows
 * differ in a few fields (edge, timing, outcome) and share the rest (caller, session, skill,
 * decision). The texts are the same either way.
 */
export function rowTexts(row: Omit<ChainInput, "seq">, like?: { row: Omit<ChainInput, "seq">; texts: RowTexts }): RowTexts {
  if (!like) {
    return {
      approvalId: str(row.approvalId),
      approvedBy: row.approvedBy ? str(row.approvedBy) : "",
      callerRole: str(row.callerRole),
      callerUserId: str(row.callerUserId),
      client: row.client ? str(row.client) : "",
      decision: str(row.decision),
      decisionReason: str(row.decisionReason),
      deviceId: str(row.deviceId),
      durationMs: num(row.durationMs),
      error: str(row.error),
      finishedAt: date(row.finishedAt),
      onBehalfOf: row.onBehalfOf ? str(row.onBehalfOf) : "",
      sessionId: str(row.sessionId),
      sopHash: str(row.sopHash),
      startedAt: date(row.startedAt),
      toolName: str(row.toolName),
    };
  }
  const { row: r, texts: t } = like;
  return {
    approvalId: row.approvalId === r.approvalId ? t.approvalId : str(row.approvalId),
    approvedBy: (row.approvedBy || "") === (r.approvedBy || "") ? t.approvedBy : row.approvedBy ? str(row.approvedBy) : "",
    callerRole: row.callerRole === r.callerRole ? t.callerRole : str(row.callerRole),
    callerUserId: row.callerUserId === r.callerUserId ? t.callerUserId : str(row.callerUserId),
    client: (row.client || "") === (r.client || "") ? t.client : row.client ? str(row.client) : "",
    decision: row.decision === r.decision ? t.decision : str(row.decision),
    decisionReason: row.decisionReason === r.decisionReason ? t.decisionReason : str(row.decisionReason),
    deviceId: row.deviceId === r.deviceId ? t.deviceId : str(row.deviceId),
    durationMs: row.durationMs === r.durationMs ? t.durationMs : num(row.durationMs),
    error: row.error === r.error ? t.error : str(row.error),
    finishedAt: row.finishedAt.getTime() === r.finishedAt.getTime() ? t.finishedAt : date(row.finishedAt),
    onBehalfOf: (row.onBehalfOf || "") === (r.onBehalfOf || "") ? t.onBehalfOf : row.onBehalfOf ? str(row.onBehalfOf) : "",
    sessionId: row.sessionId === r.sessionId ? t.sessionId : str(row.sessionId),
    sopHash: row.sopHash === r.sopHash ? t.sopHash : str(row.sopHash),
    startedAt: row.startedAt.getTime() === r.startedAt.getTime() ? t.startedAt : date(row.startedAt),
    toolName: row.toolName === r.toolName ? t.toolName : str(row.toolName),
  };
}

/** rowHash from a row's field texts, its seq and the canonical texts of its args and result. */
export function hashRow(prevHash: string, t: RowTexts, seq: number, argsText: string, resultText: string): string {
  const text =
    `{"approvalId":${t.approvalId},${t.approvedBy ? `"approvedBy":${t.approvedBy},` : ""}"args":${argsText},"callerRole":${t.callerRole},` +
    `"callerUserId":${t.callerUserId},${t.client ? `"client":${t.client},` : ""}"decision":${t.decision},"decisionReason":${t.decisionReason},` +
    `"deviceId":${t.deviceId},"durationMs":${t.durationMs},"error":${t.error},"finishedAt":${t.finishedAt},` +
    `${t.onBehalfOf ? `"onBehalfOf":${t.onBehalfOf},` : ""}` +
    `"result":${resultText},"seq":${num(seq)},"sessionId":${t.sessionId},"sopHash":${t.sopHash},` +
    `"startedAt":${t.startedAt},"toolName":${t.toolName}}`;
  return hash("sha256", `${prevHash}\n${text}`, "hex");
}

const str = (v: string | null | undefined): string => (v === null || v === undefined ? "null" : JSON.stringify(v));
const num = (v: number): string => (Number.isFinite(v) ? JSON.stringify(v) : "null");
const date = (v: Date): string => encode(v)!;

