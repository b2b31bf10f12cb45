/**
 * What a simulated edge answers to host_sockets: a realistic, deterministic service mix that links
 * services across edges, so the topology built from a simulated fleet has the shape of a real one.
 * Edges come in groups of ten by the number at the end of their id: one PostgreSQL (…0), two APIs
 * (…1, …2) calling it, a Redis (…3) and a payment provider outside the fleet, six nginx web
 * servers (…4–…9) calling the APIs and called by clients on the internet; every edge runs sshd and
 * a node exporter scraped by one monitoring host outside the fleet, and has the docker bridge
 * address every host shares.
 */
import type { Connection, HostSocketsOutput, ListeningSocket } from "../../skill/catalog/host-sockets.ts";

/** The edge's number: the digits its id ends with (a hash for an id without any). */
export function edgeNumber(id: string): number {
  const m = /(\d+)$/.exec(id);
  return m ? Number(m[1]) : [...id].reduce((a, c) => (a * 31 + c.charCodeAt(0)) >>> 0, 7) % 100_000;
}

/** The address of the edge numbered `i`. */
export const simAddress = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
const MONITOR = "10.255.255.1";
const DOCKER = "172.17.0.1";

const listen = (port: number, pid: number, process: string, address = "0.0.0.0"): ListeningSocket => ({ protocol: "tcp", address, port, pid, process });
const conn = (direction: "inbound" | "outbound", local: string, localPort: number | null, peer: string, peerPort: number | null, pid: number, process: string, count: number): Connection => ({
  direction, protocol: "tcp", local_address: local, local_port: localPort, peer_address: peer, peer_port: peerPort, state: "ESTABLISHED", pid, process, count,
});

/** host_sockets's output on the simulated edge `id` (aggregated, as the topology asks for it). */
export function simulatedSockets(id: string): HostSocketsOutput {
  const i = edgeNumber(id);
  const me = simAddress(i);
  const base = i - (i % 10);
  const role = i % 10;
  const listening: ListeningSocket[] = [listen(22, 700, "sshd"), listen(9100, 710, "node_exporter")];
  const connections: Connection[] = [conn("inbound", me, 9100, MONITOR, null, 710, "node_exporter", 1), conn("inbound", me, 22, "192.0.2.10", null, 700, "sshd", 1)];
  if (role === 0) {
    listening.push(listen(5432, 900, "postgres"), listen(5432, 900, "postgres", "::"));
    for (const api of [base + 1, base + 2]) connections.push(conn("inbound", me, 5432, simAddress(api), null, 900 + (api % 7), "postgres", 4));
  } else if (role === 1 || role === 2) {
    listening.push(listen(8080, 1200, "node"), listen(9464, 1200, "node", "127.0.0.1"));
    connections.push(
      conn("outbound", me, null, simAddress(base), 5432, 1200, "node", 4),
      conn("outbound", me, null, simAddress(base + 3), 6379, 1200, "node", 2),
      conn("outbound", me, null, `203.0.113.${(base / 10) % 250 + 1}`, 443, 1200, "node", 1),
      conn("outbound", "127.0.0.1", null, "127.0.0.1", 9464, 1300, "otel-collector", 1),
      conn("inbound", "127.0.0.1", 9464, "127.0.0.1", null, 1200, "node", 1),
    );
    for (let w = base + 4; w <= base + 9; w++) if ((w % 2) + 1 === role) connections.push(conn("inbound", me, 8080, simAddress(w), null, 1200, "node", 3));
  } else if (role === 3) {
    listening.push(listen(6379, 800, "redis-server"));
    for (const api of [base + 1, base + 2]) connections.push(conn("inbound", me, 6379, simAddress(api), null, 800, "redis-server", 2));
  } else {
    listening.push(listen(443, 1000, "nginx"), listen(80, 1000, "nginx"));
    connections.push(conn("outbound", me, null, simAddress(base + (i % 2) + 1), 8080, 1001, "nginx", 3));
    for (let c = 0; c < 5; c++) connections.push(conn("inbound", me, 443, `198.51.${(i >> 8) & 255}.${((i & 255) * 5 + c) % 256}`, null, 1001, "nginx", 1 + ((i + c) % 7)));
  }
  return {
    addresses: [me, DOCKER],
    listening,
    connections,
    totals: { listening: listening.length, connections: connections.reduce((a, c) => a + c.count, 0), unowned: 0 },
    truncated: false,
  };
}
