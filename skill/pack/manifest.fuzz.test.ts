/**
 * Property-based tests (issue 11): random and mutated skill.json files. readManifest (and the pack
 * loader's rescan) never throw; they yield skills or problems, and every problem names its file,
 * a rule and a message, and the field when the fault is in a field.
 * FUZZ_RUNS and FUZZ_SEED tune and reproduce a run.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import fc from "fast-check";
import { pino } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { createRegistry } from "../registry.ts";
import { createPackSet } from "./loader.ts";
import { MANIFEST_FILE, readManifest, type ManifestProblem } from "./manifest.ts";

const numRuns = Number(process.env.FUZZ_RUNS ?? 150);
const seed = Number(process.env.FUZZ_SEED ?? 20_251_101);
const opts = { numRuns, seed };

const root = realpathSync(mkdtempSync(path.join(tmpdir(), "ongrid-manifest-fuzz-")));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const silent = pino({ level: "silent" });

const BASE: Record<string, unknown> = {
  key: "disk_usage",
  name: "Disk usage",
  description: "Reports how full each mounted filesystem is. Use when a disk fills up.",
  class: "safe",
  executable: "run.sh",
  params: {
    mount: { type: "string", description: "Mount point.", pattern: "^/" },
    limit: { type: "integer", description: "Rows.", default: 10, min: 1, max: 100 },
  },
  args: ["--json"],
  timeout: "30s",
  env: ["HOME"],
  output_cap_bytes: 4096,
};
const FIELDS = [
  "key",
  "name",
  "description",
  "class",
  "scope",
  "category",
  "params",
  "raw_schema",
  "result_preview",
  "risk_classifier",
  "lint_waivers",
  "executable",
  "args",
  "timeout",
  "env",
  "output_cap_bytes",
];

let seq = 0;
/** A fresh pack directory with an executable run.sh (and a plain file and a directory) and the given skill.json bytes. */
function pack(content: string | Uint8Array): { dir: string; file: string } {
  const dir = path.join(root, `p${++seq}`);
  mkdirSync(dir);
  writeFileSync(path.join(dir, "run.sh"), "#!/bin/sh\necho '{}'\n", { mode: 0o755 });
  writeFileSync(path.join(dir, "notexec.sh"), "#!/bin/sh\n", { mode: 0o644 });
  mkdirSync(path.join(dir, "bin"));
  const file = path.join(dir, MANIFEST_FILE);
  writeFileSync(file, content);
  return { dir, file };
}

const RULE = /^[A-Za-z_]+$/;

/** Reads the manifest (and rescans it with the loader); checks the contract; returns the problems. */
function read(content: string | Uint8Array): { skills: string[]; problems: ManifestProblem[]; file: string } {
  const { dir, file } = pack(content);
  let r: ReturnType<typeof readManifest>;
  try {
    r = readManifest(dir, "host");
  } catch (err) {
    throw new Error(`readManifest threw ${String(err)} for ${fc.stringify(typeof content === "string" ? content.slice(0, 500) : content.slice(0, 200))}`);
  }
  expect(Array.isArray(r.skills) && Array.isArray(r.problems)).toBe(true);
  expect(r.skills.length + r.problems.length).toBeGreaterThan(0);
  for (const p of r.problems) {
    expect(p.file).toBe(file);
    expect(typeof p.field).toBe("string");
    expect(p.rule).toMatch(RULE);
    expect(typeof p.message === "string" && p.message.trim().length > 0, JSON.stringify(p)).toBe(true);
  }
  for (const s of r.skills) {
    expect(s.file).toBe(file);
    expect(s.executable.startsWith(dir + path.sep)).toBe(true);
  }
  // The loader on the same directory: never throws, registers exactly what readManifest accepted.
  const registry = createRegistry({ log: silent });
  const report = createPackSet({ dirs: [dir], scope: "host", registry, log: silent }).rescan();
  expect(report.loaded).toEqual(r.skills.map((s) => s.key).sort());
  for (const key of report.loaded) expect(registry.get(key)).toBeDefined();
  for (const p of report.problems) expect(p.rule).toMatch(RULE);
  return { skills: r.skills.map((s) => s.key), problems: r.problems, file };
}

/** True when a problem names the field or something inside it. */
const under = (field: string, f: string) => field === f || field.startsWith(`${f}.`) || field.startsWith(`${f}[`);
/** The dotted form of field `name` inside `parent` (an empty name is [""]). */
const inside = (parent: string, name: string) => (name === "" ? `${parent}[""]` : parent ? `${parent}.${name}` : name);

// ---------- generators ----------

const junk = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.string({ maxLength: 5000 }),
  fc.nat({ max: 20_000 }).map((n) => "x".repeat(n)),
  fc.integer({ min: 1, max: 1500 }).map((d) => {
    let v: unknown = { type: "object" };
    for (let i = 0; i < d; i++) v = { type: "object", properties: { a: v } };
    return v;
  }),
);
const badExecutable = fc.oneof(
  fc.constantFrom("/bin/sh", "/usr/bin/env", "../run.sh", "../../etc/passwd", ".", "./", "bin", "notexec.sh", "missing.sh", "run.sh/", "run.sh\u0000x", "sub/../../run.sh"),
  fc.string({ minLength: 1, maxLength: 300 }).filter((s) => s !== "run.sh" && s !== "./run.sh" && !/^(\.\/)*run\.sh$/.test(s)),
);
const paramSpec = fc.record(
  {
    type: fc.oneof(fc.constantFrom("string", "integer", "number", "boolean", "enum", "duration", "string_list", "credential"), fc.jsonValue()),
    description: fc.oneof(fc.string({ maxLength: 20 }), fc.jsonValue()),
    required: fc.oneof(fc.boolean(), fc.jsonValue()),
    default: fc.jsonValue({ maxDepth: 2 }),
    min: fc.oneof(fc.integer(), fc.double(), fc.jsonValue()),
    max: fc.oneof(fc.integer(), fc.double(), fc.jsonValue()),
    pattern: fc.oneof(fc.constantFrom("^/", "(", "[a-z", "^(a+)+$", "\\"), fc.string({ maxLength: 10 })),
    values: fc.oneof(fc.array(fc.string({ maxLength: 5 }), { maxLength: 4 }), fc.jsonValue()),
  },
  { requiredKeys: [] },
);
const paramsValue = fc.dictionary(fc.oneof(fc.constantFrom("mount", "limit", "constructor", "__proto__", "a_b"), fc.string({ maxLength: 8 })), paramSpec, { maxKeys: 4 });

/** One field of BASE deleted, replaced or added, and the field the fault is in. */
const mutation = fc.oneof(
  fc.constantFrom(...FIELDS).map((f) => ({ kind: "delete" as const, field: f, value: undefined as unknown })),
  fc.tuple(fc.constantFrom(...FIELDS), junk).map(([f, v]) => ({ kind: "replace" as const, field: f, value: v })),
  badExecutable.map((v) => ({ kind: "replace" as const, field: "executable", value: v as unknown })),
  paramsValue.map((v) => ({ kind: "replace" as const, field: "params", value: v as unknown })),
  fc.tuple(fc.constantFrom("timeout"), fc.oneof(fc.stringMatching(/^([0-9]{1,25}(\.[0-9]{1,3})?(ms|s|m|h)){1,4}$/), fc.string({ maxLength: 10 }))).map(([f, v]) => ({ kind: "replace" as const, field: f, value: v as unknown })),
  fc.tuple(fc.string({ maxLength: 20 }).filter((k) => !FIELDS.includes(k) && k !== "$schema"), fc.jsonValue()).map(([f, v]) => ({ kind: "add" as const, field: f, value: v })),
);

function mutate(m: { kind: "delete" | "replace" | "add"; field: string; value: unknown }): Record<string, unknown> {
  const out: Record<string, unknown> = { ...BASE };
  if (m.kind === "delete") delete out[m.field];
  else Object.defineProperty(out, m.field, { value: m.value, enumerable: true, writable: true, configurable: true });
  return out;
}

/** Manifest text that is not (valid) JSON, or JSON of the wrong shape. */
const garbage = fc.oneof(
  fc.uint8Array({ maxLength: 2000 }),
  fc.string({ maxLength: 2000 }),
  fc.tuple(fc.constant(JSON.stringify(BASE)), fc.nat()).map(([t, n]) => t.slice(0, n % t.length)),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.constant(`{"__proto__": {"polluted": true}, "skills": [${JSON.stringify(BASE)}]}`),
  fc.constant(`{"key": "disk_usage", "description": "${"x".repeat(1_048_600)}"}`),
);

describe("readManifest fuzz", () => {
  it("the unmutated base manifest loads (so mutations below start from a valid file)", () => {
    const r = read(JSON.stringify(BASE));
    expect(r.problems).toEqual([]);
    expect(r.skills).toEqual(["disk_usage"]);
  });

  it("one field deleted, replaced by arbitrary JSON or a bad path, or added: never throws; a refusal names that field and a rule", () => {
    fc.assert(
      fc.property(mutation, (m) => {
        const r = read(JSON.stringify(mutate(m)));
        if (r.skills.length === 0) {
          expect(r.problems.length).toBeGreaterThan(0);
          expect(
            r.problems.some((p) => under(p.field, inside("", m.field))),
            `${JSON.stringify(m).slice(0, 300)} → ${JSON.stringify(r.problems).slice(0, 600)}`,
          ).toBe(true);
        } else {
          expect(r.problems).toEqual([]);
        }
      }),
      opts,
    );
  });

  it("a {skills: [...]} pack of mutated entries: each broken entry is named by its index, the others load", () => {
    fc.assert(
      fc.property(fc.array(fc.option(mutation, { nil: undefined }), { minLength: 1, maxLength: 5 }), (ms) => {
        const entries = ms.map((m, i) => ({ ...(m ? mutate(m) : BASE), key: m?.field === "key" ? mutate(m).key : `disk_e${i}` }));
        const r = read(JSON.stringify({ skills: entries }));
        ms.forEach((m, i) => {
          const key = `disk_e${i}`;
          if (m === undefined) expect(r.skills).toContain(key);
          else if (!r.skills.includes(key)) {
            const named = r.problems.filter((p) => under(p.field, `skills[${i}]`));
            if (m.field !== "key") expect(named.some((p) => under(p.field, inside(`skills[${i}]`, m.field))), JSON.stringify(r.problems).slice(0, 600)).toBe(true);
            else expect(named.length).toBeGreaterThan(0);
          }
        });
      }),
      { ...opts, numRuns: Math.max(10, Math.ceil(numRuns / 3)) },
    );
  });

  it("random bytes, truncated JSON, wrong shapes and oversized files: never throws; refused as a whole file with a rule", () => {
    fc.assert(
      fc.property(garbage, (content) => {
        const r = read(content);
        for (const p of r.problems) if (["json", "maxBytes", "readable", "file"].includes(p.rule)) expect(p.field).toBe("");
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      }),
      { ...opts, numRuns: Math.max(10, Math.ceil(numRuns / 3)) },
    );
  });

  // Counterexample found by the properties above, kept as an example.
  it('found: an unknown field named "" was reported on field "" (the whole file) or "skills[0]" (the whole entry); it is now [""]', () => {
    const single = read(JSON.stringify({ ...BASE, "": {} }));
    expect(single.skills).toEqual([]);
    expect(single.problems.map(({ field, rule }) => ({ field, rule }))).toEqual([{ field: '[""]', rule: "additionalProperties" }]);
    const packed = read(JSON.stringify({ skills: [{ ...BASE, "": {} }, BASE] }));
    expect(packed.skills).toEqual(["disk_usage"]);
    expect(packed.problems.map(({ field, rule }) => ({ field, rule }))).toEqual([{ field: 'skills[0][""]', rule: "additionalProperties" }]);
  });
});
