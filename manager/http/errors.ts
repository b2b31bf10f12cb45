/**
 * The one place internal error codes become HTTP statuses for the plain-HTTP routes on the
 * manager's port (/metrics, the webhooks), as rpc/errors.ts is for Connect/gRPC codes. A refused
 * request answers a JSON {code, message, hint?}; a caller never sees a stack.
 */
import { OngridError, type ErrorCode } from "../../skill/errors.ts";
import type { HttpRoute } from "./route.ts";

type Res = Parameters<HttpRoute>[1];

/**
 * Status of each code. The codes no route refuses with on purpose answer 500, as the webhooks did
 * before this table was shared: a conflict, a precondition or a database that did not answer is
 * the manager's trouble, not a fault in the request the sender could fix by changing it.
 */
const STATUS: Record<ErrorCode, number> = {
  invalid_argument: 400,
  unauthenticated: 401,
  permission_denied: 403,
  not_found: 404,
  resource_exhausted: 413,
  already_exists: 500,
  failed_precondition: 500,
  deadline_exceeded: 500,
  cancelled: 500,
  unavailable: 500,
  internal: 500,
};

/**
 * A refusal whose status is the protocol's, not its code's: 405 for a method a route does not
 * serve (the code says invalid_argument, the status says which rule of HTTP was broken).
 */
export class HttpError extends OngridError {
  readonly status: number;
  constructor(status: number, code: ErrorCode, message: string, hint = "") {
    super(code, message, hint);
    this.status = status;
  }
}

/** The HTTP status of an error's code (an HttpError carries its own). */
export function httpStatus(err: OngridError): number {
  return err instanceof HttpError ? err.status : STATUS[err.code] ?? 500;
}

/** The body a refused request reads: its code, message and, when there is one, its hint. */
export function errorBody(err: OngridError): { code: ErrorCode; message: string; hint?: string } {
  return { code: err.code, message: err.message, ...(err.hint ? { hint: err.hint } : {}) };
}

/** Answers JSON with `status`; a response already started is only ended (its status is on the wire). */
export function sendJson(res: Res, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(`${JSON.stringify(body)}\n`);
}
