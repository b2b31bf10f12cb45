/**
 * The manager's one port (B1): Connect, gRPC and gRPC-Web over HTTP/2 cleartext and HTTP/1.1
 * (told apart by the HTTP/2 connection preface), or over TLS with ALPN when given a cert and key.
 */
import { readFileSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { OngridError } from "../../skill/errors.ts";

/** A request handler usable by both node:http and node:http2. */
export type DualHandler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

/**
 * Serves one HTTP/2 stream directly, without node's request/response compatibility layer; one
 * that answers false declines the stream, which then goes to the request handler.
 */
export type StreamHandler = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void | boolean;

/** Where and how to listen. */
export interface ListenOptions {
  host: string;
  port: number;
  tlsCert?: string;
  tlsKey?: string;
  /** HTTP/2 streams to serve raw, by request path (the edge tunnel, unary gRPC calls); everything else goes to the handler. */
  streams?: Record<string, StreamHandler>;
  /** Bounds on what an unauthenticated peer can hold (B1); each has a default. */
  limits?: Partial<ListenLimits>;
  /**
   * Told once for each connection closed because it exceeded a limit: what it exceeded and the
   * peer's address. listen() has no logger of its own; the manager logs these.
   */
  onLimit?(what: string, peer: string): void;
}

/** What one peer may hold before it has proven anything (server.header_timeout, server.max_concurrent_streams, server.max_incomplete_streams, server.max_connections_per_address). */
export interface ListenLimits {
  /**
   * An HTTP/1.1 request's headers must arrive within this; its whole body within requestTimeoutMs,
   * which also bounds an HTTP/2 stream's request (the stream is reset with CANCEL).
   */
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** SETTINGS_MAX_CONCURRENT_STREAMS of every HTTP/2 connection. */
  maxConcurrentStreams: number;
  /** Incomplete HTTP/2 requests one connection may hold; one more and it is closed with ENHANCE_YOUR_CALM. */
  maxIncompleteStreams: number;
  /** Open connections from one address; more are closed at once (0: no cap). */
  maxConnectionsPerAddress: number;
}

/** The limits when none are configured. */
export const DEFAULT_LISTEN_LIMITS: ListenLimits = { headersTimeoutMs: 10_000, requestTimeoutMs: 60_000, maxConcurrentStreams: 1000, maxIncompleteStreams: 100, maxConnectionsPerAddress: 4096 };

/**
 * Puts raw stream handlers in front of node's compatibility layer: a stream whose path has a
 * handler never becomes a request/response pair (which costs memory per stream).
 */
function routeStreams(server: http2.Http2Server | http2.Http2SecureServer, streams: Record<string, StreamHandler>): void {
  const byPath = new Map(Object.entries(streams));
  if (!byPath.size) return;
  const compat = server.listeners("stream") as Array<(...a: unknown[]) => void>;
  server.removeAllListeners("stream");
  server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, ...rest: unknown[]) => {
    const raw = byPath.get(String(headers[":path"] ?? ""));
    if (raw && raw(stream, headers) !== false) return;
    for (const l of compat) l.call(server, stream, headers, ...rest);
  });
}

/**
 * Whether a stream's request is still incomplete: the peer has not ended its side (END_STREAM,
 * as nghttp2 saw it, not the readable side's "end", which waits for the body to be consumed) and
 * nothing has answered it. An answered stream no longer counts: the edge tunnel is a bidi stream
 * that never half-closes, answered with response headers once its token is verified.
 */
function incomplete(stream: http2.ServerHttp2Stream): boolean {
  if (stream.closed || stream.destroyed || stream.headersSent || stream.endAfterHeaders) return false;
  return !stream.state.remoteClose;
}

/** Counts a session's incomplete streams up to `enough`, dropping the others for good: a stream never becomes incomplete again. */
function countIncomplete(candidates: Set<http2.ServerHttp2Stream>, enough: number): number {
  let n = 0;
  for (const stream of candidates) {
    if (!incomplete(stream)) candidates.delete(stream);
    else if (++n >= enough) break;
  }
  return n;
}

/**
 * Ends a session that went over a limit: GOAWAY with ENHANCE_YOUR_CALM, then destroy() without an
 * error (given one, every open stream would emit "error", and a stream handler without a listener
 * would take the process down); its streams close, its GOAWAY stays the one the peer sees.
 */
function calmDown(session: http2.Http2Session, what: string, onLimit: ListenOptions["onLimit"]): void {
  const peer = session.socket?.remoteAddress ?? "";
  session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
  session.destroy();
  onLimit?.(what, peer);
}

/**
 * Tracks one session's streams that may be incomplete requests; returns what takes each new one.
 * Each gets one unref'd timer that resets it with CANCEL if its request is still incomplete after
 * requestTimeoutMs. The session is ended once it holds more than maxIncompleteStreams of them.
 * The count is taken when the input that opened the stream has been read (setImmediate), not at
 * the stream itself: a client sending many requests at once writes all their HEADERS frames
 * before their DATA, so counting at each HEADERS would take a burst of complete requests for
 * incomplete ones.
 */
function incompleteStreamTracker(session: http2.Http2Session, limits: ListenLimits, onLimit: ListenOptions["onLimit"]): (stream: http2.ServerHttp2Stream) => void {
  const candidates = new Set<http2.ServerHttp2Stream>();
  const cap = limits.maxIncompleteStreams;
  let checkQueued = false;
  const check = () => {
    checkQueued = false;
    if (session.destroyed || countIncomplete(candidates, cap + 1) <= cap) return;
    calmDown(session, `more than ${cap} incomplete HTTP/2 streams (server.max_incomplete_streams)`, onLimit);
  };
  return (stream) => {
    candidates.add(stream);
    const timer = setTimeout(() => {
      if (incomplete(stream)) stream.close(http2.constants.NGHTTP2_CANCEL);
    }, limits.requestTimeoutMs).unref();
    stream.once("close", () => {
      clearTimeout(timer);
      candidates.delete(stream);
    });
    // Up to `cap` candidates cannot be too many, whatever their state: nothing to count.
    if (candidates.size > cap && !checkQueued) {
      checkQueued = true;
      setImmediate(check);
    }
  };
}

/**
 * Bounds, per HTTP/2 session, the streams whose request never completes (issue 26 F): without
 * it a peer could hold max_concurrent_streams of them on every connection until the session
 * idles out. A stream whose headers end the request costs nothing here. Installed after
 * routeStreams, which replaces the server's "stream" listeners; it runs before them.
 */
function boundIncompleteStreams(server: http2.Http2Server | http2.Http2SecureServer, limits: ListenLimits, onLimit: ListenOptions["onLimit"]): void {
  const trackers = new WeakMap<http2.Http2Session, (stream: http2.ServerHttp2Stream) => void>();
  server.prependListener("stream", (stream: http2.ServerHttp2Stream) => {
    if (stream.endAfterHeaders) return;
    const session = stream.session;
    if (!session) return;
    let track = trackers.get(session);
    if (!track) trackers.set(session, (track = incompleteStreamTracker(session, limits, onLimit)));
    track(stream);
  });
}

/** A listening front door. */
export interface Listener {
  /** Base URL clients use, e.g. http://127.0.0.1:7070. */
  url: string;
  port: number;
  tls: boolean;
  close(): Promise<void>;
}

const EMPTY = Buffer.alloc(0);
const PREFACE = Buffer.from("PRI * HTTP/2.0");
/** A connection must send its first bytes within this time. */
const FIRST_BYTES_MS = 30_000;
/** An HTTP/2 session with no activity for this long is closed (edges keep theirs alive with heartbeats). */
const IDLE_MS = 300_000;

/** The first byte of a TLS record carrying a handshake (a ClientHello opens every TLS connection). */
const TLS_HANDSHAKE = 0x16;
/** What a plaintext client of a TLS port is told. */
const PLAINTEXT_REFUSED = "plaintext refused: this port serves TLS only; use an https:// URL";
/** HTTP/2's error code for a connection that does not meet the security requirements (RFC 9113 §7). */
const INADEQUATE_SECURITY = 0xc;

/** Whether the first bytes are the HTTP/2 preface (true), something else (false), or too few to tell (undefined). */
function startsLikePreface(head: Buffer): boolean | undefined {
  const n = Math.min(head.length, PREFACE.length);
  const prefixMatches = head.subarray(0, n).equals(PREFACE.subarray(0, n));
  if (prefixMatches && n < PREFACE.length) return undefined;
  return prefixMatches;
}

/**
 * A server that reads each connection's first bytes and hands the connection, those bytes put
 * back, to what `pick` chooses (undefined: wait for more bytes). A connection that sends nothing
 * within FIRST_BYTES_MS is closed.
 */
function sniffingServer(pick: (head: Buffer) => ((socket: net.Socket) => void) | undefined, maxPerAddress: number): net.Server {
  const perAddress = new Map<string, number>();
  // noDelay: as node:http's own servers do. With Nagle on, a response written in more than one
  // piece (an SSE stream: headers, then an event) waits for the client's delayed ACK, ~40 ms.
  return net.createServer({ noDelay: true }, (socket) => {
    socket.on("error", () => socket.destroy());
    const address = socket.remoteAddress ?? "";
    const open = (perAddress.get(address) ?? 0) + 1;
    if (maxPerAddress > 0 && open > maxPerAddress) {
      socket.destroy();
      return;
    }
    perAddress.set(address, open);
    socket.once("close", () => {
      const n = (perAddress.get(address) ?? 1) - 1;
      if (n <= 0) perAddress.delete(address);
      else perAddress.set(address, n);
    });
    socket.setTimeout(FIRST_BYTES_MS, () => socket.destroy());
    let head = EMPTY;
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const to = pick(head);
      if (!to) return;
      socket.off("data", onData);
      socket.pause();
      socket.setTimeout(0);
      // Drop our reference: this closure lives as long as the socket (its error handler shares
      // it), and the first bytes of an edge's tunnel hold its whole hello (≈21 KB an edge).
      const first = head;
      head = EMPTY;
      socket.unshift(first);
      to(socket);
      process.nextTick(() => socket.resume());
    };
    socket.on("data", onData);
  });
}

/**
 * Answers a plaintext connection to a TLS port and closes it: an HTTP/1.x request gets a 400
 * saying so; an HTTP/2 client (gRPC over h2c, an edge dialing http://) gets SETTINGS and a GOAWAY
 * with INADEQUATE_SECURITY and the same text as debug data. Nothing reaches the handler.
 */
function refusePlaintext(socket: net.Socket, h2: boolean): void {
  socket.on("data", () => undefined); // read and drop what the client still sends, so closing does not reset the answer away
  socket.setTimeout(5_000, () => socket.destroy());
  if (h2) {
    const text = Buffer.from(PLAINTEXT_REFUSED);
    const goaway = Buffer.alloc(9 + 8 + text.length);
    goaway.writeUIntBE(8 + text.length, 0, 3);
    goaway[3] = 0x7; // GOAWAY, stream 0
    goaway.writeUInt32BE(0, 9); // last stream id: none was processed
    goaway.writeUInt32BE(INADEQUATE_SECURITY, 13);
    text.copy(goaway, 17);
    const settings = Buffer.from([0, 0, 0, 0x4, 0, 0, 0, 0, 0]);
    socket.end(Buffer.concat([settings, goaway]));
  } else {
    const body = `${PLAINTEXT_REFUSED}\n`;
    socket.end(`HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  }
}

/** Starts the front door and resolves once it accepts connections. */
export async function listen(handler: DualHandler, opts: ListenOptions): Promise<Listener> {
  const limits: ListenLimits = { ...DEFAULT_LISTEN_LIMITS, ...opts.limits };
  const h2Settings = { settings: { maxConcurrentStreams: limits.maxConcurrentStreams } };
  const sockets = new Set<net.Socket>();
  let server: net.Server;
  let closeH1 = () => {};
  let sessions: Set<http2.Http2Session> = new Set();
  const track = (s: http2.Http2Session) => {
    sessions.add(s);
    s.once("close", () => sessions.delete(s));
  };
  const tls = Boolean(opts.tlsCert && opts.tlsKey);
  if (tls) {
    let cert: Buffer, key: Buffer;
    try {
      cert = readFileSync(opts.tlsCert!);
      key = readFileSync(opts.tlsKey!);
    } catch (err) {
      throw new OngridError("invalid_argument", `server.tls_cert/tls_key: cannot read: ${(err as Error).message}`);
    }
    let secure: http2.Http2SecureServer;
    try {
      secure = http2.createSecureServer({ cert, key, allowHTTP1: true, ...h2Settings }, handler as never);
    } catch (err) {
      throw new OngridError("invalid_argument", `server.tls_cert/tls_key: not a usable PEM certificate and key: ${(err as Error).message}`, "check that the files hold a PEM certificate and its matching private key");
    }
    secure.setTimeout(IDLE_MS);
    routeStreams(secure, opts.streams ?? {});
    boundIncompleteStreams(secure, limits, opts.onLimit);
    secure.on("session", track);
    // Every connection's first byte says whether it speaks TLS; one that does not is refused with
    // a message its client can show, instead of a failed handshake.
    server = sniffingServer((head) => {
      if (head[0] === TLS_HANDSHAKE) return (socket) => secure.emit("connection", socket);
      const h2 = startsLikePreface(head);
      if (h2 === undefined) return undefined;
      return (socket) => refusePlaintext(socket, h2);
    }, limits.maxConnectionsPerAddress);
  } else {
    const h2 = http2.createServer({ ...h2Settings }, handler as never);
    h2.on("session", track);
    h2.setTimeout(IDLE_MS);
    routeStreams(h2, opts.streams ?? {});
    boundIncompleteStreams(h2, limits, opts.onLimit);
    // Partial headers and slow bodies are not held forever (checked every second).
    const h1 = http.createServer({ headersTimeout: limits.headersTimeoutMs, requestTimeout: limits.requestTimeoutMs, connectionsCheckingInterval: 1000 }, handler as never);
    h1.keepAliveTimeout = 65_000;
    // node starts checking headersTimeout/requestTimeout when the server emits "listening"; h1 never
    // listens itself (the sniffing server hands it connections), so it is told to start here.
    h1.emit("listening");
    closeH1 = () => h1.close();
    // The first bytes tell the HTTP/2 preface from an HTTP/1.1 request line.
    server = sniffingServer((head) => {
      const isH2 = startsLikePreface(head);
      if (isH2 === undefined) return undefined;
      return (socket) => (isH2 ? h2 : h1).emit("connection", socket);
    }, limits.maxConnectionsPerAddress);
  }
  server.on("connection", (s: net.Socket) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      reject(new OngridError("unavailable", `server.port: cannot listen on ${opts.host}:${opts.port}: ${err.code ?? err.message}`, "choose another port (--port / ONGRID_PORT)"));
    };
    server.once("error", onError);
    server.listen(opts.port, opts.host, () => {
      server.off("error", onError);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const hostForUrl = opts.host.includes(":") ? `[${opts.host}]` : opts.host === "0.0.0.0" ? "127.0.0.1" : opts.host;
  return {
    url: `${tls ? "https" : "http"}://${hostForUrl}:${port}`,
    port,
    tls,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        closeH1();
        for (const s of sessions) s.close();
        setTimeout(() => {
          for (const s of sockets) s.destroy();
        }, 2000).unref();
        sessions = new Set();
      }),
  };
}
