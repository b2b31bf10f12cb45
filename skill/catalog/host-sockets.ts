/** host_sockets's metadata (K5) and the shape of its output: what the edge runs (edge/builtin/host-sockets.ts) and what the manager's topology reads. */
import { defineSkillMeta } from "../define.ts";

/** Most entries of each list (listening sockets, connections) one call returns. */
export const HOST_SOCKETS_MAX_LIMIT = 2000;

export const HOST_SOCKETS = defineSkillMeta({
  key: "host_sockets",
  name: "Listening sockets and connections",
  description:
    "List this host's listening TCP sockets and its established TCP connections, each with local and peer address and port, direction (inbound to a local listener, or outbound) and the owning process (pid and name), read from /proc; plus the host's own addresses. Connections that differ only in an ephemeral port are merged with a count unless aggregate is false. Use when you need to know which process serves a port, who talks to a service, or what a service depends on; the manager's topology is built from it.",
  class: "safe",
  scope: "host",
  category: "network",
  params: {
    state: { type: "enum", description: "listening: listeners only; established: connections only; all: both.", values: ["all", "listening", "established"], default: "all" },
    port: { type: "integer", description: "Only sockets whose local or peer port is this one.", min: 1, max: 65535 },
    aggregate: { type: "boolean", description: "Merge connections that differ only in their ephemeral port (a client's own port, or the ports of a listener's clients) into one entry with a count.", default: true },
    limit: { type: "integer", description: "Most entries of each list (listening, connections) to return; the totals still count every socket.", min: 1, max: HOST_SOCKETS_MAX_LIMIT, default: 500 },
  },
  resultPreview: JSON.stringify({
    addresses: ["10.0.0.5"],
    listening: [{ protocol: "tcp", address: "0.0.0.0", port: 8080, pid: 4242, process: "node" }],
    connections: [
      { direction: "outbound", protocol: "tcp", local_address: "10.0.0.5", local_port: null, peer_address: "10.0.0.9", peer_port: 5432, state: "ESTABLISHED", pid: 4242, process: "node", count: 4 },
      { direction: "inbound", protocol: "tcp", local_address: "10.0.0.5", local_port: 8080, peer_address: "10.0.0.7", peer_port: null, state: "ESTABLISHED", pid: 4242, process: "node", count: 12 },
    ],
    totals: { listening: 1, connections: 16, unowned: 0 },
    truncated: false,
  }),
});

/** One listening socket. */
export interface ListeningSocket {
  protocol: "tcp" | "tcp6";
  /** The address it is bound to ("0.0.0.0" or "::" for every address). */
  address: string;
  port: number;
  /** The owning process, null when it could not be read (another user's process, the edge not root). */
  pid: number | null;
  process: string | null;
}

/** One established connection, or several merged (count) that differ only in an ephemeral port (null). */
export interface Connection {
  /** inbound: to one of this host's listeners; outbound: from this host to a peer's port. */
  direction: "inbound" | "outbound";
  protocol: "tcp" | "tcp6";
  local_address: string;
  local_port: number | null;
  peer_address: string;
  peer_port: number | null;
  state: string;
  pid: number | null;
  process: string | null;
  count: number;
}

/** What host_sockets returns. */
export interface HostSocketsOutput {
  /** The host's own addresses (loopback and link-local left out): how the manager finds which edge a peer address is. */
  addresses: string[];
  listening: ListeningSocket[];
  connections: Connection[];
  totals: { listening: number; connections: number; unowned: number };
  truncated: boolean;
}
