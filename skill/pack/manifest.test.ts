import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { buildSkill } from "../registry.ts";
import { riskFromClassifier } from "../risk-classifier.ts";
import { DEFAULT_PACK_OUTPUT_CAP, DEFAULT_PACK_TIMEOUT_MS, formatProblem, MANIFEST_FILE, readManifest, toMetadata, type ManifestProblem } from "./manifest.ts";

const root = realpathSync(mkdtempSync(path.join(tmpdir(), "ongrid-manifest-")));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let seq = 0;
/** A fresh pack directory with an executable run.sh and the given skill.json (an object is serialised, a string written as is). */
function pack(manifest: unknown, opts: { script?: boolean } = {}): { dir: string; file: string } {
  const dir = path.join(root, `pack-${++seq}`);
  mkdirSync(dir);
  if (opts.script !== false) writeFileSync(path.join(dir, "run.sh"), "#!/bin/sh\necho '{\"output\": 1}'\n", { mode: 0o755 });
  const file = path.join(dir, MANIFEST_FILE);
  if (manifest !== undefined) writeFileSync(file, typeof manifest === "string" ? manifest : JSON.stringify(manifest, null, 2));
  return { dir, file };
}

const BASE = {
  key: "disk_usage",
  name: "Disk usage",
  description: "Reports how full each mounted filesystem is. Use when a disk fills up.",
  class: "safe",
  executable: "run.sh",
} as const;

/** Reads a manifest in its own pack dir; returns the problems without the file (asserted once separately). */
function read(manifest: unknown, scope: "host" | "manager" = "host") {
  const { dir, file } = pack(manifest);
  const r = readManifest(dir, scope);
  for (const p of r.problems) expect(p.file).toBe(file);
  return { ...r, dir, file, found: r.problems.map(({ field, rule }) => ({ field, rule })) };
}

/** The only problem, which must name exactly this field and rule. */
function only(manifest: unknown, field: string, rule: string, scope: "host" | "manager" = "host"): ManifestProblem {
  const r = read(manifest, scope);
  expect(r.found).toEqual([{ field, rule }]);
  expect(r.skills).toEqual([]);
  return r.problems[0];
}

function without<K extends keyof typeof BASE>(k: K): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...BASE };
  delete copy[k];
  return copy;
}

describe("readManifest: a valid manifest", () => {
  test("loads a minimal skill with the documented defaults and resolved paths", () => {
    const r = read(BASE);
    expect(r.problems).toEqual([]);
    expect(r.skills).toHaveLength(1);
    const s = r.skills[0];
    expect(s).toMatchObject({
      key: "disk_usage",
      name: BASE.name,
      description: BASE.description,
      class: "safe",
      scope: "host",
      category: "pack",
      resultPreview: "",
      dir: r.dir,
      file: r.file,
      entry: "",
      executable: path.join(r.dir, "run.sh"),
      args: [],
      env: [],
      timeoutMs: DEFAULT_PACK_TIMEOUT_MS,
      outputCapBytes: DEFAULT_PACK_OUTPUT_CAP,
    });
    expect(DEFAULT_PACK_TIMEOUT_MS).toBe(30_000);
    expect(DEFAULT_PACK_OUTPUT_CAP).toBe(1_048_576);
    expect(s.params).toBeUndefined();
    expect(s.rawSchema).toBeUndefined();
  });

  test("takes every optional field, with the manager scope when read by the manager", () => {
    const r = read(
      {
        ...BASE,
        $schema: "https://ongrid.dev/schema/skill.json",
        class: "mutating",
        scope: "manager",
        category: "storage",
        params: {
          mount: { type: "string", description: "Mount point.", pattern: "^/" },
          limit: { type: "integer", description: "Rows.", default: 10, min: 1, max: 100 },
        },
        result_preview: '{"mounts": []}',
        risk_classifier: "shell_command:mount",
        lint_waivers: { "description-when": "fixed by the spec" },
        args: ["--json", "--all"],
        timeout: "1m30s",
        env: ["HTTPS_PROXY", "KUBECONFIG"],
        output_cap_bytes: 4096,
      },
      "manager",
    );
    expect(r.problems).toEqual([]);
    expect(r.skills[0]).toMatchObject({
      class: "mutating",
      scope: "manager",
      category: "storage",
      resultPreview: '{"mounts": []}',
      riskClassifier: "shell_command:mount",
      lintWaivers: { "description-when": "fixed by the spec" },
      args: ["--json", "--all"],
      timeoutMs: 90_000,
      env: ["HTTPS_PROXY", "KUBECONFIG"],
      outputCapBytes: 4096,
    });
    expect(Object.keys(r.skills[0].params!)).toEqual(["mount", "limit"]);
    // What the registry gets registers cleanly.
    expect(buildSkill({ ...toMetadata(r.skills[0]), execute: async () => null }).meta.scope).toBe("manager");
  });

  test("accepts a raw_schema instead of params and keeps it as JSON text", () => {
    const raw = { type: "object", properties: { n: { type: "integer" } }, additionalProperties: false };
    const r = read({ ...BASE, raw_schema: raw });
    expect(r.problems).toEqual([]);
    expect(JSON.parse(r.skills[0].rawSchema!)).toEqual(raw);
  });

  test("accepts timeouts up to exactly 1h", () => {
    expect(read({ ...BASE, timeout: "1h" }).skills[0].timeoutMs).toBe(3_600_000);
    expect(read({ ...BASE, timeout: "250ms" }).skills[0].timeoutMs).toBe(250);
    expect(read({ ...BASE, timeout: "2.5s" }).skills[0].timeoutMs).toBe(2500);
  });

  test("the fingerprint is stable for the same entry and changes with any manifest field, not with the script's content", () => {
    const { dir, file } = pack(BASE);
    const first = readManifest(dir, "host").skills[0].fingerprint;
    expect(readManifest(dir, "host").skills[0].fingerprint).toBe(first);
    // The script is run afresh on every call: editing it is not a change of the skill.
    writeFileSync(path.join(dir, "run.sh"), "#!/bin/sh\necho '{\"output\": 2}'\n", { mode: 0o755 });
    expect(readManifest(dir, "host").skills[0].fingerprint).toBe(first);
    writeFileSync(file, JSON.stringify({ ...BASE, description: `${BASE.description} Now faster.` }));
    const second = readManifest(dir, "host").skills[0].fingerprint;
    expect(second).not.toBe(first);
    writeFileSync(file, JSON.stringify({ ...BASE, description: `${BASE.description} Now faster.`, timeout: "10s" }));
    expect(readManifest(dir, "host").skills[0].fingerprint).not.toBe(second);
  });
});

describe("readManifest: schema problems name the field and the rule", () => {
  test.each(["key", "name", "description", "class", "executable"] as const)("a missing %s is reported as required", (field) => {
    const p = only(without(field), field, "required");
    expect(p.message).toBe("is required");
    expect(formatProblem(p)).toMatch(new RegExp(`skill\\.json: ${field}: is required \\(rule: required\\)$`));
  });

  test("class has no default for packs: only class missing is still refused", () => {
    const r = read(without("class"));
    expect(r.skills).toEqual([]);
  });

  test("all missing fields are reported at once, not just the first", () => {
    const r = read({ description: "only this" });
    expect(r.found).toEqual(
      expect.arrayContaining([
        { field: "key", rule: "required" },
        { field: "name", rule: "required" },
        { field: "class", rule: "required" },
        { field: "executable", rule: "required" },
      ]),
    );
    expect(r.found).toHaveLength(4);
  });

  test.each([
    ["name", 42, "name", "type", /must be string/],
    ["description", ["a"], "description", "type", /must be string/],
    ["key", 7, "key", "type", /must be string/],
    ["executable", true, "executable", "type", /must be string/],
    ["timeout", 30, "timeout", "type", /must be string/],
    ["args", "--all", "args", "type", /must be array/],
    ["args", ["--all", 1], "args[1]", "type", /must be string/],
    ["env", "HOME", "env", "type", /must be array/],
    ["params", ["a"], "params", "type", /must be object/],
    ["raw_schema", "{}", "raw_schema", "type", /must be object/],
    ["lint_waivers", { rule: 1 }, "lint_waivers.rule", "type", /must be string/],
    ["output_cap_bytes", "1MB", "output_cap_bytes", "type", /must be integer/],
  ])("%s = %j is a type error at %s", (name, value, field, rule, message) => {
    const r = read({ ...BASE, [name]: value });
    expect(r.skills).toEqual([]);
    expect(r.found).toEqual([{ field, rule }]);
    expect(r.problems[0].message).toMatch(message);
  });

  test("a whole document that is not an object is refused for the file as a whole", () => {
    for (const text of ["[]", '"disk_usage"', "42", "null"]) {
      const r = read(text);
      expect(r.found).toEqual([{ field: "", rule: "type" }]);
      expect(r.problems[0].message).toMatch(/must be a JSON object/);
    }
  });

  test("an unknown class is an enum problem that lists the allowed values", () => {
    const p = only({ ...BASE, class: "admin" }, "class", "enum");
    expect(p.message).toBe('must be one of "safe", "mutating", "dangerous"');
  });

  test("an unknown scope is an enum problem that lists host and manager", () => {
    const p = only({ ...BASE, scope: "cloud" }, "scope", "enum");
    expect(p.message).toBe('must be one of "host", "manager"');
  });

  test("an unknown param type lists the param types", () => {
    const p = only({ ...BASE, params: { path: { type: "strin", description: "A path." } } }, "params.path.type", "enum");
    expect(p.message).toMatch(/must be one of "string", "integer", "number", "boolean", "enum", "duration", "string_list"/);
  });

  test.each([
    [{ ...BASE, timeout_ms: 5000 }, "timeout_ms"],
    [{ ...BASE, Executable: "run.sh" }, "Executable"],
    [{ ...BASE, params: { path: { type: "string", description: "A path.", regex: "^/" } } }, "params.path.regex"],
  ])("an unknown field is reported by its name (%#)", (manifest, field) => {
    const p = only(manifest, field, "additionalProperties");
    expect(p.message).toMatch(/is not a known field/);
  });

  test("an unknown field next to skills is reported on the pack envelope", () => {
    const p = only({ version: 2, skills: [BASE] }, "version", "additionalProperties");
    expect(p.message).toMatch(/is not a known field/);
  });

  test("a param without description is a required problem on the param", () => {
    only({ ...BASE, params: { path: { type: "string" } } }, "params.path.description", "required");
  });

  test("a param name that is not lower_snake is reported on that name, not on params", () => {
    const p = only({ ...BASE, params: { Path: { type: "string", description: "A path." } } }, "params.Path", "propertyNames");
    expect(p.message).toMatch(/lower_snake/);
  });

  test("a param name that is too long is reported as too long, on that name", () => {
    const long = "p".repeat(65);
    const p = only({ ...BASE, params: { [long]: { type: "string", description: "A path." } } }, `params.${long}`, "propertyNames");
    expect(p.message).toMatch(/more than 64 characters/);
  });

  test.each(["Disk_usage", "disk-usage", "disk usage", "disk__usage", "disk_", "_disk", "1disk", "disk.usage", ""])("key %j is refused by its pattern", (key) => {
    const p = only({ ...BASE, key }, "key", "pattern");
    expect(p.message).toMatch(/must match pattern/);
  });

  test("a key longer than 64 characters is refused", () => {
    only({ ...BASE, key: `a${"b".repeat(64)}` }, "key", "maxLength");
  });

  test("an empty name, description or executable is refused by minLength", () => {
    only({ ...BASE, name: "" }, "name", "minLength");
    only({ ...BASE, description: "" }, "description", "minLength");
    only({ ...BASE, executable: "" }, "executable", "minLength");
  });

  test("env names must be variable names and unique", () => {
    only({ ...BASE, env: ["HOME", "MY-VAR"] }, "env[1]", "pattern");
    only({ ...BASE, env: ["HOME", "HOME"] }, "env", "uniqueItems");
  });

  test("env cannot ask for the agent's own ONGRID_* variables (its token among them)", () => {
    only({ ...BASE, env: ["HOME", "ONGRID_EDGE_TOKEN"] }, "env[1]", "pattern");
  });

  test("output_cap_bytes must be an integer between 256 bytes and 64 MiB", () => {
    only({ ...BASE, output_cap_bytes: 100 }, "output_cap_bytes", "minimum");
    only({ ...BASE, output_cap_bytes: 67_108_865 }, "output_cap_bytes", "maximum");
    expect(read({ ...BASE, output_cap_bytes: 256 }).skills[0].outputCapBytes).toBe(256);
  });

  test("several problems of one skill are all reported", () => {
    const r = read({ ...BASE, class: "root", timeout: "soon", extra: 1 });
    expect(r.skills).toEqual([]);
    expect(r.found).toEqual(
      expect.arrayContaining([
        { field: "class", rule: "enum" },
        { field: "timeout", rule: "pattern" },
        { field: "extra", rule: "additionalProperties" },
      ]),
    );
    expect(r.found).toHaveLength(3);
  });
});

describe("readManifest: checks beyond the schema", () => {
  test("params and raw_schema together are refused as exclusive", () => {
    const p = only({ ...BASE, params: { n: { type: "integer", description: "N." } }, raw_schema: { type: "object" } }, "raw_schema", "exclusive");
    expect(p.message).toBe("params and raw_schema cannot both be given");
  });

  test('timeout "5 minutes" does not match the duration pattern', () => {
    const p = only({ ...BASE, timeout: "5 minutes" }, "timeout", "pattern");
    expect(p.message).toMatch(/must match pattern/);
  });

  test('timeout "0s" is out of range', () => {
    const p = only({ ...BASE, timeout: "0s" }, "timeout", "range");
    expect(p.message).toBe("is 0s; must be more than 0 and at most 1h");
  });

  test('timeout "2h" (and 1h plus 1ms) is over the 1h limit', () => {
    expect(only({ ...BASE, timeout: "2h" }, "timeout", "range").message).toMatch(/is 2h; must be more than 0 and at most 1h/);
    only({ ...BASE, timeout: "1h1ms" }, "timeout", "range");
  });

  test("a timeout whose units are out of order passes the schema but not the duration parser", () => {
    const p = only({ ...BASE, timeout: "30s1m" }, "timeout", "duration");
    expect(p.message).toMatch(/invalid duration "30s1m"/);
  });

  test("an unknown risk_classifier names the known ones", () => {
    const p = only({ ...BASE, risk_classifier: "sql_query:statement" }, "risk_classifier", "known");
    expect(p.message).toBe('risk_classifier "sql_query:statement" is not one of shell_command:<param>[:<cwd param>], param_class:<param>:<value>=<class>,…');
  });

  test("param_class: a call's class by one param's value; values not listed, and non-strings, are dangerous", () => {
    const r = read({ ...BASE, class: "dangerous", params: { action: { type: "enum", description: "What to do.", required: true, values: ["restart", "scale", "delete", "drain"] } }, risk_classifier: "param_class:action:restart=mutating,scale=mutating,delete=dangerous,drain=dangerous" });
    expect(r.problems).toEqual([]);
    const risk = riskFromClassifier(r.skills[0]!.riskClassifier!, "disk_usage")!;
    expect(["restart", "scale", "delete", "drain", "other", "RESTART"].map((action) => risk({ action }))).toEqual(["mutating", "mutating", "dangerous", "dangerous", "dangerous", "dangerous"]);
    expect(risk({ action: ["restart"] })).toBe("dangerous");
    expect(risk({})).toBe("dangerous");
  });

  test("param_class tables that are not value=class pairs are refused, naming the entry", () => {
    expect(only({ ...BASE, risk_classifier: "param_class:action:restart=Mutating;scale" }, "risk_classifier", "pattern").field).toBe("risk_classifier");
    expect(only({ ...BASE, risk_classifier: "param_class:action:restart=mutating,restart=safe" }, "risk_classifier", "known").message).toMatch(/"restart" is listed twice/);
    expect(only({ ...BASE, risk_classifier: "param_class:action:restart=unsafe" }, "risk_classifier", "known").message).toMatch(/class "unsafe" for "restart" is not one of safe, mutating, dangerous/);
    expect(only({ ...BASE, risk_classifier: "param_class:action" }, "risk_classifier", "known").message).toMatch(/needs a param and a table of values/);
  });

  test("a risk_classifier without a param fails the pattern", () => {
    only({ ...BASE, risk_classifier: "shell_command" }, "risk_classifier", "pattern");
  });

  test("an invalid regular expression in a param pattern is caught by the registry's check", () => {
    const p = only({ ...BASE, params: { path: { type: "string", description: "A path.", pattern: "([a-z]" } } }, "params", "schema");
    expect(p.message).toMatch(/param "path": pattern "\(\[a-z\]" is not a valid regular expression/);
    // The "skill \"key\": " prefix of the registry's message is dropped: the problem already names the file.
    expect(p.message).not.toMatch(/^skill "/);
  });

  test("other param declaration mistakes found by buildSkill are schema problems on params", () => {
    const p = only({ ...BASE, params: { n: { type: "integer", description: "N.", required: true, default: 3 } } }, "params", "schema");
    expect(p.message).toMatch(/a required param cannot have a default/);
    const q = only({ ...BASE, params: { n: { type: "string", description: "N.", values: ["a"] } } }, "params", "schema");
    expect(q.message).toMatch(/param "n"/);
  });

  test("a raw_schema that is not an object schema, or uses unknown keywords, is a schema problem on raw_schema", () => {
    expect(only({ ...BASE, raw_schema: { type: "string" } }, "raw_schema", "schema").message).toMatch(/must have "type": "object"/);
    expect(only({ ...BASE, raw_schema: { type: "object", colour: "red" } }, "raw_schema", "schema").message).toMatch(/unknown keyword: "colour"/);
  });

  test("a scope naming the other side is refused with the side that loads it", () => {
    expect(only({ ...BASE, scope: "manager" }, "scope", "scope", "host").message).toBe('is "manager", but this edge loads packs as host skills');
    expect(only({ ...BASE, scope: "host" }, "scope", "scope", "manager").message).toBe('is "host", but this manager loads packs as manager skills');
    expect(read({ ...BASE, scope: "host" }, "host").skills).toHaveLength(1);
  });
});

describe("readManifest: the executable", () => {
  test("an absolute path is refused", () => {
    const p = only({ ...BASE, executable: "/bin/sh" }, "executable", "inside_pack");
    expect(p.message).toMatch(/"\/bin\/sh" is absolute; give a path relative to the pack directory/);
  });

  test("a missing file is refused", () => {
    const p = only({ ...BASE, executable: "bin/collect.sh" }, "executable", "exists");
    expect(p.message).toMatch(/"bin\/collect\.sh" does not exist in the pack directory \(ENOENT\)/);
  });

  test("a path leaving the pack directory with .. is refused even when the target is executable", () => {
    const outside = path.join(root, `outside-${++seq}.sh`);
    writeFileSync(outside, "#!/bin/sh\n", { mode: 0o755 });
    const p = only({ ...BASE, executable: `../${path.basename(outside)}` }, "executable", "inside_pack");
    expect(p.message).toMatch(/outside the pack directory/);
    expect(p.message).toContain(outside);
  });

  test("a symlink pointing outside the pack directory is refused", () => {
    const outside = path.join(root, `target-${++seq}.sh`);
    writeFileSync(outside, "#!/bin/sh\n", { mode: 0o755 });
    const { dir } = pack(undefined);
    symlinkSync(outside, path.join(dir, "run-link.sh"));
    writeFileSync(path.join(dir, MANIFEST_FILE), JSON.stringify({ ...BASE, executable: "run-link.sh" }));
    const r = readManifest(dir, "host");
    expect(r.skills).toEqual([]);
    expect(r.problems.map(({ field, rule }) => ({ field, rule }))).toEqual([{ field: "executable", rule: "inside_pack" }]);
    expect(r.problems[0].message).toMatch(/"run-link\.sh" resolves to .*target-\d+\.sh, outside the pack directory/);
  });

  test("a symlinked directory leading outside is refused too", () => {
    const outsideDir = path.join(root, `tools-${++seq}`);
    mkdirSync(outsideDir);
    writeFileSync(path.join(outsideDir, "tool.sh"), "#!/bin/sh\n", { mode: 0o755 });
    const { dir } = pack(undefined);
    symlinkSync(outsideDir, path.join(dir, "bin"));
    writeFileSync(path.join(dir, MANIFEST_FILE), JSON.stringify({ ...BASE, executable: "bin/tool.sh" }));
    const r = readManifest(dir, "host");
    expect(r.problems.map(({ field, rule }) => ({ field, rule }))).toEqual([{ field: "executable", rule: "inside_pack" }]);
  });

  test("a symlink to a file inside the pack is followed and accepted", () => {
    const { dir } = pack(undefined);
    mkdirSync(path.join(dir, "libexec"));
    writeFileSync(path.join(dir, "libexec", "real.sh"), "#!/bin/sh\n", { mode: 0o755 });
    symlinkSync("libexec/real.sh", path.join(dir, "entry"));
    writeFileSync(path.join(dir, MANIFEST_FILE), JSON.stringify({ ...BASE, executable: "entry" }));
    const r = readManifest(dir, "host");
    expect(r.problems).toEqual([]);
    expect(r.skills[0].executable).toBe(path.join(dir, "libexec", "real.sh"));
  });

  test("a path with .. that stays inside the pack is accepted", () => {
    const r = read({ ...BASE, executable: "sub/../run.sh" });
    expect(r.problems).toEqual([]);
    expect(r.skills[0].executable).toBe(path.join(r.dir, "run.sh"));
  });

  test("a directory is refused as not a regular file", () => {
    const { dir } = pack(undefined);
    mkdirSync(path.join(dir, "bin"));
    writeFileSync(path.join(dir, MANIFEST_FILE), JSON.stringify({ ...BASE, executable: "bin" }));
    const r = readManifest(dir, "host");
    expect(r.problems.map(({ field, rule, message }) => ({ field, rule, message }))).toEqual([{ field: "executable", rule: "file", message: '"bin" is not a regular file' }]);
  });

  test("a file without the execute bit (chmod 644) is refused with the fix", () => {
    const { dir } = pack(BASE);
    chmodSync(path.join(dir, "run.sh"), 0o644);
    const r = readManifest(dir, "host");
    expect(r.skills).toEqual([]);
    expect(r.problems.map(({ field, rule, message }) => ({ field, rule, message }))).toEqual([
      { field: "executable", rule: "executable", message: '"run.sh" is not executable (chmod +x it)' },
    ]);
  });

  test("executable problems are reported together with other problems of the same skill", () => {
    const r = read({ ...BASE, executable: "/usr/bin/env", timeout: "0s", scope: "manager" });
    expect(r.found).toEqual(
      expect.arrayContaining([
        { field: "executable", rule: "inside_pack" },
        { field: "timeout", rule: "range" },
        { field: "scope", rule: "scope" },
      ]),
    );
    expect(r.found).toHaveLength(3);
  });
});

describe("readManifest: the file", () => {
  test("invalid JSON is refused for the file as a whole, with the parser's reason", () => {
    const r = read('{"key": "disk_usage", "name": ');
    expect(r.found).toEqual([{ field: "", rule: "json" }]);
    expect(r.problems[0].message).toMatch(/^is not valid JSON: /);
    expect(formatProblem(r.problems[0])).toMatch(/skill\.json: is not valid JSON: .* \(rule: json\)$/);
  });

  test("an empty file is invalid JSON", () => {
    expect(read("").found).toEqual([{ field: "", rule: "json" }]);
  });

  test("a missing skill.json is reported as not readable", () => {
    const { dir, file } = pack(undefined);
    const r = readManifest(dir, "host");
    expect(r.skills).toEqual([]);
    expect(r.problems).toEqual([{ file, field: "", rule: "readable", message: "cannot be read: ENOENT" }]);
  });

  test("a skill.json that is a directory is refused", () => {
    const { dir, file } = pack(undefined);
    mkdirSync(file);
    expect(readManifest(dir, "host").problems).toEqual([{ file, field: "", rule: "file", message: "is not a regular file" }]);
  });

  test("a skill.json over 1 MiB is refused before parsing", () => {
    const r = read(`{"key": "disk_usage", "description": "${"x".repeat(1_048_600)}"}`);
    expect(r.found).toEqual([{ field: "", rule: "maxBytes" }]);
    expect(r.problems[0].message).toMatch(/at most 1048576/);
  });
});

describe('readManifest: a {"skills": [...]} pack', () => {
  const skill = (key: string, extra: Record<string, unknown> = {}) => ({ ...BASE, key, name: key, ...extra });

  test("loads every entry in order", () => {
    const r = read({ skills: [skill("disk_usage"), skill("disk_inodes"), skill("disk_smart")] });
    expect(r.problems).toEqual([]);
    expect(r.skills.map((s) => s.key)).toEqual(["disk_usage", "disk_inodes", "disk_smart"]);
    expect(r.skills.map((s) => s.entry)).toEqual(["skills[0]", "skills[1]", "skills[2]"]);
    expect(new Set(r.skills.map((s) => s.file))).toEqual(new Set([r.file]));
  });

  test("a broken entry is reported by its index and the others still load", () => {
    const broken = skill("disk_inodes") as Record<string, unknown>;
    delete broken.class;
    const r = read({ skills: [skill("disk_usage"), broken, skill("disk_smart", { timeout: "2h" }), skill("disk_temp")] });
    expect(r.skills.map((s) => s.key)).toEqual(["disk_usage", "disk_temp"]);
    expect(r.found).toEqual([
      { field: "skills[1].class", rule: "required" },
      { field: "skills[2].timeout", rule: "range" },
    ]);
    expect(formatProblem(r.problems[0])).toBe(`${r.file}: skills[1].class: is required (rule: required)`);
  });

  test("executable and buildSkill problems are prefixed with the entry index too", () => {
    const r = read({
      skills: [
        skill("disk_usage", { executable: "missing.sh" }),
        skill("disk_inodes", { params: { p: { type: "string", description: "P.", pattern: "(" } } }),
        skill("disk_smart", { params: { Bad: { type: "string", description: "P." } } }),
        skill("disk_temp"),
      ],
    });
    expect(r.skills.map((s) => s.key)).toEqual(["disk_temp"]);
    expect(r.found).toEqual([
      { field: "skills[0].executable", rule: "exists" },
      { field: "skills[1].params", rule: "schema" },
      { field: "skills[2].params.Bad", rule: "propertyNames" },
    ]);
  });

  test("an entry that is not an object is reported at its index", () => {
    const r = read({ skills: [skill("disk_usage"), 42] });
    expect(r.skills.map((s) => s.key)).toEqual(["disk_usage"]);
    expect(r.found).toEqual([{ field: "skills[1]", rule: "type" }]);
  });

  test("duplicate keys inside one manifest: the first declaration wins, the later one is refused", () => {
    const r = read({ skills: [skill("disk_usage"), skill("disk_inodes"), skill("disk_usage", { description: "Second one." })] });
    expect(r.skills.map((s) => [s.key, s.description])).toEqual([
      ["disk_usage", BASE.description],
      ["disk_inodes", BASE.description],
    ]);
    expect(r.found).toEqual([{ field: "skills[2].key", rule: "unique" }]);
    expect(r.problems[0].message).toBe('"disk_usage" is already declared at skills[0]');
  });

  test("an empty or non-array skills list refuses the whole file", () => {
    expect(read({ skills: [] }).found).toEqual([{ field: "skills", rule: "minItems" }]);
    expect(read({ skills: "disk_usage" }).found).toEqual([{ field: "skills", rule: "type" }]);
    expect(read({ skills: Array.from({ length: 65 }, (_, i) => skill(`disk_s${i}`)) }).found).toEqual([{ field: "skills", rule: "maxItems" }]);
  });

  test("skill fields next to skills make the envelope invalid instead of being ignored", () => {
    const r = read({ skills: [skill("disk_usage")], key: "other_key" });
    expect(r.skills).toEqual([]);
    expect(r.found).toEqual([{ field: "key", rule: "additionalProperties" }]);
  });
});
