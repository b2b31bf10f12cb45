/** A small fleet's host_sockets outputs for the topology's unit tests: web → api → db, an external API, internet clients, a static database. */
import type { Connection, HostSocketsOutput, ListeningSocket } from "../../skill/catalog/host-sockets.ts";
import type { StaticTopology } from "./static-file.ts";
import type { Observation } from "./types.ts";

/** A listener. */
export const listen = (port: number, pid: number | null, process: string | null, address = "0.0.0.0"): ListeningSocket => ({ protocol: "tcp", address, port, pid, process });

/** An outbound connection (merged: the local port is null). */
export const out = (local: string, peer: string, port: number, pid: number | null, process: string | null, count = 1): Connection => ({
  direction: "outbound", protocol: "tcp", local_address: local, local_port: null, peer_address: peer, peer_port: port, state: "ESTABLISHED", pid, process, count,
});

/** An inbound connection (merged: the peer port is null). */
export const inbound = (local: string, port: number, peer: string, pid: number | null, process: string | null, count = 1): Connection => ({
  direction: "inbound", protocol: "tcp", local_address: local, local_port: port, peer_address: peer, peer_port: null, state: "ESTABLISHED", pid, process, count,
});

/** One edge's output. */
export const sockets = (addresses: string[], listening: ListeningSocket[], connections: Connection[]): HostSocketsOutput => ({
  addresses, listening, connections, totals: { listening: listening.length, connections: connections.reduce((a, c) => a + c.count, 0), unowned: 0 }, truncated: false,
});

const at = new Date("2026-01-01T00:00:00Z");
/** An observation of `edgeId`. */
export const observed = (edgeId: string, s: HostSocketsOutput): Observation => ({ edgeId, collectedAt: at, sockets: s, error: "" });

/** web (10.0.0.1, team=web) → api (10.0.0.2, team=web) → db (10.0.0.3, team=data); api also calls an external API and the static orders-rds. */
export function smallFleet(): Observation[] {
  const clients = Array.from({ length: 25 }, (_, i) => inbound("10.0.0.1", 443, `198.51.100.${i + 1}`, 10, "nginx", 25 - i));
  return [
    observed("web", sockets(["10.0.0.1"], [listen(443, 10, "nginx"), listen(443, 10, "nginx", "::")], [out("10.0.0.1", "10.0.0.2", 8080, 10, "nginx", 3), out("10.0.0.1", "172.17.0.1", 2375, 10, "nginx", 1), ...clients])),
    observed(
      "api",
      sockets(
        ["10.0.0.2", "172.17.0.1"],
        [listen(8080, 20, "node"), listen(9100, 20, "node"), listen(6379, 21, "redis-server", "127.0.0.1")],
        [
          inbound("10.0.0.2", 8080, "10.0.0.1", 20, "node", 3),
          out("10.0.0.2", "10.0.0.3", 5432, 20, "node", 4),
          out("10.0.0.2", "203.0.113.7", 443, 20, "node", 1),
          out("10.0.0.2", "10.9.0.5", 5432, 20, "node", 2),
          out("127.0.0.1", "127.0.0.1", 6379, 20, "node", 2),
          inbound("127.0.0.1", 6379, "127.0.0.1", 21, "redis-server", 2),
          out("10.0.0.2", "10.0.0.3", 9999, 22, "cron-report", 1),
        ],
      ),
    ),
    observed("db", sockets(["10.0.0.3", "172.17.0.1"], [listen(5432, 30, "postgres")], [inbound("10.0.0.3", 5432, "10.0.0.2", 30, "postgres", 4), inbound("10.0.0.3", 5432, "10.0.0.8", 30, "postgres", 1)])),
  ];
}

/** The static file of the small fleet: the managed database api uses, and a SaaS API linked by hand. */
export const smallStatic: StaticTopology = {
  nodes: [
    { id: "orders-rds", name: "Orders RDS", kind: "database", addresses: ["10.9.0.5"], port: 5432, labels: { team: "data" } },
    { id: "stripe", name: "Stripe API", kind: "saas", addresses: [], labels: { team: "web" } },
  ],
  links: [
    { from: "svc:api:8080", to: "stripe", port: 443, description: "payments" },
    { from: "svc:api:8080", to: "no-such-node" },
  ],
};

/** Labels of the small fleet's edges. */
export const smallLabels: Record<string, Record<string, string>> = { web: { team: "web" }, api: { team: "web" }, db: { team: "data" } };
