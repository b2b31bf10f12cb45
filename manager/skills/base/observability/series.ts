/**
 * Condenses Prometheus-shaped results (PromQL, and LogQL metric queries, which Loki answers in the
 * same shape) for a model: values as numbers, a series cap, a per-series point cap, and min / max /
 * avg / first / last over every point so a cut does not hide a spike.
 */
import type { PromSeries } from "../../../observability/prometheus.ts";
import { isoOfSeconds } from "./time.ts";

/** Points kept per series of a range result; the summary still covers all of them. */
export const MAX_POINTS = 300;
/** Points kept over all series of a range result (so the output stays under the output cap): many series get fewer each. */
export const MAX_TOTAL_POINTS = 2000;
const MIN_POINTS = 10;

/** A sample value: a number when finite, else Prometheus's text ("NaN", "+Inf"). */
export function sampleValue(v: string): number | string {
  const n = Number(v);
  return Number.isFinite(n) ? n : v;
}

/** One condensed instant sample. */
export interface InstantSample {
  metric: Record<string, string>;
  value: number | string;
  at: string;
}

/** One condensed range series. */
export interface RangeSeries {
  metric: Record<string, string>;
  points_total: number;
  summary: { min: number | null; max: number | null; avg: number | null; first: number | string; last: number | string };
  /** [unix seconds, value], oldest first; the most recent MAX_POINTS (fewer when there are many series, see MAX_TOTAL_POINTS) when there were more. */
  points: Array<[number, number | string]>;
}

/** What a query returned, condensed. */
export interface Condensed {
  result_type: string;
  series_total: number;
  series_returned: number;
  series?: Array<InstantSample | RangeSeries>;
  /** For a scalar or string result. */
  value?: number | string;
  at?: string;
}

/** Condenses a vector, matrix, scalar or string result, keeping at most `maxSeries` series. */
export function condenseResult(data: { resultType: string; result: unknown }, maxSeries: number): Condensed {
  if (data.resultType === "scalar" || data.resultType === "string") {
    const [t, v] = data.result as [number, string];
    return { result_type: data.resultType, series_total: 0, series_returned: 0, value: data.resultType === "scalar" ? sampleValue(v) : v, at: isoOfSeconds(t) };
  }
  const all = Array.isArray(data.result) ? (data.result as PromSeries[]) : [];
  const kept = all.slice(0, maxSeries);
  const perSeries = Math.max(MIN_POINTS, Math.min(MAX_POINTS, Math.floor(MAX_TOTAL_POINTS / Math.max(1, kept.length))));
  const series = kept.map((s) => (s.values ? rangeSeries(s, perSeries) : instantSample(s)));
  return { result_type: data.resultType, series_total: all.length, series_returned: series.length, series };
}

function instantSample(s: PromSeries): InstantSample {
  const [t, v] = s.value ?? [0, "NaN"];
  return { metric: s.metric ?? {}, value: sampleValue(v), at: isoOfSeconds(t) };
}

function rangeSeries(s: PromSeries, maxPoints: number): RangeSeries {
  const values = s.values ?? [];
  const points = values.map(([t, v]) => [t, sampleValue(v)] as [number, number | string]);
  const finite = points.map((p) => p[1]).filter((v): v is number => typeof v === "number");
  const round = (n: number) => Math.round(n * 1e6) / 1e6;
  return {
    metric: s.metric ?? {},
    points_total: points.length,
    summary: {
      min: finite.length ? Math.min(...finite) : null,
      max: finite.length ? Math.max(...finite) : null,
      avg: finite.length ? round(finite.reduce((a, b) => a + b, 0) / finite.length) : null,
      first: points[0]?.[1] ?? "NaN",
      last: points.at(-1)?.[1] ?? "NaN",
    },
    points: points.slice(-maxPoints),
  };
}
