/** get_topology (K5): the service graph, or the part a label selector picks, as the caller may see it; optionally refreshed first. */
import { SkillError } from "../../../../skill/errors.ts";
import { EDGE_ID_PATTERN } from "../../../../skill/identity.ts";
import type { SkillDefinition } from "../../../../skill/types.ts";
import type { Topology } from "../../../topology/topology.ts";
import { kindGroup, neighbours, selectNodes } from "../../../topology/view.ts";
import { defineBaseTool } from "../../define.ts";
import { fleetCall, perEdgeDeadline, selectorParam } from "../fleet/targets.ts";
import { CAP_MARGIN, callerView, fitNodes, freshness, KIND_SCHEMA, linkJson, nodeJson } from "./shown.ts";

interface Params {
  selector?: string;
  edge_ids?: string[];
  kind: string;
  neighbours: boolean;
  limit: number;
  refresh: boolean;
}

const SCHEMA = {
  type: "object",
  additionalProperties: false,
  properties: {
    selector: {
      type: "string",
      maxLength: 1024,
      description: 'Label selector over the nodes\' labels (an observed node has its edge\'s labels, a static node its own): key=value, key!=value, key, !key, comma-separated, e.g. "team=payments". Omitted (and no edge_ids): the whole graph you may see.',
    },
    edge_ids: { type: "array", items: { type: "string", pattern: EDGE_ID_PATTERN.source }, minItems: 1, maxItems: 1000, uniqueItems: true, description: "Nodes on these edges, in addition to those the selector picks." },
    kind: KIND_SCHEMA,
    neighbours: { type: "boolean", default: true, description: "Also show the nodes one link away from those picked (what they call and what calls them), so a subgraph shows its connections." },
    limit: { type: "integer", minimum: 1, maximum: 2000, default: 200, description: "Most nodes to show (picked ones first); links are shown between the nodes shown. Fewer are shown when the answer would exceed the output cap." },
    refresh: { type: "boolean", default: false, description: "Ask the edges you may reach for their sockets now (host_sockets, each call gated and audited) and rebuild before answering; otherwise the last stored graph (see age_s) is used." },
  },
} as const;

/** Creates get_topology over the manager's topology; `capBytes` is skills.output_cap_bytes. */
export function createGetTopology(topology: Topology, capBytes: number): SkillDefinition<Params> {
  return defineBaseTool<Params>({
    key: "get_topology",
    name: "Service topology",
    description:
      "Return the service topology: nodes (services listening on edges, processes that connect out, peers outside the fleet, static nodes such as a managed database) and directed links (who connects to whom, on which port, how many connections), built from every edge's sockets and the static file, limited to what you may reach. Use when you need the map of how services depend on each other, or the part of it a label selector picks (e.g. team=payments with its neighbours); use expand_topology to follow one service's dependencies.",
    class: "safe",
    category: "topology",
    schema: SCHEMA,
    resultPreview: {
      built_at: "2026-01-01T00:00:00.000Z",
      age_s: 42,
      matched: 2,
      returned: 3,
      truncated: false,
      nodes: [
        { id: "svc:web-1:443", kind: "service", name: "nginx", source: "observed", edge_id: "web-1", port: 443, addresses: ["0.0.0.0"], process: { pid: 812, name: "nginx" }, labels: { team: "web" } },
        { id: "svc:api-1:8080", kind: "service", name: "node", source: "observed", edge_id: "api-1", port: 8080, addresses: ["0.0.0.0"], labels: { team: "web" } },
        { id: "orders-db", kind: "database", name: "Orders RDS", source: "static", addresses: ["10.9.0.5"], port: 5432, labels: { team: "web" } },
      ],
      links: [
        { from: "svc:web-1:443", to: "svc:api-1:8080", port: 8080, connections: 12, source: "observed" },
        { from: "svc:api-1:8080", to: "orders-db", port: 5432, connections: 4, source: "observed" },
      ],
      edges_observed: 2,
      hidden_nodes: 0,
    },
    async execute(ctx, params) {
      const selector = selectorParam(params.selector);
      let refreshed: Record<string, unknown> | undefined;
      if (params.refresh) {
        const call = fleetCall(ctx);
        const { report } = await topology.refresh({ caller: call.caller, sessionId: call.sessionId, signal: ctx.signal, mode: call.mode, playbook: call.playbook, perEdgeTimeoutMs: perEdgeDeadline(ctx, undefined) });
        refreshed = { ...report };
      }
      const { caller, graph, view, edgeVisible } = await callerView(topology, ctx);
      const picked = selectNodes(view, { selector, edgeIds: params.edge_ids, kind: params.kind });
      const pickedSet = new Set(picked);
      const around = params.neighbours ? [...neighbours(view, picked)].filter((id) => !pickedSet.has(id)).sort() : [];
      const ordered = [...picked.sort(), ...around];
      const about = freshness(graph, view, caller, edgeVisible);
      if (!graph.built_at && !params.refresh) {
        throw new SkillError("not_found", "no topology has been built yet", "Call get_topology with refresh: true to ask the edges for their sockets now; topology.refresh_interval sets the schedule.");
      }
      const kindNote = params.kind !== "any" ? ` of kind ${params.kind}` : "";
      return fitNodes(view, ordered, params.limit, capBytes - CAP_MARGIN, (nodes, links, truncated) => ({
        ...about,
        matched: picked.length,
        returned: nodes.length,
        truncated,
        nodes: nodes.map(nodeJson),
        links: links.map(linkJson),
        ...(refreshed ? { refresh: refreshed } : {}),
        ...(picked.length === 0
          ? { hint: `No node${kindNote} you may see matches${selector.text.trim() ? ` selector "${selector.text.trim()}"` : ""}${params.edge_ids?.length ? " on those edges" : ""}. find_topology_node searches by name, address or port; query_edges lists the edges you reach with their labels.` }
          : truncated
            ? { hint: `Showing ${nodes.length} of ${ordered.length} nodes (limit or output cap). Narrow with a selector or kind, or follow one node with expand_topology.` }
            : {}),
        ...(nodes.some((n) => kindGroup(n) === "service" && n.inferred) ? { note: "inferred: a service seen only as the target of connections (its edge did not report the listener)." } : {}),
      }));
    },
  });
}
