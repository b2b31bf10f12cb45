import net from "node:net";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import hostSockets from "../../edge/builtin/host-sockets.ts";
import type { HostSocketsOutput } from "../../skill/catalog/host-sockets.ts";
import { buildSkill } from "../../skill/registry.ts";
import { runSkill } from "../../skill/run.ts";
import { validateParams } from "../../skill/validate.ts";
import { buildTopology, MAX_EXTERNAL_CLIENTS_PER_SERVICE } from "./build.ts";
import { inbound, listen, observed, out, smallFleet, smallStatic, sockets } from "./build.testkit.ts";

const graph = buildTopology({ observations: smallFleet(), static: smallStatic, staticFile: "/etc/ongrid/topology.yaml" });
const node = (id: string) => graph.nodes.find((n) => n.id === id);
const link = (from: string, to: string) => graph.links.find((l) => l.from === from && l.to === to);

describe("buildTopology", () => {
  it("makes a service node per edge and listening port, one for several addresses (a wildcard: the edge's own), named by its process", () => {
    expect(node("svc:web:443")).toEqual({ id: "svc:web:443", kind: "service", name: "nginx", source: "observed", edge_id: "web", port: 443, addresses: ["10.0.0.1"], process: { pid: 10, name: "nginx" }, description: expect.stringContaining("more external clients") });
    expect(node("svc:api:6379")).toMatchObject({ name: "redis-server", addresses: ["127.0.0.1"], edge_id: "api" });
    expect(graph.nodes.filter((n) => n.kind === "service" && !n.inferred).map((n) => n.id).sort()).toEqual(["svc:api:6379", "svc:api:8080", "svc:api:9100", "svc:db:5432", "svc:web:443"]);
  });

  it("links a connecting process's service to the service on the edge that owns the peer address", () => {
    expect(link("svc:web:443", "svc:api:8080")).toEqual({ id: "svc:web:443->svc:api:8080", from: "svc:web:443", to: "svc:api:8080", port: 8080, connections: 3, source: "observed", observed_by: ["web"] });
    // A process listening on two ports connects out as its lowest one.
    expect(link("svc:api:8080", "svc:db:5432")).toMatchObject({ port: 5432, connections: 4, observed_by: ["api"] });
    expect(graph.links.some((l) => l.from === "svc:api:9100")).toBe(false);
    // Loopback is the edge itself.
    expect(link("svc:api:8080", "svc:api:6379")).toMatchObject({ port: 6379, connections: 2 });
  });

  it("does not link the same connection twice from its inbound side", () => {
    expect(graph.links.filter((l) => l.to === "svc:api:8080")).toHaveLength(1);
    expect(graph.links.filter((l) => l.to === "svc:api:6379")).toHaveLength(1);
    expect(graph.links.filter((l) => l.to === "svc:db:5432").map((l) => l.from).sort()).toEqual(["ext:10.0.0.8", "svc:api:8080"]);
  });

  it("takes a server's worker (another pid, the same name) for its service, not for a client", () => {
    const g = buildTopology({
      observations: [
        observed("w", sockets(["10.2.0.1"], [listen(443, 100, "nginx")], [out("10.2.0.1", "10.2.0.2", 8080, 101, "nginx", 3), out("10.2.0.1", "10.2.0.2", 8080, 102, "curl", 1)])),
        observed("a", sockets(["10.2.0.2"], [listen(8080, 200, "node")], [])),
      ],
    });
    expect(g.links.map((l) => [l.from, l.to, l.connections])).toEqual([
      ["proc:w:curl", "svc:a:8080", 1],
      ["svc:w:443", "svc:a:8080", 3],
    ]);
    // Two unrelated apps of one name listening: a third process of that name is neither's.
    const two = buildTopology({
      observations: [
        observed("w", sockets(["10.2.0.1"], [listen(3000, 300, "node"), listen(4000, 400, "node")], [out("10.2.0.1", "10.2.0.2", 8080, 500, "node", 1)])),
        observed("a", sockets(["10.2.0.2"], [listen(8080, 200, "node")], [])),
      ],
    });
    expect(two.links.map((l) => l.from)).toEqual(["proc:w:node"]);
  });

  it("gives a process that only connects out a client node, and infers a target the peer edge did not report", () => {
    expect(node("proc:api:cron-report")).toMatchObject({ kind: "client", edge_id: "api", process: { pid: 22, name: "cron-report" } });
    expect(node("svc:db:9999")).toMatchObject({ kind: "service", edge_id: "db", port: 9999, inferred: true, name: "port 9999" });
    expect(link("proc:api:cron-report", "svc:db:9999")).toMatchObject({ connections: 1 });
  });

  it("makes peers outside the fleet external nodes, observed by the edges that saw them, and caps external clients per service", () => {
    expect(node("ext:203.0.113.7:443")).toEqual({ id: "ext:203.0.113.7:443", kind: "external", name: "203.0.113.7:443", source: "observed", addresses: ["203.0.113.7"], port: 443, observed_by: ["api"] });
    expect(node("ext:10.0.0.8")).toMatchObject({ kind: "external", observed_by: ["db"] });
    const clients = graph.links.filter((l) => l.to === "svc:web:443" && l.from.startsWith("ext:198.51.100."));
    expect(clients).toHaveLength(MAX_EXTERNAL_CLIENTS_PER_SERVICE);
    // The busiest clients are the ones shown.
    expect(clients.map((l) => l.connections).sort((a, b) => b - a)[MAX_EXTERNAL_CLIENTS_PER_SERVICE - 1]).toBe(6);
  });

  it("does not resolve an address two edges report (a docker bridge): the peer stays external, marked ambiguous", () => {
    expect(node("ext:172.17.0.1:2375")).toMatchObject({ kind: "external", ambiguous: true, observed_by: ["web"] });
    expect(graph.nodes.some((n) => n.id === "svc:api:2375" || n.id === "svc:db:2375")).toBe(false);
  });

  it("merges the static file: connections to a static node's address reach it; its links join observed nodes; a link to an unknown node is a problem", () => {
    expect(node("orders-rds")).toEqual({ id: "orders-rds", kind: "database", name: "Orders RDS", source: "static", addresses: ["10.9.0.5"], port: 5432, labels: { team: "data" } });
    expect(link("svc:api:8080", "orders-rds")).toMatchObject({ source: "observed", connections: 2, port: 5432 });
    expect(graph.nodes.some((n) => n.id === "ext:10.9.0.5:5432")).toBe(false);
    expect(link("svc:api:8080", "stripe")).toEqual({ id: "svc:api:8080->stripe", from: "svc:api:8080", to: "stripe", port: 443, connections: 0, source: "static", observed_by: [], description: "payments" });
    expect(graph.problems).toEqual([expect.stringMatching(/^static link svc:api:8080 -> no-such-node: no node "no-such-node"/)]);
    expect(graph.static_file).toBe("/etc/ongrid/topology.yaml");
  });

  it("is deterministic: nodes and links sorted by id, whatever the order of the observations", () => {
    const again = buildTopology({ observations: [...smallFleet()].reverse(), static: smallStatic, staticFile: "/etc/ongrid/topology.yaml", now: new Date(graph.built_at) });
    expect({ ...again, build_ms: 0 }).toEqual({ ...graph, build_ms: 0 });
    expect(graph.nodes.map((n) => n.id)).toEqual([...graph.nodes.map((n) => n.id)].sort());
  });

  it("links from a host node when the peer edge's own list left the connection out, and reports each edge's collection", () => {
    const g = buildTopology({
      observations: [
        observed("a", sockets(["10.1.0.1"], [listen(80, 1, "httpd")], [inbound("10.1.0.1", 80, "10.1.0.2", 1, "httpd", 2)])),
        observed("b", sockets(["10.1.0.2"], [], [])),
        { edgeId: "c", collectedAt: null, sockets: null, error: "unavailable: edge \"c\" is offline" },
      ],
    });
    expect(g.nodes.find((n) => n.id === "host:b")).toMatchObject({ kind: "host", edge_id: "b" });
    expect(g.links).toEqual([expect.objectContaining({ from: "host:b", to: "svc:a:80", connections: 2, observed_by: ["a"] })]);
    expect(g.edges).toEqual([
      { edge_id: "a", collected_at: "2026-01-01T00:00:00.000Z", error: "" },
      { edge_id: "b", collected_at: "2026-01-01T00:00:00.000Z", error: "" },
      { edge_id: "c", collected_at: null, error: 'unavailable: edge "c" is offline' },
    ]);
  });
});

describe("buildTopology over host_sockets's real output", () => {
  let server: net.Server;
  let client: net.Socket;
  const accepted: net.Socket[] = [];
  beforeAll(async () => {
    server = net.createServer((s) => accepted.push(s));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    client = net.connect((server.address() as net.AddressInfo).port, "127.0.0.1");
    await new Promise((r) => client.once("connect", r));
    for (let i = 0; i < 100 && !accepted.length; i++) await new Promise((r) => setTimeout(r, 10));
  });
  afterAll(() => {
    client?.destroy();
    for (const s of accepted) s.destroy();
    server?.close();
  });

  it("links this process's connection to its own listener on this host (loopback is the same edge)", async () => {
    const port = (server.address() as net.AddressInfo).port;
    const skill = buildSkill(hostSockets);
    const r = await runSkill(skill, validateParams(skill, { port }), { callId: "t", timeoutMs: 30_000, outputCapBytes: 1 << 22, log: pino({ level: "silent" }), settings: {} });
    expect(r.success, JSON.stringify(r.error)).toBe(true);
    const g = buildTopology({ observations: [observed("here", r.output as HostSocketsOutput)] });
    // The client end belongs to this process, which also listens: the link is from the listener's node to itself, so none is drawn;
    // a connection from a process that does not listen is drawn from its client node.
    expect(g.nodes.find((n) => n.id === `svc:here:${port}`)).toMatchObject({ kind: "service", process: { pid: process.pid } });
    expect(g.links).toEqual([]);
    const o = r.output as HostSocketsOutput;
    expect(o.connections.map((c) => c.direction).sort()).toEqual(["inbound", "outbound"]);
    const noListener = { ...o, listening: [] };
    const g2 = buildTopology({ observations: [observed("here", noListener)] });
    expect(g2.links.map((l) => [l.from.startsWith("proc:here:"), l.to, l.port])).toEqual([[true, `svc:here:${port}`, port]]);
    expect(g2.nodes.find((n) => n.id === `svc:here:${port}`)).toMatchObject({ inferred: true });
  });
});
