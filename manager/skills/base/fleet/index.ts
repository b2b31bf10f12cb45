/** The fleet base tools (K1); each tool in its own file in this folder. */
import type { SkillDefinition } from "../../../../skill/types.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { createGetEdgeSummary } from "./edge-summary.ts";
import { createFindOutlierEdges } from "./find-outliers.ts";
import { createFleetHostFiles } from "./fleet-host-files.ts";
import { createFleetHostLoad } from "./fleet-host-load.ts";
import { createFleetHostProcesses } from "./fleet-host-processes.ts";
import { createQueryEdges } from "./query-edges.ts";
import { createRankEdges } from "./rank-edges.ts";

/** Every fleet tool, bound to the manager's parts. */
export function createFleetTools(deps: BaseToolDeps): SkillDefinition<any>[] {
  return [
    createQueryEdges(deps),
    createGetEdgeSummary(deps),
    createFleetHostLoad(deps),
    createFleetHostProcesses(deps),
    createFleetHostFiles(deps),
    createFindOutlierEdges(deps),
    createRankEdges(deps),
  ];
}
