/** The manager's base tools (K1–K4): fleet, knowledge, observability and agent helpers, listed here once. */
import type { SkillDefinition } from "../../skill/types.ts";
import type { BaseToolDeps } from "./deps.ts";
import { createFleetTools } from "./fleet/index.ts";
import { createKnowledgeTools } from "./knowledge/index.ts";
import { createObservabilityTools } from "./observability/index.ts";
import { createHelpersTools } from "./helpers/index.ts";
import { createIncidentTools } from "./incidents/index.ts";

/** Every base tool, bound to the manager's parts. */
export function createBaseTools(deps: BaseToolDeps): SkillDefinition<any>[] {
  return [...createFleetTools(deps), ...createKnowledgeTools(deps), ...createObservabilityTools(deps), ...createIncidentTools(deps), ...createHelpersTools(deps)];
}
