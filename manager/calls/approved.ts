/**
 * Running a request whose quorum is complete (G2, G3): as its requester, with the params it was
 * requested with; the SOP, the two-approver rule and the requester's reach are checked again; the
 * outcome is audited with the approval id, the approvers and the SOP hash, and recorded on the
 * request. It takes no slot of skills.max_calls_per_user: its approvers decided that it runs.
 */
import { OngridError } from "../../skill/errors.ts";
import { effectiveClass } from "../../skill/registry.ts";
import type { ApprovalRow } from "../db/schema/index.ts";
import type { Caller } from "../identity/caller.ts";
import type { ApprovalStore } from "./approvals/store.ts";
import type { Recorder, Trail } from "./record.ts";
import type { Resolver } from "./resolve.ts";
import type { createRunner } from "./run.ts";
import { checkSop, type TrustedKey } from "./sop.ts";
import { AuditedError } from "./types.ts";

/** Creates the runner of approved requests. */
export function createApprovedRunner(deps: { resolver: Resolver; run: ReturnType<typeof createRunner>; recorder: Recorder; approvals: ApprovalStore; sopKeys: () => TrustedKey[] }) {
  const { resolver, run, recorder, approvals, sopKeys } = deps;
  return async function runApproved(row: ApprovalRow): Promise<void> {
    const startedAt = new Date();
    const caller: Caller = { userId: row.requesterUserId, role: row.requesterRole, reach: row.requesterReach, ...(row.onBehalfOf ? { onBehalfOf: row.onBehalfOf } : {}) };
    const approvers = row.votes.map((v) => v.userId);
    const trail: Trail = {
      args: row.params,
      decision: "allow",
      decisionReason: `approved: by ${approvers.join(", ")} (approval ${row.id})`,
      approvalId: row.id,
      sopHash: row.sopHash,
      approvedBy: approvers.join(","),
    };
    const who = { key: row.skillKey, edgeId: row.edgeId, sessionId: row.sessionId, caller, ...(row.client ? { client: row.client } : {}) };
    let out;
    try {
      out = await recorder.settle(
        who,
        trail,
        startedAt,
        async () => {
          const target = await resolver.resolveTarget({ key: row.skillKey, edgeId: row.edgeId || undefined, caller });
          const params = row.params as Record<string, unknown>;
          const cls = effectiveClass(target.skill, params);
          if (cls === "dangerous" || row.effectiveClass === "dangerous") {
            if (!row.sopDocument) throw new OngridError("permission_denied", "a dangerous call needs its SOP, and the request has none", "request it again with a signed SOP (`ongrid skills run --sop FILE`, ExecuteSkillRequest.sop)");
            const ok = checkSop(row.sopDocument, sopKeys(), { skillKey: row.skillKey, params });
            if (ok.hash !== row.sopHash) throw new OngridError("permission_denied", "the SOP changed since the request", "request it again with the SOP as it is now, and have it approved again");
            if (approvers.length < 2) throw new OngridError("permission_denied", `a dangerous call needs two approvers; ${row.id} has ${approvers.length}`, "a second approver other than the requester must approve it");
          }
          const evidence = { approvalId: row.id, approvers, sopHash: row.sopHash, effectiveClass: cls, reasonType: "approved" };
          const result = await run({ target, params, timeoutMs: row.timeoutMs, evidence, invocation: { caller, sessionId: row.sessionId } });
          return { result, fromEdge: false };
        },
        (e, t) => {
          t.decision = e.code === "permission_denied" ? "deny" : "allow";
        },
      );
    } catch (err) {
      if (!(err instanceof AuditedError)) throw err;
      await approvals.finish(row.id, { state: "failed", reason: `${err.code}: ${err.message}`, executionAuditSeq: err.auditSeq });
      return;
    }
    await approvals.finish(row.id, { state: "executed", result: out.result!, executionAuditSeq: out.auditSeq });
  };
}
