/** The audit row as the contract's message. */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ToolCallSchema, type ToolCall } from "../../proto/gen/ongrid/v1/audit_service_pb.ts";
import type { AuditRow } from "../audit/types.ts";
import { toValue } from "../../skill/proto.ts";

export { classFromProto, classToProto, metadataToProto, resultToProto, scopeFromProto, scopeToProto, toValue } from "../../skill/proto.ts";

/** An audit row as the contract's ToolCall. */
export function toolCallToProto(r: AuditRow): ToolCall {
  return create(ToolCallSchema, {
    seq: BigInt(r.seq),
    sessionId: r.sessionId,
    toolName: r.toolName,
    args: toValue(r.args),
    result: toValue(r.result),
    error: r.error,
    deviceId: r.deviceId,
    startedAt: timestampFromDate(r.startedAt),
    finishedAt: timestampFromDate(r.finishedAt),
    durationMs: r.durationMs,
    callerUserId: r.callerUserId,
    callerRole: r.callerRole,
    decision: r.decision,
    decisionReason: r.decisionReason,
    approvalId: r.approvalId,
    sopHash: r.sopHash,
    approvedBy: r.approvedBy ?? "",
    onBehalfOf: r.onBehalfOf ?? "",
    client: r.client ?? "",
    prevHash: r.prevHash,
    rowHash: r.rowHash,
  });
}
