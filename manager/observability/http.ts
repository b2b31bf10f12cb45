/**
 * One GET against an observability backend's HTTP API (Loki, Tempo): deadline, size cap, and
 * failures as SkillErrors a model can act on — not configured, unreachable, too slow, the
 * backend's refusal of the query in its own words (invalid_argument), not found, other errors.
 */
import { readCapped as readBody } from "../../skill/read-capped.ts";
import { SkillError } from "../../skill/errors.ts";

/** Largest answer read from a backend; more is refused (narrow the query) rather than held in memory. */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/** Which backend, for messages. */
export interface Backend {
  /** "Loki", "Tempo". */
  name: string;
  /** Base URL without a trailing slash; "" when not configured. */
  base: string;
  /** The config key and its environment variable, for the not_configured hint. */
  setting: string;
  timeoutMs: number;
}

/** A backend from its configured URL. */
export function backend(name: string, url: string, setting: string, timeoutMs: number): Backend {
  return { name, base: url.replace(/\/+$/, ""), setting, timeoutMs };
}

/** Reads at most `max` bytes of a backend's answer as text. */
export function readCapped(res: Response, max: number, b: Pick<Backend, "name" | "base">): Promise<string> {
  return readBody(res, max, () => new SkillError("upstream_error", `${b.name} at ${b.base} answered more than ${max} bytes`, "Narrow the query: a shorter range, a smaller limit, a more selective selector."));
}

/** The backend's own words from an error body: JSON {error|message} or plain text, on one line, cut to 500 characters. */
function reasonOf(text: string): string {
  let reason = text;
  try {
    const j = JSON.parse(text) as { error?: unknown; message?: unknown };
    if (typeof j.error === "string") reason = j.error;
    else if (typeof j.message === "string") reason = j.message;
  } catch {
    /* plain text, as Loki and Tempo usually answer */
  }
  reason = reason.replace(/\s+/g, " ").trim();
  return reason.length > 500 ? `${reason.slice(0, 500)}…` : reason || "no reason given";
}

/** GETs `path` with `params` and returns the parsed JSON; `onStatus` may turn a status (e.g. 404) into its own error first. */
export async function getJson<T>(b: Backend, path: string, params: Record<string, string>, opts: { signal?: AbortSignal; onStatus?: (status: number, reason: string) => void } = {}): Promise<T> {
  if (!b.base) throw new SkillError("not_configured", `no ${b.name} is configured`, `Set ${b.setting} on the manager.`);
  const query = new URLSearchParams(params).toString();
  const url = `${b.base}${path}${query ? `?${query}` : ""}`;
  const timeout = AbortSignal.timeout(b.timeoutMs);
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, { signal: opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout, headers: { accept: "application/json" } });
    text = await readCapped(res, MAX_ANSWER_BYTES, b);
  } catch (err) {
    if (err instanceof SkillError) throw err;
    if (timeout.aborted) throw new SkillError("timeout", `${b.name} at ${b.base} did not answer within ${b.timeoutMs} ms`, "Narrow the query (shorter range, smaller limit) or check the backend's load.");
    throw new SkillError("upstream_unavailable", `cannot reach ${b.name} at ${b.base}: ${(err as Error).message}`, `Check ${b.setting} and that ${b.name} runs.`);
  }
  if (!res.ok) {
    const reason = reasonOf(text);
    opts.onStatus?.(res.status, reason);
    if (res.status === 400 || res.status === 422) throw new SkillError("invalid_argument", `${b.name} refused the query: ${reason}`, `Fix the query (${b.name}'s message names the problem).`);
    throw new SkillError("upstream_error", `${b.name} answered HTTP ${res.status}: ${reason}`, "Retry later or check the backend's logs.");
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new SkillError("upstream_error", `${b.name} at ${b.base} answered HTTP ${res.status} without JSON`, `Check that ${b.setting} points at ${b.name}'s HTTP API.`);
  }
}
