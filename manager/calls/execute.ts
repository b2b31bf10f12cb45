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
import type { Forwarding } from "../fleet/hub.ts";
import type { EncodedOutcome, ForwardedCall } from "../fleet/peer-link.ts";
import { credentialParams } from "../../skill/credential.ts";
import type { ResultEnvelope } from "../../skill/types.ts";
import { callUserOf, type Caller } from "../identity/caller.ts";
import { createApprovedRunner } from "./approved.ts";
import { MODES, type PermissionDecision } from "./gate.ts";
import { createParker } from "./park.ts";
import { createRecorder, newTrail, type Trail, type Who } from "./record.ts";
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

  /**
   * The calls of a fan-out on edges other managers hold (M2), one batch per holder, their
   * results encoded for the caller by the holder (PeerEncodedResult): each call is resolved,
   * validated and gated here exactly as fanOutCall would (the work shared per skill through
   * `shared`), has its one row written here, and is only run by its holder. This manager then
   * neither builds a promise chain per call nor decodes and encodes its result again. Only calls
   * that need nothing but running go this way: safe, allowed, of a skill without credential
   * params. Every other edge (held here, offline, refused, mutating, with credentials to inject) is
   * returned, for fanOutCall, which refuses, injects or warns as it always does. `settle` is told
   * each forwarded call's outcome once, after its row is written.
   */
  function fanOutForwarded(input: ExecuteInput, edgeIds: Iterable<string>, shared: SharedWork, forwarding: Forwarding, settle: (edgeId: string, out: ForwardedSettled) => void): string[] {
    const rest: string[] = [];
    let parsed: { raw: unknown; audit: unknown };
    let timeoutMs: number;
    try {
      if (input.mode !== undefined && !(MODES as readonly string[]).includes(input.mode)) return [...edgeIds];
      parsed = paramsOf(input, { shared });
      timeoutMs = resolver.resolveTimeout(input.timeoutMs);
    } catch {
      return [...edgeIds];
    }
    const groups = new Map<string, { holder: { id: string; url: string }; calls: ForwardedCall[]; trails: Trail[] }>();
    /** One trail per gate decision: the rows of a share only read it. */
    const trails = new Map<PermissionDecision, Trail>();
    for (const edgeId of edgeIds) {
      const holder = forwarding.peerOf(edgeId);
      if (!holder) {
        rest.push(edgeId);
        continue;
      }
      let checked;
      try {
        const target = resolver.resolveTarget({ key: input.key, edgeId, caller: input.caller });
        if (target instanceof Promise) target.catch(() => undefined); // offline after all: fanOutCall says so
        if (target instanceof Promise || target.edgeId !== edgeId) {
          rest.push(edgeId);
          continue;
        }
        checked = shared.checked.get(target.skill);
        if (!checked) {
          const params = validateParams(target.skill, parsed.raw);
          const cls = effectiveClass(target.skill, params);
          checked = { params, cls, decision: resolver.gateOf(input, target.skill, cls) };
          shared.checked.set(target.skill, checked);
        }
        if (checked.decision.behavior !== "allow" || checked.cls !== "safe" || credentialParams(target.skill).length) {
          rest.push(edgeId);
          continue;
        }
      } catch {
        rest.push(edgeId);
        continue;
      }
      let trail = trails.get(checked.decision);
      if (!trail) {
        const d = checked.decision;
        trails.set(d, (trail = { ...newTrail(null), args: parsed.audit, decision: d.behavior, decisionReason: `${d.reasonType}: ${d.reason}` }));
      }
      let g = groups.get(holder.id);
      if (!g) groups.set(holder.id, (g = { holder, calls: [], trails: [] }));
      g.calls.push({ edgeId, key: input.key, params: checked.params, timeoutMs });
      g.trails.push(trail);
    }
    for (const { holder, calls, trails: callTrails } of groups.values()) {
      const startedAt = new Date();
      let unwritten = calls.length;
      let written!: () => void;
      track(new Promise<void>((r) => (written = r)));
      /** Outcomes that arrived together (one message of the link): their rows are written together. */
      let arrived: Array<{ index: number; out: EncodedOutcome }> = [];
      const writeArrived = () => {
        const list = arrived;
        arrived = [];
        const rows = list.map(({ index, out }) => {
          const { edgeId } = calls[index]!;
          const who: Who = { key: input.key, edgeId, sessionId: input.sessionId ?? "", caller: input.caller, ...(input.client ? { client: input.client } : {}) };
          const trail = callTrails[index]!;
          let error: OngridError | undefined = "error" in out ? out.error : undefined;
          let stored: PreparedJson | undefined;
          if (!error && "encoded" in out) {
            try {
              stored = PreparedJson.ofCanonical(out.encoded.resultJson);
            } catch (err) {
              error = new OngridError("unavailable", `manager "${holder.id}" answered the call on edge "${edgeId}" with a result this manager cannot record: ${(err as OngridError).message}`);
            }
          }
          if (error || !("encoded" in out)) return { who, trail, startedAt, outcome: { result: null, error: `${error!.code}: ${error!.message}` }, error };
          const e = out.encoded;
          const observed: ResultEnvelope = { success: e.success, output: null, duration_ms: 0, truncated: false, edge_id: edgeId, ...(e.success ? {} : { error: { code: e.errorCode, message: e.errorMessage, hint: "" } }) };
          return { who, trail, startedAt, outcome: { result: observed, error: e.success ? "" : `${e.errorCode}: ${e.errorMessage}`, stored }, encoded: e };
        });
        recorder
          .recordMany(rows)
          .then(
            (seqs) =>
              rows.forEach((r, i) => {
                const seq = seqs[i]!;
                if (typeof seq !== "number") settle(r.who.edgeId, { error: seq, auditSeq: 0 });
                else if (r.encoded) settle(r.who.edgeId, { encoded: r.encoded.edgeResult, success: r.encoded.success, errorCode: r.encoded.errorCode, auditSeq: seq });
                else settle(r.who.edgeId, { error: r.error!, auditSeq: seq });
              }),
            (err) => rows.forEach((r) => settle(r.who.edgeId, { error: recorder.asOngrid(err), auditSeq: 0 })),
          )
          .finally(() => {
            unwritten -= rows.length;
            if (unwritten === 0) written();
          });
      };
      forwarding.callEncoded(holder, calls, input.signal, (index, out) => {
        if (!arrived.length) queueMicrotask(writeArrived);
        arrived.push({ index, out });
      });
    }
    return rest;
  }

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

/** How a call of fanOutForwarded ended: its result as its holder encoded it for the caller, or its error; with its row. */
export type ForwardedSettled = { encoded: Uint8Array; success: boolean; errorCode: string; auditSeq: number } | { error: OngridError; auditSeq: number };

/** Whom a request's row is about. */
function whoOf(input: ExecuteInput): Who {
  return { key: input.key, edgeId: input.edgeId ?? "", sessionId: input.sessionId ?? "", caller: input.caller, ...(input.client ? { client: input.client } : {}) };
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
