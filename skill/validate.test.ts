import { describe, expect, it } from "vitest";
import { OngridError } from "./errors.ts";
import { buildSkill } from "./registry.ts";
import type { SkillDefinition } from "./types.ts";
import { compileValidator, validateParams, validatorFor } from "./validate.ts";

const base = {
  name: "Search",
  description: "Search the web. Use when you need public documentation.",
  class: "safe",
  execute: async () => ({}),
} satisfies Partial<SkillDefinition>;

const search = buildSkill({
  ...base,
  key: "web_search",
  params: {
    query: { type: "string", description: "Query", required: true, min: 2, max: 20 },
    limit: { type: "integer", description: "Max results", default: 10, min: 1, max: 50 },
    mode: { type: "enum", description: "Mode", values: ["a", "b"] },
    host: { type: "string", description: "Host", pattern: "^[a-z]+$" },
    hosts: { type: "string_list", description: "Hosts", pattern: "^[a-z]+$", max: 2 },
    window: { type: "duration", description: "Window", default: "5m", min: 1_000, max: 3_600_000 },
    exact: { type: "boolean", description: "Exact match" },
  },
});

/** The message of the OngridError thrown by validateParams. */
function failure(params: unknown, skill = search): string {
  try {
    validateParams(skill, params);
  } catch (err) {
    expect(err).toBeInstanceOf(OngridError);
    expect((err as OngridError).code).toBe("invalid_argument");
    expect((err as OngridError).hint).toContain(`Call GetSkill for "${skill.meta.key}"`);
    return (err as OngridError).message;
  }
  throw new Error("validateParams accepted invalid params");
}

describe("validateParams (declarative params)", () => {
  it("returns a copy with defaults applied and leaves the input alone", () => {
    const input = { query: "nginx" };
    const out = validateParams(search, input);
    expect(out).toEqual({ query: "nginx", limit: 10, window: "5m" });
    expect(input).toEqual({ query: "nginx" });
    expect(out).not.toBe(input);
  });

  it.each([
    [{ query: "ok", limit: "5" }, 'param "limit": must be integer (rule: type)'],
    [{ query: "ok", limit: 2.5 }, 'param "limit": must be integer (rule: type)'],
    [{}, 'param "query": is required (rule: required)'],
    [{ query: "ok", limit: 0 }, 'param "limit": must be >= 1 (rule: minimum)'],
    [{ query: "ok", limit: 51 }, 'param "limit": must be <= 50 (rule: maximum)'],
    [{ query: "x" }, 'param "query": must be at least 2 characters long (rule: minLength)'],
    [{ query: "x".repeat(21) }, 'param "query": must be at most 20 characters long (rule: maxLength)'],
    [{ query: "ok", host: "Web-01" }, 'param "host": must match pattern "^[a-z]+$" (rule: pattern)'],
    [{ query: "ok", foo: 1 }, 'param "foo": is not a known parameter (rule: additionalProperties)'],
    [{ query: "ok", mode: "c" }, 'param "mode": must be one of "a", "b" (rule: enum)'],
    [{ query: "ok", hosts: ["web", "DB"] }, 'param "hosts[1]": must match pattern "^[a-z]+$" (rule: pattern)'],
    [{ query: "ok", hosts: ["web", 7] }, 'param "hosts[1]": must be string (rule: type)'],
    [{ query: "ok", hosts: "web" }, 'param "hosts": must be array (rule: type)'],
    [{ query: "ok", hosts: ["a", "b", "c"] }, 'param "hosts": must have at most 2 items (rule: maxItems)'],
    [{ query: "ok", window: "5 minutes" }, 'param "window": must be a duration such as "500ms", "30s", "5m" or "1h30m" (rule: pattern)'],
    [{ query: "ok", window: "2h" }, 'param "window": must be <= 1h (rule: maximum)'],
    [{ query: "ok", window: "500ms" }, 'param "window": must be >= 1s (rule: minimum)'],
    [{ query: "ok", exact: "yes" }, 'param "exact": must be boolean (rule: type)'],
  ])("%j fails with %s", (params, expected) => {
    const message = failure(params);
    expect(message).toContain(expected);
    expect(message.startsWith('invalid params for skill "web_search": ')).toBe(true);
  });

  it("names every failing field in one message", () => {
    const message = failure({ limit: 99, mode: "z", bogus: true });
    expect(message).toContain('param "query": is required (rule: required)');
    expect(message).toContain('param "limit": must be <= 50 (rule: maximum)');
    expect(message).toContain('param "mode": must be one of "a", "b" (rule: enum)');
    expect(message).toContain('param "bogus": is not a known parameter (rule: additionalProperties)');
  });

  it.each([null, [], "query=x", 42])("refuses non-object params %j", (params) => {
    expect(failure(params)).toBe('invalid params for skill "web_search": params: must be a JSON object (rule: type)');
  });

  it("treats absent params as an empty object", () => {
    const noParams = buildSkill({ ...base, key: "host_load" });
    expect(validateParams(noParams, undefined)).toEqual({});
  });

  it("compiles once per skill", () => {
    expect(validatorFor(search)).toBe(validatorFor(search));
  });
});

describe("validateParams (raw schema)", () => {
  const raw = buildSkill({
    ...base,
    key: "multi_probe",
    rawSchema: JSON.stringify({
      type: "object",
      required: ["targets"],
      additionalProperties: false,
      properties: {
        targets: {
          type: "array",
          minItems: 1,
          items: {
            type: "object",
            additionalProperties: false,
            required: ["host"],
            properties: { host: { type: "string" }, port: { type: "integer", default: 443 } },
          },
        },
        check: {
          oneOf: [
            { type: "object", required: ["http_path"], properties: { http_path: { type: "string" } }, additionalProperties: false },
            { type: "object", required: ["tcp_banner"], properties: { tcp_banner: { type: "boolean" } }, additionalProperties: false },
          ],
        },
      },
    }),
  });

  it("accepts a valid array of objects and applies nested defaults", () => {
    expect(validateParams(raw, { targets: [{ host: "a" }, { host: "b", port: 80 }], check: { tcp_banner: true } })).toEqual({
      targets: [{ host: "a", port: 443 }, { host: "b", port: 80 }],
      check: { tcp_banner: true },
    });
  });

  it("names nested fields by path", () => {
    const message = failure({ targets: [{ host: "a" }, { port: "x", extra: 1 }] }, raw);
    expect(message).toContain('param "targets[1].host": is required (rule: required)');
    expect(message).toContain('param "targets[1].port": must be integer (rule: type)');
    expect(message).toContain('param "targets[1].extra": is not a known field (rule: additionalProperties)');
  });

  it("explains a oneOf failure and which option each sub-problem belongs to", () => {
    const message = failure({ targets: [{ host: "a" }], check: {} }, raw);
    expect(message).toContain('param "check": must match exactly one of the allowed shapes (rule: oneOf)');
    expect(message).toContain('param "check.http_path": is required (rule: required; oneOf option 1)');
    expect(message).toContain('param "check.tcp_banner": is required (rule: required; oneOf option 2)');
  });
});

describe("compileValidator", () => {
  it("refuses unknown keywords (strict mode) with a clear error", () => {
    expect(() => compileValidator({ type: "object", properties: { a: { type: "string", minimun: 1 } } })).toThrow(
      /invalid JSON Schema: .*unknown keyword: "minimun"/,
    );
  });

  it("compiles draft-07 schemas that declare it", () => {
    const validate = compileValidator({
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: { a: { type: "integer" } },
    });
    expect(validate({ a: 1 })).toBe(true);
    expect(validate({ a: "x" })).toBe(false);
  });

  it("allows the same $id to be compiled again (pack rescans)", () => {
    const schema = { $id: "https://ongrid.example/schemas/probe", type: "object" };
    compileValidator(schema);
    expect(() => compileValidator({ ...schema })).not.toThrow();
  });
});
