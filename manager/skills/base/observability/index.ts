/** The observability base tools; each tool in its own file in this folder. */
import type { SkillDefinition } from "../../../../skill/types.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { createQueryPromql } from "./query-promql.ts";
import { createQueryAlertRules } from "./query-alert-rules.ts";
import { createQueryLogql } from "./query-logql.ts";
import { createQueryTraceql } from "./query-traceql.ts";

/** Every observability tool, bound to the manager's parts. */
export function createObservabilityTools(deps: BaseToolDeps): SkillDefinition<any>[] {
  return [
    createQueryPromql(deps),
    createQueryAlertRules(deps),
    createQueryLogql(deps),
    createQueryTraceql(deps),
  ];
}
