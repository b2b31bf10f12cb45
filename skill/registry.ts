import { pino, type Logger } from "pino";
import { OngridError } from "./errors.ts";
import { paramsToJsonSchema } from "./schema.ts";
import { SKILL_CLASSES, type ParamSchema, type Skill, type SkillClass, type SkillDefinition, type SkillMetadata, type SkillScope } from "./types.ts";
import { validatorFor } from "./validate.ts";

/** lower_snake: a letter first, then letters/digits, single underscores between segments. */
export const SKILL_KEY_PATTERN = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
const SCOPES: ReadonlySet<string> = new Set<SkillScope>(["host", "manager"]);

/** Narrows list() to one scope, class and/or category. */
export interface SkillFilter {
  scope?: SkillScope;
  class?: SkillClass;
  category?: string;
}

/** The one table every surface (LLM tools, RPC, console, gate, audit) reads skills from (A2). */
export interface SkillRegistry {
  /** Validates and normalises a definition, compiles its validator (unless opts.compile is "lazy") and adds it; throws on any defect. */
  register(def: SkillDefinition, opts?: BuildOptions): Skill;
  get(key: string): Skill | undefined;
  /** Like get, but a missing key is an OngridError("not_found") with a hint. */
  getOrThrow(key: string): Skill;
  has(key: string): boolean;
  /** Registered skills matching the filter, sorted by key. */
  list(filter?: SkillFilter): Skill[];
  /** Removes a skill (pack rescans); true when it was registered. */
  unregister(key: string): boolean;
  readonly size: number;
}

/** Options of createRegistry; without a logger, warnings go to stderr. */
export interface RegistryOptions {
  log?: Logger;
}

/** Creates an empty registry; the edge and the manager each hold one. */
export function createRegistry(opts: RegistryOptions = {}): SkillRegistry {
  const log = opts.log ?? pino({ name: "skill-registry" }, pino.destination(2));
  const skills = new Map<string, Skill>();
  return {
    register(def, buildOpts) {
      const skill = buildSkill(def, buildOpts);
      const key = skill.meta.key;
      if (skills.has(key)) {
        throw new OngridError(
          "already_exists",
          `skill "${key}" is already registered`,
          "Skill keys must be unique: rename one of the two skills, or unregister the existing one first.",
        );
      }
      if (skill.meta.classDefaulted) {
        log.warn({ skill: key }, `skill "${key}" does not declare a class; defaulting to "safe" — set class explicitly`);
      }
      skills.set(key, skill);
      return skill;
    },
    get: (key) => skills.get(key),
    getOrThrow(key) {
      const skill = skills.get(key);
      if (!skill) {
        throw new OngridError("not_found", `unknown skill "${key}"`, "Call ListSkills to see the available skill keys.");
      }
      return skill;
    },
    has: (key) => skills.has(key),
    list(filter = {}) {
      return [...skills.values()]
        .filter(
          (s) =>
            (filter.scope === undefined || s.meta.scope === filter.scope) &&
            (filter.class === undefined || s.meta.class === filter.class) &&
            (filter.category === undefined || s.meta.category === filter.category),
        )
        .sort((a, b) => (a.meta.key < b.meta.key ? -1 : a.meta.key > b.meta.key ? 1 : 0));
    },
    unregister: (key) => skills.delete(key),
    get size() {
      return skills.size;
    },
  };
}

/** The class the gate must use for this call (A6): riskForArgs when present, else the static class. */
export function effectiveClass(skill: Skill, params: Record<string, unknown>): SkillClass {
  if (!skill.riskForArgs) return skill.meta.class;
  try {
    const c = skill.riskForArgs(params);
    // A classifier that fails or answers nonsense must not lower the bar.
    return SKILL_CLASSES.has(c) ? c : "dangerous";
  } catch {
    return "dangerous";
  }
}

/** How buildSkill treats a definition's JSON Schema. */
export interface BuildOptions {
  /**
   * "now" (default): compile the params validator and check every default at build time, so a
   * broken schema fails at registration. "lazy": compile on the first call instead — only for
   * definitions shipped with ongrid (the edge builtins), which the manager, its tests and
   * `ongrid skills lint` build eagerly; on the compiled edge agent, where JavaScriptCore runs
   * without its JIT, compiling them took ≈ 120 ms of start-up (docs/performance.md, "Fleet").
   */
  compile?: "now" | "lazy";
}

/** Checks a definition and turns it into a frozen Skill; exported for tools that lint without a registry. */
export function buildSkill(def: SkillDefinition, opts: BuildOptions = {}): Skill {
  const eager = opts.compile !== "lazy";
  if (typeof def !== "object" || def === null) {
    throw new OngridError("invalid_argument", "a skill definition must be an object", "Export defineSkill({...}) from the skill file.");
  }
  const key = def.key;
  if (typeof key !== "string" || !SKILL_KEY_PATTERN.test(key)) {
    throw new OngridError(
      "invalid_argument",
      `invalid skill key ${JSON.stringify(key)}: must be lower_snake (a-z and 0-9, segments joined by single underscores, starting with a letter)`,
      'Name the skill <domain>_<verb>[_<noun>], e.g. "probe_http" or "host_processes".',
    );
  }
  const fail = (what: string, hint = "Fix the skill definition."): never => {
    throw new OngridError("invalid_argument", `skill "${key}": ${what}`, hint);
  };
  if (typeof def.name !== "string" || def.name.trim() === "") fail("name must be a non-empty string");
  if (typeof def.description !== "string" || def.description.trim() === "") {
    fail("description must be a non-empty string", "Say what the skill does and when to use it.");
  }
  if (def.class !== undefined && !SKILL_CLASSES.has(def.class)) fail(`class ${JSON.stringify(def.class)} is not one of safe, mutating, dangerous`);
  if (def.scope !== undefined && !SCOPES.has(def.scope)) fail(`scope ${JSON.stringify(def.scope)} is not one of host, manager`);
  if (def.category !== undefined && typeof def.category !== "string") fail("category must be a string");
  if (def.resultPreview !== undefined && typeof def.resultPreview !== "string") fail("resultPreview must be a string");
  if (typeof def.execute !== "function") fail("execute must be a function (ctx, params) => Promise<result>");
  if (def.riskForArgs !== undefined && typeof def.riskForArgs !== "function") fail("riskForArgs must be a function (params) => class");
  if (def.params !== undefined && def.rawSchema !== undefined) {
    fail("params and rawSchema are mutually exclusive", "Keep rawSchema only for shapes ParamSchema cannot express; otherwise use params.");
  }

  let jsonSchema: Record<string, unknown>;
  let params: ParamSchema;
  if (def.rawSchema !== undefined) {
    jsonSchema = parseRawSchema(def.rawSchema, fail);
    params = Object.freeze({});
  } else {
    params = Object.freeze(Object.fromEntries(Object.entries(def.params ?? {}).map(([n, s]) => [n, Object.freeze({ ...s })])));
    jsonSchema = paramsToJsonSchema(params, key, { checkDefaults: eager });
  }

  const meta: SkillMetadata = {
    key,
    name: def.name,
    description: def.description,
    class: def.class ?? "safe",
    scope: def.scope ?? "host",
    category: def.category ?? "",
    params,
    ...(def.rawSchema !== undefined ? { rawSchema: def.rawSchema } : {}),
    ...(def.resultPreview !== undefined ? { resultPreview: def.resultPreview } : {}),
    ...(def.lintWaivers !== undefined ? { lintWaivers: { ...def.lintWaivers } } : {}),
    ...(def.riskClassifier !== undefined ? { riskClassifier: def.riskClassifier } : {}),
    dynamicRisk: Boolean(def.riskForArgs),
    ...(def.class === undefined ? { classDefaulted: true } : {}),
  };
  const skill: Skill = Object.freeze({
    meta: Object.freeze(meta),
    jsonSchema: deepFreeze(jsonSchema),
    execute: def.execute as Skill["execute"],
    ...(def.riskForArgs ? { riskForArgs: def.riskForArgs as Skill["riskForArgs"] } : {}),
  });
  if (eager) {
    try {
      validatorFor(skill);
    } catch (err) {
      const e = err as OngridError;
      fail(e.message, e.hint);
    }
  }
  return skill;
}

function parseRawSchema(raw: unknown, fail: (what: string, hint?: string) => never): Record<string, unknown> {
  const hint = 'rawSchema must be JSON text of an object schema, e.g. {"type":"object","properties":{...}}.';
  if (typeof raw !== "string") return fail("rawSchema must be a string of JSON text", hint);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    return fail(`rawSchema is not valid JSON: ${(err as Error).message}`, hint);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return fail("rawSchema must be a JSON object", hint);
  if ((parsed as Record<string, unknown>).type !== "object") return fail('rawSchema must have "type": "object" at the top level', hint);
  return parsed as Record<string, unknown>;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
