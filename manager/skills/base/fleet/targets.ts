/**
 * What every fleet tool shares: the params that pick edges (selector, ids, per-edge deadline), the
 * caller and session its own calls run as, and a fan-out through the dispatcher that reports each
 * edge's result or failure and never fails as a whole because some edges failed.
 */
import { SkillError } from "../../../../skill/errors.ts";
import { EDGE_ID_PATTERN } from "../../../../skill/identity.ts";
import type { SkillContext } from "../../../../skill/types.ts";
import { fanOut } from "../../../calls/fan-out.ts";
import type { Invocation } from "../../../calls/types.ts";
import { parseSelector, type Selector } from "../../../fleet/selector.ts";
import { leftOutShown, reaches } from "../../../identity/reach.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { invocationOf } from "../../invocation.ts";

/** The JSON Schema of a label selector param. */
export const SELECTOR_SCHEMA = {
  type: "string",
  maxLength: 1024,
  description: 'Label selector the edges must match: key=value, key!=value, key, !key, comma-separated (all must hold), e.g. "team=payments,env!=dev". Omitted or empty (and no edge_ids): every edge you may reach.',
} as const;

/** The JSON Schema of an edge id list param. */
export const EDGE_IDS_SCHEMA = {
  type: "array",
  items: { type: "string", pattern: EDGE_ID_PATTERN.source },
  minItems: 1,
  maxItems: 1000,
  uniqueItems: true,
  description: "Edges to include by id, in addition to those the selector matches.",
} as const;

/** Default and bounds of the per-edge deadline. */
export const PER_EDGE_TIMEOUT = { default: 10_000, min: 100, max: 120_000 } as const;

/** The JSON Schema of the per-edge deadline param. */
export const PER_EDGE_TIMEOUT_SCHEMA = {
  type: "integer",
  minimum: PER_EDGE_TIMEOUT.min,
  maximum: PER_EDGE_TIMEOUT.max,
  default: PER_EDGE_TIMEOUT.default,
  description: "Deadline of each edge's call in milliseconds; an edge that does not answer in time is listed under failures with deadline_exceeded.",
} as const;

/** Time kept back from the tool's own deadline: the hub waits 1 s past an edge's deadline for a silent edge. */
const DEADLINE_MARGIN_MS = 1500;

/** The params that pick edges. */
export interface TargetParams {
  selector?: string;
  edge_ids?: string[];
}

/** The caller, session, mode and playbook a fleet tool's own calls run under. */
export interface FleetCall extends Invocation {
  /** The tool's session; a call made outside any session gets one of its own, so its edge calls can be found together in the audit log. */
  sessionId: string;
}

/** Who made this call; the session the per-edge calls are audited under. */
export function fleetCall(ctx: SkillContext): FleetCall {
  const inv = invocationOf(ctx);
  return { ...inv, sessionId: inv.sessionId || `fleet-${ctx.callId}` };
}

/** Parses a selector param, failing as the tool's own error (not as an audited fan-out refusal). */
export function selectorParam(text: string | undefined): Selector {
  try {
    return parseSelector(text ?? "");
  } catch (err) {
    throw new SkillError("invalid_argument", (err as Error).message, 'Write the selector as comma-separated key=value, key!=value, key or !key clauses, e.g. "team=payments,env!=dev".');
  }
}

/** The edges a call goes to, and those it cannot. */
export interface Targets {
  /** Edges to call: connected edges the selector matches within the caller's reach, plus every named edge (the dispatcher answers for those). */
  call: string[];
  /** Enrolled edges the selector matches within reach that are not connected: reported, not called. */
  offline: { edgeId: string; lastSeen: Date | null }[];
  /** Edges the selector matched that the caller may not reach (counted, never named). */
  leftOut: number;
}

/**
 * Resolves the params to edges with the dispatcher's reach rule: a connected edge is judged by the
 * labels it said hello with, an offline one by those last recorded. A named edge is always handed
 * to the dispatcher, which answers one outside the caller's reach exactly like an unknown one.
 */
export async function resolveTargets(deps: Pick<BaseToolDeps, "hub" | "edges">, call: Pick<FleetCall, "caller">, params: TargetParams): Promise<Targets> {
  const selector = selectorParam(params.selector);
  const named = params.edge_ids ?? [];
  const chosen = new Set(named);
  const offline: Targets["offline"] = [];
  let leftOut = 0;
  if (selector.text.trim() || named.length === 0) {
    const live = new Set<string>();
    for (const s of deps.hub.sessions()) {
      live.add(s.edgeId);
      if (!selector.matches(s.hello.labels) || chosen.has(s.edgeId)) continue;
      if (reaches(call.caller, s.hello.labels)) chosen.add(s.edgeId);
      else leftOut++;
    }
    for (const row of await deps.edges.list()) {
      if (row.revokedAt || live.has(row.id) || chosen.has(row.id) || !selector.matches(row.labels)) continue;
      if (reaches(call.caller, row.labels)) offline.push({ edgeId: row.id, lastSeen: row.lastSeenAt });
      else leftOut++;
    }
  }
  return { call: [...chosen].sort(), offline, leftOut: leftOutShown(call.caller, leftOut) };
}

/** One edge that gave no usable answer, and why. */
export interface EdgeFailure {
  edge_id: string;
  code: string;
  message: string;
  hint: string;
}

/** One edge's successful output. */
export interface EdgeOutput {
  edge_id: string;
  output: unknown;
  duration_ms: number;
  truncated?: boolean;
}

/** What a fan-out through a fleet tool returns. */
export interface Across {
  results: EdgeOutput[];
  failures: EdgeFailure[];
  targeted: number;
  left_out: number;
  per_edge_timeout_ms: number;
  session_id: string;
}

/** The failure reported for an offline edge matched by a selector (the dispatcher's wording for a named one). */
export function offlineFailure(o: Targets["offline"][number]): EdgeFailure {
  const seen = o.lastSeen ? `last seen ${o.lastSeen.toISOString()}` : "never connected";
  return { edge_id: o.edgeId, code: "unavailable", message: `edge "${o.edgeId}" is offline (${seen})`, hint: "retry when the edge is back online; query_edges with state offline lists such edges" };
}

/** The per-edge deadline to use: the one asked for, shortened so that every edge answers before the tool's own deadline. */
export function perEdgeDeadline(ctx: SkillContext, requested: number | undefined): number {
  const left = ctx.deadline - Date.now() - DEADLINE_MARGIN_MS;
  return Math.max(PER_EDGE_TIMEOUT.min, Math.min(requested ?? PER_EDGE_TIMEOUT.default, left));
}

/**
 * Runs one host skill on the targets through the fan-out, as the tool's caller and in its session
 * (each edge call gated, reach-checked and audited by the dispatcher). Offline edges the selector
 * matched are reported without a call.
 */
export async function runAcross(
  deps: Pick<BaseToolDeps, "hub" | "edges" | "dispatcher">,
  ctx: SkillContext,
  spec: { key: string; params: Record<string, unknown>; targets: TargetParams; perEdgeTimeoutMs?: number },
): Promise<Across> {
  const call = fleetCall(ctx);
  const targets = await resolveTargets(deps, call, spec.targets);
  if (!targets.call.length && !targets.offline.length) throw noEdges(spec.targets, targets.leftOut);
  const timeoutMs = perEdgeDeadline(ctx, spec.perEdgeTimeoutMs);
  const results: EdgeOutput[] = [];
  const failures: EdgeFailure[] = targets.offline.map(offlineFailure);
  if (targets.call.length) {
    const events = fanOut(
      { dispatcher: deps.dispatcher, hub: deps.hub },
      {
        key: spec.key,
        params: spec.params,
        edgeIds: targets.call,
        selector: "",
        perEdgeTimeoutMs: timeoutMs,
        sessionId: call.sessionId,
        caller: call.caller,
        signal: ctx.signal,
        mode: call.mode,
        playbook: call.playbook,
      },
    );
    for await (const ev of events) {
      if (ev.kind !== "edge") continue;
      if (ev.result?.success) {
        results.push({ edge_id: ev.edgeId, output: ev.result.output, duration_ms: ev.result.duration_ms, ...(ev.result.truncated ? { truncated: true } : {}) });
      } else {
        const e = ev.result?.error ?? ev.error ?? { code: "internal", message: "no result and no error", hint: "" };
        failures.push({ edge_id: ev.edgeId, code: e.code, message: e.message, hint: e.hint });
      }
    }
  }
  const byId = (a: { edge_id: string }, b: { edge_id: string }) => (a.edge_id < b.edge_id ? -1 : a.edge_id > b.edge_id ? 1 : 0);
  results.sort(byId);
  failures.sort(byId);
  return {
    results,
    failures,
    targeted: targets.call.length + targets.offline.length,
    left_out: targets.leftOut,
    per_edge_timeout_ms: timeoutMs,
    session_id: call.sessionId,
  };
}

/** Refuses a call that targets no edge at all, naming what matched nothing. */
export function noEdges(params: TargetParams, leftOut: number): SkillError {
  const what = [params.selector?.trim() ? `selector "${params.selector.trim()}"` : "", params.edge_ids?.length ? `edge_ids [${params.edge_ids.slice(0, 5).join(", ")}]` : ""].filter(Boolean).join(" and ") || "(all edges)";
  return new SkillError(
    "no_edges",
    `${what} matched no edge you may reach${leftOut ? ` (${leftOut} matched outside your reach)` : ""}`,
    "query_edges lists the edges you may reach with their labels; widen the selector or name edges by id.",
  );
}
