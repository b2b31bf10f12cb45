/** The vocabulary every skill, on the edge and on the manager, is declared in. */
import type { Logger } from "pino";

/** Permission class: decides who may run a skill and which approvals it needs. */
export type SkillClass = "safe" | "mutating" | "dangerous";

/** The classes, for checking a class given as text (a definition, a manifest, a classifier's table or answer). */
export const SKILL_CLASSES: ReadonlySet<string> = new Set<SkillClass>(["safe", "mutating", "dangerous"]);
/** Where a skill runs: on an edge agent (host) or inside the manager. */
export type SkillScope = "host" | "manager";

/** Types a declarative parameter may have (A4). */
export type ParamType =
  | "string"
  | "integer"
  | "number"
  | "boolean"
  | "enum"
  | "duration"
  | "string_list"
  /** The name of a stored credential (G5); the manager injects its value when the call runs. */
  | "credential";

/** One declared parameter. min/max bound the value (numbers), the length (strings) or the item count (lists). */
export interface ParamSpec {
  type: ParamType;
  description: string;
  required?: boolean;
  default?: unknown;
  min?: number;
  max?: number;
  /** ECMAScript regular expression a string (or every list item) must match. */
  pattern?: string;
  /** Allowed values of an enum parameter. */
  values?: readonly string[];
}

/** The declarative schema: parameter name → spec, in declaration order. */
export type ParamSchema = Readonly<Record<string, ParamSpec>>;

/** What a skill author writes (A1/A2). `class` may be omitted: it then defaults to safe with a warning. */
export interface SkillMetadataInput {
  key: string;
  name: string;
  description: string;
  class?: SkillClass;
  scope?: SkillScope;
  category?: string;
  params?: ParamSchema;
  /** A hand-written JSON Schema as JSON text, kept byte for byte (the seeds' RawSchemaProvider). */
  rawSchema?: string;
  resultPreview?: string;
  /**
   * Lint rules this skill knowingly breaks, each with the reason (e.g. a key fixed by the spec).
   * Waived findings are reported as warnings that carry the reason, never silently dropped.
   */
  lintWaivers?: Readonly<Partial<Record<string, string>>>;
  /**
   * For dynamic-risk skills: the named classifier ("<classifier>:<param>", e.g.
   * "shell_command:command") the manager applies to the arguments; travels in the metadata so
   * the manager can gate calls to an edge's skill without the edge's code.
   */
  riskClassifier?: string;
}

/** Metadata after registration: class and scope are always set. */
export interface SkillMetadata extends SkillMetadataInput {
  class: SkillClass;
  scope: SkillScope;
  category: string;
  params: ParamSchema;
  /** True when the skill implements riskForArgs (A6). */
  dynamicRisk: boolean;
  /** True when the author omitted class and registration defaulted it to safe (A3); lint reports it. */
  classDefaulted?: boolean;
}

/** What an executor receives besides its params. */
export interface SkillContext {
  /** Aborted on deadline or cancellation; executors pass it to I/O. */
  signal: AbortSignal;
  /** Absolute deadline in ms since the epoch. */
  deadline: number;
  /** Unique id of this call (audit correlation). */
  callId: string;
  /** Logger bound to the skill key and call id. */
  log: Logger;
  /** Skill-specific settings from configuration (e.g. `skills.web_search` in the manager config). */
  settings: Readonly<Record<string, unknown>>;
  /** Id of the edge running the call; empty on the manager. */
  edgeId: string;
  /**
   * On the manager: who made this call and in which session, for manager skills that make calls of
   * their own (fleet tools fanning out to edges) under the same caller, gate and audit. The
   * manager's dispatcher sets it (manager/skills/invocation.ts reads it).
   */
  invocation?: SkillInvocation;
}

/**
 * Who made a call on the manager, as its dispatcher hands it to a manager skill. Empty here: the
 * manager declares its fields by declaration merging (manager/calls/types.ts), so the framework
 * holds none of the manager's nouns and a manager skill still reads them typed.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface SkillInvocation {}

/** The executor: params have been validated (defaults applied) before it runs. Throw SkillError to fail with a hint. */
export type SkillExecutor<P = Record<string, unknown>> = (ctx: SkillContext, params: P) => Promise<unknown>;

/** A skill as declared in its one file. */
export interface SkillDefinition<P = Record<string, unknown>> extends SkillMetadataInput {
  execute: SkillExecutor<P>;
  /** Dynamic risk (A6): the effective class for these arguments. */
  riskForArgs?: (params: P) => SkillClass;
}

/** A registered skill: normalised metadata, compiled validator, executor. */
export interface Skill {
  readonly meta: SkillMetadata;
  /** The effective JSON Schema of the params object (derived from params, or parsed rawSchema). */
  readonly jsonSchema: Record<string, unknown>;
  readonly execute: SkillExecutor;
  readonly riskForArgs?: (params: Record<string, unknown>) => SkillClass;
}

/** Structured failure inside a result envelope (A5). */
export interface EnvelopeError {
  code: string;
  message: string;
  hint: string;
}

/** The result envelope every execution returns (A5). */
export interface ResultEnvelope {
  success: boolean;
  output: unknown;
  error?: EnvelopeError;
  duration_ms: number;
  truncated: boolean;
  edge_id: string;
}
