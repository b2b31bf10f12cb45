/**
 * A small client of the Prometheus HTTP API (/api/v1/query, /query_range, /rules, /alerts):
 * what query_promql, query_alert_rules and correlate_incident share. Failures are SkillErrors the
 * model can act on: not configured, unreachable, a refused query (with Prometheus's own words).
 */
import { SkillError } from "../../skill/errors.ts";
import { MAX_ANSWER_BYTES, readCapped } from "./http.ts";

/** One series of an instant or range result. */
export interface PromSeries {
  metric: Record<string, string>;
  /** Instant query: one [unix seconds, value]. */
  value?: [number, string];
  /** Range query: [unix seconds, value] pairs. */
  values?: Array<[number, string]>;
}

/** An instant or range result. */
export interface PromResult {
  resultType: "vector" | "matrix" | "scalar" | "string";
  result: PromSeries[] | [number, string];
}

/** The client. */
export interface PrometheusClient {
  query(expr: string, opts?: { time?: Date; signal?: AbortSignal }): Promise<PromResult>;
  queryRange(expr: string, start: Date, end: Date, stepSeconds: number, opts?: { signal?: AbortSignal }): Promise<PromResult>;
  /** /api/v1/rules: groups of alerting and recording rules with their state. */
  rules(opts?: { type?: "alert" | "record"; signal?: AbortSignal }): Promise<{ groups: Array<Record<string, unknown>> }>;
  /** /api/v1/alerts: the active alerts. */
  alerts(opts?: { signal?: AbortSignal }): Promise<{ alerts: Array<Record<string, unknown>> }>;
}

/** Builds a client for `baseUrl` (empty: every call fails with not_configured). */
export function createPrometheusClient(opts: { baseUrl: string; timeoutMs: number }): PrometheusClient {
  const base = opts.baseUrl.replace(/\/+$/, "");
  async function get<T>(path: string, params: Record<string, string>, signal?: AbortSignal): Promise<T> {
    if (!base) throw new SkillError("not_configured", "no Prometheus is configured", "Set observability.prometheus_url (ONGRID_PROMETHEUS_URL) on the manager.");
    const url = `${base}${path}?${new URLSearchParams(params)}`;
    const timeout = AbortSignal.timeout(opts.timeoutMs);
    let res: Response;
    try {
      res = await fetch(url, { signal: signal ? AbortSignal.any([signal, timeout]) : timeout, headers: { accept: "application/json" } });
    } catch (err) {
      if (timeout.aborted) throw new SkillError("timeout", `Prometheus at ${base} did not answer within ${opts.timeoutMs} ms`, "Narrow the query (shorter range, larger step) or check Prometheus's load.");
      throw new SkillError("upstream_unavailable", `cannot reach Prometheus at ${base}: ${(err as Error).message}`, "Check observability.prometheus_url and that Prometheus runs.");
    }
    // Capped: a matrix of many series over a long range must not be held in memory whole.
    let text: string;
    try {
      text = await readCapped(res, MAX_ANSWER_BYTES, { name: "Prometheus", base });
    } catch (err) {
      if (err instanceof SkillError) throw err;
      if (timeout.aborted) throw new SkillError("timeout", `Prometheus at ${base} did not finish its answer within ${opts.timeoutMs} ms`, "Narrow the query (shorter range, larger step) or check Prometheus's load.");
      throw new SkillError("upstream_unavailable", `lost Prometheus at ${base} while reading its answer: ${(err as Error).message}`, "Retry; check that Prometheus runs.");
    }
    let body: { status?: string; data?: T; errorType?: string; error?: string };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      throw new SkillError("upstream_error", `Prometheus at ${base} answered HTTP ${res.status} without JSON`, "Check that observability.prometheus_url points at Prometheus's HTTP API.");
    }
    if (body.status !== "success") {
      const bad = body.errorType === "bad_data" || res.status === 400 || res.status === 422;
      throw new SkillError(bad ? "invalid_argument" : "upstream_error", `Prometheus refused the request: ${body.errorType ?? res.status}: ${body.error ?? "no reason given"}`, bad ? "Fix the PromQL expression (Prometheus's message names the problem)." : "Retry later or check Prometheus's logs.");
    }
    return body.data as T;
  }
  const unix = (d: Date) => String(d.getTime() / 1000);
  return {
    query: (expr, o = {}) => get<PromResult>("/api/v1/query", { query: expr, ...(o.time ? { time: unix(o.time) } : {}) }, o.signal),
    queryRange: (expr, start, end, step, o = {}) => get<PromResult>("/api/v1/query_range", { query: expr, start: unix(start), end: unix(end), step: String(step) }, o.signal),
    rules: (o = {}) => get("/api/v1/rules", o.type ? { type: o.type } : {}, o.signal),
    alerts: (o = {}) => get("/api/v1/alerts", {}, o.signal),
  };
}
