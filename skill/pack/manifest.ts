/** Reads and checks one pack's skill.json (E1): JSON Schema first, then the rules a schema cannot say (paths, timeouts, metadata). */
import { accessSync, constants, readFileSync, realpathSync, statSync } from "node:fs";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import Ajv2020, { type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import { parseDuration } from "../duration.ts";
import { buildSkill } from "../registry.ts";
import { riskFromClassifier } from "../risk-classifier.ts";
import type { ParamSchema, SkillClass, SkillScope } from "../types.ts";
import MANIFEST_SCHEMA from "./skill.schema.json" with { type: "json" };

/** The manifest's file name inside a pack directory. */
export const MANIFEST_FILE = "skill.json";
/** Default and upper bound of a pack call's run time. */
export const DEFAULT_PACK_TIMEOUT_MS = 30_000;
export const MAX_PACK_TIMEOUT_MS = 3_600_000;
/** Default cap on a pack's stdout. */
export const DEFAULT_PACK_OUTPUT_CAP = 1_048_576;
/** Largest skill.json read. */
const MAX_MANIFEST_BYTES = 1_048_576;

/** One skill of a pack, checked and resolved: everything needed to register and run it. */
export interface PackSkillSpec {
  key: string;
  name: string;
  description: string;
  class: SkillClass;
  scope: SkillScope;
  category: string;
  params?: ParamSchema;
  rawSchema?: string;
  resultPreview: string;
  riskClassifier?: string;
  lintWaivers?: Record<string, string>;
  /** The pack directory (the process's working directory), resolved. */
  dir: string;
  /** The manifest it came from. */
  file: string;
  /** Where in the manifest: "" for a one-skill file, "skills[i]" in a pack; prefixes the field of problems found later. */
  entry: string;
  /** Absolute path of the executable, inside dir. */
  executable: string;
  args: string[];
  timeoutMs: number;
  env: string[];
  outputCapBytes: number;
  /** Identity of the manifest entry: a changed value means the skill changed. */
  fingerprint: string;
}

/** Why a manifest (or one of its skills) was refused: the file, the field and the rule. */
export interface ManifestProblem {
  file: string;
  /** Dotted path of the field, e.g. "skills[1].timeout"; "" for the file as a whole. */
  field: string;
  rule: string;
  message: string;
}

/** "<file>: <field>: <message> (rule: <rule>)", the one-line form logs and CLIs print. */
export function formatProblem(p: ManifestProblem): string {
  return `${p.file}: ${p.field ? `${p.field}: ` : ""}${p.message} (rule: ${p.rule})`;
}

// Compiled on the first manifest read, not at import: an edge agent without pack directories
// never reads one, and compiling the manifest schema took ≈ 130 ms of the compiled agent's start
// on JavaScriptCore's interpreter (docs/performance.md, "Fleet").
let manifestValidators: { skill: ValidateFunction; pack: ValidateFunction } | undefined;
function validators(): { skill: ValidateFunction; pack: ValidateFunction } {
  if (!manifestValidators) {
    const ajv = new Ajv2020({ allErrors: true, strict: true, logger: false });
    ajv.addSchema(MANIFEST_SCHEMA);
    manifestValidators = { skill: ajv.getSchema(`${MANIFEST_SCHEMA.$id}#/$defs/skill`)!, pack: ajv.getSchema(`${MANIFEST_SCHEMA.$id}#/$defs/pack`)! };
  }
  return manifestValidators;
}

/** The manifest schema, for docs and `ongrid packs schema`. */
export { MANIFEST_SCHEMA };

/**
 * Reads `<dir>/skill.json` for the given side. Returns the skills that passed every check and a
 * problem for each that did not; a broken entry never hides its well-formed siblings.
 */
export function readManifest(dir: string, scope: SkillScope): { skills: PackSkillSpec[]; problems: ManifestProblem[] } {
  const file = join(dir, MANIFEST_FILE);
  const problems: ManifestProblem[] = [];
  const whole = (rule: string, message: string) => ({ skills: [], problems: [{ file, field: "", rule, message }] });
  let text: string;
  try {
    const st = statSync(file);
    if (!st.isFile()) return whole("file", "is not a regular file");
    if (st.size > MAX_MANIFEST_BYTES) return whole("maxBytes", `is ${st.size} bytes; at most ${MAX_MANIFEST_BYTES}`);
    text = readFileSync(file, "utf8");
  } catch (err) {
    return whole("readable", `cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return whole("json", `is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return whole("type", "must be a JSON object (one skill, or {\"skills\": [...]})");

  let entries: Array<{ value: unknown; prefix: string }>;
  if (Object.hasOwn(doc, "skills")) {
    // Validate the envelope alone; each skill is checked on its own below, so one bad entry
    // does not take the others down.
    const shell = { ...(doc as Record<string, unknown>) };
    const list = shell.skills;
    if (Array.isArray(list)) shell.skills = list.map(() => ({ key: "x", name: "x", description: "x", class: "safe", executable: "x" }));
    const validatePack = validators().pack;
    if (!validatePack(shell)) return { skills: [], problems: ajvProblems(file, "", validatePack.errors ?? []) };
    entries = (list as unknown[]).map((value, i) => ({ value, prefix: `skills[${i}]` }));
  } else {
    entries = [{ value: doc, prefix: "" }];
  }

  const skills: PackSkillSpec[] = [];
  const seen = new Map<string, string>();
  for (const { value, prefix } of entries) {
    let entryProblems: PackSkillSpec | ManifestProblem[];
    try {
      entryProblems = checkEntry(value, prefix, dir, file, scope);
    } catch (err) {
      // A file removed or replaced while it was being read (an install in progress): refuse this
      // entry now; the next rescan sees the finished state.
      entryProblems = [{ file, field: prefix, rule: "readable", message: `changed while being read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` }];
    }
    if (Array.isArray(entryProblems)) {
      problems.push(...entryProblems);
      continue;
    }
    const earlier = seen.get(entryProblems.key);
    if (earlier !== undefined) {
      problems.push({ file, field: at(prefix, "key"), rule: "unique", message: `"${entryProblems.key}" is already declared at ${earlier || "the top level"}` });
      continue;
    }
    seen.set(entryProblems.key, prefix);
    skills.push(entryProblems);
  }
  return { skills, problems };
}

/** Checks one skill object; returns its spec or the problems found. */
function checkEntry(value: unknown, prefix: string, dir: string, file: string, scope: SkillScope): PackSkillSpec | ManifestProblem[] {
  const validateSkill = validators().skill;
  if (!validateSkill(value)) return ajvProblems(file, prefix, validateSkill.errors ?? []);
  const m = value as Record<string, any>;
  const problems: ManifestProblem[] = [];
  const bad = (field: string, rule: string, message: string) => problems.push({ file, field: at(prefix, field), rule, message });

  if (m.scope !== undefined && m.scope !== scope) {
    bad("scope", "scope", `is "${m.scope}", but this ${scope === "host" ? "edge loads packs as host skills" : "manager loads packs as manager skills"}`);
  }
  if (m.params !== undefined && m.raw_schema !== undefined) bad("raw_schema", "exclusive", "params and raw_schema cannot both be given");
  let timeoutMs = DEFAULT_PACK_TIMEOUT_MS;
  if (m.timeout !== undefined) {
    try {
      timeoutMs = parseDuration(m.timeout);
      if (timeoutMs <= 0 || timeoutMs > MAX_PACK_TIMEOUT_MS) bad("timeout", "range", `is ${m.timeout}; must be more than 0 and at most 1h`);
    } catch (err) {
      bad("timeout", "duration", (err as Error).message);
    }
  }
  if (m.risk_classifier !== undefined) {
    try {
      riskFromClassifier(m.risk_classifier, m.key);
    } catch (err) {
      bad("risk_classifier", "known", (err as Error).message.replace(/^skill "[^"]*": /, ""));
    }
  }
  const executable = checkExecutable(dir, m.executable, (rule, message) => bad("executable", rule, message));
  if (problems.length) return problems;

  const spec: PackSkillSpec = {
    key: m.key,
    name: m.name,
    description: m.description,
    class: m.class,
    scope,
    category: m.category ?? "pack",
    ...(m.params !== undefined ? { params: m.params as ParamSchema } : {}),
    ...(m.raw_schema !== undefined ? { rawSchema: JSON.stringify(m.raw_schema) } : {}),
    resultPreview: m.result_preview ?? "",
    ...(m.risk_classifier !== undefined ? { riskClassifier: m.risk_classifier } : {}),
    ...(m.lint_waivers !== undefined ? { lintWaivers: m.lint_waivers } : {}),
    dir: realpathSync(dir),
    file,
    entry: prefix,
    executable: executable!,
    args: m.args ?? [],
    timeoutMs,
    env: m.env ?? [],
    outputCapBytes: m.output_cap_bytes ?? DEFAULT_PACK_OUTPUT_CAP,
    fingerprint: JSON.stringify([m, executable]),
  };
  // The registry's own checks (params → JSON Schema, patterns that compile, raw schema strictness).
  try {
    buildSkill({ ...toMetadata(spec), execute: async () => null });
  } catch (err) {
    // The registry says `skill "k": …` or `skill "k", param "p": …`; the problem already names the file and the field.
    bad(spec.rawSchema !== undefined ? "raw_schema" : "params", "schema", (err as Error).message.replace(/^skill "[^"]*"(?::|,) /, ""));
    return problems;
  }
  return spec;
}

/** The metadata part of a spec, as the registry takes it. */
export function toMetadata(spec: PackSkillSpec) {
  return {
    key: spec.key,
    name: spec.name,
    description: spec.description,
    class: spec.class,
    scope: spec.scope,
    category: spec.category,
    ...(spec.params !== undefined ? { params: spec.params } : {}),
    ...(spec.rawSchema !== undefined ? { rawSchema: spec.rawSchema } : {}),
    resultPreview: spec.resultPreview,
    ...(spec.riskClassifier !== undefined ? { riskClassifier: spec.riskClassifier } : {}),
    ...(spec.lintWaivers !== undefined ? { lintWaivers: spec.lintWaivers } : {}),
  };
}

/** Resolves the executable inside the pack directory (symlinks followed) and checks it can run. */
function checkExecutable(dir: string, path: string, bad: (rule: string, message: string) => void): string | undefined {
  if (isAbsolute(path)) {
    bad("inside_pack", `"${path}" is absolute; give a path relative to the pack directory`);
    return undefined;
  }
  let real: string;
  let realDir: string;
  try {
    realDir = realpathSync(dir);
    real = realpathSync(resolve(dir, path));
  } catch (err) {
    bad("exists", `"${path}" does not exist in the pack directory (${(err as NodeJS.ErrnoException).code ?? "error"})`);
    return undefined;
  }
  const rel = relative(realDir, real);
  if (rel === "") {
    bad("file", `"${path}" is the pack directory itself, not a file in it`);
    return undefined;
  }
  if (rel.startsWith(`..${sep}`) || rel === ".." || isAbsolute(rel)) {
    bad("inside_pack", `"${path}" resolves to ${real}, outside the pack directory ${realDir}`);
    return undefined;
  }
  if (!statSync(real).isFile()) {
    bad("file", `"${path}" is not a regular file`);
    return undefined;
  }
  try {
    accessSync(real, constants.X_OK);
  } catch {
    bad("executable", `"${path}" is not executable (chmod +x it)`);
    return undefined;
  }
  return real;
}

function at(prefix: string, field: string): string {
  if (!prefix) return field;
  return field ? `${prefix}.${field}` : prefix;
}

/** The field `name` inside `parent`; an empty name is written [""] so it is not mistaken for the parent itself. */
function child(parent: string, name: string): string {
  if (name === "") return `${parent}[""]`;
  return parent ? `${parent}.${name}` : name;
}

/** Ajv's errors as problems naming the field (dotted, with [i] for items) and the rule. */
function ajvProblems(file: string, prefix: string, errors: ErrorObject[]): ManifestProblem[] {
  const out: ManifestProblem[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    let field = e.instancePath
      .split("/")
      .slice(1)
      .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
      .reduce((acc, s) => (/^\d+$/.test(s) ? `${acc}[${s}]` : child(acc, s)), prefix);
    let message = e.message ?? "is invalid";
    let rule = e.keyword;
    // An error inside propertyNames (pattern, maxLength) is about one property name, not the object
    // holding it: report it on that name. The propertyNames error ajv adds after it is then a duplicate.
    const badName = (e as ErrorObject & { propertyName?: string }).propertyName;
    if (badName !== undefined) {
      field = child(field, badName);
      rule = "propertyNames";
      message = e.keyword === "pattern" ? "is not a valid name (lower_snake: a-z, 0-9 and _, starting with a letter)" : `is not a valid name: ${message}`;
    } else if (e.keyword === "required") {
      field = child(field, e.params.missingProperty);
      message = "is required";
    } else if (e.keyword === "additionalProperties") {
      field = child(field, e.params.additionalProperty);
      message = "is not a known field";
    } else if (e.keyword === "enum") {
      message = `must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")}`;
    } else if (e.keyword === "propertyNames") {
      field = child(field, e.params.propertyName);
      message = "is not a valid name (lower_snake)";
    }
    const p = { file, field, rule, message };
    const id = `${p.field}|${p.rule}`;
    if (e.keyword === "if" || seen.has(id)) continue;
    seen.add(id);
    out.push(p);
  }
  return out;
}
