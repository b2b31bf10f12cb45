/**
 * Forwarding (M2), the holder's side: PeerService on the manager's own port, served by a Connect
 * router of its own whose one interceptor checks the cluster credential (peer-auth.ts). Users'
 * tokens mean nothing here, and the user RPC router never sees these paths. The holder runs each
 * call on its tunnel as the entry manager asked, with its evidence MAC'd for the edge; it writes
 * no audit row (the entry manager writes the call's one row).
 */
import type http from "node:http";
import type http2 from "node:http2";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import { OngridError } from "../../skill/errors.ts";
import { SKILL_CLASSES, type SkillClass } from "../../skill/types.ts";
import { LinkRequestSchema, LinkResponseSchema, PeerOutcomeSchema, PeerService, PeerServiceExecuteRequestSchema, type PeerOutcome, type PeerServiceExecuteRequest } from "../../proto/gen/ongrid/v1/peer_service_pb.ts";
import { encodedResult } from "./encoded-result.ts";
import { acceptBidi, checkGrpcRequest, refuse } from "./grpc-stream.ts";
import { verifyPeer } from "./peer-auth.ts";
import type { Evidence, TunnelCalls } from "./tunnel-calls.ts";

/** Path prefix of the peer service. */
export const PEER_PATH_PREFIX = `/${PeerService.typeName}/`;
/** Calls one peer request may carry (a holder's share of the largest fan-out). */
const MAX_CALLS = 20_000;
/** The longest timeout a forwarded call may ask for (the user-facing limits are the entry manager's). */
const MAX_TIMEOUT_MS = 24 * 3600_000;

/** The peer router's options. */
export interface PeerServiceOptions {
  /** Runs a call on an edge this manager holds (the local hub's call). */
  call: TunnelCalls["call"];
  /** Whether this manager holds the edge now. */
  holds(edgeId: string): boolean;
  self: string;
  secret: () => string;
  log: Logger;
  readMaxBytes: number;
  /** Audits a refused peer request (throttled like other unauthenticated refusals). */
  refused?(rpc: string, reason: string): Promise<unknown>;
}

/** Logs and audits a refused peer request; never throws. */
function refusePeer(o: PeerServiceOptions, rpc: string, reason: string): void {
  o.log.warn({ rpc, reason }, "peer request refused");
  o.refused?.(rpc, reason).catch((err: Error) => o.log.error({ rpc, err: err.message }, "could not audit a refused peer request"));
}

function evidenceOf(e: { approvalId: string; approvers: string[]; sopHash: string; effectiveClass: string; reasonType: string } | undefined): Evidence | undefined {
  if (!e) return undefined;
  if (!SKILL_CLASSES.has(e.effectiveClass)) throw new ConnectError(`evidence.effective_class: "${e.effectiveClass.slice(0, 20)}" is not safe, mutating or dangerous`, Code.InvalidArgument);
  return { approvalId: e.approvalId, approvers: [...e.approvers], sopHash: e.sopHash, effectiveClass: e.effectiveClass as SkillClass, reasonType: e.reasonType };
}

/**
 * Checks and starts a batch: each call runs on this manager's tunnel under `signal`; outcomes go
 * to `settle` as they come (index: the call's place in the batch). Throws a ConnectError
 * (invalid_argument) for a malformed batch, before anything runs.
 */
function runBatch(o: PeerServiceOptions, req: PeerServiceExecuteRequest, signal: AbortSignal, settle: (out: PeerOutcome) => void): void {
  if (req.calls.length > MAX_CALLS) throw new ConnectError(`calls: at most ${MAX_CALLS} (rule: maxItems)`, Code.InvalidArgument);
  const params = req.paramsJson.map((j, i) => {
    let v: unknown;
    try {
      v = JSON.parse(j);
    } catch {
      throw new ConnectError(`params_json[${i}]: not JSON`, Code.InvalidArgument);
    }
    if (!v || typeof v !== "object" || Array.isArray(v)) throw new ConnectError(`params_json[${i}]: not a JSON object`, Code.InvalidArgument);
    return v as Record<string, unknown>;
  });
  const calls = req.calls.map((c, i) => {
    if (c.paramsIndex >= params.length) throw new ConnectError(`calls[${i}].params_index: ${c.paramsIndex} is past params_json`, Code.InvalidArgument);
    if (c.timeoutMs < 1 || c.timeoutMs > MAX_TIMEOUT_MS) throw new ConnectError(`calls[${i}].timeout_ms: must be 1 to ${MAX_TIMEOUT_MS}`, Code.InvalidArgument);
    return { ...c, evidence: evidenceOf(c.evidence) };
  });
  calls.forEach((c, index) => {
    if (!o.holds(c.edgeId)) {
      settle(create(PeerOutcomeSchema, { index, outcome: { case: "error", value: { code: "unavailable", message: `edge "${c.edgeId}" is not connected to manager "${o.self}" any more`, hint: "retry: the edge is reconnecting, to this manager or another" } } }));
      return;
    }
    o.call(c.edgeId, c.key, params[c.paramsIndex], c.timeoutMs, signal, c.evidence).then(
      (env) => settle(create(PeerOutcomeSchema, { index, outcome: req.encodedResults ? { case: "encoded", value: encodedResult(c.edgeId, env) } : { case: "envelopeJson", value: JSON.stringify(env) } })),
      (err) => {
        const e = err instanceof OngridError ? err : new OngridError("internal", "internal error");
        settle(create(PeerOutcomeSchema, { index, outcome: { case: "error", value: { code: e.code, message: e.message, hint: e.hint } } }));
      },
    );
  });
}

/** The HTTP handler of the peer service's Execute (requests whose path starts with PEER_PATH_PREFIX). */
export function createPeerHandler(o: PeerServiceOptions): (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void {
  const authenticate: Interceptor = (next) => async (req) => {
    const v = verifyPeer(o.secret(), req.header);
    if (!v.ok) {
      refusePeer(o, `${PeerService.typeName}/${req.method.name}`, v.reason);
      throw new ConnectError("not a manager of this cluster", Code.Unauthenticated);
    }
    return next(req);
  };
  const routes = (router: ConnectRouter) =>
    router.service(PeerService, {
      async *execute(req, ctx) {
        const done: PeerOutcome[] = [];
        let wake: (() => void) | undefined;
        // Counted first: outcomes of edges not held here settle inside runBatch.
        let remaining = req.calls.length;
        runBatch(o, req, ctx.signal, (out) => {
          done.push(out);
          remaining--;
          wake?.();
        });
        while (remaining > 0 || done.length) {
          if (!done.length) await new Promise<void>((r) => (wake = r));
          wake = undefined;
          if (done.length) yield { outcomes: done.splice(0) };
        }
      },
      link() {
        throw new ConnectError("Link is served over HTTP/2 only", Code.Unimplemented);
      },
    });
  return connectNodeAdapter({ routes, interceptors: [authenticate], readMaxBytes: o.readMaxBytes, acceptCompression: [] }) as never;
}

/** Path of PeerService.Link, served straight on the HTTP/2 stream (like the edge tunnel). */
export const PEER_LINK_PATH = `/${PeerService.typeName}/Link`;

/**
 * The raw HTTP/2 handler of PeerService.Link: the cluster credential is checked once, when the
 * stream opens; then each batch frame runs as Execute would, its outcomes sent back under its id
 * (gathered per tick), a cancel frame aborts its batch, and the stream's end aborts them all.
 */
export function createPeerLinkHandler(o: PeerServiceOptions): (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void {
  return (stream, headers) => {
    const bad = checkGrpcRequest(headers, "PeerService.Link");
    if (bad) return refuse(stream, bad);
    const v = verifyPeer(o.secret(), { get: (name) => (typeof headers[name] === "string" ? (headers[name] as string) : null) });
    if (!v.ok) {
      refusePeer(o, PEER_LINK_PATH.slice(1), v.reason);
      return refuse(stream, { code: Code.Unauthenticated, message: "not a manager of this cluster" });
    }
    const batches = new Map<bigint, AbortController>();
    let pending: Array<{ batchId: bigint; outcomes: PeerOutcome[] }> = [];
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      const out = pending;
      pending = [];
      for (const m of out) call.send(m);
    };
    const call = acceptBidi(stream, headers, LinkRequestSchema, LinkResponseSchema, o.readMaxBytes, {
      onMessage(m) {
        if (m.frame.case === "cancel") {
          batches.get(m.frame.value.batchId)?.abort(new Error("cancelled by the entry manager"));
          return;
        }
        if (m.frame.case !== "batch") return;
        const { batchId, request } = m.frame.value;
        if (batches.has(batchId)) return call.end({ code: Code.InvalidArgument, message: `batch_id ${batchId} is already open on this link` });
        const ctl = new AbortController();
        batches.set(batchId, ctl);
        let group: { batchId: bigint; outcomes: PeerOutcome[] } | undefined;
        // Counted first: outcomes of edges not held here settle inside runBatch.
        let remaining = request?.calls.length ?? 0;
        try {
          runBatch(o, request ?? create(PeerServiceExecuteRequestSchema), ctl.signal, (out) => {
            // Outcomes settled in one tick travel in one message.
            if (!group || !pending.includes(group)) pending.push((group = { batchId, outcomes: [] }));
            group.outcomes.push(out);
            if (--remaining === 0) batches.delete(batchId);
            if (!scheduled) {
              scheduled = true;
              setImmediate(flush);
            }
          });
        } catch (err) {
          batches.delete(batchId);
          const e = ConnectError.from(err);
          // A malformed batch fails its own calls (the link stays up for the others).
          const n = request?.calls.length ?? 0;
          call.send({ batchId, outcomes: Array.from({ length: n }, (_, index) => ({ index, outcome: { case: "error" as const, value: { code: "invalid_argument", message: e.rawMessage } } })) });
          return;
        }
        if (remaining === 0) batches.delete(batchId);
      },
      onClose() {
        for (const ctl of batches.values()) ctl.abort(new Error("the peer link closed"));
        batches.clear();
      },
    });
  };
}
