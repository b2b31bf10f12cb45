/** Time params the observability tools share: absolute or relative instants, steps, and a window with defaults. */
import { SkillError } from "../../../../skill/errors.ts";
import { calendarProblem } from "../../../incidents/time.ts";

/** How a time param is described to the model, in every tool's schema. */
export const TIME_HELP = "RFC 3339 (2025-01-31T10:00:00Z), unix seconds (1738317600), or relative to now: now, now-15m, now-2h, now-7d.";

/** JSON Schema of a time param. */
export function timeSchema(what: string): Record<string, unknown> {
  return { type: "string", minLength: 1, maxLength: 40, description: `${what} ${TIME_HELP}` };
}

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const RELATIVE = /^now(?:\s*-\s*(\d+(?:\.\d+)?)(ms|s|m|h|d|w))?$/;
const UNIX = /^\d{1,11}(?:\.\d{1,9})?$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$/i;
/** No instant before 1970 or after 9999: what the backends accept. */
const MAX_MS = Date.UTC(9999, 11, 31);

/** Parses one time param; `field` names it in the error. */
export function parseTime(value: string, field: string, now: Date = new Date()): Date {
  const text = value.trim();
  const rel = RELATIVE.exec(text);
  let ms: number;
  if (rel) ms = now.getTime() - (rel[1] ? Number(rel[1]) * UNIT_MS[rel[2]!]! : 0);
  else if (UNIX.test(text)) ms = Number(text) * 1000;
  else if (RFC3339.test(text)) {
    // Date would roll an impossible date over (2025-02-30 → March 2): refuse it, saying what is wrong.
    const impossible = calendarProblem(text);
    if (impossible) throw new SkillError("invalid_argument", `${field}: ${JSON.stringify(value.slice(0, 40))} is not a real date and time: ${impossible}`, `Write ${field} as ${TIME_HELP}`);
    ms = Date.parse(text.replace(" ", "T"));
  } else ms = Number.NaN;
  if (!Number.isFinite(ms) || ms < 0 || ms > MAX_MS) {
    throw new SkillError("invalid_argument", `${field}: ${JSON.stringify(value.slice(0, 40))} is not a time`, `Write ${field} as ${TIME_HELP}`);
  }
  return new Date(ms);
}

const STEP = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$/;

/** JSON Schema of a step param. */
export const STEP_SCHEMA = {
  type: "string",
  pattern: "^\\d+(\\.\\d+)?(ms|s|m|h|d|w)$",
  maxLength: 20,
  description: "Resolution of a range query: a duration such as 15s, 1m, 5m or 1h. Default: the range divided into about 250 points.",
};

/** A step param in seconds (at least 1 ms). */
export function parseStep(value: string, field = "step"): number {
  const m = STEP.exec(value.trim());
  const seconds = m ? (Number(m[1]) * UNIT_MS[m[2]!]!) / 1000 : Number.NaN;
  if (!(seconds >= 0.001)) throw new SkillError("invalid_argument", `${field}: ${JSON.stringify(value.slice(0, 20))} is not a positive duration`, "Write it as a number and a unit (ms, s, m, h, d, w), e.g. 30s or 5m.");
  return seconds;
}

/** A window from optional start/end params: end defaults to now, start to end minus `defaultSpanMs`; start must come first. */
export function parseWindow(params: { start?: string; end?: string }, defaultSpanMs: number, now: Date = new Date()): { start: Date; end: Date } {
  const end = params.end !== undefined ? parseTime(params.end, "end", now) : now;
  const start = params.start !== undefined ? parseTime(params.start, "start", now) : new Date(end.getTime() - defaultSpanMs);
  if (start.getTime() >= end.getTime()) {
    throw new SkillError("invalid_argument", `start (${start.toISOString()}) must be before end (${end.toISOString()})`, "Swap them, or give start as a relative time such as now-1h.");
  }
  return { start, end };
}

/** Unix seconds as an ISO timestamp, for outputs. */
export function isoOfSeconds(seconds: number): string {
  return new Date(seconds * 1000).toISOString();
}

/** A nanosecond epoch string (Loki, Tempo) as an ISO timestamp; "" when it is not one. */
export function isoOfNanos(nanos: string | number | undefined): string {
  if (nanos === undefined || nanos === "") return "";
  try {
    const ms = Number(BigInt(String(nanos)) / 1_000_000n);
    return Number.isFinite(ms) ? new Date(ms).toISOString() : "";
  } catch {
    return "";
  }
}
