/**
 * A bidirectional gRPC stream served straight on a node:http2 stream: length-prefixed protobuf
 * messages in DATA frames, status in trailers. The edge tunnel uses it instead of the Connect
 * router because an idle tunnel must cost little memory per edge (see docs/performance.md);
 * the wire format is plain gRPC, so grpc-js, grpc-go or buf curl peers work unchanged.
 */
import type http2 from "node:http2";
import { constants as http2constants } from "node:http2";
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";

/** Outgoing bytes a peer may leave unread before the call is ended (a stalled peer must not grow our memory). */
const MAX_UNSENT_BYTES = 8 * 1024 * 1024;

/** A gRPC status to end the stream with. */
export interface GrpcStatus {
  code: Code;
  message: string;
}

/** One accepted bidirectional call. */
export interface GrpcBidiCall<O extends DescMessage> {
  readonly headers: http2.IncomingHttpHeaders;
  /** Sends one message; false when the stream is gone. */
  send(message: MessageInitShape<O>): boolean;
  /** Sends one message already framed (grpcFrame's format, 5-byte prefix included); false when the stream is gone. */
  sendFrame(frame: Buffer): boolean;
  /** Ends the call with a status (OK by default); later calls are ignored. */
  end(status?: GrpcStatus): void;
  /** Whether the call has ended (either side). */
  readonly closed: boolean;
}

/** Callbacks for one call. */
export interface GrpcBidiHandlers<I extends DescMessage> {
  onMessage(message: MessageShape<I>): void;
  /** The peer half-closed cleanly between frames: the status to end the call with (OK when undefined). */
  onEnd?(): GrpcStatus | undefined;
  /** The peer half-closed, reset, or the connection died; `err` says why when it was not a clean end. */
  onClose(err?: Error): void;
}

/** Prefixes one serialised message with gRPC's 5-byte header: flags 0 (uncompressed), then its length, big-endian. */
export function grpcFrame(body: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(5 + body.length);
  frame[0] = 0;
  frame.writeUInt32BE(body.length, 1);
  frame.set(body, 5);
  return frame;
}

/** Why a stream of gRPC messages cannot be read on: a frame over the size limit, or a compressed one. */
export type FrameProblem = { kind: "too_large"; len: number } | { kind: "compressed" };

/**
 * Splits received bytes into gRPC's length-prefixed messages (both ends of a raw gRPC stream use
 * it: the tunnel and the peer link's server side, the peer link's client side). Chunks are
 * concatenated only when a frame is complete.
 */
export function createFrameReader(maxMessageBytes: number) {
  let chunks: Buffer[] = [];
  let buffered = 0;
  return {
    /** Bytes received and not yet part of a whole message. */
    get buffered(): number {
      return buffered;
    },
    /** How many bytes the frame being received needs in all ("at least 5" before its header). */
    wanted(): string {
      return buffered >= 5 ? `${5 + Buffer.concat(chunks).readUInt32BE(1)}` : "at least 5";
    },
    /**
     * Adds `chunk` and hands each whole message body to `onMessage`, which returns false to stop
     * reading (the stream ended). Returns the problem that ends the stream, if any.
     */
    push(chunk: Buffer, onMessage: (body: Buffer) => boolean): FrameProblem | undefined {
      chunks.push(chunk);
      buffered += chunk.length;
      while (buffered >= 5) {
        if (chunks[0].length < 5) chunks = [Buffer.concat(chunks)];
        const head = chunks[0];
        const len = head.readUInt32BE(1);
        if (len > maxMessageBytes) return { kind: "too_large", len };
        if (head[0] & 1) return { kind: "compressed" };
        if (buffered < 5 + len) break;
        const all = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
        const body = all.subarray(5, 5 + len);
        const rest = all.subarray(5 + len);
        chunks = rest.length ? [rest] : [];
        buffered = rest.length;
        if (!onMessage(body)) break;
      }
      return undefined;
    },
  };
}

/** Percent-encodes a grpc-message as the gRPC spec asks: only '%' and bytes outside printable ASCII. */
export function encodeGrpcMessage(message: string): string {
  let out = "";
  for (const byte of Buffer.from(message, "utf8")) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** Ends a call that was never accepted with a trailers-only response. */
export function refuse(stream: http2.ServerHttp2Stream, status: GrpcStatus): void {
  if (stream.destroyed || stream.headersSent) return;
  stream.respond(
    {
      ":status": 200,
      "content-type": "application/grpc+proto",
      "grpc-status": String(status.code),
      "grpc-message": encodeGrpcMessage(status.message),
    },
    { endStream: true },
  );
}

/** Checks the request is gRPC (not gRPC-Web or Connect) with no compression we do not speak. */
export function checkGrpcRequest(headers: http2.IncomingHttpHeaders, what = "the edge tunnel"): GrpcStatus | undefined {
  const ct = String(headers["content-type"] ?? "");
  if (!/^application\/grpc(\+proto)?(;|$)/.test(ct)) {
    return { code: Code.Unimplemented, message: `${what} speaks gRPC (application/grpc+proto), not ${ct || "no content-type"}` };
  }
  const enc = String(headers["grpc-encoding"] ?? "identity");
  if (enc !== "identity") return { code: Code.Unimplemented, message: `grpc-encoding ${enc} is not supported; send uncompressed messages` };
  return undefined;
}

/**
 * Accepts a call: sends response headers, then decodes each incoming message with `input` and
 * encodes outgoing ones with `output`. A frame that cannot be decoded or is larger than
 * `maxMessageBytes` ends the call with INVALID_ARGUMENT / RESOURCE_EXHAUSTED.
 */
export function acceptBidi<I extends DescMessage, O extends DescMessage>(
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  input: I,
  output: O,
  maxMessageBytes: number,
  handlers: GrpcBidiHandlers<I>,
): GrpcBidiCall<O> {
  let closed = false;
  let status: GrpcStatus = { code: 0 as Code, message: "" };
  const reader = createFrameReader(maxMessageBytes);

  stream.respond({ ":status": 200, "content-type": "application/grpc+proto" }, { waitForTrailers: true });
  stream.on("wantTrailers", () => {
    const trailers: Record<string, string> = { "grpc-status": String(status.code) };
    if (status.message) trailers["grpc-message"] = encodeGrpcMessage(status.message);
    stream.sendTrailers(trailers);
    // A peer that never half-closes would keep the stream open until the session idles out.
    setTimeout(() => {
      if (!stream.destroyed) stream.close();
    }, 2000).unref();
  });

  const finish = (err?: Error) => {
    if (closed) return;
    closed = true;
    handlers.onClose(err);
  };

  const call: GrpcBidiCall<O> = {
    headers,
    get closed() {
      return closed || stream.destroyed;
    },
    send(message) {
      return call.sendFrame(grpcFrame(toBinary(output, create(output, message))));
    },
    sendFrame(frame) {
      if (closed || stream.destroyed || stream.writableEnded) return false;
      if (stream.writableLength > MAX_UNSENT_BYTES) {
        const reason = `the peer is not reading: more than ${MAX_UNSENT_BYTES} bytes unsent`;
        status = { code: Code.ResourceExhausted, message: reason };
        finish(new Error(reason)); // the handler learns the reason, not "the peer closed"
        // Trailers would wait behind the unread bytes for as long as the peer stalls: reset the
        // stream instead, which frees them now (gRPC peers read ENHANCE_YOUR_CALM as RESOURCE_EXHAUSTED).
        if (!stream.destroyed) stream.close(http2constants.NGHTTP2_ENHANCE_YOUR_CALM);
        return false;
      }
      stream.write(frame);
      return true;
    },
    end(s) {
      if (s) status = s;
      if (!stream.destroyed && !stream.writableEnded) stream.end();
      finish();
    },
  };

  stream.on("data", (chunk: Buffer) => {
    if (closed) return;
    const problem = reader.push(chunk, (body) => {
      let message: MessageShape<I>;
      try {
        message = fromBinary(input, body);
      } catch (err) {
        call.end({ code: Code.InvalidArgument, message: `malformed tunnel frame: ${(err as Error).message}` });
        return false;
      }
      handlers.onMessage(message);
      return !closed;
    });
    if (problem?.kind === "too_large") call.end({ code: Code.ResourceExhausted, message: `tunnel frame of ${problem.len} bytes exceeds the ${maxMessageBytes}-byte limit` });
    else if (problem) call.end({ code: Code.Unimplemented, message: "compressed tunnel frames are not supported" });
  });
  const onEnd = () => {
    // The peer half-closed: answer with our trailers.
    if (closed) return;
    if (reader.buffered > 0) {
      call.end({ code: Code.InvalidArgument, message: `the stream ended inside a tunnel frame: ${reader.buffered} of ${reader.wanted()} bytes received` });
      return;
    }
    call.end(handlers.onEnd?.());
  };
  stream.on("end", onEnd);
  // A request with no body may have ended before this call was accepted (e.g. while its token was checked).
  if (stream.readableEnded) process.nextTick(onEnd);
  stream.on("aborted", () => finish(new Error("the peer reset the stream")));
  stream.on("error", (err) => finish(err));
  stream.on("close", () => finish(stream.rstCode && stream.rstCode !== 0 ? new Error(`stream closed with code ${stream.rstCode}`) : undefined));
  return call;
}
