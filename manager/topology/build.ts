/**
 * Joins every edge's host_sockets output into one graph (K5): a node per listening service
 * (edge + port), per process that only connects out, per peer outside the fleet; a link per
 * connection from the node that connects to the node it reaches, with the peer's address resolved
 * to the edge that reports it as its own. The static file's nodes and links are merged in. Pure:
 * no I/O, so every rule is tested on data.
 */
import type { Connection, HostSocketsOutput } from "../../skill/catalog/host-sockets.ts";
import type { StaticTopology } from "./static-file.ts";
import type { EdgeCollection, Observation, TopologyGraph, TopologyLink, TopologyNode } from "./types.ts";

/** External clients of one service shown as nodes of their own; more are counted on the service. */
export const MAX_EXTERNAL_CLIENTS_PER_SERVICE = 20;

const LOOPBACK = /^127\.|^::1$/;
const WILDCARDS = new Set(["0.0.0.0", "::"]);

/** The node id of a service: an edge's listening port. */
export const serviceId = (edgeId: string, port: number) => `svc:${edgeId}:${port}`;

/** What the build is given. */
export interface BuildInput {
  observations: readonly Observation[];
  static?: StaticTopology;
  staticFile?: string;
  /** Problems found before the build (an invalid static file). */
  problems?: string[];
  now?: Date;
}

/** Builds the graph. */
export function buildTopology(input: BuildInput): TopologyGraph {
  const t0 = performance.now();
  const nodes = new Map<string, TopologyNode>();
  const links = new Map<string, TopologyLink>();
  const problems = [...(input.problems ?? [])];
  const seen = input.observations.filter((o): o is Observation & { sockets: HostSocketsOutput } => Boolean(o.sockets));

  // Which edge (or static node) each address belongs to.
  const owners = new Map<string, Set<string>>();
  for (const o of seen) for (const a of o.sockets.addresses ?? []) (owners.get(a) ?? owners.set(a, new Set()).get(a)!).add(o.edgeId);
  const staticByAddress = new Map<string, string[]>();
  for (const n of input.static?.nodes ?? []) for (const a of n.addresses) (staticByAddress.get(a) ?? staticByAddress.set(a, []).get(a)!).push(n.id);

  /** The edge an address is on, as seen from `from`: its own loopback or addresses, else the one edge reporting it; "ambiguous" when several do. */
  const ownerOf = (from: string, own: ReadonlySet<string>, address: string): string | "ambiguous" | undefined => {
    if (LOOPBACK.test(address) || own.has(address)) return from;
    const set = owners.get(address);
    if (!set) return undefined;
    if (set.size === 1) return [...set][0];
    return "ambiguous";
  };

  // Services: one node per edge and listening port.
  const serviceByPid = new Map<string, string>();
  const serviceByName = new Map<string, { id: string; pids: Set<number | null> }>();
  for (const o of seen) {
    for (const l of [...o.sockets.listening].sort((a, b) => a.port - b.port)) {
      const id = serviceId(o.edgeId, l.port);
      // A listener on every address is reachable at each of the edge's own (what a search by address finds).
      const at = WILDCARDS.has(l.address) && o.sockets.addresses?.length ? o.sockets.addresses : [l.address];
      const node = nodes.get(id);
      if (node) {
        for (const a of at) if (!node.addresses.includes(a)) node.addresses.push(a);
      } else {
        nodes.set(id, { id, kind: "service", name: l.process ?? `port ${l.port}`, source: "observed", edge_id: o.edgeId, port: l.port, addresses: [...at], process: { pid: l.pid, name: l.process } });
      }
      // A process listening on several ports connects out as its lowest one; so does another
      // process of the same name (a server's workers: nginx's hold the master's listener), unless
      // listeners of that name belong to several processes (two unrelated "node" or "java" apps).
      if (l.pid !== null && !serviceByPid.has(`${o.edgeId}|${l.pid}`)) serviceByPid.set(`${o.edgeId}|${l.pid}`, id);
      if (l.process !== null) {
        const key = `${o.edgeId}|${l.process}`;
        const byName = serviceByName.get(key);
        if (!byName) serviceByName.set(key, { id, pids: new Set([l.pid]) });
        else byName.pids.add(l.pid);
      }
    }
  }

  const addLink = (from: string, to: string, port: number | null, count: number, by: string) => {
    const id = `${from}->${to}`;
    const l = links.get(id);
    if (l) {
      l.connections += count;
      if (!l.observed_by.includes(by)) l.observed_by.push(by);
      if (l.port !== port) l.port = l.port === null ? port : Math.min(l.port, port ?? l.port);
      return;
    }
    links.set(id, { id, from, to, port, connections: count, source: "observed", observed_by: [by] });
  };
  const external = (address: string, port: number | null, by: string, ambiguous: boolean): string => {
    const id = port === null ? `ext:${address}` : `ext:${address}:${port}`;
    const n = nodes.get(id);
    if (n) {
      if (!n.observed_by!.includes(by)) n.observed_by!.push(by);
    } else {
      nodes.set(id, { id, kind: "external", name: port === null ? address : `${address}:${port}`, source: "observed", addresses: [address], ...(port !== null ? { port } : {}), observed_by: [by], ...(ambiguous ? { ambiguous: true } : {}) });
    }
    return id;
  };
  const sourceOf = (edgeId: string, c: Connection): string => {
    const named = c.process !== null ? serviceByName.get(`${edgeId}|${c.process}`) : undefined;
    const svc = (c.pid !== null ? serviceByPid.get(`${edgeId}|${c.pid}`) : undefined) ?? (named && named.pids.size === 1 ? named.id : undefined);
    if (svc) return svc;
    const name = c.process ?? (c.pid !== null ? `pid-${c.pid}` : "unknown");
    const id = `proc:${edgeId}:${name}`;
    if (!nodes.has(id)) nodes.set(id, { id, kind: "client", name, source: "observed", edge_id: edgeId, addresses: [], process: { pid: c.pid, name: c.process } });
    return id;
  };
  /** The node listening on `port` at `address` on edge `edgeId`; one is inferred when that edge did not report it. */
  const target = (edgeId: string, port: number, address: string): string => {
    const id = serviceId(edgeId, port);
    if (!nodes.has(id)) nodes.set(id, { id, kind: "service", name: `port ${port}`, source: "observed", edge_id: edgeId, port, addresses: WILDCARDS.has(address) ? [] : [address], inferred: true });
    return id;
  };
  const staticById = new Map((input.static?.nodes ?? []).map((n) => [n.id, n]));
  /** The static node at an address: the one on that port, else one that names no port. */
  const staticAt = (address: string, port: number | null): string | undefined => {
    const ids = staticByAddress.get(address);
    if (!ids) return undefined;
    const byId = staticById;
    return ids.find((id) => port !== null && byId.get(id)?.port === port) ?? ids.find((id) => byId.get(id)?.port === undefined) ?? ids[0];
  };

  // Outbound connections: the connecting process → the service it reaches.
  for (const o of seen) {
    const own = new Set(o.sockets.addresses ?? []);
    for (const c of o.sockets.connections) {
      if (c.direction !== "outbound" || c.peer_port === null) continue;
      const from = sourceOf(o.edgeId, c);
      const owner = ownerOf(o.edgeId, own, c.peer_address);
      let to: string;
      if (owner && owner !== "ambiguous") to = target(owner, c.peer_port, c.peer_address);
      else to = staticAt(c.peer_address, c.peer_port) ?? external(c.peer_address, c.peer_port, o.edgeId, owner === "ambiguous");
      if (from !== to) addLink(from, to, c.peer_port, c.count, o.edgeId);
    }
  }

  // Inbound connections: only what the outbound side did not already show (a peer outside the
  // fleet, or a peer edge whose list left the connection out): from a host node when the peer is
  // an edge (its process unknown), from an external node when it is not.
  const linkedFromEdge = new Set([...links.values()].map((l) => `${nodes.get(l.from)?.edge_id ?? ""}|${l.to}`));
  const externalClients = new Map<string, number>();
  for (const o of seen) {
    const own = new Set(o.sockets.addresses ?? []);
    for (const c of [...o.sockets.connections].sort((a, b) => b.count - a.count)) {
      if (c.direction !== "inbound" || c.local_port === null) continue;
      const to = target(o.edgeId, c.local_port, c.local_address);
      const owner = ownerOf(o.edgeId, own, c.peer_address);
      if (owner && owner !== "ambiguous") {
        // The peer edge's own sockets already linked one of its processes here (the usual case).
        // A connection within one edge shows both ends in its own list: the outbound end is the link.
        if (owner === o.edgeId || linkedFromEdge.has(`${owner}|${to}`)) continue;
        const from = `host:${owner}`;
        if (!nodes.has(from)) nodes.set(from, { id: from, kind: "host", name: owner, source: "observed", edge_id: owner, addresses: [] });
        addLink(from, to, c.local_port, c.count, o.edgeId);
        continue;
      }
      const st = staticAt(c.peer_address, null);
      if (st) {
        addLink(st, to, c.local_port, c.count, o.edgeId);
        continue;
      }
      const n = externalClients.get(to) ?? 0;
      if (n >= MAX_EXTERNAL_CLIENTS_PER_SERVICE && !nodes.has(`ext:${c.peer_address}`)) {
        const svc = nodes.get(to)!;
        svc.description = `more external clients than shown: connections from ${MAX_EXTERNAL_CLIENTS_PER_SERVICE}+ addresses outside the fleet`;
        continue;
      }
      externalClients.set(to, n + 1);
      addLink(external(c.peer_address, null, o.edgeId, owner === "ambiguous"), to, c.local_port, c.count, o.edgeId);
    }
  }

  // The static file: its nodes, then its links between any two known nodes.
  for (const n of input.static?.nodes ?? []) {
    if (nodes.has(n.id)) {
      problems.push(`static node "${n.id}": an observed node has this id; the static one is left out`);
      continue;
    }
    nodes.set(n.id, { id: n.id, kind: n.kind, name: n.name, source: "static", addresses: n.addresses, ...(n.port ? { port: n.port } : {}), labels: n.labels, ...(n.edge_id ? { edge_id: n.edge_id } : {}), ...(n.description ? { description: n.description } : {}) });
  }
  for (const l of input.static?.links ?? []) {
    const missing = [l.from, l.to].filter((id) => !nodes.has(id));
    if (missing.length) {
      problems.push(`static link ${l.from} -> ${l.to}: no node ${missing.map((m) => `"${m}"`).join(" or ")} (observed ids look like svc:<edge>:<port>)`);
      continue;
    }
    const id = `${l.from}->${l.to}`;
    const seenLink = links.get(id);
    if (seenLink) {
      seenLink.description ??= l.description;
      continue;
    }
    links.set(id, { id, from: l.from, to: l.to, port: l.port ?? null, connections: 0, source: "static", observed_by: [], ...(l.description ? { description: l.description } : {}) });
  }

  const edges: EdgeCollection[] = input.observations.map((o) => ({ edge_id: o.edgeId, collected_at: o.collectedAt?.toISOString() ?? null, error: o.error })).sort((a, b) => (a.edge_id < b.edge_id ? -1 : 1));
  for (const n of nodes.values()) n.observed_by?.sort();
  for (const l of links.values()) l.observed_by.sort();
  const byId = <T extends { id: string }>(a: T, b: T) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  return {
    built_at: (input.now ?? new Date()).toISOString(),
    nodes: [...nodes.values()].sort(byId),
    links: [...links.values()].sort(byId),
    edges,
    problems,
    static_file: input.staticFile ?? "",
    build_ms: Math.round((performance.now() - t0) * 100) / 100,
  };
}
