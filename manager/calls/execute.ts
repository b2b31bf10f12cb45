/** Dispatch (B3): the one path every execution takes — resolve, validate, gate, run, audit — whatever the surface. */
import { randomUUID } from "node:crypto";
import { OngridError } from "../../skill/errors.ts";
import { parseDuration } from "../../skill/duration.ts";
import { validateParams } from "../../skill/validate.ts";
import { effectiveClass } from "../../skill/registry.ts";
import { runSkill } from "../../skill/run.ts";
import { redactString } from "../../skill/redact.ts";
import { displayProblem } from "../../skill/risk/display.ts";
import { shellCommandOf } from "../../skill/risk-classifier.ts";
import type { ResultEnvelope, Skill } from "../../skill/types.ts";
import { auditRecord } from "../audit/types.ts";
import { PreparedJson } from "../audit/record.ts";
import { decide, MODES, policyFromConfig, type PermissionDecision } from "./gate.ts";
import { reaches } from "../identity/reach.ts";
import { callUserOf, type Caller } from "../identity/caller.ts";
import { AuditedError, type DispatcherDeps, type ExecuteInput, type ExecuteOutput, type Invocation, type SharedWork } from "./types.ts";
import type { ApprovalRow } from "../db/schema/index.ts";
import { checkSop, loadTrustedKeys, type TrustedKey } from "./sop.ts";
import { injectCredentials, scrubSecrets } from "./credentials/inject.ts";
import { credentialParams } from "../../skill/credential.ts";
import type { Evidence } from "../fleet/hub.ts";


/** Where a call goes: in process, or down one edge's tunnel. */
type Target = { skill: Skill; edgeId: string; labels: Readonly<Record<string, string>> };

/** What is known of a call while it is being decided, for its audit row. */
interface Trail {
  args: unknown;
  decision: string;
  decisionReason: string;
  approvalId: string;
  sopHash: string;
  approvedBy: string;
}

/** Creates the dispatcher: one row per call, on every outcome. */
export function createDispatcher(deps: DispatcherDeps) {
  const { registry, audit, config, log, hub, edges, approvals, credentials, playbooks, onCall } = deps;
  const defaultTimeout = parseDuration(config.skills.default_timeout);
  const maxTimeout = parseDuration(config.skills.max_timeout);
  const approvalTtl = parseDuration(config.approvals.ttl);
  const policy = policyFromConfig(config.gate);
  // Read once at start: a key file that cannot be read stops the manager with its name.
  const trustedKeys: TrustedKey[] = loadTrustedKeys(
    config.approvals.sop_trusted_keys
      .split(":")
      .map((f) => f.trim())
      .filter(Boolean),
  );
  const sopKeys = () => trustedKeys;
  const maxCallsPerUser = config.skills.max_calls_per_user;
  /** Calls running per user (callUserOf); a user with none has no entry. */
  const running = new Map<string, number>();

  /**
   * Takes one of the caller's user's call slots (skills.max_calls_per_user), or throws
   * resource_exhausted when all are taken. Returns the function that gives it back; calling that
   * more than once gives it back once.
   */
  function acquireCallSlot(caller: Caller): () => void {
    const user = callUserOf(caller);
    const n = running.get(user) ?? 0;
    if (n >= maxCallsPerUser) {
      throw new OngridError(
        "resource_exhausted",
        `user ${JSON.stringify(user.length > 64 ? `${user.slice(0, 64)}…` : user)} has ${n} calls running (skills.max_calls_per_user is ${maxCallsPerUser})`,
        "wait for one to finish; a fan-out counts as one call",
      );
    }
    running.set(user, n + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const left = (running.get(user) ?? 1) - 1;
      if (left > 0) running.set(user, left);
      else running.delete(user);
    };
  }

  function resolveTimeout(requested: number | undefined): number {
    if (!requested) return defaultTimeout;
    if (requested > maxTimeout) {
      throw new OngridError(
        "invalid_argument",
        `timeout_ms: must be <= ${maxTimeout} (rule: maximum; skills.max_timeout is ${config.skills.max_timeout})`,
        "ask for a shorter deadline or raise skills.max_timeout",
      );
    }
    return requested;
  }

  function parseParams(input: ExecuteInput): unknown {
    if (input.paramsJson === undefined) return input.params ?? {};
    if (input.paramsJson.trim() === "") return {};
    try {
      return JSON.parse(input.paramsJson);
    } catch (err) {
      // The parser's message quotes the text around the fault, which may be part of a secret:
      // report only where it failed.
      const at = /position (\d+)/.exec((err as Error).message)?.[1];
      throw new OngridError(
        "invalid_argument",
        `params_json: is not valid JSON (rule: json)${at ? ` at position ${at}` : ""}`,
        "send the params as a JSON object, e.g. {\"query\": \"nginx 502\"}",
      );
    }
  }

  const unknownEdge = (edgeId: string) => new OngridError("not_found", `unknown edge "${edgeId}"`, "ListEdges shows the enrolled edges");

  /**
   * Resolves where a call goes — at once for a manager skill or an online edge, after a lookup of
   * the edge's row otherwise (to say why it cannot run). An edge outside the caller's reach is
   * answered exactly like an unknown one.
   */
  function resolveTarget(input: ExecuteInput): Target | Promise<Target> {
    if (!input.key) throw new OngridError("invalid_argument", "key: is required (rule: required)", "name a skill; ListSkills shows the keys");
    const local = registry.get(input.key);
    if (local) {
      if (input.edgeId) {
        throw new OngridError(
          "invalid_argument",
          `edge_id: must be empty for the manager-scope skill "${local.meta.key}" (rule: scope)`,
          "leave edge_id out; this skill runs inside the manager",
        );
      }
      return { skill: local, edgeId: "", labels: {} };
    }
    // Every online edge in the caller's reach: only for the error paths (O(edges); a call to a
    // named edge must not scan the fleet, or a fan-out to N edges costs N²).
    const visible = () => hub.sessions().filter((s) => reaches(input.caller, s.hello.labels));
    if (!input.edgeId) {
      const offeredBy = visible().filter((s) => s.skills.has(input.key)).map((s) => s.edgeId);
      if (!offeredBy.length) return { skill: registry.getOrThrow(input.key), edgeId: "", labels: {} };
      throw new OngridError(
        "invalid_argument",
        `edge_id: is required for the host skill "${input.key}" (rule: required)`,
        `online edges offering it: ${offeredBy.slice(0, 10).join(", ")}${offeredBy.length > 10 ? ", …" : ""}`,
      );
    }
    const edgeId = input.edgeId;
    const session = hub.session(edgeId);
    if (!session) {
      return edges.get(edgeId).then((row) => {
        if (!row || row.revokedAt || !reaches(input.caller, row.labels)) throw unknownEdge(edgeId);
        const seen = row.lastSeenAt ? `last seen ${row.lastSeenAt.toISOString()}` : "never connected";
        throw new OngridError("unavailable", `edge "${edgeId}" is offline (${seen})`, "retry when the edge is back online, or pick another edge");
      });
    }
    if (!reaches(input.caller, session.hello.labels)) throw unknownEdge(input.edgeId);
    const skill = session.skills.get(input.key);
    if (!skill) {
      if (!visible().some((s) => s.skills.has(input.key))) registry.getOrThrow(input.key);
      throw new OngridError(
        "failed_precondition",
        `edge "${input.edgeId}" does not offer skill "${input.key}"`,
        "GetEdge lists the skills an edge offers; ListSkills shows which edges offer a key",
      );
    }
    return { skill, edgeId: input.edgeId, labels: session.hello.labels };
  }

  const inflight = new Set<Promise<unknown>>();
  function track<T>(p: Promise<T>): Promise<T> {
    inflight.add(p);
    const done = () => inflight.delete(p);
    p.then(done, done);
    return p;
  }

  /** Runs one call end to end; throws AuditedError for refusals, returns the envelope (or the parked request) otherwise. */
  function execute(input: ExecuteInput): Promise<ExecuteOutput> {
    return track(executeOnce(input));
  }

  /** Resolves once every call started so far has written its audit row. */
  async function drain(): Promise<void> {
    while (inflight.size) await Promise.allSettled([...inflight]);
  }

  function asOngrid(err: unknown): OngridError {
    if (err instanceof OngridError) return err;
    log.error({ err: { message: redactString(String((err as Error)?.message ?? err)), stack: redactString(String((err as Error)?.stack ?? "")) } }, "unexpected error while dispatching a call");
    return new OngridError("internal", "internal error while dispatching the call; see the manager log");
  }

  /** Writes the row of a call and returns its seq. */
  async function record(
    input: { key: string; edgeId: string; sessionId: string; caller: Caller },
    trail: Trail,
    startedAt: Date,
    outcome: { result: ResultEnvelope | null; error: string; fromEdge?: boolean },
  ): Promise<number> {
    try {
      onCall?.({ key: input.key, edgeId: input.edgeId, decision: trail.decision, error: outcome.error, result: outcome.result, durationMs: Date.now() - startedAt.getTime() });
    } catch (err) {
      log.warn({ err: (err as Error)?.message }, "a call observer failed");
    }
    const row = await audit.append(
      auditRecord({
        sessionId: input.sessionId,
        toolName: input.key,
        args: trail.args,
        // An edge's envelope was redacted by the hub: the log checks it but does not redact it again.
        result: outcome.fromEdge && outcome.result ? PreparedJson.ofRedacted(outcome.result) : outcome.result,
        error: outcome.error,
        deviceId: input.edgeId,
        startedAt,
        callerUserId: input.caller.userId,
        callerRole: input.caller.role,
        decision: trail.decision,
        decisionReason: trail.decisionReason,
        approvalId: trail.approvalId,
        sopHash: trail.sopHash,
        approvedBy: trail.approvedBy,
        onBehalfOf: input.caller.onBehalfOf ?? "",
      }),
    );
    return row.seq;
  }

  /** Runs an allowed call: credentials injected just before it runs, their values scrubbed from what comes back. */
  async function run(target: Target, params: Record<string, unknown>, timeoutMs: number, signal: AbortSignal | undefined, evidence: Evidence | undefined, invocation: Invocation): Promise<ResultEnvelope> {
    const { skill, edgeId } = target;
    const injected = credentials && credentialParams(skill).length ? await injectCredentials(skill, params, credentials) : { params, secrets: [] };
    // An edge call gets its call id from the hub; one run here gets its own.
    const callId = edgeId ? "" : randomUUID();
    const result = edgeId
      ? await hub.call(edgeId, skill.meta.key, injected.params, timeoutMs, signal, evidence)
      : await runSkill(skill, injected.params, {
          callId,
          timeoutMs,
          outputCapBytes: config.skills.output_cap_bytes,
          log: log.child({ skill: skill.meta.key, call_id: callId }),
          settings: (config.skills as Record<string, unknown>)[skill.meta.key] as Record<string, unknown> | undefined,
          signal,
          invocation,
        });
    return injected.secrets.length ? scrubSecrets(result, injected.secrets) : result;
  }

  function gateOf(input: Pick<ExecuteInput, "caller" | "mode" | "whitelist" | "playbook">, skill: Skill, cls: ReturnType<typeof effectiveClass>): PermissionDecision {
    let whitelist = input.whitelist;
    if (input.playbook) {
      const playbook = playbooks?.get(input.playbook);
      if (!playbook) throw new OngridError("invalid_argument", `playbook: "${input.playbook.slice(0, 64)}" is not a loaded playbook (rule: known)`, "ListPlaybooks shows the loaded playbooks");
      // Both given: only what both allow.
      whitelist = whitelist ? whitelist.filter((k) => playbook.allowedTools.includes(k)) : playbook.allowedTools;
    }
    const { caller } = input;
    const role = caller.role === "system" && caller.onBehalfRole === "viewer" ? "viewer" : caller.role;
    return decide({ key: skill.meta.key, cls, mode: input.mode ?? config.gate.default_mode, role, whitelist, policy });
  }

  /**
   * What the gate would say about offering a skill as a tool (J1), by its static class: a skill
   * whose risk depends on its params (exec, pod_execute) is offered only where its worst case
   * could pass — never in READ_ONLY, never under a playbook that does not list it. Each call is
   * gated again with its real params.
   */
  function preview(skill: Skill, input: Pick<ExecuteInput, "caller" | "mode" | "whitelist" | "playbook">): PermissionDecision {
    return gateOf(input, skill, skill.meta.class);
  }

  async function executeOnce(input: ExecuteInput): Promise<ExecuteOutput> {
    const startedAt = new Date();
    const trail: Trail = { args: input.paramsJson ?? input.params ?? {}, decision: "", decisionReason: "", approvalId: "", sopHash: "", approvedBy: "" };
    const who = { key: input.key, edgeId: input.edgeId ?? "", sessionId: input.sessionId ?? "", caller: input.caller };
    let result: ResultEnvelope;
    /** The envelope comes from the hub, which redacted it. */
    let fromEdge = false;
    try {
      if (input.mode !== undefined && !(MODES as readonly string[]).includes(input.mode)) {
        throw new OngridError("invalid_argument", `permission_mode: ${String(input.mode).slice(0, 32)} is not a mode (rule: enum ${MODES.join("|")})`);
      }
      const { shared } = input;
      let raw: unknown;
      if (shared) {
        if (!shared.parsed) {
          const value = parseParams(input);
          shared.parsed = { raw: value, audit: PreparedJson.of(value) };
        }
        raw = shared.parsed.raw;
        trail.args = shared.parsed.audit;
      } else {
        raw = parseParams(input);
        trail.args = raw;
      }
      const found = resolveTarget(input);
      const target = found instanceof Promise ? await found : found;
      fromEdge = Boolean(target.edgeId);
      let checked = shared?.checked.get(target.skill);
      const params = checked?.params ?? validateParams(target.skill, raw);
      const timeoutMs = resolveTimeout(input.timeoutMs);
      if (!checked) {
        const cls = effectiveClass(target.skill, params);
        checked = { params, cls, decision: gateOf(input, target.skill, cls) };
        shared?.checked.set(target.skill, checked);
      }
      const { cls, decision: d } = checked;
      trail.decision = d.behavior;
      trail.decisionReason = `${d.reasonType}: ${d.reason}`;
      if (d.behavior === "deny") {
        throw new OngridError("permission_denied", `denied (${d.reasonType}): ${d.reason}`, d.reasonType === "role" ? "ask an operator" : undefined);
      }
      if (d.behavior === "ask") {
        if (input.noApproval) {
          trail.decision = "deny";
          trail.decisionReason = `fan_out_needs_approval: ${d.reason}`;
          throw new OngridError("permission_denied", `"${target.skill.meta.key}" is ${cls} for these params and needs approval; a fan-out runs only calls that need none`, "request it per edge with ExecuteSkill");
        }
        return await park(input, who, trail, startedAt, target, params, timeoutMs, cls, d);
      }
      // Counted only while it runs (a parked call holds no slot); a fan-out's per-edge calls share its slot.
      const release = input.inFanOut ? undefined : acquireCallSlot(input.caller);
      try {
        let evidence: Evidence | undefined;
        if (cls !== "safe") {
          log.warn({ skill: target.skill.meta.key, edge_id: target.edgeId, user: input.caller.userId, class: cls }, "BYPASS MODE: a non-safe call runs without approval");
          evidence = { approvalId: "", approvers: [], sopHash: "", effectiveClass: cls, reasonType: d.reasonType };
        }
        result = await run(target, params, timeoutMs, input.signal, evidence, { caller: input.caller, sessionId: input.sessionId ?? "", mode: input.mode, playbook: input.playbook });
      } finally {
        release?.();
      }
    } catch (err) {
      const e = asOngrid(err);
      const seq = await record(who, trail, startedAt, { result: null, error: `${e.code}: ${e.message}` });
      throw new AuditedError(e, seq);
    }
    const seq = await record(who, trail, startedAt, { result, error: result.success ? "" : `${result.error?.code}: ${result.error?.message}`, fromEdge });
    return { result, auditSeq: seq };
  }

  /** Parks a call that needs approval: checks the SOP of a dangerous one first, records the request, audits "ask". */
  async function park(
    input: ExecuteInput,
    who: { key: string; edgeId: string; sessionId: string; caller: Caller },
    trail: Trail,
    startedAt: Date,
    target: Target,
    params: Record<string, unknown>,
    timeoutMs: number,
    cls: string,
    d: PermissionDecision,
  ): Promise<ExecuteOutput> {
    let sop: { id: string; version: string; hash: string; document: string } | undefined;
    if (d.needsSop) {
      if (!input.sop?.trim()) {
        trail.decision = "deny";
        trail.decisionReason = `sop_missing: ${d.reason}`;
        throw new OngridError("permission_denied", `"${target.skill.meta.key}" is dangerous for these params and needs a signed SOP covering it: none was sent`, "sign one with `ongrid sop sign` and send it (ExecuteSkillRequest.sop, `ongrid skills run --sop FILE`)");
      }
      try {
        const ok = checkSop(input.sop, sopKeys(), { skillKey: target.skill.meta.key, params });
        sop = { id: ok.id, version: ok.version, hash: ok.hash, document: input.sop };
        trail.sopHash = ok.hash;
      } catch (err) {
        const e = asOngrid(err);
        trail.decision = "deny";
        trail.decisionReason = `sop_invalid: ${e.message}`;
        throw e.code === "invalid_argument" ? e : new OngridError("permission_denied", e.message, e.hint);
      }
    }
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
      timeoutMs,
      requiredApprovals: d.approvals,
      ttlMs: approvalTtl,
      sop,
    });
    trail.approvalId = row.id;
    let seq: number;
    try {
      seq = await record(who, trail, startedAt, { result: null, error: "" });
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
    if (end.state === "denied") throw new OngridError("permission_denied", `approval request ${end.id} was denied by ${end.deniedBy}${end.reason ? `: ${end.reason}` : ""}`);
    if (end.state === "expired") throw new OngridError("deadline_exceeded", `approval request ${end.id} expired at ${end.expiresAt.toISOString()} without a decision`, "request it again when an approver is available");
    throw new OngridError("failed_precondition", `approval request ${end.id} was approved but did not run: ${end.reason}`);
  }

  /**
   * Runs a request whose quorum is complete (state running), as its requester, with the params it
   * was requested with. The SOP and the requester's reach are checked again; the outcome is
   * audited with the approval id, the approvers and the SOP hash, and recorded on the request.
   * It takes no slot of skills.max_calls_per_user: its approvers decided that it runs.
   */
  function runApproved(row: ApprovalRow): Promise<void> {
    return track(runApprovedOnce(row));
  }

  async function runApprovedOnce(row: ApprovalRow): Promise<void> {
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
    const who = { key: row.skillKey, edgeId: row.edgeId, sessionId: row.sessionId, caller };
    let result: ResultEnvelope;
    try {
      const target = await resolveTarget({ key: row.skillKey, edgeId: row.edgeId || undefined, caller });
      const params = row.params as Record<string, unknown>;
      const cls = effectiveClass(target.skill, params);
      if (cls === "dangerous" || row.effectiveClass === "dangerous") {
        if (!row.sopDocument) throw new OngridError("permission_denied", "a dangerous call needs its SOP, and the request has none");
        const ok = checkSop(row.sopDocument, sopKeys(), { skillKey: row.skillKey, params });
        if (ok.hash !== row.sopHash) throw new OngridError("permission_denied", "the SOP changed since the request");
        if (approvers.length < 2) throw new OngridError("permission_denied", `a dangerous call needs two approvers; ${row.id} has ${approvers.length}`);
      }
      result = await run(target, params, row.timeoutMs, undefined, { approvalId: row.id, approvers, sopHash: row.sopHash, effectiveClass: cls, reasonType: "approved" }, { caller, sessionId: row.sessionId });
    } catch (err) {
      const e = asOngrid(err);
      trail.decision = e.code === "permission_denied" ? "deny" : "allow";
      const seq = await record(who, trail, startedAt, { result: null, error: `${e.code}: ${e.message}` });
      await approvals.finish(row.id, { state: "failed", reason: `${e.code}: ${e.message}`, executionAuditSeq: seq });
      return;
    }
    const seq = await record(who, trail, startedAt, { result, error: result.success ? "" : `${result.error?.code}: ${result.error?.message}` });
    await approvals.finish(row.id, { state: "executed", result, executionAuditSeq: seq });
  }

  /** Audits a request refused before any call was made (e.g. a fan-out with a bad selector) and throws it. */
  async function refuse(input: ExecuteInput, err: OngridError): Promise<never> {
    const now = new Date();
    const seq = await record(
      { key: input.key, edgeId: input.edgeId ?? "", sessionId: input.sessionId ?? "", caller: input.caller },
      { args: input.paramsJson ?? input.params ?? {}, decision: "", decisionReason: "", approvalId: "", sopHash: "", approvedBy: "" },
      now,
      { result: null, error: `${err.code}: ${err.message}` },
    );
    throw new AuditedError(err, seq);
  }

  /** A fresh SharedWork for one fan-out's calls (ExecuteInput.shared). */
  const shareWork = (): SharedWork => ({ checked: new Map() });

  return { execute, drain, refuse, runApproved, record, preview, acquireCallSlot, shareWork };
}

/** The dispatcher's interface, for the RPC services and the CLI. */
export type Dispatcher = ReturnType<typeof createDispatcher>;

/** Why an approver's (redacted) view of a shell-command call would not show what runs (A5, G2), or undefined. */
function approverViewProblem(skill: Skill, params: Record<string, unknown>): string | undefined {
  const shell = shellCommandOf(skill.meta.riskClassifier, params);
  return typeof shell?.command === "string" ? displayProblem(shell.command, shell.cwd) : undefined;
}
