/** Loads the manager configuration: defaults < config file < environment < command-line flags, refused at start naming the key. */
import { readFileSync } from "node:fs";
import type { ErrorObject } from "ajv";
import { parse as parseYaml } from "yaml";
import { OngridError } from "../../skill/errors.ts";
import { parseBoolean } from "../../skill/boolean.ts";
import { parseDuration, DURATION_PATTERN } from "../../skill/duration.ts";
import { CONFIG_SCHEMA, type ManagerConfig } from "./schema.ts";
import { upstreamProblems } from "./upstreams.ts";
import { urlProblem } from "./url.ts";
import { configValidator } from "./validator.ts";

/** Where configuration comes from. */
export interface LoadConfigOptions {
  /** YAML (or JSON) config file; also taken from ONGRID_CONFIG. */
  file?: string;
  env?: NodeJS.ProcessEnv;
  /** Values from command-line flags, by dotted key (e.g. "server.port"). */
  overrides?: Record<string, unknown>;
}

interface Leaf {
  path: string[];
  type: string;
  env?: string;
}


function leaves(schema: any, path: string[] = []): Leaf[] {
  if (schema.type === "object") {
    return Object.entries(schema.properties).flatMap(([k, s]) => leaves(s, [...path, k]));
  }
  return [{ path, type: schema.type, env: schema.env }];
}
const LEAVES = leaves(CONFIG_SCHEMA);

function setPath(obj: Record<string, any>, path: string[], value: unknown): void {
  let cur = obj;
  for (const p of path.slice(0, -1)) {
    if (typeof cur[p] !== "object" || cur[p] === null || Array.isArray(cur[p])) cur[p] = {};
    cur = cur[p];
  }
  cur[path[path.length - 1]] = value;
}

/** Environment and flag values are strings; integers are converted here, and a bad one is reported with the rest. */
function coerce(leaf: Leaf, raw: string, source: string, problems: string[]): unknown {
  if (leaf.type === "boolean") {
    const b = parseBoolean(raw);
    if (b !== undefined) return b;
    problems.push(`${leaf.path.join(".")}: must be true or false (rule: type; set by ${source}, got "${raw}")`);
    return undefined;
  }
  if (leaf.type !== "integer") return raw;
  if (!/^-?\d+$/.test(raw.trim())) {
    problems.push(`${leaf.path.join(".")}: must be integer (rule: type; set by ${source}, got "${raw}")`);
    return undefined;
  }
  return Number(raw.trim());
}

function readFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new OngridError("invalid_argument", `config file ${file}: cannot read it: ${(err as Error).message}`, "check --config / ONGRID_CONFIG");
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    // The first line only: the parser's excerpt of the offending line may hold a secret (api_key, a database password).
    throw new OngridError("invalid_argument", `config file ${file}: not valid YAML: ${(err as Error).message.split("\n")[0].replace(/:$/, "")} (rule: yaml)`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== "object" || Array.isArray(doc)) {
    throw new OngridError("invalid_argument", `config file ${file}: must be a mapping of keys to values (rule: type)`);
  }
  try {
    JSON.stringify(doc);
  } catch {
    // An alias inside its own anchor (`a: &a {b: *a}`) makes a cycle no key can hold.
    throw new OngridError("invalid_argument", `config file ${file}: a YAML alias refers to a node that contains it (rule: yaml)`);
  }
  return doc as Record<string, unknown>;
}

/** An instance path's segment as JSON Pointer spells it, decoded. */
const unescapePointer = (p: string): string => p.replace(/~1/g, "/").replace(/~0/g, "~");

/**
 * Where an Ajv error points and what to say of it: the deepest subschema on its schema path that
 * carries a `message` gives both (its place in the value and its words); without one, the error's
 * own place and Ajv's words.
 */
function locate(err: ErrorObject): { path: string[]; message?: string } {
  const path = err.instancePath.split("/").slice(1).map(unescapePointer);
  // The last step is the keyword that failed; the steps before it lead to the subschema that holds it.
  const steps = err.schemaPath.replace(/^#\/?/, "").split("/").map(unescapePointer).slice(0, -1);
  let node: any = CONFIG_SCHEMA;
  let depth = 0;
  let found: { depth: number; message: string } | undefined;
  for (let i = 0; i < steps.length && node && typeof node === "object"; i++) {
    const step = steps[i];
    if (step === "properties") {
      node = node.properties?.[steps[++i]];
      depth++;
    } else if (step === "items" || step === "additionalProperties") {
      node = node[step];
      depth++;
    } else if (step === "anyOf" || step === "oneOf" || step === "allOf") {
      node = node[step]?.[Number(steps[++i])];
    } else if (step === "propertyNames") {
      node = node.propertyNames;
    } else {
      break;
    }
    if (node && typeof node.message === "string") found = { depth, message: node.message };
  }
  return found ? { path: path.slice(0, found.depth), message: found.message } : { path };
}

/** A key path as people write it: dotted, with [i] for an array's items, odd names quoted. */
function showPath(path: readonly string[]): string {
  let node: any = CONFIG_SCHEMA;
  let out = "";
  for (const p of path) {
    if (node?.type === "array") {
      out += `[${p}]`;
      node = node.items;
      continue;
    }
    // A key that is empty or starts or ends with a space is quoted, so the message still shows which one.
    out += `${out ? "." : ""}${p === "" || p.trim() !== p ? JSON.stringify(p) : p}`;
    node = node?.properties?.[p] ?? (typeof node?.additionalProperties === "object" ? node.additionalProperties : undefined);
  }
  return out;
}

/** Where the value at `path` came from: its own source, an enclosing key's (a list set by the file), or a key inside it. */
function sourceOf(path: readonly string[], sources: Map<string, string>): string | undefined {
  for (let n = path.length; n > 0; n--) {
    const s = sources.get(path.slice(0, n).join("."));
    if (s) return s;
  }
  const key = path.join(".");
  return [...sources.entries()].find(([k]) => k.startsWith(key + "."))?.[1];
}

function describe(err: ErrorObject, sources: Map<string, string>): { at: string; line: string } {
  const { path, message } = locate(err);
  let what = message ?? err.message ?? "is invalid";
  if (!message && err.keyword === "additionalProperties") {
    path.push((err.params as { additionalProperty: string }).additionalProperty);
    what = "is not a known key";
  } else if (!message && err.keyword === "enum") {
    what = `must be one of ${(err.params as { allowedValues: string[] }).allowedValues.join(", ")}`;
  }
  const source = sourceOf(path, sources);
  const at = showPath(path) || "(root)";
  return { at: message ? at : "", line: `${at}: ${what} (rule: ${err.keyword}${source ? `; set by ${source}` : ""})` };
}

/** One line per problem; the errors of one value that has a schema message (the branches of an anyOf) make one line. */
function describeAll(errors: readonly ErrorObject[], sources: Map<string, string>): string[] {
  const lines: string[] = [];
  const said = new Set<string>();
  for (const err of errors) {
    const { at, line } = describe(err, sources);
    if (at && said.has(at)) continue;
    if (at) said.add(at);
    lines.push(line);
  }
  return lines;
}

/** Builds and validates the configuration; throws OngridError("invalid_argument") naming every bad key. */
export function loadConfig(opts: LoadConfigOptions = {}): ManagerConfig {
  const env = opts.env ?? process.env;
  const sources = new Map<string, string>();
  const file = opts.file ?? (env.ONGRID_CONFIG || undefined);
  const doc: Record<string, any> = file ? readFile(file) : {};
  if (file) {
    const mark = (o: any, p: string[]) => {
      if (o && typeof o === "object" && !Array.isArray(o)) for (const [k, v] of Object.entries(o)) mark(v, [...p, k]);
      else sources.set(p.join("."), `file ${file}`);
    };
    mark(doc, []);
  }
  const problems: string[] = [];
  for (const leaf of LEAVES) {
    const raw = leaf.env ? env[leaf.env] : undefined;
    if (raw === undefined || raw === "") continue;
    const value = coerce(leaf, raw, leaf.env!, problems);
    if (value !== undefined) setPath(doc, leaf.path, value);
    sources.set(leaf.path.join("."), leaf.env!);
  }
  for (const [key, value] of Object.entries(opts.overrides ?? {})) {
    if (value === undefined) continue;
    const leaf = LEAVES.find((l) => l.path.join(".") === key);
    if (!leaf) throw new OngridError("internal", `unknown config override ${key}`);
    const v = typeof value === "string" ? coerce(leaf, value, `flag for ${key}`, problems) : value;
    if (v !== undefined) setPath(doc, leaf.path, v);
    sources.set(key, `command-line flag`);
  }
  for (const [section, spec] of Object.entries(CONFIG_SCHEMA.properties)) if (spec.type === "object" && doc[section] === undefined) doc[section] = {};
  if (doc.skills && typeof doc.skills === "object" && doc.skills.web_search === undefined) doc.skills.web_search = {};
  const validate = configValidator();
  if (!validate(doc) || problems.length) {
    const lines = [...problems, ...describeAll(validate.errors ?? [], sources)];
    throw new OngridError("invalid_argument", `invalid config:\n  ${[...new Set(lines)].join("\n  ")}`, "see docs/config.md for every key");
  }
  const cfg = doc as unknown as ManagerConfig;
  checkRelations(cfg, sources);
  const upstreams = upstreamProblems(cfg.mcp.upstreams);
  if (upstreams.length) {
    const src = sources.get("mcp.upstreams");
    throw new OngridError("invalid_argument", `invalid config:\n  ${upstreams.map((l) => (src ? `${l} (set by ${src})` : l)).join("\n  ")}`, "see docs/mcp-upstreams.md for mcp.upstreams");
  }
  return cfg;
}

function checkRelations(cfg: ManagerConfig, sources: Map<string, string>): void {
  const bad = (key: string, msg: string): never => {
    const src = sources.get(key);
    throw new OngridError("invalid_argument", `invalid config:\n  ${key}: ${msg}${src ? ` (set by ${src})` : ""}`, "see docs/config.md for every key");
  };
  // The webhook URL often carries a token: checked here, whole, so send_message never fails on it at call
  // time (fetch's errors quote the URL); the message names the rule, never the value.
  const webhookUrl = cfg.skills.send_message?.webhook_url ?? ""; // the section is absent when nothing in it is set
  const hook = webhookUrl ? urlProblem(webhookUrl) : undefined;
  if (hook) bad("skills.send_message.webhook_url", `${hook.what} (rule: ${hook.rule})`);
  if (Boolean(cfg.server.tls_cert) !== Boolean(cfg.server.tls_key)) {
    bad(cfg.server.tls_cert ? "server.tls_key" : "server.tls_cert", "tls_cert and tls_key must be set together (rule: together)");
  }
  /** A duration key in ms; below `min` (1ms unless said) is refused. */
  const ms = (key: string, value: string, min = 1): number => {
    let n: number;
    try {
      n = parseDuration(value);
    } catch (err) {
      return bad(key, `${(err as Error).message} (rule: duration)`);
    }
    if (n < min) bad(key, `must be at least ${min}ms (rule: minimum)`);
    return n;
  };
  ms("skills.web_search.timeout", cfg.skills.web_search.timeout);
  const topology = ms("topology.refresh_interval", cfg.topology.refresh_interval, 0);
  if (topology > 0 && topology < 10_000) bad("topology.refresh_interval", "must be 0s (no schedule) or at least 10s (rule: minimum)");
  if (ms("tunnel.heartbeat_interval", cfg.tunnel.heartbeat_interval) < 100) bad("tunnel.heartbeat_interval", "must be at least 100ms (rule: minimum)");
  const hello = ms("tunnel.hello_timeout", cfg.tunnel.hello_timeout);
  if (hello < 100) bad("tunnel.hello_timeout", "must be at least 100ms (rule: minimum)");
  if (hello > 3_600_000) bad("tunnel.hello_timeout", "must be at most 1h (rule: maximum)");
  // Short enough that a dead manager's edges are seen offline soon, long enough to ride out a slow database.
  const lease = ms("server.lease_ttl", cfg.server.lease_ttl ?? "30s");
  if (lease < 3_000) bad("server.lease_ttl", "must be at least 3s (rule: minimum)");
  if (lease > 600_000) bad("server.lease_ttl", "must be at most 10m (rule: maximum)");
  const poll = ms("server.presence_poll", cfg.server.presence_poll ?? "1s");
  if (poll < 100) bad("server.presence_poll", "must be at least 100ms (rule: minimum)");
  if (poll > 60_000) bad("server.presence_poll", "must be at most 1m (rule: maximum)");
  // 0s turns the token cache off; longer than 5m would let a revoke made elsewhere lag too long.
  if (ms("server.token_cache", cfg.server.token_cache, 0) > 300_000) bad("server.token_cache", "must be at most 5m (rule: maximum)");
  const headers = ms("server.header_timeout", cfg.server.header_timeout ?? "10s");
  if (headers < 100) bad("server.header_timeout", "must be at least 100ms (rule: minimum)");
  if (headers > ms("server.request_timeout", cfg.server.request_timeout ?? "60s")) bad("server.header_timeout", "must not exceed server.request_timeout (rule: maximum)");
  if (ms("skills.default_timeout", cfg.skills.default_timeout) > ms("skills.max_timeout", cfg.skills.max_timeout)) {
    bad("skills.default_timeout", `must not exceed skills.max_timeout (${cfg.skills.max_timeout}) (rule: maximum)`);
  }
}

/** Lists every key with its default and environment variable, for docs and `--help`. */
export function configReference(): Array<{ key: string; type: string; default: unknown; env: string; description: string }> {
  const out: Array<{ key: string; type: string; default: unknown; env: string; description: string }> = [];
  const walk = (s: any, p: string[]) => {
    if (s.type === "object") for (const [k, v] of Object.entries(s.properties)) walk(v, [...p, k]);
    else out.push({ key: p.join("."), type: s.format ?? s.type, default: s.default, env: s.env ?? "", description: s.description });
  };
  walk(CONFIG_SCHEMA, []);
  return out;
}
