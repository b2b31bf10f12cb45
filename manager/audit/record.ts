/** Turns what callers hand the audit log into storable rows and back: redaction, JSON normalisation, column mapping. */
import { redact } from "../../skill/redact.ts";
import { OngridError } from "../../skill/errors.ts";
import type { ToolCallRow } from "../db/schema/index.ts";
import { canonicalJson, type ChainInput, type RowTexts } from "./chain.ts";
import type { AuditRecord, AuditRow } from "./types.ts";

/**
 * A record after redaction and normalisation — exactly what is stored and hashed — in the shape of
 * its row: seq, prevHash and rowHash are set when the writer chains it (0 and "" until then).
 */
export type StoredRecord = AuditRow;

const INT32_MAX = 2_147_483_647;

/**
 * Redacts args, result and error and normalises every field to what PostgreSQL stores unchanged:
 * plain JSON values (no undefined, Dates as ISO strings, bigints as strings), no NUL characters or
 * lone surrogates (jsonb and text reject them), whole non-negative milliseconds.
 * Throws invalid_argument for timestamps that are not valid dates.
 */
export function normalizeRecord(record: AuditRecord): StoredRecord {
  return {
    sessionId: text(record.sessionId),
    toolName: text(record.toolName),
    args: record.args instanceof PreparedJson ? record.args.value : redactedJson(record.args),
    result: record.result instanceof PreparedJson ? record.result.value : redactedJson(record.result),
    error: cleanString(redact(text(record.error))),
    deviceId: text(record.deviceId),
    startedAt: toDate(record.startedAt, "startedAt"),
    finishedAt: toDate(record.finishedAt, "finishedAt"),
    durationMs: toMillis(record.durationMs),
    callerUserId: text(record.callerUserId),
    callerRole: text(record.callerRole),
    decision: text(record.decision),
    decisionReason: text(record.decisionReason),
    approvalId: text(record.approvalId),
    sopHash: text(record.sopHash),
    approvedBy: text(record.approvedBy),
    onBehalfOf: text(record.onBehalfOf),
    client: text(record.client),
    seq: 0,
    prevHash: "",
    rowHash: "",
  };
}

/**
 * One row as the audit writer inserts it: the JSON text of an object keyed by column name, read
 * back by `jsonb_to_recordset` (JSON null → SQL NULL, ISO timestamps → timestamptz), made from
 * the texts its hash was made of.
 */
export function toInsertText(row: AuditRow, t: RowTexts, argsText: string, resultText: string): string {
  return (
    `{"seq":${row.seq},"session_id":${t.sessionId},"tool_name":${t.toolName},"args_json":${argsText},"result_json":${resultText},` +
    `"error":${t.error},"device_id":${t.deviceId},"started_at":${t.startedAt},"finished_at":${t.finishedAt},` +
    `"duration_ms":${t.durationMs},"caller_user_id":${t.callerUserId},"caller_role":${t.callerRole},"decision":${t.decision},` +
    `"decision_reason":${t.decisionReason},"approval_id":${t.approvalId},"sop_hash":${t.sopHash},"approved_by":${t.approvedBy || '""'},` +
    `"on_behalf_of":${t.onBehalfOf || '""'},"client":${t.client || '""'},"prev_hash":"${row.prevHash}","row_hash":"${row.rowHash}"}`
  );
}

/**
 * The columns of a COPY line (toCopyLine), in its order. The writer checks at start that they are
 * exactly the columns of tool_calls.
 */
export const COPY_COLUMNS = [
  "seq", "session_id", "tool_name", "args_json", "result_json", "error", "device_id", "started_at", "finished_at", "duration_ms",
  "caller_user_id", "caller_role", "decision", "decision_reason", "approval_id", "sop_hash", "approved_by", "on_behalf_of", "client", "prev_hash", "row_hash",
] as const;

const COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_SPECIALS = /[\\\t\n\r]/g;
const COPY_ESCAPES: Record<string, string> = { "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r" };

/** A value as COPY's text format reads it back unchanged: backslash, tab, newline and carriage return escaped. */
function copyText(s: string): string {
  return COPY_SPECIAL.test(s) ? s.replace(COPY_SPECIALS, (c) => COPY_ESCAPES[c]!) : s;
}

/** A jsonb column's value: its JSON text, or NULL for JSON null (as jsonb_to_recordset stores it). */
const copyJson = (text: string): string => (text === "null" ? "\\N" : copyText(text));

/**
 * One row as a line of COPY's text format (columns in COPY_COLUMNS order, tab-separated, no
 * newline): what the writer sends PGlite, where COPY costs about a third less than the jsonb
 * insert (manager/audit/log.ts). Holds the same values as toInsertText.
 */
export function toCopyLine(row: AuditRow, argsText: string, resultText: string): string {
  return (
    `${row.seq}\t${copyText(row.sessionId)}\t${copyText(row.toolName)}\t${copyJson(argsText)}\t${copyJson(resultText)}\t` +
    `${copyText(row.error)}\t${copyText(row.deviceId)}\t${row.startedAt.toISOString()}\t${row.finishedAt.toISOString()}\t${row.durationMs}\t` +
    `${copyText(row.callerUserId)}\t${copyText(row.callerRole)}\t${copyText(row.decision)}\t${copyText(row.decisionReason)}\t` +
    `${copyText(row.approvalId)}\t${copyText(row.sopHash)}\t${copyText(row.approvedBy ?? "")}\t${copyText(row.onBehalfOf ?? "")}\t${copyText(row.client ?? "")}\t${row.prevHash}\t${row.rowHash}`
  );
}

/** The hash input of a row as read back, nulls kept as nulls. */
export function chainInputOf(r: ToolCallRow): ChainInput {
  return {
    seq: r.seq,
    sessionId: r.sessionId,
    toolName: r.toolName,
    args: r.argsJson ?? null,
    result: r.resultJson ?? null,
    error: r.error,
    deviceId: r.deviceId,
    startedAt: r.startedAt,
    finishedAt: r.finishedAt,
    durationMs: r.durationMs,
    callerUserId: r.callerUserId,
    callerRole: r.callerRole,
    decision: r.decision,
    decisionReason: r.decisionReason,
    approvalId: r.approvalId,
    sopHash: r.sopHash,
    approvedBy: r.approvedBy,
    onBehalfOf: r.onBehalfOf,
    client: r.client,
  };
}

/** A row as read back, in the API's shape (NULL text columns read as ""). */
export function fromDbRow(r: ToolCallRow): AuditRow {
  return {
    ...chainInputOf(r),
    callerUserId: r.callerUserId ?? "",
    callerRole: r.callerRole ?? "",
    decision: r.decision ?? "",
    decisionReason: r.decisionReason ?? "",
    approvalId: r.approvalId ?? "",
    sopHash: r.sopHash ?? "",
    approvedBy: r.approvedBy ?? "",
    onBehalfOf: r.onBehalfOf ?? "",
    client: r.client ?? "",
    prevHash: r.prevHash,
    rowHash: r.rowHash,
  };
}

function text(v: unknown): string {
  if (typeof v === "string") return cleanString(v);
  return v === undefined || v === null ? "" : cleanString(String(v));
}

const BAD_CHARS = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Replaces NUL and unpaired surrogates, which PostgreSQL text and jsonb refuse, with U+FFFD. */
function cleanString(s: string): string {
  return s.replace(BAD_CHARS, "\uFFFD");
}

/**
 * An args or result value already in the form the log stores (redacted, plain JSON, cleaned), so
 * that work done once serves many rows (a fan-out's params) or is not done twice (an edge's
 * result, which the hub has redacted). Only this module makes one; normalizeRecord takes its
 * value as it is.
 */
export class PreparedJson {
  #text: string | undefined;
  private constructor(readonly value: unknown) {}
  /** canonicalJson of the value, made once (a fan-out's rows share their args). */
  canonical(): string {
    return (this.#text ??= canonicalJson(this.value));
  }
  /** Redacts and normalises a value, as normalizeRecord would. */
  static of(value: unknown): PreparedJson {
    return new PreparedJson(redactedJson(value));
  }
  /**
   * Normalises a value that went through redact() and holds only JSON data (the hub's envelopes):
   * it is checked for what PostgreSQL refuses, not redacted or copied again. The log keeps a
   * reference, so the caller must not change the value afterwards (the dispatcher answers a call
   * only once its row is written).
   */
  static ofRedacted(value: unknown): PreparedJson {
    if (value === undefined || value === null) return new PreparedJson(null);
    try {
      // The canonical text escapes what PostgreSQL refuses as JSON.stringify does, and is kept for the hash and the insert.
      const text = canonicalJson(value);
      if (ESCAPED_BAD.test(text)) return new PreparedJson(cleanJson(JSON.parse(text)));
      const prepared = new PreparedJson(text === "null" ? null : value);
      prepared.#text = text;
      return prepared;
    } catch (err) {
      return new PreparedJson({ unserializable: cleanString(err instanceof Error ? err.message : String(err)) });
    }
  }
}

/** Redacts, then reduces to a plain JSON value; a value that cannot be serialised is kept as a marker. */
function redactedJson(value: unknown): unknown {
  if (value === undefined || value === null) return null;
  try {
    const json = JSON.stringify(redact(value), (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
    if (json === undefined) return null;
    // JSON.stringify writes NUL and unpaired surrogates only as escapes: without one, there is
    // nothing to clean, and the walk (a defineProperty per key) is skipped — ≈ 2.5 % of a fan-out's CPU.
    return ESCAPED_BAD.test(json) ? cleanJson(JSON.parse(json)) : JSON.parse(json);
  } catch (err) {
    return { unserializable: cleanString(err instanceof Error ? err.message : String(err)) };
  }
}

/** How JSON.stringify writes what PostgreSQL refuses: NUL, and surrogates (it escapes only unpaired ones). */
const ESCAPED_BAD = /\\u0000|\\ud[89a-f]/i;

/** Cleans every string and key of a freshly parsed JSON value in place. */
function cleanJson(v: unknown): unknown {
  if (typeof v === "string") return cleanString(v);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = cleanJson(v[i]);
    return v;
  }
  if (v && typeof v === "object") {
    const obj = v as Record<string, unknown>;
    for (const key of Object.keys(obj)) {
      const value = cleanJson(obj[key]);
      const k = cleanString(key);
      if (k !== key) delete obj[key];
      Object.defineProperty(obj, k, { value, enumerable: true, writable: true, configurable: true });
    }
  }
  return v;
}

function toDate(v: unknown, field: string): Date {
  const d = v instanceof Date ? new Date(v.getTime()) : new Date(v as string | number);
  if (Number.isNaN(d.getTime())) {
    throw new OngridError("invalid_argument", `audit record ${field} is not a valid date`, "pass a Date");
  }
  return d;
}

function toMillis(v: unknown): number {
  const n = Math.round(Number(v));
  if (!Number.isFinite(n) || n < 0) return 0;
  return Math.min(n, INT32_MAX);
}
