/**
 * The graph as one caller may see it (G4): a node on an edge outside the caller's reach is not
 * there at all — not as a node, not as a neighbour, not in a link, not in an `observed_by` list. An
 * external peer is seen through the edges that observed it; a static node by its own labels (or
 * its edge's, when it names one). On top: selection by label selector, search, and expansion.
 */
import type { Selector } from "../fleet/selector.ts";
import type { Caller } from "../identity/caller.ts";
import { isLimited, reaches } from "../identity/reach.ts";
import type { TopologyGraph, TopologyLink, TopologyNode } from "./types.ts";

/** Which edges a caller reaches, and the labels each has now. */
export interface EdgeLabels {
  /** The labels an edge has now (a connected edge's from its hello, else as last recorded); undefined for an unknown edge. */
  labels(edgeId: string): Readonly<Record<string, string>> | undefined;
}

/** A node as shown: labels resolved, observers filtered to what the caller reaches. */
export type ShownNode = Omit<TopologyNode, "labels" | "observed_by"> & { labels: Record<string, string>; observed_by?: string[] };
/** A link as shown. */
export type ShownLink = Omit<TopologyLink, "observed_by"> & { observed_by: string[] };

/** The visible part of a graph, indexed. */
export interface GraphView {
  nodes: Map<string, ShownNode>;
  links: ShownLink[];
  /** Links out of (dependencies) and into (dependents) each node. */
  out: Map<string, ShownLink[]>;
  in: Map<string, ShownLink[]>;
  /** Nodes left out for reach (told only to an admin, like fleet tools' left_out). */
  hidden: number;
}

/** The graph as `caller` may see it. */
export function viewFor(graph: TopologyGraph, caller: Caller, edges: EdgeLabels): GraphView {
  const limited = isLimited(caller);
  const reach = new Map<string, boolean>();
  const edgeSeen = (id: string): boolean => {
    let v = reach.get(id);
    if (v === undefined) {
      const labels = edges.labels(id);
      v = limited ? labels !== undefined && reaches(caller, labels) : true;
      reach.set(id, v);
    }
    return v;
  };
  const nodes = new Map<string, ShownNode>();
  let hidden = 0;
  for (const n of graph.nodes) {
    let visible: boolean;
    if (n.edge_id) visible = edgeSeen(n.edge_id);
    else if (n.source === "static") visible = !limited || reaches(caller, n.labels ?? {});
    else visible = (n.observed_by ?? []).some(edgeSeen);
    if (!visible) {
      hidden++;
      continue;
    }
    const { labels: own, observed_by, ...rest } = n;
    const labels = n.source === "static" ? { ...(own ?? {}) } : n.edge_id ? { ...(edges.labels(n.edge_id) ?? {}) } : {};
    nodes.set(n.id, { ...rest, labels, ...(observed_by ? { observed_by: observed_by.filter(edgeSeen) } : {}) });
  }
  const links: ShownLink[] = [];
  const out = new Map<string, ShownLink[]>();
  const inn = new Map<string, ShownLink[]>();
  for (const l of graph.links) {
    if (!nodes.has(l.from) || !nodes.has(l.to)) continue;
    const by = l.observed_by.filter(edgeSeen);
    if (l.source === "observed" && by.length === 0) continue;
    const shown = { ...l, observed_by: by };
    links.push(shown);
    (out.get(l.from) ?? out.set(l.from, []).get(l.from)!).push(shown);
    (inn.get(l.to) ?? inn.set(l.to, []).get(l.to)!).push(shown);
  }
  return { nodes, links, out, in: inn, hidden };
}

/** The links among a set of nodes. */
export function linksAmong(view: GraphView, ids: ReadonlySet<string>): ShownLink[] {
  return view.links.filter((l) => ids.has(l.from) && ids.has(l.to));
}

/** Nodes a label selector (over a node's labels) and an edge id list pick; with neither, every node. */
export function selectNodes(view: GraphView, o: { selector?: Selector; edgeIds?: readonly string[]; kind?: string }): string[] {
  const bySelector = o.selector && o.selector.text.trim() !== "";
  const byEdge = o.edgeIds && o.edgeIds.length > 0;
  const ids = new Set(o.edgeIds ?? []);
  const out: string[] = [];
  for (const n of view.nodes.values()) {
    if (o.kind && o.kind !== "any" && kindGroup(n) !== o.kind) continue;
    if (!bySelector && !byEdge) out.push(n.id);
    else if ((bySelector && o.selector!.matches(n.labels)) || (byEdge && n.edge_id !== undefined && ids.has(n.edge_id))) out.push(n.id);
  }
  return out;
}

/** Nodes one link away from any of `ids`, in either direction. */
export function neighbours(view: GraphView, ids: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const id of ids) {
    for (const l of view.out.get(id) ?? []) out.add(l.to);
    for (const l of view.in.get(id) ?? []) out.add(l.from);
  }
  return out;
}

/** The kind a filter sees: observed kinds as they are, every static node as "static". */
export function kindGroup(n: ShownNode): string {
  return n.source === "static" ? "static" : n.kind;
}

/** Whether a node matches a search: its id, name, process, an address, a port (digits) or a label (key=value, or a key). */
export function nodeMatches(n: ShownNode, query: string): boolean {
  const q = query.trim().toLowerCase();
  if (!q) return false;
  if (/^\d{1,5}$/.test(q)) return n.port === Number(q);
  const eq = q.indexOf("=");
  if (eq > 0) {
    const [k, v] = [q.slice(0, eq).trim(), q.slice(eq + 1).trim()];
    return Object.entries(n.labels).some(([lk, lv]) => lk.toLowerCase() === k && lv.toLowerCase() === v);
  }
  const hay = [n.id, n.name, n.process?.name ?? "", n.edge_id ?? "", ...n.addresses, ...Object.keys(n.labels)].map((s) => s.toLowerCase());
  return hay.some((h) => h === q) || hay.some((h) => h.includes(q));
}

/** One step of an expansion: a node and how far from the start it is. */
export interface Reached {
  id: string;
  distance: number;
}

/**
 * The nodes reachable from `start` in up to `depth` links: "out" follows what it connects to (its
 * dependencies), "in" what connects to it (its dependents), "both" either way. Breadth first, so
 * the nearest come first; at most `limit` nodes (the start counted).
 */
export function expand(view: GraphView, start: string, direction: "out" | "in" | "both", depth: number, limit: number): { reached: Reached[]; truncated: boolean } {
  const dist = new Map<string, number>([[start, 0]]);
  let frontier = [start];
  let truncated = false;
  for (let d = 1; d <= depth && frontier.length; d++) {
    const next: string[] = [];
    for (const id of frontier) {
      const steps = [...(direction !== "in" ? (view.out.get(id) ?? []).map((l) => l.to) : []), ...(direction !== "out" ? (view.in.get(id) ?? []).map((l) => l.from) : [])].sort();
      for (const to of steps) {
        if (dist.has(to)) continue;
        if (dist.size >= limit) {
          truncated = true;
          break;
        }
        dist.set(to, d);
        next.push(to);
      }
    }
    frontier = next;
  }
  return { reached: [...dist.entries()].map(([id, distance]) => ({ id, distance })), truncated };
}
