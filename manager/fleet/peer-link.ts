/**
 * Forwarding (M2), the entry manager's side: a call for an edge another manager holds goes to
 * that manager's PeerService. Calls for one holder made in the same tick under the same abort
 * signal travel as one request (a fan-out's share of a holder is one RPC, its results streamed
 * back); cancelling the signal cancels that RPC and so the calls on the holder. A call is sent
 * once and never retried: when the holder cannot be reached or goes away mid-call, its caller
 * gets `unavailable` naming the holder, and whether it ran is for the audit row to say.
 */
import { readFileSync } from "node:fs";
import net, { isIP } from "node:net";
import type { Duplex } from "node:stream";
import tls from "node:tls";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import { OngridError, type ErrorCode } from "../../skill/errors.ts";
import type { ResultEnvelope } from "../../skill/types.ts";
import { PeerCallSchema, PeerService, PeerServiceExecuteRequestSchema } from "../../proto/gen/ongrid/v1/peer_service_pb.ts";
import { peerHeaders } from "./peer-auth.ts";
import type { Evidence } from "./tunnel-calls.ts";

/** A manager holding edges, as its lease row advertises it. */
export interface Holder {
  id: string;
  url: string;
}

/** One forwarded call. */
export interface ForwardedCall {
  edgeId: string;
  key: string;
  params: Record<string, unknown>;
  timeoutMs: number;
  evidence?: Evidence;
}

interface Waiting extends ForwardedCall {
  resolve(r: ResultEnvelope): void;
  reject(e: Error): void;
}

/** A peer's TCP connect (and TLS handshake) must complete within this. */
const CONNECT_TIMEOUT_MS = 3_000;
/** While calls are open on a peer connection, a PING every this long… */
const PING_INTERVAL_MS = 2_000;
/** …answered within this, or the connection and its calls end `unavailable`. */
const PING_TIMEOUT_MS = 3_000;

/** Opens the socket of a peer connection, failing it after CONNECT_TIMEOUT_MS. */
function dial(authority: URL, secure: boolean, ca: Buffer | undefined): Duplex {
  const host = authority.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = Number(authority.port || (secure ? 443 : 80));
  const socket = secure ? tls.connect({ host, port, servername: isIP(host) ? undefined : host, ALPNProtocols: ["h2"], ...(ca ? { ca } : {}) }) : net.connect({ host, port });
  const timer = setTimeout(() => socket.destroy(new Error(`could not connect within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
  socket.once(secure ? "secureConnect" : "connect", () => clearTimeout(timer));
  socket.once("close", () => clearTimeout(timer));
  return socket;
}

/** Margin over the longest call of a request for the RPC's own deadline (the edge enforces each call's). */
const DEADLINE_MARGIN_MS = 5_000;

/** Codes a holder may answer for a call; anything else is reported as unavailable. */
const PASSED_CODES = new Set<string>(["unavailable", "cancelled", "deadline_exceeded", "invalid_argument", "not_found", "internal", "resource_exhausted", "failed_precondition"]);

/** Creates the forwarder of this manager (`self`), proving itself with the cluster secret. */
export function createPeerLink(o: { self: string; secret: () => string; tlsCa?: string; log: Logger }) {
  const clients = new Map<string, Client<typeof PeerService>>();
  /** Calls waiting for this tick's flush: by holder, then by the signal they share. */
  let queued = new Map<string, { holder: Holder; groups: Map<AbortSignal | undefined, Waiting[]> }>();
  let scheduled = false;
  let ca: Buffer | undefined;

  function client(url: string): Client<typeof PeerService> {
    let c = clients.get(url);
    if (!c) {
      if (url.startsWith("https:") && o.tlsCa && !ca) ca = readFileSync(o.tlsCa);
      const secure = url.startsWith("https:");
      const transport = createGrpcTransport({
        baseUrl: url,
        // A bounded connect (a partitioned peer would otherwise hold a call for the kernel's SYN
        // retries), and PINGs while calls are open, so a peer that goes silent mid-call is noticed.
        nodeOptions: { createConnection: (authority: URL) => dial(authority, secure, ca) },
        pingIntervalMs: PING_INTERVAL_MS,
        pingTimeoutMs: PING_TIMEOUT_MS,
        // Results of a large fan-out arrive as a few big messages.
        readMaxBytes: 256 * 1024 * 1024,
      });
      c = createClient(PeerService, transport);
      clients.set(url, c);
    }
    return c;
  }

  const unreachable = (h: Holder, why: string) =>
    new OngridError("unavailable", `manager "${h.id}" (${h.url}), which holds the edge, could not be reached: ${why}`, "retry: once that manager is gone its edges reconnect to another within their backoff");

  async function send(holder: Holder, signal: AbortSignal | undefined, calls: Waiting[]): Promise<void> {
    const paramsJson: string[] = [];
    const index = new Map<Record<string, unknown>, number>();
    const req = create(PeerServiceExecuteRequestSchema, {
      paramsJson,
      calls: calls.map((c) => {
        let i = index.get(c.params);
        if (i === undefined) index.set(c.params, (i = paramsJson.push(JSON.stringify(c.params)) - 1));
        return create(PeerCallSchema, {
          edgeId: c.edgeId,
          key: c.key,
          paramsIndex: i,
          timeoutMs: c.timeoutMs,
          evidence: c.evidence ? { ...c.evidence, effectiveClass: c.evidence.effectiveClass } : undefined,
        });
      }),
    });
    const open = new Set(calls.keys());
    const timeoutMs = Math.max(...calls.map((c) => c.timeoutMs)) + DEADLINE_MARGIN_MS;
    try {
      for await (const res of client(holder.url).execute(req, { signal, timeoutMs, headers: peerHeaders(o.secret(), o.self) })) {
        for (const out of res.outcomes) {
          const c = calls[out.index];
          if (!c || !open.delete(out.index)) continue;
          if (out.outcome.case === "envelopeJson") c.resolve(JSON.parse(out.outcome.value) as ResultEnvelope);
          else {
            const e = out.outcome.value;
            const code = (PASSED_CODES.has(e?.code ?? "") ? e!.code : "unavailable") as ErrorCode;
            c.reject(new OngridError(code, e?.message || `manager "${holder.id}" gave no result`, e?.hint || undefined));
          }
        }
      }
      for (const i of open) calls[i].reject(unreachable(holder, "it ended the request without answering this call"));
    } catch (err) {
      const ce = ConnectError.from(err);
      let e: OngridError;
      if (signal?.aborted) e = new OngridError("cancelled", "the call was cancelled");
      else if (ce.code === Code.DeadlineExceeded) e = new OngridError("deadline_exceeded", `manager "${holder.id}" did not answer within ${timeoutMs} ms`, "raise timeout_ms or check that manager");
      else if (ce.code === Code.Unauthenticated) e = unreachable(holder, "it refused this manager's cluster credential (server.cluster_secret differs?)");
      else e = unreachable(holder, ce.rawMessage);
      if (!signal?.aborted && ce.code !== Code.DeadlineExceeded) o.log.warn({ peer: holder.id, url: holder.url, err: ce.rawMessage, calls: open.size }, "forwarding to a peer manager failed");
      for (const i of open) calls[i].reject(e);
    }
  }

  function flush(): void {
    scheduled = false;
    const batch = queued;
    queued = new Map();
    for (const { holder, groups } of batch.values()) for (const [signal, calls] of groups) void send(holder, signal, calls);
  }

  return {
    /** Runs one call on the edge `holder` holds; calls of this tick to one holder under one signal share a request. */
    call(holder: Holder, call: ForwardedCall, signal?: AbortSignal): Promise<ResultEnvelope> {
      if (signal?.aborted) return Promise.reject(new OngridError("cancelled", `the call of "${call.key}" on edge "${call.edgeId}" was cancelled`));
      return new Promise((resolve, reject) => {
        const key = `${holder.id} ${holder.url}`;
        let h = queued.get(key);
        if (!h) queued.set(key, (h = { holder, groups: new Map() }));
        let list = h.groups.get(signal);
        if (!list) h.groups.set(signal, (list = []));
        list.push({ ...call, resolve, reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
    },
  };
}

/** The forwarder's interface. */
export type PeerLink = ReturnType<typeof createPeerLink>;
