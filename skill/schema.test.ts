import { describe, expect, it } from "vitest";
import { DURATION_PATTERN } from "./duration.ts";
import { OngridError } from "./errors.ts";
import { paramsToJsonSchema } from "./schema.ts";
import type { ParamSchema } from "./types.ts";

describe("paramsToJsonSchema", () => {
  it("converts every param type with its constraints, in declaration order", () => {
    const schema = paramsToJsonSchema(
      {
        query: { type: "string", description: "What to search for", required: true, min: 1, max: 200, pattern: "^\\S" },
        limit: { type: "integer", description: "Max results", default: 10, min: 1, max: 50 },
        ratio: { type: "number", description: "Sample ratio", min: 0, max: 1 },
        verbose: { type: "boolean", description: "More detail", default: false },
        mode: { type: "enum", description: "Mode", values: ["fast", "full"], default: "fast" },
        window: { type: "duration", description: "Look-back", default: "5m" },
        hosts: { type: "string_list", description: "Hosts", min: 1, max: 10, pattern: "^[a-z0-9.-]+$" },
      },
      "web_search",
    );
    expect(schema).toEqual({
      type: "object",
      properties: {
        query: { type: "string", description: "What to search for", minLength: 1, maxLength: 200, pattern: "^\\S" },
        limit: { type: "integer", description: "Max results", minimum: 1, maximum: 50, default: 10 },
        ratio: { type: "number", description: "Sample ratio", minimum: 0, maximum: 1 },
        verbose: { type: "boolean", description: "More detail", default: false },
        mode: { type: "string", description: "Mode", enum: ["fast", "full"], default: "fast" },
        window: { type: "string", description: "Look-back", pattern: DURATION_PATTERN, default: "5m" },
        hosts: {
          type: "array",
          description: "Hosts",
          items: { type: "string", pattern: "^[a-z0-9.-]+$" },
          minItems: 1,
          maxItems: 10,
        },
      },
      required: ["query"],
      additionalProperties: false,
    });
    expect(Object.keys(schema.properties as object)).toEqual(["query", "limit", "ratio", "verbose", "mode", "window", "hosts"]);
  });

  it("gives an empty object schema for no params, without a required list", () => {
    expect(paramsToJsonSchema({}, "host_load")).toEqual({ type: "object", properties: {}, additionalProperties: false });
  });

  const refusals: [string, ParamSchema, RegExp][] = [
    ["enum without values", { mode: { type: "enum", description: "m" } }, /non-empty "values"/],
    ["enum with empty values", { mode: { type: "enum", description: "m", values: [] } }, /non-empty "values"/],
    ["duplicate enum values", { mode: { type: "enum", description: "m", values: ["a", "a"] } }, /unique/],
    ["min > max", { limit: { type: "integer", description: "l", min: 10, max: 1 } }, /min \(10\) is greater than max \(1\)/],
    ["default above max", { limit: { type: "integer", description: "l", min: 1, max: 50, default: 100 } }, /default 100 does not satisfy.*must be <= 50 \(rule: maximum\)/],
    ["default of the wrong type", { limit: { type: "integer", description: "l", default: "10" } }, /default "10" does not satisfy.*must be integer \(rule: type\)/],
    ["default outside the enum", { mode: { type: "enum", description: "m", values: ["a", "b"], default: "c" } }, /must be one of "a", "b" \(rule: enum\)/],
    ["bad duration default", { window: { type: "duration", description: "w", default: "5 minutes" } }, /default "5 minutes" does not satisfy.*duration/],
    ["duration default above max", { window: { type: "duration", description: "w", max: 60_000, default: "5m" } }, /default "5m" is above max 1m/],
    ["list default item failing pattern", { hosts: { type: "string_list", description: "h", pattern: "^[a-z]+$", default: ["ok", "NO"] } }, /param "hosts\[1\]": must match pattern/],
    ["invalid regex", { host: { type: "string", description: "h", pattern: "([a-z" } }, /pattern "\(\[a-z" is not a valid regular expression/],
    ["unknown type", { x: { type: "uuid" as never, description: "x" } }, /unknown type "uuid"/],
    ["typo in a spec field", { limit: { type: "integer", description: "l", maximum: 5 } as never }, /unknown spec field "maximum"/],
    ["required with a default", { q: { type: "string", description: "q", required: true, default: "x" } }, /required param cannot have a default/],
    ["pattern on an integer", { n: { type: "integer", description: "n", pattern: "^1" } }, /pattern only applies to string/],
    ["values on a string", { s: { type: "string", description: "s", values: ["a"] } }, /"values" only applies to enum/],
    ["min on a boolean", { b: { type: "boolean", description: "b", min: 1 } }, /min does not apply to boolean/],
    ["fractional length", { s: { type: "string", description: "s", max: 2.5 } }, /non-negative integer/],
    ["bad param name", { "Bad-Name": { type: "string", description: "s" } }, /name must be lower_snake/],
  ];
  it.each(refusals)("refuses %s, naming the skill and the param", (_label, params, message) => {
    let caught: unknown;
    try {
      paramsToJsonSchema(params, "demo_skill");
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(OngridError);
    const e = caught as OngridError;
    expect(e.code).toBe("invalid_argument");
    expect(e.message).toMatch(/^skill "demo_skill", param "[^"]+": /);
    expect(e.message).toContain(`param "${Object.keys(params)[0]}"`);
    expect(e.message).toMatch(message);
  });
});
