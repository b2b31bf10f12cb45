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

/** Serves one HTTP/2 stream directly, without node's request/response compatibility layer. */
export type StreamHandler = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void;

/** Where and how to listen. */
export interface ListenOptions {
  host: string;
  port: number;
  tlsCert?: string;
  tlsKey?: string;
  /** HTTP/2 streams to serve raw, by request path (the edge tunnel); everything else goes to the handler. */
  streams?: Record<string, StreamHandler>;
}

/**
 * Puts raw stream handlers in front of node's compatibility layer: a stream whose path has a
 * handler never becomes a request/response pair (which costs memory per stream).
 */
function routeStreams(server: http2.Http2Server | http2.Http2SecureServer, streams: Record<string, StreamHandler>): void {
  if (!Object.keys(streams).length) return;
  const compat = server.listeners("stream") as Array<(...a: unknown[]) => void>;
  server.removeAllListeners("stream");
  server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, ...rest: unknown[]) => {
    const raw = streams[String(headers[":path"] ?? "")];
    if (raw) raw(stream, headers);
    else for (const l of compat) l.call(server, stream, headers, ...rest);
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

/** Starts the front door and resolves once it accepts connections. */
export async function listen(handler: DualHandler, opts: ListenOptions): Promise<Listener> {
  const sockets = new Set<net.Socket>();
  let server: net.Server;
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
      secure = http2.createSecureServer({ cert, key, allowHTTP1: true }, handler as never);
    } catch (err) {
      throw new OngridError("invalid_argument", `server.tls_cert/tls_key: not a usable PEM certificate and key: ${(err as Error).message}`, "check that the files hold a PEM certificate and its matching private key");
    }
    secure.setTimeout(IDLE_MS);
    routeStreams(secure, opts.streams ?? {});
    secure.on("session", track);
    server = secure;
  } else {
    const h2 = http2.createServer({}, handler as never);
    h2.on("session", track);
    h2.setTimeout(IDLE_MS);
    routeStreams(h2, opts.streams ?? {});
    const h1 = http.createServer(handler as never);
    h1.keepAliveTimeout = 65_000;
    server = net.createServer((socket) => {
      socket.on("error", () => socket.destroy());
      // A connection that sends nothing is closed; one that does is handed over once its first
      // bytes tell the HTTP/2 preface from an HTTP/1.1 request line.
      socket.setTimeout(FIRST_BYTES_MS, () => socket.destroy());
      let head = EMPTY;
      const onData = (chunk: Buffer) => {
        head = Buffer.concat([head, chunk]);
        const n = Math.min(head.length, PREFACE.length);
        const prefixMatches = head.subarray(0, n).equals(PREFACE.subarray(0, n));
        if (prefixMatches && n < PREFACE.length) return; // could still be either: wait for more
        socket.off("data", onData);
        socket.pause();
        socket.setTimeout(0);
        // Drop our reference: this closure lives as long as the socket (its error handler shares
        // it), and the first bytes of an edge's tunnel hold its whole hello (≈21 KB an edge).
        const first = head;
        head = EMPTY;
        socket.unshift(first);
        (prefixMatches ? h2 : h1).emit("connection", socket);
        process.nextTick(() => socket.resume());
      };
      socket.on("data", onData);
    });
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
        for (const s of sessions) s.close();
        setTimeout(() => {
          for (const s of sockets) s.destroy();
        }, 2000).unref();
        sessions = new Set();
      }),
  };
}
