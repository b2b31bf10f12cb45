/** The executor's tool list (agent.tool_list): full definitions, or a catalogue in load_tools with definitions on demand. */
import { describe, expect, it } from "vitest";
import { defineSkill } from "../../../skill/define.ts";
import { buildSkill } from "../../../skill/registry.ts";
import type { SkillDefinition } from "../../../skill/types.ts";
import { loadTools } from "../session/executor.ts";
import { catalogueLine, executorTools, LOAD_TOOLS, toFunctionTool, toolsNamedIn, type BridgedTool } from "./tools.ts";

function tool(key: string, description: string, o: { class?: "safe" | "mutating"; scope?: "host" | "manager" } = {}): BridgedTool {
  const skill = buildSkill(
    defineSkill({
      key,
      name: key,
      description,
      class: o.class ?? "safe",
      scope: o.scope ?? "host",
      params: { path: { type: "string", description: "A path to read, with a long description so definitions weigh what real ones do.".repeat(3) } },
      async execute() {
        return {};
      },
    }) as SkillDefinition,
  );
  return { tool: toFunctionTool(skill, ["e1"]), skill, edgeIds: ["e1"], behavior: "allow" };
}

const offered = new Map(
  [
    tool("host_load", "Load averages and CPU count of the host. Use first when a host is slow."),
    tool("tail_file", "Last lines of a file under the allowed roots! Use for application logs."),
    tool("restart_service", "Restart a systemd unit. Mutating.", { class: "mutating" }),
    tool("read_skill", "Read a playbook", { scope: "manager" }),
  ].map((t) => [t.skill.meta.key, t] as const),
);

describe("catalogueLine", () => {
  it("is the key, the description's first sentence, the class and the scope", () => {
    expect(catalogueLine(offered.get("host_load")!)).toBe("host_load: Load averages and CPU count of the host. [safe, host]");
    expect(catalogueLine(offered.get("tail_file")!)).toBe("tail_file: Last lines of a file under the allowed roots! [safe, host]");
    expect(catalogueLine(offered.get("restart_service")!)).toBe("restart_service: Restart a systemd unit. [mutating, host]");
    // No sentence end: the whole description.
    expect(catalogueLine(offered.get("read_skill")!)).toBe("read_skill: Read a playbook [safe, manager]");
  });

  it("cuts a first sentence longer than 100 characters, and folds whitespace", () => {
    const line = catalogueLine(tool("long_one", `A ${"very ".repeat(40)}long\nsentence. Second.`));
    expect(line).toMatch(/^long_one: A very very .*… \[safe, host\]$/);
    expect(line.length).toBeLessThan("long_one: ".length + 100 + " [safe, host]".length + 1);
    expect(catalogueLine(tool("folded", "Two\n  lines here. Next."))).toBe("folded: Two lines here. [safe, host]");
  });
});

describe("executorTools", () => {
  it("full: every offered tool's definition, in order, and no load_tools", () => {
    const tools = executorTools(offered, "full", new Set(["host_load"]));
    expect(tools.map((t) => t.function.name)).toEqual(["host_load", "tail_file", "restart_service", "read_skill"]);
  });

  it("on_demand: the loaded tools in full, then load_tools cataloguing the rest (names as its enum, a line each)", () => {
    const tools = executorTools(offered, "on_demand", new Set(["tail_file"]));
    expect(tools.map((t) => t.function.name)).toEqual(["tail_file", LOAD_TOOLS]);
    expect(tools[0]).toEqual(offered.get("tail_file")!.tool);
    const load = tools[1]!.function;
    expect((load.parameters as any).properties.names.items.enum).toEqual(["host_load", "restart_service", "read_skill"]);
    for (const k of ["host_load", "restart_service", "read_skill"]) expect(load.description).toContain(`\n- ${catalogueLine(offered.get(k)!)}`);
    expect(load.description).not.toContain("tail_file");
    // Smaller than the definitions it stands for (how much, for the real tools: npm run bench:agent).
    expect(JSON.stringify(tools).length).toBeLessThan(JSON.stringify(executorTools(offered, "full", new Set())).length);
  });

  it("on_demand with everything loaded: no load_tools", () => {
    expect(executorTools(offered, "on_demand", new Set(offered.keys())).map((t) => t.function.name)).toEqual([...offered.keys()]);
  });
});

describe("toolsNamedIn", () => {
  it("finds offered keys named as whole words", () => {
    expect([...toolsNamedIn("1. check host_load\n2. tail_file /var/log/app.log, then read_skill", offered)].sort()).toEqual(["host_load", "read_skill", "tail_file"]);
    expect([...toolsNamedIn("host_loads and xtail_file and host-load", offered)]).toEqual([]);
    expect([...toolsNamedIn("run unknown_tool", offered)]).toEqual([]);
  });
});

describe("loadTools", () => {
  it("loads offered names, says which were loaded already, and names those the session may not use", () => {
    const loaded = new Set<string>(["host_load"]);
    expect(loadTools(JSON.stringify({ names: ["tail_file", "host_load", "nope", "tail_file"] }), offered, loaded)).toEqual({
      success: true,
      output: { loaded: ["tail_file"], already_loaded: ["host_load"], not_offered: ["nope"] },
    });
    expect([...loaded].sort()).toEqual(["host_load", "tail_file"]);
  });

  it("refuses a call loading nothing it may use, and malformed arguments, naming the rule; nothing is loaded", () => {
    const loaded = new Set<string>();
    expect(loadTools(JSON.stringify({ names: ["nope", "x".repeat(200)] }), offered, loaded)).toEqual({
      success: false,
      error: { code: "not_offered", message: `not tools of this session: nope, ${"x".repeat(64)}; load names from load_tools's list` },
    });
    const rule = { success: false, error: { code: "invalid_argument", message: "names: 1 to 10 tool names from load_tools's list (rule: load_tools)" } };
    for (const args of ["{", "null", "{}", '{"names":"tail_file"}', '{"names":[]}', '{"names":[1]}', JSON.stringify({ names: Array(11).fill("tail_file") })]) {
      expect(loadTools(args, offered, loaded), args).toEqual(rule);
    }
    expect(loaded.size).toBe(0);
  });
});
