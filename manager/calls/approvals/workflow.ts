/**
 * The human in the loop (G2, G3): approving, denying and expiring parked calls, and who may see
 * them. Every attempt is audited, refused ones included; the call runs (through the dispatcher)
 * once, when the last required approval arrives.
 */
import type { Logger } from "pino";
import { OngridError } from "../../../skill/errors.ts";
import { auditRecord, type AuditLog } from "../../audit/types.ts";
import type { ApprovalRow } from "../../db/schema/index.ts";
import type { Caller } from "../../identity/caller.ts";
import { reaches } from "../../identity/reach.ts";
import { roleAtLeast } from "../../identity/store.ts";
import { dutiesProblem, type ApproverProvenance } from "./duties.ts";
import type { ApprovalStore } from "./store.ts";

/** How often pending requests are checked for expiry. */
const SWEEP_MS = 1000;
/** Every this many sweeps, running calls of managers whose lease lapsed are failed. */
const RECOVER_EVERY = 10;

/** Whether a caller may see a request: its requester always; approvers and admins when the target edge is in their reach. */
export function canSee(caller: Caller, row: ApprovalRow): boolean {
  if (caller.userId === row.requesterUserId || (row.onBehalfOf !== "" && caller.userId === row.onBehalfOf)) return true;
  if (!roleAtLeast(caller.role, "approver")) return false;
  return !row.edgeId || reaches(caller, row.edgeLabels);
}

/** What the workflow needs. */
export interface WorkflowDeps {
  store: ApprovalStore;
  audit: AuditLog;
  log: Logger;
  /** Runs a request whose quorum is complete (the dispatcher's runApproved). */
  run(row: ApprovalRow): Promise<void>;
  /** The approver's account and token as stored (separation of duties, G3); without it the check is skipped (unit tests of the flow). */
  provenance?(userId: string, tokenId?: string): Promise<ApproverProvenance>;
}

/** Creates the workflow and starts the expiry sweep (stop() ends it). */
export function createApprovalWorkflow(deps: WorkflowDeps) {
  const { store, audit, log } = deps;

  async function audited(
    caller: Caller,
    what: { toolName: string; row?: ApprovalRow; id: string; args?: Record<string, unknown> },
    decision: string,
    reason: string,
    error = "",
  ): Promise<number> {
    const r = await audit.append(
      auditRecord({
        sessionId: what.row?.sessionId ?? "",
        toolName: what.toolName,
        args: { approval_id: what.id, ...what.args },
        error,
        deviceId: what.row?.edgeId ?? "",
        callerUserId: caller.userId,
        callerRole: caller.role,
        decision,
        decisionReason: reason,
        approvalId: what.id,
        sopHash: what.row?.sopHash ?? "",
      }),
    );
    return r.seq;
  }

  /** A visible request, or not_found (audited as the given action). */
  async function visible(caller: Caller, id: string, action: string): Promise<ApprovalRow> {
    const row = await store.get(id);
    if (row && canSee(caller, row)) return row;
    const err = new OngridError("not_found", `unknown approval request "${id}"`, "ListApprovals shows the requests you may see");
    await audited(caller, { toolName: action, id }, "deny", `approval_not_found: ${err.message}`, `${err.code}: ${err.message}`);
    throw err;
  }

  const REASONS: Record<string, string> = {
    permission_denied: "approval_self",
    failed_precondition: "approval_refused",
  };

  async function approve(caller: Caller, id: string, comment = "", seenHash = ""): Promise<ApprovalRow> {
    const row = await visible(caller, id, "approval.approve");
    let out;
    try {
      // The approver approves what they saw: a params hash from another request (or another version) is refused.
      if (seenHash && seenHash !== row.paramsHash) {
        throw new OngridError("failed_precondition", `the params hash ${seenHash.slice(0, 64)} is not that of request ${id} (${row.paramsHash})`, `look at the request again (\`ongrid approvals get ${id}\`) and approve what it will run`);
      }
      // A request that is no longer pending is refused by the store with its own reason (already denied, expired…).
      if (deps.provenance && row.state === "pending") {
        const problem = dutiesProblem(await deps.provenance(caller.userId, caller.tokenId), row, caller.tokenId);
        if (problem) throw new OngridError("permission_denied", `${caller.userId}'s approval cannot count toward ${id}: ${problem}`, "separation of duties: an approver must predate the request and owe neither account, role nor token to the requester (docs/security.md)");
      }
      out = await store.vote(id, caller.userId, comment);
    } catch (err) {
      const e = err instanceof OngridError ? err : new OngridError("internal", "internal error while recording the approval");
      const kind = /already approved/.test(e.message) ? "approval_replayed" : /expired/.test(e.message) ? "approval_expired" : /cannot count toward/.test(e.message) ? "approval_duties" : (REASONS[e.code] ?? "approval_refused");
      await audited(caller, { toolName: "approval.approve", id, row, args: comment ? { comment } : {} }, "deny", `${kind}: ${e.message}`, `${e.code}: ${e.message}`);
      throw e;
    }
    const n = out.row.votes.length;
    await audited(caller, { toolName: "approval.approve", id, row: out.row, args: comment ? { comment } : {} }, "allow", `approval_recorded: ${n} of ${out.row.requiredApprovals} for "${row.skillKey}"`);
    if (out.quorum) {
      deps.run(out.row).catch((err) => log.error({ approval_id: id, err: String(err) }, "approved call failed to run"));
    }
    return out.row;
  }

  async function deny(caller: Caller, id: string, reason = ""): Promise<ApprovalRow> {
    const row = await visible(caller, id, "approval.deny");
    const own = caller.userId === row.requesterUserId || (row.onBehalfOf !== "" && caller.userId === row.onBehalfOf);
    if (!own && !roleAtLeast(caller.role, "approver")) {
      const e = new OngridError("permission_denied", `only approvers, or the requester withdrawing it, may deny ${id}`);
      await audited(caller, { toolName: "approval.deny", id, row }, "deny", `approval_refused: ${e.message}`, `${e.code}: ${e.message}`);
      throw e;
    }
    let ended: ApprovalRow;
    try {
      ended = await store.deny(id, caller.userId, reason || (own ? "withdrawn by the requester" : ""));
    } catch (err) {
      const e = err instanceof OngridError ? err : new OngridError("internal", "internal error while denying");
      await audited(caller, { toolName: "approval.deny", id, row }, "deny", `approval_refused: ${e.message}`, `${e.code}: ${e.message}`);
      throw e;
    }
    // The call's own ending row: under its skill key, by the person who ended it.
    await audited(
      caller,
      { toolName: row.skillKey, id, row: ended, args: { ...(row.params as Record<string, unknown>) } },
      "deny",
      `approval_denied: ${own ? "withdrawn by the requester" : `by ${caller.userId}`}${reason ? `: ${reason}` : ""}`,
      `permission_denied: approval request ${id} was denied`,
    );
    return ended;
  }

  async function sweep(now = new Date()): Promise<void> {
    for (const row of await store.expireDue(now)) {
      await audited(
        { userId: row.requesterUserId, role: row.requesterRole },
        { toolName: row.skillKey, id: row.id, row, args: { ...(row.params as Record<string, unknown>) } },
        "deny",
        `approval_expired: nobody decided before ${row.expiresAt.toISOString()}`,
        `deadline_exceeded: approval request ${row.id} expired`,
      );
    }
  }

  /**
   * Fails approved calls whose running manager is gone, auditing each: at start (`includeOwn`)
   * this manager's previous run's too; afterwards (the sweep, every 10 s) those of managers
   * whose lease lapsed. A live manager's running call is never failed by another (M2).
   */
  async function recover(includeOwn = true): Promise<void> {
    for (const row of await store.failInterrupted(includeOwn)) {
      await audited({ userId: row.requesterUserId, role: row.requesterRole }, { toolName: row.skillKey, id: row.id, row }, "allow", `approval_interrupted: ${row.reason}`, `unavailable: ${row.reason}`);
    }
  }

  let sweeping = false;
  let timer: NodeJS.Timeout | undefined;

  return {
    approve,
    deny,
    sweep,
    canSee,
    recover,
    /** Starts the expiry sweep (the manager does; the CLI does not). */
    start(): void {
      let ticks = 0;
      timer ??= setInterval(() => {
        if (sweeping) return;
        sweeping = true;
        const lapsed = ++ticks % RECOVER_EVERY === 0 ? recover(false) : Promise.resolve();
        Promise.all([sweep(), lapsed])
          .catch((err) => log.error({ err: String(err) }, "approval expiry sweep failed"))
          .finally(() => (sweeping = false));
      }, SWEEP_MS);
      timer.unref();
    },
    stop(): void {
      clearInterval(timer);
      timer = undefined;
    },
  };
}

/** The workflow's interface. */
export type ApprovalWorkflow = ReturnType<typeof createApprovalWorkflow>;
