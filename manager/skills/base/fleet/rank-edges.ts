/** rank_edges (K1): gathers one metric across the selected edges and ranks them by it. */
import type { BaseToolDeps } from "../../deps.ts";
import { defineBaseTool } from "../../define.ts";
import { gatherMetric, METRICS, METRIC_SCHEMA, type MetricName, type MetricSample } from "./metrics.ts";
import { round } from "./outliers.ts";
import { EDGE_IDS_SCHEMA, PER_EDGE_TIMEOUT_SCHEMA, SELECTOR_SCHEMA, type TargetParams } from "./targets.ts";

interface Params extends TargetParams {
  metric: MetricName;
  order: "desc" | "asc";
  limit: number;
  per_edge_timeout_ms?: number;
}

/** Ranks samples by value (ties share a rank, 1, 2, 2, 4; within a tie by edge id). */
export function rankSamples(samples: readonly MetricSample[], order: "desc" | "asc"): (MetricSample & { rank: number })[] {
  const sign = order === "desc" ? -1 : 1;
  const sorted = [...samples].sort((a, b) => sign * (a.value - b.value) || (a.edgeId < b.edgeId ? -1 : a.edgeId > b.edgeId ? 1 : 0));
  let rank = 0;
  return sorted.map((s, i) => {
    if (i === 0 || s.value !== sorted[i - 1].value) rank = i + 1;
    return { ...s, rank };
  });
}

/** Creates rank_edges over the fleet fan-out. */
export function createRankEdges(deps: Pick<BaseToolDeps, "hub" | "edges" | "dispatcher">) {
  return defineBaseTool<Params>({
    key: "rank_edges",
    name: "Rank edges by a metric",
    description:
      "Measure one metric (load per CPU, load1, memory, swap, disk or inode use) on every selected edge and return the top N edges ranked by it, highest first by default. Use to answer which hosts are the busiest, fullest or emptiest in a group, e.g. where to look first or where to move load to; edges that fail are listed with the reason. To find hosts that deviate from their peers rather than the top few, use find_outlier_edges.",
    class: "safe",
    category: "fleet",
    schema: {
      type: "object",
      properties: {
        metric: METRIC_SCHEMA,
        selector: SELECTOR_SCHEMA,
        edge_ids: EDGE_IDS_SCHEMA,
        order: { type: "string", enum: ["desc", "asc"], default: "desc", description: "desc: highest value first; asc: lowest first." },
        limit: { type: "integer", minimum: 1, maximum: 1000, default: 10, description: "How many edges to return (top N)." },
        per_edge_timeout_ms: PER_EDGE_TIMEOUT_SCHEMA,
      },
      required: ["metric"],
      additionalProperties: false,
    },
    resultPreview: {
      metric: "disk_used_pct",
      unit: "%",
      order: "desc",
      ranked: [
        { rank: 1, edge_id: "db-2", value: 96.4, detail: "fullest filesystem /var/lib/postgresql (ext4)" },
        { rank: 2, edge_id: "db-1", value: 71.2, detail: "fullest filesystem / (ext4)" },
      ],
      compared: 6,
      returned: 2,
      failures: [],
      left_out: 0,
      session_id: "chat-42",
    },
    async execute(ctx, params) {
      const g = await gatherMetric(deps, ctx, params.metric, params, params.per_edge_timeout_ms);
      const ranked = rankSamples(g.samples, params.order).slice(0, params.limit);
      return {
        metric: params.metric,
        unit: METRICS[params.metric].unit,
        order: params.order,
        ranked: ranked.map((s) => ({ rank: s.rank, edge_id: s.edgeId, value: round(s.value), ...(s.detail ? { detail: s.detail } : {}) })),
        compared: g.samples.length,
        returned: ranked.length,
        failures: g.failures,
        left_out: g.across.left_out,
        session_id: g.across.session_id,
      };
    },
  });
}
