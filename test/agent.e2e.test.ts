/** The diagnosis agent through a real manager, a compiled edge and a scripted OpenAI-protocol model. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { AgentService } from "../proto/gen/ongrid/v1/agent_service_pb.ts";
import { ApprovalService, ApprovalState } from "../proto/gen/ongrid/v1/approval_service_pb.ts";
import { cacheFlushSkill } from "./support/skills.ts";
import { Writable } from "node:stream";
import { pino } from "pino";
import { defineSkill } from "../skill/define.ts";
import { mkdirSync } from "node:fs";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, waitFor, type TestEdge } from "./support/edge.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { offeredTools, startScriptedModel, type Reply, type ScriptedModel } from "./support/openai-server.ts";
import { runOngrid } from "./support/cli.ts";
import { refusal } from "./support/rejection.ts";

let m: TestManager;
let edge: TestEdge;
let model: ScriptedModel;
let dir: string;
let logFile: string;
let bigLog: string;

type Ev = { type: string; sessionId: string; data: Record<string, any> };

/** A responder that answers the router, planner and verifier by schema name and executor turns from a queue. */
function script(o: { route?: Reply; plan?: Reply; verdict?: Reply; turns: Reply[] }) {
  const turns = [...o.turns];
  return (body: any): Reply => {
    const schema = body.response_format?.json_schema?.name ?? (JSON.stringify(body.messages).includes("route_choice") ? "route_choice" : undefined);
    if (schema === "route_choice") return o.route ?? { json: { is_oncall: true, skill_name: "host_resource_diagnosis", confidence: 0.9, reason: "load" } };
    if (schema === "diagnosis_plan") return o.plan ?? { json: { reason: "cpu and logs", plan: ["check load", "read the app log"] } };
    if (schema === "verdict") return o.verdict ?? { json: { verdict: "supported", unsupported_claims: [], notes: "" } };
    if (String(body.messages?.[0]?.content ?? "").startsWith("Summarise this condensed tool output")) return { content: "MODEL-SUMMARY: one disk quota error at 11:00" };
    return turns.shift() ?? { content: "# Report\n\nNothing more." };
  };
}

async function diagnose(token: string, text: string, edgeId = "agent-edge", opts: { waitForApproval?: boolean; url?: string } = {}): Promise<Ev[]> {
  const client = createClient(AgentService, createConnectTransport({ baseUrl: opts.url ?? m.url, httpVersion: "1.1", interceptors: [bearer(token)] }));
  const out: Ev[] = [];
  for await (const ev of client.diagnose({ text, edgeId, waitForApproval: opts.waitForApproval })) out.push({ type: ev.type, sessionId: ev.sessionId, data: (ev.data ?? {}) as Record<string, any> });
  return out;
}

/** The script the model follows now; each test sets it. */
let current: (body: any) => Reply | Promise<Reply> = () => ({ status: 500, error: { message: "no script set" } });
const use = (f: (body: any) => Reply | Promise<Reply>) => {
  current = f;
};

/** Executor requests (those offering tools) the model received, in order. */
const executorRequests = () => model.requests.filter((r) => Array.isArray(r.body.tools) && r.body.tools.length > 0);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ongrid-agent-"));
  logFile = join(dir, "app.log");
  writeFileSync(logFile, "2026-12-01T10:00:00Z INFO started\n2026-12-01T10:05:00Z ERROR worker 3 ran out of memory\n");
  bigLog = join(dir, "big.log");
  const line = (i: number) => `2026-12-01T10:${String(i % 60).padStart(2, "0")}:00Z INFO request id=${i} served in ${i % 97} ms ${"x".repeat(900)}`;
  writeFileSync(bigLog, Array.from({ length: 5200 }, (_, i) => (i === 5100 ? "2026-12-01T11:00:00Z ERROR disk quota exceeded on /data" : line(i))).join("\n") + "\n");
  // A playbook whose allowed_tools list a mutating manager skill, to show approvals inside a session.
  mkdirSync(join(dir, "playbooks", "cache_ops"), { recursive: true });
  writeFileSync(
    join(dir, "playbooks", "cache_ops", "SKILL.md"),
    "---\nname: cache_ops\ndescription: cache problems\nallowed_tools: [cache_flush]\n---\n## Trigger conditions\nx\n## Required evidence\nx\n## Recommended tool order\nx\n## Stop conditions\nx\n## Report format\nx\n",
  );
  model = await startScriptedModel(Array.from({ length: 1000 }, () => (body: any) => current(body)));
  m = await bootManager({
    "model.base_url": model.url,
    "model.model": "agent-test",
    "model.max_retries": 0,
    "model.timeout": "5s",
    "agent.max_steps": 4,
    // Large enough that a multi-megabyte tail_file result arrives whole and only analyze_output shrinks it.
    "skills.output_cap_bytes": 8 * 1024 * 1024,
    "tunnel.max_frame_bytes": 16 * 1024 * 1024,
    "playbooks.dirs": join(dir, "playbooks"),
    "playbooks.watch": false,
  });
  m.registry.register(cacheFlushSkill());
  edge = await startEdge(m, "agent-edge", { roots: [dir], args: ["--output-cap", String(8 * 1024 * 1024)] });
}, 90_000);
afterAll(async () => {
  await edge?.stop();
  await m?.stop();
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("a session with a model", () => {
  it("routes, plans, reads the playbook, calls host_load and tail_file on the edge, reports and verifies; all audited as system", async () => {
    use(script({
          turns: [
            { toolCalls: [{ name: "host_load", arguments: { edge_id: "agent-edge" } }, { name: "tail_file", arguments: { edge_id: "agent-edge", path: logFile, lines: 50 } }] },
            { content: "# Report\n\nWorker 3 ran out of memory [2]; load is shown in [1]." },
          ],
        }));
    const before = model.requests.length;
    const events = await diagnose(await makeUser(m, "olga", "operator"), "app on agent-edge is slow, workers die");
    const types = events.map((e) => e.type);
    expect(types[0]).toBe("session");
    expect(types.at(-1)).toBe("done");
    expect(types).toEqual(expect.arrayContaining(["route", "plan", "guidance", "tool_call", "tool_result", "report", "verdict"]));
    const done = events.at(-1)!.data;
    expect(done.status).toBe("done");
    expect(done.usage.totalTokens).toBeGreaterThan(0);
    const results = events.filter((e) => e.type === "tool_result").map((e) => `${e.data.tool}:${e.data.success}`);
    // The playbook read is guidance (I4): its own event, no step number, not a tool result.
    expect(results).toEqual(["host_load:true", "tail_file:true"]);
    expect(events.filter((e) => e.type === "tool_call").map((e) => `${e.data.step}:${e.data.tool}`)).toEqual(["1:host_load", "2:tail_file"]);
    expect(events.filter((e) => e.type === "guidance").map((e) => `${e.data.tool}:${e.data.args.skill_name}:${e.data.success}`)).toEqual(["read_skill:host_resource_diagnosis:true"]);
    expect(events.find((e) => e.type === "plan")!.data.source).toBe("planner");
    expect(events.find((e) => e.type === "report")!.data.markdown).toContain("ran out of memory [2]");
    expect(events.find((e) => e.type === "verdict")!.data.verdict).toBe("supported");

    // The model saw the tail_file output; the tools it was offered follow the gate (NORMAL: no restart_service).
    const exec = model.requests.slice(before).filter((r) => Array.isArray(r.body.tools) && r.body.tools.length > 0);
    const offered = offeredTools(exec[0].body).all;
    expect(offered).toEqual(expect.arrayContaining(["host_load", "tail_file", "read_skill"]));
    expect(offered).not.toContain("restart_service");
    expect(JSON.stringify(exec[1].body.messages)).toContain("worker 3 ran out of memory");
    // The playbook read by read_skill reaches the executor whole (guidance is never condensed).
    const playbookMessage = exec[0].body.messages.find((x: any) => x.role === "tool" && x.tool_call_id === "call_read_skill");
    expect(playbookMessage.content).not.toContain("[condensed");
    expect(JSON.parse(playbookMessage.content).output.body).toContain("## Report format");
    // The verifier saw report and evidence, and no tools.
    const verifier = model.requests.slice(before).find((r) => r.body.response_format?.json_schema?.name === "verdict")!;
    expect(verifier.body.tools).toBeUndefined();
    expect(JSON.stringify(verifier.body.messages)).toContain("[2] tail_file on agent-edge ok");
    // Guidance is never evidence: the verifier is not given the playbook.
    expect(JSON.stringify(verifier.body.messages)).not.toContain("read_skill");
    expect(JSON.stringify(verifier.body.messages)).not.toContain("## Report format");

    const sessionId = events[0].data.sessionId;
    await m.audit.flush();
    const rows = (await m.audit.list({ sessionId })).map((r) => `${r.toolName}|${r.callerUserId}|${r.callerRole}`);
    // Still a real, audited call; the session counts only the two evidence calls.
    expect(rows).toEqual(["read_skill|0|system", "host_load|0|system", "tail_file|0|system"]);
    const stored = (await m.database.db.execute(`select tool_calls from agent_sessions where id = '${sessionId}'` as never)) as any;
    expect(((stored.rows ?? stored) as Array<{ tool_calls: number }>)[0].tool_calls).toBe(2);
  });

  it("a report that cites only the playbook fails verification without asking the verifier model", async () => {
    use(script({ turns: [{ content: "# Report\n\nThe playbook says workers die when memory is low [1], so memory is low." }] }));
    const before = model.requests.length;
    const events = await diagnose(await makeUser(m, "gwen", "operator"), "app on agent-edge is slow, workers die");
    expect(events.filter((e) => e.type === "tool_call")).toHaveLength(0);
    expect(events.filter((e) => e.type === "guidance")).toHaveLength(1);
    const verdict = events.find((e) => e.type === "verdict")!.data;
    expect(verdict.verdict).toBe("unsupported_claims");
    expect(verdict.unsupported[0]).toMatch(/no evidence tool ran/);
    expect(model.requests.slice(before).some((r) => r.body.response_format?.json_schema?.name === "verdict")).toBe(false);
    expect(events.at(-1)!.data.status).toBe("done");
  });

  it("refuses a tool the model was not offered and feeds the refusal back; a repeated identical call is answered once", async () => {
    use(script({
          turns: [
            { toolCalls: [{ name: "restart_service", arguments: { edge_id: "agent-edge", unit: "nginx" } }] },
            { toolCalls: [{ name: "host_load", arguments: { edge_id: "agent-edge" } }] },
            { toolCalls: [{ name: "host_load", arguments: { edge_id: "agent-edge" } }] },
            { content: "# Report\n\nLoad checked [3]." },
          ],
        }));
    const before = model.requests.length;
    const events = await diagnose(await makeUser(m, "omar", "operator"), "host is slow");
    const results = events.filter((e) => e.type === "tool_result");
    expect(results.map((e) => `${e.data.step}:${e.data.tool}:${e.data.success}:${e.data.deduped}`)).toEqual(["1:restart_service:false:false", "2:host_load:true:false", "3:host_load:true:true"]);
    const exec = model.requests.slice(before).filter((r) => Array.isArray(r.body.tools) && r.body.tools.length > 0);
    const fed = exec[1].body.messages.filter((x: any) => x.role === "tool").map((x: any) => JSON.parse(x.content));
    expect(fed.at(-1)).toMatchObject({ success: false, error: { code: "permission_denied", message: 'tool "restart_service" was not offered to this session' } });
    await m.audit.flush();
    const rows = await m.audit.list({ sessionId: events[0].data.sessionId });
    expect(rows.filter((r) => r.toolName === "host_load")).toHaveLength(1);
    expect(rows.find((r) => r.toolName === "restart_service")!.error).toContain("was not offered");
  });

  it("ends a looping model at the step bound, and the verifier's unsupported claims are reported", async () => {
    let n = 0;
    const loop: Reply[] = Array.from({ length: 20 }, () => ({ toolCalls: [{ name: "host_processes", arguments: { edge_id: "agent-edge", limit: ++n } }] }));
    use(script({ turns: loop, verdict: { json: { verdict: "unsupported_claims", unsupported_claims: ["the disk is full"], notes: "no disk evidence" } } }));
    const events = await diagnose(await makeUser(m, "oscar", "operator"), "host is slow");
    const calls = events.filter((e) => e.type === "tool_result" && e.data.tool === "host_processes");
    expect(calls).toHaveLength(4); // agent.max_steps
    const report = events.find((e) => e.type === "report")!.data.markdown as string;
    expect(report).toMatch(/step bound \(4 tool calls, agent\.max_steps\)/);
    expect(events.find((e) => e.type === "verdict")!.data).toMatchObject({ verdict: "unsupported_claims", unsupported: ["the disk is full"] });
    expect(events.at(-1)!.data.status).toBe("done");
  });

  it("lets the executor revise the plan, at most three times", async () => {
    const replan = (i: number): Reply => ({ toolCalls: [{ name: "update_plan", arguments: { steps: [`new step ${i}`], reason: `evidence ${i}` } }] });
    use(script({ turns: [replan(1), replan(2), { toolCalls: [{ name: "update_plan", arguments: { steps: ["list the busiest with host_processes"], reason: "evidence 3" } }] }, replan(4), { toolCalls: [{ name: "update_plan", arguments: { steps: [] , reason: "x" } }] }, { content: "# Report\n\ndone" }] }));
    const before = model.requests.length;
    const events = await diagnose(await makeUser(m, "rae", "operator"), "host is slow");
    const plans = events.filter((e) => e.type === "plan").map((e) => `${e.data.source}:${e.data.steps.join("|")}`);
    expect(plans).toEqual(["planner:check load|read the app log", "replan:new step 1", "replan:new step 2", "replan:list the busiest with host_processes"]);
    const exec = model.requests.slice(before).filter((x) => Array.isArray(x.body.tools) && x.body.tools.length > 0);
    expect(exec[0].body.tools.map((t: any) => t.function.name)).toContain("update_plan");
    // A revised plan that names a tool brings its definition (agent.tool_list on_demand).
    expect(offeredTools(exec[2].body).full).not.toContain("host_processes");
    expect(offeredTools(exec[3].body).full).toContain("host_processes");
    const fed = exec.at(-1)!.body.messages.filter((x: any) => x.role === "tool").slice(-2).map((x: any) => JSON.parse(x.content).error?.code);
    expect(fed).toEqual(["replan_limit", "replan_limit"]);
    // Replans are the agent's own: no audit row.
    await m.audit.flush();
    expect((await m.audit.list({ sessionId: events[0].data.sessionId })).map((r) => r.toolName)).toEqual(["read_skill"]);
  });

  it("agent.tool_list on_demand (the default): full definitions for the tools the plan names, a catalogue of the rest in load_tools; loaded tools join the list", async () => {
    use(script({
      plan: { json: { reason: "cpu and logs", plan: ["check host_load", "read the app log"] } },
      turns: [
        { toolCalls: [{ name: "load_tools", arguments: { names: ["tail_file", "restart_service", "no_such_tool"] } }] },
        { toolCalls: [{ name: "load_tools", arguments: { names: ["restart_service"] } }, { name: "load_tools", arguments: { names: "tail_file" } }] },
        { toolCalls: [{ name: "tail_file", arguments: { edge_id: "agent-edge", path: logFile, lines: 5 } }] },
        { content: "# Report\n\nWorker 3 ran out of memory [1]." },
      ],
    }));
    const before = model.requests.length;
    const events = await diagnose(await makeUser(m, "ona", "operator"), "host is slow");
    expect(events.at(-1)!.data.status).toBe("done");
    const exec = model.requests.slice(before).filter((r) => Array.isArray(r.body.tools) && r.body.tools.length > 0);
    expect(exec).toHaveLength(4);
    const first = offeredTools(exec[0].body);
    // The plan names host_load: in full from the first turn; everything else the session may use is catalogued.
    expect(first.full).toEqual(["host_load"]);
    expect(first.catalogued).toEqual(expect.arrayContaining(["tail_file", "read_journal", "host_processes", "read_skill"]));
    expect(first.catalogued).not.toContain("host_load");
    expect(first.all).not.toContain("restart_service"); // NORMAL: never shown, catalogue included
    const load = exec[0].body.tools.find((t: any) => t.function.name === "load_tools").function;
    expect(load.description).toMatch(/\n- tail_file: [^\n]+\[safe, host\]/);
    expect(String(exec[0].body.messages[0].content)).toContain("load the ones you will call");

    // The load answers by name: loaded, and refused what the session may not use.
    const fed = (i: number) => exec[i].body.messages.filter((x: any) => x.role === "tool").map((x: any) => JSON.parse(x.content));
    expect(fed(1).at(-1)).toEqual({ success: true, output: { loaded: ["tail_file"], already_loaded: [], not_offered: ["restart_service", "no_such_tool"] } });
    const second = offeredTools(exec[1].body);
    expect(second.full.sort()).toEqual(["host_load", "tail_file"]);
    expect(second.catalogued).not.toContain("tail_file");
    // Only names the session may use load; a names list that is not one is refused naming the rule.
    expect(fed(2).slice(-2)).toEqual([
      { success: false, error: { code: "not_offered", message: "not tools of this session: restart_service; load names from load_tools's list" } },
      { success: false, error: { code: "invalid_argument", message: "names: 1 to 10 tool names from load_tools's list (rule: load_tools)" } },
    ]);
    expect(offeredTools(exec[2].body).all).not.toContain("restart_service");
    expect(JSON.stringify(fed(3).at(-1))).toContain("worker 3 ran out of memory");
    // Loading is the agent's own: only the skill calls are audited.
    await m.audit.flush();
    expect((await m.audit.list({ sessionId: events[0].data.sessionId })).map((r) => r.toolName)).toEqual(["read_skill", "tail_file"]);
  });

  it("turns spent loading tools and replanning do not count against the bound on model turns", async () => {
    const load = (name: string): Reply => ({ toolCalls: [{ name: "load_tools", arguments: { names: [name] } }] });
    const replan = (i: number): Reply => ({ toolCalls: [{ name: "update_plan", arguments: { steps: [`step ${i}`], reason: `r${i}` } }] });
    const call = (limit: number): Reply => ({ toolCalls: [{ name: "host_processes", arguments: { edge_id: "agent-edge", limit } }] });
    // agent.max_steps is 4 here: 4 calls, 4 loads and 3 replans are 11 turns before the report, over 2 × 4 + 2.
    use(script({ turns: [load("host_processes"), replan(1), call(1), load("read_journal"), replan(2), call(2), load("tail_file"), replan(3), call(3), load("host_files"), call(4), { content: "# Report\n\nFour process listings [2]." }] }));
    const events = await diagnose(await makeUser(m, "olga", "operator"), "host is slow");
    expect(events.filter((e) => e.type === "tool_result" && e.data.tool === "host_processes").map((e) => e.data.success)).toEqual([true, true, true, true]);
    expect(events.find((e) => e.type === "report")!.data.markdown).toBe("# Report\n\nFour process listings [2].");
    expect(events.at(-1)!.data).toMatchObject({ status: "done" });
  });

  it("a skill named load_tools among the offered ones: the session lists every tool in full and says so in the log", async () => {
    let logText = "";
    const sink = new Writable({ write: (c, _e, done) => ((logText += String(c)), done()) });
    const other = await bootManager({ "model.base_url": model.url, "model.model": "agent-test", "model.max_retries": 0, "model.timeout": "5s" }, {}, undefined, { log: pino({ level: "warn" }, sink) });
    try {
      other.registry.register(defineSkill({ key: "load_tools", name: "load_tools", description: "A skill that happens to have this name.", class: "safe", scope: "manager", params: {}, async execute() { return { ran: true }; } }));
      use(script({ turns: [{ content: "# Report\n\nnothing" }] }));
      const before = model.requests.length;
      const events = await diagnose(other.adminToken, "host is slow", "", { url: other.url });
      expect(events.at(-1)!.data.status).toBe("done");
      const exec = model.requests.slice(before).filter((r) => Array.isArray(r.body.tools) && r.body.tools.length > 0);
      const load = exec[0].body.tools.find((t: any) => t.function.name === "load_tools").function;
      expect(load.description).toContain("A skill that happens to have this name.");
      expect(load.parameters.properties?.names).toBeUndefined();
      expect(exec[0].body.tools.map((t: any) => t.function.name)).toContain("read_skill"); // in full: no catalogue
      expect(logText).toMatch(/agent.tool_list on_demand: a skill named load_tools is offered, so this session lists every tool in full/);
    } finally {
      await other.stop();
    }
  });

  it("plans under the router's playbook (what the gate enforces): the planner is told it and asked for steps, not for a playbook", async () => {
    use(script({ plan: { json: { reason: "pods?", plan: ["look at pods"] } }, turns: [{ content: "# Report\n\nok" }] }));
    const before = model.requests.length;
    const events = await diagnose(await makeUser(m, "pam", "operator"), "host is slow");
    const plan = events.find((e) => e.type === "plan")!.data;
    expect(plan).toMatchObject({ source: "planner", steps: ["look at pods"], reason: "host_resource_diagnosis: pods?" });
    const planner = model.requests.slice(before).find((r) => r.body.response_format?.json_schema?.name === "diagnosis_plan")!.body;
    expect(Object.keys(planner.response_format.json_schema.schema.properties)).toEqual(["reason", "plan"]);
    expect(JSON.stringify(planner.messages)).toContain("Playbook: host_resource_diagnosis: ");
    expect(events.find((e) => e.type === "guidance")!.data.args).toEqual({ skill_name: "host_resource_diagnosis" });
  });

  it("refuses an edge that is not online in reach before anything runs", async () => {
    const err = await refusal(diagnose(await makeUser(m, "pax", "operator"), "host is slow", "no-such-edge"));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toContain('edge_id: "no-such-edge" is not an online edge in your reach (rule: online)');
  });

  it("records a session the caller walked away from as failed, not running", async () => {
    const slowTurn = (): Promise<Reply> => new Promise((r) => setTimeout(() => r({ content: "# Report\n\nlate" }), 1500));
    const base = script({ turns: [] });
    use((body: any) => (Array.isArray(body.tools) && body.tools.length > 0 ? slowTurn() : base(body)));
    const client = createClient(AgentService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(await makeUser(m, "quin", "operator"))] }));
    const abort = new AbortController();
    let sessionId = "";
    const run = (async () => {
      for await (const ev of client.diagnose({ text: "host is slow", edgeId: "agent-edge" }, { signal: abort.signal })) {
        if (ev.type === "session") sessionId = ev.sessionId;
        if (ev.type === "guidance") abort.abort(); // after read_skill, while the executor waits on the model
      }
    })().catch(() => {});
    await run;
    expect(sessionId).not.toBe("");
    const status = async () => {
      const r = (await m.database.db.execute(`select status, error from agent_sessions where id = '${sessionId}'` as never)) as any;
      return ((r.rows ?? r) as Array<{ status: string; error: string }>)[0];
    };
    expect(await waitFor(async () => (await status()).status !== "running", 15_000)).toBe(true);
    expect(await status()).toEqual({ status: "failed", error: "cancelled: the caller went away" });
  });

  it("uses the playbook's fallback plan when the planner fails", async () => {
    use(script({ plan: { status: 500, error: { message: "planner down" } }, turns: [{ content: "# Report\n\nno evidence needed" }] }));
    const events = await diagnose(await makeUser(m, "opal", "operator"), "host is slow");
    const plan = events.find((e) => e.type === "plan")!.data;
    expect(plan.source).toBe("fallback_plan");
    expect(plan.reason).toContain("planner failed (http_error)");
    expect(plan.steps[0]).toMatch(/^host_load/);
  });

  it("a 5 MB log reaches the model only in the condensed form", async () => {
    use(script({ turns: [{ toolCalls: [{ name: "tail_file", arguments: { edge_id: "agent-edge", path: bigLog, lines: 5000 } }] }, { content: "# Report\n\nDisk quota [1]." }] }));
    const before = model.requests.length;
    const events = await diagnose(await makeUser(m, "olaf", "operator"), "app log is huge, what failed?");
    const result = events.find((e) => e.type === "tool_result" && e.data.tool === "tail_file")!.data;
    expect(result.success).toBe(true);
    expect(result.content.startsWith("[condensed by analyze_output]")).toBe(true);
    // What the edge returned was megabytes: the condensed header counts them.
    expect(Number(/^(\d+) bytes/m.exec(result.content)![1])).toBeGreaterThan(3_000_000);
    const exec = model.requests.slice(before).filter((r) => Array.isArray(r.body.tools) && r.body.tools.length > 0);
    const toolMessage = exec[1].body.messages.at(-1);
    expect(toolMessage.role).toBe("tool");
    expect(toolMessage.content.length).toBeLessThan(5000);
    expect(toolMessage.content).toContain("disk quota exceeded");
    // Second stage: the model's summary of the digest rides under it.
    expect(toolMessage.content).toContain("[model summary of the digest]\nMODEL-SUMMARY: one disk quota error at 11:00");
    expect(JSON.stringify(exec[1].body).length).toBeLessThan(200_000);
  });
});

describe("approvals and bounds", () => {
  const cacheScript = () =>
    script({
      route: { json: { is_oncall: true, skill_name: "cache_ops", confidence: 0.9, reason: "cache" } },
      plan: { json: { reason: "cache", plan: ["flush"] } },
      turns: [{ toolCalls: [{ name: "cache_flush", arguments: {} }] }, { content: "# Report\n\nFlush requested [1]." }],
    });

  it("without waiting, the model is told a mutating call is pending and has not run", async () => {
    use(cacheScript());
    const before = model.requests.length;
    const events = await diagnose(await makeUser(m, "pia", "operator"), "cache is stale");
    const r = events.find((e) => e.type === "tool_result" && e.data.tool === "cache_flush")!.data;
    expect(r.success).toBe(false);
    expect(r.pendingApproval).toMatch(/^apr_/);
    const exec = model.requests.slice(before).filter((x) => Array.isArray(x.body.tools) && x.body.tools.length > 0);
    expect(JSON.parse(exec[1].body.messages.at(-1).content)).toMatchObject({ success: false, pending_approval: { id: r.pendingApproval } });
  });

  it("with wait_for_approval the session waits for an approver, then the call runs and the model reads its result", async () => {
    use(cacheScript());
    const approvals = createClient(ApprovalService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(await makeUser(m, "bert", "approver"))] }));
    const earlier = new Set((await approvals.listApprovals({})).approvals.map((a) => a.id));
    const running = diagnose(await makeUser(m, "pete", "operator"), "cache is stale", "agent-edge", { waitForApproval: true });
    let id = "";
    expect(
      await waitFor(async () => {
        const pending = (await approvals.listApprovals({})).approvals.find((a) => a.key === "cache_flush" && a.state === ApprovalState.PENDING && !earlier.has(a.id));
        id = pending?.id ?? "";
        return Boolean(id);
      }, 20_000),
    ).toBe(true);
    await approvals.approve({ id });
    const events = await running;
    const r = events.find((e) => e.type === "tool_result" && e.data.tool === "cache_flush")!.data;
    expect(r.success).toBe(true);
    expect(JSON.parse(r.content)).toMatchObject({ success: true, output: { flushed: true } });
  });

  it("the time bound ends a slow, looping model with a report of what it has", async () => {
    const slow = await bootManager({ "model.base_url": model.url, "model.model": "agent-test", "model.max_retries": 0, "agent.max_duration": "1500ms" });
    try {
      let n = 0;
      const base = script({ turns: [] });
      use((body: any) => {
        if (Array.isArray(body.tools) && body.tools.length > 0) {
          n++;
          const reply: Reply = { toolCalls: [{ name: "read_skill", arguments: { skill_name: n % 2 ? "generic_oncall" : "network_diagnosis" } }] };
          return new Promise<Reply>((r) => setTimeout(() => r(reply), 600));
        }
        return base(body);
      });
      const events = await diagnose(slow.adminToken, "something is wrong with prod", "", { url: slow.url });
      const report = events.find((e) => e.type === "report")!.data.markdown as string;
      expect(report).toContain("time bound (agent.max_duration)");
      expect(events.at(-1)!.data.status).toBe("done");
      expect(n).toBeLessThan(6);
      // A planner that never answers is cut by the same bound (model.timeout alone would be 30 s).
      use(script({ plan: { hang: true }, turns: [{ content: "# Report\n\nfrom the fallback plan" }] }));
      const hung = await diagnose(slow.adminToken, "something is wrong with prod", "", { url: slow.url });
      expect(hung.find((e) => e.type === "plan")!.data.source).toBe("fallback_plan");
      expect(hung.at(-1)!.data.status).toBe("done");
    } finally {
      await slow.stop();
    }
  });
});

describe("offline", () => {
  it("`ongrid diagnose` with no model runs the fallback steps on the edge and prints a report", async () => {
    const off = await bootManager();
    const offEdge = await startEdge(off, "web-1");
    try {
      const r = await runOngrid(["diagnose", "--manager", off.url, "disk full on web-1"], { ONGRID_TOKEN: off.adminToken });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain("route: host_resource_diagnosis (rules, not_configured)");
      expect(r.stderr).toContain("plan (fallback_steps)");
      expect(r.stdout).toContain("# Diagnosis report");
      expect(r.stdout).toContain("Path: fallback steps — no model is configured");
      expect(r.stdout).toMatch(/### 1\. host_load on web-1 — ok/);
      expect(r.stdout).toContain("## Not checked");
      expect(r.stdout).toMatch(/host_files: the input names no \{\{path\}\}/);
      const sessions = await off.database.db.execute("select path, status, skill_name, tool_calls from agent_sessions" as never);
      const rows = ((sessions as any).rows ?? sessions) as Array<Record<string, unknown>>;
      expect(rows).toEqual([{ path: "fallback", status: "done", skill_name: "host_resource_diagnosis", tool_calls: expect.any(Number) }]);
      expect(Number(rows[0].tool_calls)).toBeGreaterThanOrEqual(4);
      // A token in the incident text never becomes a tool argument.
      const secret = await runOngrid(["diagnose", "--json", "--manager", off.url, "website down: https://api.example.com/health?access_token=abcdef1234567890 times out"], { ONGRID_TOKEN: off.adminToken });
      expect(secret.code, secret.stderr).toBe(0);
      expect(secret.stdout).not.toContain("abcdef1234567890");
      expect(secret.stdout).toMatch(/"type":"skipped","tool":"probe_http","reason":"the input names no \{\{url\}\}"/);
      // An IP literal: the network playbook's probe_dns step is skipped (when: host: name), never recorded as NXDOMAIN.
      const ip = await runOngrid(["diagnose", "--json", "--manager", off.url, "ProbeFailed: connection refused to http://127.0.0.1:9/health"], { ONGRID_TOKEN: off.adminToken });
      expect(ip.code, ip.stderr).toBe(0);
      const ipEvents = ip.stdout.trim().split("\n").map((l) => JSON.parse(l));
      expect(ipEvents.find((e) => e.type === "route").decision.skillName).toBe("network_diagnosis");
      expect(ipEvents.filter((e) => e.type === "tool_call").map((e) => e.tool)).not.toContain("probe_dns");
      expect(ipEvents.find((e) => e.type === "skipped" && e.tool === "probe_dns").reason).toBe("{{host}} is the IP literal 127.0.0.1: there is no name to resolve (when: host: name)");
      expect(ipEvents.filter((e) => e.type === "tool_call").map((e) => e.tool)).toEqual(expect.arrayContaining(["probe_tcp", "probe_http"]));
      expect(ipEvents.find((e) => e.type === "report").markdown).not.toContain("NXDOMAIN");
    } finally {
      await offEdge.stop();
      await off.stop();
    }
  });
});
