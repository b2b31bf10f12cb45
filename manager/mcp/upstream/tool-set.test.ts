import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createRegistry } from "../../../skill/registry.ts";
import { createToolSet } from "./tool-set.ts";
import type { UpstreamTool } from "./tool-skill.ts";

const log = pino({ level: "silent" });
const tool = (name: string, extra: Partial<UpstreamTool> = {}): UpstreamTool => ({ name, description: `The ${name} tool.`, inputSchema: { type: "object", properties: {} }, ...extra });

function setUp(classes: Record<string, "safe" | "mutating" | "dangerous"> = {}) {
  const registry = createRegistry({ log });
  registry.register({ key: "mcp_up_taken", name: "taken", description: "A skill that owns this key already.", class: "safe", scope: "manager", execute: async () => "mine" });
  const set = createToolSet({ spec: { name: "up", classes: new Map(Object.entries(classes)), trustAnnotations: false }, registry, log, call: async (t) => `called ${t}` });
  return { registry, set };
}

describe("the tool set of one upstream", () => {
  it("adds, re-registers a changed tool, removes a gone one, and leaves other skills alone", () => {
    const { registry, set } = setUp();
    expect(set.sync([tool("list"), tool("getItem")])).toMatchObject({ added: ["mcp_up_list", "mcp_up_get_item"], changed: [], removed: [], problems: [] });
    const before = registry.getOrThrow("mcp_up_list");
    const again = set.sync([tool("list", { description: "Lists things, now differently." }), tool("getItem")]);
    expect(again).toMatchObject({ added: [], changed: ["mcp_up_list"], removed: [] });
    expect(registry.getOrThrow("mcp_up_list")).not.toBe(before);
    expect(registry.getOrThrow("mcp_up_list").meta.description).toMatch(/^Lists things, now differently\./);
    expect(set.sync([tool("getItem")])).toMatchObject({ added: [], changed: [], removed: ["mcp_up_list"], loaded: ["mcp_up_get_item"] });
    expect(registry.has("mcp_up_list")).toBe(false);
    expect(set.clear()).toEqual(["mcp_up_get_item"]);
    expect(registry.list().map((s) => s.meta.key)).toEqual(["mcp_up_taken"]);
  });

  it("a new class from the config's override or the listing re-registers the tool with it", () => {
    const { registry, set } = setUp({ danger: "dangerous" });
    set.sync([tool("danger"), tool("plain", { annotations: { readOnlyHint: true } })]);
    expect(registry.getOrThrow("mcp_up_danger").meta.class).toBe("dangerous");
    expect(registry.getOrThrow("mcp_up_plain").meta.class).toBe("mutating");
    expect(set.entries()).toEqual(expect.arrayContaining([{ key: "mcp_up_danger", tool: "danger", cls: "dangerous" }]));
  });

  it("reports and skips collisions, another skill's key and schemas that do not compile; registers the rest", () => {
    const { registry, set } = setUp();
    const r = set.sync([tool("a-b"), tool("a_b"), tool("taken"), tool("broken", { inputSchema: { type: "object", properties: { x: { type: "string", pattern: "((" } } } }), tool("unknownKeyword", { inputSchema: { type: "object", "x-order": 1 } }), tool("fine")]);
    expect(r.loaded).toEqual(["mcp_up_fine"]);
    expect(r.problems).toEqual([
      'tools "a-b", "a_b": skipped: they all map to the key "mcp_up_a_b"',
      'tool "taken": skipped: the key "mcp_up_taken" is already another skill\'s',
      expect.stringMatching(/^tool "broken": skipped: skill "mcp_up_broken": invalid JSON Schema: /),
      expect.stringMatching(/^tool "unknownKeyword": skipped: skill "mcp_up_unknown_keyword": invalid JSON Schema: strict mode: unknown keyword: "x-order"/),
    ]);
    expect(registry.getOrThrow("mcp_up_taken").meta.description).toBe("A skill that owns this key already.");
  });
});
