/**
 * A small client of Loki's HTTP query API (/loki/api/v1/query_range and /query), following its
 * documented parameters: times as nanosecond epochs, limit, direction, step.
 */
import { SkillError } from "../../skill/errors.ts";
import { backend, getJson } from "./http.ts";

/** A log stream: its labels and [nanosecond epoch, line] pairs (a third element, structured metadata, when asked for). */
export interface LokiStream {
  stream: Record<string, string>;
  values: Array<[string, string, ...unknown[]]>;
}

/** What a query returned: streams for a log query, a matrix or vector for a metric query. */
export interface LokiData {
  resultType: "streams" | "matrix" | "vector" | "scalar";
  result: unknown;
  stats?: Record<string, unknown>;
}

/** Direction of a log query. */
export type LokiDirection = "backward" | "forward";

/** The client. */
export interface LokiClient {
  queryRange(q: { query: string; start: Date; end: Date; limit: number; direction: LokiDirection; stepSeconds?: number }, signal?: AbortSignal): Promise<LokiData>;
  query(q: { query: string; time: Date; limit: number; direction: LokiDirection }, signal?: AbortSignal): Promise<LokiData>;
}

const nanos = (d: Date) => (BigInt(d.getTime()) * 1_000_000n).toString();

/** Builds a client for `baseUrl` (empty: every call fails with not_configured). */
export function createLokiClient(opts: { baseUrl: string; timeoutMs: number }): LokiClient {
  const b = backend("Loki", opts.baseUrl, "observability.loki_url (ONGRID_LOKI_URL)", opts.timeoutMs);
  async function get(path: string, params: Record<string, string>, signal?: AbortSignal): Promise<LokiData> {
    const body = await getJson<{ status?: string; data?: LokiData; error?: string }>(b, path, params, { signal });
    if (body.status !== "success" || !body.data) throw new SkillError("upstream_error", `Loki answered without results: ${body.error ?? body.status ?? "no status"}`, "Retry later or check Loki's logs.");
    return body.data;
  }
  return {
    queryRange: (q, signal) =>
      get(
        "/loki/api/v1/query_range",
        { query: q.query, start: nanos(q.start), end: nanos(q.end), limit: String(q.limit), direction: q.direction, ...(q.stepSeconds ? { step: String(q.stepSeconds) } : {}) },
        signal,
      ),
    query: (q, signal) => get("/loki/api/v1/query", { query: q.query, time: nanos(q.time), limit: String(q.limit), direction: q.direction }, signal),
  };
}
