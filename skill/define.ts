import type { ParamSchema, ParamSpec, SkillDefinition } from "./types.ts";

type ValueOf<T extends ParamSpec> = T["type"] extends "integer" | "number"
  ? number
  : T["type"] extends "boolean"
    ? boolean
    : T["type"] extends "string_list"
      ? string[]
      : T["type"] extends "enum"
        ? T["values"] extends readonly (infer V)[]
          ? V
          : string
        : string;

/** True when validation guarantees the param is present: it is required or has a default. */
type Present<T> = T extends { required: true } ? true : T extends { default: {} | null } ? true : false;

/**
 * The params object an executor receives for a declarative schema: required and defaulted params
 * are always present, the others optional; durations stay strings (see parseDuration).
 */
export type InferParams<S extends ParamSchema> = {
  -readonly [K in keyof S as Present<S[K]> extends true ? K : never]: ValueOf<S[K]>;
} & {
  -readonly [K in keyof S as Present<S[K]> extends true ? never : K]?: ValueOf<S[K]>;
};

/** A definition with declarative params, from which the executor's params type is inferred. */
export type DeclarativeSkillDefinition<S extends ParamSchema> = Omit<SkillDefinition<InferParams<S>>, "params" | "rawSchema"> & {
  params: S;
  rawSchema?: undefined;
};

/**
 * Lets a skill be one file (`export default defineSkill({...})`, A2) with its executor's params
 * typed from its own declaration; at run time it returns the definition unchanged.
 */
export function defineSkill<const S extends ParamSchema>(def: DeclarativeSkillDefinition<S>): SkillDefinition;
export function defineSkill<P = Record<string, unknown>>(def: SkillDefinition<P>): SkillDefinition;
export function defineSkill(def: unknown): SkillDefinition {
  return def as SkillDefinition;
}

/** A builtin's metadata without its executor: the catalog both sides read (skill/catalog/), the edge adding the executor. */
export type DeclarativeSkillMeta<S extends ParamSchema> = Omit<DeclarativeSkillDefinition<S>, "execute">;

/** Declares a builtin's metadata, its params typed as defineSkill would infer them. */
export function defineSkillMeta<const S extends ParamSchema>(meta: DeclarativeSkillMeta<S>): DeclarativeSkillMeta<S> {
  return meta;
}
