/**
 * The scale-out benchmark (issue 31): several managers, each its own process, on one PostgreSQL
 * database, each holding `--edges-per-manager` simulated edges (scripts/sim/), against one manager
 * alone measured in the same run. Every call goes through manager #1. Prints a table and writes
 * JSON (scripts/bench/results/cluster.json).
 *
 *   npm run bench:cluster -- [--managers 3] [--edges-per-manager 5000] [--fan-out-runs 5]
 *                            [--exec-calls 300] [--sim-processes 1] [--inventory builtins|echo]
 *                            [--failover-timeout 120] [--database-url postgres://postgres@127.0.0.1:5432/postgres]
 *                            [--out FILE] [--manager-cpu-prof DIR] [--manager-cpus 0.4] [--no-gzip]
 *
 * With --manager-cpu-prof, the JSON's fan_out_window_us (baseline and cluster) are the monotonic
 * clock's µs around the timed fan-outs; scripts/bench/cpuprofile-top.ts cuts the profile to them.
 *
 * The run, in order:
 * - baseline: manager #1 alone on the database with its edges: FanOutSkill of bench_echo to all
 *   of them (1 warm-up + `--fan-out-runs`, median), and `--exec-calls` sequential ExecuteSkill
 *   calls on one of them (after a warm-up), p50 and p99;
 * - cluster: managers #2…#M start on the same database (server.manager_id bench-m2…, their own
 *   ports, server.presence_poll left at its default) and their edges connect; the time until
 *   manager #1 lists every edge online (ListEdges, online_only); then FanOutSkill through #1 to
 *   every edge of every manager (the other managers' shares forwarded over PeerService), and
 *   ExecuteSkill through #1 on an edge #2 holds (forwarded) alternated with one on an edge #1
 *   holds (local); the peer link's overhead per call is the difference of their medians;
 * - failover: manager #2 is killed (SIGKILL). Every simulated edge has the manager URLs as a
 *   failover list (its own manager first, then the others, rotated edge by edge so a dead
 *   manager's edges spread over the survivors): on the loss it dials the next one after the real
 *   edge's full-jitter backoff (base 250 ms, cap 30 s). Measured: the time from the kill until #1
 *   lists all of #2's edges online again, held by a surviving manager; then one more fan-out
 *   through #1 to every edge. (The simulated edge does not move back to its first manager later,
 *   as the real edge's `--rebalance-interval` does: #2 is not restarted here.)
 *
 * Everything (every manager, the simulated fleet, PostgreSQL and this process) shares the
 * machine's CPUs; the table says how many and the load average. With `--manager-cpus C` (Linux,
 * root) each manager process, in the baseline and in the cluster, runs in a control group of its
 * own limited to C CPUs' worth of time (scripts/bench/lib/cpu-limit.ts): every manager then has
 * the same share whether one or M run, as if each had a machine of C CPUs — what the fan-out ratio
 * would be with a core per manager, on a machine with fewer cores than managers. C × M should
 * leave the simulators and PostgreSQL room (the bench refuses C × M ≥ the CPUs).
 *
 * With `--no-gzip` the bench's client offers no response compression, so the managers send it
 * their FanOutSkill messages uncompressed (connect-node gzips every message a client accepts gzip
 * for): what a fan-out costs the entry without that, baseline and cluster alike.
 *
 * The run creates a database of its
 * own on the server (ongrid_bench_<random>) and drops it.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { create } from "@bufbuild/protobuf";
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { EdgeService } from "../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { ExecuteSkillRequestSchema, SkillService } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { BENCH_SKILL } from "./lib/constants.ts";
import { fanOutOnce, timeFanOuts, type FanOutRun } from "./lib/fan-out.ts";
import { intFlag } from "./lib/flags.ts";
import { startManagerProcess, type ManagerProc } from "./lib/manager-proc.ts";
import { alive, cpuMeter, fdLimit, pidsNamed, sleep, stop } from "./lib/proc.ts";
import { cpuLimitSupport, limitCpu } from "./lib/cpu-limit.ts";
import { boundRow, infoRow, machineInfo, ratioRow, table, writeJson, type Row } from "./lib/report.ts";
import { timeInterleaved, timeSequential } from "./lib/round-trip.ts";
import { createBenchDatabase, runBench, runContext } from "./lib/run.ts";
import { median, quantile } from "./lib/stats.ts";
import { enrollFleet, startFleet, type Fleet } from "../sim/fleet.ts";
import { freeStablePort } from "../../test/support/free-port.ts";

const ROOT = resolve(import.meta.dirname, "..", "..");
/** The monotonic clock in µs: what V8 CPU profiles of every process on the machine are timed by. */
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
const HERE = import.meta.dirname;
/** Untimed ExecuteSkill calls before the timed ones (connections, JIT, the peer link's HTTP/2 session). */
const EXEC_WARMUP = 50;
/** The real edge's backoff cap (ongrid-edge --max-backoff default). */
const MAX_BACKOFF_MS = 30_000;
/** How long the other managers' edges may take to connect and show on #1. */
const SEEN_TIMEOUT_MS = 300_000;
/** Goals. */
const FAN_OUT_MAX_RATIO = 1.5;
const FORWARD_MAX_RATIO = 1.5;
const FAILOVER_MAX_S = 30;

function flags() {
  const { values } = parseArgs({
    options: {
      managers: { type: "string", default: "3" },
      "edges-per-manager": { type: "string", default: "5000" },
      "fan-out-runs": { type: "string", default: "5" },
      "exec-calls": { type: "string", default: "300" },
      "sim-processes": { type: "string", default: "1" },
      inventory: { type: "string", default: "builtins" },
      "failover-timeout": { type: "string", default: "120" },
      "database-url": { type: "string", default: process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres" },
      out: { type: "string" },
      "manager-cpu-prof": { type: "string" },
      "manager-cpus": { type: "string" },
      "no-gzip": { type: "boolean", default: false },
    },
  });
  const inventory = values.inventory!;
  if (inventory !== "builtins" && inventory !== "echo") throw new Error(`--inventory: "${inventory}" is not builtins or echo`);
  const managers = intFlag("managers", values.managers!, 2);
  let managerCpus: number | undefined;
  if (values["manager-cpus"] !== undefined) {
    managerCpus = Number(values["manager-cpus"]);
    if (!(managerCpus > 0) || managerCpus * managers >= cpus().length) {
      throw new Error(`--manager-cpus: "${values["manager-cpus"]}" must be a number of CPUs above 0 whose ${managers}-fold is below this machine's ${cpus().length} CPUs (the simulators and PostgreSQL need the rest)`);
    }
    const why = cpuLimitSupport();
    if (why) throw new Error(`--manager-cpus: ${why}`);
  }
  return {
    managers,
    edgesPerManager: intFlag("edges-per-manager", values["edges-per-manager"]!, 1),
    fanOutRuns: intFlag("fan-out-runs", values["fan-out-runs"]!, 1),
    execCalls: intFlag("exec-calls", values["exec-calls"]!, 10),
    /** Simulator processes per manager's share of the fleet. */
    simProcesses: intFlag("sim-processes", values["sim-processes"]!, 1),
    inventory: inventory as "builtins" | "echo",
    failoverTimeoutMs: intFlag("failover-timeout", values["failover-timeout"]!, 1) * 1000,
    databaseUrl: values["database-url"]!,
    out: resolve(values.out ?? join(HERE, "results", "cluster.json")),
    /** Writes a V8 CPU profile of manager #1 (the entry) into this directory. */
    managerCpuProf: values["manager-cpu-prof"] ? resolve(values["manager-cpu-prof"]) : undefined,
    /** Each manager process limited to this many CPUs' worth of time. */
    managerCpus,
    /** The bench's client does not offer gzip, so the managers do not compress what they send it. */
    noGzip: values["no-gzip"]!,
  };
}

const { secs, log, cleanups, cleanup } = runContext("bench");

/** One manager of the cluster: its number (1-based), id, port, process. */
interface Member {
  n: number;
  id: string;
  port: number;
  url: string;
  dataDir: string;
  proc?: ManagerProc;
}

/** The admin's clients of one manager (offering no response compression with `noGzip`). */
function clientsOf(url: string, token: string, noGzip: boolean) {
  const transport = createGrpcTransport({ baseUrl: url, ...(noGzip ? { acceptCompression: [] } : {}), interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${token}`), next(req))] });
  return { skills: createClient(SkillService, transport), edges: createClient(EdgeService, transport) };
}

/** An ExecuteSkill of bench_echo on `edgeId` that throws unless the edge answered with the text sent. */
function echoCall(skills: Client<typeof SkillService>, edgeId: string): () => Promise<void> {
  const text = "x".repeat(64);
  const req = create(ExecuteSkillRequestSchema, { key: BENCH_SKILL, edgeId, input: { case: "params", value: { text } } });
  return async () => {
    const res = await skills.executeSkill(req);
    const out = res.result?.output?.kind;
    if (!res.result?.success || out?.case !== "stringValue" || out.value !== text || res.result.edgeId !== edgeId) throw new Error(`ExecuteSkill on ${edgeId}: unexpected result ${JSON.stringify(res.result?.error ?? res.result?.edgeId)}`);
  };
}

/**
 * Calls `probe` until it returns a value or `timeoutMs` passes, waiting between calls as long as
 * the last one took (at least 200 ms) so that polling a large listing does not load the manager
 * it measures. `ms` is from `since` to the return of the call that succeeded; `resolutionMs` is
 * how long before that the previous (failing) call had started.
 */
async function until<T>(what: string, since: number, timeoutMs: number, probe: () => Promise<T | undefined>, progress?: () => string): Promise<{ value: T; ms: number; polls: number; resolutionMs: number; probeMs: number[] }> {
  let polls = 0;
  let lastStart = since;
  let lastLog = performance.now();
  const probeMs: number[] = [];
  for (;;) {
    const t0 = performance.now();
    const v = await probe();
    const t1 = performance.now();
    polls++;
    probeMs.push(t1 - t0);
    if (v !== undefined) return { value: v, ms: t1 - since, polls, resolutionMs: t1 - lastStart, probeMs };
    lastStart = t0;
    if (t1 - since > timeoutMs) throw new Error(`${what}: not within ${timeoutMs / 1000} s${progress ? ` (${progress()})` : ""}`);
    if (progress && t1 - lastLog > 5000) {
      log(`  … ${progress()}`);
      lastLog = t1;
    }
    await sleep(Math.max(200, t1 - t0));
  }
}

/** Median and tail of ExecuteSkill latencies. */
const latency = (ms: number[]) => ({ p50: median(ms), p99: quantile(ms, 0.99), n: ms.length });

async function main(): Promise<number> {
  const o = flags();
  const M = o.managers;
  const N = o.edgesPerManager;
  const total = M * N;
  const loadBefore = loadavg();
  const lim = fdLimit();
  // A survivor of the failover may hold its own edges and a share of the dead manager's.
  const needFds = total + 1024;
  log(`load average ${loadBefore.map((l) => l.toFixed(2)).join(" ")} on ${cpus().length} CPUs; open files soft ${lim.soft}, hard ${lim.hard}`);
  log(`${M} managers, ${N} simulated edges each (${total} in all), the simulated fleet (${M * o.simProcesses} processes) and PostgreSQL all share these ${cpus().length} CPUs`);
  if (loadBefore[0] > 0.5) log("warning: the machine is busy; other processes will skew these numbers");
  if (lim.hard < needFds) throw new Error(`the hard open-file limit (${lim.hard}) is below what a manager may need for ${total} edges (${needFds}); raise it (ulimit -Hn) or use --edges-per-manager`);

  const work = mkdtempSync(join(tmpdir(), "ongrid-bench-cluster-"));
  cleanups.push(() => rmSync(work, { recursive: true, force: true }));
  const db = await createBenchDatabase(o.databaseUrl);
  cleanups.push(() => db.drop());
  const members: Member[] = [];
  for (let n = 1; n <= M; n++) {
    // Ports below the ephemeral range: edges redialling a dead manager's port must be refused, not self-connected.
    const port = await freeStablePort();
    members.push({ n, id: `bench-m${n}`, port, url: `http://127.0.0.1:${port}`, dataDir: join(work, `m${n}`) });
  }
  // Stopped before the database is dropped (cleanups run last-added first).
  cleanups.push(() => Promise.all(members.map((m) => (m.proc ? stop(m.proc.child, 30_000) : undefined))).then(() => undefined));
  const fleets: Fleet[] = [];
  cleanups.push(() => Promise.all(fleets.map((f) => f.close())).then(() => undefined));

  const startMember = async (m: Member, firstStart: boolean) => {
    const t0 = performance.now();
    const proc = await startManagerProcess({ root: ROOT, port: m.port, dataDir: m.dataDir, databaseUrl: db.url, needFds, firstStart, env: { ONGRID_MANAGER_ID: m.id }, cpuProfDir: m.n === 1 ? o.managerCpuProf : undefined });
    if (proc.url !== m.url) throw new Error(`manager #${m.n} listens on ${proc.url}, not ${m.url}`);
    m.proc = proc;
    if (o.managerCpus !== undefined) {
      const unlimit = limitCpu(proc.child.pid, o.managerCpus, m.id);
      cleanups.push(async () => unlimit());
    }
    log(`  manager #${m.n} (${m.id}, pid ${proc.child.pid}) listening on ${m.url} after ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    return proc;
  };
  /** Manager #k's edges' failover list: its own manager, then the others, rotated by the edge's index. */
  const urlsFor = (k: number, j: number) => {
    const others = members.filter((_, i) => i !== k).map((m) => m.url);
    const r = j % others.length;
    return [members[k]!.url, ...others.slice(r), ...others.slice(0, r)].join(",");
  };
  const managerPids = (which: Member[]) => () => which.filter((m) => m.proc && alive(m.proc.child)).map((m) => m.proc!.child.pid);
  const rest = M === 2 ? "#2" : `#2…#${M}`;
  const simPids = () => fleets.flatMap((f) => f.workers.map((w) => w.pid));
  const details: Record<string, unknown> = {};
  const rows: Row[] = [];

  // -------------------------------------------------------------------------------------------
  // baseline: manager #1 alone

  log(`starting manager #1 alone (own process, PostgreSQL ${new URL(db.url).pathname.slice(1)})`);
  const first = await startMember(members[0]!, true);
  const adminToken = first.adminToken;
  if (!adminToken) throw new Error("manager #1 did not print its first admin token");
  const m1 = clientsOf(members[0]!.url, adminToken, o.noGzip);
  log(`enrolling ${M} × ${N} edges through manager #1 (labels bench=1, bench_home=m<n>)`);
  const e0 = performance.now();
  const enrolled: Array<Array<{ id: string; token: string; labels: Record<string, string>; url: string }>> = [];
  for (let k = 0; k < M; k++) {
    const edges = await enrollFleet(members[0]!.url, adminToken, N, `bench-m${k + 1}-`, 8, () => ({ bench: "1", bench_home: `m${k + 1}` }));
    enrolled.push(edges.map((e, j) => ({ ...e, url: urlsFor(k, j) })));
  }
  const enrolMs = performance.now() - e0;
  const connectFleet = (k: number) =>
    startFleet({
      url: members[k]!.url,
      edges: enrolled[k]!,
      processes: o.simProcesses,
      labels: {},
      latencyMs: 0,
      latencyJitterMs: 0,
      failureRate: 0,
      reconnect: true,
      maxBackoffMs: MAX_BACKOFF_MS,
      inventory: o.inventory,
      needFds: Math.ceil(N / o.simProcesses) + 512,
    }).then((f) => {
      fleets[k] = f;
      if (f.connected.connected !== N) throw new Error(`${f.connected.failed} of manager #${k + 1}'s ${N} simulated edges did not connect: ${f.connected.errors.join("; ")}`);
      return f;
    });
  log(`connecting manager #1's ${N} simulated edges (${o.inventory === "builtins" ? "real edge inventory" : "one echo skill"})`);
  const f1 = await connectFleet(0);
  log(`  all ${N} connected in ${(f1.connected.ms / 1000).toFixed(1)} s`);

  log(`baseline fan-out: FanOutSkill "bench=1" through manager #1 alone to its ${N} edges, 1 warm-up + ${o.fanOutRuns} runs`);
  const baseCpu = () => cpuMeter({ "manager #1": managerPids([members[0]!]), "simulated edges": simPids, postgresql: () => pidsNamed("postgres") });
  const baseFrom = monotonicUs();
  const baseFan = await timeFanOuts(m1.skills, { selector: "bench=1", expected: N, runs: o.fanOutRuns, log, cpu: baseCpu });
  const baseWindow = [baseFrom, monotonicUs()] as const;
  const localEdge = enrolled[0]![0]!.id;
  const forwardedEdge = enrolled[1]![0]!.id;
  log(`baseline ExecuteSkill: ${EXEC_WARMUP} warm-up + ${o.execCalls} sequential calls through manager #1 on ${localEdge}`);
  const baseExec = latency(await timeSequential(o.execCalls, EXEC_WARMUP, echoCall(m1.skills, localEdge)));
  log(`  p50 ${baseExec.p50.toFixed(2)} ms, p99 ${baseExec.p99.toFixed(2)} ms`);

  // -------------------------------------------------------------------------------------------
  // cluster: M managers on the database

  log(`starting manager${M > 2 ? "s" : ""} ${rest} on the same database`);
  for (const m of members.slice(1)) await startMember(m, false);
  log(`connecting their simulated edges (${(M - 1) * N}), each to its own manager`);
  const c0 = performance.now();
  await Promise.all(members.slice(1).map((_, i) => connectFleet(i + 1)));
  const welcomedMs = performance.now() - c0;
  log(`  all welcomed ${(welcomedMs / 1000).toFixed(1)} s after starting their simulators; waiting until manager #1 lists all ${total} online (ListEdges online_only)`);
  const welcomedAt = performance.now();
  let lastSeen = 0;
  const seen = await until(
    `manager #1 listing all ${total} edges online`,
    welcomedAt,
    SEEN_TIMEOUT_MS,
    async () => {
      const { edges } = await m1.edges.listEdges({ selector: "bench=1", onlineOnly: true });
      lastSeen = edges.length;
      if (edges.length < total) return undefined;
      const byHolder: Record<string, number> = {};
      for (const e of edges) byHolder[e.managerId] = (byHolder[e.managerId] ?? 0) + 1;
      return byHolder;
    },
    () => `${lastSeen}/${total} listed online`,
  );
  const seenFromStartMs = welcomedMs + seen.ms;
  log(`  manager #1 lists all ${total} ${(seen.ms / 1000).toFixed(2)} s after the last welcome (${(seenFromStartMs / 1000).toFixed(1)} s after starting the simulators; ${seen.polls} ListEdges, each ${median(seen.probeMs).toFixed(0)} ms median); holders: ${JSON.stringify(seen.value)}`);
  for (const m of members) if (seen.value[m.id] !== N) log(`warning: manager #1 lists ${seen.value[m.id] ?? 0} edges held by ${m.id}, not ${N}`);

  log(`cluster fan-out: FanOutSkill "bench=1" through manager #1 to all ${total} edges of ${M} managers, 1 warm-up + ${o.fanOutRuns} runs`);
  const clusterCpu = () =>
    cpuMeter({ "manager #1": managerPids([members[0]!]), "other managers": managerPids(members.slice(1)), "simulated edges": simPids, postgresql: () => pidsNamed("postgres") });
  const clusterFrom = monotonicUs();
  const clusterFan = await timeFanOuts(m1.skills, { selector: "bench=1", expected: total, runs: o.fanOutRuns, log, cpu: clusterCpu });
  const clusterWindow = [clusterFrom, monotonicUs()] as const;

  const holder = (await m1.edges.getEdge({ id: forwardedEdge })).edge?.managerId;
  if (holder !== members[1]!.id) throw new Error(`manager #1 says ${forwardedEdge} is held by "${holder}", not ${members[1]!.id}`);
  log(`cluster ExecuteSkill: ${EXEC_WARMUP} warm-up + ${o.execCalls} rounds through manager #1, alternating ${forwardedEdge} (held by #2: forwarded) and ${localEdge} (held by #1: local)`);
  const [fwdMs, localMs] = await timeInterleaved(o.execCalls, EXEC_WARMUP, [echoCall(m1.skills, forwardedEdge), echoCall(m1.skills, localEdge)]);
  const fwd = latency(fwdMs!);
  const local = latency(localMs!);
  log(`  forwarded p50 ${fwd.p50.toFixed(2)} ms, p99 ${fwd.p99.toFixed(2)} ms; local p50 ${local.p50.toFixed(2)} ms, p99 ${local.p99.toFixed(2)} ms`);

  // -------------------------------------------------------------------------------------------
  // failover: kill -9 manager #2

  const dead = members[1]!;
  const survivors = new Set(members.filter((m) => m !== dead).map((m) => m.id));
  const deadFleet = fleets[1]!;
  const idOfUrl = new Map(members.map((m) => [m.url, m.id]));
  await deadFleet.mark();
  log(`failover: SIGKILL to manager #2 (${dead.id}, pid ${dead.proc!.child.pid}), holding ${N} edges; waiting until manager #1 lists them all online on ${[...survivors].join(" or ")}`);
  const k0 = performance.now();
  dead.proc!.child.proc.kill("SIGKILL");
  await dead.proc!.child.exited;
  let backInSim: number | undefined;
  let simConnected = 0;
  let moved = 0;
  // ListEdges reads every edge's row (skills included): it is only polled once the simulator
  // has every edge welcomed again, so as not to load manager #1 during the reconnection.
  const failover = await until(
    `manager #1 listing ${dead.id}'s ${N} edges online on a surviving manager`,
    k0,
    o.failoverTimeoutMs,
    async () => {
      if (backInSim === undefined) {
        const s = await deadFleet.stats();
        simConnected = s.connected;
        if (s.connected < N) return undefined;
        backInSim = s.lastWelcomeMs ?? Number.NaN;
      }
      const { edges } = await m1.edges.listEdges({ selector: `bench_home=m${dead.n}`, onlineOnly: true });
      moved = edges.filter((e) => survivors.has(e.managerId)).length;
      return moved >= N ? moved : undefined;
    },
    () => `${simConnected}/${N} welcomed again by the simulator's count, ${moved}/${N} listed online on a survivor by #1`,
  ).catch((err: Error) => {
    log(`warning: ${err.message}`);
    return undefined;
  });
  const failoverMs = failover?.ms ?? Number.NaN;
  const afterKill = await deadFleet.stats(true);
  const where = Object.fromEntries(Object.entries(afterKill.connectedTo).map(([u, c]) => [idOfUrl.get(u) ?? u, c]));
  log(
    failover
      ? `  all ${N} listed on survivors ${(failoverMs / 1000).toFixed(2)} s after the kill (poll resolution ${(failover.resolutionMs / 1000).toFixed(2)} s); the simulated edges were all welcomed again ${backInSim !== undefined ? `${(backInSim / 1000).toFixed(2)} s` : "(not seen)"} after it; now on ${JSON.stringify(where)}`
      : `  only ${moved}/${N} listed on survivors after ${o.failoverTimeoutMs / 1000} s; the simulated edges are on ${JSON.stringify(where)}`,
  );
  log(`after the failover: one FanOutSkill "bench=1" through manager #1 to all ${total} edges`);
  const after = await fanOutOnce(m1.skills, "bench=1").catch((err: Error) => {
    log(`warning: the fan-out after the failover failed: ${err.message}`);
    return undefined;
  });
  if (after) log(`  ${after.succeeded}/${after.targeted} succeeded in ${after.ms.toFixed(0)} ms`);

  for (const m of members) if (m.proc && m !== dead) await stop(m.proc.child, 30_000);
  await Promise.all(fleets.map((f) => f.close()));
  fleets.length = 0;

  // -------------------------------------------------------------------------------------------
  // report

  const loadAfter = loadavg();
  const fanP50 = (runs: FanOutRun[]) => median(runs.map((r) => r.ms));
  const clusterFanP50 = fanP50(clusterFan);
  const baseFanP50 = fanP50(baseFan);
  /** CPU ms of a fan-out summed over every measured process (managers, simulator, PostgreSQL, this one), median over the runs. */
  const fanCpu = (runs: FanOutRun[]) => median(runs.map((r) => Object.values(r.cpuMs).reduce((a, v) => a + v, 0)));
  const medianCpu = (runs: FanOutRun[]) => Object.fromEntries(Object.keys(runs[0]?.cpuMs ?? {}).map((k) => [k, median(runs.map((r) => r.cpuMs[k]!))]));
  const clusterCpuMs = medianCpu(clusterFan);
  const baseCpuMs = medianCpu(baseFan);
  log(`CPU ms per fan-out (median): cluster ${JSON.stringify(clusterCpuMs)}; baseline ${JSON.stringify(baseCpuMs)}`);
  // The entry gates, audits and streams every edge's call; it runs its own edges' calls on its tunnel
  // and hands the others' to their holders. Its CPU per forwarded call against per local call bounds
  // the fan-out ratio with a core per manager: cluster ÷ baseline = 1 + (M − 1) × forwarded ÷ local.
  const entryCpu = clusterCpuMs["manager #1"] ?? Number.NaN;
  const baseEntryCpu = baseCpuMs["manager #1"] ?? Number.NaN;
  const entryPerLocalUs = (baseEntryCpu / N) * 1000;
  const entryPerForwardedUs = ((entryCpu - baseEntryCpu) / ((M - 1) * N)) * 1000;
  rows.push(
    { ...infoRow(`edges manager #1 lists online: ${M} managers × ${N}`, "edges", total), target: `${total}`, result: Object.values(seen.value).reduce((a, c) => a + c, 0) === total ? "pass" : "fail" },
    infoRow(`time until manager #1 lists them all online, after the last edge was welcomed (poll resolution ≈ ${(seen.resolutionMs / 1000).toFixed(2)} s)`, "s", seen.ms / 1000),
    infoRow(`time until manager #1 lists them all online, from starting the simulators of ${rest}'s ${(M - 1) * N} edges (their start-up included)`, "s", seenFromStartMs / 1000),
    ratioRow(`fan-out through #1 to all ${total} edges of ${M} managers, p50 of ${o.fanOutRuns} (baseline: #1 alone, its ${N})`, "ms", clusterFanP50, baseFanP50, FAN_OUT_MAX_RATIO),
    infoRow(`CPU time of one fan-out, all processes, median (baseline: #1 alone); ÷ ${cpus().length} CPUs is its floor in wall time here`, "ms", fanCpu(clusterFan), fanCpu(baseFan)),
    infoRow(
      `CPU time of one fan-out in manager #1 (the entry), median: the ratio is the fan-out ratio's floor when every manager has a CPU share of its own${o.managerCpus !== undefined ? ` (here ${o.managerCpus} CPUs each: ÷ ${o.managerCpus} is its floor in wall time)` : ""}`,
      "ms",
      entryCpu,
      baseEntryCpu,
    ),
    infoRow(`manager #1's CPU per edge call of a fan-out: forwarded ((cluster − baseline) ÷ ${(M - 1) * N}) against local (baseline ÷ ${N})`, "µs", entryPerForwardedUs, entryPerLocalUs),
    ratioRow(`ExecuteSkill p50 through #1 on an edge #2 holds, forwarded (baseline: on an edge #1 holds, same run)`, "ms", fwd.p50, local.p50, FORWARD_MAX_RATIO),
    infoRow(`ExecuteSkill p99 through #1, forwarded (baseline: local, same run)`, "ms", fwd.p99, local.p99),
    infoRow("peer-link overhead per forwarded call: forwarded p50 − local p50", "ms", fwd.p50 - local.p50),
    infoRow(`ExecuteSkill p50 on an edge #1 holds, in the cluster (baseline: #1 alone)`, "ms", local.p50, baseExec.p50),
    infoRow(`ExecuteSkill p99 on an edge #1 holds, in the cluster (baseline: #1 alone)`, "ms", local.p99, baseExec.p99),
    boundRow(`failover: kill -9 of #2 until #1 lists its ${N} edges online on a survivor`, "s", failoverMs / 1000, Number.NaN, FAILOVER_MAX_S),
    infoRow(`failover: kill -9 of #2 until its ${N} simulated edges were all welcomed again (the simulator's clock)`, "s", backInSim !== undefined ? backInSim / 1000 : Number.NaN),
    { ...infoRow(`fan-out through #1 to all ${total} after the failover: edges answering`, "edges", after?.succeeded ?? Number.NaN), target: `${total}`, result: after?.succeeded === total && after.targeted === total ? "pass" : "fail" },
    infoRow(`CPUs, shared by all ${M} managers, the simulated fleet (${M * o.simProcesses} processes), PostgreSQL and this process`, "CPUs", cpus().length),
    ...(o.managerCpus !== undefined ? [infoRow("CPU limit of each manager process (its own control group), baseline and cluster alike", "CPUs", o.managerCpus)] : []),
    infoRow("load average, 1 min, at the end (baseline: at the start)", "load", loadAfter[0], loadBefore[0]),
  );
  details.baseline = { fan_out_runs: baseFan, fan_out_window_us: baseWindow, execute: { edge: localEdge, ...baseExec } };
  details.cluster = {
    manager_ids: members.map((m) => m.id),
    enrol_ms: enrolMs,
    connect_other_fleets_ms: welcomedMs,
    seen_by_first: { after_welcomed_ms: seen.ms, after_simulators_started_ms: seenFromStartMs, polls: seen.polls, resolution_ms: seen.resolutionMs, list_edges_ms_median: median(seen.probeMs), holders: seen.value },
    fan_out_runs: clusterFan,
    fan_out_window_us: clusterWindow,
    execute: { forwarded: { edge: forwardedEdge, holder, ...fwd }, local: { edge: localEdge, ...local }, peer_link_overhead_p50_ms: fwd.p50 - local.p50 },
  };
  details.failover = {
    killed: dead.id,
    edges: N,
    listed_on_survivors_ms: failoverMs,
    poll_resolution_ms: failover?.resolutionMs,
    listed_on_survivors: moved,
    sim_all_welcomed_ms: backInSim,
    sim_now_on: where,
    sim_stats: afterKill,
    fan_out_after: after,
  };

  const totalS = secs();
  console.log(`\nongrid cluster benchmark — ${M} managers × ${N} edges on one PostgreSQL, ${cpus().length} CPUs, node ${process.version}\n`);
  console.log(table(rows, { ongrid: "cluster", target: "goal", result: "pass/FAIL" }).replace(/ fail(\s*)$/gm, " FAIL$1"));
  console.log(
    `\nmachine bound: all ${M} managers, the simulated fleet (${M * o.simProcesses} processes), PostgreSQL and this process share ${cpus().length} CPUs` +
      (o.managerCpus !== undefined ? `; each manager is limited to ${o.managerCpus} of them` : "") +
      ` (load average ${loadBefore.map((l) => l.toFixed(2)).join(" ")} at the start, ${loadAfter.map((l) => l.toFixed(2)).join(" ")} at the end)`,
  );
  writeJson(o.out, {
    benchmark: "cluster",
    date: new Date().toISOString(),
    duration_s: totalS,
    machine: machineInfo(loadBefore, loadAfter, { open_files: lim, shared_by: `all ${M} managers, the simulated fleet (${M * o.simProcesses} processes), PostgreSQL and the bench process` }),
    params: { managers: M, edges_per_manager: N, fan_out_runs: o.fanOutRuns, exec_calls: o.execCalls, exec_warmup: EXEC_WARMUP, sim_processes_per_manager: o.simProcesses, inventory: o.inventory, failover_timeout_ms: o.failoverTimeoutMs, manager_cpus: o.managerCpus ?? null, no_gzip: o.noGzip },
    goals: { fan_out_ratio: FAN_OUT_MAX_RATIO, forwarded_p50_ratio: FORWARD_MAX_RATIO, failover_s: FAILOVER_MAX_S },
    metrics: rows,
    details,
  });
  console.log(`\nJSON: ${o.out}\ntotal time: ${totalS.toFixed(1)} s`);
  if (o.managerCpuProf) {
    // Written when manager #1 exited (node names it with its pid); its clock is this process's (monotonic).
    const pid = members[0]!.proc!.child.pid;
    const file = readdirSync(o.managerCpuProf).find((f) => f.endsWith(".cpuprofile") && f.includes(`.${pid}.`));
    const path = file ? join(o.managerCpuProf, file) : `${o.managerCpuProf}/<manager #1's>.cpuprofile`;
    console.log(
      `manager #1's CPU profile: ${path}; where its CPU went during the cluster fan-outs, and the baseline's:\n` +
        `  npx tsx scripts/bench/cpuprofile-top.ts ${path} --window ${clusterWindow.join("-")}\n` +
        `  npx tsx scripts/bench/cpuprofile-top.ts ${path} --window ${baseWindow.join("-")}`,
    );
  }
  return 0;
}

runBench(main, cleanup, 60);
