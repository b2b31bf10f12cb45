/**
 * A small HTTP/2 client (RFC 9113) for the edge tunnel: one connection per request, one stream,
 * cleartext (prior knowledge) or TLS with ALPN "h2", on node:net / node:tls. It implements
 * Connect's UniversalClientFn, so Connect's own gRPC protocol code runs on top of it unchanged.
 *
 * Why not node:http2: the compiled edge runs on Bun, whose node:http2 client costs ≈ 5 MB of
 * resident memory for the one stream the tunnel needs (docs/performance.md, "Edge idle RSS").
 * The edge needs one long-lived bidirectional stream per connection, which keeps this small:
 * flow control both ways, SETTINGS, PING, GOAWAY, RST_STREAM, HPACK and trailers are handled;
 * server push is disabled; request headers are sent as HPACK literals without indexing.
 */
import net from "node:net";
import tls from "node:tls";
import { Code, ConnectError } from "@connectrpc/connect";
import type { UniversalClientFn, UniversalClientRequest, UniversalClientResponse } from "@connectrpc/connect/protocol";
import { HpackDecoder, HpackError, encodeHeaders } from "./hpack.ts";

/** Options of the client. */
export interface H2ClientOptions {
  /** CA certificate(s) to verify an https server against, instead of the default roots. */
  ca?: string | Buffer | Array<string | Buffer>;
  /**
   * How long the TCP connect (and, for https, the TLS handshake) may take before the attempt fails
   * UNAVAILABLE; default 5 s. Without it a dial into a partition waits on the kernel's SYN
   * retransmissions (1, 2, 4, 8 … s apart), so an edge could come back long after the network did.
   */
  connectTimeoutMs?: number;
  /**
   * The address to open the TCP connection to instead of the URL's host (one of several a manager
   * name resolves to); the URL's host still names the server (TLS SNI and certificate, :authority).
   */
  connectAddress?: string;
}

/** Default of H2ClientOptions.connectTimeoutMs. */
const CONNECT_TIMEOUT_MS = 5_000;

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

// Frame types and flags (RFC 9113 §6).
const DATA = 0x0;
const HEADERS = 0x1;
const RST_STREAM = 0x3;
const SETTINGS = 0x4;
const PUSH_PROMISE = 0x5;
const PING = 0x6;
const GOAWAY = 0x7;
const WINDOW_UPDATE = 0x8;
const CONTINUATION = 0x9;
const END_STREAM = 0x1;
const ACK = 0x1;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const PRIORITY_FLAG = 0x20;

// Error codes (RFC 9113 §7).
const NO_ERROR = 0x0;
const PROTOCOL_ERROR = 0x1;
const INTERNAL_ERROR = 0x2;
const FLOW_CONTROL_ERROR = 0x3;
const FRAME_SIZE_ERROR = 0x6;
const CANCEL = 0x8;
const COMPRESSION_ERROR = 0x9;
const H2_CODE_NAMES = [
  "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR",
  "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
];

/** The one stream of each connection (client-initiated streams are odd). */
const STREAM = 1;
/** Frames we accept: SETTINGS_MAX_FRAME_SIZE is left at its default. */
const MAX_FRAME = 16_384;
/** Our receive window, per stream and for the connection: the most the peer may send us unread. */
const RECV_WINDOW = 1 << 20;
/** A header block (with its CONTINUATIONs) larger than this ends the connection. */
const MAX_HEADER_BLOCK = 64 * 1024;
const DEFAULT_WINDOW = 65_535;
const MAX_WINDOW = 2 ** 31 - 1;

/** The Connect error for a stream reset with `code`, as @connectrpc/connect-node maps it; undefined for NO_ERROR and STREAM_CLOSED. */
export function errorFromResetCode(code: number): ConnectError | undefined {
  const codes: Record<number, Code> = {
    1: Code.Internal, 2: Code.Internal, 3: Code.Internal, 4: Code.Internal, 6: Code.Internal, 9: Code.Internal, 10: Code.Internal,
    7: Code.Unavailable, 8: Code.Canceled, 11: Code.ResourceExhausted, 12: Code.PermissionDenied, 13: Code.PermissionDenied,
  };
  const c = codes[code];
  return c === undefined ? undefined : new ConnectError(`http/2 stream closed with error code ${H2_CODE_NAMES[code]} (0x${code.toString(16)})`, c);
}

function frame(type: number, flags: number, stream: number, payload: Uint8Array = Buffer.alloc(0)): Buffer {
  const head = Buffer.allocUnsafe(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return payload.length ? Buffer.concat([head, payload]) : head;
}

function u32(...values: number[]): Buffer {
  const b = Buffer.allocUnsafe(4 * values.length);
  values.forEach((v, i) => b.writeUInt32BE(v, 4 * i));
  return b;
}

/** Creates the client: each request opens its own connection, which closes when the stream ends. */
export function createH2Client(opts: H2ClientOptions = {}): UniversalClientFn {
  return (req) => new Promise<UniversalClientResponse>((resolve, reject) => new Call(req, opts, resolve, reject));
}

/** One request on its own connection. */
class Call {
  private readonly socket: net.Socket;
  private readonly decoder = new HpackDecoder();
  private inbuf: Buffer = Buffer.alloc(0);
  /** Header block fragments awaiting END_HEADERS, and whether that block ends the stream. */
  private pendingBlock: Buffer[] | undefined;
  private pendingEndStream = false;
  private responded = false;
  private remoteEnded = false;
  private localEnded = false;
  private done = false;
  private socketError: Error | undefined;

  // Flow control for what we send: the peer's windows and frame size.
  private sendConn = DEFAULT_WINDOW;
  private sendStream = DEFAULT_WINDOW;
  private peerInitialWindow = DEFAULT_WINDOW;
  private peerMaxFrame = MAX_FRAME;
  private wakeWriter: (() => void) | undefined;

  // Flow control for what we receive.
  private recvWindow = RECV_WINDOW;
  private unacked = 0;

  // The response body: chunks not yet read (with the flow-control bytes each one stands for).
  private readonly queue: Array<{ data: Uint8Array; flow: number }> = [];
  private queueError: ConnectError | undefined;
  private reader: { resolve: (r: IteratorResult<Uint8Array>) => void; reject: (e: unknown) => void } | undefined;
  private readonly trailer = new Headers();

  constructor(
    private readonly req: UniversalClientRequest,
    opts: H2ClientOptions,
    private readonly resolveResponse: (res: UniversalClientResponse) => void,
    private readonly rejectResponse: (err: unknown) => void,
  ) {
    const url = new URL(req.url);
    const secure = url.protocol === "https:";
    const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
    const port = Number(url.port || (secure ? 443 : 80));
    this.socket = secure
      ? tls.connect({ host: opts.connectAddress ?? host, port, servername: net.isIP(host) ? undefined : host, ca: opts.ca, ALPNProtocols: ["h2"] })
      : net.connect({ host: opts.connectAddress ?? host, port });
    this.socket.setNoDelay(true);
    this.socket.on("error", (err) => {
      this.socketError ??= err;
      this.fail(new ConnectError(err.message, Code.Unavailable, undefined, undefined, err));
    });
    this.socket.on("close", () => {
      if (!this.done) this.fail(new ConnectError(this.socketError?.message ?? "the HTTP/2 connection closed before the stream ended", Code.Unavailable));
    });
    this.socket.on("data", (chunk: Buffer) => this.onData(chunk));
    const connectMs = opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
    const connectTimer = setTimeout(() => {
      this.fail(new ConnectError(`could not connect to ${url.host} within ${connectMs} ms${secure ? " (TCP and TLS handshake)" : ""}`, Code.Unavailable));
      this.socket.destroy();
    }, connectMs);
    this.socket.once("close", () => clearTimeout(connectTimer));
    this.socket.once(secure ? "secureConnect" : "connect", () => {
      clearTimeout(connectTimer);
      const alpn = (this.socket as tls.TLSSocket).alpnProtocol;
      if (secure && alpn !== "h2") {
        this.fail(new ConnectError(`the server did not agree to HTTP/2 over TLS (ALPN ${alpn || "none"})`, Code.Unavailable));
        return;
      }
      this.open(url);
    });
    const signal = req.signal;
    if (signal) {
      const onAbort = () => this.fail(ConnectError.from(signal.reason, Code.Canceled), CANCEL);
      if (signal.aborted) onAbort();
      else {
        signal.addEventListener("abort", onAbort, { once: true });
        this.socket.once("close", () => signal.removeEventListener("abort", onAbort));
      }
    }
  }

  /** Sends the preface, our settings and the request headers, then starts sending the body. */
  private open(url: URL): void {
    if (this.done) return;
    const settings = Buffer.allocUnsafe(12);
    settings.writeUInt16BE(0x2, 0); // ENABLE_PUSH
    settings.writeUInt32BE(0, 2);
    settings.writeUInt16BE(0x4, 6); // INITIAL_WINDOW_SIZE
    settings.writeUInt32BE(RECV_WINDOW, 8);
    const fields: Array<[string, string]> = [
      [":method", this.req.method],
      [":scheme", url.protocol.slice(0, -1)],
      [":authority", url.host],
      [":path", url.pathname + url.search],
    ];
    this.req.header.forEach((value, name) => {
      // Connection-specific fields are not allowed in HTTP/2 (RFC 9113 §8.2.2).
      if (!/^(connection|keep-alive|proxy-connection|transfer-encoding|upgrade|host)$/.test(name)) fields.push([name, value]);
    });
    const block = encodeHeaders(fields);
    const out: Buffer[] = [PREFACE, frame(SETTINGS, 0, 0, settings), frame(WINDOW_UPDATE, 0, 0, u32(RECV_WINDOW - DEFAULT_WINDOW))];
    for (let off = 0; off < block.length || off === 0; off += MAX_FRAME) {
      const last = off + MAX_FRAME >= block.length;
      out.push(frame(off === 0 ? HEADERS : CONTINUATION, last ? END_HEADERS : 0, STREAM, block.subarray(off, off + MAX_FRAME)));
    }
    this.socket.write(Buffer.concat(out));
    void this.sendBody();
  }

  private async sendBody(): Promise<void> {
    try {
      if (this.req.body) {
        for await (const chunk of this.req.body) {
          let off = 0;
          while (off < chunk.length) {
            if (this.done || this.remoteEnded) return;
            const n = Math.min(chunk.length - off, this.peerMaxFrame, this.sendConn, this.sendStream);
            if (n <= 0) {
              await new Promise<void>((r) => (this.wakeWriter = r));
              continue;
            }
            this.sendConn -= n;
            this.sendStream -= n;
            await this.write(frame(DATA, 0, STREAM, chunk.subarray(off, off + n)));
            off += n;
          }
        }
      }
      if (this.done || this.remoteEnded) return;
      this.localEnded = true;
      await this.write(frame(DATA, END_STREAM, STREAM));
    } catch (err) {
      this.fail(ConnectError.from(err, Code.Internal), CANCEL);
    }
  }

  /** Writes and waits while the socket's buffer is full. */
  private async write(buf: Buffer): Promise<void> {
    if (this.done) return;
    if (!this.socket.write(buf)) {
      await new Promise<void>((resolve) => {
        const go = () => {
          this.socket.off("drain", go);
          this.socket.off("close", go);
          resolve();
        };
        this.socket.on("drain", go);
        this.socket.on("close", go);
      });
    }
  }

  private onData(chunk: Buffer): void {
    this.inbuf = this.inbuf.length ? Buffer.concat([this.inbuf, chunk]) : chunk;
    while (!this.done && this.inbuf.length >= 9) {
      const len = this.inbuf.readUIntBE(0, 3);
      if (len > MAX_FRAME) return this.connectionError(FRAME_SIZE_ERROR, `a frame of ${len} bytes exceeds ${MAX_FRAME}`);
      if (this.inbuf.length < 9 + len) return;
      const type = this.inbuf[3];
      const flags = this.inbuf[4];
      const stream = this.inbuf.readUInt32BE(5) & 0x7fffffff;
      const payload = this.inbuf.subarray(9, 9 + len);
      this.inbuf = this.inbuf.subarray(9 + len);
      try {
        this.onFrame(type, flags, stream, payload);
      } catch (err) {
        if (err instanceof HpackError) return this.connectionError(COMPRESSION_ERROR, err.message);
        throw err;
      }
    }
  }

  private onFrame(type: number, flags: number, stream: number, payload: Buffer): void {
    if (this.pendingBlock && type !== CONTINUATION) return this.connectionError(PROTOCOL_ERROR, "expected a CONTINUATION frame");
    switch (type) {
      case DATA: {
        if (stream !== STREAM || !this.responded || this.remoteEnded) return this.connectionError(PROTOCOL_ERROR, "DATA on a stream that is not open");
        this.recvWindow -= payload.length;
        if (this.recvWindow < 0) return this.connectionError(FLOW_CONTROL_ERROR, "the server sent more than our window");
        const data = this.unpad(flags, payload);
        if (!data) return;
        if (data.length) this.queue.push({ data, flow: payload.length });
        else this.credit(payload.length);
        if (flags & END_STREAM) this.remoteEnd();
        else this.deliver();
        return;
      }
      case HEADERS: {
        if (stream !== STREAM || this.remoteEnded) return this.connectionError(PROTOCOL_ERROR, "HEADERS on a stream that is not open");
        let data = this.unpad(flags, payload);
        if (!data) return;
        if (flags & PRIORITY_FLAG) data = data.subarray(5);
        this.pendingBlock = [data];
        this.pendingEndStream = (flags & END_STREAM) !== 0;
        if (flags & END_HEADERS) this.headerBlockDone();
        return;
      }
      case CONTINUATION: {
        if (!this.pendingBlock || stream !== STREAM) return this.connectionError(PROTOCOL_ERROR, "unexpected CONTINUATION frame");
        this.pendingBlock.push(payload);
        if (this.pendingBlock.reduce((n, b) => n + b.length, 0) > MAX_HEADER_BLOCK) return this.connectionError(PROTOCOL_ERROR, "header block too large");
        if (flags & END_HEADERS) this.headerBlockDone();
        return;
      }
      case RST_STREAM: {
        if (stream !== STREAM || payload.length !== 4) return this.connectionError(PROTOCOL_ERROR, "malformed RST_STREAM");
        const code = payload.readUInt32BE(0);
        const err = errorFromResetCode(code);
        if (err) return this.fail(err);
        if (!this.responded) return this.fail(new ConnectError(`http/2 stream closed with error code ${H2_CODE_NAMES[code] ?? code} before the response was received`, Code.Internal));
        // NO_ERROR after a response: the body ends here and the gRPC layer judges the trailers.
        this.remoteEnd();
        return;
      }
      case SETTINGS: {
        if (stream !== 0) return this.connectionError(PROTOCOL_ERROR, "SETTINGS on a stream");
        if (flags & ACK) return;
        if (payload.length % 6) return this.connectionError(FRAME_SIZE_ERROR, "malformed SETTINGS");
        for (let off = 0; off < payload.length; off += 6) {
          const id = payload.readUInt16BE(off);
          const value = payload.readUInt32BE(off + 2);
          if (id === 0x4) {
            if (value > MAX_WINDOW) return this.connectionError(FLOW_CONTROL_ERROR, "SETTINGS_INITIAL_WINDOW_SIZE too large");
            this.sendStream += value - this.peerInitialWindow;
            this.peerInitialWindow = value;
          } else if (id === 0x5) {
            if (value < MAX_FRAME || value > 0xffffff) return this.connectionError(PROTOCOL_ERROR, "invalid SETTINGS_MAX_FRAME_SIZE");
            this.peerMaxFrame = value;
          }
        }
        this.socket.write(frame(SETTINGS, ACK, 0));
        this.wake();
        return;
      }
      case PING: {
        if (stream !== 0 || payload.length !== 8) return this.connectionError(PROTOCOL_ERROR, "malformed PING");
        if (!(flags & ACK)) this.socket.write(frame(PING, ACK, 0, payload));
        return;
      }
      case GOAWAY: {
        if (stream !== 0 || payload.length < 8) return this.connectionError(PROTOCOL_ERROR, "malformed GOAWAY");
        const last = payload.readUInt32BE(0) & 0x7fffffff;
        const code = payload.readUInt32BE(4);
        // Our stream was not processed: fail now. Otherwise it may still finish before the server closes.
        // The debug data, when the server sent some, is its reason in words (e.g. a TLS-only port refusing plaintext).
        const reason = payload.subarray(8, 8 + 300).toString("utf8").replace(/[^\x20-\x7e]/g, "?").trim();
        if (last < STREAM) this.fail(new ConnectError(`the server is going away (${H2_CODE_NAMES[code] ?? code}${reason ? `: ${reason}` : ""})`, Code.Unavailable));
        return;
      }
      case WINDOW_UPDATE: {
        if (payload.length !== 4) return this.connectionError(FRAME_SIZE_ERROR, "malformed WINDOW_UPDATE");
        const inc = payload.readUInt32BE(0) & 0x7fffffff;
        if (inc === 0) return this.connectionError(PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
        if (stream === 0) this.sendConn += inc;
        else if (stream === STREAM) this.sendStream += inc;
        if (this.sendConn > MAX_WINDOW || this.sendStream > MAX_WINDOW) return this.connectionError(FLOW_CONTROL_ERROR, "window larger than 2^31-1");
        this.wake();
        return;
      }
      case PUSH_PROMISE:
        return this.connectionError(PROTOCOL_ERROR, "PUSH_PROMISE although push is disabled");
      default:
        return; // PRIORITY and unknown frame types are ignored (RFC 9113 §4.1, §5.3.2).
    }
  }

  /** The frame's data without padding; undefined (after a connection error) when the padding is invalid. */
  private unpad(flags: number, payload: Buffer): Buffer | undefined {
    if (!(flags & PADDED)) return payload;
    const pad = payload.length ? payload[0] : 0;
    if (!payload.length || pad >= payload.length) {
      this.connectionError(PROTOCOL_ERROR, "invalid padding");
      return undefined;
    }
    return payload.subarray(1, payload.length - pad);
  }

  private headerBlockDone(): void {
    const block = Buffer.concat(this.pendingBlock!);
    const endStream = this.pendingEndStream;
    this.pendingBlock = undefined;
    const fields = this.decoder.decode(block);
    if (!this.responded) {
      const status = Number(fields.find(([n]) => n === ":status")?.[1]);
      if (!Number.isInteger(status)) return this.connectionError(PROTOCOL_ERROR, "response without :status");
      if (status >= 100 && status < 200 && !endStream) return; // informational: the real response follows
      const header = new Headers();
      for (const [name, value] of fields) if (!name.startsWith(":")) this.appendField(header, name, value);
      this.responded = true;
      const body: AsyncIterable<Uint8Array> = {
        [Symbol.asyncIterator]: () => ({
          next: () => this.read(),
          return: () => this.stopReading(),
          // Connect's pipe passes errors of later stages upstream: the stream is cancelled.
          throw: (e: unknown) => {
            this.fail(ConnectError.from(e, Code.Internal), CANCEL);
            return Promise.reject(e);
          },
        }),
      };
      this.resolveResponse({ status, header, body, trailer: this.trailer });
      if (endStream) this.remoteEnd();
      return;
    }
    if (!endStream) return this.connectionError(PROTOCOL_ERROR, "trailers without END_STREAM");
    for (const [name, value] of fields) if (!name.startsWith(":")) this.appendField(this.trailer, name, value);
    this.remoteEnd();
  }

  private appendField(h: Headers, name: string, value: string): void {
    try {
      h.append(name, value);
    } catch {
      // A field Headers will not hold (invalid characters) is dropped, as fetch would.
    }
  }

  /** The server ended the stream: the body ends once read, and the connection is closed. */
  private remoteEnd(): void {
    this.remoteEnded = true;
    this.deliver();
    this.close(NO_ERROR, this.localEnded ? undefined : NO_ERROR);
  }

  private read(): Promise<IteratorResult<Uint8Array>> {
    const item = this.queue.shift();
    if (item) {
      this.credit(item.flow);
      return Promise.resolve({ done: false, value: item.data });
    }
    if (this.queueError) return Promise.reject(this.queueError);
    if (this.remoteEnded) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve, reject) => (this.reader = { resolve, reject }));
  }

  /** The reader stopped early: cancel the stream. */
  private async stopReading(): Promise<IteratorResult<Uint8Array>> {
    if (!this.remoteEnded) this.fail(new ConnectError("the response body was abandoned", Code.Canceled), CANCEL);
    return { done: true, value: undefined };
  }

  /** Hands the next chunk (or the end, or the error) to a waiting reader. */
  private deliver(): void {
    const r = this.reader;
    if (!r) return;
    const item = this.queue.shift();
    if (item) {
      this.reader = undefined;
      this.credit(item.flow);
      r.resolve({ done: false, value: item.data });
    } else if (this.queueError) {
      this.reader = undefined;
      r.reject(this.queueError);
    } else if (this.remoteEnded) {
      this.reader = undefined;
      r.resolve({ done: true, value: undefined });
    }
  }

  /** Returns window to the server for bytes the reader took, in batches of half the window. */
  private credit(n: number): void {
    this.unacked += n;
    if (this.unacked < RECV_WINDOW / 2 || this.done || this.remoteEnded) return;
    this.socket.write(Buffer.concat([frame(WINDOW_UPDATE, 0, 0, u32(this.unacked)), frame(WINDOW_UPDATE, 0, STREAM, u32(this.unacked))]));
    this.recvWindow += this.unacked;
    this.unacked = 0;
  }

  private wake(): void {
    const w = this.wakeWriter;
    this.wakeWriter = undefined;
    w?.();
  }

  private connectionError(code: number, message: string): void {
    this.fail(new ConnectError(`http/2 protocol error: ${message}`, Code.Internal), undefined, code);
  }

  /**
   * Ends the call with `err` (once): a pending response rejects, the reader sees the error.
   * `rst` resets our stream first (CANCEL when we give up); `goaway` is the connection error code.
   */
  private fail(err: ConnectError, rst?: number, goaway = NO_ERROR): void {
    if (this.done) return;
    if (!this.responded) this.rejectResponse(err);
    else if (!this.remoteEnded) this.queueError = err;
    this.deliver();
    // A connection error says it all in GOAWAY; otherwise an open stream is reset (CANCEL when we gave up).
    this.close(goaway, this.remoteEnded || goaway !== NO_ERROR ? undefined : (rst ?? INTERNAL_ERROR));
  }

  /** Closes the connection: an optional RST_STREAM, then GOAWAY and FIN; destroyed if the peer lingers. */
  private close(goaway: number, rst?: number): void {
    if (this.done) return;
    this.done = true;
    this.wake();
    const s = this.socket;
    if (s.destroyed) return;
    const opened = s.readyState === "open" && !s.connecting;
    if (opened && rst !== undefined) s.write(frame(RST_STREAM, 0, STREAM, u32(rst)));
    if (opened) s.end(frame(GOAWAY, 0, 0, u32(STREAM, goaway)));
    else s.destroy();
    setTimeout(() => s.destroy(), 2000).unref();
  }
}
