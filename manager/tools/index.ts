/** The manager's base tools (K1–K4): fleet, knowledge, observability and agent helpers, listed here once. */
import type { SkillDefinition } from "../../skill/types.ts";
import type { BaseToolDeps } from "./deps.ts";

/** Every base tool, bound to the manager's parts. Each group adds its tools here. */
export function createBaseTools(_deps: BaseToolDeps): SkillDefinition<any>[] {
  return [];
}
