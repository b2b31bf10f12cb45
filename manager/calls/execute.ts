/**
 * Dispatch (B3): the one path every execution takes — resolve, validate, gate, run, audit —
 * whatever the surface. A direct call, an approved request and each call of a fan-out all end in
 * the recorder's settle (record.ts): one row per call, on every outcome.
 */
import { OngridError } from "../../skill/errors.ts";
import { parseDuration } from "../../skill/duration.ts";
import { validateParams } from "../../skill/validate.ts";
import { effectiveClass } from "../../skill/registry.ts";
import type { Skill } from "../../skill/types.ts";
import { PreparedJson } from "../audit/record.ts";
import type { ApprovalRow } from "../db/schema/index.ts";
import type { Evidence } from "../fleet/tunnel-calls.ts";
import { callUserOf, type Caller } from "../identity/caller.ts";
import { createApprovedRunner } from "./approved.ts";
import { MODES, type PermissionDecision } from "./gate.ts";
import { createParker } from "./park.ts";
import { createForwardedShares } from "./forwarded.ts";
import { createRecorder, newTrail, whoOf, type Trail } from "./record.ts";
import { createResolver, type GateInput } from "./resolve.ts";
import { createRunner } from "./run.ts";
import { loadTrustedKeys } from "./sop.ts";
import { AuditedError, type DispatcherDeps, type ExecuteInput, type ExecuteOutput, type SharedWork } from "./types.ts";

/** How fan-out steers one of its per-edge calls: never through ExecuteInput, which the RPC layer builds field by field. */
interface FanOutPart {
  /** The work the fan-out's calls share (see shareWork). */
  shared: SharedWork;
}

/** Creates the dispatcher. */
export function createDispatcher(deps: DispatcherDeps) {
  const { config, log, approvals } = deps;
  // Read once at start: a key file that cannot be read stops the manager with its name.
  const trustedKeys = loadTrustedKeys(
    config.approvals.sop_trusted_keys
      .split(":")
      .map((f) => f.trim())
      .filter(Boolean),
  );
  const sopKeys = () => trustedKeys;
  const recorder = createRecorder(deps);
  const resolver = createResolver(deps);
  const run = createRunner(deps);
  const park = createParker({ approvals, recorder, sopKeys, approvalTtlMs: parseDuration(config.approvals.ttl) });
  const runApprovedRequest = createApprovedRunner({ resolver, run, recorder, approvals, sopKeys });
  const slots = createCallSlots(config.skills.max_calls_per_user);

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

  /**
   * One call of a fan-out (B4): like execute, but it holds no slot of its user's (the fan-out holds
   * one for all its calls), is refused rather than parked when it needs approval, and shares the
   * parsed params, validation and gate decision with the fan-out's other calls.
   */
  function fanOutCall(input: ExecuteInput, shared: SharedWork): Promise<ExecuteOutput> {
    return track(executeOnce({ ...input, noApproval: true }, { shared }));
  }

  /** A fan-out's shares held by other managers, a batch per holder (forwarded.ts). */
  const fanOutForwarded = createForwardedShares({ resolver, recorder, track, paramsOf: (input, shared) => paramsOf(input, { shared }) });

  /** Resolves once every call started so far has written its audit row. */
  async function drain(): Promise<void> {
    while (inflight.size) await Promise.allSettled([...inflight]);
  }

  /**
   * What the gate would say about offering a skill as a tool (J1), by its static class: a skill
   * whose risk depends on its params (exec, pod_execute) is offered only where its worst case
   * could pass — never in READ_ONLY, never under a playbook that does not list it. Each call is
   * gated again with its real params.
   */
  function preview(skill: Skill, input: GateInput): PermissionDecision {
    return resolver.gateOf(input, skill, skill.meta.class);
  }

  /** The params as a JSON value and as the audit log stores them, worked out once per fan-out. */
  function paramsOf(input: ExecuteInput, part: FanOutPart | undefined): { raw: unknown; audit: unknown } {
    if (!part) {
      const raw = resolver.parseParams(input);
      return { raw, audit: raw };
    }
    if (!part.shared.parsed) {
      const raw = resolver.parseParams(input);
      part.shared.parsed = { raw, audit: PreparedJson.of(raw) };
    }
    return part.shared.parsed;
  }

  function executeOnce(input: ExecuteInput, part?: FanOutPart): Promise<ExecuteOutput> {
    const startedAt = new Date();
    const trail = trailOf(input);
    const who = whoOf(input);
    return recorder.settle(who, trail, startedAt, async () => {
      if (input.mode !== undefined && !(MODES as readonly string[]).includes(input.mode)) {
        throw new OngridError("invalid_argument", `permission_mode: ${String(input.mode).slice(0, 32)} is not a mode (rule: enum ${MODES.join("|")})`);
      }
      const parsed = paramsOf(input, part);
      trail.args = parsed.audit;
      const found = resolver.resolveTarget(input);
      const target = found instanceof Promise ? await found : found;
      let checked = part?.shared.checked.get(target.skill);
      const params = checked?.params ?? validateParams(target.skill, parsed.raw);
      const timeoutMs = resolver.resolveTimeout(input.timeoutMs);
      if (!checked) {
        const cls = effectiveClass(target.skill, params);
        checked = { params, cls, decision: resolver.gateOf(input, target.skill, cls) };
        part?.shared.checked.set(target.skill, checked);
      }
      const { cls, decision: d } = checked;
      trail.decision = d.behavior;
      trail.decisionReason = `${d.reasonType}: ${d.reason}`;
      if (d.behavior === "deny") {
        throw new OngridError("permission_denied", `denied (${d.reasonType}): ${d.reason}`, d.hint);
      }
      if (d.behavior === "ask") {
        if (input.noApproval) {
          trail.decision = "deny";
          trail.decisionReason = `fan_out_needs_approval: ${d.reason}`;
          throw new OngridError("permission_denied", `"${target.skill.meta.key}" is ${cls} for these params and needs approval; a fan-out runs only calls that need none`, "request it per edge with ExecuteSkill");
        }
        return { parked: await park({ input, who, trail, startedAt, target, params, timeoutMs, cls, decision: d }) };
      }
      // Counted only while it runs (a parked call holds no slot); a fan-out's per-edge calls share its slot.
      const release = part ? undefined : slots.acquire(input.caller);
      try {
        let evidence: Evidence | undefined;
        if (cls !== "safe") {
          log.warn({ skill: target.skill.meta.key, edge_id: target.edgeId, user: input.caller.userId, class: cls }, "BYPASS MODE: a non-safe call runs without approval");
          evidence = { approvalId: "", approvers: [], sopHash: "", effectiveClass: cls, reasonType: d.reasonType };
        }
        const result = await run({ target, params, timeoutMs, signal: input.signal, evidence, invocation: { caller: input.caller, sessionId: input.sessionId ?? "", mode: input.mode, playbook: input.playbook } });
        return { result, fromEdge: Boolean(target.edgeId) };
      } finally {
        release?.();
      }
    });
  }

  /** Runs a request whose quorum is complete (approved.ts); the outcome is audited and recorded on the request. */
  function runApproved(row: ApprovalRow): Promise<void> {
    return track(runApprovedRequest(row));
  }

  /** Audits a request refused before any call was made (e.g. a fan-out with a bad selector) and throws it. */
  async function refuse(input: ExecuteInput, err: OngridError): Promise<never> {
    const seq = await recorder.record(whoOf(input), trailOf(input), new Date(), { result: null, error: `${err.code}: ${err.message}` });
    throw new AuditedError(err, seq);
  }

  /** A fresh SharedWork for one fan-out's calls (fanOutCall). */
  const shareWork = (): SharedWork => ({ checked: new Map() });

  return { execute, fanOutCall, fanOutForwarded, drain, refuse, runApproved, preview, acquireCallSlot: slots.acquire, shareWork };
}

/** A request's trail before anything is decided: its arguments as sent. */
function trailOf(input: ExecuteInput): Trail {
  return newTrail(input.paramsJson ?? input.params ?? {});
}

/** The dispatcher's interface, for the RPC services and the CLI. */
export type Dispatcher = ReturnType<typeof createDispatcher>;

/**
 * The calls each user has running (skills.max_calls_per_user), counted per callUserOf. acquire
 * takes one slot or throws resource_exhausted when all are taken, and returns the function that
 * gives it back; calling that more than once gives it back once.
 */
function createCallSlots(maxCallsPerUser: number) {
  const running = new Map<string, number>();
  function acquire(caller: Caller): () => void {
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
  return { acquire };
}
