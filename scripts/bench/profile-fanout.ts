/**
 * A profiling aid, not a benchmark: fan-outs of bench_echo from a manager in this process to N
 * simulated edges in another process, timed, with the inspector's CPU profiler around them.
 *
 *   N=3000 RUNS=6 DB=postgres://postgres@127.0.0.1:5432/somedb PROF=/tmp/fan.cpuprofile \
 *     npx tsx scripts/bench/profile-fanout.ts
 *
 * N edges (default 3000), RUNS timed fan-outs after one warm-up (default 8), DB a PostgreSQL URL
 * (default: PGlite in a temporary directory), PROF where to write the .cpuprofile (default: no
 * profile). MODE=rpc runs each fan-out as a FanOutSkill call over gRPC from a connect client in
 * this process (the client's decoding then counts as this process's CPU), with batch_results unless
 * BATCH=0 (one message per result). MODE=hub calls every edge straight through the tunnel hub
 * (hub.call: no dispatcher, gate, audit or RPC), the tunnel's own share of a fan-out; MODE=hub-audit
 * adds to each call the audit row the dispatcher would write (the tunnel and H1's row, nothing
 * else: the least a fan-out does); MODE=inproc (or none) is fanOut in this process. Prints the
 * fan-out times, their median, the CPU each process used per edge call, and this process's CPU per
 * edge call run by run (min and median).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../manager/config/load.ts";
import { startManager } from "../../manager/main.ts";
import { startFleet } from "../sim/fleet.ts";
import { fanOut } from "../../manager/calls/fan-out.ts";
import { BENCH_SKILL } from "./lib/constants.ts";
import { profiled } from "./lib/profile.ts";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { SkillService } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { cpuMeter, pidsNamed } from "./lib/proc.ts";
import { echoAuditRecord } from "./lib/audit-row.ts";

const N = Number(process.env.N ?? 3000);
const RUNS = Number(process.env.RUNS ?? 8);
const dataDir = mkdtempSync(join(tmpdir(), "fanprof-"));
const m = await startManager(loadConfig({ env: {}, overrides: { "server.max_connections_per_address": 0, "server.port": 0, data_dir: dataDir, log_level: "warn", ...(process.env.DB ? { database_url: process.env.DB } : {}) } }));
const edges: Array<{ id: string; token: string }> = [];
for (let i = 0; i < N; i++) edges.push({ id: `fp-${i}`, token: (await m.edges.enroll(`fp-${i}`)).token });
const fleet = await startFleet({ url: m.url, edges, processes: 1, labels: { fp: "1" }, latencyMs: 0, latencyJitterMs: 0, failureRate: 0, reconnect: false, maxBackoffMs: 30_000, inventory: "echo" });
console.log("connected", fleet.connected.connected);
const caller = { userId: "admin", role: "admin" };
const rpc = process.env.MODE === "rpc";
const single = process.env.BATCH === "0";
const token = m.bootstrapToken ?? (await m.identity.createToken("admin", { description: "profile-fanout" })).token;
const skills = createClient(SkillService, createGrpcTransport({ baseUrl: m.url, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${token}`), next(req))] }));
async function once(): Promise<number> {
  const t0 = performance.now();
  let ok = 0;
  if (process.env.MODE === "hub" || process.env.MODE === "hub-audit") {
    // The tunnel alone: every call straight through the hub (no dispatcher, gate or audit); with
    // hub-audit, each result also gets the audit row the dispatcher would write, awaited.
    const audited = process.env.MODE === "hub-audit";
    const params = { text: "x" };
    const ids = m.hub.sessions().map((s) => s.edgeId);
    const rs = await Promise.all(
      ids.map(async (id) => {
        const startedAt = new Date();
        const r = await m.hub.call(id, BENCH_SKILL, params, 30_000);
        if (audited) {
          await m.audit.append(echoAuditRecord(id, r, startedAt));
        }
        return r;
      }),
    );
    ok = rs.filter((r) => r.success).length;
  } else if (rpc) {
    for await (const ev of skills.fanOutSkill({ key: BENCH_SKILL, selector: "fp=1", input: { case: "params", value: { text: "x" } }, batchResults: !single }, { timeoutMs: 300_000 })) {
      if (ev.event.case === "edgeResult" && ev.event.value.result?.success) ok++;
      else if (ev.event.case === "edgeResults") ok += ev.event.value.results.filter((r) => r.result?.success).length;
    }
  } else {
    for await (const ev of fanOut({ dispatcher: m.dispatcher, hub: m.hub }, { key: BENCH_SKILL, params: { text: "x" }, edgeIds: [], selector: "fp=1", caller })) {
      if (ev.kind === "edge" && ev.result?.success) ok++;
    }
  }
  if (ok !== N) console.log("ok", ok);
  return performance.now() - t0;
}
await once();
const times: number[] = [];
const cpu = cpuMeter({ "simulated edges": () => fleet.workers.map((w) => w.pid), postgresql: () => pidsNamed("postgres") });
/** This process's CPU per edge call in each run (µs): its minimum is the figure least disturbed by the rest of the machine. */
const perRun: number[] = [];
await profiled(process.env.PROF, async () => {
  for (let i = 0; i < RUNS; i++) {
    const c0 = process.cpuUsage();
    times.push(await once());
    const c = process.cpuUsage(c0);
    perRun.push((c.user + c.system) / N);
  }
});
const used = cpu();
times.sort((a, b) => a - b);
console.log(`CPU µs per edge call: ${Object.entries(used).map(([k, v]) => `${k === "bench process" ? "manager (this process)" : k} ${((v * 1000) / (N * RUNS)).toFixed(1)}`).join(", ")}`);
console.log("fan-out ms", times.map((t) => t.toFixed(0)).join(" "), "p50", times[Math.floor(times.length / 2)]!.toFixed(0));
perRun.sort((a, b) => a - b);
console.log(`manager CPU µs per edge call by run: min ${perRun[0]!.toFixed(1)}, median ${perRun[Math.floor(perRun.length / 2)]!.toFixed(1)}`);
await fleet.close();
await m.close();
rmSync(dataDir, { recursive: true, force: true });
process.exit(0);
