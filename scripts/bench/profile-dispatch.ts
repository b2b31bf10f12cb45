/**
 * A profiling aid, not a benchmark: dispatcher.execute of bench_echo in a closed loop (CONCURRENCY
 * calls in flight, default 256) from a manager in this process to 10 simulated edges in another
 * process, with the inspector's CPU profiler around it — bench:fleet's "dispatch throughput inside
 * the manager" under a profiler.
 *
 *   SECONDS=8 DB=postgres://postgres@127.0.0.1:5432/somedb PROF=/tmp/dispatch.cpuprofile \
 *     npx tsx scripts/bench/profile-dispatch.ts
 *
 * DB a PostgreSQL URL (default: PGlite in a temporary directory), PROF where to write the
 * .cpuprofile (default: no profile). MODE=rpc drives the same calls as ExecuteSkill RPCs from the
 * benchmark's load generator in another process (bench:fleet's "ExecuteSkill RPC throughput"),
 * the manager still profiled in this process; TOKEN_CACHE sets server.token_cache (e.g. 0s). Prints
 * calls per second.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../manager/config/load.ts";
import { startManager } from "../../manager/main.ts";
import { startFleet } from "../sim/fleet.ts";
import { BENCH_SKILL } from "./lib/constants.ts";
import { closedLoop } from "./lib/closed-loop.ts";
import { profiled } from "./lib/profile.ts";
import { cpuMeter, pidsNamed, stop } from "./lib/proc.ts";
import { startWorker } from "./lib/worker.ts";
import type { LoopOutcome } from "./lib/closed-loop.ts";

const EDGES = 10;
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 256);
const MS = Number(process.env.SECONDS ?? 8) * 1000;
const dataDir = mkdtempSync(join(tmpdir(), "dispatchprof-"));
const m = await startManager(
  loadConfig({ env: {}, overrides: { "server.max_connections_per_address": 0, "server.port": 0, data_dir: dataDir, log_level: "warn", "skills.max_calls_per_user": Math.max(256, CONCURRENCY), ...(process.env.DB ? { database_url: process.env.DB } : {}), ...(process.env.TOKEN_CACHE ? { "server.token_cache": process.env.TOKEN_CACHE } : {}) } }),
);
const edges: Array<{ id: string; token: string }> = [];
for (let i = 0; i < EDGES; i++) edges.push({ id: `dp-${i}`, token: (await m.edges.enroll(`dp-${i}`)).token });
const fleet = await startFleet({ url: m.url, edges, processes: 1, labels: {}, latencyMs: 0, latencyJitterMs: 0, failureRate: 0, reconnect: false, maxBackoffMs: 30_000, inventory: "echo" });
const caller = { userId: "admin", role: "admin" } as const;
const call = async (i: number) => {
  const out = await m.dispatcher.execute({ key: BENCH_SKILL, params: { text: "x".repeat(64) }, edgeId: edges[i % EDGES]!.id, caller });
  if (!out.result?.success) throw new Error(JSON.stringify(out.result?.error));
};
const rpc = process.env.MODE === "rpc";
const gen = rpc ? startWorker("load-gen", join(import.meta.dirname, "load-gen.ts")) : undefined;
const token = rpc ? (await m.identity.createToken("admin", { description: "profile-dispatch" })).token : "";
const rpcLoop = (durationMs: number) =>
  gen!.request<LoopOutcome & Record<string, unknown>>({ cmd: "execute", url: m.url, token, edgeIds: edges.map((e) => e.id), concurrency: CONCURRENCY, durationMs, warmupMs: 0 }, durationMs + 60_000);
if (rpc) await rpcLoop(2000);
else await closedLoop(CONCURRENCY, 2000, 0, call); // warm-up
const cpu = cpuMeter({ "simulated edges": () => fleet.workers.map((w) => w.pid), postgresql: () => pidsNamed("postgres"), ...(gen ? { "load generator": () => [gen.pid] } : {}) });
const out = await profiled(process.env.PROF, () => (rpc ? rpcLoop(MS) : closedLoop(CONCURRENCY, MS, 0, call)));
const used = cpu();
if (gen) await stop(gen);
console.log(`${out.ok} calls (${out.failed} failed) in ${(out.ms / 1000).toFixed(1)} s: ${((out.ok / out.ms) * 1000).toFixed(0)} calls/s`);
console.log(`CPU µs per call: ${Object.entries(used).map(([k, v]) => `${k === "bench process" ? "manager (this process)" : k} ${((v * 1000) / out.ok).toFixed(1)}`).join(", ")}`);
await fleet.close();
await m.close();
rmSync(dataDir, { recursive: true, force: true });
process.exit(0);
