/** Canonical JSON: the one text of a value that the audit chain and approval evidence hash. */

/**
 * JSON with object keys sorted recursively (by UTF-16 code units) and dates as ISO strings with
 * milliseconds, so the text depends only on the value, not on key order (jsonb reorders keys).
 * Otherwise it follows JSON.stringify: undefined, functions and symbols are dropped from objects and
 * become null in arrays; non-finite numbers become null; bigints become decimal strings.
 */
export function canonicalJson(value: unknown): string {
  return encodeCanonical(value) ?? "null";
}

/** canonicalJson of one value; undefined where JSON.stringify would drop it. */
export function encodeCanonical(value: unknown): string | undefined {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "number":
      return Number.isFinite(value) ? JSON.stringify(value) : "null";
    case "boolean":
      return value ? "true" : "false";
    case "bigint":
      return JSON.stringify(value.toString());
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
  }
  if (value === null) return "null";
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new RangeError("canonicalJson: invalid Date");
    return JSON.stringify(value.toISOString());
  }
  if (Array.isArray(value)) return `[${value.map((v) => encodeCanonical(v) ?? "null").join(",")}]`;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") return encodeCanonical(toJSON.call(value));
  const obj = value as Record<string, unknown>;
  const parts: string[] = [];
  for (const key of Object.keys(obj).sort()) {
    const v = encodeCanonical(obj[key]);
    if (v !== undefined) parts.push(`${JSON.stringify(key)}:${v}`);
  }
  return `{${parts.join(",")}}`;
}
