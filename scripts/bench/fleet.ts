/**
 * The fleet-scale benchmark (issue 10): one manager (its own process, on real PostgreSQL) and a
 * simulated fleet (scripts/sim/) of N edges, each figure next to a baseline measured in the same
 * run. Prints a table and writes JSON (scripts/bench/results/fleet.json).
 *
 *   npm run bench:fleet -- [--edges 10000] [--sim-processes 2] [--fan-out-runs 5]
 *                         [--throughput-seconds 10] [--concurrency 256] [--audit-rows 200000]
 *                         [--database-url postgres://postgres@127.0.0.1:5432/postgres]
 *                         [--only edge,audit,throughput,fleet] [--out FILE] [--manager-cpu-prof DIR]
 *                         [--inventory builtins|echo] [--hello digest|full] [--rpc-client raw|connect]
 *
 * Sections (--only picks some):
 * - edge: the compiled edge binary's idle RSS and start to connected, against a compiled empty Bun
 *   program (its idle RSS, and spawn to exit);
 * - audit: rows appended through the real audit log (hash chain, batching) to PostgreSQL, against
 *   a raw multi-row INSERT of the same rows into a table of the same shape; then the chain is
 *   verified and counted;
 * - throughput: ExecuteSkill calls (validated, gated, audited; the answer waits for the row)
 *   through 10 simulated edges with `--concurrency` calls in flight, against bare node:http2
 *   unary echoes at the same concurrency; the RPCs are sent by the same hand-framed node:http2
 *   client as the echoes (`--rpc-client connect`: by connect-node's gRPC client, which costs
 *   about as much CPU a call as the manager and shares its cores);
 * - fleet: manager RSS per idle edge (N simulated edges, forced GC) against a bare node:http2
 *   server holding N streams; FanOutSkill to all N against a bare broadcast; then a manager
 *   restart and the time until all N are back, the manager's peak RSS meanwhile and the accept
 *   rate per second.
 *
 * The run creates a database of its own on the server (ongrid_bench_<random>) and drops it.
 */
import http2 from "node:http2";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { execFileSync } from "node:child_process";
import postgres from "postgres";
import { pino } from "pino";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { EdgeService } from "../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { SkillService } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { openDatabase } from "../../manager/db/client.ts";
import { createAuditLog } from "../../manager/audit/log.ts";
import type { AuditRecord } from "../../manager/audit/types.ts";
import { BENCH_SKILL } from "./lib/constants.ts";
import { buildEdge, spawnToExitMs, startEdgeOnce } from "./lib/edge-binary.ts";
import { attachGc, type GcReading } from "./lib/gc-rss.ts";
import { alive, cpuMeter, fdLimit, pidsNamed, rssKb, sampleRss, settledRss, sleep, start, stop } from "./lib/proc.ts";
import { boundRow, infoRow, machineInfo, ratioRow, table, writeJson, type Row } from "./lib/report.ts";
import { unary } from "./lib/round-trip.ts";
import { median } from "./lib/stats.ts";
import { startWorker, type Worker } from "./lib/worker.ts";
import { intFlag } from "./lib/flags.ts";
import { createBenchDatabase, runBench, runContext } from "./lib/run.ts";
import { startManagerProcess, type ManagerProc } from "./lib/manager-proc.ts";
import { enrollFleet, startFleet, type Fleet } from "../sim/fleet.ts";
import { loadConfig } from "../../manager/config/load.ts";
import { startManager } from "../../manager/main.ts";
import { freePort } from "../../test/support/free-port.ts";
import { closedLoop } from "./lib/closed-loop.ts";
import { timeFanOuts } from "./lib/fan-out.ts";

const ROOT = resolve(import.meta.dirname, "..", "..");
const HERE = import.meta.dirname;
const SECTIONS = ["edge", "audit", "throughput", "fleet"] as const;
const EDGE_STARTS = 5;
const THROUGHPUT_EDGES = 10;
/** /proc reports KiB; the targets are read as decimal KB and MB (the stricter reading). */
const KIB_TO_KB = 1.024;
const KIB_TO_MB = 1024 / 1e6;

function flags() {
  const { values } = parseArgs({
    options: {
      edges: { type: "string", default: "10000" },
      "sim-processes": { type: "string", default: "2" },
      "fan-out-runs": { type: "string", default: "5" },
      "throughput-seconds": { type: "string", default: "10" },
      concurrency: { type: "string", default: "256" },
      "audit-rows": { type: "string", default: "200000" },
      "database-url": { type: "string", default: process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres" },
      only: { type: "string", default: SECTIONS.join(",") },
      out: { type: "string" },
      "manager-cpu-prof": { type: "string" },
      inventory: { type: "string", default: "builtins" },
      "rpc-client": { type: "string", default: "raw" },
      hello: { type: "string", default: "digest" },
    },
  });
  const only = values.only!.split(",").map((s) => s.trim()).filter(Boolean);
  for (const s of only) if (!(SECTIONS as readonly string[]).includes(s)) throw new Error(`--only: "${s}" is not a section (one of ${SECTIONS.join(", ")})`);
  return {
    edges: intFlag("edges", values.edges!, 1),
    simProcesses: intFlag("sim-processes", values["sim-processes"]!, 1),
    fanOutRuns: intFlag("fan-out-runs", values["fan-out-runs"]!, 1),
    throughputMs: intFlag("throughput-seconds", values["throughput-seconds"]!, 1) * 1000,
    concurrency: intFlag("concurrency", values.concurrency!, 1),
    auditRows: intFlag("audit-rows", values["audit-rows"]!, 1000),
    databaseUrl: values["database-url"]!,
    only: new Set(only),
    out: resolve(values.out ?? join(HERE, "results", "fleet.json")),
    managerCpuProf: values["manager-cpu-prof"] ? resolve(values["manager-cpu-prof"]) : undefined,
    inventory: inventoryFlag(values.inventory!),
    rpcClient: rpcClientFlag(values["rpc-client"]!),
    hello: helloFlag(values.hello!),
  };
}

/** How the fleet section's simulated edges send their skills: hello by inventory digest (as the edge does) or the full inventory in every hello. */
function helloFlag(v: string): "digest" | "full" {
  if (v !== "digest" && v !== "full") throw new Error(`--hello: "${v}" is not digest or full`);
  return v;
}

/** Which client sends the throughput section's ExecuteSkill RPCs. */
function rpcClientFlag(v: string): "raw" | "connect" {
  if (v !== "raw" && v !== "connect") throw new Error(`--rpc-client: "${v}" is not raw or connect`);
  return v;
}

/** What the fleet section's simulated edges offer: the edge binary's builtins (≈ 15 KB of metadata) or one echo skill. */
function inventoryFlag(v: string): "builtins" | "echo" {
  if (v !== "builtins" && v !== "echo") throw new Error(`--inventory: "${v}" is not builtins or echo`);
  return v;
}

const { secs, log, cleanups, cleanup } = runContext("bench");

/** A database of the run's own on the given PostgreSQL server, dropped at cleanup. */
async function benchDatabase(serverUrl: string): Promise<string> {
  const db = await createBenchDatabase(serverUrl);
  cleanups.push(() => db.drop());
  return db.url;
}

// ---------------------------------------------------------------------------------------------
// edge: the compiled binary against a compiled empty Bun program

async function edgeSection(work: string, url: string, adminToken: string, rows: Row[], details: Record<string, unknown>): Promise<void> {
  log("building the edge binary and two compiled Bun baselines (an empty program, and one that idles)");
  const bin = join(work, "ongrid-edge");
  const binMiB = buildEdge(ROOT, bin);
  const bun = join(ROOT, "node_modules", ".bin", "bun");
  const emptySrc = join(work, "empty.ts");
  const idleSrc = join(work, "idle.ts");
  writeFileSync(emptySrc, "export {};\n");
  writeFileSync(idleSrc, "setInterval(() => {}, 1 << 30);\n");
  const empty = join(work, "bun-empty");
  const idle = join(work, "bun-idle");
  for (const [src, out] of [[emptySrc, empty], [idleSrc, idle]] as const) execFileSync(bun, ["build", "--compile", "--minify", "--sourcemap=none", src, "--outfile", out], { cwd: work, stdio: "pipe" });
  const transport = createGrpcTransport({ baseUrl: url, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${adminToken}`), next(req))] });
  const edgeSvc = createClient(EdgeService, transport);
  const ids = Array.from({ length: EDGE_STARTS }, (_, i) => `bench-bin-${i}`);
  const tokens = new Map<string, string>();
  for (const id of ids) tokens.set(id, (await edgeSvc.enrollEdge({ id })).token);
  log(`edge binary: ${EDGE_STARTS} starts to "online" (GetEdge every 10 ms), idle RSS 3 s after each; baselines ${EDGE_STARTS} times each`);
  const starts: Array<{ startMs: number; idleRssKb: number }> = [];
  for (const id of ids) starts.push(await startEdgeOnce(bin, url, id, tokens.get(id)!, edgeSvc));
  const emptyMs: number[] = [];
  const idleKb: number[] = [];
  for (let i = 0; i < EDGE_STARTS; i++) {
    emptyMs.push(await spawnToExitMs(empty));
    const p = start("bun-idle", idle, []);
    idleKb.push(median(await sampleRss(p.pid, 3000, 3, 250)));
    await stop(p);
  }
  rows.push(
    boundRow("compiled edge idle RSS 3 s after connecting (baseline: compiled idle Bun program)", "MB", median(starts.map((s) => s.idleRssKb)) * KIB_TO_MB, median(idleKb) * KIB_TO_MB, 40),
    boundRow("compiled edge start to connected, median (baseline: compiled empty Bun program, spawn to exit)", "ms", median(starts.map((s) => s.startMs)), median(emptyMs), 150),
  );
  details.edge = { binary_mib: binMiB, starts, bun_empty_spawn_to_exit_ms: emptyMs, bun_idle_rss_kib: idleKb };
}

// ---------------------------------------------------------------------------------------------
// audit: the real audit log against raw multi-row INSERTs

function benchRecord(i: number): AuditRecord {
  const at = new Date(Date.UTC(2026, 11, 1, 0, 0, 0, i % 1000));
  return {
    sessionId: "",
    toolName: BENCH_SKILL,
    args: { text: `call ${i}` },
    result: { success: true, output: `call ${i}`, duration_ms: 1, truncated: false, edge_id: `bench-sim-${String(i % 10000).padStart(5, "0")}` },
    error: "",
    deviceId: `bench-sim-${String(i % 10000).padStart(5, "0")}`,
    startedAt: at,
    finishedAt: at,
    durationMs: 1,
    callerUserId: "admin",
    callerRole: "admin",
    decision: "allow",
    decisionReason: "safe: read-only skill",
    approvalId: "",
    sopHash: "",
  };
}

async function auditSection(serverUrl: string, n: number, rows: Row[], details: Record<string, unknown>): Promise<void> {
  const url = await benchDatabase(serverUrl);
  log(`audit: ${n} rows through the audit log into PostgreSQL ${new URL(url).pathname.slice(1)} (all appended at once, as concurrent calls do)`);
  const database = await openDatabase({ databaseUrl: url, dataDir: "", log: pino({ level: "warn" }) });
  try {
    const audit = createAuditLog(database);
    // Warm up (connection, prepared plans, JIT) with 2,000 rows, then measure.
    await Promise.all(Array.from({ length: 2000 }, (_, i) => audit.append(benchRecord(i))));
    const records = Array.from({ length: n }, (_, i) => benchRecord(i + 2000));
    const t0 = performance.now();
    const settled = await Promise.allSettled(records.map((r) => audit.append(r)));
    const ms = performance.now() - t0;
    const failed = settled.filter((s) => s.status === "rejected").length;
    const report = await audit.verify();
    const sql = postgres(url, { max: 4, onnotice: () => {} });
    try {
      const [{ count }] = await sql<Array<{ count: string }>>`select count(*)::text as count from tool_calls`;
      const stored = Number(count) - 2000;
      // Baseline: the same rows (as the log stored them) inserted raw, multi-row, same batch size.
      await sql`create table tool_calls_raw (like tool_calls including all)`;
      const raw = await sql`select * from tool_calls where seq > 2000 order by seq`;
      const batch = 1000;
      const b0 = performance.now();
      const inserts: Promise<unknown>[] = [];
      for (let i = 0; i < raw.length; i += batch) inserts.push(sql`insert into tool_calls_raw ${sql(raw.slice(i, i + batch) as never)}`);
      await Promise.all(inserts);
      const rawMs = performance.now() - b0;
      const auditRate = (n / ms) * 1000;
      const rawRate = (raw.length / rawMs) * 1000;
      rows.push(
        { ...boundRow("audit rows written to PostgreSQL through the audit log (baseline: raw multi-row INSERT)", "rows/s", auditRate, rawRate, Number.NaN), target: ">= 20,000 rows/s", result: auditRate >= 20_000 ? "pass" : "fail" },
        { ...infoRow("audit rows lost / chain", "rows", n - stored), target: "0, chain intact", result: n - stored === 0 && failed === 0 && report.ok ? "pass" : "fail" },
      );
      details.audit = { rows: n, ms, failed, stored, verify: report, raw_ms: rawMs, raw_batch: batch, audit_rows_per_s: auditRate, raw_rows_per_s: rawRate };
      log(`audit: ${auditRate.toFixed(0)} rows/s (raw INSERT ${rawRate.toFixed(0)} rows/s); stored ${stored}/${n}, ${failed} failed, chain ${report.ok ? "intact" : `BROKEN: ${report.reason}`}`);
    } finally {
      await sql.end({ timeout: 5 });
    }
  } finally {
    await database.close();
  }
}

// ---------------------------------------------------------------------------------------------
// the manager process

// ---------------------------------------------------------------------------------------------
// throughput: 10 edges, closed loop

async function throughputSection(url: string, adminToken: string, o: ReturnType<typeof flags>, databaseUrl: string, rows: Row[], details: Record<string, unknown>): Promise<void> {
  log(`throughput: ${THROUGHPUT_EDGES} simulated edges, ${o.concurrency} ExecuteSkill calls in flight for ${o.throughputMs / 1000} s (2 s warm-up)`);
  const edges = await enrollFleet(url, adminToken, THROUGHPUT_EDGES, "bench-tp-", 8, () => ({ bench_tp: "1" }));
  const fleet = await startFleet({ url, edges, processes: 1, labels: { bench_tp: "1" }, latencyMs: 0, latencyJitterMs: 0, failureRate: 0, reconnect: false, maxBackoffMs: 30_000, inventory: "echo" });
  cleanups.push(() => fleet.close());
  if (fleet.connected.connected !== THROUGHPUT_EDGES) throw new Error(`throughput edges did not connect: ${fleet.connected.errors.join("; ")}`);
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const count = async () => Number((await sql<Array<{ c: string }>>`select count(*)::text as c from tool_calls where tool_name = ${BENCH_SKILL} and device_id like 'bench-tp-%'`)[0]!.c);
  const before = await count();
  const gen = startWorker("load-gen", join(HERE, "load-gen.ts"));
  type Out = { ok: number; failed: number; errors: string[]; ms: number; latency: { p50: number; p99: number }; requestBytes: number };
  const ong = await gen.request<Out & Record<string, unknown>>({ cmd: "execute", client: o.rpcClient, url, token: adminToken, edgeIds: edges.map((e) => e.id), concurrency: o.concurrency, durationMs: o.throughputMs, warmupMs: 2000 }, o.throughputMs + 120_000);
  const after = await count();
  await sql.end({ timeout: 5 });
  await fleet.close();
  log(`ongrid: ${ong.ok} calls (${ong.failed} failed) in ${(ong.ms / 1000).toFixed(1)} s; audit rows for the edges ${before} → ${after}`);
  const bare = startWorker("bare-server", join(HERE, "bare-server.ts"));
  const port = (await bare.request<{ port: number }>({ cmd: "listen" }, 30_000)).port;
  const base = await gen.request<Out & Record<string, unknown>>({ cmd: "bare", url: `http://127.0.0.1:${port}`, requestBytes: ong.requestBytes, concurrency: o.concurrency, durationMs: o.throughputMs, warmupMs: 2000 }, o.throughputMs + 120_000);
  await stop(gen);
  await stop(bare);
  const rate = (ong.ok / ong.ms) * 1000;
  const bareRate = (base.ok / base.ms) * 1000;
  // The same load inside the manager: a manager in this process, its dispatcher called directly
  // (validated, gated, sent down the tunnel, audited; no RPC, no authentication).
  log(`throughput inside the manager: dispatcher.execute with ${o.concurrency} calls in flight for ${o.throughputMs / 1000} s (2 s warm-up), 10 simulated edges`);
  const inDb = await benchDatabase(o.databaseUrl);
  const inproc = await startManager(loadConfig({ env: {}, overrides: { "server.max_connections_per_address": 0, "server.host": "127.0.0.1", "server.port": 0, data_dir: join(tmpdir(), `ongrid-bench-inproc-${process.pid}`), database_url: inDb, log_level: "warn", "skills.max_calls_per_user": Math.max(256, o.concurrency) } }));
  let inClosed = false;
  cleanups.push(() => (inClosed ? undefined : inproc.close()));
  const inEdges: Array<{ id: string; token: string }> = [];
  for (let i = 0; i < THROUGHPUT_EDGES; i++) inEdges.push({ id: `bench-in-${i}`, token: (await inproc.edges.enroll(`bench-in-${i}`)).token });
  const inFleet = await startFleet({ url: inproc.url, edges: inEdges, processes: 1, labels: {}, latencyMs: 0, latencyJitterMs: 0, failureRate: 0, reconnect: false, maxBackoffMs: 30_000, inventory: "echo" });
  if (inFleet.connected.connected !== THROUGHPUT_EDGES) throw new Error(`in-manager throughput edges did not connect: ${inFleet.connected.errors.join("; ")}`);
  const caller = { userId: "admin", role: "admin" } as const;
  const inOut = await closedLoop(o.concurrency, o.throughputMs, 2000, async (i) => {
    const out = await inproc.dispatcher.execute({ key: BENCH_SKILL, params: { text: "x".repeat(64) }, edgeId: inEdges[i % THROUGHPUT_EDGES]!.id, caller });
    if (!out.result?.success || out.auditSeq <= 0) throw new Error(`call not successful: ${JSON.stringify(out.result?.error)}`);
  });
  await inFleet.close();
  inClosed = true;
  await inproc.close();
  const inRate = (inOut.ok / inOut.ms) * 1000;
  log(`inside the manager: ${inOut.ok} calls (${inOut.failed} failed) in ${(inOut.ms / 1000).toFixed(1)} s`);
  rows.push(
    { ...infoRow(`dispatch throughput inside the manager (dispatcher.execute), ${THROUGHPUT_EDGES} edges, ${o.concurrency} in flight, audited (baseline: bare node:http2 unary)`, "calls/s", inRate, bareRate), target: ">= 20,000 calls/s", result: inRate >= 20_000 && inOut.failed === 0 ? "pass" : "fail" },
    { ...infoRow(`ExecuteSkill RPC throughput (${o.rpcClient === "raw" ? "hand-framed gRPC client" : "connect-node gRPC client"} in another process), ${THROUGHPUT_EDGES} edges, ${o.concurrency} in flight, audited (baseline: bare node:http2 unary)`, "calls/s", rate, bareRate), target: ">= 20,000 calls/s", result: rate >= 20_000 && ong.failed === 0 ? "pass" : "fail" },
  );
  details.throughput = { rpc_client: o.rpcClient, rpc: ong, in_manager: inOut, baseline: base, audit_rows_added_rpc: after - before, rpc_calls_per_s: rate, in_manager_calls_per_s: inRate, bare_calls_per_s: bareRate };
}

// ---------------------------------------------------------------------------------------------
// fleet: RSS per idle edge, fan-out, restart

async function fleetSection(mgr: { proc: ManagerProc; port: number; dataDir: string; databaseUrl: string; needFds: number; prof?: string }, adminToken: string, o: ReturnType<typeof flags>, rows: Row[], details: Record<string, unknown>): Promise<ManagerProc> {
  const N = o.edges;
  const transport = createGrpcTransport({ baseUrl: mgr.proc.url, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${adminToken}`), next(req))] });
  const skills = createClient(SkillService, transport);
  log(`enrolling ${N} edges via EnrollEdge`);
  const e0 = performance.now();
  const edges = await enrollFleet(mgr.proc.url, adminToken, N, "bench-sim-", 8, () => ({ bench: "1" }));
  const enrolMs = performance.now() - e0;
  const gc = await attachGc(mgr.proc.child, log);
  log("manager RSS before the fleet (settled, then after a forced full GC)");
  const before = await settledRss(mgr.proc.child.pid);
  const beforeGc = await gc?.read();
  log(`connecting ${N} simulated edges (${o.inventory === "builtins" ? "real edge inventory" : "one echo skill"}, hello ${o.hello === "digest" ? "by inventory digest" : "with the full inventory"}, one HTTP/2 connection each) from ${o.simProcesses} processes`);
  const fleet: Fleet = await startFleet({ url: mgr.proc.url, edges, processes: o.simProcesses, labels: { bench: "1" }, latencyMs: 0, latencyJitterMs: 0, failureRate: 0, reconnect: true, maxBackoffMs: 30_000, inventory: o.inventory, hello: o.hello, needFds: Math.ceil(N / o.simProcesses) + 512 });
  cleanups.push(() => fleet.close());
  if (fleet.connected.connected !== N) throw new Error(`${fleet.connected.failed} of ${N} simulated edges did not connect: ${fleet.connected.errors.join("; ")}`);
  log(`all ${N} connected in ${(fleet.connected.ms / 1000).toFixed(1)} s`);
  const after = await settledRss(mgr.proc.child.pid);
  const afterGc = await gc?.read();
  await gc?.close();

  log(`fan-out: FanOutSkill selector "bench=1" to ${N} edges, 1 warm-up + ${o.fanOutRuns} runs`);
  // Where the CPU goes during a fan-out (the two cores are shared): the manager, the simulated
  // edges, PostgreSQL, and this process (the Connect client decoding one event per edge).
  const fanCpu = () =>
    cpuMeter({ manager: () => [mgr.proc.child.pid], "simulated edges": () => fleet.workers.map((w) => w.pid), postgresql: () => pidsNamed("postgres") });
  const fanRuns = await timeFanOuts(skills, { selector: "bench=1", expected: N, runs: o.fanOutRuns, log, cpu: fanCpu });

  log("restart: the manager is stopped (SIGTERM) and started again on the same port and database; time until every edge is back");
  await fleet.mark();
  const asked = (await fleet.stats()).inventoryRequests;
  const down = performance.now();
  await stop(mgr.proc.child, 30_000);
  log(`  manager stopped after ${((performance.now() - down) / 1000).toFixed(1)} s; starting it again`);
  const proc = await startManagerProcess({ root: ROOT, port: mgr.port, dataDir: mgr.dataDir, databaseUrl: mgr.databaseUrl, needFds: mgr.needFds, cpuProfDir: mgr.prof });
  const upMs = performance.now() - down;
  log(`  listening again ${(upMs / 1000).toFixed(1)} s after the stop`);
  let peakKb = 0;
  let back = -1;
  const deadline = performance.now() + 180_000;
  while (performance.now() < deadline) {
    if (!alive(proc.child)) throw new Error(`the restarted manager exited; stderr:\n${proc.child.stderr().slice(-4000)}`);
    peakKb = Math.max(peakKb, rssKb(proc.child.pid));
    const s = await fleet.stats();
    if (s.connected >= N) {
      back = performance.now() - down;
      break;
    }
    await sleep(250);
  }
  const stats = await fleet.stats(true);
  const perSecond = stats.welcomesPerSecond ?? [];
  const settledAfter = await settledRss(proc.child.pid);
  log(back >= 0 ? `all ${N} back ${(back / 1000).toFixed(1)} s after the stop (manager listening again after ${(upMs / 1000).toFixed(1)} s); peak RSS ${(peakKb / 1024).toFixed(0)} MiB` : `only ${stats.connected}/${N} back after 180 s`);
  const inventoryRequests = stats.inventoryRequests - asked;
  log(`  edges asked for their inventory during the reconnect: ${inventoryRequests}`);
  // What the restarted manager warned about while the fleet came back (it logs at warn): counts by
  // message, over the last 64 KiB of its log that the bench keeps.
  const warnings: Record<string, number> = {};
  for (const line of proc.child.stderr().split("\n")) {
    let msg = "";
    try {
      msg = String((JSON.parse(line) as { msg?: unknown }).msg ?? "");
    } catch {
      msg = line.trim() ? "(not a JSON log line)" : "";
    }
    if (msg) warnings[msg] = (warnings[msg] ?? 0) + 1;
  }
  if (Object.keys(warnings).length) log(`  the restarted manager's warnings (last 64 KiB of its log): ${Object.entries(warnings).map(([k, n]) => `${n}× ${k}`).join("; ")}`);
  await fleet.close();

  log(`baseline: a bare node:http2 server holding ${N} streams, and its broadcast to them`);
  const bare = startWorker("bare-server", join(HERE, "bare-server.ts"), N + 512);
  const bareUrl = `http://127.0.0.1:${(await bare.request<{ port: number }>({ cmd: "listen" }, 30_000)).port}`;
  const bareGc = await attachGc(bare, log);
  const bareBefore = await bareGc?.read();
  const clients: Worker = startWorker("bare-clients", join(HERE, "bare-clients.ts"), N + 512);
  const bareConn = await clients.request<{ connected: number; errors: string[] }>({ cmd: "connect", url: bareUrl, n: N, parallel: 64 }, 300_000);
  if (bareConn.connected !== N) throw new Error(`bare clients did not connect: ${bareConn.errors.join("; ")}`);
  const bareAfter = await bareGc?.read();
  await bareGc?.close();
  const session = http2.connect(bareUrl);
  const bareFan: number[] = [];
  const bareCpu: Array<Record<string, number>> = [];
  for (let i = 0; i <= o.fanOutRuns; i++) {
    const cpu = cpuMeter({ "bare server": () => [bare.pid], "bare clients": () => [clients.pid] });
    const t0 = performance.now();
    const res = await unary(session, "/broadcast", Buffer.alloc(0));
    const ms = performance.now() - t0;
    if (i > 0) bareCpu.push(cpu());
    const body = JSON.parse(res.body.toString()) as { targets: number; replied: number };
    if (res.status !== 200 || body.replied !== N) throw new Error(`bare broadcast answered ${res.status}: ${res.body}`);
    if (i > 0) bareFan.push(ms);
  }
  session.destroy();
  await clients.request({ cmd: "close" }, 30_000);
  await stop(clients);
  await stop(bare);

  const perEdge = (a?: GcReading, b?: GcReading) => (a && b ? ((b.medianKb - a.medianKb) / N) * KIB_TO_KB : Number.NaN);
  const fanP50 = median(fanRuns.map((r) => r.ms));
  const bareP50 = median(bareFan);
  const medianCpu = (runs: Array<Record<string, number>>) =>
    Object.keys(runs[0] ?? {}).map((k) => `${k} ${median(runs.map((r) => r[k]!)).toFixed(0)}`).join(", ");
  log(`CPU ms per fan-out (median): ongrid: ${medianCpu(fanRuns.map((r) => r.cpuMs))}; bare: ${medianCpu(bareCpu)}`);
  const peakRate = Math.max(0, ...perSecond);
  const meanRate = back > 0 ? N / (back / 1000) : Number.NaN;
  rows.push(
    { ...infoRow("edges held by one manager", "edges", fleet.connected.connected), target: `${N}`, result: fleet.connected.connected === N ? "pass" : "fail" },
    boundRow("manager RSS per idle edge, forced full GC (baseline: bare node:http2 server)", "KB", perEdge(beforeGc, afterGc), perEdge(bareBefore, bareAfter), 35),
    { ...ratioRow(`fan-out of a safe skill to all ${N}, p50 of ${o.fanOutRuns} (baseline: bare node:http2 broadcast)`, "ms", fanP50, bareP50, 2), target: "<= 1.5 s and <= 2x baseline", result: fanP50 <= 1500 && fanP50 <= 2 * bareP50 ? "pass" : "fail" },
    boundRow(`reconnect after a manager restart, all ${N} back`, "s", back >= 0 ? back / 1000 : Number.NaN, Number.NaN, 60),
    infoRow("manager peak RSS during the reconnect / settled after", "MiB", peakKb / 1024, settledAfter.medianKb / 1024),
    infoRow("accept rate during the reconnect: peak second / mean", "edges/s", peakRate, meanRate),
  );
  details.fleet = {
    enrol_ms: enrolMs,
    connect_ms: fleet.connected.ms,
    rss_kib: { settle_only: { before, after }, forced_gc: { before: beforeGc, after: afterGc, bare_before: bareBefore, bare_after: bareAfter } },
    fan_out: { ongrid_runs: fanRuns, baseline_runs_ms: bareFan, baseline_cpu_ms: bareCpu },
    restart: { back_ms: back, manager_listening_after_ms: upMs, inventory_requests: inventoryRequests, manager_warnings: warnings, peak_rss_kib: peakKb, settled_rss_kib: settledAfter, welcomes_per_second: perSecond, sim_stats: stats },
  };
  return proc;
}

async function main(): Promise<number> {
  const o = flags();
  const loadBefore = loadavg();
  const lim = fdLimit();
  const needFds = o.edges + 1024;
  log(`load average ${loadBefore.map((l) => l.toFixed(2)).join(" ")} on ${cpus().length} CPUs; open files soft ${lim.soft}, hard ${lim.hard}`);
  if (loadBefore[0] > 0.5) log("warning: the machine is busy; other processes will skew these numbers");
  if (lim.hard < needFds) throw new Error(`the hard open-file limit (${lim.hard}) is below what the manager needs for ${o.edges} edges (${needFds}); raise it (ulimit -Hn) or use --edges`);
  const work = mkdtempSync(join(tmpdir(), "ongrid-bench-fleet-"));
  cleanups.push(() => rmSync(work, { recursive: true, force: true }));
  const rows: Row[] = [];
  const details: Record<string, unknown> = {};

  if (o.only.has("audit")) await auditSection(o.databaseUrl, o.auditRows, rows, details);

  if (o.only.has("edge") || o.only.has("throughput") || o.only.has("fleet")) {
    const databaseUrl = await benchDatabase(o.databaseUrl);
    const port = await freePort();
    const dataDir = join(work, "data");
    log(`starting the manager (own process, PostgreSQL ${new URL(databaseUrl).pathname.slice(1)}, port ${port})`);
    // The throughput load is one user's calls, --concurrency at once: the per-user limit must let them all run.
    const limits = { ONGRID_SKILLS_MAX_CALLS_PER_USER: String(Math.max(256, o.concurrency)) };
    let proc: ManagerProc = await startManagerProcess({ root: ROOT, port, dataDir, databaseUrl, needFds, cpuProfDir: o.managerCpuProf, firstStart: true, env: limits });
    const adminToken = (proc as { adminToken?: string }).adminToken;
    if (!adminToken) throw new Error("the manager did not print its first admin token");
    if (o.only.has("edge")) await edgeSection(work, proc.url, adminToken, rows, details);
    if (o.only.has("throughput")) await throughputSection(proc.url, adminToken, o, databaseUrl, rows, details);
    if (o.only.has("fleet")) proc = await fleetSection({ proc, port, dataDir, databaseUrl, needFds, prof: o.managerCpuProf }, adminToken, o, rows, details);
    await stop(proc.child, 30_000);
  }

  const totalS = secs();
  console.log(`\nongrid fleet benchmark — ${o.edges} edges, ${cpus().length} CPUs, node ${process.version}\n`);
  console.log(table(rows));
  writeJson(o.out, {
    benchmark: "fleet",
    date: new Date().toISOString(),
    duration_s: totalS,
    machine: machineInfo(loadBefore, loadavg(), { open_files: lim }),
    params: { edges: o.edges, inventory: o.inventory, sim_processes: o.simProcesses, fan_out_runs: o.fanOutRuns, throughput_ms: o.throughputMs, concurrency: o.concurrency, audit_rows: o.auditRows, sections: [...o.only] },
    units: { KB: "1000 bytes (VmRSS KiB × 1.024)", MB: "10^6 bytes", MiB: "2^20 bytes" },
    metrics: rows,
    details,
  });
  console.log(`\nJSON: ${o.out}\ntotal time: ${totalS.toFixed(1)} s`);
  return 0;
}

runBench(main, cleanup, 30);
