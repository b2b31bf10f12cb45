/**
 * Issue 11, fault F2: the manager is killed with SIGKILL in the middle of calls. The manager runs
 * as a real child process (bin/ongrid.mjs manager, PGlite in a data dir), two compiled edges dial
 * it with a short --max-backoff. Proves the claims of docs/security.md "The audit log and crashes:
 * what can be lost": a caller in flight gets an error, never success; the edges come back within
 * their backoff; the chain still verifies; an approved call running at the kill is marked failed
 * (`approval_interrupted:`) and never run again.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { EdgeService } from "../proto/gen/ongrid/v1/edge_service_pb.ts";
import { ApprovalService, ApprovalState } from "../proto/gen/ongrid/v1/approval_service_pb.ts";
import { IdentityService, Role } from "../proto/gen/ongrid/v1/identity_service_pb.ts";
import { AuditService, type ToolCall } from "../proto/gen/ongrid/v1/audit_service_pb.ts";
import { spawnEdge, stopChild, waitFor } from "./support/edge.ts";
import { bearer } from "./support/auth.ts";
import { ROOT, runOngrid } from "./support/cli.ts";
import { freeStablePort } from "./support/free-port.ts";

const BIN = resolve(ROOT, "bin/ongrid.mjs");
const MAX_BACKOFF_MS = 2000;
const HEARTBEAT = "500ms";
/** After the restarted manager listens, an edge waits at most one backoff (full jitter, < MAX_BACKOFF_MS) and dials; 4 s slack for the dial and hello on a loaded host. */
const RECONNECT_BOUND_MS = MAX_BACKOFF_MS + 4000;
/** A caller whose call is in flight learns of the kill from the reset connection. */
const CALLER_ERROR_BOUND_MS = 2000;

let dir: string;
let dataDir: string;
let port: number;
let url: string;
let adminToken: string;
let manager: { child: ChildProcess; output: () => string } | undefined;
const edgeProcs: Array<{ id: string; child: ChildProcess; output: () => string }> = [];
const markers: string[] = [];
const observed: Record<string, number | string> = {};
let restarts = 0;

type Clients = { skills: Client<typeof SkillService>; approvals: Client<typeof ApprovalService>; edges: Client<typeof EdgeService>; identity: Client<typeof IdentityService>; audit: Client<typeof AuditService> };
const as: Record<string, Clients> = {};
function clientsFor(token: string): Clients {
  const t = createConnectTransport({ baseUrl: url, httpVersion: "1.1", interceptors: [bearer(token)] });
  return { skills: createClient(SkillService, t), approvals: createClient(ApprovalService, t), edges: createClient(EdgeService, t), identity: createClient(IdentityService, t), audit: createClient(AuditService, t) };
}

/** Starts `ongrid manager` on the fixed port and data dir as its own process group; resolves once it listens. */
function startManagerProcess(): Promise<{ child: ChildProcess; output: () => string; firstStartToken?: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, ONGRID_LOG_LEVEL: "warn", ONGRID_HEARTBEAT_INTERVAL: HEARTBEAT };
  delete env.DATABASE_URL;
  delete env.ONGRID_CONFIG;
  const child = spawn(process.execPath, [BIN, "manager", "--port", String(port), "--host", "127.0.0.1", "--data", dataDir], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`manager did not start within 30 s:\n${out}`)), 30_000);
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`manager exited (${code}) before listening:\n${out}`));
    };
    child.once("exit", onExit);
    const check = () => {
      if (!/web console: /.test(out)) return; // printed after the listening line and the first-start token
      clearTimeout(timer);
      child.off("exit", onExit);
      child.stdout!.off("data", check);
      const token = /first start: created user "admin".*\n(\S+)\n/.exec(out)?.[1];
      resolvePromise({ child, output: () => out, firstStartToken: token });
    };
    child.stdout!.on("data", check);
  });
}

/** SIGKILLs the manager's process group and waits for it to be gone. */
async function killManager(): Promise<void> {
  const m = manager!;
  manager = undefined;
  if (m.child.exitCode !== null || m.child.signalCode !== null) return;
  const exited = new Promise((r) => m.child.once("exit", r));
  const pid = m.child.pid!;
  expect(pid).toBeGreaterThan(1);
  process.kill(-pid, "SIGKILL");
  await exited;
  expect(m.child.signalCode).toBe("SIGKILL");
}

/** Restarts the manager on the same data dir and port; resolves with the time (ms since epoch) it listened. */
async function restartManager(): Promise<number> {
  const started = Date.now();
  manager = await startManagerProcess();
  expect(/first start/.test(manager.output()), "a restart on the same data dir is not a first start").toBe(false);
  observed[`restart_${++restarts}_start_ms`] = Date.now() - started;
  return Date.now();
}

async function onlineEdges(): Promise<string[]> {
  try {
    return (await as.admin.edges.listEdges({})).edges.filter((e) => e.online).map((e) => e.id).sort();
  } catch {
    return [];
  }
}

/** Each test starts with a listening manager and both edges connected, whatever the test before did. */
async function ensureManager(): Promise<void> {
  if (manager) return;
  const listening = await restartManager();
  await bothEdgesBack(listening, RECONNECT_BOUND_MS + 5000);
}

/** Waits until both edges hold a session with the (re)started manager; returns the ms it took. */
async function bothEdgesBack(since: number, bound: number): Promise<number> {
  const ok = await waitFor(async () => (await onlineEdges()).join(",") === "edge-a,edge-b", bound);
  const took = Date.now() - since;
  expect(ok, `edges not back within ${bound} ms; edge-a output:\n${edgeProcs[0].output().slice(-3000)}`).toBe(true);
  return took;
}

/** Pids whose command line matches (pgrep -f); empty when none. */
function pgrep(pattern: string): number[] {
  try {
    return execFileSync("pgrep", ["-f", pattern], { encoding: "utf8" }).trim().split("\n").filter(Boolean).map(Number).filter((p) => p > 1);
  } catch {
    return [];
  }
}

async function allRows(): Promise<ToolCall[]> {
  const rows: ToolCall[] = [];
  let after = 0n;
  for (;;) {
    const page = await as.admin.audit.listToolCalls({ afterSeq: after, limit: 1000 });
    rows.push(...page.toolCalls);
    if (!page.nextAfterSeq) return rows;
    after = page.nextAfterSeq;
  }
}
const argsText = (r: ToolCall) => JSON.stringify(r.args ? toJson(ValueSchema, r.args) : null);

async function verifyChain(): Promise<{ ok: boolean; rowsChecked: number }> {
  const rpc = await as.admin.audit.verifyChain({});
  const cli = await runOngrid(["audit", "verify", "--manager", url, "--json"], { ONGRID_TOKEN: adminToken, ONGRID_LOG_LEVEL: "warn" });
  expect(cli.code, cli.stderr).toBe(0);
  const report = JSON.parse(cli.stdout.trim().split("\n").pop()!);
  expect(report.ok, cli.stdout).toBe(true);
  expect(rpc.ok, rpc.reason).toBe(true);
  return { ok: rpc.ok, rowsChecked: Number(rpc.rowsChecked) };
}

function exec(who: string, edgeId: string, command: string) {
  return as[who].skills.executeSkill({ key: "exec", edgeId, input: { case: "params", value: { command } as never } });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ongrid-faults-manager-"));
  dataDir = join(dir, "data");
  // The manager is killed and started again on this port: one below the ephemeral range (see freeStablePort).
  port = await freeStablePort();
  url = `http://127.0.0.1:${port}`;
  const first = await startManagerProcess();
  manager = first;
  expect(first.firstStartToken, first.output()).toMatch(/^ogu_/);
  adminToken = first.firstStartToken!;
  as.admin = clientsFor(adminToken);
  for (const [id, role] of [
    ["olga", Role.OPERATOR],
    ["alice", Role.APPROVER],
  ] as const) {
    await as.admin.identity.createUser({ id, role, reach: "" });
    as[id] = clientsFor((await as.admin.identity.createToken({ userId: id, description: "faults test" })).token);
  }
  for (const id of ["edge-a", "edge-b"]) {
    const { token } = await as.admin.edges.enrollEdge({ id });
    const p = spawnEdge(["--manager", url, "--token", token, "--id", id, "--max-backoff", `${MAX_BACKOFF_MS}ms`, "--log-level", "info"]);
    edgeProcs.push({ id, ...p });
  }
  await bothEdgesBack(Date.now(), 20_000);
}, 90_000);

afterAll(async () => {
  await Promise.all(edgeProcs.map((e) => stopChild(e.child)));
  if (manager) {
    const m = manager;
    if (m.child.exitCode === null && m.child.signalCode === null && m.child.pid! > 1) {
      const exited = new Promise((r) => m.child.once("exit", r));
      process.kill(-m.child.pid!, "SIGTERM");
      const t = setTimeout(() => {
        try {
          process.kill(-m.child.pid!, "SIGKILL");
        } catch {
          /* gone */
        }
      }, 5000);
      await exited;
      clearTimeout(t);
    }
  }
  for (const mk of markers) for (const pid of pgrep(mk)) process.kill(pid, "SIGKILL");
  if (dir) rmSync(dir, { recursive: true, force: true });
  console.log(`faults-manager observed: ${JSON.stringify(observed)}`);
});

describe("F2: manager kill -9 mid-call", () => {
  it("a safe call in flight fails promptly for its caller, never succeeds; after a restart the edges are back, calls succeed, the chain verifies, and no row claims success for it", async () => {
    // A safe call that takes seconds: `sleep` is read-only for the classifier, so it runs without approval.
    const warm = await exec("olga", "edge-a", "sleep 0.1");
    expect(warm.result?.success).toBe(true);
    expect(warm.approval).toBeUndefined();

    const marker = `sleep 6.${Date.now() % 100000}`;
    markers.push(marker);
    const pending = exec("olga", "edge-a", marker).then(
      (res) => ({ ok: true as const, res }),
      (err: unknown) => ({ ok: false as const, err, at: Date.now() }),
    );
    expect(await waitFor(() => pgrep(marker).length > 0, 10_000), "the call did not start on the edge").toBe(true);

    // A burst of short calls on the other edge, so the kill also lands while audit rows are being written.
    const nonce = Date.now() % 100000;
    const answered = new Map<string, boolean>();
    const burst = Array.from({ length: 30 }, (_, i) => `echo burst-${i}-${nonce}`).map((cmd) =>
      exec("olga", "edge-b", cmd).then(
        (r) => void answered.set(cmd, r.result?.success === true),
        () => void answered.set(cmd, false),
      ),
    );
    expect(await waitFor(() => answered.size >= 3, 10_000)).toBe(true);

    const killedAt = Date.now();
    await killManager();
    const outcome = await pending;
    await Promise.all(burst);
    expect(outcome.ok, "a call in flight when the manager was killed must not report success").toBe(false);
    if (outcome.ok) return;
    const err = ConnectError.from(outcome.err);
    // connect-node reports the reset socket as ABORTED ("socket hang up"); UNAVAILABLE/UNKNOWN are as clear.
    expect([Code.Aborted, Code.Unavailable, Code.Unknown], `${Code[err.code]}: ${err.rawMessage}`).toContain(err.code);
    expect(err.rawMessage).toMatch(/socket hang up|ECONNRESET|closed|reset/i);
    observed.inflight_error_ms = outcome.at - killedAt;
    observed.inflight_error = `${Code[err.code]}: ${err.rawMessage}`;
    expect(outcome.at - killedAt).toBeLessThan(CALLER_ERROR_BOUND_MS);

    // While the manager is down a new call fails outright (connection refused, or a pooled keep-alive socket found dead), never queued.
    const down = await exec("olga", "edge-a", "echo down").then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(down, "a call to a dead manager cannot succeed").toBeInstanceOf(ConnectError);
    expect([Code.Unavailable, Code.Aborted], `${down?.rawMessage}`).toContain(down!.code);

    const listening = await restartManager();
    observed.reconnect_after_restart_ms = await bothEdgesBack(listening, RECONNECT_BOUND_MS);
    expect(edgeProcs[0].output()).toMatch(/tunnel lost; redialling/);

    const res = await exec("olga", "edge-a", "echo back");
    expect(res.result?.success).toBe(true);
    expect(JSON.stringify(toJson(ValueSchema, res.result!.output as never))).toMatch(/back/);

    observed.rows_after_first_kill = (await verifyChain()).rowsChecked;
    // The in-flight call's row may be lost (it was never answered); no row may claim it succeeded.
    const rows = (await allRows()).filter((r) => argsText(r).includes(marker));
    expect(rows.filter((r) => r.error === "" && r.decision !== "deny"), JSON.stringify(rows.map((r) => ({ seq: r.seq, error: r.error, decision: r.decision })))).toEqual([]);
    observed.inflight_rows = rows.length;
    // Every burst call answered with success before the kill has its row: answers wait for the commit.
    const all = await allRows();
    const succeeded = [...answered].filter(([, ok]) => ok).map(([cmd]) => cmd);
    observed.burst_answered_ok = succeeded.length;
    observed.burst_failed_at_kill = [...answered.values()].filter((ok) => !ok).length;
    for (const cmd of succeeded) expect(all.filter((r) => argsText(r).includes(`"${cmd}"`) && r.error === "" && r.decision === "allow"), cmd).toHaveLength(1);
  }, 75_000);

  it("an approved mutating call running at the kill is marked failed (approval_interrupted:) at restart and never run again", async () => {
    await ensureManager();
    const file = join(dir, "ran.txt");
    const command = `echo ran >> ${file}; sleep 3`;
    const res = await exec("olga", "edge-a", command);
    expect(res.result).toBeUndefined();
    const a = res.approval!;
    expect(a.state).toBe(ApprovalState.PENDING);
    expect(existsSync(file)).toBe(false);

    const approved = (await as.alice.approvals.approve({ id: a.id })).approval!;
    expect([ApprovalState.RUNNING, ApprovalState.EXECUTED]).toContain(approved.state);
    expect(await waitFor(() => existsSync(file) && readFileSync(file, "utf8") === "ran\n", 10_000), "the approved command did not start").toBe(true);
    expect((await as.alice.approvals.getApproval({ id: a.id })).approval!.state).toBe(ApprovalState.RUNNING);

    await killManager();
    const listening = await restartManager();

    // recover() ran before the manager listened: the request is already final.
    const after = (await as.alice.approvals.getApproval({ id: a.id })).approval!;
    expect(after.state).toBe(ApprovalState.FAILED);
    const trail = (await allRows()).filter((r) => r.approvalId === a.id);
    const interrupted = trail.filter((r) => r.decisionReason.startsWith("approval_interrupted:"));
    expect(interrupted, JSON.stringify(trail.map((r) => [r.toolName, r.decision, r.decisionReason]))).toHaveLength(1);
    expect(interrupted[0]).toMatchObject({ toolName: "exec", deviceId: "edge-a", callerUserId: "olga" });
    expect(interrupted[0].error).toMatch(/^unavailable: /);
    // Its request row and the vote survived the crash; no row claims the run succeeded.
    expect(trail.some((r) => r.decision === "ask" && r.decisionReason.startsWith("approval_required:"))).toBe(true);
    expect(trail.some((r) => r.toolName === "approval.approve" && r.decision === "allow" && r.callerUserId === "alice")).toBe(true);
    expect(trail.filter((r) => r.toolName === "exec" && r.error === "" && r.decision === "allow")).toEqual([]);

    observed.reconnect_after_restart_2_ms = await bothEdgesBack(listening, RECONNECT_BOUND_MS);
    // Some seconds pass with the edge connected: the command (3 s) would have appended again by now.
    await new Promise((r) => setTimeout(r, 4000));
    expect(readFileSync(file, "utf8")).toBe("ran\n");
    expect((await as.alice.approvals.getApproval({ id: a.id })).approval!.state).toBe(ApprovalState.FAILED);
    // Approving it again is refused: a failed request is final.
    const again = await as.alice.approvals.approve({ id: a.id }).then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(again?.code).toBe(Code.FailedPrecondition);
    expect(readFileSync(file, "utf8")).toBe("ran\n");

    observed.rows_after_second_kill = (await verifyChain()).rowsChecked;
  }, 75_000);

  it("other callers and edges are unaffected after the restart: the second edge answers and a new approved call runs once", async () => {
    await ensureManager();
    expect(await onlineEdges()).toEqual(["edge-a", "edge-b"]);
    const b = await exec("olga", "edge-b", "echo from-b");
    expect(b.result?.success).toBe(true);
    expect(JSON.stringify(toJson(ValueSchema, b.result!.output as never))).toMatch(/from-b/);
    expect(edgeProcs[1].output()).toMatch(/tunnel lost; redialling/);

    const file = join(dir, "after.txt");
    const a = (await exec("olga", "edge-b", `echo ok >> ${file}`)).approval!;
    await as.alice.approvals.approve({ id: a.id });
    expect(await waitFor(async () => (await as.alice.approvals.getApproval({ id: a.id })).approval!.state === ApprovalState.EXECUTED, 10_000)).toBe(true);
    expect(readFileSync(file, "utf8")).toBe("ok\n");
    await verifyChain();
  });
});
