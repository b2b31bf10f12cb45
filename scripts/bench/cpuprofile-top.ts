/**
 * Summarises a V8 .cpuprofile (node --cpu-prof, or the profiling aids' profiled()): where the
 * process's CPU went, by function (self and inclusive time) and by file, optionally only within
 * time windows. A profile's timestamps are the monotonic clock (process.hrtime in microseconds on
 * Linux, the same in every process), so a benchmark can record the windows of the work it times
 * and cut another process's whole-run profile to them: `npm run bench:cluster --
 * --manager-cpu-prof DIR` prints the command for its cluster fan-outs.
 *
 *   npx tsx scripts/bench/cpuprofile-top.ts FILE.cpuprofile [--window FROM_US-TO_US ...] [--top 40]
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Time per node id (µs), counting only samples inside a window (all of them when none is given). */
function sampleTimes(p: Profile, windows: Array<[number, number]>): Map<number, number> {
  const out = new Map<number, number>();
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    // A sample stands for the time until the next one.
    const dt = p.timeDeltas[i + 1] ?? 0;
    if (windows.length && !windows.some(([a, b]) => t >= a && t < b)) continue;
    out.set(p.samples[i]!, (out.get(p.samples[i]!) ?? 0) + dt);
  }
  return out;
}

function frameName(n: Node): string {
  const file = n.callFrame.url.replace(/^.*\/node_modules\//, "").replace(/^.*\/(manager|edge|skill|scripts|dist)\//, "$1/");
  return `${n.callFrame.functionName || "(anonymous)"} ${file}${file ? `:${n.callFrame.lineNumber + 1}` : ""}`;
}

export function summarise(p: Profile, windows: Array<[number, number]>, top: number): string {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const names = new Map(p.nodes.map((n) => [n.id, frameName(n)]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const files = new Map<string, number>();
  let total = 0;
  for (const [id, us] of sampleTimes(p, windows)) {
    total += us;
    const leaf = byId.get(id)!;
    const name = names.get(id)!;
    self.set(name, (self.get(name) ?? 0) + us);
    const file = leaf.callFrame.url.replace(/^.*\/node_modules\//, "") || "(native, GC, idle)";
    files.set(file, (files.get(file) ?? 0) + us);
    // A recursive function counts once per sample.
    const seen = new Set<string>();
    for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) {
      const k = names.get(x)!;
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + us);
    }
  }
  const list = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => `${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / (total || 1)).toFixed(1).padStart(5)} %  ${k}`)
      .join("\n");
  const span = windows.length ? windows.map(([a, b]) => `${((b - a) / 1e6).toFixed(2)} s`).join(" + ") : `${((p.endTime - p.startTime) / 1e6).toFixed(2)} s (whole profile)`;
  return [`sampled ${(total / 1000).toFixed(0)} ms over ${span}`, "", "self, by function:", list(self), "", "self, by file:", list(files), "", "inclusive, by function:", list(inclusive)].join("\n");
}

function main(): void {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { window: { type: "string", multiple: true }, top: { type: "string", default: "40" } } });
  const file = positionals[0];
  if (!file) throw new Error("usage: cpuprofile-top.ts FILE.cpuprofile [--window FROM_US-TO_US ...] [--top N]");
  const windows = (values.window ?? []).map((w): [number, number] => {
    const m = /^(\d+)-(\d+)$/.exec(w);
    if (!m || Number(m[2]) <= Number(m[1])) throw new Error(`--window: "${w}" is not FROM_US-TO_US (two integers, the second larger)`);
    return [Number(m[1]), Number(m[2])];
  });
  const top = Number(values.top);
  if (!Number.isInteger(top) || top < 1) throw new Error(`--top: "${values.top}" is not a positive integer`);
  const p = JSON.parse(readFileSync(file, "utf8")) as Profile;
  console.log(summarise(p, windows, top));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    main();
  } catch (err) {
    console.error(`cpuprofile-top: ${(err as Error).message}`);
    process.exit(2);
  }
}
