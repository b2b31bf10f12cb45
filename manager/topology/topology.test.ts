import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, expect, it } from "vitest";
import { describeBothBackends } from "../../test/support/pg.ts";
import type { ExecuteInput } from "../calls/types.ts";
import { fakeDeps, type Answer, type FakeEdge } from "../skills/base/fleet/fleet.testkit.ts";
import { smallFleet } from "./build.testkit.ts";
import { COLLECTOR, createTopology, SOCKETS_SKILL, type TopologyDeps } from "./topology.ts";

const dir = mkdtempSync(join(tmpdir(), "ongrid-topology-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const log = pino({ level: "silent" });
const outputs = new Map(smallFleet().map((o) => [o.edgeId, o.sockets]));
const admin = { userId: "ada", role: "admin" };

function fleet(): FakeEdge[] {
  const skills = [SOCKETS_SKILL, "host_load"];
  return [
    { id: "web", labels: { team: "web" }, skills },
    { id: "api", labels: { team: "web" }, skills },
    { id: "db", labels: { team: "data" }, skills },
    { id: "old", labels: { team: "web" }, skills: ["host_load"] },
    { id: "gone", labels: { team: "web" }, online: false, skills },
  ];
}

describeBothBackends("the topology's collection, storage and schedule", (backend) => {
  async function setup(o: { answer?: (input: ExecuteInput) => Answer; staticFile?: string; intervalMs?: number } = {}) {
    const database = await backend.open();
    const edges = fleet();
    const { deps, calls } = fakeDeps(edges, o.answer ?? ((input) => ({ output: outputs.get(input.edgeId!) })));
    const make = () => createTopology({ ...(deps as unknown as Pick<TopologyDeps, "hub" | "edges" | "dispatcher">), database, log, staticFile: o.staticFile ?? "", intervalMs: o.intervalMs ?? 0 });
    return { database, edges, calls, topology: make(), make };
  }

  it("asks every connected edge in reach that offers host_sockets, stores each observation and the graph, and reports what it did", async () => {
    const { topology, calls, make } = await setup();
    expect((await topology.graph()).built_at).toBe("");
    const { graph, report } = await topology.refresh({ caller: admin, sessionId: "s-1" });
    expect(calls.map((c) => c.edgeId).sort()).toEqual(["api", "db", "web"]);
    expect(calls.every((c) => c.key === SOCKETS_SKILL && c.sessionId === "s-1" && c.caller === admin)).toBe(true);
    expect(calls[0].params).toEqual({ state: "all", aggregate: true, limit: 150 });
    expect(report).toMatchObject({ asked: 3, succeeded: 3, failed: [], not_offering: ["old"], left_out: 0 });
    expect(graph.links.find((l) => l.id === "svc:web:443->svc:api:8080")).toBeDefined();
    expect(graph.edges.map((e) => [e.edge_id, Boolean(e.collected_at), e.error])).toEqual([
      ["api", true, ""],
      ["db", true, ""],
      ["old", false, "the edge does not offer host_sockets (an agent older than this manager)"],
      ["web", true, ""],
    ]);
    // Stored: another instance on the same database (another manager) reads the same graph.
    expect(await make().graph()).toEqual(graph);
  });

  it("keeps an edge's last good sockets when it fails, saying why beside them", async () => {
    let failDb = false;
    const { topology } = await setup({ answer: (input) => (failDb && input.edgeId === "db" ? { error: { code: "deadline_exceeded", message: "skill \"host_sockets\" did not finish within 10000 ms" } } : { output: outputs.get(input.edgeId!) }) });
    const first = await topology.refresh({ caller: admin, sessionId: "s-1" });
    failDb = true;
    const { graph, report } = await topology.refresh({ caller: admin, sessionId: "s-2" });
    expect(report.failed).toEqual([{ edge_id: "db", error: 'deadline_exceeded: skill "host_sockets" did not finish within 10000 ms' }]);
    expect(graph.nodes.some((n) => n.id === "svc:db:5432")).toBe(true);
    const db = graph.edges.find((e) => e.edge_id === "db")!;
    expect(db).toEqual({ edge_id: "db", collected_at: first.graph.edges.find((e) => e.edge_id === "db")!.collected_at, error: expect.stringMatching(/^deadline_exceeded/) });
  });

  it("refreshes only what a limited caller reaches, leaving the other edges' observations as they were", async () => {
    const { topology, calls } = await setup();
    const before = await topology.refresh({ caller: admin, sessionId: "s-1" });
    calls.length = 0;
    await new Promise((r) => setTimeout(r, 5));
    const { graph, report } = await topology.refresh({ caller: { userId: "wes", role: "operator", reach: ["team=web"] }, sessionId: "s-2" });
    expect(calls.map((c) => c.edgeId).sort()).toEqual(["api", "web"]);
    expect(report).toMatchObject({ asked: 2, left_out: 0, not_offering: ["old"] });
    const at = (g: typeof graph, id: string) => g.edges.find((e) => e.edge_id === id)!.collected_at;
    expect(at(graph, "db")).toBe(at(before.graph, "db"));
    expect(at(graph, "web")! > at(before.graph, "web")!).toBe(true);
    // An admin is told how many connected edges lay outside the reach; anyone else is told 0.
    const adminLimited = await topology.refresh({ caller: { userId: "ada", role: "admin", reach: ["team=web"] }, sessionId: "s-3" });
    expect(adminLimited.report.left_out).toBe(1);
  });

  it("forgets the observations of an edge that is revoked, and records an output cut by the output cap as a failure", async () => {
    const { topology, edges } = await setup({ answer: (input) => (input.edgeId === "api" ? { output: "…[truncated: 100 of 70000 bytes shown]" } : { output: outputs.get(input.edgeId!) }) });
    const { graph, report } = await topology.refresh({ caller: admin, sessionId: "s-1" });
    expect(report.failed).toEqual([{ edge_id: "api", error: expect.stringMatching(/not the expected shape/) }]);
    expect(graph.nodes.some((n) => n.edge_id === "api" && n.kind === "service" && !n.inferred)).toBe(false);
    edges.find((e) => e.id === "web")!.revoked = true;
    const after = await topology.rebuild();
    expect(after.graph.nodes.some((n) => n.edge_id === "web")).toBe(false);
    expect((await topology.store.observations()).map((o) => o.edgeId).sort()).toEqual(["api", "db", "old"]);
  });

  it("merges the static file, and keeps its last valid content when it breaks, saying so", async () => {
    const file = join(dir, `static-${backend.kind}.yaml`);
    writeFileSync(file, "nodes:\n  - id: orders-rds\n    kind: database\n    addresses: [10.9.0.5]\n    port: 5432\n");
    const { topology } = await setup({ staticFile: file });
    const { graph } = await topology.refresh({ caller: admin, sessionId: "s-1" });
    expect(graph.nodes.find((n) => n.id === "orders-rds")).toMatchObject({ source: "static", kind: "database" });
    expect(graph.links.find((l) => l.id === "svc:api:8080->orders-rds")).toMatchObject({ connections: 2 });
    expect(graph.problems).toEqual([]);
    writeFileSync(file, "nodes:\n  - id: orders-rds\n    port: 99999\n");
    const broken = (await topology.rebuild()).graph;
    expect(broken.nodes.find((n) => n.id === "orders-rds")).toMatchObject({ port: 5432 });
    expect(broken.problems).toEqual([`topology.static_file ${file}: nodes[0].port: must be an integer from 1 to 65535, got 99999 (rule: range)`, "the static nodes and links shown are the file's last valid content"]);
  });

  it("refreshes on its schedule as the manager's own collector, and stops", async () => {
    const { topology, calls } = await setup({ intervalMs: 30 });
    const stop = topology.start();
    for (let i = 0; i < 200 && calls.length < 6; i++) await new Promise((r) => setTimeout(r, 25));
    await stop();
    expect(calls.length).toBeGreaterThanOrEqual(6);
    expect(calls.every((c) => c.caller === COLLECTOR && c.sessionId!.startsWith("topology-"))).toBe(true);
    const n = calls.length;
    await new Promise((r) => setTimeout(r, 100));
    expect(calls.length).toBe(n);
    expect((await topology.graph()).nodes.length).toBeGreaterThan(5);
  });
});
