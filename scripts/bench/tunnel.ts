/**
 * The tunnel benchmark: Execute round trip, fan-out to N simulated edges, manager RSS per idle
 * edge, and the compiled edge binary (size, start to connected, idle RSS) — each next to a bare
 * node:http2 baseline. Prints a table and writes JSON (scripts/bench/results/tunnel.json).
 *
 *   npm run bench:tunnel -- [--edges 2000] [--rt-iterations 2000] [--out FILE] [--manager-cpu-prof DIR]
 *                        [--database-url postgres://…]
 *
 * The manager runs on embedded PGlite unless --database-url names a PostgreSQL server: the run then
 * creates a database of its own there (ongrid_bench_<random>) and drops it at the end.
 * --manager-cpu-prof writes a V8 CPU profile of the manager process (node --cpu-prof) into DIR.
 *
 * Next to the fan-out it reports the CPU each process used per edge call (from /proc, in clock
 * ticks: 10 ms over N edge calls, so 5 µs steps at 2,000 edges) and the audit floor: the bare
 * broadcast with one row of the real audit log committed per reply, run alternately with it.
 */
import http2 from "node:http2";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { EdgeService } from "../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { ExecuteSkillRequestSchema, SkillService } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { loadConfig } from "../../manager/config/load.ts";
import { startManager } from "../../manager/main.ts";
import { BENCH_SKILL } from "./lib/constants.ts";
import { buildEdge, nodeStartMs, startEdgeOnce } from "./lib/edge-binary.ts";
import { attachGc, type GcReading } from "./lib/gc-rss.ts";
import { cpuMeter, fdLimit, pidsNamed, settledRss, start, stop, stopAll, waitForLine } from "./lib/proc.ts";
import { boundRow, infoRow, ratioRow, table, writeJson, type Row, machineInfo } from "./lib/report.ts";
import { timeSequential, unary } from "./lib/round-trip.ts";
import { median, quantile } from "./lib/stats.ts";
import { pool, startWorker } from "./lib/worker.ts";
import { intFlag } from "./lib/flags.ts";
import { createBenchDatabase, runBench } from "./lib/run.ts";

const ROOT = resolve(import.meta.dirname, "..", "..");
const HERE = import.meta.dirname;
const FAN_OUT_RUNS = 5;
const EDGE_STARTS = 5;
/** /proc reports KiB; the targets are read as decimal KB and MB (the stricter reading). */
const KIB_TO_KB = 1.024;
const KIB_TO_MB = 1024 / 1e6;

function flags() {
  const { values } = parseArgs({
    options: {
      edges: { type: "string", default: "2000" },
      "rt-iterations": { type: "string", default: "2000" },
      out: { type: "string" },
      "manager-cpu-prof": { type: "string" },
      "database-url": { type: "string", default: "" },
    },
  });
  return {
    edges: intFlag("edges", values.edges!, 1),
    rtIterations: intFlag("rt-iterations", values["rt-iterations"]!, 10),
    out: resolve(values.out ?? join(HERE, "results", "tunnel.json")),
    managerCpuProf: values["manager-cpu-prof"] ? resolve(values["manager-cpu-prof"]) : undefined,
    databaseUrl: values["database-url"]!,
  };
}

const tmpDirs: string[] = [];
const sessions: http2.ClientHttp2Session[] = [];
let cleaning: Promise<void> | undefined;
const dropDatabases: Array<() => Promise<void>> = [];
/** Stops every process this run started and removes its temp dirs; safe to call twice. */
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const s of sessions) s.destroy();
    await stopAll();
    for (const d of tmpDirs) rmSync(d, { recursive: true, force: true });
    for (const drop of dropDatabases) await drop().catch((err: Error) => console.error(`bench: could not drop a bench database: ${err.message}`));
  })();
  return cleaning;
}

const dbName = (url: string) => new URL(url).pathname.slice(1);
const began = performance.now();
const mib = (r?: { medianKb: number }) => (r ? (r.medianKb / 1024).toFixed(1) : "-");
const log = (msg: string) => console.log(`[${((performance.now() - began) / 1000).toFixed(1).padStart(6)} s] ${msg}`);

async function main(): Promise<number> {
  const opt = flags();
  const N = opt.edges;
  const needFds = N + 512;
  const lim = fdLimit();
  const loadBefore = loadavg();
  log(`load average ${loadBefore.map((l) => l.toFixed(2)).join(" ")} on ${cpus().length} CPUs`);
  if (loadBefore[0] > 0.5) log("warning: the machine is busy; other processes will skew these numbers");
  log(`open files: soft ${lim.soft}, hard ${lim.hard}; the manager, the edge simulator and the bare server/clients each need ~${needFds}`);
  if (lim.soft < needFds) log(`soft limit too low: those processes run under sh -c "ulimit -n ${Math.min(65536, lim.hard)}; exec …"`);
  const work = mkdtempSync(join(tmpdir(), "ongrid-bench-"));
  tmpDirs.push(work);

  log("building the edge binary");
  const bin = join(work, "ongrid-edge");
  const binMiB = buildEdge(ROOT, bin);

  let databaseUrl = "";
  // The audit floor's log (bare server) has a database of its own, so that its chain and the manager's never meet.
  let floorDb: { url: string; drop(): Promise<void> } | undefined;
  if (opt.databaseUrl) {
    const db = await createBenchDatabase(opt.databaseUrl);
    databaseUrl = db.url;
    dropDatabases.push(db.drop);
    floorDb = await createBenchDatabase(opt.databaseUrl);
    dropDatabases.push(floorDb.drop);
  }
  log(`starting the manager (separate process, ${databaseUrl ? `PostgreSQL ${dbName(databaseUrl)}` : "PGlite in a temp dir"}) and the bare http2 server`);
  const profile = opt.managerCpuProf ? ["--cpu-prof", `--cpu-prof-dir=${opt.managerCpuProf}`] : [];
  const manager = start("manager", process.execPath, [...profile, join(ROOT, "bin", "ongrid.mjs"), "manager", "--port", "0", "--data", join(work, "data")], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, ONGRID_LOG_LEVEL: "warn" },
    needFds,
  });
  const url = (await waitForLine(manager, /listening on (https?:\/\/\S+)/, 60_000))[1];
  if (!/^http:\/\/(127\.0\.0\.1|\[::1\]|localhost):/.test(url)) throw new Error(`the manager is not on loopback: ${url}`);
  // Every RPC needs an API token; EnrollEdge needs role admin. A fresh manager prints its admin's
  // token once, on the line after this notice.
  const adminToken = (await waitForLine(manager, /first start: created user "admin"[^\n]*\n(ogu_\S+)\n/, 10_000))[1];
  const bare = startWorker("bare-server", join(HERE, "bare-server.ts"), needFds);
  const bareUrl = `http://127.0.0.1:${(await bare.request<{ port: number }>({ cmd: "listen" }, 30_000)).port}`;
  const bareSession = http2.connect(bareUrl);
  sessions.push(bareSession);
  const transport = createGrpcTransport({
    baseUrl: url,
    interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${adminToken}`), next(req))],
  });
  const skills = createClient(SkillService, transport);
  const edgeSvc = createClient(EdgeService, transport);

  const rtId = "bench-rt";
  const binIds = Array.from({ length: EDGE_STARTS }, (_, i) => `bench-bin-${i}`);
  const simIds = Array.from({ length: N }, (_, i) => `bench-sim-${String(i).padStart(5, "0")}`);
  log(`enrolling ${N + 1 + EDGE_STARTS} edges via EnrollEdge (8 in parallel)`);
  const tokens = new Map<string, string>();
  const enrolStart = performance.now();
  await pool([rtId, ...binIds, ...simIds], 8, async (id) => tokens.set(id, (await edgeSvc.enrollEdge({ id })).token));
  const enrolMs = performance.now() - enrolStart;

  // 1. Execute round trip: client → manager → one simulated edge → back, sequential, one HTTP/2 connection.
  const warmup = Math.min(500, Math.max(100, Math.floor(opt.rtIterations / 4)));
  log(`round trip: ${warmup} warm-up + ${opt.rtIterations} sequential ExecuteSkill calls through one simulated edge`);
  const rtEdge = startWorker("rt-edge", join(ROOT, "scripts", "sim", "edges.ts"));
  const rtConn = await rtEdge.request<{ connected: number; errors: string[] }>({ cmd: "connect", url, edges: [{ id: rtId, token: tokens.get(rtId) }], labels: { bench_rt: "1" }, parallel: 1, inventory: "echo" }, 60_000);
  if (rtConn.connected !== 1) throw new Error(`the round-trip edge did not connect: ${rtConn.errors.join("; ")}`);
  const text = "x".repeat(64);
  const rtRequest = create(ExecuteSkillRequestSchema, { key: BENCH_SKILL, edgeId: rtId, input: { case: "params", value: { text } } });
  const payloadBytes = toBinary(ExecuteSkillRequestSchema, rtRequest).length + 5;
  const rt = await timeSequential(opt.rtIterations, warmup, async () => {
    const res = await skills.executeSkill(rtRequest);
    const out = res.result?.output?.kind;
    if (!res.result?.success || out?.case !== "stringValue" || out.value !== text) throw new Error(`unexpected ExecuteSkill result: ${JSON.stringify(res.result?.error)}`);
  });
  await rtEdge.request({ cmd: "close" }, 10_000);
  await stop(rtEdge);

  log(`round-trip baseline: the same count of ${payloadBytes}-byte unary echoes over one bare node:http2 session`);
  const payload = Buffer.alloc(payloadBytes, 0x78);
  const bareRt = await timeSequential(opt.rtIterations, warmup, async () => {
    const res = await unary(bareSession, "/echo", payload);
    if (res.status !== 200 || res.body.length !== payloadBytes) throw new Error(`bare echo answered ${res.status} with ${res.body.length} bytes`);
  });

  // 1b. The tunnel round trip itself, manager → edge → manager: an execute frame down the stream and
  // the result frame back, timed in the manager (one started in this process, so its hub can be
  // called directly) against the simulated edge in its own process — one HTTP/2 exchange each way,
  // as in the bare echo. Validation, gate and audit are the full round trip's (row above).
  log(`tunnel round trip: ${warmup} warm-up + ${opt.rtIterations} sequential hub calls from a manager in this process to a simulated edge`);
  const inproc = await startManager(
    loadConfig({ env: {}, overrides: { "server.max_connections_per_address": 0, "server.host": "127.0.0.1", "server.port": 0, data_dir: join(work, "inproc"), database_url: databaseUrl, log_level: "warn" } }),
  );
  const hubId = "bench-hub";
  const hubToken = (await inproc.edges.enroll(hubId)).token;
  const hubEdge = startWorker("hub-edge", join(ROOT, "scripts", "sim", "edges.ts"));
  const hubConn = await hubEdge.request<{ connected: number; errors: string[] }>({ cmd: "connect", url: inproc.url, edges: [{ id: hubId, token: hubToken }], labels: {}, parallel: 1, inventory: "echo" }, 60_000);
  if (hubConn.connected !== 1) throw new Error(`the hub round-trip edge did not connect: ${hubConn.errors.join("; ")}`);
  const hubRt = await timeSequential(opt.rtIterations, warmup, async () => {
    const res = await inproc.hub.call(hubId, BENCH_SKILL, { text }, 10_000);
    if (!res.success || res.output !== text) throw new Error(`unexpected hub result: ${JSON.stringify(res.error)}`);
  });
  await hubEdge.request({ cmd: "close" }, 10_000);
  await stop(hubEdge);
  await inproc.close();

  // 4. The edge binary (before the N edges connect, so the manager is quiet).
  log(`edge binary: ${EDGE_STARTS} starts to "online" (GetEdge every 10 ms), idle RSS 3 s after each`);
  const nodeMs: number[] = [];
  for (let i = 0; i < EDGE_STARTS; i++) nodeMs.push(await nodeStartMs());
  const edgeStarts: Array<{ startMs: number; idleRssKb: number }> = [];
  for (const id of binIds) edgeStarts.push(await startEdgeOnce(bin, url, id, tokens.get(id)!, edgeSvc));

  // 3. Manager RSS per idle edge, then 2. fan-out, with N simulated edges in their own process.
  const mgrGc = await attachGc(manager, log);
  log("manager RSS before the simulated edges (3 s, then until 5 samples agree within 1 %), then again after a forced full GC");
  const mgrBefore = await settledRss(manager.pid);
  const mgrBeforeGc = await mgrGc?.read();
  log(`connecting ${N} simulated edges (one HTTP/2 connection each, 64 dialling at a time)`);
  const sim = startWorker("sim-edges", join(ROOT, "scripts", "sim", "edges.ts"), needFds);
  const simConn = await sim.request<{ connected: number; failed: number; errors: string[]; ms: number }>(
    { cmd: "connect", url, edges: simIds.map((id) => ({ id, token: tokens.get(id) })), labels: { bench: "1" }, parallel: 64, inventory: "echo" },
    300_000,
  );
  if (simConn.connected !== N) throw new Error(`${simConn.failed} of ${N} simulated edges did not connect: ${simConn.errors.join("; ")}`);
  log(`all ${N} connected in ${(simConn.ms / 1000).toFixed(1)} s; manager RSS once idle (same settling)`);
  const mgrAfter = await settledRss(manager.pid);
  const mgrAfterGc = await mgrGc?.read();
  await mgrGc?.close();
  log(`manager VmRSS ${mib(mgrBefore)} → ${mib(mgrAfter)} MiB; after forced GC ${mib(mgrBeforeGc)} → ${mib(mgrAfterGc)} MiB`);

  log(`fan-out: FanOutSkill selector "bench=1" with batch_results, and one message per result, alternating: 1 warm-up + ${FAN_OUT_RUNS} runs each`);
  /** PostgreSQL's processes, counted with the others' CPU when the run uses it. */
  const postgresGroup: Record<string, () => number[]> = databaseUrl ? { postgresql: () => pidsNamed("postgres") } : {};
  type FanRun = { ms: number; managerMs: number; results: number; messages: number; succeeded: number; failed: number; timedOut: number; cpuMs: Record<string, number> };
  const fanOnce = async (batchResults: boolean, i: number): Promise<FanRun> => {
    const cpu = cpuMeter({ manager: () => [manager.pid], "simulated edges": () => [sim.pid], ...postgresGroup });
    const t0 = performance.now();
    let results = 0;
    let messages = 0;
    let summary: { durationMs: number; succeeded: number; failed: number; timedOut: number; targeted: number } | undefined;
    for await (const ev of skills.fanOutSkill({ key: BENCH_SKILL, selector: "bench=1", input: { case: "params", value: { text: "x" } }, batchResults }, { timeoutMs: 300_000 })) {
      messages++;
      if (ev.event.case === "edgeResult") results++;
      else if (ev.event.case === "edgeResults") results += ev.event.value.results.length;
      else if (ev.event.case === "summary") summary = ev.event.value;
    }
    const ms = performance.now() - t0;
    const cpuMs = cpu();
    if (!summary) throw new Error("FanOutSkill ended without a summary");
    if (summary.targeted !== N || summary.succeeded !== N || results !== N) log(`warning: fan-out run ${i} targeted ${summary.targeted}, succeeded ${summary.succeeded}, failed ${summary.failed}, ${results} results received`);
    return { ms, managerMs: summary.durationMs, results, messages, succeeded: summary.succeeded, failed: summary.failed, timedOut: summary.timedOut, cpuMs };
  };
  const fanRuns: FanRun[] = [];
  const fanRunsSingle: FanRun[] = [];
  for (let i = 0; i <= FAN_OUT_RUNS; i++) {
    const batched = await fanOnce(true, i);
    const single = await fanOnce(false, i);
    if (i > 0) {
      fanRuns.push(batched);
      fanRunsSingle.push(single);
    }
  }
  const simStats = await sim.request<{ connected: number; lost: number; lostReasons: string[]; answered: number }>({ cmd: "stats" }, 10_000);
  await sim.request({ cmd: "close" }, 30_000);
  await stop(sim);
  await stop(manager, 10_000);

  const bareGc = await attachGc(bare, log);
  log("bare server RSS before its clients (same settling), then again after a forced full GC");
  const bareBefore = await settledRss(bare.pid);
  const bareBeforeGc = await bareGc?.read();
  log(`connecting ${N} bare http2 clients, one held stream each`);
  const clients = startWorker("bare-clients", join(HERE, "bare-clients.ts"), needFds);
  const bareConn = await clients.request<{ connected: number; failed: number; errors: string[]; ms: number }>({ cmd: "connect", url: bareUrl, n: N, parallel: 64 }, 300_000);
  if (bareConn.connected !== N) throw new Error(`${bareConn.failed} of ${N} bare clients did not connect: ${bareConn.errors.join("; ")}`);
  const bareAfter = await settledRss(bare.pid);
  const bareAfterGc = await bareGc?.read();
  await bareGc?.close();
  log(`bare server VmRSS ${mib(bareBefore)} → ${mib(bareAfter)} MiB; after forced GC ${mib(bareBeforeGc)} → ${mib(bareAfterGc)} MiB`);
  log(`audit floor: the bare server opens an audit log (${databaseUrl ? `PostgreSQL ${dbName(floorDb!.url)}` : "PGlite in a temp dir"}) for its audited broadcasts`);
  await bare.request({ cmd: "audit", dataDir: join(work, "bare-audit"), databaseUrl: floorDb?.url ?? "" }, 60_000);
  log(`fan-out baseline: broadcast to ${N} held streams, and the same with one audit row per reply, alternating: 1 warm-up + ${FAN_OUT_RUNS} runs each`);
  type BareRun = { ms: number; cpuMs: Record<string, number> };
  const broadcastOnce = async (path: "/broadcast" | "/broadcast-audited"): Promise<BareRun> => {
    const cpu = cpuMeter({ "bare server": () => [bare.pid], "bare clients": () => [clients.pid], ...postgresGroup });
    const t0 = performance.now();
    const res = await unary(bareSession, path, Buffer.alloc(0));
    const ms = performance.now() - t0;
    const cpuMs = cpu();
    const body = JSON.parse(res.body.toString()) as { targets: number; replied: number };
    if (res.status !== 200 || body.targets !== N || body.replied !== N) throw new Error(`bare ${path} answered ${res.status}: ${res.body}`);
    return { ms, cpuMs };
  };
  const bareRuns: BareRun[] = [];
  const floorRuns: BareRun[] = [];
  for (let i = 0; i <= FAN_OUT_RUNS; i++) {
    const plain = await broadcastOnce("/broadcast");
    const audited = await broadcastOnce("/broadcast-audited");
    if (i > 0) {
      bareRuns.push(plain);
      floorRuns.push(audited);
    }
  }
  const bareFan = bareRuns.map((r) => r.ms);
  await clients.request({ cmd: "close" }, 30_000);

  const mgrPerEdgeKb = ((mgrAfter.medianKb - mgrBefore.medianKb) / N) * KIB_TO_KB;
  const barePerStreamKb = ((bareAfter.medianKb - bareBefore.medianKb) / N) * KIB_TO_KB;
  const perEdge = (a?: GcReading, b?: GcReading) => (a && b ? ((b.medianKb - a.medianKb) / N) * KIB_TO_KB : Number.NaN);
  const heapPerEdge = (a?: GcReading, b?: GcReading) => (a && b ? (b.memory.heapUsed - a.memory.heapUsed) / N / 1000 : Number.NaN);
  /** CPU one process group used per edge call, median over the runs. */
  const cpuPerEdge = (runs: Array<{ cpuMs: Record<string, number> }>, group: string) => median(runs.map((r) => ((r.cpuMs[group] ?? Number.NaN) * 1000) / N));
  const floorStore = databaseUrl ? "PostgreSQL" : "PGlite";
  const rows: Row[] = [
    ratioRow("tunnel round trip manager→edge→manager p50", "ms", quantile(hubRt, 0.5), quantile(bareRt, 0.5), 2),
    infoRow("tunnel round trip manager→edge→manager p99", "ms", quantile(hubRt, 0.99), quantile(bareRt, 0.99)),
    infoRow("ExecuteSkill client→manager→edge→client p50 (validated, gated, audited)", "ms", quantile(rt, 0.5), quantile(bareRt, 0.5)),
    infoRow("ExecuteSkill client→manager→edge→client p99", "ms", quantile(rt, 0.99), quantile(bareRt, 0.99)),
    ratioRow(`fan-out to ${N} edges (batch_results), median of ${FAN_OUT_RUNS}`, "ms", median(fanRuns.map((r) => r.ms)), median(bareFan), 2),
    infoRow(`fan-out to ${N} edges, one message per result, median of ${FAN_OUT_RUNS}`, "ms", median(fanRunsSingle.map((r) => r.ms)), median(bareFan)),
    infoRow(`audit floor: the bare broadcast + one audit row per reply (${floorStore}), median of ${FAN_OUT_RUNS}`, "ms", median(floorRuns.map((r) => r.ms)), median(bareFan)),
    infoRow("fan-out CPU per edge call: manager / bare server", "µs", cpuPerEdge(fanRuns, "manager"), cpuPerEdge(bareRuns, "bare server")),
    infoRow("fan-out CPU per edge call: simulated edges / bare clients", "µs", cpuPerEdge(fanRuns, "simulated edges"), cpuPerEdge(bareRuns, "bare clients")),
    infoRow("fan-out CPU per edge call: client (this process)", "µs", cpuPerEdge(fanRuns, "bench process"), cpuPerEdge(bareRuns, "bench process")),
    infoRow("audit floor CPU per edge call: bare server with its audit log", "µs", cpuPerEdge(floorRuns, "bare server"), cpuPerEdge(bareRuns, "bare server")),
    ...(databaseUrl
      ? [
          infoRow("fan-out CPU per edge call: PostgreSQL (manager / audit floor)", "µs", cpuPerEdge(fanRuns, "postgresql"), cpuPerEdge(floorRuns, "postgresql")),
        ]
      : []),
    boundRow("manager RSS per idle edge, 3 s settle", "KB", mgrPerEdgeKb, barePerStreamKb, 45),
    boundRow("manager RSS per idle edge, forced full GC", "KB", perEdge(mgrBeforeGc, mgrAfterGc), perEdge(bareBeforeGc, bareAfterGc), 45),
    infoRow("edge binary size", "MiB", binMiB),
    infoRow(`edge start to connected, median of ${EDGE_STARTS}`, "ms", median(edgeStarts.map((s) => s.startMs)), median(nodeMs)),
    boundRow("edge idle RSS 3 s after connecting", "MB", median(edgeStarts.map((s) => s.idleRssKb)) * KIB_TO_MB, Number.NaN, 45),
  ];
  const totalS = (performance.now() - began) / 1000;
  const loadAfter = loadavg();
  console.log(`\nongrid tunnel benchmark — ${N} edges, ${opt.rtIterations} round trips, ${cpus().length} CPUs, node ${process.version}\n`);
  console.log(table(rows));
  writeJson(opt.out, {
    benchmark: "tunnel",
    date: new Date().toISOString(),
    duration_s: totalS,
    machine: machineInfo(loadBefore, loadAfter, { open_files: lim }),
    params: { database: databaseUrl ? "postgresql" : "pglite", edges: N, rt_iterations: opt.rtIterations, rt_warmup: warmup, rt_payload_bytes: payloadBytes, fan_out_runs: FAN_OUT_RUNS, edge_starts: EDGE_STARTS },
    units: { KB: "1000 bytes (VmRSS KiB × 1.024)", MB: "10^6 bytes", MiB: "2^20 bytes" },
    metrics: rows,
    details: {
      enrol_ms: enrolMs,
      tunnel_round_trip_ms: { ongrid: { p50: quantile(hubRt, 0.5), p90: quantile(hubRt, 0.9), p99: quantile(hubRt, 0.99), max: Math.max(...hubRt) } },
      round_trip_ms: { ongrid: { p50: quantile(rt, 0.5), p90: quantile(rt, 0.9), p99: quantile(rt, 0.99), max: Math.max(...rt) }, baseline: { p50: quantile(bareRt, 0.5), p90: quantile(bareRt, 0.9), p99: quantile(bareRt, 0.99), max: Math.max(...bareRt) } },
      fan_out: { ongrid_runs: fanRuns, ongrid_runs_one_message_per_result: fanRunsSingle, baseline_runs: bareRuns, audit_floor_runs: floorRuns, sim_edges: { connect_ms: simConn.ms, ...simStats } },
      rss_kib: {
        settle_only: { manager_before: mgrBefore, manager_after: mgrAfter, bare_before: bareBefore, bare_after: bareAfter },
        forced_gc: { manager_before: mgrBeforeGc, manager_after: mgrAfterGc, bare_before: bareBeforeGc, bare_after: bareAfterGc },
        v8_heap_used_per_edge_kb: { manager: heapPerEdge(mgrBeforeGc, mgrAfterGc), bare: heapPerEdge(bareBeforeGc, bareAfterGc) },
        bare_connect_ms: bareConn.ms,
      },
      edge_binary: { size_mib: binMiB, starts: edgeStarts, node_e0_ms: nodeMs },
    },
  });
  console.log(`\nJSON: ${opt.out}\ntotal time: ${totalS.toFixed(1)} s`);
  return 0;
}

runBench(main, cleanup, 15);
