/**
 * The RPC request handler: connect-node's adapter (Connect, gRPC and gRPC-Web on one handler),
 * with one correction. connect-es answers a protobuf request body that does not parse with
 * Code.Internal ("parse binary: premature EOF") — it shares the decoder with its clients, where a
 * bad payload is the server's fault — while a bad JSON body is invalid_argument. On a server the
 * body is the caller's input: such answers are rewritten to invalid_argument, in each protocol's
 * own form (a Connect unary error body and status, a gRPC trailer, a gRPC-Web trailer frame, a
 * Connect end-of-stream frame).
 *
 * And one addition: a server stream says it is live at once. connect-es resolves a handler, and
 * connect-node writes the response headers, only with the first message, so a stream that waits
 * for events (ApprovalService/Watch with nothing pending) would send nothing at all, and a client
 * could not tell a live stream from a stalled connection. An innermost interceptor sees when a
 * stream's implementation has started (the caller authenticated and authorised, the request read)
 * and its first message is not ready within the same turn of the event loop; the headers (status
 * 200: every protocol's stream answers 200 from there on) are then written and flushed. A stream
 * refused before that (authentication, a bad request) or that yields at once is answered exactly
 * as connect-node answers it; one that fails later carries its status where each protocol puts it
 * once the headers are out: the gRPC trailers, the gRPC-Web trailer frame, the Connect
 * end-of-stream message (HTTP status 200 in all three, as before). Response headers an
 * implementation sets after its first await are not sent.
 */
import { Code, ConnectError, createConnectRouter, createContextKey, createContextValues, createServiceImplSpec, type ConnectRouter, type ConnectRouterOptions, type ContextValues, type Interceptor, type ServiceImplSpec } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip, universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import type { DescMessage } from "@bufbuild/protobuf";
import type { DualHandler } from "./listen.ts";

/** Options of the handler: the router's, plus where RPC routes come from and what else is served. */
export interface RpcAdapterOptions extends ConnectRouterOptions {
  routes(router: ConnectRouter): void;
  contextValues?: (req: Parameters<DualHandler>[0]) => ContextValues;
  /** Requests that are not RPCs. */
  fallback: DualHandler;
}

/**
 * Builds the handler; `specs` holds the services registered without options of their own, for
 * the unary fast path (grpc-unary.ts), which knows only the router-wide options.
 */
export function rpcAdapter(options: RpcAdapterOptions): DualHandler & { specs: ServiceImplSpec[] } {
  // JSON requests are read strictly: an unknown field or enum name is refused naming it, instead of
  // being dropped (a misspelled permission_mode would otherwise run in the default mode).
  const router = createConnectRouter({ acceptCompression: [compressionGzip, compressionBrotli], jsonOptions: { ignoreUnknownFields: false }, ...options, interceptors: [...(options.interceptors ?? []), liveWhileWaiting] });
  const specs: ServiceImplSpec[] = [];
  const recording: ConnectRouter = {
    get handlers() {
      return router.handlers;
    },
    service(service, impl, opts) {
      if (!opts) specs.push(createServiceImplSpec(service, impl));
      router.service(service, impl, opts);
      return recording;
    },
    rpc(method) {
      throw new Error(`rpcAdapter: register whole services (router.service), not single methods (${method.name})`);
    },
  };
  options.routes(recording);
  const paths = new Map(router.handlers.map((h) => [h.requestPath, h]));
  const handler: DualHandler = (req, res) => {
    const handler = paths.get((req.url ?? "").split("?", 2)[0]!);
    if (!handler) return options.fallback(req, res);
    const values = options.contextValues?.(req) ?? createContextValues();
    let early = false;
    if (handler.method.methodKind === "server_streaming") {
      values.set(kSendHeaders, (header) => {
        if (res.headersSent || res.writableEnded || res.destroyed) return;
        res.writeHead(200, nodeHeaders(header));
        // node:http holds the head until the first write; node:http2 sends it at writeHead.
        (res as { flushHeaders?: () => void }).flushHeaders?.();
        early = true;
      });
    }
    const uReq = universalRequestFromNodeRequest(req as never, res as never, undefined, values);
    handler(uReq)
      .then(async (uRes) => universalResponseToNodeResponse(await badBodyIsInvalidArgument(uRes, handler.method.input), (early ? headersWritten(res) : res) as never))
      .catch((reason) => {
        if (ConnectError.from(reason).code === Code.Aborted) return;
        console.error(`handler for rpc ${handler.method.name} of ${handler.service.typeName} failed`, reason);
      });
  };
  return Object.assign(handler, { specs });
}

/** Writes a server stream's response headers now; set by the adapter for each server-streaming request. */
const kSendHeaders = createContextKey<((header: Headers) => void) | undefined>(undefined, { description: "ongrid: send a stream's headers" });

/**
 * The innermost interceptor: once a server stream's implementation runs and its first message is
 * not ready within this turn of the event loop, its headers are sent (see the file's comment).
 */
const liveWhileWaiting: Interceptor = (next) => async (req) => {
  const res = await next(req);
  const send = req.contextValues.get(kSendHeaders);
  if (!res.stream || !send || req.method.methodKind !== "server_streaming") return res;
  return { ...res, message: announceWhileWaiting(res.message, () => send(res.header)) };
};

/** The messages unchanged; `announce` is called if the first one is not ready within this turn. */
async function* announceWhileWaiting<T>(messages: AsyncIterable<T>, announce: () => void): AsyncGenerator<T> {
  const it = messages[Symbol.asyncIterator]();
  try {
    const first = it.next();
    const settled = await Promise.race([first.then(() => true, () => true), new Promise<boolean>((resolve) => setImmediate(resolve, false))]);
    if (!settled) announce();
    for (let r = await first; !r.done; r = await it.next()) yield r.value;
  } finally {
    await it.return?.();
  }
}

/** Web headers as node takes them (one value per name; a stream's headers carry no set-cookie). */
function nodeHeaders(header: Headers): Record<string, string> {
  return Object.fromEntries(header);
}

/** The response, for connect-node's writer, once its headers are out: writing them again is a no-op. */
function headersWritten<T extends Parameters<DualHandler>[1]>(res: T): T {
  return new Proxy(res, {
    get(target, prop) {
      if (prop === "writeHead") return () => target;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

const PARSE_FAILURE = "parse binary: ";
const INTERNAL = String(Code.Internal);
const INVALID = String(Code.InvalidArgument);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** "cannot decode enum ongrid.v1.PermissionMode from JSON: …" names a type; the request's fields of that type, by name. */
const ENUM_FAILURE = /^cannot decode enum (\S+) from JSON/;

function enumFields(input: DescMessage | undefined, typeName: string): string[] {
  return (input?.fields ?? []).filter((f) => f.fieldKind === "enum" && f.enum.typeName === typeName).map((f) => f.name);
}

/**
 * The response with an internal "parse binary:" error turned into invalid_argument, and a JSON
 * enum refusal told which field it is about; any other response unchanged.
 */
export async function badBodyIsInvalidArgument(uRes: UniversalServerResponse, input?: DescMessage): Promise<UniversalServerResponse> {
  const type = uRes.header?.get("content-type") ?? "";
  const body = uRes.body;
  if (body === undefined || body instanceof Uint8Array) return uRes;
  if (uRes.status === 400 && type.startsWith("application/json")) {
    const chunks: Uint8Array[] = [];
    for await (const c of body) chunks.push(c);
    const bytes = Buffer.concat(chunks);
    const err = parseJson(decoder.decode(bytes)) as { code?: unknown; message?: unknown } | undefined;
    const m = typeof err?.message === "string" ? ENUM_FAILURE.exec(err.message) : null;
    const fields = m ? enumFields(input, m[1]) : [];
    if (!fields.length) return { ...uRes, body: single(bytes) };
    const out = encoder.encode(JSON.stringify({ ...err, message: `field ${fields.map((f) => `"${f}"`).join(" or ")}: ${err!.message as string} (rule: enum; use the value's full name, e.g. ${m![1].split(".").pop()!.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase()}_…)` }));
    const header = new Headers(uRes.header);
    header.set("content-length", String(out.byteLength));
    return { ...uRes, header, body: single(out) };
  }
  if (uRes.status === 500 && type.startsWith("application/json")) {
    // Connect unary: the error is the whole (small) body, and the status follows its code, so the
    // body is read before the status is sent.
    const chunks: Uint8Array[] = [];
    for await (const c of body) chunks.push(c);
    const bytes = Buffer.concat(chunks);
    const err = parseJson(decoder.decode(bytes)) as { code?: unknown; message?: unknown } | undefined;
    if (err?.code === "internal" && typeof err.message === "string" && err.message.startsWith(PARSE_FAILURE)) {
      const out = encoder.encode(JSON.stringify({ ...err, code: "invalid_argument" }));
      const header = new Headers(uRes.header);
      header.set("content-length", String(out.byteLength));
      return { ...uRes, status: 400, header, body: single(out) };
    }
    return { ...uRes, body: single(bytes) };
  }
  if (type.startsWith("application/grpc-web")) return { ...uRes, body: mapChunks(body, fixGrpcWebTrailer) };
  if (type.startsWith("application/grpc")) return { ...uRes, body: thenFixTrailer(body, uRes) };
  if (type.startsWith("application/connect+")) return { ...uRes, body: mapChunks(body, fixConnectEndStream) };
  return uRes;
}

async function* single(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

async function* mapChunks(body: AsyncIterable<Uint8Array>, fix: (chunk: Uint8Array) => Uint8Array): AsyncIterable<Uint8Array> {
  for await (const c of body) yield fix(c);
}

/** gRPC: the status is in the trailer, complete once the body has ended. */
async function* thenFixTrailer(body: AsyncIterable<Uint8Array>, uRes: UniversalServerResponse): AsyncIterable<Uint8Array> {
  for await (const c of body) yield c;
  const t = uRes.trailer;
  if (t?.get("grpc-status") === INTERNAL && decodeURIComponent(t.get("grpc-message") ?? "").startsWith(PARSE_FAILURE)) t.set("grpc-status", INVALID);
}

/** One enveloped frame: flags, then a 4-byte big-endian length, then the payload; undefined unless the chunk is exactly that. */
function envelope(chunk: Uint8Array): { flags: number; payload: Uint8Array } | undefined {
  if (chunk.byteLength < 5) return undefined;
  const len = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength).getUint32(1);
  return len === chunk.byteLength - 5 ? { flags: chunk[0]!, payload: chunk.subarray(5) } : undefined;
}

function envelopeOf(flags: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + payload.byteLength);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, payload.byteLength);
  out.set(payload, 5);
  return out;
}

/** gRPC-Web: the trailers travel as the last frame (flag 0x80), `name: value` lines. */
function fixGrpcWebTrailer(chunk: Uint8Array): Uint8Array {
  const env = envelope(chunk);
  if (!env || (env.flags & 0x80) === 0) return chunk;
  const text = decoder.decode(env.payload);
  const message = /^grpc-message: (.*)$/im.exec(text)?.[1] ?? "";
  if (!/^grpc-status: 13\r?$/im.test(text) || !decodeURIComponent(message.trim()).startsWith(PARSE_FAILURE)) return chunk;
  return envelopeOf(env.flags, encoder.encode(text.replace(/^grpc-status: 13(\r?)$/im, `grpc-status: ${INVALID}$1`)));
}

/** Connect streaming: the end-of-stream frame (flag 0x02) holds `{"error": {"code", "message"}}`. */
function fixConnectEndStream(chunk: Uint8Array): Uint8Array {
  const env = envelope(chunk);
  if (!env || (env.flags & 0x02) === 0) return chunk;
  const end = parseJson(decoder.decode(env.payload)) as { error?: { code?: unknown; message?: unknown } } | undefined;
  const err = end?.error;
  if (err?.code !== "internal" || typeof err.message !== "string" || !err.message.startsWith(PARSE_FAILURE)) return chunk;
  return envelopeOf(env.flags, encoder.encode(JSON.stringify({ ...end, error: { ...err, code: "invalid_argument" } })));
}
