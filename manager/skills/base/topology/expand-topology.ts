/** expand_topology (K5): a node's neighbours to depth N, following its dependencies, its dependents or both, within the caller's reach. */
import { SkillError } from "../../../../skill/errors.ts";
import type { SkillDefinition } from "../../../../skill/types.ts";
import type { Topology } from "../../../topology/topology.ts";
import { expand } from "../../../topology/view.ts";
import { defineBaseTool } from "../../define.ts";
import { CAP_MARGIN, callerView, fitNodes, freshness, linkJson, NODE_ID_SCHEMA, nodeJson } from "./shown.ts";

interface Params {
  node: string;
  direction: "out" | "in" | "both";
  depth: number;
  limit: number;
}

const SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["node"],
  properties: {
    node: NODE_ID_SCHEMA,
    direction: {
      type: "string",
      enum: ["out", "in", "both"],
      default: "out",
      description: "out: what the node connects to (its dependencies: \"what does it depend on?\"); in: what connects to it (its dependents: \"what breaks if it fails?\"); both.",
    },
    depth: { type: "integer", minimum: 1, maximum: 6, default: 2, description: "How many links away to follow." },
    limit: { type: "integer", minimum: 1, maximum: 500, default: 100, description: "Most nodes to return, nearest first (the node itself counted)." },
  },
} as const;

/** Creates expand_topology over the manager's topology. */
export function createExpandTopology(topology: Topology, capBytes: number): SkillDefinition<Params> {
  return defineBaseTool<Params>({
    key: "expand_topology",
    name: "Expand a topology node",
    description:
      "From one node of the service topology, follow its links to depth N: its dependencies (direction out), its dependents (in) or both, nearest first, with the links between them, within what you may reach. Use when a service fails, to see what it depends on (and check those first) or what else its failure affects; find_topology_node gives the node id.",
    class: "safe",
    category: "topology",
    schema: SCHEMA,
    resultPreview: {
      node: "svc:api-1:8080",
      direction: "out",
      depth: 2,
      returned: 3,
      truncated: false,
      nodes: [
        { id: "svc:api-1:8080", kind: "service", name: "node", source: "observed", edge_id: "api-1", port: 8080, distance: 0 },
        { id: "svc:db-1:5432", kind: "service", name: "postgres", source: "observed", edge_id: "db-1", port: 5432, distance: 1 },
        { id: "ext:203.0.113.7:443", kind: "external", name: "203.0.113.7:443", source: "observed", addresses: ["203.0.113.7"], port: 443, distance: 1 },
      ],
      links: [
        { from: "svc:api-1:8080", to: "svc:db-1:5432", port: 5432, connections: 4, source: "observed" },
        { from: "svc:api-1:8080", to: "ext:203.0.113.7:443", port: 443, connections: 1, source: "observed" },
      ],
      built_at: "2026-01-01T00:00:00.000Z",
      age_s: 42,
    },
    async execute(ctx, params) {
      const { caller, graph, view, edgeVisible } = await callerView(topology, ctx);
      // A node outside the caller's reach answers exactly like one that does not exist.
      if (!view.nodes.has(params.node)) {
        throw new SkillError(
          "not_found",
          `no node "${params.node}" in the topology you may see`,
          graph.built_at ? "find_topology_node finds a node's id by name, address or port; service ids look like svc:<edge>:<port>." : "No topology has been built yet: call get_topology with refresh: true.",
        );
      }
      const { reached, truncated: cut } = expand(view, params.node, params.direction, params.depth, params.limit);
      const distance = new Map(reached.map((r) => [r.id, r.distance]));
      const about = freshness(graph, view, caller, edgeVisible);
      return fitNodes(view, reached.map((r) => r.id), params.limit, capBytes - CAP_MARGIN, (nodes, links, truncated) => {
        // Only the links the walk followed: in "out" the links pointing away from the start, in "in" those pointing to it.
        const shown = links.filter((l) => params.direction === "both" || (params.direction === "out" ? distance.get(l.to)! >= distance.get(l.from)! : distance.get(l.from)! >= distance.get(l.to)!));
        return {
          node: params.node,
          direction: params.direction,
          depth: params.depth,
          returned: nodes.length,
          truncated: truncated || cut,
          nodes: nodes.map((n) => ({ ...nodeJson(n), distance: distance.get(n.id) })),
          links: shown.map(linkJson),
          ...about,
          ...(nodes.length === 1 ? { hint: `Nothing you may see is linked ${params.direction === "out" ? "from" : params.direction === "in" ? "to" : "to or from"} this node${params.direction !== "both" ? `; try direction ${params.direction === "out" ? "in" : "out"} or both` : ""}.` } : {}),
        };
      });
    },
  });
}
