/**
 * find_outlier_edges (K1): gathers one metric across the selected edges and names the edges whose
 * value deviates from their peers by the modified z-score (median and MAD; see outliers.ts), each
 * with the numbers behind its score.
 */
import { SkillError } from "../../../../skill/errors.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { defineBaseTool } from "../../define.ts";
import { gatherMetric, METRICS, METRIC_SCHEMA, type MetricName } from "./metrics.ts";
import { DEFAULT_THRESHOLD, describeScale, explain, findOutliers, MIN_PEERS, round, type Direction } from "./outliers.ts";
import { EDGE_IDS_SCHEMA, PER_EDGE_TIMEOUT_SCHEMA, SELECTOR_SCHEMA, type TargetParams } from "./targets.ts";

interface Params extends TargetParams {
  metric: MetricName;
  threshold: number;
  direction: Direction;
  per_edge_timeout_ms?: number;
}

/** How the scores are computed, in the output so the model can quote it. */
const METHOD =
  "modified z-score: (value − median) / scale, scale = 1.4826 × MAD but never below the metric's resolution (which is also the scale when MAD is 0, i.e. more than half the edges report exactly the median)";

/** Scores listed besides the outliers (the most extreme first). */
const MAX_SCORES = 50;

/** Creates find_outlier_edges over the fleet fan-out. */
export function createFindOutlierEdges(deps: Pick<BaseToolDeps, "hub" | "edges" | "dispatcher">) {
  return defineBaseTool<Params>({
    key: "find_outlier_edges",
    name: "Find outlier edges",
    description:
      "Measure one metric (load per CPU, load1, memory, swap, disk or inode use) on every selected edge and return the edges whose value deviates from their peers by a robust statistic: the modified z-score (value − median) / (1.4826 × median absolute deviation, never less than the metric's resolution), flagged beyond a threshold (default 3.5), each with a one-line explanation (value, median, MAD, scale, z). Use when one host in a group of similar hosts is suspected to misbehave but you do not know which, e.g. one slow web node behind a load balancer. Needs at least 3 edges that report the metric; edges that fail are listed with the reason.",
    class: "safe",
    category: "fleet",
    schema: {
      type: "object",
      properties: {
        metric: METRIC_SCHEMA,
        selector: SELECTOR_SCHEMA,
        edge_ids: EDGE_IDS_SCHEMA,
        threshold: { type: "number", exclusiveMinimum: 0, maximum: 100, default: DEFAULT_THRESHOLD, description: "How many robust standard deviations from the median make an outlier; 3.5 is the usual cut-off, lower finds more." },
        direction: { type: "string", enum: ["high", "low", "both"], default: "both", description: "high: only values above the peers; low: only below; both: either." },
        per_edge_timeout_ms: PER_EDGE_TIMEOUT_SCHEMA,
      },
      required: ["metric"],
      additionalProperties: false,
    },
    resultPreview: {
      metric: "load_per_cpu",
      unit: "load/CPU",
      threshold: 3.5,
      direction: "both",
      compared: 5,
      median: 0.12,
      mad: 0.02,
      scale: 0.05,
      scale_basis: "resolution",
      outliers: [
        { edge_id: "web-4", value: 6.25, score: 122.6, side: "high", detail: "load1 25 on 4 CPUs", explanation: "load_per_cpu 6.25 load/CPU (load1 25 on 4 CPUs) is above the median 0.12 of 5 edges; MAD 0.02; 1.4826 × MAD 0.02 is below the metric's resolution, so scale = 0.05; z = +122.6, beyond the threshold 3.5" },
      ],
      scores: [{ edge_id: "web-4", value: 6.25, score: 122.6 }, { edge_id: "web-2", value: 0.15, score: 0.6 }],
      failures: [{ edge_id: "web-9", code: "unavailable", message: 'edge "web-9" is offline (last seen 2025-01-31T13:40:00.000Z)', hint: "retry when the edge is back online" }],
      left_out: 0,
      method: METHOD,
      session_id: "chat-42",
    },
    async execute(ctx, params) {
      const spec = METRICS[params.metric];
      const g = await gatherMetric(deps, ctx, params.metric, params, params.per_edge_timeout_ms);
      if (g.samples.length < MIN_PEERS) {
        const why = g.failures.slice(0, 5).map((f) => `${f.edge_id}: ${f.code}`).join(", ");
        throw new SkillError(
          "too_few_edges",
          `only ${g.samples.length} of ${g.across.targeted} targeted edges reported ${params.metric}${why ? ` (${why}${g.failures.length > 5 ? ", …" : ""})` : ""}; at least ${MIN_PEERS} are needed to compare an edge with its peers`,
          "Widen the selector or name more edges; to compare two edges use rank_edges or fleet_host_load.",
        );
      }
      const { spread, scored, outliers } = findOutliers(g.samples, { threshold: params.threshold, direction: params.direction, resolution: spec.resolution });
      const detailOf = new Map(g.samples.map((s) => [s.edgeId, s.detail]));
      return {
        metric: params.metric,
        unit: spec.unit,
        threshold: params.threshold,
        direction: params.direction,
        compared: spread.n,
        median: round(spread.median),
        mad: round(spread.mad),
        scale: round(spread.scale),
        scale_basis: spread.basis,
        scale_note: describeScale(spread, spec.resolution),
        outliers: outliers.map((o) => ({
          edge_id: o.edgeId,
          value: round(o.value),
          score: round(o.score),
          side: o.score > 0 ? "high" : "low",
          ...(detailOf.get(o.edgeId) ? { detail: detailOf.get(o.edgeId) } : {}),
          explanation: explain(o, spread, { metric: params.metric, unit: spec.unit, threshold: params.threshold, resolution: spec.resolution, detail: detailOf.get(o.edgeId) }),
        })),
        scores: scored.slice(0, MAX_SCORES).map((s) => ({ edge_id: s.edgeId, value: round(s.value), score: round(s.score) })),
        failures: g.failures,
        left_out: g.across.left_out,
        method: METHOD,
        session_id: g.across.session_id,
      };
    },
  });
}
