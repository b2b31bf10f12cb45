/**
 * What the topology tools share: the caller's view of the current graph (reach applied once), the
 * JSON shape of nodes and links in their answers, the graph's freshness as the caller may see it,
 * and fitting an answer under the output cap by showing fewer nodes (never a cut JSON text).
 */
import type { SkillContext } from "../../../../skill/types.ts";
import { roleAtLeast } from "../../../identity/store.ts";
import type { Caller } from "../../../identity/caller.ts";
import type { Topology } from "../../../topology/topology.ts";
import type { TopologyGraph } from "../../../topology/types.ts";
import { linksAmong, viewFor, type GraphView, type ShownLink, type ShownNode } from "../../../topology/view.ts";
import { isLimited, leftOutShown, reaches } from "../../../identity/reach.ts";
import { invocationOf } from "../../invocation.ts";

/** Node kinds a filter takes: the observed kinds, and "static" for every node of the static file. */
export const KIND_SCHEMA = {
  type: "string",
  enum: ["any", "service", "client", "host", "external", "static"],
  default: "any",
  description: "Only nodes of this kind: service (a listening port on an edge), client (a process that only connects out), host (an edge whose connecting process is unknown), external (a peer outside the fleet), static (from the static file); any: all.",
} as const;

/** A node id param. */
export const NODE_ID_SCHEMA = { type: "string", minLength: 1, maxLength: 300, pattern: "^[A-Za-z0-9][A-Za-z0-9._:/\\[\\]-]*$", description: "A node id as get_topology or find_topology_node show it, e.g. svc:web-1:8080 (a service: edge and port), ext:10.0.0.9:5432, or a static node's id." } as const;

/** The caller's view of the current graph, and the graph. */
export async function callerView(topology: Topology, ctx: SkillContext): Promise<{ caller: Caller; graph: TopologyGraph; view: GraphView; edgeVisible: (id: string) => boolean }> {
  const { caller } = invocationOf(ctx);
  const graph = await topology.graph();
  const edges = await topology.edgeLabels();
  const edgeVisible = (id: string) => {
    if (!isLimited(caller)) return true;
    const labels = edges.labels(id);
    return labels !== undefined && reaches(caller, labels);
  };
  return { caller, graph, view: viewFor(graph, caller, edges), edgeVisible };
}

/** A node as the answers show it: empty fields left out. */
export function nodeJson(n: ShownNode): Record<string, unknown> {
  return {
    id: n.id,
    kind: n.kind,
    name: n.name,
    source: n.source,
    ...(n.edge_id ? { edge_id: n.edge_id } : {}),
    ...(n.port !== undefined ? { port: n.port } : {}),
    ...(n.addresses.length ? { addresses: n.addresses } : {}),
    ...(n.process && (n.process.pid !== null || n.process.name !== null) ? { process: n.process } : {}),
    ...(Object.keys(n.labels).length ? { labels: n.labels } : {}),
    ...(n.observed_by ? { observed_by: n.observed_by } : {}),
    ...(n.inferred ? { inferred: true } : {}),
    ...(n.ambiguous ? { ambiguous: true } : {}),
    ...(n.description ? { description: n.description } : {}),
  };
}

/** A link as the answers show it. */
export function linkJson(l: ShownLink): Record<string, unknown> {
  return { from: l.from, to: l.to, port: l.port, connections: l.connections, source: l.source, ...(l.description ? { description: l.description } : {}) };
}

/** The graph's age and the collection state of the edges the caller reaches; build problems for an admin only (they may name hidden nodes). */
export function freshness(graph: TopologyGraph, view: GraphView, caller: Caller, visibleEdge: (id: string) => boolean): Record<string, unknown> {
  const admin = roleAtLeast(caller.onBehalfRole ?? caller.role, "admin");
  const edges = graph.edges.filter((e) => visibleEdge(e.edge_id));
  const failing = edges.filter((e) => e.error);
  return {
    built_at: graph.built_at || null,
    age_s: graph.built_at ? Math.max(0, Math.round((Date.now() - Date.parse(graph.built_at)) / 1000)) : null,
    edges_observed: edges.filter((e) => e.collected_at).length,
    ...(failing.length ? { edges_failing: failing.slice(0, 20).map((e) => ({ edge_id: e.edge_id, error: e.error, last_good: e.collected_at })) } : {}),
    hidden_nodes: leftOutShown(caller, view.hidden),
    ...(admin && graph.problems.length ? { problems: graph.problems.slice(0, 20) } : !admin && graph.problems.length ? { problems_count: graph.problems.length } : {}),
  };
}

/**
 * The answer with as many of `ordered` nodes as fit under `capBytes` (and at most `limit`), with
 * the links among those shown: a binary search over the count, so the answer stays whole JSON.
 */
export function fitNodes(view: GraphView, ordered: readonly string[], limit: number, capBytes: number, wrap: (nodes: ShownNode[], links: ShownLink[], truncated: boolean) => Record<string, unknown>): Record<string, unknown> {
  const make = (n: number) => {
    const shown = ordered.slice(0, n);
    const ids = new Set(shown);
    return wrap(
      shown.map((id) => view.nodes.get(id)!),
      linksAmong(view, ids),
      n < ordered.length,
    );
  };
  const fits = (o: unknown) => Buffer.byteLength(JSON.stringify(o)) <= capBytes;
  let hi = Math.min(limit, ordered.length);
  let best = make(hi);
  if (fits(best)) return best;
  let lo = 0;
  best = make(0);
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    const o = make(mid);
    if (fits(o)) {
      lo = mid;
      best = o;
    } else hi = mid - 1;
  }
  return best;
}

/** Room kept under the output cap for the envelope around the output. */
export const CAP_MARGIN = 512;
