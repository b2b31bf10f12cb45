import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { OngridError } from "./errors.ts";
import { createRegistry, effectiveClass } from "./registry.ts";
import type { SkillDefinition } from "./types.ts";
import { validateParams } from "./validate.ts";

/** A registry whose pino log lines are collected as parsed JSON. */
function capturingRegistry() {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: "debug" }, { write: (chunk: string) => void lines.push(JSON.parse(chunk)) });
  return { registry: createRegistry({ log }), lines };
}

function def(overrides: Partial<SkillDefinition> = {}): SkillDefinition {
  return {
    key: "probe_http",
    name: "Probe HTTP",
    description: "Fetch a URL and report status and latency. Use when a service looks unreachable.",
    class: "safe",
    execute: async () => ({ ok: true }),
    ...overrides,
  };
}

function thrown(fn: () => unknown): OngridError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(OngridError);
    return err as OngridError;
  }
  throw new Error("expected an OngridError");
}

describe("createRegistry", () => {
  it("refuses a duplicate key with already_exists naming the key", () => {
    const { registry } = capturingRegistry();
    registry.register(def());
    const err = thrown(() => registry.register(def({ name: "Other" })));
    expect(err.code).toBe("already_exists");
    expect(err.message).toBe('skill "probe_http" is already registered');
    expect(registry.get("probe_http")?.meta.name).toBe("Probe HTTP");
  });

  it("defaults an omitted class to safe and logs a warning naming the skill", () => {
    const { registry, lines } = capturingRegistry();
    const { class: _omitted, ...noClass } = def({ key: "host_load" });
    const skill = registry.register(noClass as SkillDefinition);
    expect(skill.meta.class).toBe("safe");
    expect(skill.meta.classDefaulted).toBe(true);
    const warnings = lines.filter((l) => l.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0].skill).toBe("host_load");
    expect(String(warnings[0].msg)).toContain('skill "host_load" does not declare a class; defaulting to "safe"');
  });

  it("does not warn when class is explicit, and defaults scope to host", () => {
    const { registry, lines } = capturingRegistry();
    const skill = registry.register(def());
    expect(lines.filter((l) => l.level === 40)).toHaveLength(0);
    expect(skill.meta.scope).toBe("host");
    expect(skill.meta.category).toBe("");
    expect(skill.meta.classDefaulted).toBeUndefined();
  });

  it.each(["ProbeHttp", "probe-http", "probe__http", "_probe", "probe_", "9probe", ""])("refuses key %j", (key) => {
    const err = thrown(() => createRegistry().register(def({ key })));
    expect(err.code).toBe("invalid_argument");
    expect(err.message).toContain(`invalid skill key ${JSON.stringify(key)}: must be lower_snake`);
  });

  it.each([
    [{ name: " " }, 'skill "probe_http": name must be a non-empty string'],
    [{ description: "" }, 'skill "probe_http": description must be a non-empty string'],
    [{ class: "risky" as never }, 'skill "probe_http": class "risky" is not one of safe, mutating, dangerous'],
    [{ scope: "cluster" as never }, 'skill "probe_http": scope "cluster" is not one of host, manager'],
    [{ execute: undefined as never }, 'skill "probe_http": execute must be a function'],
    [{ params: {}, rawSchema: '{"type":"object"}' }, 'skill "probe_http": params and rawSchema are mutually exclusive'],
    [{ rawSchema: "{type: object}" }, 'skill "probe_http": rawSchema is not valid JSON'],
    [{ rawSchema: "[]" }, 'skill "probe_http": rawSchema must be a JSON object'],
    [{ rawSchema: '{"type":"array"}' }, 'skill "probe_http": rawSchema must have "type": "object"'],
    [{ rawSchema: '{"type":"object","properties":{"a":{"type":"strng"}}}' }, 'skill "probe_http": invalid JSON Schema'],
    [{ params: { limit: { type: "integer", description: "l", min: 5, max: 1 } } }, 'skill "probe_http", param "limit": min (5) is greater than max (1)'],
  ] as [Partial<SkillDefinition>, string][])("refuses %j at registration", (overrides, message) => {
    const registry = createRegistry();
    const err = thrown(() => registry.register(def(overrides)));
    expect(err.code).toBe("invalid_argument");
    expect(err.message).toContain(message);
    expect(registry.size).toBe(0);
  });

  it("keeps a raw schema byte for byte and validates against its parsed form", () => {
    const raw = `{
  "additionalProperties" :false,
\t"type":   "object",
  "required": [ "targets" ],
  "properties": {
    "targets": { "type": "array", "minItems": 1,
       "items": { "type": "object", "required": ["host"], "additionalProperties": false,
                  "properties": { "port": {"type":"integer","default":443}, "host": {"type": "string"} } } },
    "check": { "oneOf": [ { "const": "http" }, { "type": "object", "required": ["tcp"], "properties": {"tcp": {"type": "boolean"}} } ] }
  }
}   `;
    const skill = createRegistry().register(def({ key: "multi_probe", rawSchema: raw }));
    expect(skill.meta.rawSchema).toBe(raw);
    expect(skill.jsonSchema).toEqual(JSON.parse(raw));
    expect(skill.meta.params).toEqual({});
    expect(validateParams(skill, { targets: [{ host: "a" }], check: "http" })).toEqual({ targets: [{ host: "a", port: 443 }], check: "http" });
    expect(validateParams(skill, { targets: [{ host: "a", port: 1 }], check: { tcp: true } }).check).toEqual({ tcp: true });
    expect(() => validateParams(skill, { targets: [] })).toThrow('param "targets": must have at least 1 item (rule: minItems)');
    expect(() => validateParams(skill, { targets: [{ host: "a" }], check: "ftp" })).toThrow('param "check": must match exactly one of the allowed shapes (rule: oneOf)');
  });

  it("derives jsonSchema from declarative params", () => {
    const skill = createRegistry().register(def({ params: { url: { type: "string", description: "URL", required: true } } }));
    expect(skill.jsonSchema).toEqual({
      type: "object",
      properties: { url: { type: "string", description: "URL" } },
      required: ["url"],
      additionalProperties: false,
    });
    expect(skill.meta.rawSchema).toBeUndefined();
  });

  it('compile: "lazy" defers the validator and the default checks to the first call, with the same schema', () => {
    const bad = def({ params: { port: { type: "integer", description: "Port", min: 1, max: 10, default: 99 } } });
    // Eager (the default): a default outside its own range fails at registration.
    expect(thrown(() => createRegistry().register(bad)).message).toContain("default 99");
    // Lazy (edge builtins on the compiled agent): registration does not compile anything, so the
    // same definition registers; its schema is built exactly as the eager path builds it.
    const lazy = createRegistry().register(bad, { compile: "lazy" });
    expect(lazy.jsonSchema).toEqual({ type: "object", properties: { port: { type: "integer", description: "Port", minimum: 1, maximum: 10, default: 99 } }, additionalProperties: false });
    // ...and params are still validated, on first use.
    const good = createRegistry().register(def({ params: { port: { type: "integer", description: "Port", min: 1, max: 10, default: 5 } } }), { compile: "lazy" });
    expect(validateParams(good, {})).toEqual({ port: 5 });
    expect(thrown(() => validateParams(good, { port: 11 })).message).toContain("port");
  });

  it("lists sorted by key with filters, and unregisters", () => {
    const registry = createRegistry();
    registry.register(def({ key: "web_search", scope: "manager", category: "search" }));
    registry.register(def({ key: "restart_service", class: "mutating" }));
    registry.register(def({ key: "probe_dns", category: "network" }));
    registry.register(def({ key: "probe_http", category: "network" }));
    expect(registry.list().map((s) => s.meta.key)).toEqual(["probe_dns", "probe_http", "restart_service", "web_search"]);
    expect(registry.list({ scope: "manager" }).map((s) => s.meta.key)).toEqual(["web_search"]);
    expect(registry.list({ class: "mutating" }).map((s) => s.meta.key)).toEqual(["restart_service"]);
    expect(registry.list({ category: "network", scope: "host" }).map((s) => s.meta.key)).toEqual(["probe_dns", "probe_http"]);
    expect(registry.size).toBe(4);
    expect(registry.unregister("probe_dns")).toBe(true);
    expect(registry.unregister("probe_dns")).toBe(false);
    expect(registry.has("probe_dns")).toBe(false);
    expect(registry.size).toBe(3);
    expect(registry.getOrThrow("probe_http").meta.key).toBe("probe_http");
    const err = thrown(() => registry.getOrThrow("nope_missing"));
    expect(err.code).toBe("not_found");
    // a key can be registered again after unregister (pack rescan)
    registry.register(def({ key: "probe_dns" }));
    expect(registry.has("probe_dns")).toBe(true);
  });

  it("freezes registered metadata so no caller can change a skill's class", () => {
    const skill = createRegistry().register(def());
    expect(() => {
      (skill.meta as { class: string }).class = "dangerous";
    }).toThrow(TypeError);
  });
});

describe("effectiveClass", () => {
  const exec = createRegistry().register(
    def({
      key: "host_exec",
      class: "dangerous",
      params: { command: { type: "string", description: "Command", required: true } },
      riskForArgs: (p) => (String(p.command).startsWith("df") ? "safe" : String(p.command).startsWith("mkfs") ? "dangerous" : "mutating"),
    }),
  );

  it("uses riskForArgs when the skill has one", () => {
    expect(exec.meta.dynamicRisk).toBe(true);
    expect(effectiveClass(exec, { command: "df -h" })).toBe("safe");
    expect(effectiveClass(exec, { command: "systemctl restart nginx" })).toBe("mutating");
    expect(effectiveClass(exec, { command: "mkfs.ext4 /dev/sda" })).toBe("dangerous");
  });

  it("uses the static class otherwise", () => {
    const skill = createRegistry().register(def({ class: "mutating" }));
    expect(skill.meta.dynamicRisk).toBe(false);
    expect(effectiveClass(skill, {})).toBe("mutating");
  });

  it("treats a failing or nonsensical classifier as dangerous", () => {
    const registry = createRegistry();
    const throwing = registry.register(def({ key: "a_b", riskForArgs: () => { throw new Error("bug"); } }));
    const nonsense = registry.register(def({ key: "c_d", riskForArgs: () => "harmless" as never }));
    expect(effectiveClass(throwing, {})).toBe("dangerous");
    expect(effectiveClass(nonsense, {})).toBe("dangerous");
  });
});
