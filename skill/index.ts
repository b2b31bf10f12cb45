/** The skill framework's public API: both the edge and the manager import from here. */
export type * from "./types.ts";
export { OngridError, SkillError, type ErrorCode } from "./errors.ts";
export { DURATION_PATTERN, parseDuration, formatDuration } from "./duration.ts";
export { paramsToJsonSchema } from "./schema.ts";
export { compileValidator, validatorFor, validateParams, describeAjvErrors } from "./validate.ts";
export { defineSkill, type InferParams, type DeclarativeSkillDefinition } from "./define.ts";
export {
  createRegistry,
  buildSkill,
  effectiveClass,
  SKILL_KEY_PATTERN,
  type SkillRegistry,
  type SkillFilter,
  type RegistryOptions,
} from "./registry.ts";
export { redact, redactString, isSecretName, SECRET_NAME_WORDS, REDACTED, REDACTED_PRIVATE_KEY } from "./redact.ts";
export { toPlainJson } from "./json.ts";
export { truncateOutput, TRUNCATION_MARKER_PREFIX, type TruncatedOutput } from "./truncate.ts";
export { runSkill, type RunOptions } from "./run.ts";
export { lintSkill, lintRegistry, formatFindings, LINT_RULES, type LintFinding, type LintRule, type LintTarget } from "./lint.ts";
