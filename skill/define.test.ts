import { describe, expect, expectTypeOf, it } from "vitest";
import { defineSkill, type InferParams } from "./define.ts";
import { createRegistry } from "./registry.ts";
import type { SkillContext } from "./types.ts";

const tailFile = defineSkill({
  key: "tail_file",
  name: "Tail file",
  description: "Show the last lines of a log file. Use when you need recent log output.",
  class: "safe",
  params: {
    path: { type: "string", description: "File under an allowed root", required: true },
    lines: { type: "integer", description: "How many lines", default: 100, min: 1, max: 1000 },
    level: { type: "enum", description: "Minimum level", values: ["info", "warn", "error"] },
  },
  async execute(_ctx, params) {
    // Typing help: required and defaulted params are present, enum narrowed to its values.
    expectTypeOf(params.path).toEqualTypeOf<string>();
    expectTypeOf(params.lines).toEqualTypeOf<number>();
    expectTypeOf(params.level).toEqualTypeOf<"info" | "warn" | "error" | undefined>();
    // @ts-expect-error undeclared params do not exist
    void params.follow;
    return { path: params.path, lines: params.lines };
  },
});

describe("defineSkill", () => {
  it("returns the definition unchanged so the file's default export registers as is", async () => {
    const registry = createRegistry();
    const skill = registry.register(tailFile);
    expect(skill.meta.key).toBe("tail_file");
    const out = await skill.execute({} as SkillContext, { path: "/var/log/x", lines: 5 });
    expect(out).toEqual({ path: "/var/log/x", lines: 5 });
  });

  it("infers params types from the declaration", () => {
    type P = InferParams<{
      a: { type: "string_list"; description: ""; required: true };
      b: { type: "boolean"; description: "" };
      c: { type: "duration"; description: ""; default: "5m" };
    }>;
    expectTypeOf<P>().toEqualTypeOf<{ a: string[]; c: string } & { b?: boolean }>();
  });

  it("accepts an explicit params type for raw-schema skills", () => {
    const def = defineSkill<{ targets: { host: string }[] }>({
      key: "multi_probe",
      name: "Multi probe",
      description: "Probe several targets at once. Use when checking a whole tier.",
      class: "safe",
      rawSchema: '{"type":"object"}',
      execute: async (_ctx, p) => p.targets.map((t) => t.host),
    });
    expect(def.rawSchema).toBe('{"type":"object"}');
  });
});
