import Ajv2020 from "ajv/dist/2020.js";
import AjvDraft7 from "ajv";
import type { ErrorObject, Options, ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import { DURATION_PATTERN, formatDuration, parseDuration } from "./duration.ts";
import { OngridError } from "./errors.ts";
import type { ParamSchema, Skill } from "./types.ts";

const AJV_OPTIONS: Options = {
  allErrors: true,
  useDefaults: true,
  // Unknown keywords, formats and ignored defaults are schema bugs: fail at registration.
  strictSchema: true,
  strictNumbers: true,
  // Only own properties count: a param named like an Object.prototype member ("constructor") is
  // absent when not given, not Object itself failing its type.
  ownProperties: true,
  // Hand-written raw schemas legitimately use union types, tuples and required-in-oneOf.
  strictTypes: false,
  strictTuples: false,
  strictRequired: false,
  logger: false,
};

// One shared instance per dialect: 2020-12 is the default (and what paramsToJsonSchema
// emits); a raw schema that declares draft-07 in `$schema` compiles with draft-07 rules.
// Each is created on first use: an instance compiles its meta-schemas, which is a large part of
// an idle edge agent's memory, and most processes never need the draft-07 one.
let ajv2020: Ajv2020 | undefined;
let ajvDraft7: AjvDraft7 | undefined;
function dialect2020(): Ajv2020 {
  if (!ajv2020) addFormats((ajv2020 = new Ajv2020(AJV_OPTIONS)));
  return ajv2020;
}
function dialectDraft7(): AjvDraft7 {
  if (!ajvDraft7) addFormats((ajvDraft7 = new AjvDraft7(AJV_OPTIONS)));
  return ajvDraft7;
}

const DRAFT_2020 = /^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/;
const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/;

/** Compiles a params JSON Schema once, so a broken schema fails at registration and not at the first call. */
export function compileValidator(jsonSchema: Record<string, unknown>): ValidateFunction {
  const dialect = jsonSchema.$schema;
  let ajv: Ajv2020 | AjvDraft7;
  if (dialect === undefined || (typeof dialect === "string" && DRAFT_2020.test(dialect))) ajv = dialect2020();
  else if (typeof dialect === "string" && DRAFT_07.test(dialect)) ajv = dialectDraft7();
  else {
    throw new OngridError(
      "invalid_argument",
      `invalid JSON Schema: unsupported $schema ${JSON.stringify(dialect)}`,
      "Omit $schema (draft 2020-12 is assumed) or use the draft 2020-12 or draft-07 URI.",
    );
  }
  try {
    return ajv.compile(jsonSchema);
  } catch (err) {
    throw new OngridError(
      "invalid_argument",
      `invalid JSON Schema: ${err instanceof Error ? err.message : String(err)}`,
      "Fix the schema; unknown keywords are refused (strict mode) and defaults inside oneOf/anyOf are ignored by validation.",
    );
  } finally {
    // The compiled function stays valid; dropping the cache entry lets a skill with a `$id`
    // be unregistered and registered again (pack rescans) without an "already exists" error.
    ajv.removeSchema(jsonSchema);
  }
}

const validators = new WeakMap<Skill, ValidateFunction>();

/** The compiled validator of a registered skill, compiled on first use and cached per skill object. */
export function validatorFor(skill: Skill): ValidateFunction {
  let validate = validators.get(skill);
  if (!validate) {
    validate = compileValidator(skill.jsonSchema);
    validators.set(skill, validate);
  }
  return validate;
}

/** Validates a caller's params against a skill's schema and returns a copy with defaults applied (A4). */
export function validateParams(skill: Skill, params: unknown): Record<string, unknown> {
  const key = skill.meta.key;
  const fail = (problems: string[]): never => {
    throw new OngridError(
      "invalid_argument",
      `invalid params for skill "${key}": ${problems.join("; ")}`,
      `Call GetSkill for "${key}" to see its parameter schema, fix the fields named above and call it again.`,
    );
  };
  const input = params === undefined ? {} : params;
  if (!isPlainObject(input)) fail(["params: must be a JSON object (rule: type)"]);
  let copy: Record<string, unknown>;
  try {
    copy = structuredClone(input) as Record<string, unknown>;
  } catch {
    return fail(["params: must be plain JSON data (rule: type)"]);
  }
  const validate = validatorFor(skill);
  const problems = validate(copy) ? [] : describeAjvErrors(validate.errors ?? []);
  problems.push(...durationBoundProblems(skill.meta.params, copy));
  if (problems.length > 0) fail(problems);
  return copy;
}

/** One Ajv error explained: the field (segments joined, "" for the params object itself), what is wrong and the rule. */
export interface AjvProblem {
  /** Dotted field with [i] for items; "" when the problem is about the object as a whole. */
  field: string;
  /** False when the problem is about the object as a whole (no field, not even an empty-named one). */
  named: boolean;
  what: string;
  rule: string;
}

/** Ajv errors as structured problems, one per distinct problem (the form describeAjvErrors prints). */
export function ajvProblems(errors: readonly ErrorObject[], prefix = ""): AjvProblem[] {
  const composites = errors
    .filter((e) => e.keyword === "oneOf" || e.keyword === "anyOf")
    .map((e) => ({ path: `${e.schemaPath}/`, keyword: e.keyword }));
  const out: AjvProblem[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    const p = e.params as Record<string, unknown>;
    const childName = p.missingProperty ?? p.additionalProperty ?? p.unevaluatedProperty ?? p.propertyName;
    const child = childName === undefined ? undefined : String(childName);
    const segments = [...(prefix ? [prefix] : []), ...splitPointer(e.instancePath)];
    // An empty-named property ("") is still a field: it is pushed, so it is named as `param "[""]"`.
    if (child !== undefined && e.keyword !== "propertyNames") segments.push(child);
    const field = joinField(segments);
    let rule = e.keyword;
    const branch = composites
      .filter((c) => e.schemaPath.startsWith(c.path))
      .sort((a, b) => b.path.length - a.path.length)[0];
    if (branch) {
      const option = Number(e.schemaPath.slice(branch.path.length).split("/")[0]);
      if (Number.isInteger(option)) rule += `; ${branch.keyword} option ${option + 1}`;
    }
    const problem = { field, named: segments.length > 0, what: explain(e, segments.length > 1), rule };
    const id = JSON.stringify(problem);
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(problem);
  }
  return out;
}

/** Turns Ajv errors into `param "field": <what> (rule: <keyword>)` lines, one per distinct problem. */
export function describeAjvErrors(errors: readonly ErrorObject[], prefix = ""): string[] {
  return ajvProblems(errors, prefix).map((p) => `${p.named ? `param "${p.field}"` : "params"}: ${p.what} (rule: ${p.rule})`);
}

function explain(e: ErrorObject, nested: boolean): string {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case "type":
      return `must be ${String(p.type).split(",").join(" or ")}`;
    case "required":
    case "dependentRequired":
      return "is required";
    case "additionalProperties":
    case "unevaluatedProperties":
      return nested ? "is not a known field" : "is not a known parameter";
    case "minimum":
      return `must be >= ${p.limit}`;
    case "maximum":
      return `must be <= ${p.limit}`;
    case "exclusiveMinimum":
      return `must be > ${p.limit}`;
    case "exclusiveMaximum":
      return `must be < ${p.limit}`;
    case "minLength":
      return `must be at least ${plural(p.limit, "character")} long`;
    case "maxLength":
      return `must be at most ${plural(p.limit, "character")} long`;
    case "minItems":
      return `must have at least ${plural(p.limit, "item")}`;
    case "maxItems":
      return `must have at most ${plural(p.limit, "item")}`;
    case "pattern":
      return p.pattern === DURATION_PATTERN
        ? 'must be a duration such as "500ms", "30s", "5m" or "1h30m"'
        : `must match pattern "${String(p.pattern)}"`;
    case "enum":
      return `must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")}`;
    case "const":
      return `must be ${JSON.stringify(p.allowedValue)}`;
    case "format":
      return `must be a valid ${String(p.format)}`;
    case "oneOf":
      return p.passingSchemas ? "matches more than one of the allowed shapes" : "must match exactly one of the allowed shapes";
    case "anyOf":
      return "must match at least one of the allowed shapes";
    default:
      return e.message ?? `fails "${e.keyword}"`;
  }
}

/** min/max of a duration param are milliseconds; JSON Schema cannot say that, so it is checked here. */
function durationBoundProblems(schema: ParamSchema | undefined, values: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const [name, spec] of Object.entries(schema ?? {})) {
    const value = values[name];
    if (spec.type !== "duration" || typeof value !== "string") continue;
    if (spec.min === undefined && spec.max === undefined) continue;
    let ms: number;
    try {
      ms = parseDuration(value);
    } catch {
      continue; // already reported by the pattern rule
    }
    if (spec.min !== undefined && ms < spec.min) out.push(`param "${name}": must be >= ${formatDuration(spec.min)} (rule: minimum)`);
    if (spec.max !== undefined && ms > spec.max) out.push(`param "${name}": must be <= ${formatDuration(spec.max)} (rule: maximum)`);
  }
  return out;
}

function plural(n: unknown, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function splitPointer(pointer: string): string[] {
  if (!pointer) return [];
  return pointer
    .slice(1)
    .split("/")
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** Dotted path with [i] for items; an empty-named property is [""], so it is not mistaken for its parent. */
function joinField(segments: string[]): string {
  let out = "";
  for (const s of segments) {
    if (s === "") out += `[""]`;
    else if (/^\d+$/.test(s) && out) out += `[${s}]`;
    else out += out ? `.${s}` : s;
  }
  return out;
}
