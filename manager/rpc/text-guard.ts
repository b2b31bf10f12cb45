/**
 * Refuses request text that no store can hold and no person can read the same way (A4): a NUL
 * byte or a lone UTF-16 surrogate in any string of a request (ids, keys, params, comments) is
 * invalid_argument naming the field, before any service runs, instead of an `internal` from the
 * database later. Runs after authentication, so it reveals nothing to an anonymous caller.
 */
import type { Interceptor } from "@connectrpc/connect";
import { OngridError } from "../../skill/errors.ts";

/** A lone surrogate: a high one not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const MAX_DEPTH = 200;

/** Fields that name something (ids, keys): U+FFFD there is what the decoder left of invalid UTF-8. */
const ID_FIELD = /(^|[a-z])(id|Id|ids|Ids|key|Key)$/;

/** The path and the problem of the first bad string under `v`, or undefined. */
export function badText(v: unknown, path = "", depth = 0): { path: string; problem: string } | undefined {
  if (typeof v === "string") {
    if (v.includes("\0")) return { path, problem: "holds a NUL byte" };
    if (LONE_SURROGATE.test(v)) return { path, problem: "is not valid UTF-8 text (a lone surrogate)" };
    if (v.includes("\uFFFD") && ID_FIELD.test(path.split(/[.[]/).filter(Boolean).pop() ?? "")) return { path, problem: "is not valid UTF-8 text (the request held bytes that are not UTF-8)" };
    return undefined;
  }
  if (v === null || typeof v !== "object" || depth > MAX_DEPTH || v instanceof Uint8Array) return undefined;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const bad = badText(v[i], `${path}[${i}]`, depth + 1);
      if (bad) return bad;
    }
    return undefined;
  }
  for (const [k, item] of Object.entries(v)) {
    if (k === "$typeName") continue;
    const keyBad = badText(k, `${path ? `${path}.` : ""}${k}`, depth + 1);
    if (keyBad) return { ...keyBad, problem: `has a key that ${keyBad.problem}` };
    const bad = badText(item, path ? `${path}.${k}` : k, depth + 1);
    if (bad) return bad;
  }
  return undefined;
}

/** A message path without protobuf's Struct/Value/oneof plumbing: input.value.fields.query.kind.value → input.query. */
function shownPath(path: string): string {
  return path.split(".").filter((seg) => !["fields", "kind", "value", "values", "structValue", "listValue", "stringValue"].includes(seg)).join(".") || "request";
}

/** The interceptor; unary and client-streaming requests are checked message by message. */
export const textGuard: Interceptor = (next) => async (req) => {
  if (!req.stream) {
    const bad = badText((req as { message?: unknown }).message);
    if (bad) throw new OngridError("invalid_argument", `field "${shownPath(bad.path)}" ${bad.problem} (rule: text)`, "send plain text: NUL bytes and broken UTF-8 are refused");
  }
  return next(req);
};
