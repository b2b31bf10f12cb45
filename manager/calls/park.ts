/**
 * Parking a call that needs approval (G2, G3): the SOP of a dangerous call is checked first, the
 * approver's view must show what runs, the request stores the exact params and their hash, its
 * "ask" row is written, and the caller waits for the outcome or gets the pending request.
 */
import { OngridError } from "../../skill/errors.ts";
import { displayProblem } from "../../skill/risk/display.ts";
import { shellCommandOf } from "../../skill/risk-classifier.ts";
import type { ResultEnvelope, Skill, SkillClass } from "../../skill/types.ts";
import type { ApprovalStore } from "./approvals/store.ts";
import type { PermissionDecision } from "./gate.ts";
import type { Recorder, Trail, Who } from "./record.ts";
import type { Target } from "./resolve.ts";
import { checkSop, type TrustedKey } from "./sop.ts";
import type { ExecuteInput, ExecuteOutput } from "./types.ts";

/** One call the gate answered "ask" for. */
export interface ParkRequest {
  input: Pick<ExecuteInput, "caller" | "sop" | "waitForApproval" | "signal">;
  who: Who;
  trail: Trail;
  startedAt: Date;
  target: Target;
  params: Record<string, unknown>;
  timeoutMs: number;
  cls: SkillClass;
  decision: PermissionDecision;
}

/** Creates park over the approval store and the recorder. */
export function createParker({ approvals, recorder, sopKeys, approvalTtlMs }: { approvals: ApprovalStore; recorder: Recorder; sopKeys: () => TrustedKey[]; approvalTtlMs: number }) {
  /** Checks the SOP a dangerous call needs; records its hash in the trail. A missing or invalid one is refused (the trail says why). */
  function checkedSop({ input, trail, target, params, decision: d }: ParkRequest): { id: string; version: string; hash: string; document: string } | undefined {
    if (!d.needsSop) return undefined;
    if (!input.sop?.trim()) {
      trail.decision = "deny";
      trail.decisionReason = `sop_missing: ${d.reason}`;
      throw new OngridError("permission_denied", `"${target.skill.meta.key}" is dangerous for these params and needs a signed SOP covering it: none was sent`, "sign one with `ongrid sop sign` and send it (ExecuteSkillRequest.sop, `ongrid skills run --sop FILE`)");
    }
    try {
      const ok = checkSop(input.sop, sopKeys(), { skillKey: target.skill.meta.key, params });
      trail.sopHash = ok.hash;
      return { id: ok.id, version: ok.version, hash: ok.hash, document: input.sop };
    } catch (err) {
      const e = recorder.asOngrid(err);
      trail.decision = "deny";
      trail.decisionReason = `sop_invalid: ${e.message}`;
      throw e.code === "invalid_argument" ? e : new OngridError("permission_denied", e.message, e.hint);
    }
  }

  /** Parks the call: records the request, audits "ask", and waits for its end when the caller asked to. */
  return async function park(req: ParkRequest): Promise<ExecuteOutput> {
    const { input, who, trail, startedAt, target, params, timeoutMs, cls, decision: d } = req;
    const sop = checkedSop(req);
    const hidden = approverViewProblem(target.skill, params);
    if (hidden) {
      trail.decision = "deny";
      trail.decisionReason = `display_mismatch: ${hidden}`;
      throw new OngridError("invalid_argument", hidden, "pass secrets through a credential param (G5) or reword the command so that no value that looks like a secret stands where a command, operator or redirection does");
    }
    const row = await approvals.create({
      skillKey: target.skill.meta.key,
      edgeId: target.edgeId,
      edgeLabels: { ...target.labels },
      params,
      effectiveClass: cls,
      requester: input.caller,
      sessionId: who.sessionId,
      client: who.client ?? "",
      timeoutMs,
      requiredApprovals: d.approvals,
      ttlMs: approvalTtlMs,
      sop,
    });
    trail.approvalId = row.id;
    let seq: number;
    try {
      seq = await recorder.record(who, trail, startedAt, { result: null, error: "" });
    } catch (err) {
      // The caller is told the call was not recorded: the request must not stay approvable. The store
      // refuses votes on a request without its audit row anyway (this may fail on the same database).
      await approvals.deny(row.id, "system", "the request could not be recorded in the audit log; request it again").catch(() => undefined);
      throw err;
    }
    await approvals.setRequestSeq(row.id, seq);
    if (!input.waitForApproval) return { auditSeq: seq, approval: { ...row, requestAuditSeq: seq } };
    const end = await approvals.waitFinal(row.id, input.signal);
    if (end.state === "executed") return { result: end.result as ResultEnvelope, auditSeq: end.executionAuditSeq, approval: end };
    if (end.state === "denied") throw new OngridError("permission_denied", `approval request ${end.id} was denied by ${end.deniedBy}${end.reason ? `: ${end.reason}` : ""}`, "talk to the approver; change the call and request it again if need be");
    if (end.state === "expired") throw new OngridError("deadline_exceeded", `approval request ${end.id} expired at ${end.expiresAt.toISOString()} without a decision`, "request it again when an approver is available");
    throw new OngridError("failed_precondition", `approval request ${end.id} was approved but did not run: ${end.reason}`);
  };
}

/** Why an approver's (redacted) view of a shell-command call would not show what runs (A5, G2), or undefined. */
export function approverViewProblem(skill: Skill, params: Record<string, unknown>): string | undefined {
  const shell = shellCommandOf(skill.meta.riskClassifier, params);
  return typeof shell?.command === "string" ? displayProblem(shell.command, shell.cwd) : undefined;
}
