/**
 * Issue 11, faults F4 and F7 with real parts.
 *
 * F4: a network partition between an edge's network namespace and the manager. A namespace with a
 * veth pair on a private /30; the manager listens on the host side's address; a compiled edge runs
 * inside the namespace (`ip netns exec`), a control edge on the host. The partition is an nftables
 * table in the namespace that drops every packet (the kernel here has no sch_netem, so `tc netem
 * loss 100%` is not available; dropping in nft is the same to TCP: silence, no RST).
 *
 * F7: the disk under the PGlite data directory fills up (a small tmpfs, filled with fallocate).
 * PGlite does not wedge: writes fail with ENOSPC ("could not extend file") and succeed again as
 * soon as space is freed. One defect is pinned (see FINDING below), not fixed: it is in
 * manager/calls/execute.ts.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statfsSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, test } from "vitest";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { EdgeService } from "../proto/gen/ongrid/v1/edge_service_pb.ts";
import { AuditService } from "../proto/gen/ongrid/v1/audit_service_pb.ts";
import { ApprovalService, ApprovalState } from "../proto/gen/ongrid/v1/approval_service_pb.ts";
import { EDGE_BIN } from "./global-setup.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, stopChild, waitFor, type TestEdge } from "./support/edge.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { processFaults } from "./support/process-faults.ts";
import { createVethNamespace, removeVethNamespace } from "./support/netns.ts";

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: "pipe", encoding: "utf8" });
const seqOf = (err: ConnectError) => Number(err.metadata.get("ongrid-audit-seq") ?? 0);

function clients(m: TestManager, token: string) {
  const t = createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(token)] });
  return { skills: createClient(SkillService, t), edges: createClient(EdgeService, t), audit: createClient(AuditService, t), approvals: createClient(ApprovalService, t) };
}
type Clients = ReturnType<typeof clients>;

/** One call's outcome as its caller saw it. */
interface Outcome {
  ok: boolean;
  seq: number;
  code?: string;
  message?: string;
  ms: number;
  /** When the caller had its answer. */
  at: number;
}

async function callOnce(c: Clients, key: string, edgeId: string, params: Record<string, unknown>, timeoutMs = 0): Promise<Outcome> {
  const t0 = Date.now();
  try {
    const res = await c.skills.executeSkill({ key, edgeId, input: { case: "params", value: params as never }, timeoutMs });
    const at = Date.now();
    return { ok: Boolean(res.result?.success), seq: Number(res.auditSeq), ms: at - t0, at, ...(res.result?.success ? {} : { code: res.result?.error?.code, message: res.result?.error?.message }) };
  } catch (err) {
    const e = ConnectError.from(err);
    const at = Date.now();
    return { ok: false, seq: seqOf(e), code: Code[e.code], message: e.rawMessage, ms: at - t0, at };
  }
}

// ---------------------------------------------------------------------------------------------
// F4: network partition between an edge's namespace and the manager
// ---------------------------------------------------------------------------------------------

const HEARTBEAT_MS = 500;
/** The manager checks silence on each heartbeat tick: an edge last heard < 1 interval before the cut is dead 3–4 intervals later; 1.5 s slack for a loaded host. */
const DEATH_BOUND_MS = 3 * HEARTBEAT_MS + HEARTBEAT_MS + 1500;
const MAX_BACKOFF_MS = 1000;
/**
 * How soon after the heal the edge is back. Not only its backoff: a redial made during the
 * partition has its SYN dropped, so that dial connects on the kernel's next SYN retransmission
 * (1, 2, 4 s apart) or is given up by the edge's 5 s connect timeout and made again. In this test
 * the first redial starts ≤ 2.5 s after the cut and the heal comes ~3.5 s after it, within the
 * dial's first two retransmissions (≤ 4 s apart); plus one backoff should that dial fail, plus
 * 1.5 s slack.
 */
const RECONNECT_BOUND_MS = 4000 + MAX_BACKOFF_MS + 1500;
/** A call to an edge known to be offline is refused without waiting for anything. */
const OFFLINE_BOUND_MS = 500;

/** Pids of live processes whose command line contains `marker`. */
function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, "utf8").includes(marker)) pids.push(Number(name));
    } catch {
      /* gone */
    }
  }
  return pids;
}

describe("F4: network partition between an edge's namespace and the manager", () => {
  const pid = process.pid;
  const k = (pid % 250) + 1;
  const NS = `ongrid-t-${pid}-1`;
  const VH = `ogh${pid % 1_000_000}`;
  const VN = `ogn${pid % 1_000_000}`;
  const HOST_IP = `10.200.${k}.1`;
  const NS_IP = `10.200.${k}.2`;
  const NET = { ns: NS, hostIf: VH, nsIf: VN, hostIp: HOST_IP, nsIp: NS_IP };
  const TABLE = `ongrid_f4_${pid}`;
  const ID = "f4-edge";
  const uniq = `${pid}${Date.now() % 100000}`;
  let dir: string;
  let m: TestManager;
  let control: TestEdge | undefined;
  let nsEdge: { child: ChildProcess; output: () => string } | undefined;
  let olga: Clients;
  let alice: Clients;
  const markers: string[] = [];
  const observed: Record<string, unknown> = {};

  const partition = () =>
    execFileSync("ip", ["netns", "exec", NS, "nft", "-f", "-"], {
      stdio: ["pipe", "pipe", "pipe"],
      input: `table inet ${TABLE} {\n chain in { type filter hook input priority raw; policy drop; }\n chain out { type filter hook output priority raw; policy drop; }\n}\n`,
    });
  const heal = () => sh("ip", ["netns", "exec", NS, "nft", "delete", "table", "inet", TABLE]);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ongrid-f4-"));
    createVethNamespace(NET);
    m = await bootManager({ "server.host": HOST_IP, "tunnel.heartbeat_interval": `${HEARTBEAT_MS}ms` });
    expect(m.url).toMatch(new RegExp(`^http://${HOST_IP.replace(/\./g, "\\.")}:\\d+$`));
    olga = clients(m, await makeUser(m, "olga", "operator"));
    alice = clients(m, await makeUser(m, "alice", "approver"));
    // The control edge on the host: the manager's address is local, so its packets go over lo.
    control = await startEdge(m, "f4-control");
    const { token } = await m.edges.enroll(ID);
    const child = spawn("ip", ["netns", "exec", NS, EDGE_BIN, "--manager", m.url, "--token", token, "--id", ID, "--max-backoff", `${MAX_BACKOFF_MS}ms`, "--log-level", "info"], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (out += d));
    nsEdge = { child, output: () => out };
    const ok = await waitFor(() => Boolean(m.hub.session(ID)) || child.exitCode !== null, 20_000);
    expect(ok && m.hub.session(ID), `the edge in ${NS} did not connect:\n${out}`).toBeTruthy();
  });

  afterAll(async () => {
    if (nsEdge) await stopChild(nsEdge.child);
    await control?.stop();
    await m?.stop().catch((err) => console.warn("F4 manager stop failed:", err));
    for (const mk of markers) for (const p of processesWith(mk)) if (p > 1) process.kill(p, "SIGKILL");
    removeVethNamespace(NET, "F4");
    if (dir) rmSync(dir, { recursive: true, force: true });
    console.log(`F4 observed: ${JSON.stringify(observed)}`);
  });

  it("an in-flight call ends unavailable naming the edge within 3 heartbeats + slack, audited once; calls while it is cut off fail at once as offline, audited; the control edge answers throughout; after healing the edge is back and answers; an approved mutating call in flight at the cut is failed and never run again", async () => {
    // The edge's tunnel really crosses the veth: an established TCP connection from the namespace's address.
    const port = new URL(m.url).port;
    const conns = sh("ip", ["netns", "exec", NS, "ss", "-tnH", "state", "established"]);
    expect(conns).toContain(`${NS_IP}:`);
    expect(conns).toContain(`${HOST_IP}:${port}`);
    for (const id of [ID, "f4-control"]) {
      const o = await callOnce(olga, "host_load", id, {});
      expect(o.ok, o.message).toBe(true);
    }
    const controlSession = m.hub.session("f4-control");

    // An approved mutating call running on the edge: appends one line to a file, then sleeps.
    const file = join(dir, "ran.txt");
    const mutating = `echo ran >> ${file}; sleep 40.${uniq}`;
    markers.push(`40.${uniq}`);
    const asked = await olga.skills.executeSkill({ key: "exec", edgeId: ID, input: { case: "params", value: { command: mutating } as never } });
    const approvalId = asked.approval!.id;
    expect(asked.approval?.state).toBe(ApprovalState.PENDING);
    await alice.approvals.approve({ id: approvalId });
    expect(await waitFor(() => existsSync(file) && readFileSync(file, "utf8") === "ran\n", 10_000), "the approved command did not start").toBe(true);
    expect((await alice.approvals.getApproval({ id: approvalId })).approval!.state).toBe(ApprovalState.RUNNING);

    // A safe call in flight (sleep is read-only, so no approval), with a deadline far past the test.
    const sleeper = `sleep 30.${uniq}`;
    markers.push(`30.${uniq}`);
    const inflight = callOnce(olga, "exec", ID, { command: sleeper }, 60_000);
    expect(await waitFor(() => processesWith(`30.${uniq}`).length > 0, 10_000), "the in-flight call did not start on the edge").toBe(true);

    // The control edge is called without pause from before the cut until after the edge is back.
    const controlCalls: Outcome[] = [];
    let controlling = true;
    const controlLoop = (async () => {
      while (controlling) {
        controlCalls.push(await callOnce(olga, "host_load", "f4-control", {}, 5000));
        await new Promise((r) => setTimeout(r, 100));
      }
    })();

    const cutAt = Date.now();
    partition();
    // (a) the in-flight call ends within the heartbeat bound, clearly, with one audit row.
    const a = await inflight;
    const aAfter = a.at - cutAt;
    observed.inflight_error_after_cut_ms = aAfter;
    observed.inflight_error = `${a.code}: ${a.message}`;
    expect(a.ok, "a call cut off by the partition cannot succeed").toBe(false);
    expect(a.code).toBe("Unavailable");
    expect(a.message).toMatch(new RegExp(`^edge "${ID}" went away during the call: no heartbeat from the edge for ${3 * HEARTBEAT_MS} ms`));
    expect(aAfter, `the in-flight call ended ${aAfter} ms after the cut`).toBeLessThan(DEATH_BOUND_MS);
    expect(aAfter).toBeGreaterThanOrEqual(3 * HEARTBEAT_MS - HEARTBEAT_MS);
    await m.audit.flush();
    const inflightRows = (await m.audit.list({ edgeId: ID, toolName: "exec", limit: 1000 })).filter((r) => JSON.stringify(r.args).includes(sleeper));
    expect(inflightRows.map((r) => r.seq)).toEqual([a.seq]);
    expect(inflightRows[0]).toMatchObject({ decision: "allow", result: null, error: `unavailable: ${a.message!.replace(/ \(hint: [^)]*\)$/, "")}` });

    // (b) calls while the edge is cut off fail at once as offline, each audited.
    expect(m.hub.session(ID)).toBeUndefined();
    const offline: Outcome[] = [];
    for (let i = 0; i < 5; i++) offline.push(await callOnce(olga, "host_load", ID, {}));
    for (const o of offline) {
      expect(o.ok).toBe(false);
      expect(o.code).toBe("Unavailable");
      expect(o.message).toMatch(new RegExp(`^edge "${ID}" is offline`));
      expect(o.ms).toBeLessThan(OFFLINE_BOUND_MS);
    }
    observed.offline_max_ms = Math.max(...offline.map((o) => o.ms));
    await m.audit.flush();
    for (const o of offline) {
      const [row] = await m.audit.list({ afterSeq: o.seq - 1, limit: 1 });
      expect(row).toMatchObject({ seq: o.seq, toolName: "host_load", deviceId: ID, result: null });
      expect(row!.error).toMatch(/^unavailable: edge "f4-edge" is offline/);
    }
    expect(new Set(offline.map((o) => o.seq)).size).toBe(offline.length);
    expect((await olga.edges.getEdge({ id: ID })).edge?.online).toBe(false);

    // The approved call was failed with the session; its process on the edge is stopped when the
    // edge's own heartbeat check ends its session.
    expect(await waitFor(async () => (await alice.approvals.getApproval({ id: approvalId })).approval!.state === ApprovalState.FAILED, 5000)).toBe(true);
    expect(await waitFor(() => /tunnel lost; redialling/.test(nsEdge!.output()), DEATH_BOUND_MS), `the edge did not notice the partition:\n${nsEdge!.output().slice(-2000)}`).toBe(true);
    observed.edge_noticed_after_cut_ms = Date.now() - cutAt;
    expect(await waitFor(() => processesWith(`40.${uniq}`).length === 0 && processesWith(`30.${uniq}`).length === 0, 5000), "the edge left the cut-off calls running").toBe(true);

    // Hold the partition a little longer so the edge's redials hit it.
    await new Promise((r) => setTimeout(r, 1500));
    const healAt = Date.now();
    heal();
    observed.partition_ms = healAt - cutAt;
    // (d) the edge is back and answers.
    const back = await waitFor(() => Boolean(m.hub.session(ID)), RECONNECT_BOUND_MS);
    observed.back_after_heal_ms = Date.now() - healAt;
    expect(back, `edge not back within ${RECONNECT_BOUND_MS} ms of the heal:\n${nsEdge!.output().slice(-3000)}`).toBe(true);
    const after = await callOnce(olga, "host_load", ID, {});
    expect(after.ok, after.message).toBe(true);
    await m.audit.flush();
    expect((await m.audit.list({ afterSeq: after.seq - 1, limit: 1 }))[0]).toMatchObject({ seq: after.seq, toolName: "host_load", deviceId: ID, error: "" });

    // (c) the control edge answered every call, on the same session, all along.
    await new Promise((r) => setTimeout(r, 300));
    controlling = false;
    await controlLoop;
    observed.control_calls = controlCalls.length;
    expect(controlCalls.length).toBeGreaterThan(5);
    expect(controlCalls.filter((o) => !o.ok), JSON.stringify(controlCalls.filter((o) => !o.ok))).toEqual([]);
    expect(m.hub.session("f4-control")).toBe(controlSession);

    // (e) the approved call is not run again by the redial: a few seconds with the edge connected, still one line.
    await new Promise((r) => setTimeout(r, 2000));
    expect(readFileSync(file, "utf8")).toBe("ran\n");
    expect((await alice.approvals.getApproval({ id: approvalId })).approval!.state).toBe(ApprovalState.FAILED);
    await m.audit.flush();
    const trail = (await m.audit.list({ limit: 1000 })).filter((r) => r.approvalId === approvalId);
    const runs = trail.filter((r) => r.toolName === "exec" && r.decision === "allow");
    expect(runs, JSON.stringify(trail.map((r) => [r.seq, r.toolName, r.decision, r.error]))).toHaveLength(1);
    expect(runs[0]!.error).toMatch(/^unavailable: edge "f4-edge" went away during the call/);
    const report = await m.audit.verify();
    expect(report.ok, report.reason).toBe(true);
    console.log(`F4 edge output (tail):\n${nsEdge!.output().split("\n").filter((l) => /redial|retrying|connected/.test(l)).slice(-8).join("\n")}`);
  });
});

// ---------------------------------------------------------------------------------------------
// F7: disk full under the PGlite data directory
// ---------------------------------------------------------------------------------------------

/** Large enough for a fresh PGlite data dir (~39 MB, 16 MB of it the first WAL segment) plus slack. */
const TMPFS_SIZE = "64m";
/** A call refused for want of disk must be refused promptly. */
const FULL_FAIL_BOUND_MS = 2000;

/** Mounts a tmpfs on a new temp dir, or says why it cannot. */
function mountTmpfs(): { dir: string } | { missing: string } {
  const dir = mkdtempSync(join(tmpdir(), "ongrid-f7-"));
  try {
    sh("mount", ["-t", "tmpfs", "-o", `size=${TMPFS_SIZE},mode=0700`, "tmpfs", dir]);
    return { dir };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return { missing: `mount -t tmpfs failed: ${String((err as { stderr?: string }).stderr || (err as Error).message).trim()}` };
  }
}
function unmount(dir: string): void {
  try {
    sh("umount", [dir]);
  } catch {
    sh("umount", ["-l", dir]);
  }
  rmSync(dir, { recursive: true, force: true });
}
/** Whether this process may mount a tmpfs (a probe mount, removed at once): undefined, or why not. */
function mountProblem(): string | undefined {
  const probe = mountTmpfs();
  if ("missing" in probe) return probe.missing;
  unmount(probe.dir);
  return undefined;
}

describe("F7: disk full under the PGlite data directory", () => {
  const missing = mountProblem();
  if (missing) {
    const message = `cannot mount a small tmpfs for the data dir: ${missing}`;
    if (process.env.CI === "true") {
      test("a tmpfs can be mounted (required in CI)", () => {
        throw new Error(`${message}. The disk-full fault test is required when CI=true (run as root).`);
      });
    } else {
      console.warn(`skipping "F7: disk full": ${message}`);
      test.skip(`skipped: ${message}`, () => {});
    }
    return;
  }
  let dir: string | undefined;
  let filler = "";
  let m: TestManager | undefined;
  let m2: TestManager | undefined;
  let edge: TestEdge | undefined;
  let c: Clients;
  const faults = processFaults();
  const observed: Record<string, unknown> = {};

  beforeAll(async () => {
    faults.start();
    const mounted = mountTmpfs();
    if ("missing" in mounted) throw new Error(mounted.missing);
    dir = mounted.dir;
    filler = join(dir, "filler");
    // keepDir: the data dir is the tmpfs itself (stop() leaves it; afterAll unmounts it).
    m = await bootManager({ "tunnel.heartbeat_interval": "1s" }, {}, dir);
    expect(m.database.kind).toBe("pglite");
    edge = await startEdge(m, "f7-edge");
    c = clients(m, m.adminToken);
  });
  afterAll(async () => {
    await edge?.stop();
    await m?.stop().catch((err) => console.warn("F7 manager stop failed:", err));
    await m2?.stop().catch((err) => console.warn("F7 second manager stop failed:", err));
    if (dir) unmount(dir);
    faults.stop();
    console.log(`F7 observed: ${JSON.stringify(observed)}`);
  });

  it("with the disk full, calls fail promptly as unavailable naming the database write and ENOSPC, none is answered success without its row; the manager keeps serving reads; after freeing space calls succeed and are audited, the chain verifies, and every success's row survives a restart; a mutating call refused for want of disk leaves no approvable request", async () => {
    const successes: Array<{ seq: number; key: string }> = [];
    const record = (o: Outcome, key: string) => o.ok && successes.push({ seq: o.seq, key });
    for (let i = 0; i < 5; i++) {
      const o = await callOnce(c, "host_load", "f7-edge", {});
      expect(o.ok, o.message).toBe(true);
      record(o, "host_load");
    }
    const session = m!.hub.session("f7-edge");
    // One approval request, withdrawn at once, so the approvals table has a page with room in it
    // (as on any manager that has been used) when the disk fills.
    const first = await c.skills.executeSkill({ key: "exec", edgeId: "f7-edge", input: { case: "params", value: { command: `echo warm >> ${join(tmpdir(), "ongrid-f7-never")}` } as never } });
    expect(first.approval?.state).toBe(ApprovalState.PENDING);
    successes.push({ seq: Number(first.auditSeq), key: "exec" });
    expect((await c.approvals.deny({ id: first.approval!.id, reason: "warm-up" })).approval?.state).toBe(ApprovalState.DENIED);
    await m!.audit.flush();
    // Its trail after the request row: the request's final row (exec, permission_denied).
    const trail = await m!.audit.list({ afterSeq: Number(first.auditSeq), limit: 10 });
    expect(trail.every((r) => r.approvalId === first.approval!.id), JSON.stringify(trail)).toBe(true);
    expect(trail.some((r) => r.toolName === "exec" && r.error.startsWith("permission_denied:"))).toBe(true);
    const otherSeqs = trail.map((r) => r.seq);

    // Fill every free block of the tmpfs.
    const free = statfsSync(dir!);
    sh("fallocate", ["-l", String(free.bavail * free.bsize), filler]);
    expect(statfsSync(dir!).bavail, "the tmpfs is full").toBe(0);
    observed.filled_bytes = free.bavail * free.bsize;

    // Calls with ~3 KB of arguments (a read-only echo, so no approval): their rows need new pages soon.
    const full: Outcome[] = [];
    for (let i = 0; i < 30; i++) {
      const o = await callOnce(c, "exec", "f7-edge", { command: `echo ${i}-${"x".repeat(3000)}` });
      full.push(o);
      record(o, "exec");
    }
    const failed = full.filter((o) => !o.ok);
    observed.full_phase = { calls: full.length, succeeded: full.length - failed.length, failed: failed.length, max_fail_ms: Math.max(0, ...failed.map((o) => o.ms)), error: failed[0]?.message };
    // (a) the fault was exercised, and every failure is clear and prompt.
    expect(failed.length, "no call failed: the disk was not full for the database").toBeGreaterThan(0);
    for (const o of failed) {
      expect(o.code, o.message).toBe("Unavailable");
      expect(o.message).toMatch(/^audit log: could not store the tool call row: could not extend file "[^"]+": No space left on device/);
      expect(o.message).toMatch(/the call was not recorded/);
      expect(o.ms).toBeLessThan(FULL_FAIL_BOUND_MS);
      // Not recorded: the error says so, and no seq is claimed.
      expect(o.seq).toBe(0);
    }
    // The room the 3 KB rows could not use is filled with small rows, so that no page has room
    // left for a small row either (how much room is left depends on the exact row sizes). One
    // failure is not enough: a write that extended the heap but not its free-space map leaves the
    // new page's room to the next small row (seen in CI: the mutating call below was then stored
    // and parked). Small calls go on until several fail in a row.
    let failedInARow = 0;
    for (let i = 0; i < 500 && failedInARow < 5; i++) {
      const o = await callOnce(c, "exec", "f7-edge", { command: `echo ${i}` });
      record(o, "exec");
      failedInARow = o.ok ? 0 : failedInARow + 1;
    }
    expect(failedInARow, "small calls kept finding room on the full disk").toBe(5);
    // A mutating call needs its approval request stored before anything runs: with the disk full
    // it is refused, and nothing runs on the edge.
    // The freed room of a failed write can still take one small request and its row (PGlite may
    // have extended the heap before the free-space map failed): such a call is parked with its
    // row, which is correct, and the next attempt is made until one is refused.
    const ranFile = join(tmpdir(), `ongrid-f7-ran-${process.pid}-${Date.now()}.txt`);
    let mut = await callOnce(c, "exec", "f7-edge", { command: `echo ran-0 >> ${ranFile}` });
    const parkedWhileFull: number[] = [];
    for (let k = 1; k < 20 && !mut.code && mut.seq > 0; k++) {
      parkedWhileFull.push(mut.seq);
      successes.push({ seq: mut.seq, key: "exec" });
      mut = await callOnce(c, "exec", "f7-edge", { command: `echo ran-${k} >> ${ranFile}` });
    }
    observed.mutating_while_full = `${mut.code}: ${mut.message}`;
    observed.parked_while_full = parkedWhileFull.length;
    expect(mut.ok).toBe(false);
    expect(mut.code, mut.message).toBe("Unavailable");
    expect(mut.message).toMatch(/No space left on device/);
    await new Promise((r) => setTimeout(r, 500));
    expect(existsSync(ranFile), "a mutating call ran although its request could not be stored").toBe(false);

    // Once the database could not extend its files, no later call succeeded (no flapping answers).
    const firstFail = full.findIndex((o) => !o.ok);
    expect(full.slice(firstFail).filter((o) => o.ok)).toEqual([]);

    // (b) the manager keeps serving what needs no write: /healthz, reads, the edge's tunnel.
    expect(await fetch(`${m!.url}/healthz`).then((r) => r.status)).toBe(200);
    expect((await c.edges.listEdges({})).edges.map((e) => e.id)).toContain("f7-edge");
    const duringVerify = await c.audit.verifyChain({});
    expect(duringVerify.ok, duringVerify.reason).toBe(true);
    expect(m!.hub.session("f7-edge")).toBe(session);

    // (c) after freeing space, new calls succeed at once and are audited.
    unlinkSync(filler);
    const freedAt = Date.now();
    const after: Outcome[] = [];
    for (let i = 0; i < 10; i++) {
      const o = await callOnce(c, i % 2 ? "host_load" : "exec", "f7-edge", i % 2 ? {} : { command: `echo after-${i}-${"y".repeat(3000)}` });
      after.push(o);
      record(o, i % 2 ? "host_load" : "exec");
    }
    observed.recovered_in_ms = Date.now() - freedAt;
    expect(after.filter((o) => !o.ok), JSON.stringify(after.filter((o) => !o.ok))).toEqual([]);
    await m!.audit.flush();
    // (d) every success has its row, with its tool, edge and no error; the rows are exactly the successes.
    const rows = await m!.audit.list({ limit: 1000 });
    const bySeq = new Map(rows.map((r) => [r.seq, r]));
    for (const s of successes) expect(bySeq.get(s.seq), `success seq ${s.seq}`).toMatchObject({ toolName: s.key, deviceId: "f7-edge", error: "" });
    const expectedSeqs: number[] = [...successes.map((s) => s.seq), ...otherSeqs].sort((a, b) => a - b);
    expect(rows.map((r) => r.seq)).toEqual(expectedSeqs);
    const report = await m!.audit.verify();
    expect(report, report.reason).toMatchObject({ ok: true, rowsChecked: expectedSeqs.length });
    const viaRpc = await c.audit.verifyChain({});
    expect(viaRpc.ok, viaRpc.reason).toBe(true);

    // The refused mutating call's approval request was stored before its audit row could be written:
    // the caller was told "the call was not recorded", so the request must never run. The dispatcher
    // withdraws it (denied by "system") when it can; when that write fails too, the store still
    // refuses any vote on a request without its audit row. (Found by this test: it used to stay
    // pending and, once approved, ran the command the caller was told had failed.)
    const requests = (await c.approvals.listApprovals({ limit: 1000 })).approvals.filter((a) => JSON.stringify(a.params ?? {}).includes(ranFile));
    // Requests parked with their row (above) are ordinary pending requests; nobody approves them here.
    const parkedRequests = requests.filter((a) => a.requestAuditSeq !== 0n);
    expect(parkedRequests.map((a) => Number(a.requestAuditSeq)).sort((x, y) => x - y)).toEqual(parkedWhileFull);
    expect(parkedRequests.every((a) => a.state === ApprovalState.PENDING)).toBe(true);
    const orphans = requests.filter((a) => a.requestAuditSeq === 0n);
    observed.orphan_requests = orphans.map((a) => ({ id: a.id, state: ApprovalState[a.state], requestAuditSeq: Number(a.requestAuditSeq) }));
    expect(orphans).toHaveLength(1);
    expect(orphans[0]!.requestAuditSeq).toBe(0n);
    expect([ApprovalState.DENIED, ApprovalState.PENDING]).toContain(orphans[0]!.state);
    expect(rows.some((r) => r.approvalId === orphans[0]!.id && r.decision === "ask"), "no request row names the orphan request").toBe(false);
    const approver = clients(m!, await makeUser(m!, "f7-approver", "approver"));
    const vote = await approver.approvals.approve({ id: orphans[0]!.id }).catch((e: unknown) => ConnectError.from(e));
    expect(vote).toBeInstanceOf(ConnectError);
    expect((vote as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((vote as ConnectError).message).toMatch(orphans[0]!.state === ApprovalState.DENIED ? /already denied/ : /not recorded in the audit log/);
    await new Promise((r) => setTimeout(r, 1500));
    expect(existsSync(ranFile), "the request the caller was told had failed never runs").toBe(false);
    await m!.audit.flush();
    expectedSeqs.push(...(await m!.audit.list({ afterSeq: expectedSeqs[expectedSeqs.length - 1], limit: 100 })).map((r) => r.seq));
    expect((await m!.audit.verify()).ok).toBe(true);

    // The successes are durable: a new manager on the same data dir has every row, and the chain verifies.
    await edge!.stop();
    await m!.stop();
    m = undefined;
    const restartAt = Date.now();
    m2 = await bootManager({}, {}, dir);
    observed.restart_ms = Date.now() - restartAt;
    const again = await m2.audit.list({ limit: 1000 });
    expect(again.map((r) => r.seq)).toEqual(expectedSeqs);
    const report2 = await m2.audit.verify();
    expect(report2, report2.reason).toMatchObject({ ok: true, rowsChecked: expectedSeqs.length });
    expect(faults.seen, "no unhandled rejection").toEqual([]);
  });
});
