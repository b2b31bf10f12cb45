import { DURATION_PATTERN, formatDuration, parseDuration } from "./duration.ts";
import { CREDENTIAL_NAME_PATTERN, CREDENTIAL_PARAM_NOTE } from "./credential.ts";
import { OngridError } from "./errors.ts";
import type { ParamSchema, ParamSpec, ParamType } from "./types.ts";
import { compileValidator, describeAjvErrors } from "./validate.ts";

const PARAM_TYPES: ReadonlySet<ParamType> = new Set([
  "string",
  "integer",
  "number",
  "boolean",
  "enum",
  "duration",
  "string_list",
  "credential",
]);
const SPEC_KEYS: ReadonlySet<string> = new Set(["type", "description", "required", "default", "min", "max", "pattern", "values"]);
const PARAM_NAME = /^[a-z][a-z0-9_]*$/;

export interface SchemaBuildOptions {
  /**
   * Check every default against its param's own spec (compiles a validator per default; default
   * true). Off only for definitions shipped with ongrid, whose defaults their tests check.
   */
  checkDefaults?: boolean;
}

/**
 * Converts a declarative ParamSchema into the JSON Schema (draft 2020-12 vocabulary, no `$schema`
 * key so LLM tool definitions stay lean) that the LLM, the RPC surface and the validator share (A4).
 * Nonsense in the declaration fails here, naming the skill and the param.
 */
export function paramsToJsonSchema(params: ParamSchema, skillKey = "(unnamed)", opts: SchemaBuildOptions = {}): Record<string, unknown> {
  if (typeof params !== "object" || params === null || Array.isArray(params)) {
    throw new OngridError(
      "invalid_argument",
      `skill "${skillKey}": params must be an object of name → spec`,
      "Declare params as { name: { type, description, ... } }.",
    );
  }
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const [name, spec] of Object.entries(params)) {
    properties[name] = paramToJsonSchema(skillKey, name, spec, opts.checkDefaults ?? true);
    if (spec.required === true) required.push(name);
  }
  return {
    type: "object",
    properties,
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
  };
}

function paramToJsonSchema(skillKey: string, name: string, spec: ParamSpec, checkDefaults: boolean): Record<string, unknown> {
  const fail = (what: string): never => {
    throw new OngridError(
      "invalid_argument",
      `skill "${skillKey}", param "${name}": ${what}`,
      "Fix the param declaration of the skill (see ParamSpec in skill/types.ts).",
    );
  };
  if (!PARAM_NAME.test(name)) fail("name must be lower_snake (a-z, 0-9, _; starting with a letter)");
  // Every params object inherits these: a default would never apply and the executor would read Object's member.
  if (name in Object.prototype) fail(`name "${name}" is reserved (a member of every JavaScript object); choose another`);
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) return fail("spec must be an object");
  for (const k of Object.keys(spec)) if (!SPEC_KEYS.has(k)) fail(`unknown spec field "${k}" (allowed: ${[...SPEC_KEYS].join(", ")})`);
  const type = spec.type;
  if (!PARAM_TYPES.has(type)) fail(`unknown type ${JSON.stringify(type)} (allowed: ${[...PARAM_TYPES].join(", ")})`);
  if (spec.description !== undefined && typeof spec.description !== "string") fail("description must be a string");
  if (spec.required !== undefined && typeof spec.required !== "boolean") fail("required must be true or false");
  if (spec.required === true && spec.default !== undefined) fail("a required param cannot have a default (the default would never apply); drop one");

  if (type === "enum") {
    const values = spec.values;
    if (!Array.isArray(values) || values.length === 0) fail('an enum needs a non-empty "values" list');
    for (const v of values as unknown[]) if (typeof v !== "string" || v === "") fail("enum values must be non-empty strings");
    if (new Set(values).size !== values!.length) fail("enum values must be unique");
  } else if (spec.values !== undefined) {
    fail(`"values" only applies to enum params, not ${type}`);
  }

  for (const bound of ["min", "max"] as const) {
    const b = spec[bound];
    if (b === undefined) continue;
    if (typeof b !== "number" || !Number.isFinite(b)) fail(`${bound} must be a finite number`);
    if (type === "boolean" || type === "enum" || type === "credential") fail(`${bound} does not apply to ${type} params`);
    if ((type === "string" || type === "string_list") && (!Number.isInteger(b) || b < 0)) {
      fail(`${bound} bounds the ${type === "string" ? "length" : "item count"} and must be a non-negative integer`);
    }
    if (type === "duration" && b < 0) fail(`${bound} of a duration is in milliseconds and must be >= 0`);
  }
  if (spec.min !== undefined && spec.max !== undefined && spec.min > spec.max) fail(`min (${spec.min}) is greater than max (${spec.max})`);

  if (spec.pattern !== undefined) {
    if (type !== "string" && type !== "string_list") fail(`pattern only applies to string and string_list params, not ${type}`);
    if (typeof spec.pattern !== "string" || spec.pattern === "") fail("pattern must be a non-empty string");
    try {
      new RegExp(spec.pattern, "u");
    } catch (err) {
      fail(`pattern ${JSON.stringify(spec.pattern)} is not a valid regular expression: ${(err as Error).message}`);
    }
  }

  const out: Record<string, unknown> = {};
  switch (type) {
    case "string":
      out.type = "string";
      if (spec.min !== undefined) out.minLength = spec.min;
      if (spec.max !== undefined) out.maxLength = spec.max;
      if (spec.pattern !== undefined) out.pattern = spec.pattern;
      break;
    case "integer":
    case "number":
      out.type = type;
      if (spec.min !== undefined) out.minimum = spec.min;
      if (spec.max !== undefined) out.maximum = spec.max;
      break;
    case "boolean":
      out.type = "boolean";
      break;
    case "enum":
      out.type = "string";
      out.enum = [...(spec.values ?? [])];
      break;
    case "duration":
      // min/max of a duration (ms) are enforced by validateParams, not expressible here.
      out.type = "string";
      out.pattern = DURATION_PATTERN;
      break;
    case "credential":
      // Only the name ever reaches the model; a name is never a secret, so it may be shown and audited.
      out.type = "string";
      out.pattern = CREDENTIAL_NAME_PATTERN;
      break;
    case "string_list":
      out.type = "array";
      out.items = spec.pattern !== undefined ? { type: "string", pattern: spec.pattern } : { type: "string" };
      if (spec.min !== undefined) out.minItems = spec.min;
      if (spec.max !== undefined) out.maxItems = spec.max;
      break;
  }
  if (spec.default !== undefined) {
    if (checkDefaults) checkDefault(name, spec, out, fail);
    out.default = structuredClone(spec.default);
  }
  if (type === "credential") {
    const text = typeof spec.description === "string" ? spec.description.trim() : "";
    return { type: out.type, description: text ? `${text} ${CREDENTIAL_PARAM_NOTE}` : CREDENTIAL_PARAM_NOTE.slice(1, -1), ...out };
  }
  if (typeof spec.description === "string" && spec.description !== "") {
    return { type: out.type, description: spec.description, ...out };
  }
  return out;
}

function checkDefault(name: string, spec: ParamSpec, schema: Record<string, unknown>, fail: (what: string) => never): void {
  let value: unknown;
  try {
    value = structuredClone(spec.default);
  } catch {
    fail("default must be plain JSON data");
  }
  const validate = compileValidator(schema);
  if (!validate(value)) {
    fail(`default ${JSON.stringify(spec.default)} does not satisfy the param's own spec: ${describeAjvErrors(validate.errors ?? [], name).join("; ")}`);
  }
  if (spec.type === "duration") {
    const ms = parseDuration(value as string);
    if (spec.min !== undefined && ms < spec.min) fail(`default ${JSON.stringify(spec.default)} is below min ${formatDuration(spec.min)}`);
    if (spec.max !== undefined && ms > spec.max) fail(`default ${JSON.stringify(spec.default)} is above max ${formatDuration(spec.max)}`);
  }
}
