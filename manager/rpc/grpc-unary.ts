/**
 * Unary gRPC calls served straight off their HTTP/2 stream.
 *
 * connect-node serves every protocol through one generic pipeline (async iterables for the body,
 * node's request/response compatibility objects, linked abort controllers); for a small unary
 * call that pipeline costs ≈ 0.5–1 ms of CPU on a 2-core machine — measured with a connect-node
 * echo server that does nothing else, against ≈ 30 µs for a bare node:http2 request/response —
 * and it bounded the manager's ExecuteSkill RPCs to ≈ 1,000 a second. This path takes the common
 * case only: POST, `application/grpc` or `application/grpc+proto`, no message compression. It
 * reads the one enveloped message, decodes it, and runs the same interceptors and the same
 * service implementation connect would (connect's own helpers: the handler context, the
 * interceptor chain, the serializers with the same read/write limits), then writes the message
 * and the grpc-status trailers. Everything else (the Connect protocol, gRPC-Web, JSON, compressed
 * requests, streaming methods) is declined and goes through connect as before.
 */
import type http2 from "node:http2";
import { Code, ConnectError, type ContextValues, type HandlerContext, type Interceptor, type ServiceImplSpec } from "@connectrpc/connect";
import { createMethodSerializationLookup, createMethodUrl, invokeUnaryImplementation } from "@connectrpc/connect/protocol";
import { parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import type { DescMethodUnary, DescService } from "@bufbuild/protobuf";
import { grpcFrame } from "../fleet/grpc-stream.ts";

/** A stream handler that may decline a stream (false), leaving it to the next handler. */
export type OptionalStreamHandler = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean;

/** What the fast path needs besides the services. */
export interface GrpcUnaryOptions {
  interceptors: Interceptor[];
  /** Largest request message accepted (server.max_request_bytes), as connect's readMaxBytes. */
  readMaxBytes: number;
  /** Context values of a call, from its stream (connect's contextValues hook gets the request). */
  contextValues(stream: http2.ServerHttp2Stream): ContextValues;
  /** A request refused before its message was decoded (bad framing, too large, not parseable). */
  onUndecodable?(path: string, err: ConnectError, startedAt: Date): void;
  /** Turns an error that is not a ConnectError (thrown outside the interceptors: a bug) into the answer. */
  mapError?(err: unknown): ConnectError;
}

const GRPC_TYPES = new Set(["application/grpc", "application/grpc+proto"]);

/** Handlers, by request path, for every unary method of the given services. */
export function grpcUnaryHandlers(specs: ServiceImplSpec[], options: GrpcUnaryOptions): Record<string, OptionalStreamHandler> {
  const out: Record<string, OptionalStreamHandler> = {};
  for (const spec of specs) {
    for (const m of Object.values(spec.methods)) {
      if (m.kind !== "unary") continue;
      const path = createMethodUrl("/", m.method);
      out[path] = unaryHandler(m, path, options);
    }
  }
  return out;
}

type UnarySpec = Extract<ServiceImplSpec["methods"][string], { kind: "unary" }>;

function unaryHandler(spec: UnarySpec, path: string, options: GrpcUnaryOptions): OptionalStreamHandler {
  const method = spec.method as DescMethodUnary;
  const serialization = createMethodSerializationLookup(method, undefined, undefined, { readMaxBytes: options.readMaxBytes, writeMaxBytes: 0xffffffff });
  const input = serialization.getI(true);
  const output = serialization.getO(true);
  return (stream, headers) => {
    const type = headers["content-type"];
    const encoding = headers["grpc-encoding"];
    if (headers[":method"] !== "POST" || type === undefined || !GRPC_TYPES.has(type) || (encoding !== undefined && encoding !== "identity")) return false;
    serve(stream, headers, type);
    return true;
  };

  function serve(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, type: string): void {
    const startedAt = Date.now();
    const timeout = parseTimeout(headerValue(headers["grpc-timeout"]) ?? null, Number.MAX_SAFE_INTEGER);
    const context = new UnaryContext(method, `${headerValue(headers[":scheme"]) ?? "http"}://${headerValue(headers[":authority"]) ?? "localhost"}${path}`, toHeaders(headers), type, options.contextValues(stream), timeout.timeoutMs);
    let answered = false;
    const onGone = () => {
      if (!answered) context.abort(new ConnectError("the client cancelled the call", Code.Canceled));
    };
    stream.once("close", onGone);
    stream.once("aborted", onGone);
    stream.on("error", () => undefined); // a reset stream: handled by "close"

    const answer = (message: Uint8Array | undefined, err: ConnectError | undefined) => {
      answered = true;
      context.abort(err ?? CALL_ENDED); // as connect does: the context's signal fires when the call ends, however it ends
      if (stream.destroyed || stream.closed) return;
      if (err) setTrailerStatus(context.responseTrailer, err);
      const trailers: http2.OutgoingHttpHeaders = {};
      context.responseTrailer.forEach((v, k) => (trailers[k] = v));
      const head: http2.OutgoingHttpHeaders = { ":status": 200 };
      context.responseHeader.forEach((v, k) => (head[k] = v));
      try {
        stream.respond(head, { waitForTrailers: true });
        stream.once("wantTrailers", () => stream.sendTrailers(trailers));
        stream.end(message);
      } catch {
        stream.destroy(); // the stream or its session closed under us (ERR_HTTP2_INVALID_STREAM): nobody is left to answer
      }
    };

    if (timeout.error) {
      stream.resume(); // the body is not read
      answer(undefined, timeout.error);
      return;
    }
    readOne(stream, options.readMaxBytes).then(
      (payload) => {
        let request;
        try {
          request = input.parse(payload);
        } catch (e) {
          // connect answers a protobuf body that does not parse with Code.Internal (its decoder
          // is shared with its clients); on a server the body is the caller's input.
          const err = ConnectError.from(e);
          return refuse(err.code === Code.Internal ? new ConnectError(err.rawMessage, Code.InvalidArgument) : err);
        }
        invokeUnaryImplementation(spec, context, request, options.interceptors).then(
          (res) => {
            let bytes;
            try {
              bytes = output.serialize(res);
            } catch (e) {
              return answer(undefined, ConnectError.from(e));
            }
            answer(grpcFrame(bytes), undefined);
          },
          (e) => {
            // A call that failed once its deadline had passed failed because of it (as gRPC servers answer).
            if (context.expired) return answer(undefined, context.signal.reason as ConnectError);
            answer(undefined, e instanceof ConnectError ? e : (options.mapError?.(e) ?? new ConnectError("internal error", Code.Internal, undefined, undefined, e)));
          },
        );
      },
      (e) => refuse(ConnectError.from(e)),
    );

    function refuse(err: ConnectError): void {
      options.onUndecodable?.(path, err, new Date(startedAt));
      answer(undefined, err);
    }
  }
}

/**
 * Reads a unary request body: exactly one uncompressed enveloped message of at most `max` bytes.
 * Rejects with connect's messages and codes for the same faults.
 */
function readOne(stream: http2.ServerHttp2Stream, max: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    let chunks: Buffer[] = [];
    let size = 0;
    /** The message's length, once its 5-byte envelope header has arrived. */
    let length = -1;
    let failed = false;
    const fail = (err: ConnectError) => {
      if (failed) return;
      failed = true;
      chunks = [];
      stream.removeListener("data", onData);
      stream.resume(); // what the client still sends is read and dropped
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (length < 0 && size >= 5) {
        if (chunks.length > 1) chunks = [Buffer.concat(chunks)];
        length = chunks[0]!.readUInt32BE(1);
        if (length > max) return fail(new ConnectError(`message size ${length} is larger than configured readMaxBytes ${max}`, Code.ResourceExhausted));
      }
      if (length >= 0 && size > 5 + length) fail(new ConnectError("protocol error: received extra input message for unary method", Code.Unimplemented));
    };
    stream.on("data", onData);
    stream.once("end", () => {
      if (failed) return;
      if (size === 0) return fail(new ConnectError("protocol error: missing input message for unary method", Code.Unimplemented));
      if (length < 0 || size !== 5 + length) return fail(new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument));
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      if ((body[0]! & 0x01) !== 0) return fail(new ConnectError("protocol error: compressed message without a grpc-encoding", Code.InvalidArgument));
      resolve(body.subarray(5));
    });
    stream.once("aborted", () => fail(new ConnectError("the client cancelled the call", Code.Canceled)));
  });
}

/**
 * The reason a call's signal gives once the call has ended normally. One shared value: connect
 * makes a DOMException for it, per call, which costs a stack trace each time.
 */
const CALL_ENDED = new ConnectError("the call has ended", Code.Canceled);

/**
 * A call's HandlerContext (what connect's createHandlerContext makes), with one AbortController:
 * aborted when the client goes away, at the deadline, and when the call ends. Its members are
 * own properties because connect copies the context with Object.assign for each call.
 */
class UnaryContext implements HandlerContext {
  readonly service: DescService;
  readonly protocolName = "grpc";
  readonly requestMethod = "POST";
  readonly responseHeader: Headers;
  readonly responseTrailer = new Headers({ "grpc-status": "0" });
  readonly signal: AbortSignal;
  readonly timeoutMs: () => number | undefined;
  readonly abort: (reason: unknown) => void;
  /** Whether the deadline fired (the signal's reason is then DeadlineExceeded). */
  expired = false;

  constructor(
    readonly method: DescMethodUnary,
    readonly url: string,
    readonly requestHeader: Headers,
    contentType: string,
    readonly values: ContextValues,
    timeoutMs: number | undefined,
  ) {
    this.service = method.parent;
    this.responseHeader = new Headers({ "content-type": contentType });
    const controller = new AbortController();
    this.signal = controller.signal;
    let timer: NodeJS.Timeout | undefined;
    if (timeoutMs === undefined) this.timeoutMs = () => undefined;
    else {
      const at = Date.now() + timeoutMs;
      this.timeoutMs = () => at - Date.now();
      timer = setTimeout(() => {
        if (controller.signal.aborted) return;
        this.expired = true;
        controller.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
      }, timeoutMs);
    }
    this.abort = (reason) => {
      if (timer) clearTimeout(timer);
      if (!controller.signal.aborted) controller.abort(reason);
    };
  }
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(", ") : v;
}

/** The request's headers as a fetch Headers, pseudo-headers left out (as connect-node does). */
function toHeaders(headers: http2.IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const k in headers) {
    if (k.charCodeAt(0) === 58 /* ":" */) continue;
    const v = headers[k];
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const one of v) out.append(k, one);
    else out.append(k, v);
  }
  return out;
}
