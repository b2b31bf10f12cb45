/** Fleet fan-out (B4): one host skill on many edges, results streamed as they arrive, a summary at the end. */
import { OngridError } from "../../skill/errors.ts";
import type { EnvelopeError, ResultEnvelope } from "../../skill/types.ts";
import type { Hub } from "../fleet/hub.ts";
import { parseSelector } from "../fleet/selector.ts";
import { type Dispatcher } from "./execute.ts";
import { AuditedError } from "./types.ts";
import { type Caller } from "../identity/caller.ts";
import { leftOutShown, reaches } from "../identity/reach.ts";
import type { PermissionMode } from "./gate.ts";

/** Explicit edge ids one fan-out may name (a selector has no limit). */
const MAX_EDGE_IDS = 10_000;

/** A fan-out request. */
export interface FanOutInput {
  key: string;
  params?: unknown;
  paramsJson?: string;
  edgeIds: string[];
  selector: string;
  perEdgeTimeoutMs?: number;
  sessionId?: string;
  caller: Caller;
  signal?: AbortSignal;
  mode?: PermissionMode;
  /** The playbook the calls run under (layer 0). */
  playbook?: string;
  /**
   * Results of edges other managers hold may come as `encoded` (FanOutEdgeResult bytes, without
   * audit_seq) instead of `result`: for a reader that writes them to a binary protobuf stream.
   */
  encodedResults?: boolean;
}

/** One event of the stream. */
export type FanOutEvent =
  | { kind: "edge"; edgeId: string; result?: ResultEnvelope; error?: EnvelopeError; auditSeq: number; encoded?: Uint8Array }
  | { kind: "summary"; targeted: number; succeeded: number; failed: number; timedOut: number; durationMs: number; leftOut: number };

/** Takes the one slot of skills.max_calls_per_user the whole fan-out counts as; a refusal is audited and thrown. */
async function takeSlot(dispatcher: Dispatcher, input: FanOutInput): Promise<() => void> {
  try {
    return dispatcher.acquireCallSlot(input.caller);
  } catch (err) {
    if (!(err instanceof OngridError)) throw err;
    return dispatcher.refuse({ ...input, edgeId: "" }, err);
  }
}

/**
 * Resolves the targets, starts every call at once and yields results in completion order. The
 * fan-out counts as one call of its user's (skills.max_calls_per_user) until its last call has
 * settled; a reader that stops early cancels the calls still running.
 */
export async function* fanOut(deps: { dispatcher: Dispatcher; hub: Hub }, input: FanOutInput): AsyncGenerator<FanOutEvent> {
  for await (const batch of fanOutBatches(deps, input)) yield* batch;
}

/**
 * fanOut's events in batches: each batch holds the results that had arrived when the reader
 * asked for more (at most `maxBatch`, never none), in completion order; the summary comes alone,
 * last. A reader that writes each batch as one message pays the per-message cost once for all
 * of them, and no result waits for another.
 */
export async function* fanOutBatches(deps: { dispatcher: Dispatcher; hub: Hub }, input: FanOutInput, maxBatch = Number.MAX_SAFE_INTEGER): AsyncGenerator<FanOutEvent[]> {
  const started = Date.now();
  if (!input.edgeIds.length && !input.selector.trim()) {
    await deps.dispatcher.refuse(
      { ...input, edgeId: "" },
      new OngridError("invalid_argument", "edge_ids or selector: give at least one (rule: required)", 'e.g. selector "team=payments"'),
    );
  }
  let selector;
  try {
    selector = parseSelector(input.selector);
  } catch (err) {
    await deps.dispatcher.refuse({ ...input, edgeId: "" }, err as OngridError);
  }
  if (input.edgeIds.length > MAX_EDGE_IDS) {
    await deps.dispatcher.refuse({ ...input, edgeId: "" }, new OngridError("invalid_argument", `edge_ids: at most ${MAX_EDGE_IDS} ids (rule: maxItems)`, "use a label selector"));
  }
  // Named edges go through the dispatcher, which answers one outside the caller's reach as unknown;
  // a selector is narrowed to the caller's reach, and the summary says how many it left out.
  const targets = new Set(input.edgeIds);
  let leftOut = 0;
  if (input.selector.trim()) {
    for (const s of deps.hub.sessions()) {
      if (!selector!.matches(s.hello.labels) || targets.has(s.edgeId)) continue;
      if (reaches(input.caller, s.hello.labels)) targets.add(s.edgeId);
      else leftOut++;
    }
  }

  const release = await takeSlot(deps.dispatcher, input);
  // One signal for all the calls, aborted when the caller's is or when the reader stops: the hub
  // watches a signal once however many calls share it (a controller per call cost ≈ 3 % of a
  // 10,000-edge fan-out, and listeners on one signal used to cost O(N²)).
  const cancel = new AbortController();
  const onCallerAbort = () => cancel.abort(input.signal!.reason);
  if (input.signal?.aborted) cancel.abort(input.signal.reason);
  else input.signal?.addEventListener("abort", onCallerAbort, { once: true });
  const shared = deps.dispatcher.shareWork();
  const queue: FanOutEvent[] = [];
  let wake: (() => void) | undefined;
  let remaining = targets.size;
  let succeeded = 0;
  let timedOut = 0;
  /** The generator has returned (done, or its reader stopped): the slot goes back when the last call settles. */
  let ended = false;
  const settled = (ev: FanOutEvent) => {
    queue.push(ev);
    remaining--;
    if (ended && remaining === 0) release();
    wake?.();
  };
  const call = {
    key: input.key,
    params: input.params,
    paramsJson: input.paramsJson,
    sessionId: input.sessionId,
    timeoutMs: input.perEdgeTimeoutMs,
    caller: input.caller,
    signal: cancel.signal,
    mode: input.mode,
    playbook: input.playbook,
  };
  const failed = (edgeId: string, e: OngridError, auditSeq: number) => {
    if (e.code === "deadline_exceeded") timedOut++;
    settled({ kind: "edge", edgeId, error: { code: e.code, message: e.message, hint: e.hint }, auditSeq });
  };
  try {
    // The shares of the edges other managers hold go to them a batch each (M2); the rest call by call.
    let perCall: Iterable<string> = targets;
    if (input.encodedResults && deps.hub.forwarding) {
      perCall = deps.dispatcher.fanOutForwarded(call, targets, shared, deps.hub.forwarding, (edgeId, out) => {
        if ("error" in out) return failed(edgeId, out.error, out.auditSeq);
        if (out.success) succeeded++;
        else if (out.errorCode === "deadline_exceeded") timedOut++;
        settled({ kind: "edge", edgeId, encoded: out.encoded, auditSeq: out.auditSeq });
      });
    }
    for (const edgeId of perCall) {
      deps.dispatcher.fanOutCall({ ...call, edgeId }, shared).then(
        (out) => {
          const result = out.result!; // a fan-out's call is refused rather than parked
          if (result.success) succeeded++;
          else if (result.error?.code === "deadline_exceeded") timedOut++;
          settled({ kind: "edge", edgeId, result, auditSeq: out.auditSeq });
        },
        (err) => failed(edgeId, err instanceof OngridError ? err : new OngridError("internal", "internal error"), err instanceof AuditedError ? err.auditSeq : 0),
      );
    }
    while (remaining > 0 || queue.length) {
      if (!queue.length) await new Promise<void>((r) => (wake = r));
      wake = undefined;
      // Take the queue in whole batches (shift() on a queue of thousands is O(n) each).
      while (queue.length) yield queue.length <= maxBatch ? queue.splice(0) : queue.splice(0, maxBatch);
    }
    // How many matching edges lay outside the caller's reach says that they exist: only an admin
    // (who may see the whole fleet) is told; anyone else is told 0 (issue 26 E).
    yield [{ kind: "summary", targeted: targets.size, succeeded, failed: targets.size - succeeded, timedOut, durationMs: Date.now() - started, leftOut: leftOutShown(input.caller, leftOut) }];
  } finally {
    ended = true;
    input.signal?.removeEventListener("abort", onCallerAbort);
    if (remaining === 0) release();
    else cancel.abort(new OngridError("cancelled", "the fan-out's reader stopped reading its results"));
  }
}
