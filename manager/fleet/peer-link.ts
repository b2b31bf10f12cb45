/**
 * Forwarding (M2), the entry manager's side: a call for an edge another manager holds goes to
 * that manager over its PeerService.Link (one long-lived stream per peer, peer-connection.ts).
 * Calls for one holder made in the same tick under the same abort signal travel as one batch (a
 * fan-out's share of a holder is one message, its results streamed back); cancelling the signal
 * sends the batch's cancel, and the holder cancels its calls on the edges. A call is sent
 * once and never retried: when the holder cannot be reached or goes away mid-call, its caller
 * gets `unavailable` naming the holder, and whether it ran is for the audit row to say.
 */
import { readFileSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import type { Logger } from "pino";
import { OngridError, type ErrorCode } from "../../skill/errors.ts";
import { isLoopbackHost } from "../../skill/net.ts";
import type { ResultEnvelope } from "../../skill/types.ts";
import { PeerCallSchema, PeerServiceExecuteRequestSchema, type PeerEncodedResult } from "../../proto/gen/ongrid/v1/peer_service_pb.ts";
import { encodedResult, envelopeFromJson } from "./encoded-result.ts";
import { openPeerConnection, type PeerConnection } from "./peer-connection.ts";
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

/** A forwarded call's result as the holder encoded it for the caller (see PeerEncodedResult). */
export type { PeerEncodedResult } from "../../proto/gen/ongrid/v1/peer_service_pb.ts";

/** How an encoded call ended: its encoded result, or the error it gave no result with. */
export type EncodedOutcome = { encoded: PeerEncodedResult } | { error: OngridError };

/** How a forwarded call ended. */
type ForwardedOutcome = EncodedOutcome | { envelope: ResultEnvelope };

interface Waiting extends ForwardedCall {
  resolve(r: ResultEnvelope): void;
  reject(e: Error): void;
}

/** Margin over the longest call of a request for the RPC's own deadline (the edge enforces each call's). */
const DEADLINE_MARGIN_MS = 5_000;

/** Codes a holder may answer for a call; anything else is reported as unavailable. */
const PASSED_CODES = new Set<string>(["unavailable", "cancelled", "deadline_exceeded", "invalid_argument", "not_found", "internal", "resource_exhausted", "failed_precondition"]);

/** Whether a URL's host is this machine's loopback (a plaintext link to it never leaves the host). */
function onLoopback(url: string): boolean {
  try {
    return isLoopbackHost(new URL(url).hostname);
  } catch {
    return false;
  }
}

/**
 * Creates the forwarder of this manager (`self`), proving itself with the cluster secret. A
 * forwarded call's params (an injected credential's value included) and its result cross the
 * link: with `requireTls` (server.require_tls) a holder that advertises a plaintext http:// URL
 * is refused before anything is sent; without it, the first call to such a holder off loopback
 * logs a warning.
 */
export function createPeerLink(o: { self: string; secret: () => string; tlsCa?: string; requireTls?: boolean; log: Logger }) {
  /** One Link per peer URL, opened on first use and replaced once it fails. */
  const links = new Map<string, PeerConnection>();
  /** Calls waiting for this tick's flush: by holder, then by the signal they share. */
  let queued = new Map<string, { holder: Holder; groups: Map<AbortSignal | undefined, Waiting[]> }>();
  let scheduled = false;
  let ca: Buffer | undefined;
  /** Plaintext peer URLs already looked at (warned about, or on loopback): once per URL, not per call. */
  const seen = new Set<string>();

  /** The refusal of a call to a plaintext holder under require_tls; warns once per plaintext peer off loopback. */
  function plaintext(holder: Holder): OngridError | undefined {
    if (!holder.url.startsWith("http:")) return undefined;
    if (o.requireTls) {
      return new OngridError(
        "unavailable",
        `manager "${holder.id}" (${holder.url}), which holds the edge, advertises a plaintext http:// URL, and server.require_tls forbids forwarding a call in clear`,
        "serve TLS on every manager (server.tls_cert, server.tls_key) and set server.advertise_url to its https:// URL",
      );
    }
    if (!seen.has(holder.url)) {
      seen.add(holder.url);
      if (!onLoopback(holder.url)) o.log.warn({ peer: holder.id, url: holder.url }, "forwarding calls to a peer manager over plaintext http://: their params (injected credentials included) and results cross the network in clear; serve TLS on every manager");
    }
    return undefined;
  }

  function link(url: string): PeerConnection {
    let l = links.get(url);
    if (!l || l.closed) {
      if (url.startsWith("https:") && o.tlsCa && !ca) ca = readFileSync(o.tlsCa);
      const opened: PeerConnection = openPeerConnection(url, peerHeaders(o.secret(), o.self), url.startsWith("https:") ? ca : undefined, () => {
        if (links.get(url) === opened) links.delete(url);
      });
      links.set(url, (l = opened));
    }
    return l;
  }

  const unreachable = (h: Holder, why: string) =>
    new OngridError("unavailable", `manager "${h.id}" (${h.url}), which holds the edge, could not be reached: ${why}`, "retry: once that manager is gone its edges reconnect to another within their backoff");

  /**
   * Sends one batch and settles each of its calls once through `settle` (index: its place in
   * `calls`): with its envelope, its encoded result (encoded batches), or the error it ended in.
   */
  function send(holder: Holder, signal: AbortSignal | undefined, calls: readonly ForwardedCall[], settle: (index: number, out: ForwardedOutcome) => void, encoded = false): void {
    const paramsJson: string[] = [];
    const index = new Map<Record<string, unknown>, number>();
    const req = create(PeerServiceExecuteRequestSchema, {
      paramsJson,
      encodedResults: encoded,
      calls: calls.map((c) => {
        let i = index.get(c.params);
        if (i === undefined) index.set(c.params, (i = paramsJson.push(JSON.stringify(c.params)) - 1));
        return create(PeerCallSchema, { edgeId: c.edgeId, key: c.key, paramsIndex: i, timeoutMs: c.timeoutMs, evidence: c.evidence });
      }),
    });
    const open = new Set(calls.keys());
    let timeoutMs = 0;
    for (const c of calls) timeoutMs = Math.max(timeoutMs, c.timeoutMs);
    timeoutMs += DEADLINE_MARGIN_MS;
    const l = link(holder.url);
    const end = (e: OngridError) => {
      cleanup();
      for (const i of open) settle(i, { error: e });
      open.clear();
    };
    // The holder's tunnel enforces each call's deadline; this one only catches a silent holder.
    const timer = setTimeout(() => {
      l.cancel(batchId);
      end(new OngridError("deadline_exceeded", `manager "${holder.id}" did not answer within ${timeoutMs} ms`, "raise timeout_ms or check that manager"));
    }, timeoutMs);
    const onAbort = () => {
      l.cancel(batchId);
      end(new OngridError("cancelled", "the call was cancelled"));
    };
    const cleanup = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      l.done(batchId);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    const batchId = l.send(req, {
      outcomes(list) {
        for (const out of list) {
          if (!open.delete(out.index)) continue;
          const o = out.outcome;
          if (o.case === "envelopeJson") {
            const envelope = envelopeFromJson(o.value);
            if (typeof envelope === "string") {
              settle(out.index, { error: new OngridError("unavailable", `manager "${holder.id}" answered the call on edge "${calls[out.index]!.edgeId}" with an envelope this manager cannot use: envelope_json${envelope.startsWith("is ") ? " " : "."}${envelope}`, "check that every manager runs the same ongrid version") });
              continue;
            }
            if (!encoded) {
              settle(out.index, { envelope });
              continue;
            }
            // A holder from before encoded_results answers an encoded batch this way: encoded here.
            let made;
            try {
              made = encodedResult(calls[out.index]!.edgeId, envelope);
            } catch (err) {
              settle(out.index, { error: new OngridError("unavailable", `manager "${holder.id}" answered the call on edge "${calls[out.index]!.edgeId}" with an envelope this manager cannot encode: ${(err as Error).message}`) });
              continue;
            }
            settle(out.index, { encoded: made });
          } else if (o.case === "encoded" && encoded) settle(out.index, { encoded: o.value });
          else if (o.case === "error") {
            const e = o.value;
            const code = (PASSED_CODES.has(e.code) ? e.code : "unavailable") as ErrorCode;
            settle(out.index, { error: new OngridError(code, e.message || `manager "${holder.id}" gave no result`, e.hint || undefined) });
          } else settle(out.index, { error: new OngridError("unavailable", `manager "${holder.id}" answered the call in a form this manager did not ask for (${o.case ?? "nothing"})`) });
        }
        if (!open.size) cleanup();
      },
      failed(reason, refused) {
        if (!open.size) return;
        o.log.warn({ peer: holder.id, url: holder.url, err: reason, calls: open.size }, "forwarding to a peer manager failed");
        end(unreachable(holder, refused ? "it refused this manager's cluster credential (server.cluster_secret differs?)" : reason));
      },
    });
  }

  /** Sends the calls waiting under one signal to one holder, each settling its own promise. */
  function sendWaiting(holder: Holder, signal: AbortSignal | undefined, calls: Waiting[]): void {
    send(holder, signal, calls, (i, out) => {
      const c = calls[i]!;
      if ("envelope" in out) c.resolve(out.envelope);
      else if ("error" in out) c.reject(out.error);
    });
  }

  function flush(): void {
    scheduled = false;
    const batch = queued;
    queued = new Map();
    for (const { holder, groups } of batch.values()) for (const [signal, calls] of groups) sendWaiting(holder, signal, calls);
  }

  return {
    /** Runs one call on the edge `holder` holds; calls of this tick to one holder under one signal share a request. */
    call(holder: Holder, call: ForwardedCall, signal?: AbortSignal): Promise<ResultEnvelope> {
      if (signal?.aborted) return Promise.reject(new OngridError("cancelled", `the call of "${call.key}" on edge "${call.edgeId}" was cancelled`));
      const refused = plaintext(holder);
      if (refused) return Promise.reject(refused);
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
    /**
     * Runs a fan-out's share of one holder as one batch, its results encoded for the caller by the
     * holder (PeerEncodedResult): `settle` is told each call's outcome once, as it arrives, by its
     * index in `calls`. Refused (every call settled with the error) like call() is.
     */
    callEncoded(holder: Holder, calls: readonly ForwardedCall[], signal: AbortSignal | undefined, settle: (index: number, out: EncodedOutcome) => void): void {
      if (!calls.length) return;
      const refused = signal?.aborted ? new OngridError("cancelled", "the calls were cancelled") : plaintext(holder);
      if (refused) {
        for (let i = 0; i < calls.length; i++) settle(i, { error: refused });
        return;
      }
      send(holder, signal, calls, settle as (index: number, out: ForwardedOutcome) => void, true);
    },
    /** Closes every link (manager shutdown): open batches fail unavailable. */
    close(): void {
      for (const l of links.values()) l.close();
      links.clear();
    },
  };
}

/** The forwarder's interface. */
export type PeerLink = ReturnType<typeof createPeerLink>;
