/** fleet_host_files (K1): host_files (disk usage) on many edges at once, each edge's answer or why it has none. */
import type { BaseToolDeps } from "../../deps.ts";
import { defineBaseTool } from "../../define.ts";
import { EDGE_IDS_SCHEMA, PER_EDGE_TIMEOUT_SCHEMA, runAcross, SELECTOR_SCHEMA, type TargetParams } from "./targets.ts";

interface Params extends TargetParams {
  path?: string;
  limit: number;
  per_edge_timeout_ms?: number;
}

/** Creates fleet_host_files over the fleet fan-out. */
export function createFleetHostFiles(deps: Pick<BaseToolDeps, "hub" | "edges" | "dispatcher">) {
  return {
    ...defineBaseTool<Params>({
      key: "fleet_host_files",
      name: "Disk usage across edges",
      description:
        "Run host_files on every edge a label selector or id list picks, at once: without path each edge's filesystems (size, use %, inode use %, fullest first); with path the largest entries under that directory on each edge (only inside each edge's allowed roots). Edges that are offline, out of time or failing are listed under failures with the reason while the others still answer. Use when disks fill up across a group of hosts, to see which hosts and which filesystems.",
      class: "safe",
      category: "fleet",
      schema: {
        type: "object",
        properties: {
          selector: SELECTOR_SCHEMA,
          edge_ids: EDGE_IDS_SCHEMA,
          path: { type: "string", pattern: "^/", maxLength: 4096, description: "Absolute directory to measure on each edge, inside that edge's allowed roots; omit to list filesystems." },
          limit: { type: "integer", minimum: 1, maximum: 50, default: 10, description: "Filesystems or entries to return per edge, largest first." },
          per_edge_timeout_ms: PER_EDGE_TIMEOUT_SCHEMA,
        },
        additionalProperties: false,
      },
      resultPreview: {
        skill: "host_files",
        targeted: 2,
        succeeded: 1,
        failed: 1,
        left_out: 0,
        per_edge_timeout_ms: 10000,
        results: [
          { edge_id: "web-1", duration_ms: 2, output: { filesystems: [{ mount: "/", device: "/dev/vda1", fs_type: "ext4", read_only: false, size_bytes: 270_549_000_192, used_bytes: 24_696_061_952, avail_bytes: 232_080_334_848, used_pct: 9.6, inodes_used_pct: 2.6 }], total: 1 } },
        ],
        failures: [{ edge_id: "web-2", code: "deadline_exceeded", message: 'skill "host_files" did not finish within 10000 ms', hint: "Retry with a narrower request (fewer targets, a shorter time range, a smaller limit) or a longer timeout." }],
        session_id: "chat-42",
      },
      async execute(ctx, params) {
        const skillParams = { limit: params.limit, ...(params.path !== undefined ? { path: params.path } : {}) };
        const a = await runAcross(deps, ctx, { key: "host_files", params: skillParams, targets: params, perEdgeTimeoutMs: params.per_edge_timeout_ms });
        return { skill: "host_files", targeted: a.targeted, succeeded: a.results.length, failed: a.failures.length, left_out: a.left_out, per_edge_timeout_ms: a.per_edge_timeout_ms, results: a.results, failures: a.failures, session_id: a.session_id };
      },
    }),
    // The manager never reads this path: each edge's host_files does, confined to its allowed roots, and every such call is gated and audited per edge.
    lintWaivers: { "no-arbitrary-file": "path is read on the edges by host_files, inside each edge's allowed roots, one gated and audited call per edge; the manager opens no file" },
  };
}
