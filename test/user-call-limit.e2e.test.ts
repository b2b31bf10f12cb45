/**
 * skills.max_calls_per_user on a real manager (PGlite, the real dispatcher, real compiled edges):
 * with the limit at 2, a user's third running call is refused with resource_exhausted and audited
 * while the two run on; other users are unaffected; a slot comes back when its call ends, however
 * it ends (success, failure, deadline, cancellation); over RPC the refusal is ResourceExhausted;
 * a fan-out to several edges counts as one call, is refused and audited at the limit, and gives
 * its slot back when its reader stops early; the LLM acting for a user counts to that user; a call
 * parked for approval, and its run once approved, take no slot.
 *
 * Calls are held running by a manager-scope skill that waits until the test lets it finish, and,
 * on the edges, by a pack skill that waits for a file.
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, waitFor, type TestEdge } from "./support/edge.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { refusal, rejection } from "./support/rejection.ts";
import { defineSkill } from "../skill/define.ts";
import { SkillError } from "../skill/errors.ts";
import type { SkillClass } from "../skill/types.ts";
import { AuditedError, type ExecuteInput } from "../manager/calls/types.ts";
import { type Caller } from "../manager/identity/caller.ts";
import { fanOut, type FanOutEvent } from "../manager/calls/fan-out.ts";

const LIMIT = 2;
const refusedText = (user: string) => `user "${user}" has ${LIMIT} calls running (skills.max_calls_per_user is ${LIMIT})`;

let m: TestManager;
let dir: string;
const edges: TestEdge[] = [];

const alice: Caller = { userId: "alice", role: "operator" };
const bob: Caller = { userId: "bob", role: "operator" };
/** The LLM in alice's session, and in bob's. */
const agentForAlice: Caller = { userId: "0", role: "system", onBehalfOf: "alice", onBehalfRole: "operator" };
const agentForBob: Caller = { userId: "0", role: "system", onBehalfOf: "bob", onBehalfRole: "operator" };
/** The LLM on its own (an automatic diagnosis with no user). */
const agentAlone: Caller = { userId: "0", role: "system" };

/** One held call of the manager skill: started once it runs, and told by the test how to end. */
interface Gate {
  started: Promise<void>;
  hasStarted: boolean;
  markStarted(): void;
  finish(how: "ok" | "fail"): void;
  outcome: Promise<"ok" | "fail">;
}
const gates = new Map<string, Gate>();
function gate(tag: string): Gate {
  let g = gates.get(tag);
  if (!g) {
    let started!: () => void;
    let finish!: (how: "ok" | "fail") => void;
    const made: Gate = {
      started: new Promise<void>((r) => (started = r)),
      hasStarted: false,
      markStarted: () => {
        made.hasStarted = true;
        started();
      },
      finish: (how) => finish(how),
      outcome: new Promise<"ok" | "fail">((r) => (finish = r)),
    };
    g = made;
    gates.set(tag, g);
  }
  return g;
}

/** A manager skill that runs until the test finishes its gate (by its tag param). */
function holdSkill(key: string, cls: SkillClass) {
  return defineSkill({
    key,
    name: "Hold",
    description: "Waits until the test lets it finish; use when a test needs a call that stays running.",
    class: cls,
    scope: "manager",
    params: { tag: { type: "string", description: "which gate to wait on", required: true } },
    async execute(_ctx, p) {
      const g = gate(String(p.tag));
      g.markStarted();
      if ((await g.outcome) === "fail") throw new SkillError("told_to_fail", `call ${String(p.tag)} failed on purpose`, "");
      return { tag: p.tag };
    },
  });
}

/** Starts ul_hold as `caller`; the promise is settled by the test through gate(tag). */
function hold(caller: Caller, tag: string, extra: Partial<ExecuteInput> = {}) {
  return m.dispatcher.execute({ key: "ul_hold", params: { tag }, caller, ...extra });
}

/** Starts a held call per tag and waits until all run; fails at once if one ends (e.g. is refused) instead. */
async function holdRunning(caller: Caller, ...tags: string[]) {
  const calls = tags.map((t) => hold(caller, t));
  const endedEarly = (call: Promise<unknown>, tag: string) =>
    call.then(() => {
      throw new Error(`${tag} ended before it was seen running`);
    });
  await Promise.all(tags.map((t, i) => Promise.race([gate(t).started, endedEarly(calls[i]!, t)])));
  return calls;
}

/** The error a held call is refused with; fails at once if it starts running instead. */
function refusedHold(caller: Caller, tag: string) {
  const ran = gate(tag).started.then(() => {
    throw new Error(`${tag} ran although it should have been refused`);
  });
  return rejection(Promise.race([hold(caller, tag), ran]));
}

/** The audit row with this seq. */
async function row(seq: number) {
  await m.audit.flush();
  const [r] = await m.audit.list({ afterSeq: seq - 1, limit: 1 });
  expect(r?.seq).toBe(seq);
  return r!;
}

/** Whether `n` slots of the caller's user are free now (taken and given straight back). */
function free(caller: Caller, n: number): boolean {
  const got: Array<() => void> = [];
  try {
    for (let i = 0; i < n; i++) got.push(m.dispatcher.acquireCallSlot(caller));
    return true;
  } catch {
    return false;
  } finally {
    for (const r of got) r();
  }
}

/** The edge pack's gate: its calls run until this file exists; each writes a marker when it starts. */
const openFile = () => join(dir, "open");
const runsDir = () => join(dir, "runs");
const edgeCallsRunning = () => readdirSync(runsDir()).length;
function resetEdgeGate() {
  rmSync(openFile(), { force: true });
  for (const f of readdirSync(runsDir())) rmSync(join(runsDir(), f), { force: true });
}

function waitPack(): string {
  const pack = join(dir, "packs", "ul_wait");
  mkdirSync(pack, { recursive: true });
  writeFileSync(
    join(pack, "skill.json"),
    JSON.stringify({ key: "ul_wait", name: "Wait", description: "Waits for the test's file; use when a test needs an edge call that stays running.", class: "safe", params: {}, result_preview: '{"ok": true}', executable: "run.sh", timeout: "60s" }),
  );
  // Bounded, and ends when the test's directory is gone, so no loop outlives the test.
  writeFileSync(
    join(pack, "run.sh"),
    `#!/bin/sh\ncat >/dev/null\ntouch ${JSON.stringify(runsDir())}/started.$$\ni=0\nwhile [ ! -e ${JSON.stringify(openFile())} ] && [ -d ${JSON.stringify(dir)} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\nprintf '{"output": {"ok": true}}'\n`,
  );
  chmodSync(join(pack, "run.sh"), 0o755);
  return pack;
}

async function collect(gen: AsyncGenerator<FanOutEvent>): Promise<FanOutEvent[]> {
  const out: FanOutEvent[] = [];
  for await (const ev of gen) out.push(ev);
  return out;
}

const fanOutAs = (caller: Caller, spec: { edgeIds?: string[]; selector?: string }) =>
  fanOut({ dispatcher: m.dispatcher, hub: m.hub }, { key: "ul_wait", edgeIds: spec.edgeIds ?? [], selector: spec.selector ?? "", caller, perEdgeTimeoutMs: 30_000 });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ongrid-user-limit-"));
  mkdirSync(runsDir());
  m = await bootManager({ "skills.max_calls_per_user": LIMIT });
  m.registry.register(holdSkill("ul_hold", "safe"));
  m.registry.register(holdSkill("ul_change", "mutating"));
  const pack = waitPack();
  for (const id of ["ul-1", "ul-2", "ul-3"]) edges.push(await startEdge(m, id, { labels: { ul: "yes" }, args: ["--pack-dir", pack] }));
}, 120_000);

afterEach(async () => {
  // Whatever a test left running ends, so the next one starts with every slot free.
  for (const g of gates.values()) g.finish("ok");
  writeFileSync(openFile(), "");
  await m.dispatcher.drain();
  expect(await waitFor(() => [alice, bob, agentAlone].every((c) => free(c, LIMIT)), 10_000)).toBe(true);
  resetEdgeGate();
});

afterAll(async () => {
  await Promise.all(edges.map((e) => e.stop()));
  await m?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("skills.max_calls_per_user", () => {
  it("refuses a user's third running call with resource_exhausted, audited, while the two run on and succeed", async () => {
    const [a1, a2] = await holdRunning(alice, "t1-a1", "t1-a2");
    const err = await refusedHold(alice, "t1-a3");
    expect(err).toBeInstanceOf(AuditedError);
    expect(err.code).toBe("resource_exhausted");
    expect(err.message).toBe(refusedText("alice"));
    expect(err.hint).toBe("wait for one to finish; a fan-out counts as one call");
    expect(gate("t1-a3").hasStarted).toBe(false); // refused before it ran
    expect(await row((err as AuditedError).auditSeq)).toMatchObject({
      toolName: "ul_hold",
      callerUserId: "alice",
      decision: "allow", // the gate let it through; the limit refused it
      error: `resource_exhausted: ${refusedText("alice")}`,
      args: { tag: "t1-a3" },
    });
    gate("t1-a1").finish("ok");
    gate("t1-a2").finish("ok");
    expect((await a1!).result).toMatchObject({ success: true, output: { tag: "t1-a1" } });
    expect((await a2!).result).toMatchObject({ success: true, output: { tag: "t1-a2" } });
  });

  it("counts per user: bob runs his calls while alice is at the limit, and has a limit of his own", async () => {
    await holdRunning(alice, "t2-a1", "t2-a2");
    expect((await refusedHold(alice, "t2-a3")).message).toBe(refusedText("alice"));
    const [b1, b2] = await holdRunning(bob, "t2-b1", "t2-b2");
    expect((await refusedHold(bob, "t2-b3")).message).toBe(refusedText("bob"));
    gate("t2-b1").finish("ok");
    gate("t2-b2").finish("ok");
    expect((await b1!).result?.success).toBe(true);
    expect((await b2!).result?.success).toBe(true);
    // Still at the limit: bob's calls took nothing of alice's.
    expect((await refusedHold(alice, "t2-a4")).code).toBe("resource_exhausted");
  });

  it("gives a slot back when its call ends, whether it succeeded, failed, ran out of time or was cancelled", async () => {
    // Succeeded.
    const [ok1, ok2] = await holdRunning(alice, "t3-ok1", "t3-ok2");
    gate("t3-ok1").finish("ok");
    gate("t3-ok2").finish("ok");
    await Promise.all([ok1, ok2]);
    // Failed (the skill threw), and ran out of time (it never finishes).
    const failing = hold(alice, "t3-fail");
    const late = hold(alice, "t3-late", { timeoutMs: 1000 });
    await Promise.all([gate("t3-fail").started, gate("t3-late").started]);
    expect((await refusedHold(alice, "t3-over")).code).toBe("resource_exhausted");
    gate("t3-fail").finish("fail");
    expect((await failing).result).toMatchObject({ success: false, error: { code: "told_to_fail" } });
    expect((await late).result).toMatchObject({ success: false, error: { code: "deadline_exceeded" } });
    // Cancelled by its caller (the client went away).
    const cancel = new AbortController();
    const cancelled = hold(alice, "t3-cancel", { signal: cancel.signal });
    const [kept] = await holdRunning(alice, "t3-kept");
    await gate("t3-cancel").started;
    expect((await refusedHold(alice, "t3-over2")).code).toBe("resource_exhausted");
    cancel.abort(new Error("client went away"));
    expect((await cancelled).result).toMatchObject({ success: false, error: { code: "cancelled" } });
    gate("t3-kept").finish("ok");
    await kept;
    // A call down an edge's tunnel that is cancelled: the hub rejects (the run throws rather than
    // returning a failed envelope), and its slot still comes back.
    const edgeCancel = new AbortController();
    const onEdge = m.dispatcher.execute({ key: "ul_wait", edgeId: "ul-1", params: {}, caller: alice, signal: edgeCancel.signal, timeoutMs: 30_000 });
    const [kept2] = await holdRunning(alice, "t3-kept2");
    expect(await waitFor(() => edgeCallsRunning() === 1, 20_000)).toBe(true);
    expect((await refusedHold(alice, "t3-over3")).code).toBe("resource_exhausted");
    edgeCancel.abort(new Error("client went away"));
    expect((await rejection(onEdge)).code).toBe("cancelled");
    gate("t3-kept2").finish("ok");
    await kept2;
    // Every one of those slots is back: two new calls run at once, and the limit still holds.
    const [n1, n2] = await holdRunning(alice, "t3-n1", "t3-n2");
    expect((await refusedHold(alice, "t3-n3")).message).toBe(refusedText("alice"));
    gate("t3-n1").finish("ok");
    gate("t3-n2").finish("ok");
    expect((await n1!).result?.success).toBe(true);
    expect((await n2!).result?.success).toBe(true);
  });

  it("answers the refusal over RPC with ResourceExhausted and the message", async () => {
    const client = createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(await makeUser(m, "alice", "operator"))] }));
    const run = (tag: string) => client.executeSkill({ key: "ul_hold", input: { case: "params", value: { tag } } });
    const r1 = run("t4-a1");
    const r2 = run("t4-a2");
    await Promise.all([gate("t4-a1").started, gate("t4-a2").started]);
    const ran = gate("t4-a3").started.then(() => {
      throw new Error("t4-a3 ran although it should have been refused");
    });
    const err = await refusal(Promise.race([run("t4-a3"), ran]));
    expect(err.code).toBe(Code.ResourceExhausted);
    expect(err.rawMessage).toBe(`${refusedText("alice")} (hint: wait for one to finish; a fan-out counts as one call)`);
    expect(gate("t4-a3").hasStarted).toBe(false);
    gate("t4-a1").finish("ok");
    gate("t4-a2").finish("ok");
    expect((await r1).result?.success).toBe(true);
    expect((await r2).result?.success).toBe(true);
    await m.audit.flush();
    const [refusedRow] = await m.audit.list({ toolName: "ul_hold", userId: "alice", newestFirst: true, limit: 50 }).then((rows) => rows.filter((r) => (r.args as { tag?: string } | null)?.tag === "t4-a3"));
    expect(refusedRow).toMatchObject({ callerUserId: "alice", error: `resource_exhausted: ${refusedText("alice")}` });
  });

  it("counts a fan-out to several edges as one call, refuses (and audits) a fan-out at the limit, and a reader that stops early gives its slot back", async () => {
    // A fan-out to the three edges, held running: one slot for all three calls.
    const first = collect(fanOutAs(alice, { selector: "ul=yes" }));
    expect(await waitFor(() => edgeCallsRunning() === 3, 20_000)).toBe(true);
    const [x1] = await holdRunning(alice, "t5-x1"); // the second slot
    expect((await refusedHold(alice, "t5-x2")).message).toBe(refusedText("alice"));
    // A second fan-out now is refused before any call, and audited.
    const err = await rejection(collect(fanOutAs(alice, { selector: "ul=yes" })));
    expect(err).toBeInstanceOf(AuditedError);
    expect(err.message).toBe(refusedText("alice"));
    expect(edgeCallsRunning()).toBe(3);
    expect(await row((err as AuditedError).auditSeq)).toMatchObject({ toolName: "ul_wait", deviceId: "", callerUserId: "alice", error: `resource_exhausted: ${refusedText("alice")}` });
    // Let the edges answer: all three calls ran, none was refused a slot of its own.
    writeFileSync(openFile(), "");
    const events = await first;
    expect(events.filter((e) => e.kind === "edge").map((e) => (e.kind === "edge" ? [e.edgeId, e.result?.success, e.error?.code] : []))).toEqual(
      expect.arrayContaining([
        ["ul-1", true, undefined],
        ["ul-2", true, undefined],
        ["ul-3", true, undefined],
      ]),
    );
    expect(events.at(-1)).toMatchObject({ kind: "summary", targeted: 3, succeeded: 3 });
    gate("t5-x1").finish("ok");
    await x1;
    expect(free(alice, LIMIT)).toBe(true);

    // A reader that stops early: the unknown edge's refusal arrives first, two edge calls still run.
    resetEdgeGate();
    const since = (await m.audit.list({ newestFirst: true, limit: 1 }))[0]!.seq;
    const gen = fanOutAs(alice, { edgeIds: ["ul-1", "ul-2", "no-such-edge"] });
    const ev = await gen.next();
    expect(ev.value).toMatchObject({ kind: "edge", edgeId: "no-such-edge", error: { code: "not_found" } });
    expect(await waitFor(() => edgeCallsRunning() === 2, 20_000)).toBe(true);
    const [y1] = await holdRunning(alice, "t5-y1");
    expect((await refusedHold(alice, "t5-y2")).code).toBe("resource_exhausted"); // the fan-out still holds its slot
    await gen.return(undefined); // what `break` in a for await does
    // Its calls are cancelled, and once they have settled its slot is back.
    expect(await waitFor(() => free(alice, 1), 20_000)).toBe(true);
    const [y2] = await holdRunning(alice, "t5-y2b");
    gate("t5-y1").finish("ok");
    gate("t5-y2b").finish("ok");
    expect((await y1!).result?.success).toBe(true);
    expect((await y2!).result?.success).toBe(true);
    await m.audit.flush();
    const abandoned = (await m.audit.list({ afterSeq: since, toolName: "ul_wait" })).filter((r) => r.deviceId === "ul-1" || r.deviceId === "ul-2");
    expect(abandoned).toHaveLength(2);
    for (const r of abandoned) expect(r.error).toMatch(/^cancelled: /);
  });

  it("counts the LLM's calls to the user it acts for, and its own calls (no user) to the system user", async () => {
    await holdRunning(agentForAlice, "t6-s1", "t6-s2");
    const err = await refusedHold(agentForAlice, "t6-s3");
    expect(err.message).toBe(refusedText("alice"));
    expect(await row((err as AuditedError).auditSeq)).toMatchObject({ callerUserId: "0", onBehalfOf: "alice", error: `resource_exhausted: ${refusedText("alice")}` });
    // alice herself is at the limit too; the agent in bob's session is not.
    expect((await refusedHold(alice, "t6-a1")).message).toBe(refusedText("alice"));
    const [b1] = await holdRunning(agentForBob, "t6-b1");
    gate("t6-b1").finish("ok");
    expect((await b1!).result?.success).toBe(true);
    // With no user to act for, the LLM's calls count to user "0".
    await holdRunning(agentAlone, "t6-z1", "t6-z2");
    expect((await refusedHold(agentAlone, "t6-z3")).message).toBe(refusedText("0"));
  });

  it("takes no slot for a call parked for approval, nor for its run once approved", async () => {
    // Made before the request: an approver created after it does not count (separation of duties).
    await makeUser(m, "ula-approver", "approver");
    await holdRunning(alice, "t7-a1", "t7-a2");
    // At the limit, alice can still ask for approval: a parked call is not running.
    const parked = await m.dispatcher.execute({ key: "ul_change", params: { tag: "t7-c1" }, caller: alice });
    expect(parked.approval?.state).toBe("pending");
    await m.workflow.approve({ userId: "ula-approver", role: "approver" }, parked.approval!.id);
    await gate("t7-c1").started; // approved: it runs although alice has two calls running
    expect((await refusedHold(alice, "t7-a3")).message).toBe(refusedText("alice")); // two, not three
    gate("t7-c1").finish("ok");
    expect(await waitFor(async () => (await m.approvals.get(parked.approval!.id))?.state === "executed", 10_000)).toBe(true);
  });
});
