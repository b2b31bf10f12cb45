/**
 * The plain-HTTP error map (errors.ts): it answers, for every error code, what the webhooks
 * answered with their own table before it was shared (issue 27), and a refusal's body is
 * {code, message, hint?}.
 */
import { describe, expect, it } from "vitest";
import { OngridError, type ErrorCode } from "../../skill/errors.ts";
import { errorBody, HttpError, httpStatus } from "./errors.ts";

/** Every code, checked complete by the compiler: a new code fails this file until it is listed here. */
const CODES = Object.keys({
  invalid_argument: 1,
  not_found: 1,
  already_exists: 1,
  permission_denied: 1,
  unauthenticated: 1,
  failed_precondition: 1,
  deadline_exceeded: 1,
  cancelled: 1,
  unavailable: 1,
  resource_exhausted: 1,
  internal: 1,
} satisfies Record<ErrorCode, 1>) as ErrorCode[];

/** hooks.ts's table before the map was shared, as it was: a code it did not list answered 500. */
const HOOKS_BEFORE: Record<string, number> = {
  invalid_argument: 400,
  unauthenticated: 401,
  permission_denied: 403,
  not_found: 404,
  method_not_allowed: 405,
  resource_exhausted: 413,
  unsupported_media_type: 415,
};

describe("httpStatus", () => {
  it.each(CODES)("%s answers what the webhooks answered before", (code) => {
    expect(httpStatus(new OngridError(code, "m"))).toBe(HOOKS_BEFORE[code] ?? 500);
  });

  it("names the statuses of the codes the routes refuse with", () => {
    expect(Object.fromEntries(CODES.map((c) => [c, httpStatus(new OngridError(c, "m"))]))).toEqual({
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
    });
  });

  it("keeps the status of an HttpError (405 for a method a route does not serve), whatever its code", () => {
    expect(httpStatus(new HttpError(405, "invalid_argument", "method: GET is not allowed (rule: POST)"))).toBe(405);
    expect(new HttpError(405, "invalid_argument", "m")).toBeInstanceOf(OngridError);
  });
});

describe("errorBody", () => {
  it("is the code, the message and the hint, without an empty hint", () => {
    expect(errorBody(new OngridError("not_found", "no such thing", "look elsewhere"))).toEqual({ code: "not_found", message: "no such thing", hint: "look elsewhere" });
    expect(errorBody(new OngridError("invalid_argument", "bad"))).toEqual({ code: "invalid_argument", message: "bad" });
  });
});
