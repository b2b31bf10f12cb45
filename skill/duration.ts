import { OngridError } from "./errors.ts";

const N = "\\d+(?:\\.\\d+)?";

/**
 * Anchored pattern of a duration string ("500ms", "30s", "5m", "1h30m", "2.5s"), shared by
 * parseDuration and the JSON Schema of duration params so both accept exactly the same text.
 * Units come in descending order (h, m, s, ms), each at most once; a bare number is refused.
 * No look-arounds or back-references, so other regex engines (RE2, Python) accept it too.
 */
export const DURATION_PATTERN =
  `^(?:${N}h(?:${N}m)?(?:${N}s)?(?:${N}ms)?|${N}m(?:${N}s)?(?:${N}ms)?|${N}s(?:${N}ms)?|${N}ms)$`;

const DURATION_RE = new RegExp(DURATION_PATTERN, "u");
const PART_RE = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
const UNIT_MS: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };

/** Turns a duration param into milliseconds (rounded), so executors never parse units themselves. */
export function parseDuration(input: string): number {
  if (typeof input !== "string" || input.length > 64 || !DURATION_RE.test(input)) {
    const shown = typeof input === "string" ? JSON.stringify(input.slice(0, 64)) : typeof input;
    throw new OngridError(
      "invalid_argument",
      `invalid duration ${shown}: expected numbers with units h, m, s or ms in that order, e.g. "500ms", "30s", "2.5s", "1h30m"`,
      'Write the duration as digits followed by a unit, without spaces, e.g. "90s" or "1m30s".',
    );
  }
  let ms = 0;
  for (const [, amount, unit] of input.matchAll(PART_RE)) ms += Number(amount) * UNIT_MS[unit];
  const rounded = Math.round(ms);
  if (!Number.isSafeInteger(rounded)) {
    throw new OngridError("invalid_argument", `invalid duration ${JSON.stringify(input)}: too large`, "Use a shorter duration.");
  }
  return rounded;
}

/** Renders milliseconds back as the largest exact duration text, for messages about duration bounds. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return `${ms}ms`;
  let rest = Math.round(ms);
  if (rest === 0) return "0s";
  let out = "";
  for (const [unit, size] of [["h", 3_600_000], ["m", 60_000], ["s", 1_000], ["ms", 1]] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) {
      out += `${n}${unit}`;
      rest -= n * size;
    }
  }
  return out;
}
