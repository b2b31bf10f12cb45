/** The service topology's nouns (K5): nodes, links and the graph built from the edges' sockets and the static file. */
import type { HostSocketsOutput } from "../../skill/catalog/host-sockets.ts";

/** What a node stands for: a listening service, a process that only connects out, an edge whose process is unknown, something outside the fleet, or a node of the static file (its own kind). */
export type NodeKind = "service" | "client" | "host" | "external" | (string & {});

/** One node of the graph. */
export interface TopologyNode {
  /** svc:<edge>:<port>, proc:<edge>:<process>, host:<edge>, ext:<address>[:<port>], or a static file's id. */
  id: string;
  kind: NodeKind;
  name: string;
  source: "observed" | "static";
  /** The edge it runs on (observed service, client and host nodes; a static node may name one). */
  edge_id?: string;
  port?: number;
  /** Where it listens (service: a wildcard listener has its edge's addresses), the peer's address (external), the configured addresses (static). */
  addresses: string[];
  process?: { pid: number | null; name: string | null };
  /** A static node's own labels (observed nodes take their edge's labels when shown). */
  labels?: Record<string, string>;
  /** External nodes: the edges whose sockets showed it (a caller sees it only through one it reaches). */
  observed_by?: string[];
  /** A service seen only as the target of connections: its own edge did not report the listener. */
  inferred?: boolean;
  /** An external peer whose address more than one edge reports as its own. */
  ambiguous?: boolean;
  description?: string;
}

/** One directed link: from the node that connects to the node it connects to. */
export interface TopologyLink {
  /** `${from}->${to}`. */
  id: string;
  from: string;
  to: string;
  /** The port connected to (null: unknown, e.g. a static link that names none). */
  port: number | null;
  /** Established connections seen (0 for a static link). */
  connections: number;
  source: "observed" | "static";
  /** The edges whose sockets showed it. */
  observed_by: string[];
  description?: string;
}

/** How one edge's last collection went. */
export interface EdgeCollection {
  edge_id: string;
  /** When its sockets were last read successfully (null: never). */
  collected_at: string | null;
  /** Why the last attempt failed ("" when it did not). */
  error: string;
}

/** The built graph, as stored and as the tools read it. */
export interface TopologyGraph {
  built_at: string;
  nodes: TopologyNode[];
  links: TopologyLink[];
  edges: EdgeCollection[];
  /** What the build could not use: static links to unknown nodes, a static file that does not parse, … */
  problems: string[];
  /** The static file merged in ("" when none is configured). */
  static_file: string;
  build_ms: number;
}

/** One edge's stored observation: its host_sockets output and when it was read. */
export interface Observation {
  edgeId: string;
  collectedAt: Date | null;
  sockets: HostSocketsOutput | null;
  error: string;
}
