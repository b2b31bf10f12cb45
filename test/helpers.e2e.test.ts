/**
 * The agent helpers (K4) on real managers through the real dispatcher: send_message is denied by
 * the gate's notification guardrail until gate.allow_notifications, then posts to a loopback
 * webhook; task_stop stops a running worker for its owner or an admin and refuses anyone else;
 * agent_tool runs a bounded worker session (offline fallback path, and a scripted model).
 */
import http from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { AgentService } from "../proto/gen/ongrid/v1/agent_service_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, waitFor } from "./support/edge.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { lastAuditRow } from "./support/audit.ts";
import { rejection } from "./support/rejection.ts";
import { offeredTools, startScriptedModel, type Reply, type ScriptedModel } from "./support/openai-server.ts";
import { AuditedError, type ExecuteInput } from "../manager/calls/types.ts";
import { type Caller } from "../manager/identity/caller.ts";
import { tasksOf } from "../manager/agent/session/tasks.ts";
import pino from "pino";
import { createAgentTool } from "../manager/skills/base/helpers/agent-tool.ts";
import { runTool } from "../manager/skills/base/fleet/fleet.testkit.ts";
import { createSessionStore } from "../manager/agent/session/store.ts";
import { loadConfig } from "../manager/config/load.ts";
import { startManager } from "../manager/main.ts";
import { createLogger } from "../manager/core.ts";

/** A loopback chat webhook that records what it is sent. */
async function startWebhook(status = 200) {
  const received: Array<{ body: unknown; headers: http.IncomingHttpHeaders }> = [];
  const server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      received.push({ body: JSON.parse(raw), headers: req.headers });
      res.writeHead(status, { "content-type": "text/plain" });
      res.end(status === 200 ? "ok" : "invalid_token");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/services/T000/B000/XXXX`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

let plain: TestManager; // defaults: notifications off, no model
let open: TestManager; // notifications on, a scripted model
let hook: Awaited<ReturnType<typeof startWebhook>>;
let failing: Awaited<ReturnType<typeof startWebhook>>;
let model: ScriptedModel;
let current: (body: any) => Reply | Promise<Reply> = () => ({ hang: true });

const alice: Caller = { userId: "alice", role: "operator" };
const bob: Caller = { userId: "bob", role: "operator" };
const admin: Caller = { userId: "admin", role: "admin" };

beforeAll(async () => {
  hook = await startWebhook();
  failing = await startWebhook(403);
  model = await startScriptedModel(Array.from({ length: 500 }, () => (body: any) => current(body)));
  plain = await bootManager({ "skills.send_message.webhook_url": hook.url });
  open = await bootManager({
    "gate.allow_notifications": true,
    "skills.send_message.webhook_url": hook.url,
    "model.base_url": model.url,
    "model.model": "helpers-test",
    "model.max_retries": 0,
    // Long enough that a hanging model keeps a session running until the test stops it.
    "model.timeout": "5m",
  });
  for (const m of [plain, open]) for (const [id, role] of [["alice", "operator"], ["bob", "operator"], ["carol", "operator"]]) await makeUser(m, id, role);
}, 120_000);
afterAll(async () => {
  await plain?.stop();
  await open?.stop();
  await model?.close();
  await hook?.close();
  await failing?.close();
});

describe("send_message", () => {
  it("is denied by default by the notification guardrail, through the real dispatcher, audited, and nothing is posted", async () => {
    const err = await rejection(plain.dispatcher.execute({ key: "send_message", params: { text: "disk full on web-01" }, caller: admin }));
    expect(err).toBeInstanceOf(AuditedError);
    expect(err.code).toBe("permission_denied");
    expect(err.message).toMatch(/denied \(guardrail_notification\): "send_message" is a notification tool and notifications are off \(gate\.allow_notifications\)/);
    const row = await lastAuditRow(plain);
    expect(row).toMatchObject({ toolName: "send_message", decision: "deny", callerUserId: "admin" });
    expect(row.decisionReason).toMatch(/^guardrail_notification: /);
    expect(hook.received).toHaveLength(0);
  });

  it("is not offered to a model while notifications are off, and is once they are on", async () => {
    const list = async (m: TestManager) => {
      const client = createClient(AgentService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(m.adminToken)] }));
      return (await client.listTools({})).tools.map((t) => t.name);
    };
    expect(await list(plain)).not.toContain("send_message");
    expect(await list(open)).toContain("send_message");
  });

  it("with gate.allow_notifications posts {text} to the webhook, secrets redacted", async () => {
    const out = await open.dispatcher.execute({ key: "send_message", params: { text: "web-01 root cause: disk full. token=s3cr3t-value" }, caller: alice });
    expect(out.result?.success, JSON.stringify(out.result?.error)).toBe(true);
    expect(out.result?.output).toMatchObject({ sent: true, status: 200, redacted: true });
    expect(hook.received).toHaveLength(1);
    expect(hook.received[0].body).toEqual({ text: "web-01 root cause: disk full. token=[REDACTED]" });
    expect(hook.received[0].headers["content-type"]).toBe("application/json");
    expect(await lastAuditRow(open)).toMatchObject({ toolName: "send_message", decision: "allow", callerUserId: "alice" });
  });

  it("stays behind a playbook's whitelist even though it is safe (a guardrail tool must be listed)", async () => {
    const err = await rejection(open.dispatcher.execute({ key: "send_message", params: { text: "x" }, caller: alice, playbook: "generic_oncall" }));
    expect(err.message).toMatch(/denied \(playbook_whitelist\): "send_message" is on a guardrail list and not in the playbook's allowed_tools/);
    expect(hook.received).toHaveLength(1);
  });

  it("fails with the webhook's HTTP status, never quoting the webhook URL", async () => {
    const m = await bootManager({ "gate.allow_notifications": true, "skills.send_message.webhook_url": failing.url });
    try {
      const out = await m.dispatcher.execute({ key: "send_message", params: { text: "hello" }, caller: admin });
      expect(out.result?.error).toMatchObject({ code: "upstream_error", message: "the message webhook refused the message: HTTP 403" });
      expect(JSON.stringify(out.result)).not.toContain("XXXX");
    } finally {
      await m.stop();
    }
  });

  it("never quotes its webhook URL, not even when the URL cannot be parsed", async () => {
    const url = "https://hooks.example.invalid:99999/services/T000/B000/SECRETPATH";
    // The configuration refuses it at load, naming the key and the rule, not the URL.
    const refused = await rejection(bootManager({ "gate.allow_notifications": true, "skills.send_message.webhook_url": url }));
    expect(refused.message).toMatch(/skills\.send_message\.webhook_url: is not a valid URL \(rule: url\)/);
    expect(refused.message).not.toContain("SECRETPATH");
    // A manager whose configuration was built past loadConfig (in code): the tool itself keeps the URL out of its answer and the audit log.
    const config = loadConfig({ env: {}, overrides: { "server.port": 0, data_dir: mkdtempSync(join(tmpdir(), "ongrid-test-")), "gate.allow_notifications": true, "skills.send_message.webhook_url": "https://hooks.example.com/x" } });
    config.skills.send_message.webhook_url = url;
    const mm = await startManager(config, createLogger("silent"));
    try {
      const out = await mm.dispatcher.execute({ key: "send_message", params: { text: "hello" }, caller: admin });
      expect(out.result?.success).toBe(false);
      expect(out.result?.error).toMatchObject({ code: "not_configured", message: "the webhook URL could not be used: skills.send_message.webhook_url is not a valid URL (rule: url)" });
      expect(JSON.stringify(out.result), "the result quotes the webhook URL").not.toContain("SECRETPATH");
      expect(JSON.stringify(await lastAuditRow(mm)), "the audit row quotes the webhook URL").not.toContain("SECRETPATH");
    } finally {
      await mm.close();
      rmSync(config.data_dir, { recursive: true, force: true });
    }
  });

  it("names a network failure by its class only, never the URL", async () => {
    // Port 9 (discard) on loopback: nothing listens; the path stands for a webhook's token.
    const m = await bootManager({ "gate.allow_notifications": true, "skills.send_message.webhook_url": "http://127.0.0.1:9/services/T000/B000/SECRETPATH" });
    try {
      const out = await m.dispatcher.execute({ key: "send_message", params: { text: "hello" }, caller: admin });
      expect(out.result?.error).toMatchObject({ code: "upstream_unavailable", message: expect.stringMatching(/^the webhook could not be reached \(network error(: [A-Z_]+)?\)$/) });
      expect(JSON.stringify(out.result)).not.toMatch(/SECRETPATH|127\.0\.0\.1:9/);
      expect(JSON.stringify(await lastAuditRow(m))).not.toContain("SECRETPATH");
    } finally {
      await m.stop();
    }
  });
});

describe("agent_tool without a model", () => {
  it("runs a worker session on the fallback path as the calling user and returns its report", async () => {
    const out = await plain.dispatcher.execute({ key: "agent_tool", params: { question: "disk full on web-1" }, caller: alice, sessionId: "ext-parent-1" });
    expect(out.result?.success, JSON.stringify(out.result?.error)).toBe(true);
    const o = out.result!.output as any;
    expect(o).toMatchObject({ status: "done", path: "fallback" });
    expect(o.session_id).toMatch(/^ses_/);
    expect(o.report).toMatch(/^# Diagnosis report/);
    expect(o.report).toContain("disk full on web-1");
    const s = await createSessionStore(plain.database).get(o.session_id);
    expect(s).toMatchObject({ userId: "alice", status: "done", path: "fallback" });
    // It ended: nothing is left running.
    expect(tasksOf(plain.agent).list()).toEqual([]);
  });

  it("refuses an edge that is not online before any session exists", async () => {
    const out = await plain.dispatcher.execute({ key: "agent_tool", params: { question: "disk full on web-1", edge_id: "nowhere-01" }, caller: alice });
    expect(out.result?.error).toMatchObject({ code: "invalid_argument" });
    expect(out.result?.error?.message).toMatch(/edge_id: "nowhere-01" is not an online edge in your reach/);
  });
});

/** Starts a worker for `caller` on the open manager whose model hangs, and waits until it is registered. */
async function hangingWorker(caller: Caller, question = "nginx on web-1 returns 502") {
  current = () => ({ hang: true });
  const before = new Set(tasksOf(open.agent).list().map((t) => t.id));
  const call = open.dispatcher.execute({ key: "agent_tool", params: { question }, caller, timeoutMs: 120_000 });
  let id = "";
  const ok = await waitFor(() => {
    id = tasksOf(open.agent).list(caller.userId).find((t) => !before.has(t.id))?.id ?? "";
    return Boolean(id);
  }, 20_000);
  expect(ok, "the worker never registered").toBe(true);
  return { id, call };
}

describe("task_stop", () => {
  it("refuses a stranger, lets the owner stop a running worker, and the worker's call reports it was stopped", async () => {
    const { id, call } = await hangingWorker(alice);
    const sessions = createSessionStore(open.database);
    expect((await sessions.get(id))?.status).toBe("running");

    const stranger = await open.dispatcher.execute({ key: "task_stop", params: { id }, caller: bob });
    expect(stranger.result?.error).toMatchObject({ code: "permission_denied" });
    expect(stranger.result?.error?.message).toMatch(new RegExp(`task ${id} belongs to alice; only its owner or an admin may stop it`));
    // Still running after the refusal.
    expect(tasksOf(open.agent).get(id)).toBeDefined();
    expect((await sessions.get(id))?.status).toBe("running");

    const stop = await open.dispatcher.execute({ key: "task_stop", params: { id }, caller: alice });
    expect(stop.result?.success, JSON.stringify(stop.result?.error)).toBe(true);
    expect(stop.result?.output).toEqual({ stopped: true, id, kind: "worker", owner: "alice", stopped_by: "alice", ended: true });

    const res = await call;
    expect(res.result?.error).toMatchObject({ code: "stopped" });
    expect(res.result?.error?.message).toBe(`worker ${id} was stopped by alice with task_stop before it finished`);
    expect(await sessions.get(id)).toMatchObject({ status: "cancelled", error: "cancelled: stopped by alice with task_stop" });

    const again = await open.dispatcher.execute({ key: "task_stop", params: { id }, caller: alice });
    expect(again.result?.error).toMatchObject({ code: "failed_precondition", message: `session ${id} already ended (status cancelled)` });
  });

  it("lets an admin stop another user's worker, but not an agent acting for an admin", async () => {
    const { id, call } = await hangingWorker(alice);
    const agentForAdmin: Caller = { userId: "0", role: "system", onBehalfOf: "admin", onBehalfRole: "admin" };
    const refused = await open.dispatcher.execute({ key: "task_stop", params: { id }, caller: agentForAdmin });
    expect(refused.result?.error?.code).toBe("permission_denied");
    const stop = await open.dispatcher.execute({ key: "task_stop", params: { id }, caller: admin });
    expect(stop.result?.output).toMatchObject({ stopped: true, owner: "alice", stopped_by: "admin" });
    expect((await call).result?.error?.code).toBe("stopped");
  });

  it("stops a diagnosis streamed by AgentService/Diagnose: a stranger is refused, the owner's stop ends the stream with a cancelled done event", async () => {
    let out = await open.dispatcher.execute({ key: "task_stop", params: { id: "ses_00000000000000000000" }, caller: alice });
    expect(out.result?.error).toMatchObject({ code: "not_found" });
    current = () => ({ hang: true });
    const client = createClient(AgentService, createConnectTransport({ baseUrl: open.url, httpVersion: "1.1", interceptors: [bearer(await makeUser(open, "alice", "operator"))] }));
    const stream = client.diagnose({ text: "nginx on web-1 returns 502" })[Symbol.asyncIterator]();
    const first = await stream.next();
    const sessionId = (first.value as { sessionId: string }).sessionId;
    expect(sessionId).toMatch(/^ses_/);
    await waitFor(() => tasksOf(open.agent).get(sessionId) !== undefined, 5_000);
    expect(tasksOf(open.agent).get(sessionId)).toMatchObject({ kind: "diagnosis", owner: "alice" });

    out = await open.dispatcher.execute({ key: "task_stop", params: { id: sessionId }, caller: bob });
    expect(out.result?.error).toMatchObject({ code: "permission_denied" });
    expect(tasksOf(open.agent).get(sessionId)).toBeDefined();

    out = await open.dispatcher.execute({ key: "task_stop", params: { id: sessionId }, caller: alice });
    expect(out.result?.success, JSON.stringify(out.result?.error)).toBe(true);
    expect(out.result?.output).toEqual({ stopped: true, id: sessionId, kind: "diagnosis", owner: "alice", stopped_by: "alice", ended: true });

    const events: Array<{ type: string; data: any }> = [];
    for (let n = await stream.next(); !n.done; n = await stream.next()) events.push(n.value as never);
    const done = events.filter((e) => e.type === "done");
    expect(done).toHaveLength(1);
    expect(done[0]!.data).toMatchObject({ status: "cancelled", message: "stopped by alice with task_stop", stoppedBy: "alice" });
    expect(await createSessionStore(open.database).get(sessionId)).toMatchObject({ status: "cancelled", error: "cancelled: stopped by alice with task_stop" });
    expect(tasksOf(open.agent).get(sessionId)).toBeUndefined();
  });

  it("says not_stoppable for a session recorded as running that runs in no task here", async () => {
    const sessions = createSessionStore(open.database);
    const id = "ses_0000000000000000dead";
    await sessions.create({ id, userId: "alice", inputText: "left running by a process that died", edgeId: "", mode: "READ_ONLY" });
    const out = await open.dispatcher.execute({ key: "task_stop", params: { id }, caller: alice });
    expect(out.result?.error).toMatchObject({ code: "not_stoppable", message: `session ${id} is recorded as running but does not run in this manager process` });
  });
});

describe("agent_tool bounds", () => {
  it("runs at most three workers per user at once", async () => {
    const workers = [];
    for (let i = 0; i < 3; i++) workers.push(await hangingWorker({ userId: "carol", role: "operator" }, `nginx on web-${i} returns 502`));
    const fourth = await open.dispatcher.execute({ key: "agent_tool", params: { question: "nginx on web-9 returns 502" }, caller: { userId: "carol", role: "operator" } });
    expect(fourth.result?.error).toMatchObject({ code: "resource_exhausted" });
    expect(fourth.result?.error?.message).toMatch(/carol already runs 3 workers \(at most 3 at once\)/);
    for (const w of workers) expect((await open.dispatcher.execute({ key: "task_stop", params: { id: w.id }, caller: { userId: "carol", role: "operator" } })).result?.success).toBe(true);
    for (const w of workers) expect((await w.call).result?.error?.code).toBe("stopped");
  });

  it("a user cannot start more than 3 workers by calling agent_tool concurrently", async () => {
    let n = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let sessionsCreated!: () => void;
    const threeCreated = new Promise<void>((r) => (sessionsCreated = r));
    const agent = {
      async *diagnose() {
        await new Promise((r) => setTimeout(r, 20)); // the real agent awaits the session row's insert before yielding its id
        yield { type: "session", sessionId: `ses_${++n}` };
        if (n === 3) sessionsCreated();
        await gate;
        yield { type: "done", status: "done", message: "ok", usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } };
      },
    };
    const tool = createAgentTool({ agent: () => agent, database: undefined, log: pino({ level: "silent" }) } as never);
    const runs = [1, 2, 3, 4].map((i) => runTool(tool, { question: `sub-question ${i}` }, { caller: { userId: "olga", role: "operator" }, sessionId: `chat-${i}` }));
    await threeCreated;
    expect(tasksOf(agent).list("olga").map((t) => t.kind)).toEqual(["worker", "worker", "worker"]);
    release();
    const results = await Promise.all(runs);
    const started = results.filter((r) => r.success).length;
    // Before: 4 workers ran at once; the count was checked before a worker registered itself.
    expect(n).toBeLessThanOrEqual(3);
    expect(started).toBeLessThanOrEqual(3);
    expect(results.some((r) => r.error?.code === "resource_exhausted")).toBe(true);
    // The fourth call was the one refused: three places were taken before any session existed.
    expect(results[3]!.error).toMatchObject({ code: "resource_exhausted", message: "olga already runs 3 workers (at most 3 at once)" });
    // Ended, they free their places.
    expect(await waitFor(() => tasksOf(agent).count("worker", "olga") === 0, 5_000)).toBe(true);
    expect((await runTool(tool, { question: "sub-question 5" }, { caller: { userId: "olga", role: "operator" }, sessionId: "chat-5" })).success).toBe(true);
  });

  it("a worker cannot start workers: its model's agent_tool call is refused and it reports without one", async () => {
    let turn = 0;
    current = (body: any): Reply => {
      const schema = body.response_format?.json_schema?.name ?? (JSON.stringify(body.messages).includes("route_choice") ? "route_choice" : undefined);
      if (schema === "route_choice") return { json: { is_oncall: true, skill_name: "generic_oncall", confidence: 0.9, reason: "triage" } };
      if (schema === "diagnosis_plan") return { json: { reason: "triage", plan: ["ask a worker"] } };
      if (schema === "verdict") return { json: { verdict: "supported", unsupported_claims: [], notes: "" } };
      turn++;
      if (turn === 1) return { toolCalls: [{ name: "agent_tool", arguments: { question: "is the database on db-01 healthy?" } }] };
      return { content: "# Report\n\nThe nested worker was refused." };
    };
    const out = await open.dispatcher.execute({ key: "agent_tool", params: { question: "nginx on web-1 returns 502" }, caller: alice, timeoutMs: 120_000 });
    expect(out.result?.success, JSON.stringify(out.result?.error)).toBe(true);
    const o = out.result!.output as any;
    expect(o).toMatchObject({ status: "done", path: "model", report: "# Report\n\nThe nested worker was refused." });
    await open.audit.flush();
    const nested = (await open.audit.list({ sessionId: o.session_id, toolName: "agent_tool" }))[0];
    expect(nested).toMatchObject({ callerUserId: "0", onBehalfOf: "alice" });
    expect(nested.error).toMatch(new RegExp(`session ${o.session_id} is itself a worker, and a worker cannot start workers \\(rule: depth 1\\)`));
    expect(tasksOf(open.agent).list()).toEqual([]);
  });
});

describe("agent_tool and the playbook whitelist (F3)", () => {
  /** A scripted model: the router picks `route`; the executor calls `calls` in turn, then reports; records the tools each executor turn was offered. */
  function script(route: string, calls: Array<{ name: string; arguments: object }>) {
    const offered: string[][] = [];
    let turn = 0;
    current = (body: any): Reply => {
      const schema = body.response_format?.json_schema?.name ?? (JSON.stringify(body.messages).includes("route_choice") ? "route_choice" : undefined);
      if (schema === "route_choice") return { json: { is_oncall: true, skill_name: route, confidence: 0.9, reason: "a failing unit" } };
      if (schema === "diagnosis_plan") return { json: { reason: "a failing unit", plan: ["check the unit"] } };
      if (schema === "verdict") return { json: { verdict: "supported", unsupported_claims: [], notes: "" } };
      if (!Array.isArray(body.tools)) return { content: "summary" };
      offered.push(offeredTools(body).all);
      const call = calls[turn++];
      return call ? { toolCalls: [call] } : { content: "# Report\n\nnginx.service failed." };
    };
    return offered;
  }

  it("a worker started under a playbook does not get tools that playbook does not allow", async () => {
    const parent = "host_resource_diagnosis";
    // restart_service (mutating) is not in the parent's allowed_tools; the playbook the worker routes to lists it.
    expect(open.playbooks.get(parent)!.allowedTools).not.toContain("restart_service");
    expect(open.playbooks.get("service_diagnosis")!.allowedTools).toContain("restart_service");
    const edge = await startEdge(open, "wl-edge");
    try {
      const question = { question: "nginx.service keeps restarting, unit failed", edge_id: "wl-edge" };
      // Without a parent playbook, the worker (ASK_DESTRUCTIVE, under service_diagnosis) is offered restart_service.
      let offered = script("service_diagnosis", []);
      let out = await open.dispatcher.execute({ key: "agent_tool", params: question, caller: alice, mode: "ASK_DESTRUCTIVE", timeoutMs: 120_000 });
      expect(out.result?.success, JSON.stringify(out.result?.error)).toBe(true);
      expect(out.result!.output).toMatchObject({ playbook: "service_diagnosis", path: "model" });
      expect(offered[0]).toContain("restart_service");

      // Called under host_resource_diagnosis, the worker keeps its own route but only what both playbooks allow.
      offered = script("service_diagnosis", [{ name: "restart_service", arguments: { edge_id: "wl-edge", unit: "nginx.service" } }, { name: "read_journal", arguments: { edge_id: "wl-edge", unit: "nginx.service" } }]);
      // Every call the worker makes reaches the gate with the parent's whitelist.
      const calls: ExecuteInput[] = [];
      const execute = open.dispatcher.execute;
      open.dispatcher.execute = (input) => (calls.push(input), execute(input));
      try {
        out = await open.dispatcher.execute({ key: "agent_tool", params: question, caller: alice, playbook: parent, mode: "ASK_DESTRUCTIVE", timeoutMs: 120_000 });
      } finally {
        open.dispatcher.execute = execute;
      }
      expect(out.result?.success, JSON.stringify(out.result?.error)).toBe(true);
      const o = out.result!.output as any;
      expect(o).toMatchObject({ playbook: "service_diagnosis", within_playbook: parent, status: "done", path: "model" });
      expect(offered.length).toBeGreaterThan(0);
      for (const tools of offered) {
        expect(tools, `worker ran playbook ${o.playbook} under parent ${parent}`).not.toContain("restart_service");
        expect(tools).toEqual(expect.arrayContaining(["read_journal", "host_load"]));
      }
      const workerCalls = calls.filter((c) => c.sessionId === o.session_id);
      expect(workerCalls.map((c) => c.key)).toEqual(expect.arrayContaining(["read_skill", "read_journal"]));
      for (const c of workerCalls) expect(c, c.key).toMatchObject({ playbook: "service_diagnosis", whitelist: open.playbooks.get(parent)!.allowedTools });
      // Its model's restart_service call is refused (audited in the worker's session), and nothing is parked for approval.
      await open.audit.flush();
      const row = (await open.audit.list({ sessionId: o.session_id, toolName: "restart_service" }))[0];
      expect(row).toMatchObject({ callerUserId: "0", onBehalfOf: "alice" });
      expect(row.error).toMatch(/tool "restart_service" was not offered to this session/);
      expect((await open.approvals.list()).filter((a) => a.skillKey === "restart_service")).toEqual([]);
    } finally {
      await edge.stop();
    }
  });

  it("on the fallback path too, a worker under a playbook runs its own route and says whose allowed_tools bound it", async () => {
    const out = await plain.dispatcher.execute({ key: "agent_tool", params: { question: "nginx.service keeps restarting, unit failed" }, caller: alice, playbook: "host_resource_diagnosis" });
    expect(out.result?.success, JSON.stringify(out.result?.error)).toBe(true);
    expect(out.result!.output).toMatchObject({ status: "done", path: "fallback", playbook: "service_diagnosis", within_playbook: "host_resource_diagnosis" });
  });
});
