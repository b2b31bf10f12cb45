/** The Planner (J2): what the model is sent (the router's playbook by name, description and allowed tools; never its body) and the fallback plan. */
import { pino } from "pino";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startScriptedModel, type ScriptedModel } from "../../../test/support/openai-server.ts";
import { describeSteps, type Playbook } from "../../playbooks/parse.ts";
import { createPlaybookRegistry } from "../../playbooks/registry.ts";
import { createModelClient, type ModelClient, type ModelSettings } from "../llm.ts";
import { PLAN_SCHEMA, runPlanner } from "./planner.ts";

const log = pino({ level: "silent" });
/** Planted in the playbook's body: the planner's request must never hold it. */
const BODY_MARKER = "PLAYBOOK-BODY-MARKER-5b1f0c9e";
const INCIDENT = "web-3 is slow, load is 40";

let playbook: Playbook;
let others: string[];
let server: ScriptedModel;

beforeAll(() => {
  const builtin = createPlaybookRegistry({ dirs: [], disabled: [], platform: "linux", log });
  const real = builtin.get("host_resource_diagnosis")!;
  playbook = { ...real, body: `${real.body}\n\n## Notes\n${BODY_MARKER}: read only by the executor.\n` };
  others = [...builtin.current().playbooks.keys()].filter((n) => n !== playbook.name);
});
beforeEach(async () => {
  server = await startScriptedModel();
});
afterEach(async () => {
  await server.close();
});

function modelClient(over: Partial<ModelSettings> = {}): ModelClient {
  const c = createModelClient({ base_url: server.url, api_key: "", api_key_file: "", model: "test-planner", timeout: "5s", max_retries: 0, structured_output: "json_schema", ...over }, log);
  if (!c) throw new Error("expected a model client");
  return c;
}

describe("runPlanner", () => {
  for (const mode of ["json_schema", "json_object"] as const) {
    it(`sends the incident and the router's playbook by name, description and allowed tools, never its body (${mode})`, async () => {
      server.push({ json: { reason: "load first, then the processes", plan: ["check host_load", "list the busiest with host_processes"] } });
      const ev = await runPlanner({ model: modelClient({ structured_output: mode }), playbook, text: INCIDENT });
      expect(ev).toEqual({ type: "plan", source: "planner", steps: ["check host_load", "list the busiest with host_processes"], reason: "host_resource_diagnosis: load first, then the processes" });

      expect(server.requests).toHaveLength(1);
      const body = server.requests[0].body;
      const sent = JSON.stringify(body);
      // The body (planted marker and its real sections alike) is the executor's to read, with read_skill.
      expect(sent).not.toContain(BODY_MARKER);
      expect(sent).not.toContain("## Recommended tool order");
      const text = body.messages.map((m: { content: string }) => m.content).join("\n");
      expect(text).toContain(`Playbook: ${playbook.name}: ${playbook.description}`);
      expect(text).toContain(`Tools it allows: ${playbook.allowedTools.join(", ")}`);
      expect(text).toContain(INCIDENT);
      // Only the router's playbook: no menu of the others, nothing to pick.
      for (const name of others) expect(sent).not.toContain(name);
      expect(sent).not.toContain("selected_skill");
      expect(body).not.toHaveProperty("tools");
      expect(body).not.toHaveProperty("tool_choice");
    });
  }

  it("asks for the plan and its reason only", async () => {
    server.push({ json: { reason: "r", plan: ["a step"] } });
    await runPlanner({ model: modelClient(), playbook, text: INCIDENT });
    const format = server.requests[0].body.response_format;
    expect(format.json_schema.name).toBe("diagnosis_plan");
    expect(format.json_schema.schema).toEqual(PLAN_SCHEMA);
    expect(Object.keys(PLAN_SCHEMA.properties)).toEqual(["reason", "plan"]);
  });

  it("an answer that still picks a playbook does not match the schema: the playbook's fallback steps are the plan", async () => {
    server.push({ json: { selected_skill: "container_diagnosis", reason: "pods?", plan: ["look at pods"] } });
    const ev = await runPlanner({ model: modelClient(), playbook, text: INCIDENT });
    expect(ev).toEqual({ type: "plan", source: "fallback_plan", steps: describeSteps(playbook.fallbackSteps), reason: "planner failed (schema_invalid): host_resource_diagnosis's fallback steps are the plan" });
  });

  it("a failing endpoint: the playbook's fallback steps are the plan, and the reason names the failure", async () => {
    server.push({ status: 500, error: { message: "planner down" } });
    const ev = await runPlanner({ model: modelClient(), playbook, text: INCIDENT });
    expect(ev.source).toBe("fallback_plan");
    expect(ev.reason).toBe("planner failed (http_error): host_resource_diagnosis's fallback steps are the plan");
    expect(ev.steps).toEqual(describeSteps(playbook.fallbackSteps));
    expect(ev.steps[0]).toMatch(/^host_load /);
  });
});
