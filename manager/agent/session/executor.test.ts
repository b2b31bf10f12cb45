/** The Executor (J2): what the model is sent (the session's tools, the plan, the playbook read first) and the events it yields. */
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defineSkill } from "../../../skill/define.ts";
import { buildSkill } from "../../../skill/registry.ts";
import type { SkillDefinition } from "../../../skill/types.ts";
import { offeredTools, startScriptedModel, type ScriptedModel } from "../../../test/support/openai-server.ts";
import { LOAD_TOOLS, toFunctionTool, type BridgedTool } from "../bridge/tools.ts";
import { createModelClient, type ModelClient } from "../llm.ts";
import type { AgentEvent, AgentLimits } from "./events.ts";
import type { EvidenceItem } from "./evidence.ts";
import { runExecutor, UPDATE_PLAN, type ExecutorInput } from "./executor.ts";
import { GUIDANCE_CATEGORY } from "../../skills/builtin/read-skill.ts";

const log = pino({ level: "silent" });
const PLAYBOOK_BODY = "## Recommended tool order\nhost_load first.";

function tool(key: string, scope: "host" | "manager" = "host", category?: string): BridgedTool {
  const skill = buildSkill(
    defineSkill({ key, name: key, description: `The ${key} tool. More words.`, class: "safe", scope, ...(category ? { category } : {}), params: {}, async execute() { return {}; } }) as SkillDefinition,
  );
  return { tool: toFunctionTool(skill, scope === "host" ? ["e1"] : []), skill, edgeIds: scope === "host" ? ["e1"] : [], behavior: "allow" };
}

/** The tools this session may use (restart_service, say, is not among them: the gate left it out). */
const offered = new Map([tool("host_load"), tool("tail_file"), tool("host_processes"), tool("read_skill", "manager", GUIDANCE_CATEGORY)].map((t) => [t.skill.meta.key, t] as const));

/** Evidence that answers every call itself, recording what was called (guidance apart, as createEvidence keeps it). */
function fakeEvidence() {
  const items: EvidenceItem[] = [];
  const guidance: EvidenceItem[] = [];
  const isGuidance = (name: string) => offered.get(name)?.skill.meta.category === GUIDANCE_CATEGORY;
  return {
    items: () => items as readonly EvidenceItem[],
    guidance: () => guidance as readonly EvidenceItem[],
    isGuidance,
    async call(name: string, argumentsJson: string): Promise<EvidenceItem> {
      const g = isGuidance(name);
      const item: EvidenceItem = { step: g ? 0 : items.length + 1, tool: name, edgeId: "", args: JSON.parse(argumentsJson), success: true, content: name === "read_skill" ? PLAYBOOK_BODY : `${name} output`, auditSeq: items.length + guidance.length + 1, deduped: false, ...(g ? { guidance: true as const } : {}) };
      (g ? guidance : items).push(item);
      return item;
    },
  };
}

let server: ScriptedModel;
beforeEach(async () => {
  server = await startScriptedModel();
});
afterEach(async () => {
  await server.close();
});

function modelClient(): ModelClient {
  const c = createModelClient({ base_url: server.url, api_key: "", api_key_file: "", model: "test-executor", timeout: "5s", max_retries: 0, structured_output: "json_schema" }, log);
  if (!c) throw new Error("expected a model client");
  return c;
}

async function run(limits: Partial<AgentLimits>, over: Partial<ExecutorInput> = {}) {
  const evidence = fakeEvidence();
  const events: AgentEvent[] = [];
  const input: ExecutorInput = {
    model: modelClient(),
    playbook: "host_resource_diagnosis",
    text: "web-3 is slow",
    steps: ["check host_load", "read the app log"],
    edgeId: "e1",
    offered,
    evidence,
    limits: { maxSteps: 4, maxDurationMs: 60_000, ...limits },
    deadline: Date.now() + 60_000,
    log,
    ...over,
  };
  for await (const ev of runExecutor(input)) events.push(ev);
  return { events, evidence };
}

describe("runExecutor", () => {
  it("agent.tool_list full: every request lists the tools the session may use, and update_plan, and nothing else", async () => {
    server.push({ toolCalls: [{ name: "host_load", arguments: { edge_id: "e1" } }] }, { content: "# Report\n\nLoad is high [1]." });
    const { events, evidence } = await run({ toolList: "full" });
    expect(server.requests).toHaveLength(2);
    for (const { body } of server.requests) {
      expect(body.tools.map((t: any) => t.function.name)).toEqual([...offered.keys(), UPDATE_PLAN]);
      expect(body.tools.find((t: any) => t.function.name === "host_load")).toEqual(offered.get("host_load")!.tool);
      expect(body.tool_choice).toBe("auto");
    }
    // The playbook is read first (an audited call through the evidence), and its body is what the model reads.
    const first = server.requests[0].body.messages;
    expect(first[0].role).toBe("system");
    expect(first[0].content).toContain("Playbook: host_resource_diagnosis.");
    expect(first[0].content).toContain("Plan:\n1. check host_load\n2. read the app log");
    expect(first[0].content).toContain('Host tools run on edge_id "e1"');
    expect(first.at(-1)).toEqual({ role: "tool", tool_call_id: "call_read_skill", content: PLAYBOOK_BODY });
    // Guidance, not evidence (I4): the playbook read is no evidence item and no numbered step.
    expect(evidence.guidance().map((e) => `${e.tool} ${JSON.stringify(e.args)}`)).toEqual(['read_skill {"skill_name":"host_resource_diagnosis"}']);
    expect(evidence.items().map((e) => `${e.step} ${e.tool} ${JSON.stringify(e.args)}`)).toEqual(['1 host_load {"edge_id":"e1"}']);
    expect(events.map((e) => e.type)).toEqual(["guidance", "tool_call", "tool_result", "report"]);
    expect(events[0]).toMatchObject({ type: "guidance", tool: "read_skill", args: { skill_name: "host_resource_diagnosis" }, success: true });
    expect(events[1]).toMatchObject({ type: "tool_call", step: 1, tool: "host_load" });
    expect(events.at(-1)).toEqual({ type: "report", path: "model", markdown: "# Report\n\nLoad is high [1]." });
  });

  it("agent.tool_list on_demand: the tools the plan names in full, every other tool of the session in load_tools's catalogue", async () => {
    server.push({ content: "# Report\n\nnothing needed" });
    await run({ toolList: "on_demand" });
    const body = server.requests[0].body;
    const listed = offeredTools(body);
    expect(listed.full).toEqual(["host_load"]);
    expect(listed.catalogued.sort()).toEqual(["host_processes", "read_skill", "tail_file"]);
    expect(body.tools.map((t: any) => t.function.name)).toEqual(["host_load", LOAD_TOOLS, UPDATE_PLAN]);
    expect(body.messages[0].content).toContain(`Tools not loaded yet are listed in ${LOAD_TOOLS}`);
  });

  it("a replan yields a plan event and brings the tools the new plan names into the next request", async () => {
    server.push({ toolCalls: [{ name: UPDATE_PLAN, arguments: { steps: ["list the busiest with host_processes"], reason: "load is fine" } }] }, { content: "# Report\n\nok" });
    const { events } = await run({ toolList: "on_demand" });
    expect(events.find((e) => e.type === "plan")).toEqual({ type: "plan", source: "replan", steps: ["list the busiest with host_processes"], reason: "load is fine" });
    expect(offeredTools(server.requests[0].body).full).toEqual(["host_load"]);
    expect(offeredTools(server.requests[1].body).full.sort()).toEqual(["host_load", "host_processes"]);
  });

  it("a failing model: one last turn without tools is asked for the report, else the report is the evidence alone", async () => {
    server.push({ status: 500, error: { message: "down" } }, { status: 500, error: { message: "still down" } });
    const { events } = await run({ toolList: "full" });
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1].body).not.toHaveProperty("tools");
    const report = events.at(-1) as Extract<AgentEvent, { type: "report" }>;
    expect(report.markdown).toMatch(/^# Diagnosis report\n\nThe session stopped before a report: the model failed \(http_error\)\./);
    // The evidence-only report holds no guidance: nothing ran but the playbook read.
    expect(report.markdown).not.toContain("read_skill");
  });

  it("guidance the model asks for is audited and given whole but never counts against agent.max_steps nor becomes a step", async () => {
    server.push(
      { toolCalls: [{ name: "read_skill", arguments: { skill_name: "network_diagnosis" } }, { name: "host_load", arguments: { edge_id: "e1" } }] },
      { toolCalls: [{ name: "read_skill", arguments: { skill_name: "generic_oncall" } }, { name: "tail_file", arguments: { edge_id: "e1" } }] },
      { content: "# Report\n\nLoad [1], log [2]." },
    );
    const { events, evidence } = await run({ toolList: "full", maxSteps: 2 });
    // Two evidence calls fill a budget of 2; the two extra playbook reads did not use it up.
    expect(evidence.items().map((e) => `${e.step} ${e.tool}`)).toEqual(["1 host_load", "2 tail_file"]);
    expect(evidence.guidance().map((e) => (e.args as { skill_name: string }).skill_name)).toEqual(["host_resource_diagnosis", "network_diagnosis", "generic_oncall"]);
    expect(events.filter((e) => e.type === "tool_call").map((e) => (e as { step: number }).step)).toEqual([1, 2]);
    expect(events.filter((e) => e.type === "guidance")).toHaveLength(3);
    const fed = server.requests[1].body.messages.filter((m: any) => m.role === "tool").map((m: any) => m.content);
    expect(fed).toEqual([PLAYBOOK_BODY, PLAYBOOK_BODY, "host_load output"]);
    expect(events.at(-1)).toMatchObject({ type: "report", markdown: "# Report\n\nLoad [1], log [2]." });
  });
});
