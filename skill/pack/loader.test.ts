import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterAll, describe, expect, test } from "vitest";
import { createRegistry, type SkillRegistry } from "../registry.ts";
import { runSkill } from "../run.ts";
import type { SkillScope } from "../types.ts";
import { validateParams } from "../validate.ts";
import { createPackSet, type PackSetOptions, type RescanReport } from "./loader.ts";
import { formatProblem, MANIFEST_FILE } from "./manifest.ts";

const root = realpathSync(mkdtempSync(path.join(tmpdir(), "ongrid-loader-")));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let seq = 0;
/** A fresh directory to hold pack directories. */
function packsDir(): string {
  const d = path.join(root, `packs-${++seq}`);
  mkdirSync(d);
  return d;
}

const skill = (key: string, extra: Record<string, unknown> = {}) => ({
  key,
  name: `Skill ${key}`,
  description: `Runs ${key}. Use it in the loader tests.`,
  class: "safe",
  executable: "run.sh",
  ...extra,
});

/** Writes `<dir>/<name>/` with skill.json (object or raw text) and an executable run.sh printing {"output": <output>}. */
function writePack(dir: string, name: string, manifest: unknown, output = JSON.stringify(name)): string {
  const p = path.join(dir, name);
  mkdirSync(p, { recursive: true });
  writeFileSync(path.join(p, "run.sh"), `#!/bin/sh\ncat > /dev/null\necho '{"output": ${output}}'\n`, { mode: 0o755 });
  writeFileSync(path.join(p, MANIFEST_FILE), typeof manifest === "string" ? manifest : JSON.stringify(manifest));
  return p;
}

function setup(over: Partial<PackSetOptions> & { dirs: string[] }, registry: SkillRegistry = createRegistry({ log: pino({ level: "silent" }) })) {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level: "debug" }, { write: (chunk: string) => void lines.push(JSON.parse(chunk)) });
  const changes: RescanReport[] = [];
  const set = createPackSet({ scope: "host" as SkillScope, registry, log, onChange: (r) => changes.push(r), ...over });
  return { set, registry, lines, changes };
}

const problemSummary = (r: RescanReport) => r.problems.map(({ file, field, rule }) => ({ file, field, rule }));

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`condition not met within ${ms} ms`);
}

describe("createPackSet: rescan", () => {
  test("nothing is loaded before the first rescan; an empty directory loads nothing and changes nothing", () => {
    const dir = packsDir();
    writePack(dir, "disk", skill("disk_usage"));
    const { set, registry, changes } = setup({ dirs: [dir] });
    expect(registry.size).toBe(0);
    expect(set.specs().size).toBe(0);
    const empty = setup({ dirs: [packsDir()] });
    expect(empty.set.rescan()).toEqual({ added: [], changed: [], removed: [], loaded: [], problems: [] });
    expect(empty.changes).toEqual([]);
    expect(changes).toEqual([]);
  });

  test("adds every pack's skills to the registry as host skills that run end to end", async () => {
    const dir = packsDir();
    writePack(dir, "net", { skills: [skill("net_ping"), skill("net_trace", { class: "mutating", category: "network" })] }, '"net"');
    writePack(dir, "disk", skill("disk_usage", { params: { mount: { type: "string", description: "Mount.", default: "/" } } }), '"disk"');
    const { set, registry, changes } = setup({ dirs: [dir] });
    const r = set.rescan();
    // Packs are read in directory-name order, skills in manifest order.
    expect(r).toEqual({ added: ["disk_usage", "net_ping", "net_trace"], changed: [], removed: [], loaded: ["disk_usage", "net_ping", "net_trace"], problems: [] });
    expect(changes).toEqual([r]);
    expect(registry.list().map((s) => s.meta.key)).toEqual(["disk_usage", "net_ping", "net_trace"]);
    expect(registry.get("net_trace")!.meta).toMatchObject({ class: "mutating", scope: "host", category: "network", description: skill("net_trace").description });
    expect(registry.get("net_ping")!.meta).toMatchObject({ class: "safe", category: "pack" });
    expect([...set.specs().keys()].sort()).toEqual(["disk_usage", "net_ping", "net_trace"]);
    expect(set.specs().get("disk_usage")!.dir).toBe(path.join(dir, "disk"));

    const disk = registry.getOrThrow("disk_usage");
    const env = await runSkill(disk, validateParams(disk, {}), { callId: "c1", timeoutMs: 10_000, outputCapBytes: 10_000, log: pino({ level: "silent" }) });
    expect(env).toMatchObject({ success: true, output: "disk" });
  });

  test("a rescan with nothing changed reports nothing and keeps the registered skill objects", () => {
    const dir = packsDir();
    writePack(dir, "disk", skill("disk_usage"));
    const { set, registry, changes } = setup({ dirs: [dir] });
    set.rescan();
    const before = registry.get("disk_usage");
    const again = set.rescan();
    expect(again).toEqual({ added: [], changed: [], removed: [], loaded: ["disk_usage"], problems: [] });
    expect(registry.get("disk_usage")).toBe(before);
    expect(changes).toHaveLength(1);
  });

  test("an edited description is listed in changed and the registry shows it; untouched skills stay as they were", async () => {
    const dir = packsDir();
    const disk = writePack(dir, "disk", skill("disk_usage"));
    writePack(dir, "net", skill("net_ping"));
    const { set, registry, changes } = setup({ dirs: [dir] });
    set.rescan();
    const oldDisk = registry.get("disk_usage");
    const oldNet = registry.get("net_ping");
    writeFileSync(path.join(disk, MANIFEST_FILE), JSON.stringify(skill("disk_usage", { description: "Reports disk usage per mount. Use when a disk fills up." })));
    const r = set.rescan();
    expect(r).toEqual({ added: [], changed: ["disk_usage"], removed: [], loaded: ["disk_usage", "net_ping"], problems: [] });
    expect(registry.get("disk_usage")!.meta.description).toBe("Reports disk usage per mount. Use when a disk fills up.");
    expect(registry.get("disk_usage")).not.toBe(oldDisk);
    expect(registry.get("net_ping")).toBe(oldNet);
    expect(set.specs().get("disk_usage")!.description).toBe("Reports disk usage per mount. Use when a disk fills up.");
    expect(changes.map((c) => c.changed)).toEqual([[], ["disk_usage"]]);
  });

  test("a changed timeout or params takes effect for the next call", async () => {
    const dir = packsDir();
    const p = writePack(dir, "disk", skill("disk_usage"));
    const { set, registry } = setup({ dirs: [dir] });
    set.rescan();
    expect(() => validateParams(registry.getOrThrow("disk_usage"), { mount: "/" })).toThrow(/mount/);
    writeFileSync(path.join(p, MANIFEST_FILE), JSON.stringify(skill("disk_usage", { timeout: "5s", params: { mount: { type: "string", description: "Mount." } } })));
    expect(set.rescan().changed).toEqual(["disk_usage"]);
    expect(validateParams(registry.getOrThrow("disk_usage"), { mount: "/" })).toEqual({ mount: "/" });
    expect(set.specs().get("disk_usage")!.timeoutMs).toBe(5_000);
  });

  test("after a change, calls run with the new manifest (args here)", async () => {
    const dir = packsDir();
    const p = path.join(dir, "echo");
    mkdirSync(p);
    writeFileSync(path.join(p, "run.sh"), '#!/bin/sh\ncat > /dev/null\nprintf \'{"output": "%s"}\' "$*"\n', { mode: 0o755 });
    writeFileSync(path.join(p, MANIFEST_FILE), JSON.stringify(skill("echo_args", { args: ["one"] })));
    const { set, registry } = setup({ dirs: [dir] });
    set.rescan();
    const run = async () => (await runSkill(registry.getOrThrow("echo_args"), {}, { callId: "c", timeoutMs: 10_000, outputCapBytes: 10_000, log: pino({ level: "silent" }) })).output;
    expect(await run()).toBe("one");
    writeFileSync(path.join(p, MANIFEST_FILE), JSON.stringify(skill("echo_args", { args: ["two", "three"] })));
    expect(set.rescan().changed).toEqual(["echo_args"]);
    expect(await run()).toBe("two three");
  });

  test("a deleted pack directory is listed in removed and its skills leave the registry", () => {
    const dir = packsDir();
    const disk = writePack(dir, "disk", { skills: [skill("disk_usage"), skill("disk_inodes")] });
    writePack(dir, "net", skill("net_ping"));
    const { set, registry, changes } = setup({ dirs: [dir] });
    set.rescan();
    rmSync(disk, { recursive: true });
    const r = set.rescan();
    expect(r).toEqual({ added: [], changed: [], removed: ["disk_usage", "disk_inodes"], loaded: ["net_ping"], problems: [] });
    expect(registry.has("disk_usage")).toBe(false);
    expect(registry.has("disk_inodes")).toBe(false);
    expect(registry.has("net_ping")).toBe(true);
    expect(set.specs().has("disk_usage")).toBe(false);
    expect(changes).toHaveLength(2);
    expect(changes[1].removed).toEqual(["disk_usage", "disk_inodes"]);
  });

  test("a skill dropped from a multi-skill manifest is removed, the others stay", () => {
    const dir = packsDir();
    const disk = writePack(dir, "disk", { skills: [skill("disk_usage"), skill("disk_inodes")] });
    const { set, registry } = setup({ dirs: [dir] });
    set.rescan();
    const usage = registry.get("disk_usage");
    writeFileSync(path.join(disk, MANIFEST_FILE), JSON.stringify({ skills: [skill("disk_usage")] }));
    expect(set.rescan()).toMatchObject({ added: [], changed: [], removed: ["disk_inodes"], loaded: ["disk_usage"] });
    expect(registry.get("disk_usage")).toBe(usage);
    expect(registry.has("disk_inodes")).toBe(false);
  });

  test("a renamed key is one removed and one added", () => {
    const dir = packsDir();
    const disk = writePack(dir, "disk", skill("disk_usage"));
    const { set, registry } = setup({ dirs: [dir] });
    set.rescan();
    writeFileSync(path.join(disk, MANIFEST_FILE), JSON.stringify(skill("disk_space")));
    expect(set.rescan()).toMatchObject({ added: ["disk_space"], changed: [], removed: ["disk_usage"], loaded: ["disk_space"] });
    expect(registry.has("disk_usage")).toBe(false);
    expect(registry.has("disk_space")).toBe(true);
  });

  test("a broken pack is reported and skipped; the packs around it still load", () => {
    const dir = packsDir();
    writePack(dir, "a-disk", skill("disk_usage"));
    const broken = writePack(dir, "b-broken", '{"key": "broken_one", ');
    const badClass = writePack(dir, "c-badclass", skill("bad_class", { class: "root" }));
    writePack(dir, "d-net", skill("net_ping"));
    const { set, registry, lines } = setup({ dirs: [dir] });
    const r = set.rescan();
    expect(r.loaded).toEqual(["disk_usage", "net_ping"]);
    expect(r.added).toEqual(["disk_usage", "net_ping"]);
    expect(problemSummary(r)).toEqual([
      { file: path.join(broken, MANIFEST_FILE), field: "", rule: "json" },
      { file: path.join(badClass, MANIFEST_FILE), field: "class", rule: "enum" },
    ]);
    expect(registry.has("broken_one")).toBe(false);
    expect(registry.has("bad_class")).toBe(false);
    // Each refusal is logged as a warning in the one-line form.
    const warnings = lines.filter((l) => l.level === 40).map((l) => l.msg);
    expect(warnings).toEqual(r.problems.map((p) => `skill pack refused: ${formatProblem(p)}`));
  });

  test("a loaded pack whose manifest breaks is removed and reported", () => {
    const dir = packsDir();
    const disk = writePack(dir, "disk", skill("disk_usage"));
    const { set, registry } = setup({ dirs: [dir] });
    set.rescan();
    writeFileSync(path.join(disk, MANIFEST_FILE), JSON.stringify(skill("disk_usage", { timeout: "2h" })));
    const r = set.rescan();
    expect(r).toMatchObject({ added: [], changed: [], removed: ["disk_usage"], loaded: [] });
    expect(problemSummary(r)).toEqual([{ file: path.join(disk, MANIFEST_FILE), field: "timeout", rule: "range" }]);
    expect(registry.has("disk_usage")).toBe(false);
  });

  test("duplicate keys across packs: the first by directory name wins, the second is refused naming both files", () => {
    const dir = packsDir();
    // Created in the opposite order of their names: the order of creation must not matter.
    const second = writePack(dir, "zz-other", skill("disk_usage", { description: "The second declaration. Use it never." }));
    const first = writePack(dir, "aa-disk", skill("disk_usage", { description: "The first declaration. Use it always." }));
    const { set, registry } = setup({ dirs: [dir] });
    const r = set.rescan();
    expect(r.loaded).toEqual(["disk_usage"]);
    expect(registry.get("disk_usage")!.meta.description).toBe("The first declaration. Use it always.");
    expect(set.specs().get("disk_usage")!.file).toBe(path.join(first, MANIFEST_FILE));
    expect(r.problems).toEqual([
      { file: path.join(second, MANIFEST_FILE), field: "key", rule: "unique", message: `"disk_usage" is already declared by ${path.join(first, MANIFEST_FILE)}` },
    ]);
    // Stable: a second rescan changes nothing and reports the same problem.
    const again = set.rescan();
    expect(again).toMatchObject({ added: [], changed: [], removed: [] });
    expect(again.problems).toEqual(r.problems);
    // Once the winner is gone, the other declaration takes over.
    rmSync(first, { recursive: true });
    const after = set.rescan();
    expect(after).toMatchObject({ changed: ["disk_usage"], removed: [], problems: [] });
    expect(registry.get("disk_usage")!.meta.description).toBe("The second declaration. Use it never.");
  });

  test("a duplicate or builtin key inside a multi-skill pack is reported at its entry", () => {
    const dir = packsDir();
    writePack(dir, "a-disk", skill("disk_usage"));
    const multi = writePack(dir, "b-multi", { skills: [skill("host_info"), skill("disk_usage"), skill("disk_inodes")] });
    const registry = createRegistry({ log: pino({ level: "silent" }) });
    registry.register({ key: "host_info", name: "Host info", description: "Builtin host info. Use it first.", class: "safe", execute: async () => "builtin" });
    const { set } = setup({ dirs: [dir] }, registry);
    const r = set.rescan();
    expect(r.loaded).toEqual(["disk_inodes", "disk_usage"]);
    expect(problemSummary(r)).toEqual([
      { file: path.join(multi, MANIFEST_FILE), field: "skills[0].key", rule: "unique" },
      { file: path.join(multi, MANIFEST_FILE), field: "skills[1].key", rule: "unique" },
    ]);
    expect(r.problems[1].message).toBe(`"disk_usage" is already declared by ${path.join(dir, "a-disk", MANIFEST_FILE)}`);
  });

  test("with many declarations of one key, the winner and the refusals follow the directory names, not the listing order", () => {
    const dir = packsDir();
    const names = Array.from({ length: 20 }, (_, i) => `pack-${String(i).padStart(2, "0")}`);
    for (const name of [...names].reverse()) writePack(dir, name, skill("disk_usage", { description: `Declared by ${name}. Use it.` }));
    const { set, registry } = setup({ dirs: [dir] });
    const r = set.rescan();
    expect(registry.get("disk_usage")!.meta.description).toBe("Declared by pack-00. Use it.");
    expect(r.problems.map((p) => p.file)).toEqual(names.slice(1).map((n) => path.join(dir, n, MANIFEST_FILE)));
    for (const p of r.problems) expect(p.message).toBe(`"disk_usage" is already declared by ${path.join(dir, "pack-00", MANIFEST_FILE)}`);
  });

  test("duplicate keys across configured directories: the earlier directory wins", () => {
    const one = packsDir();
    const two = packsDir();
    writePack(two, "aa", skill("disk_usage", { description: "From the second dir. Use it never." }));
    writePack(one, "zz", skill("disk_usage", { description: "From the first dir. Use it always." }));
    const { set, registry } = setup({ dirs: [one, two] });
    const r = set.rescan();
    expect(registry.get("disk_usage")!.meta.description).toBe("From the first dir. Use it always.");
    expect(problemSummary(r)).toEqual([{ file: path.join(two, "aa", MANIFEST_FILE), field: "key", rule: "unique" }]);
  });

  test("a pack key clashing with a builtin is refused and the builtin is untouched, also after the pack goes away", async () => {
    const dir = packsDir();
    const clash = writePack(dir, "hostinfo", skill("host_info"));
    writePack(dir, "other", skill("host_uptime"));
    const registry = createRegistry({ log: pino({ level: "silent" }) });
    const builtin = registry.register({ key: "host_info", name: "Host info", description: "Builtin host info. Use it first.", class: "safe", execute: async () => "builtin" });
    const { set, changes } = setup({ dirs: [dir] }, registry);
    const r = set.rescan();
    expect(r.added).toEqual(["host_uptime"]);
    expect(r.loaded).toEqual(["host_uptime"]);
    expect(r.problems).toEqual([{ file: path.join(clash, MANIFEST_FILE), field: "key", rule: "unique", message: '"host_info" is a builtin skill of this edge' }]);
    expect(registry.get("host_info")).toBe(builtin);
    expect(set.specs().has("host_info")).toBe(false);
    const env = await runSkill(registry.getOrThrow("host_info"), {}, { callId: "c", timeoutMs: 5_000, outputCapBytes: 1_000, log: pino({ level: "silent" }) });
    expect(env.output).toBe("builtin");

    // Still refused on the next rescan, and editing or deleting the pack never touches the builtin.
    writeFileSync(path.join(clash, MANIFEST_FILE), JSON.stringify(skill("host_info", { description: "Edited. Use it." })));
    expect(problemSummary(set.rescan())).toEqual([{ file: path.join(clash, MANIFEST_FILE), field: "key", rule: "unique" }]);
    expect(registry.get("host_info")).toBe(builtin);
    rmSync(clash, { recursive: true });
    expect(set.rescan()).toEqual({ added: [], changed: [], removed: [], loaded: ["host_uptime"], problems: [] });
    expect(registry.get("host_info")).toBe(builtin);
    expect(changes).toHaveLength(1);
  });

  test("on the manager a builtin clash names the manager", () => {
    const dir = packsDir();
    writePack(dir, "search", skill("web_search"));
    const registry = createRegistry({ log: pino({ level: "silent" }) });
    registry.register({ key: "web_search", name: "Web search", description: "Searches. Use it to search.", class: "safe", scope: "manager", execute: async () => null });
    const { set } = setup({ dirs: [dir], scope: "manager" }, registry);
    expect(set.rescan().problems[0].message).toBe('"web_search" is a builtin skill of this manager');
  });

  test("a pack of the other scope is refused by the pack set's scope", () => {
    const dir = packsDir();
    const p = writePack(dir, "mgr", skill("mgr_only", { scope: "manager" }));
    const { set, registry } = setup({ dirs: [dir] });
    const r = set.rescan();
    expect(problemSummary(r)).toEqual([{ file: path.join(p, MANIFEST_FILE), field: "scope", rule: "scope" }]);
    expect(registry.has("mgr_only")).toBe(false);
    const mgr = setup({ dirs: [dir], scope: "manager" });
    expect(mgr.set.rescan().loaded).toEqual(["mgr_only"]);
    expect(mgr.registry.get("mgr_only")!.meta.scope).toBe("manager");
  });

  test("a missing configured directory is reported and the other directories still load", () => {
    const missing = path.join(root, `no-such-dir-${++seq}`);
    const dir = packsDir();
    writePack(dir, "disk", skill("disk_usage"));
    const { set } = setup({ dirs: [missing, dir] });
    const r = set.rescan();
    expect(r.problems).toEqual([{ file: missing, field: "", rule: "exists", message: "pack directory does not exist" }]);
    expect(r.loaded).toEqual(["disk_usage"]);
  });

  test("a configured directory that is itself a pack is loaded as one", () => {
    const dir = packsDir();
    const p = writePack(dir, "solo", skill("solo_pack"));
    const { set } = setup({ dirs: [p] });
    expect(set.rescan().loaded).toEqual(["solo_pack"]);
  });

  test("hidden directories, plain files and directories without skill.json are ignored", () => {
    const dir = packsDir();
    writePack(dir, ".staging", skill("staged_pack"));
    writePack(dir, "real", skill("real_pack"));
    mkdirSync(path.join(dir, "empty"));
    writeFileSync(path.join(dir, "README.md"), "# packs\n");
    const { set } = setup({ dirs: [dir] });
    expect(set.rescan()).toEqual({ added: ["real_pack"], changed: [], removed: [], loaded: ["real_pack"], problems: [] });
  });

  test("a dynamic-risk pack gets its classifier wired into the registry", () => {
    const dir = packsDir();
    writePack(dir, "shell", skill("shell_run", { class: "dangerous", risk_classifier: "shell_command:command", params: { command: { type: "string", description: "Cmd.", required: true } } }));
    const { set, registry } = setup({ dirs: [dir] });
    set.rescan();
    const s = registry.getOrThrow("shell_run");
    expect(s.meta.riskClassifier).toBe("shell_command:command");
    expect(s.riskForArgs).toBeTypeOf("function");
    expect(s.riskForArgs!({ command: "uptime" })).toBe("safe");
    expect(s.riskForArgs!({ command: "rm -rf /" })).toBe("dangerous");
  });

  test("onChange fires only when something was added, changed or removed", () => {
    const dir = packsDir();
    const { set, changes } = setup({ dirs: [dir] });
    set.rescan();
    expect(changes).toHaveLength(0);
    // Only a problem: nothing changed.
    const broken = writePack(dir, "broken", "not json");
    expect(set.rescan().problems).toHaveLength(1);
    expect(changes).toHaveLength(0);
    const disk = writePack(dir, "disk", skill("disk_usage"));
    const added = set.rescan();
    expect(changes).toEqual([added]);
    set.rescan();
    expect(changes).toHaveLength(1);
    writeFileSync(path.join(disk, MANIFEST_FILE), JSON.stringify(skill("disk_usage", { name: "Disk usage v2" })));
    const changed = set.rescan();
    expect(changes).toEqual([added, changed]);
    rmSync(broken, { recursive: true });
    set.rescan();
    expect(changes).toHaveLength(2);
    rmSync(disk, { recursive: true });
    const removed = set.rescan();
    expect(changes).toEqual([added, changed, removed]);
    expect(removed.removed).toEqual(["disk_usage"]);
  });
});

describe("createPackSet: watch", () => {
  test("picks up a new pack, an edit and a removal without an explicit rescan", async () => {
    const dir = packsDir();
    const { set, registry, changes } = setup({ dirs: [dir] });
    set.rescan();
    const stop = set.watch(50);
    try {
      // Installed the way an operator would: mkdir, then write the files one by one.
      const p = writePack(dir, "disk", skill("disk_usage"));
      await until(() => registry.has("disk_usage"));
      expect(changes.at(-1)!.added).toEqual(["disk_usage"]);

      writeFileSync(path.join(p, MANIFEST_FILE), JSON.stringify(skill("disk_usage", { description: "Edited while watched. Use it." })));
      await until(() => registry.get("disk_usage")?.meta.description === "Edited while watched. Use it.");

      rmSync(p, { recursive: true });
      await until(() => !registry.has("disk_usage"));
      expect(changes.at(-1)!.removed).toEqual(["disk_usage"]);
    } finally {
      stop();
    }
  });

  test("picks up files written into a new pack directory well after the directory appeared", async () => {
    const dir = packsDir();
    const { set, registry } = setup({ dirs: [dir] });
    set.rescan();
    const stop = set.watch(50);
    try {
      const p = path.join(dir, "slow");
      mkdirSync(p);
      // Longer than the debounce: the rescan for the mkdir has run and found no skill.json yet.
      await new Promise((r) => setTimeout(r, 400));
      writeFileSync(path.join(p, "run.sh"), "#!/bin/sh\necho '{\"output\": 1}'\n", { mode: 0o755 });
      await new Promise((r) => setTimeout(r, 400));
      writeFileSync(path.join(p, MANIFEST_FILE), JSON.stringify(skill("slow_pack")));
      await until(() => registry.has("slow_pack"));
      // And edits deep inside it are seen too.
      await new Promise((r) => setTimeout(r, 200));
      writeFileSync(path.join(p, MANIFEST_FILE), JSON.stringify(skill("slow_pack", { description: "Edited later. Use it." })));
      await until(() => registry.get("slow_pack")?.meta.description === "Edited later. Use it.");
    } finally {
      stop();
    }
  });

  test("a watched change that changes no skill does not fire onChange", async () => {
    const dir = packsDir();
    const disk = writePack(dir, "disk", skill("disk_usage"));
    // A broken pack makes every rescan log a warning: that is how the test sees a rescan happen.
    writePack(dir, "broken", "{");
    const { set, changes, lines } = setup({ dirs: [dir] });
    set.rescan();
    expect(changes).toHaveLength(1);
    const warnings = () => lines.filter((l) => l.level === 40).length;
    const before = warnings();
    const stop = set.watch(50);
    try {
      writeFileSync(path.join(disk, "README.md"), "# disk\n");
      writeFileSync(path.join(disk, "run.sh"), "#!/bin/sh\necho '{\"output\": 2}'\n", { mode: 0o755 });
      await until(() => warnings() > before);
      await new Promise((r) => setTimeout(r, 200));
      expect(changes).toHaveLength(1);
    } finally {
      stop();
    }
  });

  test("picks up a pack moved in atomically from a hidden staging directory", async () => {
    const dir = packsDir();
    const { set, registry } = setup({ dirs: [dir] });
    set.rescan();
    const stop = set.watch(50);
    try {
      writePack(dir, ".incoming", skill("net_ping"));
      await new Promise((r) => setTimeout(r, 300));
      expect(registry.has("net_ping")).toBe(false);
      renameSync(path.join(dir, ".incoming"), path.join(dir, "net"));
      await until(() => registry.has("net_ping"));
    } finally {
      stop();
    }
  });

  test("after stop() no more rescans happen", async () => {
    const dir = packsDir();
    const { set, registry } = setup({ dirs: [dir] });
    set.rescan();
    const stop = set.watch(20);
    stop();
    writePack(dir, "disk", skill("disk_usage"));
    await new Promise((r) => setTimeout(r, 500));
    expect(registry.has("disk_usage")).toBe(false);
    expect(set.rescan().added).toEqual(["disk_usage"]);
  });

  test("a missing directory cannot be watched but does not break watching the others", async () => {
    const missing = path.join(root, `not-there-${++seq}`);
    const dir = packsDir();
    const { set, registry, lines } = setup({ dirs: [missing, dir] });
    set.rescan();
    const stop = set.watch(50);
    try {
      expect(lines.some((l) => l.level === 40 && l.dir === missing && /cannot watch/.test(String(l.msg)))).toBe(true);
      writePack(dir, "disk", skill("disk_usage"));
      await until(() => registry.has("disk_usage"));
    } finally {
      stop();
    }
  });
});
