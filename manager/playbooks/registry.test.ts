import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { EDGE_BUILTINS } from "../../edge/builtin/index.ts";
import { buildSkill } from "../../skill/registry.ts";
import type { Skill } from "../../skill/types.ts";
import { createManagerRegistry } from "../skills/builtin/index.ts";
import { createReadSkill } from "../skills/builtin/read-skill.ts";
import { createToolCatalog } from "./catalog.ts";
import { topologyToolDefinitions } from "../skills/base/topology/index.ts";
import { BODY_SECTIONS, formatPlaybookProblem } from "./parse.ts";
import { BUILTIN_PLAYBOOK_DIR, createPlaybookRegistry, GENERIC_PLAYBOOK, type PlaybookRegistryOptions } from "./registry.ts";

const log = pino({ level: "silent" });
const BODY = BODY_SECTIONS.map((s) => `## ${s}\ntext\n`).join("");
let root: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "ongrid-pb-"));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** Writes <root>/<dir>/<name>/SKILL.md and returns its path. */
function put(dir: string, name: string, fm: string, body = BODY): string {
  mkdirSync(join(root, dir, name), { recursive: true });
  const file = join(root, dir, name, "SKILL.md");
  writeFileSync(file, `---\n${fm}\n---\n${body}`);
  return file;
}
const generic = (dir = "a") => put(dir, "generic_oncall", "name: generic_oncall\ndescription: anything");
const open = (o: Partial<PlaybookRegistryOptions> = {}) => createPlaybookRegistry({ builtinDir: null, dirs: [join(root, "a")], disabled: [], platform: "linux", log, ...o });

describe("playbook registry", () => {
  test("loads every playbook directory; a bad file is reported with its path and the others still load", () => {
    generic();
    put("a", "net", "name: net\ndescription: network");
    const bad = put("a", "broken", "name: [unclosed\ndescription: x");
    const noName = put("a", "noname", "description: x");
    const r = open();
    expect([...r.current().playbooks.keys()].sort()).toEqual(["generic_oncall", "net"]);
    const lines = r.current().problems.map(formatPlaybookProblem);
    expect(lines).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(`^${bad}: frontmatter is not valid YAML.*\\(rule: yaml\\)$`)), `${noName}: name: is required (rule: required)`]));
  });

  test("a directory that is itself a playbook works; a missing directory is reported", () => {
    generic();
    put("single", ".", "name: solo\ndescription: one");
    const r = open({ dirs: [join(root, "a"), join(root, "single"), join(root, "nope")] });
    expect(r.get("solo")?.name).toBe("solo");
    expect(r.current().problems.map((p) => `${p.file}|${p.rule}`)).toContain(`${join(root, "nope")}|exists`);
  });

  test("duplicate names: the first directory's playbook stays, the later file is refused naming both", () => {
    const first = generic();
    put("a", "net", "name: net\ndescription: first");
    const second = put("b", "net2", "name: net\ndescription: second");
    const dupGeneric = put("b", "g", "name: generic_oncall\ndescription: again");
    const r = open({ dirs: [join(root, "a"), join(root, "b")] });
    expect(r.get("net")!.description).toBe("first");
    expect(r.get(GENERIC_PLAYBOOK)!.file).toBe(first);
    const unique = r.current().problems.filter((p) => p.rule === "unique");
    expect(unique.map((p) => p.file).sort()).toEqual([second, dupGeneric].sort());
    expect(unique.find((p) => p.file === second)!.message).toContain(join(root, "a", "net", "SKILL.md"));
  });

  test("platforms: a playbook for another platform is skipped with the reason; win32 counts as windows", () => {
    generic();
    put("a", "win", "name: win\ndescription: w\nplatforms: [windows]");
    put("a", "lin", "name: lin\ndescription: l\nplatforms: [linux, darwin]");
    const linux = open();
    expect(linux.get("win")).toBeUndefined();
    expect(linux.get("lin")).toBeDefined();
    expect(linux.current().skipped).toEqual([{ name: "win", file: join(root, "a", "win", "SKILL.md"), reason: "platforms [windows] do not include linux" }]);
    const windows = open({ platform: "win32" });
    expect(windows.get("win")).toBeDefined();
    expect(windows.get("lin")).toBeUndefined();
  });

  test("disabled playbooks are skipped", () => {
    generic();
    put("a", "net", "name: net\ndescription: n");
    const r = open({ disabled: ["net"] });
    expect(r.get("net")).toBeUndefined();
    expect(r.current().skipped.map((s) => `${s.name}: ${s.reason}`)).toEqual(["net: disabled (playbooks.disabled)"]);
  });

  test("refuses to start without generic_oncall: missing, disabled or broken, each says why", () => {
    put("a", "net", "name: net\ndescription: n");
    expect(() => open()).toThrow(/no playbook "generic_oncall" is loaded: it is the router's fallback/);
    generic();
    expect(() => open({ disabled: [GENERIC_PLAYBOOK] })).toThrow(/\(disabled \(playbooks\.disabled\)\)/);
    put("a", "generic_oncall", "name: generic_oncall");
    let err: any;
    try {
      open();
    } catch (e) {
      err = e;
    }
    expect(err.code).toBe("failed_precondition");
    expect(err.message).toContain("description: is required (rule: required)");
    expect(err.hint).toContain("playbooks.disabled");
  });

  test("reload reports added, changed and removed, and bumps the generation", () => {
    generic();
    put("a", "net", "name: net\ndescription: n");
    put("a", "old", "name: old\ndescription: o");
    const r = open();
    const g1 = r.current().generation;
    put("a", "net", "name: net\ndescription: changed");
    rmSync(join(root, "a", "old"), { recursive: true });
    put("a", "fresh", "name: fresh\ndescription: f");
    const rep = r.reload();
    expect(rep).toMatchObject({ added: ["fresh"], changed: ["net"], removed: ["old"], loaded: ["fresh", "generic_oncall", "net"], generation: g1 + 1 });
    expect(r.get("net")!.description).toBe("changed");
    // Nothing changed: nothing reported.
    expect(r.reload()).toMatchObject({ added: [], changed: [], removed: [] });
  });

  test("a reload that would lose generic_oncall is refused and the previous set stays", () => {
    generic();
    put("a", "net", "name: net\ndescription: n");
    const r = open();
    const before = r.current();
    rmSync(join(root, "a", "generic_oncall"), { recursive: true });
    put("a", "net", "name: net\ndescription: changed");
    expect(() => r.reload()).toThrow(/generic_oncall/);
    expect(r.current()).toBe(before);
    expect(r.get("net")!.description).toBe("n");
  });

  test("tool checks: unknown tools, non-safe fallback steps and fallback args a tool would refuse are warnings", () => {
    generic();
    const file = put(
      "a",
      "net",
      `name: net
description: n
allowed_tools: [probe_tcp, no_such_tool]
fallback_steps:
  - tool: probe_tcp
    args: { host: "{{host}}", port: "{{port}}" }
  - tool: probe_tcp
    args: { host: "{{host}}", port: 70000 }
  - tool: ghost_tool
  - tool: restart_service
    args: { unit: "{{unit}}" }`,
    );
    const catalog = new Map<string, Skill | null>(EDGE_BUILTINS.map((d) => [d.key, buildSkill(d)]));
    const r = open({ tools: () => catalog });
    expect(r.get("net")).toBeDefined();
    const warnings = r.current().problems.filter((p) => p.file === file).map((p) => `${p.field}|${p.rule}|${p.severity}`);
    expect(warnings.sort()).toEqual(
      ["allowed_tools[1]|known_tool|warning", "fallback_steps[1].args|params|warning", "fallback_steps[2].tool|known_tool|warning", "fallback_steps[3].tool|fallback_safe|warning"].sort(),
    );
    expect(r.current().problems.find((p) => p.field === "fallback_steps[1].args")!.message).toContain('param "port": must be <= 65535');
  });
});

describe("the built-in playbooks", () => {
  const registry = createManagerRegistry(log);
  const builtin = createPlaybookRegistry({
    dirs: [],
    disabled: [],
    log,
    tools: createToolCatalog({ registry, edgeSkills: () => [], hostPackDirs: [] }),
  });
  registry.register(createReadSkill(builtin));
  // The topology tools the playbooks list (K5): their definitions only; nothing here runs them.
  for (const def of topologyToolDefinitions()) registry.register(def);
  const set = builtin.reload();

  test("are the five the issue asks for, from manager/playbooks, and load without a single problem", () => {
    expect(set.loaded).toEqual(["container_diagnosis", "generic_oncall", "host_resource_diagnosis", "network_diagnosis", "service_diagnosis"]);
    expect(set.problems.map(formatPlaybookProblem)).toEqual([]);
    for (const p of builtin.current().playbooks.values()) {
      expect(p.source).toBe("builtin");
      expect(p.file.startsWith(BUILTIN_PLAYBOOK_DIR)).toBe(true);
    }
  });

  test("each has fallback steps of safe tools that exist, with triggers in English and Chinese", () => {
    const catalog = createToolCatalog({ registry, edgeSkills: () => [], hostPackDirs: [] })();
    for (const p of builtin.current().playbooks.values()) {
      expect(p.fallbackSteps.length, p.name).toBeGreaterThanOrEqual(3);
      for (const s of p.fallbackSteps) expect(catalog.get(s.tool)?.meta.class, `${p.name}: ${s.tool}`).toBe("safe");
      if (p.name === GENERIC_PLAYBOOK) continue;
      expect(p.triggers.some((t) => /[\u4e00-\u9fff]/.test(t)), p.name).toBe(true);
      expect(p.triggers.some((t) => /^[\x20-\x7e]+$/.test(t)), p.name).toBe(true);
    }
  });

  test("generic_oncall is the general read-only set", () => {
    const catalog = createToolCatalog({ registry, edgeSkills: () => [], hostPackDirs: [] })();
    const g = builtin.get(GENERIC_PLAYBOOK)!;
    expect(g.allowedTools.length).toBeGreaterThan(5);
    for (const t of g.allowedTools) expect(catalog.get(t)?.meta.class, t).toBe("safe");
    expect(g.riskLevel).toBe("low");
  });
});
