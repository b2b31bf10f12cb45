/** The one place internal error codes become Connect/gRPC codes; callers never see a stack. */
import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "pino";
import { OngridError, type ErrorCode } from "../../skill/errors.ts";
import { redactString } from "../../skill/redact.ts";

const CODES: Record<ErrorCode, Code> = {
  invalid_argument: Code.InvalidArgument,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  permission_denied: Code.PermissionDenied,
  unauthenticated: Code.Unauthenticated,
  failed_precondition: Code.FailedPrecondition,
  deadline_exceeded: Code.DeadlineExceeded,
  cancelled: Code.Canceled,
  unavailable: Code.Unavailable,
  resource_exhausted: Code.ResourceExhausted,
  internal: Code.Internal,
};

/** Maps any thrown value to a ConnectError; unexpected errors are logged and answered without detail. */
export function toConnectError(err: unknown, log?: Logger): ConnectError {
  if (err instanceof ConnectError) return err;
  if (err instanceof OngridError) {
    const message = err.hint ? `${err.message} (hint: ${err.hint})` : err.message;
    const ce = new ConnectError(message, CODES[err.code]);
    const seq = (err as { auditSeq?: number }).auditSeq;
    if (seq !== undefined) ce.metadata.set("ongrid-audit-seq", String(seq));
    return ce;
  }
  const e = err as Error;
  log?.error({ err: { message: redactString(String(e?.message ?? err)), stack: redactString(String(e?.stack ?? "")) } }, "unexpected error in RPC handler");
  return new ConnectError("internal error; see the manager log", Code.Internal);
}
