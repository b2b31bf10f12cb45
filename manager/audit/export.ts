/** JSON-lines export of the audit log (H3). */
import type { AuditFilter, AuditLog, AuditRow } from "./types.ts";

const PAGE = 1000;

/**
 * Writes every row matching `filter` (after `filter.afterSeq`, ignoring `filter.limit`) in ascending
 * seq, one JSON object per line; `write` gets each line without its "\n" (the sink adds it).
 * Each object is auditRowToJson(row).
 * Resolves with the number of rows written.
 */
export async function exportJsonLines(
  log: Pick<AuditLog, "list">,
  filter: AuditFilter,
  write: (line: string) => void | Promise<void>,
): Promise<number> {
  let afterSeq = filter.afterSeq ?? 0;
  let count = 0;
  for (;;) {
    const page = await log.list({ ...filter, afterSeq, limit: PAGE });
    for (const row of page) {
      await write(JSON.stringify(auditRowToJson(row)));
      count += 1;
    }
    if (page.length < PAGE) return count;
    afterSeq = page[page.length - 1]!.seq;
  }
}

/** A row as exported: the H1 column names (session_id, args_json, …) in table order, dates as ISO strings. */
export function auditRowToJson(r: AuditRow): Record<string, unknown> {
  return {
    seq: r.seq,
    session_id: r.sessionId,
    tool_name: r.toolName,
    args_json: r.args,
    result_json: r.result,
    error: r.error,
    device_id: r.deviceId,
    started_at: r.startedAt.toISOString(),
    finished_at: r.finishedAt.toISOString(),
    duration_ms: r.durationMs,
    caller_user_id: r.callerUserId,
    caller_role: r.callerRole,
    decision: r.decision,
    decision_reason: r.decisionReason,
    approval_id: r.approvalId,
    sop_hash: r.sopHash,
    approved_by: r.approvedBy ?? "",
    on_behalf_of: r.onBehalfOf ?? "",
    client: r.client ?? "",
    prev_hash: r.prevHash,
    row_hash: r.rowHash,
  };
}
