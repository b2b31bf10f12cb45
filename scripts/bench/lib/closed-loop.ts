/** A closed-loop load: `concurrency` loops each calling again as soon as its call settles. */
import { quantile } from "./stats.ts";

/** What a closed loop did while measuring. */
export interface LoopOutcome {
  ok: number;
  failed: number;
  errors: string[];
  ms: number;
  latency: { p50: number; p99: number };
}

/** Runs `call` with `concurrency` loops until `durationMs` has passed (after `warmupMs` untimed). */
export async function closedLoop(concurrency: number, durationMs: number, warmupMs: number, call: (i: number) => Promise<void>): Promise<LoopOutcome> {
  let phase: "warmup" | "measure" | "stop" = warmupMs > 0 ? "warmup" : "measure";
  let ok = 0;
  let failed = 0;
  const errors: string[] = [];
  const lat: number[] = [];
  let i = 0;
  let t0 = performance.now();
  const loop = async () => {
    while (phase !== "stop") {
      const p = phase;
      const s = performance.now();
      try {
        await call(i++);
        if (p === "measure" && phase === "measure") {
          ok++;
          if (lat.length < 200_000) lat.push(performance.now() - s);
        }
      } catch (err) {
        if (p === "measure" && phase === "measure") failed++;
        if (errors.length < 5) errors.push(String((err as Error)?.message ?? err));
      }
    }
  };
  const loops = Array.from({ length: concurrency }, loop);
  if (warmupMs > 0) {
    await new Promise((r) => setTimeout(r, warmupMs));
    phase = "measure";
    t0 = performance.now();
  }
  await new Promise((r) => setTimeout(r, durationMs));
  const ms = performance.now() - t0;
  phase = "stop";
  await Promise.all(loops);
  return { ok, failed, errors, ms, latency: { p50: quantile(lat, 0.5), p99: quantile(lat, 0.99) } };
}

