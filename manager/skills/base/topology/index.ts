/** The topology tools (K5): the service graph, a node search and a node's neighbours; each tool in its own file in this folder. */
import { parseDuration } from "../../../../skill/duration.ts";
import { OngridError } from "../../../../skill/errors.ts";
import type { SkillDefinition } from "../../../../skill/types.ts";
import { listEdgeLabels } from "../../../topology/store.ts";
import { createTopology, type Topology } from "../../../topology/topology.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { createExpandTopology } from "./expand-topology.ts";
import { createFindTopologyNode } from "./find-topology-node.ts";
import { createGetTopology } from "./get-topology.ts";

/** Every topology tool, over one topology bound to the manager's parts; the schedule starts once the manager serves. */
export function createTopologyTools(deps: BaseToolDeps, topology: Topology = managerTopology(deps)): SkillDefinition<any>[] {
  deps.onServe?.(() => topology.start());
  const cap = deps.config.skills.output_cap_bytes;
  return [createGetTopology(topology, cap), createFindTopologyNode(topology, cap), createExpandTopology(topology, cap)];
}

/** The topology as configured (topology.refresh_interval, topology.static_file). */
export function managerTopology(deps: BaseToolDeps): Topology {
  const t = deps.config.topology ?? { refresh_interval: "5m", static_file: "" };
  return createTopology({ database: deps.database, hub: deps.hub, edges: { list: () => listEdgeLabels(deps.database) }, dispatcher: deps.dispatcher, log: deps.log, staticFile: t.static_file, intervalMs: parseDuration(t.refresh_interval) });
}

/**
 * The topology tools' definitions where no manager runs (the CLI's own playbook checks): their
 * metadata is real, so playbooks that list them check clean; a call refuses, since the topology
 * lives in a running manager.
 */
export function topologyToolDefinitions(capBytes = 1 << 20): SkillDefinition<any>[] {
  const absent = (): never => {
    throw new OngridError("failed_precondition", "the service topology lives in a running manager", "call the tool through a manager (--manager URL)");
  };
  const topology = { graph: absent, edgeLabels: absent, refresh: absent, start: absent, stop: absent } as unknown as Topology;
  return [createGetTopology(topology, capBytes), createFindTopologyNode(topology, capBytes), createExpandTopology(topology, capBytes)];
}
