/**
 * Property-based tests (issue 11): random SKILL.md texts. parsePlaybook's documented failure mode
 * is a result with problems, never an exception: every problem names the file, a rule and a
 * message, and the field when the fault is in a frontmatter field; a valid playbook with any body
 * still parses. FUZZ_RUNS and FUZZ_SEED tune and reproduce a run.
 */
import fc from "fast-check";
import { stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { BODY_SECTIONS, parsePlaybook, type PlaybookProblem } from "./parse.ts";

const numRuns = Number(process.env.FUZZ_RUNS ?? 150);
const seed = Number(process.env.FUZZ_SEED ?? 20_251_101);
const opts = { numRuns, seed };

const FILE = "/pb/fuzz/SKILL.md";
const FILE_RULES = new Set(["frontmatter", "yaml"]);
const SECTIONS = BODY_SECTIONS.map((s) => `## ${s}\nx\n`).join("");

/** Parses and checks the contract every result keeps. */
function parse(text: string): ReturnType<typeof parsePlaybook> {
  let r: ReturnType<typeof parsePlaybook>;
  try {
    r = parsePlaybook(text, FILE, "external");
  } catch (err) {
    throw new Error(`parsePlaybook threw ${String(err)} on ${JSON.stringify(text.slice(0, 400))}`);
  }
  const errors = r.problems.filter((p) => p.severity === "error");
  if (r.playbook) expect(errors).toEqual([]);
  else expect(errors.length).toBeGreaterThan(0);
  for (const p of r.problems) {
    expect(p.file).toBe(FILE);
    expect(["error", "warning"]).toContain(p.severity);
    expect(p.rule).toMatch(/^[A-Za-z_-]+(?:; (?:oneOf|anyOf) option \d+)?$/);
    expect(typeof p.message === "string" && p.message.trim().length > 0, JSON.stringify(p)).toBe(true);
    // Only a fault of the file as a whole (no frontmatter, broken YAML) may name no field.
    if (!FILE_RULES.has(p.rule)) expect(p.field, JSON.stringify(p)).not.toBe("");
  }
  return r;
}

const doc = (frontmatter: string, body: string) => `---\n${frontmatter}\n---\n${body}`;
const under = (field: string, key: string) => field === key || field.startsWith(`${key}.`) || field.startsWith(`${key}[`);

// ---------- valid playbooks ----------

const bodyText = fc
  .array(fc.oneof(fc.string({ maxLength: 80 }), fc.constantFrom("---", "# h", "```yaml", "name: x", "{{url}}", "\u0000", "磁盘满")), { maxLength: 30 })
  .map((lines) => lines.join("\n").replace(/\r/g, ""));
const token = fc.stringMatching(/^[a-z][a-z0-9_]{1,20}$/);
const validFrontmatter = fc.record(
  {
    name: fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,63}$/),
    description: fc.string({ minLength: 1, maxLength: 300 }).filter((s) => s.trim() !== "" && !s.includes("\r")),
    display_name: fc.string({ minLength: 1, maxLength: 120 }).filter((s) => !s.includes("\r")),
    category: fc.stringMatching(/^[a-z0-9_-]{1,40}$/),
    platforms: fc.uniqueArray(fc.constantFrom("linux", "windows", "darwin", "any"), { minLength: 1 }),
    tags: fc.uniqueArray(fc.string({ minLength: 1, maxLength: 40 }).filter((s) => !s.includes("\r")), { maxLength: 5 }),
    allowed_tools: fc.uniqueArray(token, { maxLength: 5 }),
    risk_level: fc.constantFrom("low", "medium", "high"),
    fallback_steps: fc.array(fc.record({ tool: token, args: fc.dictionary(token, fc.oneof(fc.constantFrom("{{url}}", "{{ host }}", "{{path}}"), fc.integer(), fc.boolean())) }), { maxLength: 3 }),
    metadata: fc.dictionary(token, fc.oneof(fc.string({ maxLength: 10 }).filter((s) => !s.includes("\r")), fc.integer(), fc.boolean())),
    version: fc.oneof(fc.string({ maxLength: 10 }).filter((s) => !s.includes("\r")), fc.integer()),
  },
  { requiredKeys: ["name", "description"] },
);

// ---------- one frontmatter field given a value of the wrong type ----------

const notString = fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.integer(), { minLength: 1, maxLength: 3 }), fc.dictionary(token, fc.integer(), { minKeys: 1, maxKeys: 2 }));
const notArray = fc.oneof(fc.string({ minLength: 1, maxLength: 10 }), fc.integer(), fc.boolean(), fc.dictionary(token, fc.integer(), { minKeys: 1, maxKeys: 2 }));
const WRONG: Record<string, fc.Arbitrary<unknown>> = {
  name: fc.oneof(notString, fc.constantFrom("Bad Name", "-x", "", "a".repeat(65))),
  display_name: fc.oneof(notString, fc.constant(""), fc.constant("d".repeat(121))),
  description: fc.oneof(notString, fc.constant(""), fc.constant("d".repeat(1025))),
  category: fc.oneof(notString, fc.constantFrom("Storage", "a b", "")),
  platforms: fc.oneof(notArray, fc.constant([]), fc.constant(["plan9"]), fc.constant(["linux", "linux"])),
  tags: fc.oneof(notArray, fc.constant([""]), fc.constant([1])),
  triggers: fc.oneof(notArray, fc.constant([""])),
  allowed_tools: fc.oneof(notArray, fc.constant(["Bad-Key"]), fc.constant(["x"])),
  "allowed-tools": fc.oneof(fc.integer(), fc.boolean(), fc.dictionary(token, fc.integer(), { minKeys: 1, maxKeys: 2 }), fc.constant(["Bad-Key"])),
  risk_level: fc.oneof(notString, fc.constantFrom("extreme", "LOW")),
  fallback_steps: fc.oneof(notArray, fc.constant([{ args: {} }]), fc.constant([{ tool: "Bad" }]), fc.constant([{ tool: "probe_http", extra: 1 }]), fc.constant([{ tool: "probe_http", args: { u: "{{token}}" } }])),
  license: fc.oneof(notString, fc.constant("l".repeat(201))),
  compatibility: fc.oneof(notString, fc.constant("c".repeat(501))),
  metadata: fc.oneof(fc.string({ minLength: 1, maxLength: 5 }), fc.integer(), fc.array(fc.integer(), { minLength: 1, maxLength: 2 }), fc.constant({ a: [1] }), fc.constant({ 'q"uote': null }), fc.constant({ "": {} })),
  version: fc.oneof(fc.boolean(), fc.constant(null), fc.array(fc.integer(), { minLength: 1, maxLength: 2 })),
};
const wrongField = fc.constantFrom(...Object.keys(WRONG)).chain((key) => WRONG[key].map((value) => ({ key, value })));

// ---------- garbage ----------

/** A small alias bomb: `levels` anchors, each aliasing the previous one `width` times. */
const aliasBomb = fc.tuple(fc.integer({ min: 2, max: 4 }), fc.integer({ min: 2, max: 12 })).map(([levels, width]) => {
  const lines = ["name: bomb", "description: d", `l0: &l0 [${Array(width).fill("x").join(", ")}]`];
  for (let i = 1; i <= levels; i++) lines.push(`l${i}: &l${i} [${Array(width).fill(`*l${i - 1}`).join(", ")}]`);
  return doc(lines.join("\n"), SECTIONS);
});
const yamlBits = fc.constantFrom(
  "name: a",
  "description: d",
  "&a x",
  "*a",
  "*missing",
  "<<: *a",
  "<<: [*a, *a]",
  "!!set {a, b}",
  "!!binary aGVsbG8=",
  "!!timestamp 2001-12-14",
  "!custom x",
  "? [a, b]\n: c",
  "__proto__: {polluted: true}",
  "constructor: {prototype: {polluted: true}}",
  "tags: [x",
  "key: 'unterminated",
  "\t- tab",
  "%YAML 1.1",
  "---",
  "...",
  "- a",
  "fallback_steps:\n  - tool: probe_http\n    args: *a",
  "metadata: &m {a: 1}\nversion: *m",
);
const garbage = fc.oneof(
  fc.string({ maxLength: 500 }),
  fc.uint8Array({ maxLength: 500 }).map((b) => Buffer.from(b).toString("utf8")),
  fc.uint8Array({ maxLength: 500 }).map((b) => doc(Buffer.from(b).toString("latin1"), SECTIONS)),
  fc.array(yamlBits, { maxLength: 10 }).map((lines) => doc(lines.join("\n"), SECTIONS)),
  fc.array(fc.oneof(yamlBits, fc.string({ maxLength: 30 })), { maxLength: 10 }).map((lines) => lines.join("\n")),
  fc.dictionary(fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom("name", "description", "__proto__", "constructor", "")), fc.jsonValue({ maxDepth: 3 })).map((fm) => doc(stringify(fm), SECTIONS)),
  aliasBomb,
  fc.integer({ min: 1, max: 5000 }).map((d) => doc(`name: a\ndescription: d\nmetadata: ${"[".repeat(d)}${"]".repeat(d)}`, SECTIONS)),
  fc.integer({ min: 1, max: 300_000 }).map((n) => doc("name: a\ndescription: d", "## Trigger conditions\n" + "y".repeat(n))),
  fc.constantFrom("", "---", "---\n", "---\n---\n", "---\n---", "\uFEFF---\r\nname: a\r\ndescription: d\r\n---\r\nbody", "---\nname: a\ndescription: d\n--- \nbody", "--- \n: \n---\nx"),
);

describe("parsePlaybook fuzz", () => {
  it("a valid frontmatter with a random body text still parses, keeping the body", () => {
    fc.assert(
      fc.property(validFrontmatter, bodyText, fc.boolean(), (fm, body, crlf) => {
        const full = `${SECTIONS}\n${body}`;
        const text = doc(stringify(fm).trimEnd(), full);
        const r = parse(crlf ? text.replace(/\n/g, "\r\n") : text);
        expect(r.playbook, JSON.stringify(r.problems)).toBeDefined();
        expect(r.playbook!.name).toBe(fm.name);
        expect(r.playbook!.description).toBe(fm.description.trim());
        expect(r.playbook!.body).toBe(full.trim());
      }),
      opts,
    );
  });

  it("one frontmatter field with a wrong value: refused, naming that field and a rule", () => {
    fc.assert(
      fc.property(wrongField, ({ key, value }) => {
        const fm = { name: "fuzz", description: "d", [key]: value };
        const r = parse(doc(stringify(fm).trimEnd(), SECTIONS));
        expect(r.playbook, `${key}: ${JSON.stringify(value)}`).toBeUndefined();
        const named = r.problems.filter((p) => p.severity === "error" && under(p.field, key));
        expect(named.length, `${key}: ${JSON.stringify(value)} → ${JSON.stringify(r.problems)}`).toBeGreaterThan(0);
      }),
      opts,
    );
  });

  it("garbage (binary, missing or extra '---', broken YAML, tags, aliases, alias bombs, deep nesting, huge bodies): never throws", () => {
    fc.assert(
      fc.property(garbage, (text) => {
        parse(text);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      }),
      opts,
    );
  });

  // Counterexamples found by the properties above, kept as examples.
  it("found: an alias bomb made parsePlaybook throw ReferenceError; it is now a yaml problem", () => {
    const r = parse(doc("name: a\ndescription: d\na: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]", SECTIONS));
    expect(r.playbook).toBeUndefined();
    expect(r.problems.map((p: PlaybookProblem) => `${p.field}|${p.rule}|${p.message}`)).toEqual(["|yaml|frontmatter is not valid YAML: Excessive alias count indicates a resource exhaustion attack"]);
  });

  it("found: an alias to a missing anchor made parsePlaybook throw ReferenceError; it is now a yaml problem", () => {
    const r = parse(doc("name: a\ndescription: *x", SECTIONS));
    expect(r.problems.map((p) => `${p.field}|${p.rule}`)).toEqual(["|yaml"]);
    expect(r.problems[0].message).toMatch(/Unresolved alias/);
  });

  it('found: a metadata key with a quote lost its field (field "", rule "schema"); the field and rule are now kept', () => {
    const r = parse(doc("name: a\ndescription: d\nmetadata: {'a\"b': [1]}", SECTIONS));
    expect(r.problems.map((p) => `${p.field}|${p.rule}|${p.message}`)).toEqual(['metadata.a"b|type|must be string or number or boolean']);
  });

  it('found: an unknown frontmatter key "" was warned about on field "" (the whole file); it is now [""]', () => {
    const r = parse(doc('name: a\ndescription: d\n"": x', SECTIONS));
    expect(r.playbook).toBeDefined();
    expect(r.problems.map((p) => `${p.field}|${p.rule}|${p.severity}`)).toEqual(['[""]|known_key|warning']);
  });
});
