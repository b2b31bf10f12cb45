/** ongrid.v1.ApprovalService: list, read, approve, deny and watch parked calls (G2, G3). */
import { on } from "node:events";
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ApprovalSchema, ApprovalService, ApprovalState, type Approval } from "../../../proto/gen/ongrid/v1/approval_service_pb.ts";
import { OngridError } from "../../../skill/errors.ts";
import { redact } from "../../../skill/redact.ts";
import { classToProto, resultToProto } from "../../../skill/proto.ts";
import type { ResultEnvelope, SkillClass } from "../../../skill/types.ts";
import type { ApprovalRow } from "../../db/schema/index.ts";
import { FINAL_STATES, type ApprovalStore } from "../../calls/approvals/store.ts";
import type { ApprovalWorkflow } from "../../calls/approvals/workflow.ts";
import { callerOf } from "../../identity/caller.ts";

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

function stateFromProto(s: ApprovalState): string | undefined {
  if (s === ApprovalState.UNSPECIFIED) return undefined;
  const name = Object.entries(STATE_TO_PROTO).find(([, v]) => v === s)?.[0];
  if (!name) throw new OngridError("invalid_argument", `state: ${s} is not an approval state (rule: enum)`);
  return name;
}

/** Builds the ApprovalService implementation. */
export function createApprovalService(deps: { approvals: ApprovalStore; workflow: ApprovalWorkflow }): ServiceImpl<typeof ApprovalService> {
  const { approvals, workflow } = deps;
  return {
    async listApprovals(req, ctx) {
      const caller = callerOf(ctx);
      const rows = await approvals.list({ state: stateFromProto(req.state), limit: req.limit || 100 });
      return { approvals: rows.filter((r) => workflow.canSee(caller, r)).map(approvalToProto) };
    },
    async getApproval(req, ctx) {
      const row = await approvals.get(req.id);
      if (!row || !workflow.canSee(callerOf(ctx), row)) throw new OngridError("not_found", `unknown approval request "${req.id}"`);
      return { approval: approvalToProto(row) };
    },
    async approve(req, ctx) {
      return { approval: approvalToProto(await workflow.approve(callerOf(ctx), req.id, req.comment, req.paramsHash)) };
    },
    async deny(req, ctx) {
      return { approval: approvalToProto(await workflow.deny(callerOf(ctx), req.id, req.reason)) };
    },
    async *watch(req, ctx) {
      const caller = callerOf(ctx);
      // Subscribe before reading, so no change between the read and the subscription is lost.
      const changes = on(approvals.changes, "change", { signal: ctx.signal });
      try {
        if (req.id) {
          const row = await approvals.get(req.id);
          if (!row || !workflow.canSee(caller, row)) throw new OngridError("not_found", `unknown approval request "${req.id}"`);
          yield { approval: approvalToProto(row) };
          if (FINAL_STATES.has(row.state)) return;
        }
        for await (const [row] of changes as AsyncIterable<[ApprovalRow]>) {
          if (req.id && row.id !== req.id) continue;
          if (!workflow.canSee(caller, row)) continue;
          yield { approval: approvalToProto(row) };
          if (req.id && FINAL_STATES.has(row.state)) return;
        }
      } catch (err) {
        if ((err as Error).name === "AbortError") return;
        throw err;
      } finally {
        await changes.return?.();
      }
    },
  };
}
