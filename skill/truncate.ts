import { OngridError } from "./errors.ts";

/** Start of the marker appended to cut output: `\n…[truncated: N of M bytes shown]`. */
export const TRUNCATION_MARKER_PREFIX = "\n…[truncated: ";

/** Output after the size cap: the value itself, or a cut string with a marker. */
export interface TruncatedOutput {
  output: unknown;
  truncated: boolean;
}

/**
 * Caps what a skill returns so one call cannot flood the model's context or the audit log (A5).
 *
 * Rule: the size of a value is the UTF-8 byte length of its JSON serialisation. A value of at
 * most `capBytes` is returned unchanged (`truncated: false`). Otherwise the text to cut is the
 * string itself (for a string) or its JSON text (for anything else); it is cut on a character
 * boundary and `\n…[truncated: N of M bytes shown]` is appended, where N and M are the UTF-8
 * byte lengths of the kept and the full text. The kept part is the longest prefix for which the
 * JSON serialisation of the result (kept + marker) is at most `capBytes`; when the cap cannot
 * hold even the marker, nothing is kept and the result is the marker alone, so the result never
 * exceeds the cap by more than the marker's length. `capBytes = Infinity` disables the cap; a
 * cap that is not > 0 is refused.
 */
export function truncateOutput(output: unknown, capBytes: number): TruncatedOutput {
  if (!(capBytes > 0)) {
    throw new OngridError("invalid_argument", `output cap must be a positive number of bytes, got ${capBytes}`, "Configure a positive output cap.");
  }
  if (capBytes === Infinity || output === undefined) return { output, truncated: false };
  const json = toJson(output);
  if (json === undefined || Buffer.byteLength(json, "utf8") <= capBytes) return { output, truncated: false };

  const text = typeof output === "string" ? output : json;
  const total = Buffer.byteLength(text, "utf8");
  // N <= M, so the marker with N = M is the longest it can be.
  const budget = Math.floor(capBytes) - 2 - jsonBytes(marker(total, total));
  let used = 0;
  let kept = 0; // UTF-16 index
  let keptBytes = 0; // UTF-8 bytes
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    const cost = escapedBytes(cp);
    if (used + cost > budget) break;
    used += cost;
    kept += ch.length;
    keptBytes += utf8Bytes(cp);
  }
  return { output: text.slice(0, kept) + marker(keptBytes, total), truncated: true };
}

function marker(shown: number, total: number): string {
  return `${TRUNCATION_MARKER_PREFIX}${shown} of ${total} bytes shown]`;
}

/** Bytes a code point takes inside a JSON string literal (JSON.stringify escaping, UTF-8). */
function escapedBytes(cp: number): number {
  if (cp === 0x22 || cp === 0x5c) return 2;
  if (cp === 0x08 || cp === 0x09 || cp === 0x0a || cp === 0x0c || cp === 0x0d) return 2;
  if (cp < 0x20) return 6;
  if (cp >= 0xd800 && cp <= 0xdfff) return 6; // lone surrogate → \udXXX
  return utf8Bytes(cp);
}

function utf8Bytes(cp: number): number {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

function jsonBytes(s: string): number {
  let n = 0;
  for (const ch of s) n += escapedBytes(ch.codePointAt(0)!);
  return n;
}

function toJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
  } catch {
    return JSON.stringify(String(value));
  }
}
