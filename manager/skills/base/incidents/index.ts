/** The incident and change tools (K3): incidents from Alertmanager, change events, and the correlated timeline; each tool in its own file. */
import type { SkillDefinition } from "../../../../skill/types.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { createQueryIncidents } from "./query-incidents.ts";
import { createGetIncidentDetail } from "./get-incident-detail.ts";
import { createQueryChangeEvents } from "./query-change-events.ts";
import { createCorrelateIncident } from "./correlate-incident.ts";

/** Every incident tool, bound to the manager's parts. */
export function createIncidentTools(deps: BaseToolDeps): SkillDefinition<any>[] {
  return [createQueryIncidents(deps), createGetIncidentDetail(deps), createQueryChangeEvents(deps), createCorrelateIncident(deps)];
}
