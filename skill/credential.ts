/**
 * Credential params (G5): the model and every caller name a stored credential; the manager puts
 * the secret's value in its place only when the call runs, so names are all anyone ever sees.
 */
import type { Skill } from "./types.ts";

/** The rule for credential names, as JSON Schema/ECMAScript pattern text. */
export const CREDENTIAL_NAME_PATTERN = "^[a-z][a-z0-9_.-]{0,63}$";
/** CREDENTIAL_NAME_PATTERN compiled. */
export const CREDENTIAL_NAME = new RegExp(CREDENTIAL_NAME_PATTERN);
/** Appended to a credential param's description in its JSON Schema (what the model reads). */
export const CREDENTIAL_PARAM_NOTE = "(the name of a stored credential; its value is injected when the call runs)";
/** Largest credential value, in UTF-8 bytes. */
export const MAX_CREDENTIAL_VALUE_BYTES = 64 * 1024;

/** Names of the skill's params whose declared type is "credential" (none for raw-schema skills). */
export function credentialParams(skill: Skill): readonly string[] {
  let names = credentialNames.get(skill);
  if (!names) {
    names =
      skill.meta.rawSchema !== undefined
        ? []
        : Object.entries(skill.meta.params ?? {})
            .filter(([, spec]) => spec?.type === "credential")
            .map(([name]) => name);
    credentialNames.set(skill, names);
  }
  return names;
}

/** credentialParams per skill object (asked on every call). */
const credentialNames = new WeakMap<Skill, readonly string[]>();

const views = new WeakMap<Skill, Skill>();

/**
 * The skill as whoever runs it after injection must validate it: the same skill, except that its
 * credential params accept the injected VALUE (any non-empty string up to 64 KiB) instead of a
 * name. An edge re-validating an Execute frame uses `validateParams(withCredentialValues(skill), p)`;
 * the name pattern would refuse a real token or "user:password". Skills without credential params
 * are returned as they are. Cached per skill, so its validator compiles once.
 */
export function withCredentialValues(skill: Skill): Skill {
  const names = credentialParams(skill);
  if (names.length === 0) return skill;
  let view = views.get(skill);
  if (!view) {
    const schema = structuredClone(skill.jsonSchema) as Record<string, unknown> & { properties?: Record<string, Record<string, unknown>> };
    for (const name of names) {
      const prop = schema.properties?.[name];
      if (!prop) continue;
      delete prop.pattern;
      delete prop.default; // a default is a name: the manager has already applied and replaced it
      prop.minLength = 1;
      prop.maxLength = MAX_CREDENTIAL_VALUE_BYTES;
    }
    view = Object.freeze({ ...skill, jsonSchema: Object.freeze(schema) });
    views.set(skill, view);
  }
  return view;
}

/** A value injected into a call, and the name it was stored under. */
export interface InjectedSecret {
  name: string;
  value: string;
}

/** Shortest secret replaced inside longer strings; shorter ones are replaced only where a whole string equals them. */
export const MIN_SCRUB_LENGTH = 4;

interface Needle {
  text: string;
  marker: string;
}

/** Every spelling of a secret worth looking for: as is, URL-encoded and base64 (an HTTP Basic header). */
function needles(secrets: readonly InjectedSecret[]): { exact: Map<string, string>; inside: Needle[] } {
  const exact = new Map<string, string>();
  const inside: Needle[] = [];
  for (const { name, value } of secrets) {
    if (typeof value !== "string" || value === "") continue;
    const marker = `[credential:${name}]`;
    const forms = new Set([value, encodeURIComponent(value), Buffer.from(value, "utf8").toString("base64")]);
    for (const text of forms) {
      if (!exact.has(text)) exact.set(text, marker);
      if (value.length >= MIN_SCRUB_LENGTH) inside.push({ text, marker });
    }
  }
  // Longest first, so a secret containing another is replaced whole.
  inside.sort((a, b) => b.text.length - a.text.length);
  return { exact, inside };
}

/**
 * Deep copy of `value` in which every occurrence of a secret inside any string, object keys
 * included, becomes `[credential:<name>]`; the URL-encoded and base64 spellings (an HTTP Basic
 * header) are replaced too. Secrets shorter than 4 characters are replaced only where a whole
 * string equals them. Arrays and objects are copied (an Error becomes {name, message}), Dates are
 * copied, binary buffers are kept as they are, cycles become "[Circular]".
 */
export function scrubSecrets<T>(value: T, secrets: readonly InjectedSecret[]): T {
  const { exact, inside } = needles(secrets);
  const scrubString = (s: string): string => {
    const whole = exact.get(s);
    if (whole !== undefined) return whole;
    let out = s;
    for (const n of inside) if (out.includes(n.text)) out = out.split(n.text).join(n.marker);
    return out;
  };
  const stack = new Set<object>();
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return scrubString(v);
    if (typeof v !== "object" || v === null) return v;
    if (v instanceof Date) return new Date(v.getTime());
    if (v instanceof ArrayBuffer || ArrayBuffer.isView(v)) return v;
    if (stack.has(v)) return "[Circular]";
    stack.add(v);
    try {
      if (Array.isArray(v)) return v.map(walk);
      if (v instanceof Error) return { name: scrubString(v.name), message: scrubString(v.message) };
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        // defineProperty: an own "__proto__" key (JSON.parse makes those) stays a plain field.
        Object.defineProperty(out, scrubString(k), { value: walk(x), enumerable: true, writable: true, configurable: true });
      }
      return out;
    } finally {
      stack.delete(v);
    }
  };
  return walk(value) as T;
}
