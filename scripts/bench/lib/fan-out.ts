/** FanOutSkill of the benchmark's echo skill through a manager's RPC surface, timed from the client. */
import type { Client } from "@connectrpc/connect";
import type { SkillService } from "../../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { BENCH_SKILL } from "./constants.ts";

/** One fan-out as the client saw it. */
export interface FanOutOutcome {
  /** Request sent to summary received, in this process. */
  ms: number;
  /** The duration the manager's summary reports. */
  managerMs: number;
  /** Edge results received (batched events counted per result). */
  results: number;
  targeted: number;
  succeeded: number;
}

/** One timed run, with the CPU the measured processes used meanwhile. */
export interface FanOutRun extends FanOutOutcome {
  cpuMs: Record<string, number>;
}

/** One FanOutSkill of bench_echo to `selector` (results batched), read to its summary. */
export async function fanOutOnce(skills: Client<typeof SkillService>, selector: string, timeoutMs = 300_000): Promise<FanOutOutcome> {
  const t0 = performance.now();
  let results = 0;
  let summary: { durationMs: number; succeeded: number; targeted: number } | undefined;
  for await (const ev of skills.fanOutSkill({ key: BENCH_SKILL, selector, input: { case: "params", value: { text: "x" } }, batchResults: true }, { timeoutMs })) {
    if (ev.event.case === "edgeResults") results += ev.event.value.results.length;
    else if (ev.event.case === "summary") summary = ev.event.value;
  }
  const ms = performance.now() - t0;
  if (!summary) throw new Error("FanOutSkill ended without a summary");
  return { ms, managerMs: summary.durationMs, results, targeted: summary.targeted, succeeded: summary.succeeded };
}

/**
 * One warm-up and `runs` timed fan-outs to `selector`, each logged (a shortfall from `expected`
 * edges as a warning); `cpu` starts a meter (proc.ts cpuMeter) around each run. Returns the timed runs.
 */
export async function timeFanOuts(
  skills: Client<typeof SkillService>,
  o: { selector: string; expected: number; runs: number; log: (m: string) => void; cpu?: () => () => Record<string, number>; timeoutMs?: number },
): Promise<FanOutRun[]> {
  const out: FanOutRun[] = [];
  for (let i = 0; i <= o.runs; i++) {
    const cpu = o.cpu?.();
    const r = await fanOutOnce(skills, o.selector, o.timeoutMs);
    if (r.targeted !== o.expected || r.succeeded !== o.expected) o.log(`warning: fan-out run ${i} targeted ${r.targeted}, succeeded ${r.succeeded} (expected ${o.expected})`);
    o.log(`  run ${i}${i === 0 ? " (warm-up)" : ""}: ${r.ms.toFixed(0)} ms, ${r.succeeded}/${r.targeted} succeeded`);
    const cpuMs = cpu?.() ?? {};
    if (cpu) o.log(`    CPU ms: ${Object.entries(cpuMs).map(([k, v]) => `${k} ${v}`).join(", ")}`);
    if (i > 0) out.push({ ...r, cpuMs });
  }
  return out;
}
