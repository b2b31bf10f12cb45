/**
 * One PeerService.Link stream to one peer manager (M2), the entry manager's side: a long-lived
 * HTTP/2 stream carrying batches of calls one way and their outcomes the other, so a forwarded
 * call costs one message each way rather than a stream of its own. Plain gRPC on the wire
 * (length-prefixed protobuf in DATA frames, status in trailers).
 *
 * The connect is bounded (a partitioned peer must not hold calls for the kernel's SYN retries) and,
 * while batches are open, the connection is PINGed: a peer that goes silent fails its batches in
 * about PING_INTERVAL_MS + PING_TIMEOUT_MS. Any loss fails every open batch at once; the link is
 * then gone and the next batch opens a new one. Nothing is ever resent.
 */
import http2 from "node:http2";
import net, { isIP } from "node:net";
import tls from "node:tls";
import { fromBinary, toBinary, create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { LinkRequestSchema, LinkResponseSchema, PeerService, type PeerOutcome, type PeerServiceExecuteRequest } from "../../proto/gen/ongrid/v1/peer_service_pb.ts";
import { createFrameReader, grpcFrame } from "./grpc-stream.ts";

/** A peer's TCP connect (and TLS handshake) must complete within this. */
const CONNECT_TIMEOUT_MS = 3_000;
/** While batches are open, a PING every this long… */
const PING_INTERVAL_MS = 2_000;
/** …answered within this, or the link and its batches fail. */
const PING_TIMEOUT_MS = 3_000;
/** Largest response message accepted (outcomes of one tick of a large fan-out). */
const MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

const LINK_PATH = `/${PeerService.typeName}/Link`;

/** What a batch hears back. */
export interface BatchListener {
  outcomes(list: PeerOutcome[]): void;
  /** The link failed: why, and whether the peer refused this manager's credential. */
  failed(reason: string, refused: boolean): void;
}

/** Opens the socket of a peer connection, failing it after CONNECT_TIMEOUT_MS. */
function dial(url: URL, ca: Buffer | undefined): net.Socket {
  const secure = url.protocol === "https:";
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = Number(url.port || (secure ? 443 : 80));
  const socket = secure ? tls.connect({ host, port, servername: isIP(host) ? undefined : host, ALPNProtocols: ["h2"], ...(ca ? { ca } : {}) }) : net.connect({ host, port });
  const timer = setTimeout(() => socket.destroy(new Error(`could not connect within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
  socket.once(secure ? "secureConnect" : "connect", () => clearTimeout(timer));
  socket.once("close", () => clearTimeout(timer));
  return socket;
}

/** Opens a link to `url`, sending `headers` (the peer proof) once; `gone` runs when it fails. */
export function openPeerConnection(url: string, headers: Record<string, string>, ca: Buffer | undefined, gone: () => void) {
  const batches = new Map<bigint, BatchListener>();
  let nextId = 1n;
  let closed = false;
  const reader = createFrameReader(MAX_MESSAGE_BYTES);
  const target = new URL(url);
  const session = http2.connect(url, { createConnection: () => dial(target, ca) });
  const stream = session.request({ ":method": "POST", ":path": LINK_PATH, "content-type": "application/grpc+proto", te: "trailers", ...headers });

  function fail(reason: string, refused = false): void {
    if (closed) return;
    closed = true;
    clearInterval(pinger);
    const open = [...batches.values()];
    batches.clear();
    for (const b of open) b.failed(reason, refused);
    if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
    if (!session.destroyed) session.destroy();
    gone();
  }

  /** gRPC status from response headers or trailers; fails the link on any (a Link never ends well while in use). */
  function onStatus(h: http2.IncomingHttpHeaders): void {
    const status = h["grpc-status"];
    if (status === undefined) return;
    const code = Number(status);
    const message = decodeURIComponent(String(h["grpc-message"] ?? "")) || `grpc-status ${code}`;
    fail(code === 0 ? "the peer ended the link" : message, code === Code.Unauthenticated);
  }

  stream.on("response", (h) => {
    if (h[":status"] !== 200) return fail(`HTTP ${h[":status"]} on ${LINK_PATH} (is it an ongrid manager of this version?)`);
    onStatus(h);
  });
  stream.on("trailers", onStatus);
  stream.on("data", (chunk: Buffer) => {
    const problem = reader.push(chunk, (body) => {
      let m;
      try {
        m = fromBinary(LinkResponseSchema, body);
      } catch (err) {
        fail(`malformed message: ${(err as Error).message}`);
        return false;
      }
      batches.get(m.batchId)?.outcomes(m.outcomes);
      return !closed;
    });
    if (problem?.kind === "too_large") fail(`a message of ${problem.len} bytes exceeds ${MAX_MESSAGE_BYTES}`);
    else if (problem) fail("a compressed message: the link does not compress");
  });
  stream.on("close", () => fail(session.destroyed ? "the connection closed" : `the link stream closed (code ${stream.rstCode})`));
  stream.on("error", (err) => fail(err.message));
  session.on("error", (err) => fail(err.message));
  session.on("goaway", () => fail("the peer is shutting down (GOAWAY)"));

  let pinging = false;
  const pinger = setInterval(() => {
    if (!batches.size || pinging || closed) return;
    pinging = true;
    const timer = setTimeout(() => fail(`it did not answer a PING within ${PING_TIMEOUT_MS} ms`), PING_TIMEOUT_MS);
    const sent = session.ping((err) => {
      pinging = false;
      clearTimeout(timer);
      if (err) fail(err.message);
    });
    if (!sent) {
      clearTimeout(timer);
      pinging = false;
    }
  }, PING_INTERVAL_MS);
  pinger.unref();

  const write = (frame: Parameters<typeof create<typeof LinkRequestSchema>>[1]) => {
    if (!closed && !stream.destroyed) stream.write(grpcFrame(toBinary(LinkRequestSchema, create(LinkRequestSchema, frame))));
  };

  return {
    get closed() {
      return closed;
    },
    /** Sends a batch; its outcomes and the link's failure go to `listener`. Returns its id. */
    send(request: PeerServiceExecuteRequest, listener: BatchListener): bigint {
      const batchId = nextId++;
      if (closed) {
        queueMicrotask(() => listener.failed("the link is closed", false));
        return batchId;
      }
      batches.set(batchId, listener);
      write({ frame: { case: "batch", value: { batchId, request } } });
      return batchId;
    },
    /** The batch is settled: forget it. */
    done(batchId: bigint): void {
      batches.delete(batchId);
    },
    /** Cancels a batch on the peer and forgets it. */
    cancel(batchId: bigint): void {
      if (batches.delete(batchId)) write({ frame: { case: "cancel", value: { batchId } } });
    },
    close(): void {
      fail("this manager is closing the link");
    },
  };
}

/** One link. */
export type PeerConnection = ReturnType<typeof openPeerConnection>;
