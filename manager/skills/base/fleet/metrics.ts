/**
 * The per-edge metrics find_outlier_edges and rank_edges compare: each read from one host skill's
 * output (host_load, host_files) gathered across the selected edges by the fleet fan-out.
 */
import type { SkillContext } from "../../../../skill/types.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { runAcross, type Across, type EdgeFailure, type TargetParams } from "./targets.ts";

/** One edge's reading of a metric, with what it refers to (e.g. which filesystem). */
export interface Reading {
  value: number;
  detail?: string;
}

/** How a metric is measured. */
export interface MetricSpec {
  /** The host skill that reports it, and the params to call it with. */
  skill: "host_load" | "host_files";
  params: Record<string, unknown>;
  unit: string;
  /** The smallest difference that matters: outlier scores never divide by less. */
  resolution: number;
  /** The reading from the skill's output; a string says why there is none. */
  read(output: unknown): Reading | string;
}

const num = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

function loadavg(out: unknown): { load1: number; cpus: number } | string {
  const o = out as { loadavg?: unknown[]; cpus?: unknown };
  const load1 = o?.loadavg?.[0];
  if (!num(load1)) return "host_load reported no load average";
  return { load1, cpus: num(o.cpus) && o.cpus > 0 ? o.cpus : 1 };
}

interface Fs {
  mount?: string;
  fs_type?: string;
  read_only?: boolean;
  used_pct?: unknown;
  inodes_used_pct?: unknown;
}

/** The fullest writable filesystem by a field of host_files' rows (read-only images are full by design). */
function fullest(out: unknown, field: "used_pct" | "inodes_used_pct"): Reading | string {
  const rows = ((out as { filesystems?: Fs[] })?.filesystems ?? []).filter((f) => !f.read_only && num(f[field]));
  if (!rows.length) return `host_files reported no writable filesystem with ${field}`;
  const top = rows.reduce((a, b) => ((b[field] as number) > (a[field] as number) ? b : a));
  return { value: top[field] as number, detail: `fullest filesystem ${top.mount ?? "?"}${top.fs_type ? ` (${top.fs_type})` : ""}` };
}

/** Every metric the fleet tools compare, by name. */
export const METRICS = {
  load_per_cpu: {
    skill: "host_load",
    params: {},
    unit: "load/CPU",
    resolution: 0.05,
    read(out) {
      const l = loadavg(out);
      return typeof l === "string" ? l : { value: l.load1 / l.cpus, detail: `load1 ${l.load1} on ${l.cpus} CPUs` };
    },
  },
  load1: {
    skill: "host_load",
    params: {},
    unit: "",
    resolution: 0.1,
    read(out) {
      const l = loadavg(out);
      return typeof l === "string" ? l : { value: l.load1, detail: `${l.cpus} CPUs` };
    },
  },
  memory_used_pct: {
    skill: "host_load",
    params: {},
    unit: "%",
    resolution: 1,
    read(out) {
      const m = (out as { memory?: { used_pct?: unknown } })?.memory;
      return num(m?.used_pct) ? { value: m.used_pct } : "host_load reported no memory use";
    },
  },
  swap_used_pct: {
    skill: "host_load",
    params: {},
    unit: "%",
    resolution: 1,
    read(out) {
      const s = (out as { swap?: { used_pct?: unknown; total_bytes?: unknown } | null })?.swap;
      if (!s || s.total_bytes === 0) return "the edge has no swap";
      return num(s.used_pct) ? { value: s.used_pct } : "host_load reported no swap use";
    },
  },
  disk_used_pct: { skill: "host_files", params: { limit: 200 }, unit: "%", resolution: 1, read: (out) => fullest(out, "used_pct") },
  inodes_used_pct: { skill: "host_files", params: { limit: 200 }, unit: "%", resolution: 1, read: (out) => fullest(out, "inodes_used_pct") },
} satisfies Record<string, MetricSpec>;

/** A metric's name. */
export type MetricName = keyof typeof METRICS;

/** The metric names, for the tools' schemas. */
export const METRIC_NAMES = Object.keys(METRICS) as MetricName[];

/** The metric param's JSON Schema. */
export const METRIC_SCHEMA = {
  type: "string",
  enum: METRIC_NAMES,
  description:
    "What to compare: load_per_cpu (1-minute load average / CPU count), load1, memory_used_pct, swap_used_pct (from host_load); disk_used_pct, inodes_used_pct (the fullest writable filesystem, from host_files).",
} as const;

/** One edge's value of the metric. */
export interface MetricSample extends Reading {
  edgeId: string;
}

/** A metric gathered across edges: the values, and the edges without one (failed calls and readings with no value). */
export interface Gathered {
  samples: MetricSample[];
  failures: EdgeFailure[];
  across: Omit<Across, "results" | "failures">;
}

/** Runs the metric's skill on the targets through the fleet fan-out and reads each edge's value. */
export async function gatherMetric(
  deps: Pick<BaseToolDeps, "hub" | "edges" | "dispatcher">,
  ctx: SkillContext,
  metric: MetricName,
  targets: TargetParams,
  perEdgeTimeoutMs: number | undefined,
): Promise<Gathered> {
  const spec: MetricSpec = METRICS[metric];
  const { results, failures, ...across } = await runAcross(deps, ctx, { key: spec.skill, params: spec.params, targets, perEdgeTimeoutMs });
  const samples: MetricSample[] = [];
  const missing: EdgeFailure[] = [];
  for (const r of results) {
    const reading = spec.read(r.output);
    if (typeof reading === "string") missing.push({ edge_id: r.edge_id, code: "no_value", message: reading, hint: `call ${spec.skill} on this edge to see its full output` });
    else samples.push({ edgeId: r.edge_id, ...reading });
  }
  return { samples, failures: [...failures, ...missing].sort((a, b) => (a.edge_id < b.edge_id ? -1 : 1)), across };
}
