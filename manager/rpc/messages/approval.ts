/** The contract's approval messages from the manager's rows, for the services and the CLI. */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ApprovalSchema, ApprovalState, type Approval } from "../../../proto/gen/ongrid/v1/approval_service_pb.ts";
import { OngridError } from "../../../skill/errors.ts";
import { redact } from "../../../skill/redact.ts";
import { classToProto, resultToProto } from "../../../skill/proto.ts";
import type { ResultEnvelope, SkillClass } from "../../../skill/types.ts";
import type { ApprovalRow } from "../../db/schema/index.ts";

const STATE_TO_PROTO: Record<string, ApprovalState> = {
  pending: ApprovalState.PENDING,
  running: ApprovalState.RUNNING,
  executed: ApprovalState.EXECUTED,
  denied: ApprovalState.DENIED,
  expired: ApprovalState.EXPIRED,
  failed: ApprovalState.FAILED,
};

/** A request as the contract's Approval; params are redacted for display (the call runs with the stored ones). */
export function approvalToProto(r: ApprovalRow): Approval {
  return create(ApprovalSchema, {
    id: r.id,
    key: r.skillKey,
    edgeId: r.edgeId,
    params: redact(r.params) as never,
    effectiveClass: classToProto(r.effectiveClass as SkillClass),
    requesterUserId: r.requesterUserId,
    requesterRole: r.requesterRole,
    sessionId: r.sessionId,
    createdAt: timestampFromDate(r.createdAt),
    expiresAt: timestampFromDate(r.expiresAt),
    state: STATE_TO_PROTO[r.state] ?? ApprovalState.UNSPECIFIED,
    requiredApprovals: r.requiredApprovals,
    votes: r.votes.map((v) => ({ userId: v.userId, at: timestampFromDate(new Date(v.at)), comment: v.comment })),
    deniedBy: r.deniedBy,
    reason: r.reason,
    sopId: r.sopId,
    sopVersion: r.sopVersion,
    sopHash: r.sopHash,
    result: r.result ? resultToProto(r.result as ResultEnvelope) : undefined,
    requestAuditSeq: BigInt(r.requestAuditSeq),
    executionAuditSeq: BigInt(r.executionAuditSeq),
    timeoutMs: r.timeoutMs,
    paramsHash: r.paramsHash,
  });
}

export function stateFromProto(s: ApprovalState): string | undefined {
  if (s === ApprovalState.UNSPECIFIED) return undefined;
  const name = Object.entries(STATE_TO_PROTO).find(([, v]) => v === s)?.[0];
  if (!name) throw new OngridError("invalid_argument", `state: ${s} is not an approval state (rule: enum)`);
  return name;
}
