/**
 * Time params of the incident tools: what the observability tools accept (RFC 3339, unix seconds,
 * now, now-15m — manager/skills/base/observability/time.ts) plus a bare duration back from now (30m, 7d).
 */
import { SkillError } from "../../../../skill/errors.ts";
import { parseTime, TIME_HELP } from "../observability/time.ts";

/** The JSON Schema of such a param (the description names the param's meaning). */
export function whenSchema(description: string): Record<string, unknown> {
  return { type: "string", minLength: 1, maxLength: 40, description: `${description} ${TIME_HELP} A bare duration (30m, 2h, 7d) means that long ago.` };
}

const BARE = /^\d+(?:\.\d+)?(?:ms|s|m|h|d|w)$/;

/** Turns a time param into a Date; refuses anything else naming the param. */
export function parseWhen(value: string, param: string, now = new Date()): Date {
  const v = value.trim();
  try {
    return parseTime(BARE.test(v) ? `now-${v}` : v, param, now);
  } catch {
    throw new SkillError("invalid_argument", `param "${param}": ${JSON.stringify(v.slice(0, 40))} is neither a time nor a duration back from now`, `Write e.g. "30m", "now-2h", "7d" or "2026-01-31T14:00:00Z" (${TIME_HELP})`);
  }
}

/** A [since, until] window from two optional params, checked to be in order. */
export function parseWindow(p: { since?: string; until?: string }, defaultSince: string, now = new Date()): { since: Date; until: Date } {
  const since = parseWhen(p.since ?? defaultSince, "since", now);
  const until = p.until ? parseWhen(p.until, "until", now) : now;
  if (since.getTime() > until.getTime()) throw new SkillError("invalid_argument", `param "since": ${since.toISOString()} is after until (${until.toISOString()})`, "Give since before until.");
  return { since, until };
}
