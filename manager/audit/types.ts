/** The shape of the tamper-evident tool-call log (H1–H3), independent of the database driver. */

/** What a caller hands to the log: one call of one skill, whatever its outcome (H1). */
export interface AuditRecord {
  sessionId: string;
  /** The skill key as the caller gave it (may be unknown or empty). */
  toolName: string;
  /** Params as received; redacted by the log before storage (unless a PreparedJson, made so once). */
  args: unknown;
  /** The result envelope, or null when the call never ran; redacted by the log before storage (unless a PreparedJson). */
  result: unknown;
  /** "code: message" when the call failed or was refused; "" on success. Redacted too. */
  error: string;
  /** The targeted edge, "" when none. */
  deviceId: string;
  startedAt: Date;
  finishedAt: Date;
  durationMs: number;
  /** "0" for the system (LLM) caller. */
  callerUserId: string;
  callerRole: string;
  /** Gate decision: allow | ask | deny. */
  decision: string;
  decisionReason: string;
  approvalId: string;
  sopHash: string;
  /** Comma-separated approver ids; "" (or absent) when nobody approved the call. */
  approvedBy?: string;
  /** For a call the agent (user "0") made: the user whose session it was. */
  onBehalfOf?: string;
  /** The client program that made the call, as it named itself (an MCP client's "name/version"); "" when unknown. */
  client?: string;
}

/** A stored row: the record plus its place in the hash chain. */
export interface AuditRow extends AuditRecord {
  seq: number;
  prevHash: string;
  rowHash: string;
}

/** Filters for listing rows (H3); all optional, combined with AND. */
export interface AuditFilter {
  /** Only rows started at or after this time. */
  since?: Date;
  /** Only rows started before this time. */
  until?: Date;
  toolName?: string;
  edgeId?: string;
  userId?: string;
  sessionId?: string;
  decision?: string;
  /** Only rows with seq greater than this. */
  afterSeq?: number;
  /** Only rows with seq less than this. */
  beforeSeq?: number;
  /** Descending seq (newest first); ascending by default. */
  newestFirst?: boolean;
  /** Page size, default 100, at most 1000. */
  limit?: number;
}

/** Result of recomputing the chain (H2). */
export interface VerifyReport {
  ok: boolean;
  rowsChecked: number;
  /** The first row whose hash or link does not match; 0 when ok. */
  firstBrokenSeq: number;
  reason: string;
  /** When ok: the last row's seq and row_hash (0 and "" when empty), worth recording elsewhere, since
   * deleting rows from the end of the chain, or rewriting every later row, is only detectable against them. */
  lastSeq?: number;
  lastRowHash?: string;
}

/** The audit log as the manager uses it. */
export interface AuditLog {
  /** Appends one row (redacting args, result and error) and resolves once it is committed. */
  append(record: AuditRecord): Promise<AuditRow>;
  /**
   * Appends rows as append does, one promise for all: it resolves once each is committed or has
   * failed, with each one's row or error in order (one row the database refuses fails alone).
   */
  appendMany(records: readonly AuditRecord[]): Promise<Array<AuditRow | Error>>;
  list(filter?: AuditFilter): Promise<AuditRow[]>;
  verify(): Promise<VerifyReport>;
  /** Waits for pending appends to commit. */
  flush(): Promise<void>;
}

/** The parts of a record that vary; everything else defaults to empty. */
export type AuditEntry = Partial<AuditRecord> & Pick<AuditRecord, "toolName" | "callerUserId" | "callerRole" | "decision" | "decisionReason">;

/** A whole record from its varying parts: empty defaults, finishedAt now, durationMs from startedAt (default: an instant). */
export function auditRecord(e: AuditEntry): AuditRecord {
  const finishedAt = e.finishedAt ?? new Date();
  const startedAt = e.startedAt ?? finishedAt;
  return {
    sessionId: "",
    args: null,
    result: null,
    error: "",
    deviceId: "",
    approvalId: "",
    sopHash: "",
    ...e,
    startedAt,
    finishedAt,
    durationMs: e.durationMs ?? finishedAt.getTime() - startedAt.getTime(),
  };
}
