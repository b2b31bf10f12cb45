/**
 * Fan-out across managers (M2), the entry manager's short path for the shares other managers
 * hold: see createForwardedShares.
 */
import { OngridError } from "../../skill/errors.ts";
import { credentialParams } from "../../skill/credential.ts";
import { effectiveClass } from "../../skill/registry.ts";
import { validateParams } from "../../skill/validate.ts";
import { readEncodedResult } from "../fleet/encoded-result.ts";
import type { Forwarding } from "../fleet/hub.ts";
import type { EncodedOutcome, ForwardedCall } from "../fleet/peer-link.ts";
import { MODES, type PermissionDecision } from "./gate.ts";
import { newTrail, whoOf, type Recorder, type Trail } from "./record.ts";
import type { Resolver } from "./resolve.ts";
import type { ExecuteInput, SharedWork } from "./types.ts";

/** How a forwarded call of a fan-out ended: its result as its holder encoded it for the caller, or its error; with its row. */
export type ForwardedSettled = { encoded: Uint8Array; success: boolean; errorCode: string; auditSeq: number } | { error: OngridError; auditSeq: number };

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
export function createForwardedShares({ resolver, recorder, track, paramsOf }: {
  resolver: Resolver;
  recorder: Recorder;
  /** Counts a promise among the dispatcher's calls in flight (drain waits for it). */
  track: (p: Promise<void>) => unknown;
  /** The fan-out's params, parsed once for all its calls, and as the audit log stores them. */
  paramsOf: (input: ExecuteInput, shared: SharedWork) => { raw: unknown; audit: unknown };
}) {
  return function fanOutForwarded(input: ExecuteInput, edgeIds: Iterable<string>, shared: SharedWork, forwarding: Forwarding, settle: (edgeId: string, out: ForwardedSettled) => void): string[] {
    const rest: string[] = [];
    let parsed: { raw: unknown; audit: unknown };
    let timeoutMs: number;
    try {
      if (input.mode !== undefined && !(MODES as readonly string[]).includes(input.mode)) return [...edgeIds];
      parsed = paramsOf(input, shared);
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
          const who = whoOf(input, edgeId);
          const trail = callTrails[index]!;
          let error: OngridError | undefined = "error" in out ? out.error : undefined;
          let read: ReturnType<typeof readEncodedResult> | undefined;
          if (!error && "encoded" in out) {
            try {
              read = readEncodedResult(holder.id, edgeId, out.encoded);
            } catch (err) {
              error = err as OngridError;
            }
          }
          if (error || !read || !("encoded" in out)) return { who, trail, startedAt, outcome: { result: null, error: `${error!.code}: ${error!.message}` }, error };
          const env = read.envelope;
          const encoded = { bytes: out.encoded.edgeResult, success: env.success, errorCode: env.error?.code ?? "" };
          return { who, trail, startedAt, outcome: { result: env, error: env.success ? "" : `${env.error?.code}: ${env.error?.message}`, stored: read.stored }, encoded };
        });
        recorder
          .recordMany(rows)
          .then(
            (seqs) =>
              rows.forEach((r, i) => {
                const seq = seqs[i]!;
                if (typeof seq !== "number") settle(r.who.edgeId, { error: seq, auditSeq: 0 });
                else if (r.encoded) settle(r.who.edgeId, { encoded: r.encoded.bytes, success: r.encoded.success, errorCode: r.encoded.errorCode, auditSeq: seq });
                else settle(r.who.edgeId, { error: r.error!, auditSeq: seq });
              }),
            (err) => rows.forEach((r) => settle(r.who.edgeId, { error: recorder.asOngrid(err), auditSeq: 0 })),
          )
          .finally(() => {
            unwritten -= rows.length;
            if (unwritten === 0) written();
          });
      };
      const arrive = (index: number, out: EncodedOutcome) => {
        if (!arrived.length) queueMicrotask(writeArrived);
        arrived.push({ index, out });
      };
      try {
        forwarding.callEncoded(holder, calls, input.signal, arrive);
      } catch (err) {
        // Nothing was sent (a peer URL or CA file this manager cannot use): every call fails, recorded.
        const e = new OngridError("unavailable", `manager "${holder.id}" (${holder.url}), which holds the edge, could not be reached: ${(err as Error)?.message ?? String(err)}`);
        calls.forEach((_c, index) => arrive(index, { error: e }));
      }
    }
    return rest;
  }
}
