/**
 * Calls down the tunnel (C2): an execute frame to a connected edge under a call id, its result
 * matched back to the caller (redacted and capped again), its deadline, its cancel, and the
 * evidence MAC of a call the gate let through.
 */
import { randomUUID } from "node:crypto";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { OngridError } from "../../skill/errors.ts";
import { redact } from "../../skill/redact.ts";
import { truncateOutput } from "../../skill/truncate.ts";
import type { ResultEnvelope, SkillClass } from "../../skill/types.ts";
import { classToProto } from "../../skill/proto.ts";
import { evidenceMac } from "../../skill/evidence.ts";
import type { ExecuteResult } from "../../proto/gen/ongrid/v1/tunnel_pb.ts";
import type { SkillResult } from "../../proto/gen/ongrid/v1/skill_pb.ts";
import { createAbortWatchers, createDeadlines } from "./call-timers.ts";
import { createExecuteFrames } from "./execute-frame.ts";
import type { LiveSession, Pending } from "./live-session.ts";

/** Call deadlines are gathered into slots this wide (a silent edge's call fails at most this late). */
const DEADLINE_GRANULARITY_MS = 100;

/** What let a non-safe call through the gate; sent with the execute frame, MAC'd for the edge (skill/evidence.ts). */
export interface Evidence {
  approvalId: string;
  approvers: string[];
  sopHash: string;
  effectiveClass: SkillClass;
  reasonType: string;
}

/** Converts an edge's result frame into an envelope, redacting and capping it again (edges are not trusted to). */
function envelopeFrom(r: SkillResult | undefined, edgeId: string, capBytes: number): ResultEnvelope {
  const output = r?.output ? toJson(ValueSchema, r.output) : null;
  const capped = truncateOutput(redact(output), capBytes);
  return {
    success: Boolean(r?.success),
    output: capped.output,
    ...(r?.error
      ? { error: redact({ code: r.error.code, message: r.error.message, hint: r.error.hint }) }
      : r?.success
        ? {}
        : { error: { code: "edge_error", message: `edge "${edgeId}" reported a failure without an error`, hint: "check the edge's log" } }),
    duration_ms: r?.durationMs ?? 0,
    truncated: Boolean(r?.truncated) || capped.truncated,
    edge_id: edgeId,
  };
}

/** The frame of a call: with its evidence, MAC'd with the edge's token hash, or (a call without evidence) its params' shared encoding. */
function sendExecute(session: LiveSession, executeFrame: ReturnType<typeof createExecuteFrames>, callId: string, key: string, params: Record<string, unknown>, timeoutMs: number, evidence?: Evidence): boolean {
  const approval = evidence
    ? {
        approvalId: evidence.approvalId,
        approvers: evidence.approvers,
        sopHash: evidence.sopHash,
        effectiveClass: classToProto(evidence.effectiveClass),
        reasonType: evidence.reasonType,
        mac: evidenceMac(session.tokenHash, { callId, key, params, ...evidence }),
      }
    : undefined;
  // A call without evidence reuses the encoding of its params (a fan-out's calls share them).
  return approval
    ? session.call.send({ frame: { case: "execute", value: { callId, key, params: params as never, timeoutMs, approval } } })
    : session.call.sendFrame(executeFrame(callId, key, params, timeoutMs));
}

/** Creates the calls of the hub; `session` finds an edge's live session. */
export function createTunnelCalls(opts: { session(edgeId: string): LiveSession | undefined; outputCapBytes: number }) {
  /** The per-call deadlines (one timer per 100 ms slot) and abort watches (one listener per signal). */
  const deadlines = createDeadlines(DEADLINE_GRANULARITY_MS);
  const watchAbort = createAbortWatchers();
  const executeFrame = createExecuteFrames();

  /**
   * Runs a host skill on a connected edge; rejects with unavailable / deadline_exceeded / cancelled.
   * Many calls may share one signal (a fan-out passes one for all its calls).
   */
  function call(edgeId: string, key: string, params: Record<string, unknown>, timeoutMs: number, signal?: AbortSignal, evidence?: Evidence): Promise<ResultEnvelope> {
    const session = opts.session(edgeId);
    if (!session) return Promise.reject(new OngridError("unavailable", `edge "${edgeId}" is offline`, "retry when the edge is back online"));
    if (signal?.aborted) return Promise.reject(new OngridError("cancelled", `the call of "${key}" on edge "${edgeId}" was cancelled`));
    const callId = randomUUID();
    return new Promise<ResultEnvelope>((resolve, reject) => {
      const cancel = (reason: string) => session.call.send({ frame: { case: "cancel", value: { callId, reason } } });
      // The edge enforces the deadline itself; this one only catches an edge that stays silent.
      const deadline = deadlines.after(timeoutMs + 1000, () => {
        if (!session.pending.has(callId)) return;
        pending.reject(new OngridError("deadline_exceeded", `edge "${edgeId}" did not answer "${key}" within ${timeoutMs} ms`, "raise timeout_ms or check the edge"));
        cancel("deadline exceeded");
      });
      const unwatch = signal
        ? watchAbort(signal, () => {
            if (!session.pending.has(callId)) return;
            pending.reject(new OngridError("cancelled", `the call of "${key}" on edge "${edgeId}" was cancelled`));
            cancel("the caller cancelled");
          })
        : undefined;
      /** Drops the call's bookkeeping: its entry, its deadline and its abort watch. */
      const settle = () => {
        session.pending.delete(callId);
        deadline.cancel();
        unwatch?.();
      };
      const pending: Pending = {
        resolve(r) {
          settle();
          resolve(r);
        },
        reject(e) {
          settle();
          reject(e);
        },
      };
      session.pending.set(callId, pending);
      const sent = sendExecute(session, executeFrame, callId, key, params, timeoutMs, evidence);
      if (!sent && session.pending.has(callId)) {
        pending.reject(new OngridError("unavailable", `edge "${edgeId}" tunnel is closed`, "retry when the edge is back online"));
      }
    });
  }

  /** A result frame: answers its caller; a late one (of a cancelled or timed-out call) is ignored, a malformed one ends the session. */
  function deliver(session: LiveSession, result: ExecuteResult): void {
    const p = session.pending.get(result.callId);
    if (!p) return; // late result of a cancelled or timed-out call
    let envelope: ResultEnvelope;
    try {
      envelope = envelopeFrom(result.result, session.edgeId, opts.outputCapBytes);
    } catch (err) {
      // E.g. a Value with no kind or a NaN: not JSON. The caller learns why when the session drops.
      session.close({ code: Code.InvalidArgument, message: `result of call ${result.callId} refused: ${(err as Error).message}` });
      return;
    }
    p.resolve(envelope);
  }

  return { call, deliver };
}

/** The hub's calls down the tunnel. */
export type TunnelCalls = ReturnType<typeof createTunnelCalls>;
