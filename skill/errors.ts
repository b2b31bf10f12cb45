/** One internal error type with a closed set of codes; the manager maps them to Connect codes in one place. */
export type ErrorCode =
  | "invalid_argument"
  | "not_found"
  | "already_exists"
  | "permission_denied"
  | "unauthenticated"
  | "failed_precondition"
  | "deadline_exceeded"
  | "cancelled"
  | "unavailable"
  | "resource_exhausted"
  | "internal";

/** An error whose message says what was wrong and whose hint says what to do. */
export class OngridError extends Error {
  readonly code: ErrorCode;
  readonly hint: string;
  constructor(code: ErrorCode, message: string, hint = "") {
    super(message);
    this.name = "OngridError";
    this.code = code;
    this.hint = hint;
  }
}

/**
 * Thrown by an executor to fail with a code the model can act on
 * (e.g. "upstream_unavailable", "not_configured"); becomes `error` in the envelope.
 */
export class SkillError extends Error {
  readonly code: string;
  readonly hint: string;
  /**
   * What the failed call still has to show (a command's exit code, stdout and stderr): kept as the
   * envelope's output beside the error, redacted and capped like any output.
   */
  readonly output?: unknown;
  constructor(code: string, message: string, hint = "", output?: unknown) {
    super(message);
    this.name = "SkillError";
    this.code = code;
    this.hint = hint;
    if (output !== undefined) this.output = output;
  }
}
