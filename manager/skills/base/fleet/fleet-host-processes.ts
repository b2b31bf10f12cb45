/** fleet_host_processes (K1): host_processes on many edges at once, each edge's top processes or why it has none. */
import type { BaseToolDeps } from "../../deps.ts";
import { defineBaseTool } from "../../define.ts";
import { EDGE_IDS_SCHEMA, PER_EDGE_TIMEOUT_SCHEMA, runAcross, SELECTOR_SCHEMA, type TargetParams } from "./targets.ts";

interface Params extends TargetParams {
  sort_by: "cpu" | "mem";
  limit: number;
  per_edge_timeout_ms?: number;
}

/** Creates fleet_host_processes over the fleet fan-out. */
export function createFleetHostProcesses(deps: Pick<BaseToolDeps, "hub" | "edges" | "dispatcher">) {
  return defineBaseTool<Params>({
    key: "fleet_host_processes",
    name: "Top processes across edges",
    description:
      "Run host_processes (top processes by CPU, sampled over 200 ms, or by resident memory) on every edge a label selector or id list picks, at once, and return each edge's list; edges that are offline, out of time or failing are listed under failures with the reason while the others still answer. Use when several hosts show high load or memory pressure, to see whether the same process is responsible everywhere.",
    class: "safe",
    category: "fleet",
    schema: {
      type: "object",
      properties: {
        selector: SELECTOR_SCHEMA,
        edge_ids: EDGE_IDS_SCHEMA,
        sort_by: { type: "string", enum: ["cpu", "mem"], default: "cpu", description: "Rank by cpu (usage over the sample, 100% = one core) or mem (resident set size)." },
        limit: { type: "integer", minimum: 1, maximum: 20, default: 5, description: "Processes to return per edge." },
        per_edge_timeout_ms: PER_EDGE_TIMEOUT_SCHEMA,
      },
      additionalProperties: false,
    },
    resultPreview: {
      skill: "host_processes",
      targeted: 2,
      succeeded: 2,
      failed: 0,
      left_out: 0,
      per_edge_timeout_ms: 10000,
      results: [
        { edge_id: "web-1", duration_ms: 212, output: { sort_by: "cpu", sample_ms: 200, total_processes: 214, processes: [{ pid: 4242, ppid: 1, user: "www-data", uid: 33, name: "nginx", state: "R", threads: 1, rss_bytes: 52_428_800, cpu_pct: 97.5, command: "nginx: worker process" }] } },
      ],
      failures: [],
      session_id: "chat-42",
    },
    async execute(ctx, params) {
      const a = await runAcross(deps, ctx, { key: "host_processes", params: { sort_by: params.sort_by, limit: params.limit }, targets: params, perEdgeTimeoutMs: params.per_edge_timeout_ms });
      return { skill: "host_processes", targeted: a.targeted, succeeded: a.results.length, failed: a.failures.length, left_out: a.left_out, per_edge_timeout_ms: a.per_edge_timeout_ms, results: a.results, failures: a.failures, session_id: a.session_id };
    },
  });
}
