/** ongrid.v1.ApprovalService: list, read, approve, deny and watch parked calls (G2, G3). */
import { on } from "node:events";
import type { ServiceImpl } from "@connectrpc/connect";
import { ApprovalService } from "../../../proto/gen/ongrid/v1/approval_service_pb.ts";
import { OngridError } from "../../../skill/errors.ts";
import type { ApprovalRow } from "../../db/schema/index.ts";
import { FINAL_STATES, type ApprovalStore } from "../../calls/approvals/store.ts";
import type { ApprovalWorkflow } from "../../calls/approvals/workflow.ts";
import { callerOf } from "../../identity/caller.ts";
import { approvalToProto, stateFromProto } from "../messages/approval.ts";

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
