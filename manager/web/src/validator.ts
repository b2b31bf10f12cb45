/**
 * The form validator for react-jsonschema-form, on @cfworker/json-schema. RJSF's stock validator
 * (Ajv) compiles schemas with `new Function`, which the console's Content-Security-Policy forbids
 * (no 'unsafe-eval'); cfworker's validator interprets the schema instead. Messages follow Ajv's
 * wording so they read the same as the manager's own refusals.
 */
import { Validator, type OutputUnit, type Schema, type SchemaDraft } from "@cfworker/json-schema";
import { createErrorHandler, toErrorSchema, unwrapErrorHandler, validationDataMerge, getDefaultFormState, type CustomValidator, type ErrorTransformer, type RJSFSchema, type RJSFValidationError, type UiSchema, type ValidationData, type ValidatorType } from "@rjsf/utils";

/** Keywords that only report that something below them failed; the failure below is the one to show. */
const CONTAINERS = new Set(["properties", "items", "prefixItems", "additionalItems", "additionalProperties", "unevaluatedProperties", "unevaluatedItems", "patternProperties", "allOf", "$ref", "$dynamicRef", "dependentSchemas", "if", "then", "else", "contains", "propertyNames"]);

/** Keywords whose message does not quote the schema's value. */
const VALUELESS = new Set(["required", "false", "uniqueItems"]);

function draftOf(schema: RJSFSchema): SchemaDraft {
  const s = String(schema.$schema ?? "");
  if (s.includes("draft-04")) return "4";
  if (s.includes("draft-07") || s.includes("draft-06")) return "7";
  if (s.includes("2019-09")) return "2019-09";
  return "2020-12";
}

/** Unescapes one JSON-pointer token. */
function token(raw: string): string {
  let t = raw;
  try {
    t = decodeURIComponent(raw);
  } catch {
    /* keep it as written */
  }
  return t.replace(/~1/g, "/").replace(/~0/g, "~");
}

/**
 * The value at a keywordLocation ("#/properties/port/maximum") inside the schema. A location that
 * passes through a "$ref" ("#/properties/port/$ref/maximum") continues in the schema the local
 * reference points at; anything it cannot follow gives undefined.
 */
function at(root: unknown, pointer: string, depth = 0): unknown {
  let node: unknown = root;
  const tokens = pointer.replace(/^#\/?/, "").split("/").filter(Boolean).map(token);
  for (let i = 0; i < tokens.length; i++) {
    if (node === null || typeof node !== "object") return undefined;
    const next = (node as Record<string, unknown>)[tokens[i]];
    if (tokens[i] === "$ref" && typeof next === "string") {
      if (!next.startsWith("#") || depth > 16) return undefined;
      node = at(root, next, depth + 1);
      continue;
    }
    node = next;
  }
  return node;
}

function message(unit: OutputUnit, value: unknown): string {
  switch (unit.keyword) {
    case "required":
      return "is a required property";
    case "type":
      return `must be ${Array.isArray(value) ? value.join(" or ") : String(value)}`;
    case "minimum":
      return `must be >= ${value}`;
    case "maximum":
      return `must be <= ${value}`;
    case "exclusiveMinimum":
      return `must be > ${value}`;
    case "exclusiveMaximum":
      return `must be < ${value}`;
    case "minLength":
      return `must NOT have fewer than ${value} characters`;
    case "maxLength":
      return `must NOT have more than ${value} characters`;
    case "pattern":
      return `must match pattern "${value}"`;
    case "enum":
      return `must be one of: ${(value as unknown[]).map((v) => JSON.stringify(v)).join(", ")}`;
    case "const":
      return `must be equal to ${JSON.stringify(value)}`;
    case "format":
      return `must match format "${value}"`;
    case "minItems":
      return `must NOT have fewer than ${value} items`;
    case "maxItems":
      return `must NOT have more than ${value} items`;
    case "uniqueItems":
      return "must NOT have duplicate items";
    case "multipleOf":
      return `must be multiple of ${value}`;
    case "minProperties":
      return `must NOT have fewer than ${value} properties`;
    case "maxProperties":
      return `must NOT have more than ${value} properties`;
    case "false":
      return "is not an allowed property";
    default:
      return unit.error;
  }
}

/** "#/a/0/b" → ".a.0.b" (RJSF's property paths). */
function property(instanceLocation: string): string {
  return instanceLocation
    .replace(/^#/, "")
    .split("/")
    .filter(Boolean)
    .map((p) => "." + token(p))
    .join("");
}

/** Runs the schema and returns RJSF's error shape, innermost failures only. */
export function validate(schema: RJSFSchema, data: unknown): { errors: RJSFValidationError[]; validationError?: Error } {
  let units: OutputUnit[];
  try {
    units = new Validator(schema as Schema, draftOf(schema), false).validate(data).errors;
  } catch (err) {
    return { errors: [], validationError: err as Error };
  }
  const errors: RJSFValidationError[] = [];
  // A container keyword (properties, items, $ref, allOf…) reports that something below it failed;
  // that failure is the one to show. A container with nothing reported below it (contains, say)
  // is the failure itself and is kept, so an invalid form never comes back without an error.
  const below = (u: OutputUnit) => units.some((o) => o !== u && (o.keywordLocation.startsWith(u.keywordLocation + "/") || o.instanceLocation.startsWith(u.instanceLocation + "/")));
  for (const u of units) {
    if (CONTAINERS.has(u.keyword) && below(u)) continue;
    let prop = property(u.instanceLocation);
    let value = at(schema, u.keywordLocation);
    if (u.keyword === "required") {
      const missing = /property "(.*)"/.exec(u.error)?.[1];
      if (missing === undefined) continue;
      prop = `${prop}.${missing}`;
      value = missing;
    }
    // Without the keyword's value (a reference it could not follow) cfworker's own words serve.
    const msg = value === undefined && !VALUELESS.has(u.keyword) ? u.error : message(u, value);
    errors.push({ name: u.keyword, property: prop, message: msg, stack: `${prop.replace(/^\./, "") || "value"} ${msg}`, schemaPath: u.keywordLocation, params: {} });
  }
  return { errors };
}

/** RJSF's ValidatorType over validate(). */
export class FormValidator implements ValidatorType {
  rawValidation<Result = unknown>(schema: RJSFSchema, formData?: unknown): { errors?: Result[]; validationError?: Error } {
    const { errors, validationError } = validate(schema, formData);
    return { errors: errors as Result[], validationError };
  }

  validateFormData(formData: unknown, schema: RJSFSchema, customValidate?: CustomValidator, transformErrors?: ErrorTransformer, uiSchema?: UiSchema): ValidationData<unknown> {
    const { errors: raw, validationError } = validate(schema, formData);
    let errors = validationError ? [...raw, { stack: `the form's schema is invalid: ${validationError.message}` }] : raw;
    if (transformErrors) errors = transformErrors(errors, uiSchema);
    const errorSchema = toErrorSchema(errors);
    if (!customValidate) return { errors, errorSchema };
    const full = getDefaultFormState(this, schema, formData, schema, true);
    const handler = customValidate(full, createErrorHandler(full), uiSchema, errorSchema);
    return validationDataMerge({ errors, errorSchema }, unwrapErrorHandler(handler));
  }

  isValid(schema: RJSFSchema, formData: unknown, rootSchema: RJSFSchema): boolean {
    // Sub-schemas (oneOf/anyOf options) may $ref the root's definitions: validate with them in scope.
    const scoped = { ...schema, $defs: { ...(rootSchema.$defs as object), ...(schema.$defs as object) }, definitions: { ...(rootSchema.definitions as object), ...(schema.definitions as object) } } as RJSFSchema;
    const r = validate(scoped, formData);
    return !r.validationError && r.errors.length === 0;
  }
}

/** The one validator instance the console's forms share. */
export const formValidator = new FormValidator();
