/** find_topology_node (K5): topology nodes by name, id, address, port or label, among those the caller may see. */
import type { SkillDefinition } from "../../../../skill/types.ts";
import type { Topology } from "../../../topology/topology.ts";
import { kindGroup, nodeMatches } from "../../../topology/view.ts";
import { defineBaseTool } from "../../define.ts";
import { CAP_MARGIN, callerView, fitNodes, freshness, KIND_SCHEMA, nodeJson } from "./shown.ts";

interface Params {
  query: string;
  kind: string;
  limit: number;
}

const SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["query"],
  properties: {
    query: {
      type: "string",
      minLength: 1,
      maxLength: 200,
      pattern: "\\S",
      description: "What to look for: a port (digits, e.g. 5432), a label (key=value, e.g. team=payments), or text matched against the node's id, name, process, edge and addresses (e.g. nginx, 10.0.0.9, orders-db). An exact match ranks first.",
    },
    kind: KIND_SCHEMA,
    limit: { type: "integer", minimum: 1, maximum: 100, default: 20, description: "Most nodes to return." },
  },
} as const;

/** Creates find_topology_node over the manager's topology. */
export function createFindTopologyNode(topology: Topology, capBytes: number): SkillDefinition<Params> {
  return defineBaseTool<Params>({
    key: "find_topology_node",
    name: "Find topology nodes",
    description:
      "Find nodes of the service topology by name, node id, process, address, port or label, among those you may reach; each with how many links go out (its dependencies) and come in (its dependents). Use when you know a service by name, port or address (an alert's instance, an error's peer) and need its node id for expand_topology.",
    class: "safe",
    category: "topology",
    schema: SCHEMA,
    resultPreview: {
      query: "5432",
      matched: 1,
      returned: 1,
      truncated: false,
      nodes: [{ id: "svc:db-1:5432", kind: "service", name: "postgres", source: "observed", edge_id: "db-1", port: 5432, addresses: ["0.0.0.0"], process: { pid: 911, name: "postgres" }, labels: { team: "data" }, dependencies: 0, dependents: 3 }],
      built_at: "2026-01-01T00:00:00.000Z",
      age_s: 42,
    },
    async execute(ctx, params) {
      const { caller, graph, view, edgeVisible } = await callerView(topology, ctx);
      const q = params.query.trim().toLowerCase();
      const found = [...view.nodes.values()].filter((n) => (params.kind === "any" || kindGroup(n) === params.kind) && nodeMatches(n, q));
      const exact = (id: string) => {
        const n = view.nodes.get(id)!;
        return n.id.toLowerCase() === q || n.name.toLowerCase() === q || n.addresses.includes(q) ? 0 : 1;
      };
      const ordered = found.map((n) => n.id).sort((a, b) => exact(a) - exact(b) || (a < b ? -1 : a > b ? 1 : 0));
      const about = freshness(graph, view, caller, edgeVisible);
      return fitNodes(view, ordered, params.limit, capBytes - CAP_MARGIN, (nodes, _links, truncated) => ({
        query: params.query,
        matched: found.length,
        returned: nodes.length,
        truncated,
        nodes: nodes.map((n) => ({ ...nodeJson(n), dependencies: view.out.get(n.id)?.length ?? 0, dependents: view.in.get(n.id)?.length ?? 0 })),
        ...about,
        ...(found.length === 0 ? { hint: graph.built_at ? "No node you may see matches. Try a shorter name, the port alone, or get_topology to see the whole graph." : "No topology has been built yet: call get_topology with refresh: true." } : {}),
      }));
    },
  });
}
