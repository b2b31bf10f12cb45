/** query_promql (K3): a PromQL instant or range query against the configured Prometheus, condensed for a model. */
import { SkillError } from "../../../../skill/errors.ts";
import { parseDuration } from "../../../../skill/duration.ts";
import { createPrometheusClient } from "../../../observability/prometheus.ts";
import { defineBaseTool } from "../../define.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { condenseResult } from "./series.ts";
import { STEP_SCHEMA, parseStep, parseTime, timeSchema } from "./time.ts";

/** Prometheus refuses a range query whose (end − start) / step is more than this; so do we, before asking. */
export const MAX_RANGE_POINTS = 11_000;
/** A range without a step is cut into about this many points. */
const AUTO_POINTS = 250;

interface Params {
  expr: string;
  time?: string;
  start?: string;
  end?: string;
  step?: string;
  limit: number;
}

/**
 * The step for a range: the given one, or range / 250 rounded up to whole seconds. Refused, as
 * Prometheus refuses it, when (end − start) / step is more than 11,000 — exactly 11,000 steps is
 * allowed. Compared in integers (milliseconds of range against microseconds of step), so a step
 * such as 0.1s is not refused over a floating-point rounding; the hint names the least
 * whole-second step that fits, ceil(range / 11,000).
 */
export function rangeStep(start: Date, end: Date, step: string | undefined): number {
  const rangeMs = end.getTime() - start.getTime();
  const rangeSeconds = rangeMs / 1000;
  const seconds = step !== undefined ? parseStep(step) : Math.max(1, Math.ceil(rangeSeconds / AUTO_POINTS));
  // Steps are at least 1 ms and written with decimals, so whole microseconds hold them exactly.
  const stepUs = Math.round(seconds * 1_000_000);
  if (rangeMs * 1000 > MAX_RANGE_POINTS * stepUs) {
    const least = Math.ceil(rangeMs / (MAX_RANGE_POINTS * 1000));
    throw new SkillError(
      "invalid_argument",
      `exceeded maximum resolution of 11,000 points per timeseries: a ${rangeSeconds}s range at step ${seconds}s is ${Math.floor((rangeMs * 1000) / stepUs)} steps, more than 11,000`,
      `Use a step of at least ${least}s, or a shorter range.`,
    );
  }
  return seconds;
}

/** Builds query_promql over the manager's Prometheus settings. */
export function createQueryPromql(deps: Pick<BaseToolDeps, "config">) {
  const { prometheus_url, timeout } = deps.config.observability;
  const prometheus = createPrometheusClient({ baseUrl: prometheus_url, timeoutMs: parseDuration(timeout) });
  return defineBaseTool<Params>({
    key: "query_promql",
    name: "Query Prometheus (PromQL)",
    description:
      "Run a PromQL query against the configured Prometheus: an instant query (optionally at `time`), or a range query when `start` is given (with `end` and `step`). Use when a diagnosis needs metrics beyond one host's snapshot: error rates, latency quantiles, saturation over time, or the manager's own ongrid_* series. Range results come with min/max/avg/first/last per series; a range may have at most 11,000 steps ((end - start) / step), as in Prometheus.",
    class: "safe",
    category: "observability",
    schema: {
      type: "object",
      additionalProperties: false,
      required: ["expr"],
      properties: {
        expr: { type: "string", minLength: 1, maxLength: 4000, description: 'The PromQL expression, e.g. sum by (job) (rate(http_requests_total{code=~"5.."}[5m])).' },
        time: timeSchema("Evaluation time of an instant query (default now); not with start/end/step."),
        start: timeSchema("Start of a range query; giving it makes the query a range query."),
        end: timeSchema("End of a range query (default now)."),
        step: STEP_SCHEMA,
        limit: { type: "integer", minimum: 1, maximum: 500, default: 50, description: "At most this many series are returned (the count of all is reported)." },
      },
    },
    resultPreview: {
      expr: 'sum by (job) (up{job="node"})',
      kind: "instant",
      time: "2025-01-31T10:00:00.000Z",
      result_type: "vector",
      series_total: 1,
      series_returned: 1,
      series: [{ metric: { job: "node" }, value: 3, at: "2025-01-31T10:00:00.000Z" }],
    },
    async execute(ctx, p) {
      const now = new Date();
      if (p.start === undefined) {
        if (p.end !== undefined || p.step !== undefined) throw new SkillError("invalid_argument", "end and step belong to a range query, which needs start", "Give start (e.g. now-1h) for a range query, or drop end/step for an instant query.");
        const time = p.time !== undefined ? parseTime(p.time, "time", now) : undefined;
        const data = await prometheus.query(p.expr, { time, signal: ctx.signal });
        return { expr: p.expr, kind: "instant", time: (time ?? now).toISOString(), ...condenseResult(data, p.limit) };
      }
      if (p.time !== undefined) throw new SkillError("invalid_argument", "time is for an instant query; a range query takes start, end and step", "Give either time, or start (with end and step).");
      const start = parseTime(p.start, "start", now);
      const end = p.end !== undefined ? parseTime(p.end, "end", now) : now;
      if (start.getTime() >= end.getTime()) throw new SkillError("invalid_argument", `start (${start.toISOString()}) must be before end (${end.toISOString()})`, "Swap them, or give start as a relative time such as now-1h.");
      const step = rangeStep(start, end, p.step);
      const data = await prometheus.queryRange(p.expr, start, end, step, { signal: ctx.signal });
      return { expr: p.expr, kind: "range", start: start.toISOString(), end: end.toISOString(), step_seconds: step, ...condenseResult(data, p.limit) };
    },
  });
}
