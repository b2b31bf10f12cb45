/**
 * The soak run (issue 11, point 4): one manager (its own process, on a fresh PostgreSQL database
 * or PGlite) and N simulated edges (scripts/sim/) under a mixed load for a while, sampling the
 * manager's RSS, open file descriptors and threads; at the end every call is accounted for in the
 * audit log, the hash chain is verified and RSS and fds are checked for growth.
 *
 *   npm run soak -- [--edges 1000] [--duration 10m] [--sample-every 10s] [--concurrency 32]
 *                   [--failure-rate 0.05] [--database-url postgres://postgres@127.0.0.1:5432/postgres]
 *                   [--pglite] [--out FILE]
 *
 * The load, through the real RPC surface (gRPC over HTTP/2 with the Connect client):
 * - `--concurrency` loops, each calling again as soon as its call is answered: ExecuteSkill of safe
 *   builtins on random edges (most, as the admin and as an operator), invalid params, an unknown
 *   edge, an unknown skill and an enrolled edge that never connects (refused, audited);
 * - every 3 s a FanOutSkill by label selector to a random tenth of the fleet (`bucket=<0..9>`);
 * - every 5 s an operator's mutating call (restart_service in ASK_DESTRUCTIVE mode) that parks an
 *   approval, then denied by an approver through ApprovalService.Deny;
 * - the simulated edges answer after 2–22 ms and fail `--failure-rate` of the calls on purpose;
 * - at about a third of the run, the simulator process holding a tenth of the edges is killed
 *   (SIGKILL; their tunnels drop) and started again (they reconnect).
 *
 * At the end: (1) accounting — every answered call carries the seq of its audit row (fan-outs one
 * per targeted edge; a denial writes one more row under the approval's id); the rows written
 * during the run (AuditService.ListToolCalls, seq after the one before the load) must be exactly
 * those; (2) AuditService.VerifyChain; (3) flatness — least-squares slopes of RSS and fds over the
 * second half of the samples (a second half under 2 minutes is reported but inconclusive). Exit
 * code 0 when all is accounted for, the chain is intact and nothing grows; 1 otherwise; 2 for bad
 * flags. The database (or PGlite directory) is removed at
 * the end, also on Ctrl-C.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { AuditService } from "../proto/gen/ongrid/v1/audit_service_pb.ts";
import { ApprovalService } from "../proto/gen/ongrid/v1/approval_service_pb.ts";
import { IdentityService, Role } from "../proto/gen/ongrid/v1/identity_service_pb.ts";
import { EdgeService } from "../proto/gen/ongrid/v1/edge_service_pb.ts";
import { PermissionMode } from "../proto/gen/ongrid/v1/skill_pb.ts";
import { parseDuration } from "../skill/duration.ts";
import { alive, fdLimit, rssKb, sleep, stop } from "./bench/lib/proc.ts";
import { infoRow, machineInfo, table, writeJson, type Row } from "./bench/lib/report.ts";
import { intFlag } from "./bench/lib/flags.ts";
import { createBenchDatabase, runBench, runContext } from "./bench/lib/run.ts";
import { startManagerProcess } from "./bench/lib/manager-proc.ts";
import { enrollFleet, startFleet, type Fleet, type FleetOptions } from "./sim/fleet.ts";
import { freePort } from "../test/support/free-port.ts";

const ROOT = resolve(import.meta.dirname, "..");
const HERE = import.meta.dirname;

/** Flatness thresholds: RSS growth per hour (extrapolated) as a share of its mean, and fds per minute. */
const RSS_MAX_PCT_PER_HOUR = 5;
const FD_MAX_PER_MINUTE = 1;
/** A second half of the samples shorter than this is too short to extrapolate to an hour: inconclusive. */
const MIN_JUDGE_WINDOW_MS = 120_000;
const FAN_OUT_EVERY_MS = 3000;
const APPROVAL_EVERY_MS = 5000;
const BUCKETS = 10;
const OFFLINE_EDGES = 3;
const CALL_TIMEOUT_MS = 120_000;

// ---------------------------------------------------------------------------------------------
// flags

class FlagError extends Error {}

interface Options {
  edges: number;
  durationMs: number;
  sampleMs: number;
  concurrency: number;
  failureRate: number;
  databaseUrl: string;
  pglite: boolean;
  out: string;
}

function durationFlag(name: string, v: string, minMs: number): number {
  let ms: number;
  try {
    ms = parseDuration(v);
  } catch {
    throw new FlagError(`--${name}: "${v}" is not a duration (digits and a unit, e.g. 60s, 10m, 1h30m)`);
  }
  if (ms < minMs) throw new FlagError(`--${name}: must be at least ${minMs / 1000} s, got "${v}"`);
  return ms;
}

function flags(argv: string[]): Options {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        edges: { type: "string", default: "1000" },
        duration: { type: "string", default: "10m" },
        "sample-every": { type: "string", default: "10s" },
        concurrency: { type: "string", default: "32" },
        "failure-rate": { type: "string", default: "0.05" },
        "database-url": { type: "string" },
        pglite: { type: "boolean", default: false },
        out: { type: "string" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new FlagError((err as Error).message);
  }
  const wrap = <T>(f: () => T): T => {
    try {
      return f();
    } catch (err) {
      throw err instanceof FlagError ? err : new FlagError((err as Error).message);
    }
  };
  const edges = wrap(() => intFlag("edges", values.edges!, 2));
  const durationMs = durationFlag("duration", values.duration!, 10_000);
  const sampleMs = durationFlag("sample-every", values["sample-every"]!, 1000);
  if (sampleMs * 3 > durationMs) throw new FlagError(`--sample-every: ${values["sample-every"]} leaves fewer than 3 samples in --duration ${values.duration}`);
  const concurrency = wrap(() => intFlag("concurrency", values.concurrency!, 1));
  const failureRate = Number(values["failure-rate"]);
  if (values["failure-rate"]!.trim() === "" || !Number.isFinite(failureRate) || failureRate < 0 || failureRate > 1) {
    throw new FlagError(`--failure-rate: must be a number in [0, 1], got "${values["failure-rate"]}"`);
  }
  if (values.pglite && values["database-url"]) throw new FlagError("--database-url: not with --pglite (PGlite keeps its data in a temporary directory)");
  const databaseUrl = values["database-url"] ?? (process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres");
  if (!values.pglite) {
    try {
      const u = new URL(databaseUrl);
      if (!/^postgres(ql)?:$/.test(u.protocol)) throw new Error();
    } catch {
      throw new FlagError(`--database-url: "${databaseUrl}" is not a postgres:// URL`);
    }
  }
  return { edges, durationMs, sampleMs, concurrency, failureRate, databaseUrl, pglite: values.pglite!, out: resolve(values.out ?? join(HERE, "soak-results.json")) };
}

// ---------------------------------------------------------------------------------------------
// process plumbing

const { secs, log, cleanups, cleanup } = runContext("soak");

/** Open file descriptors and threads of a process (NaN when it is gone). */
function fdCount(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return Number.NaN;
  }
}
function threadCount(pid: number): number {
  try {
    const m = /^Threads:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** Least-squares line through (x, y): slope and intercept. */
export function fitLine(xs: number[], ys: number[]): { slope: number; intercept: number } {
  const n = xs.length;
  if (n < 2) return { slope: Number.NaN, intercept: Number.NaN };
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i] - mx) * (ys[i] - my);
    sxx += (xs[i] - mx) ** 2;
  }
  const slope = sxx === 0 ? Number.NaN : sxy / sxx;
  return { slope, intercept: my - slope * mx };
}

function bearer(url: string, token: string) {
  return createGrpcTransport({ baseUrl: url, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${token}`), next(req))] });
}

// ---------------------------------------------------------------------------------------------
// the load and its accounting

type Kind = "execute_safe" | "execute_safe_operator" | "invalid_params" | "unknown_edge" | "unknown_skill" | "offline_edge" | "fan_out_edge" | "approval_request" | "approval_deny" | "fan_out_refused";

interface KindCount {
  calls: number;
  succeeded: number;
  /** Ran on the edge and failed (the simulator's injected failures, an edge gone mid-call). */
  failed_result: number;
  /** Refused or failed before running, by code. */
  refused: Record<string, number>;
  /** Errors that carried no audit seq (transport failures, client deadline). */
  no_seq: number;
}

interface Accounting {
  byKind: Record<string, KindCount>;
  /** seq → what the call was (for examples). */
  seqs: Map<number, string>;
  duplicates: Array<{ seq: number; first: string; second: string }>;
  noSeq: Array<{ kind: Kind; what: string; error: string }>;
  /** Approval id → its request row's seq, and whether the Deny RPC was answered. */
  approvals: Map<string, { askSeq: number; denyAnswered: boolean; denyError?: string }>;
  fanOuts: { runs: number; targeted: number; events: number; mismatched: number };
}

const SAFE_CALLS: Array<{ key: string; params: Record<string, unknown> }> = [
  { key: "host_load", params: {} },
  { key: "bench_echo", params: { text: "soak" } },
  { key: "probe_tcp", params: { host: "db1.internal", port: 5432 } },
  { key: "host_processes", params: { sort_by: "mem", limit: 5 } },
  { key: "probe_dns", params: { name: "api.internal" } },
];
/** Weights of what one loop iteration does. */
const MIX: Array<[Kind, number]> = [
  ["execute_safe", 80],
  ["execute_safe_operator", 6],
  ["invalid_params", 5],
  ["unknown_edge", 3],
  ["unknown_skill", 3],
  ["offline_edge", 3],
];
const MIX_TOTAL = MIX.reduce((a, [, w]) => a + w, 0);

function pickKind(): Kind {
  let r = Math.random() * MIX_TOTAL;
  for (const [k, w] of MIX) if ((r -= w) < 0) return k;
  return "execute_safe";
}
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;

function newAccounting(): Accounting {
  return { byKind: {}, seqs: new Map(), duplicates: [], noSeq: [], approvals: new Map(), fanOuts: { runs: 0, targeted: 0, events: 0, mismatched: 0 } };
}

function countOf(a: Accounting, kind: Kind): KindCount {
  return (a.byKind[kind] ??= { calls: 0, succeeded: 0, failed_result: 0, refused: {}, no_seq: 0 });
}

function noteSeq(a: Accounting, seq: number, what: string): void {
  const prev = a.seqs.get(seq);
  if (prev !== undefined) {
    if (a.duplicates.length < 1000) a.duplicates.push({ seq, first: prev, second: what });
    return;
  }
  a.seqs.set(seq, what);
}

/** Records one answered call: its outcome and its audit seq (or that it had none). */
function noteOutcome(a: Accounting, kind: Kind, what: string, out: { seq: number; success?: boolean; code?: string; error?: string }): void {
  const c = countOf(a, kind);
  c.calls++;
  if (out.code) c.refused[out.code] = (c.refused[out.code] ?? 0) + 1;
  else if (out.success) c.succeeded++;
  else c.failed_result++;
  if (out.seq > 0) noteSeq(a, out.seq, `${kind} ${what}`);
  else {
    c.no_seq++;
    if (a.noSeq.length < 1000) a.noSeq.push({ kind, what, error: out.error ?? out.code ?? "no audit seq" });
  }
}

function errorOutcome(err: unknown): { seq: number; code: string; error: string } {
  const ce = ConnectError.from(err);
  return { seq: Number(ce.metadata.get("ongrid-audit-seq") ?? 0), code: Code[ce.code] ?? String(ce.code), error: ce.message };
}

interface Load {
  admin: Client<typeof SkillService>;
  operator: Client<typeof SkillService>;
  approver: Client<typeof ApprovalService>;
  edgeIds: string[];
  offlineIds: string[];
  victimIds: Set<string>;
  acct: Accounting;
  /** Calls to the killed worker's edges answered "unavailable" (offline) while it was down. */
  victimOffline: { n: number };
}

async function executeOnce(l: Load, kind: Kind): Promise<void> {
  const client = kind === "execute_safe_operator" ? l.operator : l.admin;
  let key: string;
  let params: Record<string, unknown>;
  let edgeId: string;
  switch (kind) {
    case "invalid_params":
      key = "probe_tcp";
      params = { host: "db1.internal", port: 70_000 };
      edgeId = pick(l.edgeIds);
      break;
    case "unknown_edge":
      key = "host_load";
      params = {};
      edgeId = `soak-nope-${Math.floor(Math.random() * 1e6)}`;
      break;
    case "unknown_skill":
      key = "soak_no_such_skill";
      params = {};
      edgeId = pick(l.edgeIds);
      break;
    case "offline_edge":
      key = "host_load";
      params = {};
      edgeId = pick(l.offlineIds);
      break;
    default: {
      const c = pick(SAFE_CALLS);
      key = c.key;
      params = c.params;
      edgeId = pick(l.edgeIds);
    }
  }
  const what = `${key} on ${edgeId}`;
  try {
    const res = await client.executeSkill({ key, edgeId, input: { case: "params", value: params as never } }, { timeoutMs: CALL_TIMEOUT_MS });
    noteOutcome(l.acct, kind, what, { seq: Number(res.auditSeq), success: res.result?.success === true });
  } catch (err) {
    const o = errorOutcome(err);
    if (o.code === "Unavailable" && l.victimIds.has(edgeId)) l.victimOffline.n++;
    noteOutcome(l.acct, kind, what, o);
  }
}

async function fanOutOnce(l: Load): Promise<void> {
  const selector = `soak=1,bucket=${Math.floor(Math.random() * BUCKETS)}`;
  const a = l.acct;
  let events = 0;
  let summary: { targeted: number } | undefined;
  try {
    for await (const ev of l.admin.fanOutSkill({ key: "host_load", selector, input: { case: "params", value: {} }, batchResults: true }, { timeoutMs: CALL_TIMEOUT_MS })) {
      if (ev.event.case === "edgeResults") {
        for (const r of ev.event.value.results) {
          events++;
          noteOutcome(a, "fan_out_edge", `host_load on ${r.edgeId} (fan-out ${selector})`, r.error ? { seq: Number(r.auditSeq), code: r.error.code, error: r.error.message } : { seq: Number(r.auditSeq), success: r.result?.success === true });
        }
      } else if (ev.event.case === "summary") summary = ev.event.value;
    }
  } catch (err) {
    // A fan-out refused as a whole writes one row; one cut short leaves its edges' rows unseen.
    noteOutcome(a, "fan_out_refused", `fan-out ${selector}`, errorOutcome(err));
  }
  a.fanOuts.runs++;
  a.fanOuts.events += events;
  a.fanOuts.targeted += summary?.targeted ?? 0;
  if (summary && summary.targeted !== events) a.fanOuts.mismatched++;
}

async function approvalOnce(l: Load): Promise<void> {
  const edgeId = pick(l.edgeIds.filter((id) => !l.victimIds.has(id)));
  const what = `restart_service on ${edgeId}`;
  let id = "";
  try {
    const res = await l.operator.executeSkill(
      { key: "restart_service", edgeId, input: { case: "params", value: { unit: "nginx" } }, permissionMode: PermissionMode.ASK_DESTRUCTIVE, waitForApproval: false },
      { timeoutMs: CALL_TIMEOUT_MS },
    );
    const seq = Number(res.auditSeq);
    id = res.approval?.id ?? "";
    noteOutcome(l.acct, "approval_request", what, id ? { seq, code: "parked" } : { seq, success: res.result?.success === true });
    if (id) l.acct.approvals.set(id, { askSeq: seq, denyAnswered: false });
  } catch (err) {
    noteOutcome(l.acct, "approval_request", what, errorOutcome(err));
  }
  if (!id) return;
  await sleep(100 + Math.random() * 400);
  const entry = l.acct.approvals.get(id)!;
  const c = countOf(l.acct, "approval_deny");
  c.calls++;
  try {
    await l.approver.deny({ id, reason: "soak: denied on purpose" }, { timeoutMs: CALL_TIMEOUT_MS });
    entry.denyAnswered = true;
    c.succeeded++;
  } catch (err) {
    const o = errorOutcome(err);
    c.refused[o.code] = (c.refused[o.code] ?? 0) + 1;
    // A refusal from the workflow is audited too (one row under the approval's id); a transport
    // failure is not known to have reached the manager.
    if (o.code === "Unavailable" || o.code === "DeadlineExceeded" || o.code === "Canceled") {
      c.no_seq++;
      entry.denyError = o.error;
      if (l.acct.noSeq.length < 1000) l.acct.noSeq.push({ kind: "approval_deny", what: `Deny ${id}`, error: o.error });
    } else entry.denyAnswered = true;
  }
}

// ---------------------------------------------------------------------------------------------
// main

interface Sample {
  t_s: number;
  rss_kib: number;
  fds: number;
  threads: number;
  calls: number;
  calls_per_s: number;
  edges_online: number;
}

async function main(o: Options): Promise<number> {
  const loadBefore = loadavg();
  const lim = fdLimit();
  const needFds = o.edges + OFFLINE_EDGES + 1024;
  log(`soak: ${o.edges} edges, ${o.durationMs / 1000} s, a sample every ${o.sampleMs / 1000} s, ${o.concurrency} calls in flight, failure rate ${o.failureRate}; ${o.pglite ? "PGlite" : "PostgreSQL"}`);
  log(`load average ${loadBefore.map((x) => x.toFixed(2)).join(" ")} on ${cpus().length} CPUs; open files soft ${lim.soft}, hard ${lim.hard}`);
  if (lim.hard < needFds) throw new Error(`the hard open-file limit (${lim.hard}) is below what the manager needs for ${o.edges} edges (${needFds}); raise it (ulimit -Hn) or use --edges`);

  const work = mkdtempSync(join(tmpdir(), "ongrid-soak-"));
  cleanups.push(() => rmSync(work, { recursive: true, force: true }));
  let databaseUrl: string | undefined;
  let dbName = "PGlite (temporary directory)";
  if (!o.pglite) {
    const db = await createBenchDatabase(o.databaseUrl);
    cleanups.push(async () => {
      await db.drop();
      log(`dropped database ${dbName}`);
    });
    databaseUrl = db.url;
    dbName = new URL(db.url).pathname.slice(1);
  }
  const port = await freePort();
  log(`starting the manager (own process, ${o.pglite ? "PGlite" : `PostgreSQL database ${dbName}`}, port ${port})`);
  const started = await startManagerProcess({ root: ROOT, port, dataDir: join(work, "data"), databaseUrl, needFds, firstStart: true, listenTimeoutMs: 120_000, tokenTimeoutMs: 30_000 });
  const mgr = { ...started, adminToken: started.adminToken! };
  cleanups.push(() => stop(mgr.child, 30_000));
  const pid = mgr.child.pid;

  // Users: an operator (requests) and an approver (denies).
  const adminT = bearer(mgr.url, mgr.adminToken);
  const identity = createClient(IdentityService, adminT);
  const tokenFor = async (id: string, role: Role) => {
    await identity.createUser({ id, role });
    return (await identity.createToken({ userId: id, description: "soak" })).token;
  };
  const operatorToken = await tokenFor("soak-operator", Role.OPERATOR);
  const approverToken = await tokenFor("soak-approver", Role.APPROVER);

  // The fleet: the main part, a tenth in a process of its own (killed and restarted mid-run), and
  // a few enrolled edges that never connect.
  log(`enrolling ${o.edges + OFFLINE_EDGES} edges via EnrollEdge`);
  const victimN = Math.max(1, Math.round(o.edges / 10));
  const mainN = o.edges - victimN;
  // Enrolled with the labels the fan-outs select by (the manager's labels decide, not the hello's).
  const bucketed = (offset: number) => (i: number) => ({ soak: "1", bucket: String((i + offset) % BUCKETS) });
  const mainEdges = await enrollFleet(mgr.url, mgr.adminToken, mainN, "soak-e-", 8, bucketed(0));
  const victimEdges = await enrollFleet(mgr.url, mgr.adminToken, victimN, "soak-v-", 8, bucketed(mainN));
  const offline = await enrollFleet(mgr.url, mgr.adminToken, OFFLINE_EDGES, "soak-off-");
  const behaviour: Omit<FleetOptions, "edges" | "processes"> = {
    labels: { soak: "1" },
    url: mgr.url,
    latencyMs: 2,
    latencyJitterMs: 20,
    failureRate: o.failureRate,
    reconnect: true,
    maxBackoffMs: 5000,
    inventory: "builtins",
  };
  const mainProcs = mainN > 5000 ? 2 : 1;
  log(`connecting ${mainN} simulated edges (${mainProcs} process${mainProcs > 1 ? "es" : ""}) and ${victimN} more in a process that will be killed`);
  const fleets: { main?: Fleet; victim?: Fleet } = {};
  cleanups.push(async () => {
    await Promise.all([fleets.main?.close(), fleets.victim?.close()]);
  });
  [fleets.main, fleets.victim] = await Promise.all([
    startFleet({ ...behaviour, edges: mainEdges, processes: mainProcs, needFds: Math.ceil(mainN / mainProcs) + 512 }),
    startFleet({ ...behaviour, edges: victimEdges, processes: 1, needFds: victimN + 512 }),
  ]);
  const connected = fleets.main.connected.connected + fleets.victim.connected.connected;
  if (connected !== o.edges) throw new Error(`${o.edges - connected} of ${o.edges} simulated edges did not connect: ${[...fleets.main.connected.errors, ...fleets.victim.connected.errors].join("; ")}`);
  log(`all ${o.edges} connected`);
  const online = async (): Promise<number> => {
    let n = 0;
    for (const f of [fleets.main, fleets.victim]) if (f) n += await f.stats().then((s) => s.connected, () => 0);
    return n;
  };

  const edgeSvc = createClient(EdgeService, adminT);
  /** Online edges as the manager sees them (the never-connected ones are not online). */
  const managerOnline = async () => (await edgeSvc.listEdges({ selector: "soak=1", onlineOnly: true }, { timeoutMs: 60_000 })).edges.length;
  const audit = createClient(AuditService, adminT);
  const startSeq = Number((await audit.listToolCalls({ newestFirst: true, limit: 1 })).toolCalls[0]?.seq ?? 0n);
  log(`audit rows before the load: up to seq ${startSeq}`);

  const load: Load = {
    admin: createClient(SkillService, adminT),
    operator: createClient(SkillService, bearer(mgr.url, operatorToken)),
    approver: createClient(ApprovalService, bearer(mgr.url, approverToken)),
    edgeIds: [...mainEdges, ...victimEdges].map((e) => e.id),
    offlineIds: offline.map((e) => e.id),
    victimIds: new Set(victimEdges.map((e) => e.id)),
    acct: newAccounting(),
    victimOffline: { n: 0 },
  };

  // The run.
  log(`load for ${o.durationMs / 1000} s: ${o.concurrency} loops of ExecuteSkill (mixed), a fan-out every ${FAN_OUT_EVERY_MS / 1000} s, an approval to deny every ${APPROVAL_EVERY_MS / 1000} s`);
  let stopping = false;
  let wakeAll: () => void = () => {};
  const stopped = new Promise<void>((r) => (wakeAll = r));
  const loadStart = performance.now();
  const elapsed = () => performance.now() - loadStart;
  /** Sleeps until `ms` into the load, or until the load stops. */
  const until = (ms: number) => Promise.race([sleep(Math.max(0, ms - elapsed())), stopped]);
  const loops: Promise<void>[] = [];
  for (let i = 0; i < o.concurrency; i++) {
    loops.push(
      (async () => {
        while (!stopping) await executeOnce(load, pickKind());
      })(),
    );
  }
  loops.push(
    (async () => {
      for (let k = 1; !stopping; k++) {
        await fanOutOnce(load);
        await until(k * FAN_OUT_EVERY_MS);
      }
    })(),
    (async () => {
      for (let k = 1; !stopping; k++) {
        await until(k * APPROVAL_EVERY_MS - 2500);
        if (stopping) break;
        await approvalOnce(load);
      }
    })(),
  );

  // The injected fault: kill the victim worker at about a third of the run, start it again.
  const kill: Record<string, unknown> = {};
  loops.push(
    (async () => {
      await until(o.durationMs * 0.35);
      if (stopping || !fleets.victim) return;
      const w = fleets.victim.workers[0]!;
      const t0 = performance.now();
      kill.at_s = elapsed() / 1000;
      kill.edges = victimN;
      log(`fault: SIGKILL of the simulator process holding ${victimN} edges (pid ${w.pid})`);
      w.proc.kill("SIGKILL");
      await w.exited;
      fleets.victim = undefined;
      await sleep(1000);
      kill.online_while_down = await online();
      kill.manager_online_while_down = await managerOnline().catch(() => Number.NaN);
      log(`fault: ${kill.online_while_down} of ${o.edges} online after the kill (the manager lists ${kill.manager_online_while_down} online); starting the process again`);
      const f = await startFleet({ ...behaviour, edges: victimEdges, processes: 1, needFds: victimN + 512 });
      fleets.victim = f;
      let back = f.connected.connected;
      const deadline = performance.now() + 60_000;
      while (back < victimN && performance.now() < deadline) {
        await sleep(250);
        back = (await f.stats()).connected;
      }
      kill.back = back;
      kill.back_after_s = (performance.now() - t0) / 1000;
      log(`fault: ${back}/${victimN} of its edges back ${(kill.back_after_s as number).toFixed(1)} s after the kill`);
    })(),
  );

  // Samples.
  const samples: Sample[] = [];
  const totalCalls = () => Object.values(load.acct.byKind).reduce((a, c) => a + c.calls, 0);
  let lastCalls = 0;
  let lastT = 0;
  for (let k = 1; elapsed() < o.durationMs; k++) {
    await until(Math.min(k * o.sampleMs, o.durationMs));
    if (!alive(mgr.child)) throw new Error(`the manager exited during the run; stderr:\n${mgr.child.stderr().slice(-4000)}`);
    const t = elapsed() / 1000;
    const calls = totalCalls();
    const s: Sample = { t_s: t, rss_kib: rssKb(pid), fds: fdCount(pid), threads: threadCount(pid), calls, calls_per_s: (calls - lastCalls) / (t - lastT), edges_online: await online() };
    lastCalls = calls;
    lastT = t;
    samples.push(s);
    log(`sample ${String(samples.length).padStart(3)}: rss ${(s.rss_kib / 1024).toFixed(1)} MiB, fds ${s.fds}, threads ${s.threads}, calls ${s.calls} (${s.calls_per_s.toFixed(0)}/s), edges online ${s.edges_online}/${o.edges}`);
  }
  stopping = true;
  wakeAll();
  const loadMs = elapsed();
  log("load stopped; waiting for the calls in flight");
  await Promise.all(loops);

  // (1) accounting: the rows written since the load began, against what the calls were told.
  const acct = load.acct;
  log("accounting: reading the audit rows written during the run (AuditService.ListToolCalls, 1000 a page)");
  const matchedDeny = new Map<string, number>();
  const extraRows: Array<Record<string, unknown>> = [];
  const seen = new Set<number>();
  let rows = 0;
  for (let after = BigInt(startSeq); ; ) {
    const page = await audit.listToolCalls({ afterSeq: after, limit: 1000 }, { timeoutMs: 120_000 });
    for (const r of page.toolCalls) {
      const seq = Number(r.seq);
      rows++;
      seen.add(seq);
      if (acct.seqs.has(seq)) continue;
      const ap = r.approvalId ? acct.approvals.get(r.approvalId) : undefined;
      if (ap && ap.askSeq !== seq) {
        matchedDeny.set(r.approvalId, (matchedDeny.get(r.approvalId) ?? 0) + 1);
        if (matchedDeny.get(r.approvalId)! === 1) continue;
      }
      extraRows.push({ seq, tool: r.toolName, edge: r.deviceId, caller: r.callerUserId, decision: r.decision, error: r.error.slice(0, 160), approval_id: r.approvalId });
    }
    if (!page.nextAfterSeq || page.toolCalls.length === 0) break;
    after = page.nextAfterSeq;
  }
  const missing = [...acct.seqs].filter(([seq]) => !seen.has(seq)).map(([seq, what]) => ({ seq, what }));
  const denyMissing = [...acct.approvals].filter(([id, a]) => a.denyAnswered && !matchedDeny.has(id)).map(([id]) => ({ approval_id: id, what: "Deny answered, no row under the approval's id" }));
  const deniesAnswered = [...acct.approvals.values()].filter((a) => a.denyAnswered).length;
  const expected = acct.seqs.size + deniesAnswered;
  const unaccounted = extraRows.length + missing.length + denyMissing.length + acct.duplicates.length + acct.noSeq.length + acct.fanOuts.mismatched;
  const examples = [
    ...extraRows.slice(0, 5).map((r) => ({ problem: "row no call was told of", ...r })),
    ...missing.slice(0, 5).map((r) => ({ problem: "call told of a row that is not there", ...r })),
    ...denyMissing.slice(0, 5).map((r) => ({ problem: "denial without its row", ...r })),
    ...acct.duplicates.slice(0, 5).map((r) => ({ problem: "two calls told of the same row", ...r })),
    ...acct.noSeq.slice(0, 5).map((r) => ({ problem: "call answered without an audit seq", ...r })),
  ];
  log(`accounting: ${expected} rows expected (${acct.seqs.size} answered calls with a seq + ${deniesAnswered} denials), ${rows} written; unaccounted ${unaccounted}`);
  for (const e of examples) log(`  unaccounted: ${JSON.stringify(e)}`);

  // (2) the chain.
  log("AuditService.VerifyChain");
  const chain = await audit.verifyChain({}, { timeoutMs: 600_000 });
  log(`chain ${chain.ok ? "ok" : `BROKEN at seq ${chain.firstBrokenSeq}: ${chain.reason}`}, ${chain.rowsChecked} rows checked`);

  // (3) flatness over the second half of the samples.
  const half = samples.slice(Math.floor(samples.length / 2));
  const windowMs = half.length >= 2 ? (half[half.length - 1].t_s - half[0].t_s) * 1000 : 0;
  const rssFit = fitLine(half.map((s) => s.t_s / 3600), half.map((s) => s.rss_kib));
  const fdFit = fitLine(half.map((s) => s.t_s / 60), half.map((s) => s.fds));
  const rssMean = half.reduce((a, s) => a + s.rss_kib, 0) / Math.max(1, half.length);
  const rssPctPerHour = (rssFit.slope / rssMean) * 100;
  const fdPerMinute = fdFit.slope;
  const rssFlat = rssPctPerHour < RSS_MAX_PCT_PER_HOUR;
  const fdFlat = fdPerMinute < FD_MAX_PER_MINUTE;
  // Extrapolating less than two minutes to an hour is noise (one GC swings RSS by tens of MiB):
  // such a window is reported, but judged neither flat nor growing.
  const judged = half.length >= 3 && windowMs >= MIN_JUDGE_WINDOW_MS && Number.isFinite(rssPctPerHour) && Number.isFinite(fdPerMinute);
  const verdict: "flat" | "growing" | "inconclusive" = !judged ? "inconclusive" : rssFlat && fdFlat ? "flat" : "growing";
  const thresholds = `flat when the RSS slope < ${RSS_MAX_PCT_PER_HOUR} % of its mean per hour (extrapolated) and the fd slope < ${FD_MAX_PER_MINUTE} per minute, least squares over the second half of the samples; a second half shorter than ${MIN_JUDGE_WINDOW_MS / 1000} s (or of fewer than 3 samples) is inconclusive and does not fail the run`;
  log(`flatness: RSS ${rssFit.slope >= 0 ? "+" : ""}${(rssFit.slope / 1024).toFixed(1)} MiB/h (${rssPctPerHour.toFixed(1)} % of its mean ${(rssMean / 1024).toFixed(1)} MiB per hour), fds ${fdPerMinute >= 0 ? "+" : ""}${fdPerMinute.toFixed(2)}/min over ${half.length} samples (${(windowMs / 1000).toFixed(0)} s): ${verdict}`);
  log(`thresholds: ${thresholds}`);

  const finalOnline = await online();
  const finalManagerOnline = await managerOnline();
  const accountedOk = unaccounted === 0;
  const ok = accountedOk && chain.ok && verdict !== "growing";
  const by = acct.byKind;
  const n = (k: Kind) => by[k]?.calls ?? 0;
  const answered = Object.values(by).reduce((a, c) => a + c.calls, 0);
  const refusals = Object.entries(by)
    .filter(([k]) => k !== "approval_deny" && k !== "approval_request")
    .reduce((a, [, c]) => a + Object.values(c.refused).reduce((x, y) => x + y, 0), 0);
  const injected = Object.values(by).reduce((a, c) => a + c.failed_result, 0);
  const row = (metric: string, unit: string, value: number, target: string, pass: boolean | "n/a" | "inconclusive", baseline = Number.NaN): Row => ({
    ...infoRow(metric, unit, value, baseline),
    target,
    result: pass === "n/a" || pass === "inconclusive" ? pass : pass ? "pass" : "fail",
  });
  const rowsOut: Row[] = [
    infoRow(`calls answered in ${(loadMs / 1000).toFixed(0)} s (all kinds, fan-out edges counted singly)`, "calls", answered),
    infoRow("call rate", "calls/s", (answered / loadMs) * 1000),
    infoRow("ExecuteSkill of safe builtins (admin + operator)", "calls", n("execute_safe") + n("execute_safe_operator")),
    infoRow("  of which failed on the edge (injected failures, edges gone mid-call)", "calls", injected),
    infoRow("refused calls (invalid params, unknown edge/skill, offline edge, edges down)", "calls", refusals),
    infoRow(`fan-outs to a tenth of the fleet by selector (baseline: edge calls in them)`, "runs", acct.fanOuts.runs, acct.fanOuts.events),
    infoRow("approvals parked by the operator and denied by the approver", "approvals", acct.approvals.size, deniesAnswered),
    row(`simulator process killed at ${Number(kill.at_s ?? 0).toFixed(0)} s: its edges back (baseline: edges it held)`, "edges", Number(kill.back ?? Number.NaN), `all, back in ${Number(kill.back_after_s ?? Number.NaN).toFixed(1)} s`, kill.back === undefined ? "n/a" : kill.back === victimN, victimN),
    row("audit rows written during the run (baseline: expected from the answers)", "rows", rows, "= expected", rows === expected, expected),
    row("unaccounted calls or rows", "count", unaccounted, "0", accountedOk),
    row("VerifyChain (rows checked)", "rows", Number(chain.rowsChecked), "ok", chain.ok),
    infoRow("manager RSS, mean of the second half (baseline: first sample)", "MiB", rssMean / 1024, (samples[0]?.rss_kib ?? Number.NaN) / 1024),
    row("manager RSS slope, second half (baseline: mean)", "MiB/h", rssFit.slope / 1024, `< ${RSS_MAX_PCT_PER_HOUR} %/h of mean (${rssPctPerHour.toFixed(1)} %/h)`, !judged ? "inconclusive" : rssFlat, rssMean / 1024),
    row("manager open fds slope, second half (baseline: last sample)", "fds/min", fdPerMinute, `< ${FD_MAX_PER_MINUTE}/min`, !judged ? "inconclusive" : fdFlat, samples[samples.length - 1]?.fds ?? Number.NaN),
    infoRow("manager threads, last sample (baseline: first)", "threads", samples[samples.length - 1]?.threads ?? Number.NaN, samples[0]?.threads ?? Number.NaN),
    row("edges online at the end, as the manager lists them (baseline: as the simulator counts them)", "edges", finalManagerOnline, `${o.edges}`, finalManagerOnline === o.edges, finalOnline),
  ];
  const totalS = secs();
  console.log(`\nongrid soak — ${o.edges} edges, ${(loadMs / 1000).toFixed(0)} s, ${o.pglite ? "PGlite" : "PostgreSQL"}, ${cpus().length} CPUs, node ${process.version}\n`);
  console.log(table(rowsOut));
  console.log(`\nflatness: ${verdict} (${thresholds})`);
  console.log(`accounting: ${accountedOk ? "every call accounted for" : `${unaccounted} unaccounted`}; chain ${chain.ok ? "ok" : "BROKEN"}; verdict ${ok ? "PASS" : "FAIL"}`);
  writeJson(o.out, {
    run: "soak",
    date: new Date().toISOString(),
    duration_s: totalS,
    load_s: loadMs / 1000,
    machine: machineInfo(loadBefore, loadavg(), { open_files: lim }),
    params: { edges: o.edges, duration_ms: o.durationMs, sample_every_ms: o.sampleMs, concurrency: o.concurrency, failure_rate: o.failureRate, database: o.pglite ? "pglite" : "postgresql", latency_ms: "2 + 0..20", fan_out_every_ms: FAN_OUT_EVERY_MS, approval_every_ms: APPROVAL_EVERY_MS, mix: Object.fromEntries(MIX) },
    samples,
    accounting: {
      start_seq: startSeq,
      calls_by_kind: by,
      answered_calls: answered,
      seqs_reported: acct.seqs.size,
      denials_answered: deniesAnswered,
      expected_rows: expected,
      rows_found: rows,
      unaccounted,
      rows_no_call_was_told_of: extraRows.length,
      calls_whose_row_is_missing: missing.length + denyMissing.length,
      duplicate_seqs: acct.duplicates.length,
      calls_without_seq: acct.noSeq.length,
      fan_outs: acct.fanOuts,
      examples,
    },
    chain: { ok: chain.ok, rows_checked: Number(chain.rowsChecked), first_broken_seq: Number(chain.firstBrokenSeq), reason: chain.reason, last_seq: Number(chain.lastSeq) },
    flatness: {
      verdict,
      thresholds,
      window_s: windowMs / 1000,
      samples_used: half.length,
      rss_mean_kib: rssMean,
      rss_slope_kib_per_hour: rssFit.slope,
      rss_slope_pct_of_mean_per_hour: rssPctPerHour,
      fd_slope_per_minute: fdPerMinute,
    },
    fault: { ...kill, calls_refused_offline_meanwhile: load.victimOffline.n },
    edges_online_at_end: { simulator: finalOnline, manager: finalManagerOnline },
    result: ok ? "pass" : "fail",
    metrics: rowsOut,
  });
  console.log(`\nJSON: ${o.out}\ntotal time: ${totalS.toFixed(1)} s`);
  return ok ? 0 : 1;
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith("scripts/soak.ts")) {
  let o: Options;
  try {
    o = flags(process.argv.slice(2));
  } catch (err) {
    console.error(`soak: ${(err as Error).message}`);
    console.error("usage: npm run soak -- [--edges 1000] [--duration 10m] [--sample-every 10s] [--concurrency 32] [--failure-rate 0.05] [--database-url URL | --pglite] [--out FILE]");
    process.exit(2);
  }
  runBench(() => main(o), cleanup, Math.ceil(o.durationMs / 60_000) + 30);
}
