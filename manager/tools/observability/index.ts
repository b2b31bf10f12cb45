/** The observability base tools; each tool in its own file in this folder. */
import type { SkillDefinition } from "../../../skill/types.ts";
import type { BaseToolDeps } from "../deps.ts";

/** Every observability tool, bound to the manager's parts. */
export function createObservabilityTools(_deps: BaseToolDeps): SkillDefinition<any>[] {
  return [];
}
