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
import { PeerOutcomeSchema, PeerService, type PeerOutcome } from "../../proto/gen/ongrid/v1/peer_service_pb.ts";
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
}

function evidenceOf(e: { approvalId: string; approvers: string[]; sopHash: string; effectiveClass: string; reasonType: string } | undefined): Evidence | undefined {
  if (!e) return undefined;
  if (!SKILL_CLASSES.has(e.effectiveClass)) throw new ConnectError(`evidence.effective_class: "${e.effectiveClass.slice(0, 20)}" is not safe, mutating or dangerous`, Code.InvalidArgument);
  return { approvalId: e.approvalId, approvers: [...e.approvers], sopHash: e.sopHash, effectiveClass: e.effectiveClass as SkillClass, reasonType: e.reasonType };
}

/** The HTTP handler of the peer service (requests whose path starts with PEER_PATH_PREFIX). */
export function createPeerHandler(o: PeerServiceOptions): (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void {
  const authenticate: Interceptor = (next) => async (req) => {
    const v = verifyPeer(o.secret(), req.header);
    if (!v.ok) {
      o.log.warn({ rpc: req.method.name, reason: v.reason }, "peer request refused");
      throw new ConnectError("not a manager of this cluster", Code.Unauthenticated);
    }
    return next(req);
  };
  const routes = (router: ConnectRouter) =>
    router.service(
      PeerService,
      {
        async *execute(req, ctx) {
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
          const done: PeerOutcome[] = [];
          let wake: (() => void) | undefined;
          let remaining = calls.length;
          const settle = (o: PeerOutcome) => {
            done.push(o);
            remaining--;
            wake?.();
          };
          calls.forEach((c, index) => {
            if (!o.holds(c.edgeId)) {
              settle(create(PeerOutcomeSchema, { index, outcome: { case: "error", value: { code: "unavailable", message: `edge "${c.edgeId}" is not connected to manager "${o.self}" any more`, hint: "retry: the edge is reconnecting, to this manager or another" } } }));
              return;
            }
            o.call(c.edgeId, c.key, params[c.paramsIndex], c.timeoutMs, ctx.signal, c.evidence).then(
              (env) => settle(create(PeerOutcomeSchema, { index, outcome: { case: "envelopeJson", value: JSON.stringify(env) } })),
              (err) => {
                const e = err instanceof OngridError ? err : new OngridError("internal", "internal error");
                settle(create(PeerOutcomeSchema, { index, outcome: { case: "error", value: { code: e.code, message: e.message, hint: e.hint } } }));
              },
            );
          });
          while (remaining > 0 || done.length) {
            if (!done.length) await new Promise<void>((r) => (wake = r));
            wake = undefined;
            if (done.length) yield { outcomes: done.splice(0) };
          }
        },
      },
    );
  return connectNodeAdapter({ routes, interceptors: [authenticate], readMaxBytes: o.readMaxBytes, acceptCompression: [] }) as never;
}
