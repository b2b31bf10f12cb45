/**
 * Audits ExecuteSkill requests that fail before they reach the service (a body that is not
 * valid JSON/protobuf, a body over server.max_request_bytes): the request is refused by the
 * protocol layer, and this wrapper writes the audit row that the dispatcher never saw.
 */
import type http from "node:http";
import type http2 from "node:http2";
import { createContextKey, createContextValues, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";
import { createRefusalThrottle } from "../audit/throttle.ts";
import { auditRecord, type AuditLog } from "../audit/types.ts";
import type { DualHandler } from "./listen.ts";
import { kPeerAddress } from "../identity/caller.ts";

const CAPTURE_BYTES = 8192;

interface RequestState {
  decoded: boolean;
}

const states = new WeakMap<object, RequestState>();
const kState = createContextKey<RequestState | undefined>(undefined, { description: "ongrid request state" });

/** Connect contextValues hook: links the node request to the handler context, with the peer's address. */
export function requestContextValues(req: object) {
  const values = createContextValues();
  values.set(kState, states.get(req));
  values.set(kPeerAddress, (req as { socket?: { remoteAddress?: string } }).socket?.remoteAddress ?? "");
  return values;
}

/** The same for a call served off its HTTP/2 stream (grpc-unary.ts), which audits its own refusals. */
export function streamContextValues(stream: { session?: { socket?: { remoteAddress?: string } } }) {
  const values = createContextValues();
  values.set(kPeerAddress, stream.session?.socket?.remoteAddress ?? "");
  return values;
}

/** Interceptor marking the request as decoded: from here on the dispatcher audits it. */
export const markDecoded: Interceptor = (next) => async (req) => {
  const state = req.contextValues.get(kState);
  if (state) state.decoded = true;
  return next(req);
};

/** The path of the one RPC whose refusals before decoding are audited. */
const EXECUTE_PATH_AUDITED = "/ongrid.v1.SkillService/ExecuteSkill";

const GRPC_CODE_NAMES: Record<string, string> = { "3": "invalid_argument", "8": "resource_exhausted", "12": "unimplemented", "16": "unauthenticated" };
const EXPLANATIONS: Record<string, string> = {
  invalid_argument: "the request body could not be decoded",
  resource_exhausted: "the request body exceeds server.max_request_bytes",
};

/**
 * The refusal's code, with a fixed explanation: decoder messages quote the body around the fault
 * (possibly part of a secret), so they are not copied into the audit row.
 */
function refusalFromResponse(res: http.ServerResponse | http2.Http2ServerResponse, body: string): string {
  let code: string | undefined;
  const grpcStatus = res.getHeader("grpc-status") ?? (res as { _trailers?: Record<string, string> })._trailers?.["grpc-status"];
  if (grpcStatus !== undefined) code = GRPC_CODE_NAMES[String(grpcStatus)] ?? `grpc-status ${grpcStatus}`;
  else {
    try {
      code = (JSON.parse(body) as { code?: string }).code;
    } catch {
      /* not a Connect JSON error body */
    }
  }
  return refusalText(code ?? `http ${res.statusCode}`);
}

function refusalText(code: string): string {
  return `${code}: ${EXPLANATIONS[code] ?? "the request was refused before it was decoded"}`;
}

/**
 * For a call served off its stream (grpc-unary.ts) and refused before it was decoded: writes the
 * audit row, with its gRPC status code, when the call is an ExecuteSkill (as auditUndecoded does).
 */
export function auditUndecodable(audit: AuditLog, log: Logger, path: string, startedAt: Date, grpcCode: number): void {
  if (path !== EXECUTE_PATH_AUDITED) return;
  appendRefusal(audit, log, startedAt, refusalText(GRPC_CODE_NAMES[String(grpcCode)] ?? `grpc-status ${grpcCode}`));
}

/** One row per refusal reason and 10 s; the rest are counted into the next row (a flood of abandoned streams must not fill the chain). */
const throttle = createRefusalThrottle();

function appendRefusal(audit: AuditLog, log: Logger, startedAt: Date, error: string): void {
  const verdict = throttle.admit(error);
  if (!verdict.write) return;
  audit
    .append(
      auditRecord({
        toolName: "",
        error: `undecodable request: ${error}`,
        ...(verdict.suppressed ? { args: { suppressed_since_last_row: verdict.suppressed } } : {}),
        startedAt,
        callerUserId: "anonymous",
        callerRole: "anonymous",
        decision: "",
        decisionReason: "",
      }),
    )
    .catch((err) => log.error({ err }, "could not audit a refused ExecuteSkill request"));
}

/** Wraps the RPC handler so refused-before-decoding ExecuteSkill requests are audited too. */
export function auditUndecoded(handler: DualHandler, audit: AuditLog, log: Logger): DualHandler {
  return (req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (req.method !== "POST" || path !== EXECUTE_PATH_AUDITED) return handler(req, res);
    const startedAt = new Date();
    const state: RequestState = { decoded: false };
    states.set(req, state);
    const chunks: Buffer[] = [];
    let captured = 0;
    const origWrite = res.write.bind(res) as (...a: unknown[]) => boolean;
    (res as { write: unknown }).write = (chunk: unknown, ...rest: unknown[]) => {
      if (captured < CAPTURE_BYTES && chunk) {
        const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
        chunks.push(b);
        captured += b.length;
      }
      return origWrite(chunk, ...rest);
    };
    const origEnd = res.end.bind(res) as (...a: unknown[]) => unknown;
    (res as { end: unknown }).end = (chunk?: unknown, ...rest: unknown[]) => {
      if (chunk && typeof chunk !== "function" && captured < CAPTURE_BYTES) {
        chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
      }
      return origEnd(chunk, ...rest);
    };
    const origAddTrailers = (res as { addTrailers?: (h: Record<string, string>) => void }).addTrailers?.bind(res);
    if (origAddTrailers) {
      (res as { addTrailers: unknown }).addTrailers = (h: Record<string, string>) => {
        (res as { _trailers?: Record<string, string> })._trailers = h;
        return origAddTrailers(h);
      };
    }
    res.once("close", () => {
      if (state.decoded) return;
      appendRefusal(audit, log, startedAt, refusalFromResponse(res, Buffer.concat(chunks).toString("utf8")));
    });
    return handler(req, res);
  };
}
