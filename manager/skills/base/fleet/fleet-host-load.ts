/** fleet_host_load (K1): host_load on many edges at once, each edge's snapshot or why it has none. */
import type { BaseToolDeps } from "../../deps.ts";
import { defineBaseTool } from "../../define.ts";
import { EDGE_IDS_SCHEMA, PER_EDGE_TIMEOUT_SCHEMA, runAcross, SELECTOR_SCHEMA, type TargetParams } from "./targets.ts";

interface Params extends TargetParams {
  per_edge_timeout_ms?: number;
}

/** Creates fleet_host_load over the fleet fan-out. */
export function createFleetHostLoad(deps: Pick<BaseToolDeps, "hub" | "edges" | "dispatcher">) {
  return defineBaseTool<Params>({
    key: "fleet_host_load",
    name: "Host load across edges",
    description:
      "Run host_load (load averages against CPU count, memory and swap use, uptime) on every edge a label selector or id list picks, at once, and return each edge's snapshot; edges that are offline, out of time or failing are listed under failures with the reason while the others still answer. Use when a whole group of hosts is reported slow or short of memory, to compare them in one call; use find_outlier_edges or rank_edges to single out the odd one.",
    class: "safe",
    category: "fleet",
    schema: {
      type: "object",
      properties: { selector: SELECTOR_SCHEMA, edge_ids: EDGE_IDS_SCHEMA, per_edge_timeout_ms: PER_EDGE_TIMEOUT_SCHEMA },
      additionalProperties: false,
    },
    resultPreview: {
      skill: "host_load",
      targeted: 3,
      succeeded: 2,
      failed: 1,
      left_out: 0,
      per_edge_timeout_ms: 10000,
      results: [
        { edge_id: "web-1", duration_ms: 3, output: { hostname: "web-1", uptime_s: 864000, loadavg: [0.42, 0.55, 0.61], cpus: 4, load_per_cpu: 0.11, tasks: { running: 1, total: 312 }, memory: { total_bytes: 8_254_390_272, available_bytes: 5_368_709_120, used_bytes: 2_885_681_152, used_pct: 35 }, swap: null, source: "proc" } },
      ],
      failures: [{ edge_id: "web-3", code: "unavailable", message: 'edge "web-3" is offline (last seen 2025-01-31T13:40:00.000Z)', hint: "retry when the edge is back online" }],
      session_id: "chat-42",
    },
    async execute(ctx, params) {
      const a = await runAcross(deps, ctx, { key: "host_load", params: {}, targets: params, perEdgeTimeoutMs: params.per_edge_timeout_ms });
      return { skill: "host_load", targeted: a.targeted, succeeded: a.results.length, failed: a.failures.length, left_out: a.left_out, per_edge_timeout_ms: a.per_edge_timeout_ms, results: a.results, failures: a.failures, session_id: a.session_id };
    },
  });
}
