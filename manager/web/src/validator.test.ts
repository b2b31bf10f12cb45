/** The console's form validator: RJSF's error shape from @cfworker/json-schema, without eval. */
import { describe, expect, it } from "vitest";
import type { RJSFSchema } from "@rjsf/utils";
import { formValidator, validate } from "./validator.ts";

const schema: RJSFSchema = {
  type: "object",
  additionalProperties: false,
  required: ["host", "port"],
  $defs: { port: { type: "integer", minimum: 1, maximum: 65535 } },
  properties: {
    host: { type: "string", minLength: 1 },
    port: { $ref: "#/$defs/port" },
    mode: { enum: ["fast", "thorough"] },
    targets: { type: "array", items: { type: "object", required: ["name"], properties: { name: { type: "string", pattern: "^[a-z]+$" }, ports: { type: "array", items: { $ref: "#/$defs/port" } } } } },
    want5: { type: "array", contains: { const: 5 } },
  },
};

const errs = (data: unknown) => validate(schema, data).errors.map((e) => `${e.property} ${e.message}`);

describe("console form validator", () => {
  it("accepts valid data with no errors", () => {
    expect(validate(schema, { host: "db", port: 5432, targets: [{ name: "a", ports: [1, 2] }], want5: [1, 5] })).toEqual({ errors: [] });
  });

  it("names each missing required field, at top level and inside array items", () => {
    expect(errs({ targets: [{ ports: [] }] })).toEqual([".host is a required property", ".port is a required property", ".targets.0.name is a required property"]);
  });

  it("reads the bound through a $ref, at the field and inside nested arrays", () => {
    expect(errs({ host: "db", port: 70000 })).toEqual([".port must be <= 65535"]);
    expect(errs({ host: "db", port: 1, targets: [{ name: "a", ports: [0] }] })).toEqual([".targets.0.ports.0 must be >= 1"]);
  });

  it("reports enum, pattern, type and unknown properties in Ajv's words", () => {
    expect(errs({ host: "db", port: 1, mode: "slow" })).toEqual(['.mode must be one of: "fast", "thorough"']);
    expect(errs({ host: "db", port: 1, targets: [{ name: "A1" }] })).toEqual(['.targets.0.name must match pattern "^[a-z]+$"']);
    expect(errs({ host: 7, port: 1 })).toEqual([".host must be string"]);
    expect(errs({ host: "db", port: 1, extra: true })).toEqual([".extra is not an allowed property"]);
  });

  it("never passes invalid data without an error: a failed contains is reported", () => {
    const r = validate(schema, { host: "db", port: 1, want5: [1] });
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0].property).toBe(".want5");
  });

  it("gives RJSF an error schema that puts each message on its field", () => {
    const { errorSchema, errors } = formValidator.validateFormData({ host: "", port: 0 }, schema);
    expect(errors).toHaveLength(2);
    expect(errorSchema.host?.__errors).toEqual(["must NOT have fewer than 1 characters"]);
    expect(errorSchema.port?.__errors).toEqual(["must be >= 1"]);
  });

  it("picks oneOf options with isValid, $refs resolved against the root schema", () => {
    const root: RJSFSchema = { $defs: { n: { type: "integer" } }, oneOf: [{ $ref: "#/$defs/n" }, { type: "string" }] };
    expect(formValidator.isValid({ $ref: "#/$defs/n" }, 3, root)).toBe(true);
    expect(formValidator.isValid({ $ref: "#/$defs/n" }, "x", root)).toBe(false);
  });
});
