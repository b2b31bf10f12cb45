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
}

/** What one peer may hold before it has proven anything (server.header_timeout, server.max_concurrent_streams, server.max_connections_per_address). */
export interface ListenLimits {
  /** An HTTP/1.1 request's headers must arrive within this; its whole body within requestTimeoutMs. */
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** SETTINGS_MAX_CONCURRENT_STREAMS of every HTTP/2 connection. */
  maxConcurrentStreams: number;
  /** Open connections from one address; more are closed at once (0: no cap). */
  maxConnectionsPerAddress: number;
}

/** The limits when none are configured. */
export const DEFAULT_LISTEN_LIMITS: ListenLimits = { headersTimeoutMs: 10_000, requestTimeoutMs: 60_000, maxConcurrentStreams: 1000, maxConnectionsPerAddress: 4096 };

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
  return net.createServer((socket) => {
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
