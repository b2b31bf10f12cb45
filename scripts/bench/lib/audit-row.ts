/** The audit record the dispatcher writes for one allowed bench_echo call on an edge: the row each edge call of a benchmark fan-out gets. */
import { PreparedJson } from "../../../manager/audit/record.ts";
import { auditRecord, type AuditRecord } from "../../../manager/audit/types.ts";
import { BENCH_SKILL } from "./constants.ts";

/** The benchmarks' params, as the log stores them (prepared once, shared by every row, as a fan-out's are). */
const ARGS = PreparedJson.of({ text: "x" });

/** The row of a bench_echo call on `edgeId` by the admin, started at `startedAt`, that returned `result` (an envelope the hub redacted). */
export function echoAuditRecord(edgeId: string, result: unknown, startedAt: Date): AuditRecord {
  return auditRecord({
    toolName: BENCH_SKILL,
    args: ARGS,
    result: PreparedJson.ofRedacted(result),
    deviceId: edgeId,
    startedAt,
    callerUserId: "admin",
    callerRole: "admin",
    decision: "allow",
    decisionReason: "safe skill",
  });
}
