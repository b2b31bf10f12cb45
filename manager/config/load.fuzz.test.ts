/**
 * Property-based tests (issue 11): random config files and ONGRID_* environments. loadConfig either
 * returns a config or throws an OngridError("invalid_argument") naming each bad key with its rule;
 * it never throws another type, and never quotes a secret-bearing value it refuses.
 * FUZZ_RUNS and FUZZ_SEED tune and reproduce a run.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { stringify } from "yaml";
import { afterAll, describe, expect, it } from "vitest";
import { OngridError } from "../../skill/errors.ts";
import { loadConfig } from "./load.ts";
import { CONFIG_SCHEMA, type ManagerConfig } from "./schema.ts";

const numRuns = Number(process.env.FUZZ_RUNS ?? 150);
const seed = Number(process.env.FUZZ_SEED ?? 20_251_101);
const opts = { numRuns, seed };

const dir = mkdtempSync(join(tmpdir(), "ongrid-config-fuzz-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let seq = 0;
function writeConfig(content: string | Uint8Array): string {
  const file = join(dir, `c${++seq}.yaml`);
  writeFileSync(file, content);
  return file;
}

interface Leaf {
  key: string;
  path: string[];
  type: "string" | "integer" | "boolean";
  env: string;
  enum?: readonly string[];
}
function leaves(schema: any, path: string[] = []): Leaf[] {
  if (schema.type === "object") return Object.entries(schema.properties).flatMap(([k, s]) => leaves(s, [...path, k]));
  return [{ key: path.join("."), path, type: schema.type, env: schema.env, ...(schema.enum ? { enum: schema.enum } : {}) }];
}
/** Scalar keys, each with its environment variable (mcp.upstreams, a list set by the file only, has its own property below). */
const LEAVES = leaves(CONFIG_SCHEMA).filter((l) => l.env);
const SECTIONS = Object.entries(CONFIG_SCHEMA.properties)
  .filter(([, s]) => s.type === "object")
  .map(([k]) => k);
/** Keys whose values are, or may carry, secrets: a refusal must not quote them. */
const SECRET_KEYS = ["credentials.key", "model.api_key", "database_url", "skills.send_message.webhook_url"];
const leafOf = (key: string) => LEAVES.find((l) => l.key === key)!;

/** Runs loadConfig; a throw must be an OngridError("invalid_argument") whose every line names a key and a rule. */
function load(opts: Parameters<typeof loadConfig>[0]): { config?: ManagerConfig; message?: string } {
  try {
    return { config: loadConfig(opts) };
  } catch (err) {
    expect(err, String(err)).toBeInstanceOf(OngridError);
    const e = err as OngridError;
    expect(e.code).toBe("invalid_argument");
    if (e.message.startsWith("invalid config:\n")) {
      const lines = e.message.slice("invalid config:\n".length).split("\n");
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line, e.message).toMatch(/^ {2}\S(?:.*\S)?: .+\(rule: [a-zA-Z_]+/s);
    } else {
      expect(e.message).toMatch(/^config file .+: .+\(rule: [a-z_]+\)|^config file .+: cannot read it: /s);
    }
    return { message: e.message };
  }
}

const get = (o: any, path: string[]) => path.reduce((acc, k) => (acc && typeof acc === "object" ? acc[k] : undefined), o);
function setIn(o: Record<string, any>, path: string[], v: unknown): void {
  let cur = o;
  for (const p of path.slice(0, -1)) cur = cur[p] && typeof cur[p] === "object" && !Array.isArray(cur[p]) ? cur[p] : (cur[p] = {});
  cur[path[path.length - 1]] = v;
}

// ---------- generators ----------

const word = fc.stringMatching(/^[a-z][a-z0-9_]{0,11}$/);
const nonInteger = fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Number.isInteger(n));
function wrongValue(leaf: Leaf): fc.Arbitrary<unknown> {
  const collections = [fc.array(fc.integer(), { maxLength: 2 }), fc.dictionary(word, fc.integer(), { minKeys: 1, maxKeys: 2 }), fc.constant(null)];
  if (leaf.type === "string") return fc.oneof(fc.integer(), nonInteger, fc.boolean(), ...collections);
  if (leaf.type === "integer") return fc.oneof(fc.string({ maxLength: 10 }), nonInteger, fc.boolean(), ...collections);
  return fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), ...collections);
}

/** A file of real keys with wrong-typed values, unknown keys and sections that are not mappings. */
const badFile = fc
  .record({
    wrong: fc.uniqueArray(fc.constantFrom(...LEAVES), { minLength: 0, maxLength: 6, selector: (l) => l.key }).chain((ls) =>
      fc.tuple(...ls.map((l) => wrongValue(l).map((v) => ({ leaf: l, value: v })))),
    ),
    unknownTop: fc.uniqueArray(word.filter((w) => !(w in CONFIG_SCHEMA.properties)), { maxLength: 3 }),
    unknownInSection: fc.uniqueArray(fc.tuple(fc.constantFrom(...SECTIONS), word), { maxLength: 3, selector: ([s, w]) => `${s}.${w}` }),
    notMapping: fc.option(fc.tuple(fc.constantFrom(...SECTIONS), fc.oneof(fc.integer(), fc.string({ maxLength: 5 }), fc.array(fc.integer(), { maxLength: 2 })))),
  })
  .filter((f) => f.wrong.length + f.unknownTop.length + f.unknownInSection.length + (f.notMapping ? 1 : 0) > 0);

const RIGHT: Record<string, fc.Arbitrary<unknown>> = {
  string: fc.string({ maxLength: 20 }),
  integer: fc.integer(),
  boolean: fc.boolean(),
};
const envValue = (leaf: Leaf) =>
  fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.constantFrom(" 12 ", "-1", "0", "1", "65536", "1e3", "0x10", "yes", "NO", " true ", "maybe", "5s", "0s", "99999999999h", "30s1m", "http://x", "postgres://u:p@h/d"),
    ...(leaf.enum ? [fc.constantFrom(...leaf.enum)] : []),
  );
const env = fc.uniqueArray(fc.constantFrom(...LEAVES), { maxLength: 8, selector: (l) => l.env }).chain((ls) => fc.tuple(...ls.map((l) => envValue(l).map((v) => [l, v] as const))));

const secret = fc.stringMatching(/^[A-Za-z0-9]{6,20}$/).map((s) => `s3cr3t-TOKEN-${s}`);

// ---------- properties ----------

describe("loadConfig fuzz", () => {
  it("a file with wrong-typed values, unknown keys and non-mapping sections: refused, naming each bad key and its rule", () => {
    fc.assert(
      fc.property(badFile, (f) => {
        const doc: Record<string, any> = {};
        for (const { leaf, value } of f.wrong) setIn(doc, leaf.path, value);
        for (const k of f.unknownTop) doc[k] = 1;
        for (const [s, k] of f.unknownInSection) setIn(doc, [s, k], "x");
        if (f.notMapping) doc[f.notMapping[0]] = f.notMapping[1];
        const { message } = load({ env: {}, file: writeConfig(stringify(doc)) });
        expect(message, JSON.stringify(doc)).toBeDefined();
        for (const { leaf } of f.wrong) {
          // A section replaced by a non-mapping hides the keys inside it.
          if (f.notMapping && leaf.path[0] === f.notMapping[0]) continue;
          expect(message).toContain(`  ${leaf.key}: must be ${leaf.type} (rule: type; set by file `);
        }
        for (const k of f.unknownTop) expect(message).toContain(`  ${k}: is not a known key (rule: additionalProperties; set by file `);
        for (const [s, k] of f.unknownInSection) {
          if (f.notMapping && s === f.notMapping[0]) continue;
          if (Object.hasOwn((CONFIG_SCHEMA.properties as any)[s].properties, k)) continue;
          expect(message).toContain(`  ${s}.${k}: is not a known key (rule: additionalProperties`);
        }
        if (f.notMapping) expect(message).toContain(`  ${f.notMapping[0]}: must be object (rule: type`);
      }),
      opts,
    );
  });

  it("random values for real environment variables: a config that holds them, or an OngridError naming each bad key, its rule and the variable", () => {
    fc.assert(
      fc.property(env, (pairs) => {
        const vars = Object.fromEntries(pairs.map(([l, v]) => [l.env, v]));
        const { config, message } = load({ env: vars });
        for (const [leaf, raw] of pairs) {
          if (raw === "") continue;
          const t = raw.trim();
          if (leaf.type === "integer" && !/^-?\d+$/.test(t)) {
            expect(message).toContain(`  ${leaf.key}: must be integer (rule: type; set by ${leaf.env}, got `);
          } else if (leaf.type === "boolean" && !["true", "1", "yes", "false", "0", "no"].includes(t.toLowerCase())) {
            expect(message).toContain(`  ${leaf.key}: must be true or false (rule: type; set by ${leaf.env}, got `);
          } else if (leaf.enum && !leaf.enum.includes(raw)) {
            expect(message).toContain(`  ${leaf.key}: must be one of ${leaf.enum.join(", ")} (rule: enum; set by ${leaf.env})`);
          } else if (config) {
            const want = leaf.type === "integer" ? Number(t) : leaf.type === "boolean" ? ["true", "1", "yes"].includes(t.toLowerCase()) : raw;
            expect(get(config, leaf.path)).toBe(want);
          }
        }
      }),
      opts,
    );
  });

  it("random values for file keys and env together: never anything but a config or an OngridError", () => {
    const anyDoc = fc.dictionary(
      fc.oneof(fc.constantFrom(...SECTIONS, "data_dir", "database_url", "log_level"), word),
      fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.dictionary(fc.oneof(word, fc.constantFrom(...LEAVES.map((l) => l.path[l.path.length - 1]))), fc.oneof(fc.jsonValue({ maxDepth: 1 }), ...Object.values(RIGHT)))),
    );
    fc.assert(
      fc.property(anyDoc, env, (doc, pairs) => {
        load({ env: Object.fromEntries(pairs.map(([l, v]) => [l.env, v])), file: writeConfig(stringify(doc)) });
      }),
      opts,
    );
  });

  it("non-YAML garbage, binary bytes, alias cycles and ONGRID_CONFIG paths: an OngridError, never another exception", () => {
    const bits = fc.constantFrom("server:", "  port: 1", "&a x", "*a", "*nope", "a: &a {b: *a}", "&r {server: *r}", "<<: *a", "!!binary aGk=", "[1, 2", "key: 'open", "\t- x", "%YAML 1.1", "---", "? [a]\n: b", "__proto__: {polluted: 1}", "server: {__proto__: {port: 1}}");
    const text = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.uint8Array({ maxLength: 300 }),
      fc.array(fc.oneof(bits, fc.string({ maxLength: 20 })), { maxLength: 8 }).map((ls) => ls.join("\n")),
    );
    fc.assert(
      fc.property(text, fc.option(fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom("/", "/nonexistent/x.yaml", "\u0000", dir))), (content, configPath) => {
        const file = writeConfig(content);
        load(configPath === null ? { env: {}, file } : { env: { ONGRID_CONFIG: configPath } });
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      }),
      opts,
    );
  });

  it("a secret given to a secret-bearing key that refuses it is never quoted back (file, broken YAML or environment)", () => {
    const refused = (key: string, s: string): fc.Arbitrary<unknown> => {
      switch (key) {
        case "database_url":
          return fc.constantFrom(`mysql://app:${s}@db:3306/x`, `${s}`, ["postgres://u:" + s + "@h/d"]);
        case "skills.send_message.webhook_url":
          return fc.constantFrom(`https://bot:${s}@hooks.example.com/x`, `https://hooks.example.com:99999/${s}`, `ftp://hooks.example.com/${s}`, `https://${s}@h/x`, { url: s });
        default:
          return fc.constantFrom([s], { value: s }, 42);
      }
    };
    const how = fc.constantFrom("file", "broken-yaml", "env");
    fc.assert(
      fc.property(fc.constantFrom(...SECRET_KEYS), secret, how, fc.context(), (key, s, via, ctx) =>
        fc.assert(
          fc.property(refused(key, s), (value) => {
            const leaf = leafOf(key);
            let opts: Parameters<typeof loadConfig>[0];
            if (via === "env") {
              if (typeof value !== "string") return;
              opts = { env: { [leaf.env]: value } };
            } else if (via === "file") {
              const doc: Record<string, any> = {};
              setIn(doc, leaf.path, value);
              opts = { env: {}, file: writeConfig(stringify(doc)) };
            } else {
              // The secret's line is broken YAML (an unterminated quote, a stray flow bracket or a duplicate key).
              const indent = "  ".repeat(leaf.path.length - 1);
              const head = leaf.path.slice(0, -1).map((p, i) => `${"  ".repeat(i)}${p}:`).join("\n");
              const last = leaf.path[leaf.path.length - 1];
              const broken = [`${indent}${last}: "${s}`, `${indent}${last}: [${s}`, `${indent}${last}: ${s}\n${indent}${last}: ${s}`][s.length % 3];
              opts = { env: {}, file: writeConfig(`${head ? `${head}\n` : ""}${broken}\n`) };
            }
            const { config, message } = load(opts);
            ctx.log(`${key} via ${via}: ${message}`);
            expect(config, `${key}=${JSON.stringify(value)} via ${via} was accepted`).toBeUndefined();
            expect(message).not.toContain("s3cr3t-TOKEN");
            expect(message).not.toContain(s.slice("s3cr3t-TOKEN-".length));
          }),
          { numRuns: 3, seed },
        ),
      ),
      { ...opts, numRuns: Math.max(10, Math.ceil(numRuns / 3)) },
    );
  });

  it("random mcp.upstreams entries: the entries as written (with their defaults), or an OngridError naming mcp.upstreams[i] and never quoting an env or header value", () => {
    const value = fc.oneof(secret, fc.record({ credential: fc.oneof(word, fc.constant("Not A Name")), prefix: fc.option(fc.constant("Bearer "), { nil: undefined }) }, { requiredKeys: ["credential"] }), fc.integer(), fc.constant(null));
    const entry = fc.record(
      {
        name: fc.oneof(word, fc.constantFrom("Web", "1x", "a".repeat(40), "")),
        command: fc.oneof(fc.array(fc.oneof(word, fc.constant("")), { maxLength: 3 }), fc.constant("node x.js")),
        env: fc.dictionary(fc.oneof(fc.constantFrom("API_TOKEN", "HOME", "1BAD", "A-B"), word), value, { maxKeys: 2 }),
        cwd: fc.constantFrom("/tmp", ""),
        url: fc.constantFrom("http://127.0.0.1:9/mcp", "https://h.example/mcp", "ftp://h/x", "http://u:pw@h/x", "http://[::1"),
        headers: fc.dictionary(fc.constantFrom("X-Api-Key", "x-api-key", "Authorization", "Accept", "Bad Header"), value, { maxKeys: 2 }),
        credential: fc.oneof(word, fc.constant("Bad Name")),
        trust_annotations: fc.oneof(fc.boolean(), fc.constant("yes")),
        classes: fc.dictionary(fc.oneof(word, fc.constant("Echo-It")), fc.constantFrom("safe", "mutating", "dangerous", "risky"), { maxKeys: 2 }),
        timeout: fc.constantFrom("5s", "0s", "soon", "99999h", "9999999999999h"),
        enabled: fc.boolean(),
        typo: fc.constant(1),
      },
      { requiredKeys: [] },
    );
    const goodValue = fc.oneof(secret, fc.record({ credential: word, prefix: fc.option(fc.constant("Bearer "), { nil: undefined }) }, { requiredKeys: ["credential"] }));
    const common = { trust_annotations: fc.boolean(), classes: fc.dictionary(fc.oneof(word, fc.constant("Echo-It")), fc.constantFrom("safe", "mutating", "dangerous"), { maxKeys: 2 }), timeout: fc.constantFrom("5s", "1m"), enabled: fc.boolean() };
    const good = fc.oneof(
      fc.record({ name: word, command: fc.array(word, { minLength: 1, maxLength: 3 }), env: fc.dictionary(fc.constantFrom("API_TOKEN", "HOME", "_X"), goodValue, { maxKeys: 2 }), cwd: fc.constant("/tmp"), ...common }, { requiredKeys: ["name", "command"] }),
      fc.record({ name: word, url: fc.constantFrom("http://127.0.0.1:9/mcp", "https://h.example/mcp"), headers: fc.dictionary(fc.constantFrom("X-Api-Key", "X-Team"), goodValue, { maxKeys: 2 }), credential: word, ...common }, { requiredKeys: ["name", "url"] }),
    );
    const lists = fc.oneof(fc.uniqueArray(good, { maxLength: 3, selector: (e) => e.name }), fc.array(fc.oneof(good, entry), { maxLength: 4 }));
    fc.assert(
      fc.property(lists, (entries: Array<Record<string, unknown>>) => {
        const { config, message } = load({ env: {}, file: writeConfig(stringify({ mcp: { upstreams: entries } })) });
        const secrets = JSON.stringify(entries).match(/s3cr3t-TOKEN-[A-Za-z0-9]+/g) ?? [];
        if (message !== undefined) {
          for (const line of message.split("\n").slice(1)) expect(line, message).toMatch(/^ {2}mcp\.upstreams(\[\d+\](\.[^:]+)?)?: .+\(rule: [a-zA-Z_]+/);
          for (const s of secrets) expect(message).not.toContain(s);
          return;
        }
        expect(config!.mcp.upstreams).toEqual(entries.map((e) => ({ trust_annotations: false, enabled: true, ...e })));
        for (const [i, e] of entries.entries()) {
          expect(e.command === undefined, `entry ${i} has exactly one of command and url`).toBe(e.url !== undefined);
          expect(entries.findIndex((o) => o.name === e.name)).toBe(i);
        }
      }),
      opts,
    );
  });

  // Counterexamples found by the properties above, kept as examples.
  it("found: a YAML syntax error on a secret's line quoted the line (and the secret) back; only the parser's first line is kept now", () => {
    for (const text of ['model:\n  api_key: "s3cr3t-TOKEN-abc\n', "credentials:\n  key: [s3cr3t-TOKEN-abc\n", "model:\n  api_key: s3cr3t-TOKEN-abc\n  api_key: x\n"]) {
      const { message } = load({ env: {}, file: writeConfig(text) });
      expect(message).toMatch(/: not valid YAML: .* \(rule: yaml\)$/);
      expect(message).not.toContain("s3cr3t");
    }
  });

  it("found: a YAML alias inside its own anchor made loadConfig throw RangeError (stack overflow); it is now an OngridError", () => {
    for (const text of ["server: &s {x: *s}\n", "&r {server: *r}\n"]) {
      expect(load({ env: {}, file: writeConfig(text) }).message).toMatch(/a YAML alias refers to a node that contains it \(rule: yaml\)$/);
    }
  });

  it("found: the tls pair, default_timeout > max_timeout and unparseable duration refusals named no rule; they do now", () => {
    expect(load({ env: { ONGRID_TLS_CERT: "/x.pem" } }).message).toMatch(/server\.tls_key: tls_cert and tls_key must be set together \(rule: together\)/);
    expect(load({ env: { ONGRID_SKILL_TIMEOUT: "1h" } }).message).toMatch(/skills\.default_timeout: must not exceed skills\.max_timeout \(10m\) \(rule: maximum\)/);
    expect(load({ env: { ONGRID_SKILL_MAX_TIMEOUT: "99999999999h" } }).message).toMatch(/skills\.max_timeout: invalid duration .*too large \(rule: duration\)/);
  });

  it('found: an unknown key "" was reported as "(root)", one ending in a space was invisible and "a/b~c" showed as "a~1b~0c"; they are now named', () => {
    expect(load({ env: {}, file: writeConfig('"": 1\n') }).message).toContain('  "": is not a known key (rule: additionalProperties;');
    expect(load({ env: {}, file: writeConfig('server: {" ": false}\n') }).message).toContain('  server." ": is not a known key (rule: additionalProperties;');
    expect(load({ env: {}, file: writeConfig('server: {"a/b~c": 1}\n') }).message).toContain("  server.a/b~c: is not a known key (rule: additionalProperties;");
  });
});
