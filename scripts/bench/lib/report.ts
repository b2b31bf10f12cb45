/** The benchmark's output: one row per metric, printed as a table and written as JSON. */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { cpus, totalmem } from "node:os";
import { round } from "./stats.ts";

/** One measured metric against its baseline and target. */
export interface Row {
  metric: string;
  unit: string;
  ongrid: number;
  /** NaN when the metric has no baseline. */
  baseline: number;
  /** ongrid / baseline; NaN without a baseline. */
  ratio: number;
  /** Human-readable target, "-" when there is none. */
  target: string;
  /** "pass", "fail", "n/a" when there is no target, "inconclusive" when the measurement cannot be judged. */
  result: "pass" | "fail" | "n/a" | "inconclusive";
}

/** A row whose target is a ratio to the baseline (ratio ≤ maxRatio). */
export function ratioRow(metric: string, unit: string, ongrid: number, baseline: number, maxRatio: number): Row {
  const ratio = ongrid / baseline;
  return { metric, unit, ongrid, baseline, ratio, target: `<= ${maxRatio}x baseline`, result: Number.isFinite(ratio) && ratio <= maxRatio ? "pass" : "fail" };
}

/** A row whose target is an absolute bound on the ongrid value; a cost measured at or below zero is inconclusive, not a pass. */
export function boundRow(metric: string, unit: string, ongrid: number, baseline: number, max: number): Row {
  const result = !Number.isFinite(ongrid) ? "fail" : ongrid <= 0 ? "inconclusive" : ongrid <= max ? "pass" : "fail";
  return { metric, unit, ongrid, baseline, ratio: ongrid / baseline, target: `<= ${max} ${unit}`, result };
}

/** A row reported for orientation only. */
export function infoRow(metric: string, unit: string, ongrid: number, baseline = Number.NaN): Row {
  return { metric, unit, ongrid, baseline, ratio: ongrid / baseline, target: "-", result: "n/a" };
}

const fmt = (v: number) => (Number.isFinite(v) ? (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(3)) : "-");

/** Column headings of the table, for a benchmark whose measured column is not "ongrid" alone (e.g. "cluster"). */
export interface TableHeads {
  ongrid?: string;
  baseline?: string;
  target?: string;
  result?: string;
}

/** Renders the rows as a fixed-width table (`heads` renames columns). */
export function table(rows: Row[], heads: TableHeads = {}): string {
  const head = ["metric", heads.ongrid ?? "ongrid", heads.baseline ?? "baseline", "ratio", heads.target ?? "target", heads.result ?? "pass/fail"];
  const body = rows.map((r) => [`${r.metric} (${r.unit})`, fmt(r.ongrid), fmt(r.baseline), Number.isFinite(r.ratio) ? `${r.ratio.toFixed(2)}x` : "-", r.target, r.result]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 || i >= 4 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  return [line(head), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n");
}

/** Writes the report as JSON (NaN becomes null), creating the directory. */
export function writeJson(file: string, report: Record<string, unknown>): void {
  mkdirSync(dirname(file), { recursive: true });
  const json = JSON.stringify(report, (_k, v) => (typeof v === "number" ? (Number.isFinite(v) ? round(v) : null) : v), 2);
  writeFileSync(file, json + "\n");
}

/** The machine a report was measured on, for its JSON: CPUs, memory, Node, platform, load before and after. */
export function machineInfo(loadBefore: number[], loadAfter: number[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model,
    mem_gib: totalmem() / 2 ** 30,
    node: process.version,
    platform: `${process.platform}/${process.arch}`,
    load_average: { before: loadBefore, after: loadAfter },
    ...extra,
  };
}
