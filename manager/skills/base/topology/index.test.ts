import pino from "pino";
import { describe, expect, it } from "vitest";
import { lintSkill } from "../../../../skill/lint.ts";
import { createRegistry } from "../../../../skill/registry.ts";
import type { Caller } from "../../../identity/caller.ts";
import { buildTopology } from "../../../topology/build.ts";
import { smallFleet, smallLabels, smallStatic } from "../../../topology/build.testkit.ts";
import type { RefreshBy, Topology } from "../../../topology/topology.ts";
import type { TopologyGraph } from "../../../topology/types.ts";
import { loadConfig } from "../../../config/load.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { runTool } from "../fleet/fleet.testkit.ts";
import { createExpandTopology } from "./expand-topology.ts";
import { createFindTopologyNode } from "./find-topology-node.ts";
import { createGetTopology } from "./get-topology.ts";
import { createTopologyTools } from "./index.ts";

const built = buildTopology({ observations: smallFleet(), static: smallStatic, problems: ["topology.static_file /t.yaml: nodes[9].port: must be an integer (rule: range)"] });

/** A topology over a fixed graph; refresh records who asked. */
function fakeTopology(graph: TopologyGraph = built) {
  const refreshes: RefreshBy[] = [];
  const topology = {
    graph: async () => graph,
    edgeLabels: async () => ({ labels: (id: string) => smallLabels[id] }),
    refresh: async (by: RefreshBy) => {
      refreshes.push(by);
      return { graph, report: { asked: 2, succeeded: 2, failed: [], not_offering: [], left_out: 0, collect_ms: 1, load_ms: 1, build_ms: 1, store_ms: 1 } };
    },
    start: () => async () => {},
  } as unknown as Topology;
  return { topology, refreshes };
}

const CAP = 1 << 20;
const { topology, refreshes } = fakeTopology();
const get = createGetTopology(topology, CAP);
const find = createFindTopologyNode(topology, CAP);
const expandTool = createExpandTopology(topology, CAP);
const admin: Caller = { userId: "ada", role: "admin" };
const web: Caller = { userId: "wes", role: "operator", reach: ["team=web"] };
const data: Caller = { userId: "dee", role: "viewer", reach: ["team=data"] };
const ids = (out: any) => out.nodes.map((n: { id: string }) => n.id);

describe("the topology tools", () => {
  it("are safe, scope manager, category topology, register with tight schemas and pass the new-tool checklist", () => {
    const deps = { config: loadConfig({ env: {} }), log: pino({ level: "silent" }), database: {}, hub: {}, edges: {}, dispatcher: {} } as unknown as BaseToolDeps;
    const tools = createTopologyTools(deps, topology);
    const registry = createRegistry({ log: pino({ level: "silent" }) });
    for (const t of tools) registry.register(t);
    expect(tools.map((t) => t.key)).toEqual(["get_topology", "find_topology_node", "expand_topology"]);
    for (const t of tools) {
      expect(registry.get(t.key)!.meta).toMatchObject({ class: "safe", scope: "manager", category: "topology" });
      expect(registry.get(t.key)!.jsonSchema).toMatchObject({ type: "object", additionalProperties: false });
    }
    expect(tools.flatMap((t) => lintSkill(t))).toEqual([]);
  });

  it("get_topology: the subgraph a selector picks with its neighbours, limited to the caller's reach", async () => {
    const out = (await runTool(get, { selector: "team=data" }, { caller: admin })).output as any;
    expect(out.matched).toBe(3);
    expect(ids(out)).toEqual(["orders-rds", "svc:db:5432", "svc:db:9999", "ext:10.0.0.8", "proc:api:cron-report", "svc:api:8080"]);
    expect(out.links.map((l: any) => `${l.from}->${l.to}`).sort()).toEqual(["ext:10.0.0.8->svc:db:5432", "proc:api:cron-report->svc:db:9999", "svc:api:8080->orders-rds", "svc:api:8080->svc:db:5432"]);
    expect(out.problems).toEqual(built.problems);
    expect(built.problems).toHaveLength(2);
    // The data team sees its nodes, and nothing of the web team's even as a neighbour.
    const theirs = (await runTool(get, { selector: "team=data" }, { caller: data })).output as any;
    expect(ids(theirs)).toEqual(["orders-rds", "svc:db:5432", "svc:db:9999", "ext:10.0.0.8"]);
    expect(theirs.links.map((l: any) => `${l.from}->${l.to}`)).toEqual(["ext:10.0.0.8->svc:db:5432"]);
    expect(JSON.stringify(theirs)).not.toMatch(/"(web|api)"|svc:api|svc:web|10\.0\.0\.[12]\b/);
    // Static-file problems may name hidden nodes: counted, not shown, to anyone but an admin.
    expect(theirs).toMatchObject({ problems_count: 2, hidden_nodes: 0 });
    expect(theirs.problems).toBeUndefined();
    const everything = (await runTool(get, {}, { caller: web })).output as any;
    expect(everything.nodes.every((n: any) => n.edge_id !== "db" && n.id !== "orders-rds")).toBe(true);
    expect(everything.edges_observed).toBe(2);
  });

  it("get_topology: by edge and kind, without neighbours; refresh runs as the caller in its session", async () => {
    const out = (await runTool(get, { edge_ids: ["api"], kind: "service", neighbours: false }, { caller: admin })).output as any;
    expect(ids(out)).toEqual(["svc:api:6379", "svc:api:8080", "svc:api:9100"]);
    expect(out.links.map((l: any) => l.to)).toEqual(["svc:api:6379"]);
    const r = (await runTool(get, { refresh: true, limit: 1 }, { caller: web, sessionId: "chat-7" })).output as any;
    expect(refreshes.at(-1)).toMatchObject({ caller: web, sessionId: "chat-7" });
    expect(r.refresh).toMatchObject({ asked: 2, succeeded: 2 });
    expect([r.returned, r.truncated]).toEqual([1, true]);
    expect(r.hint).toMatch(/^Showing 1 of \d+ nodes/);
    const none = (await runTool(get, { selector: "team=nobody" }, { caller: admin })).output as any;
    expect([none.matched, none.returned]).toEqual([0, 0]);
    expect(none.hint).toMatch(/No node you may see matches selector "team=nobody"/);
  });

  it("get_topology: says so when nothing was built yet, and suggests refresh", async () => {
    const empty = createGetTopology(fakeTopology({ ...built, built_at: "", nodes: [], links: [], edges: [] }).topology, CAP);
    await expect(runTool(empty, {}, { caller: admin })).resolves.toMatchObject({ success: false, error: { code: "not_found", hint: expect.stringMatching(/refresh: true/) } });
  });

  it("stays whole JSON under the output cap by showing fewer nodes", async () => {
    const small = createGetTopology(topology, 4096);
    const r = await runTool(small, {}, { caller: admin });
    const out = r.output as any;
    expect(Buffer.byteLength(JSON.stringify(out))).toBeLessThanOrEqual(4096);
    expect(out.truncated).toBe(true);
    expect(out.returned).toBeGreaterThan(3);
    expect(out.returned).toBeLessThan(built.nodes.length);
    expect(out.links.every((l: any) => ids(out).includes(l.from) && ids(out).includes(l.to))).toBe(true);
  });

  it("find_topology_node: by port, label, address and name, exact first, with its degree; nothing outside reach", async () => {
    const port = (await runTool(find, { query: "5432" }, { caller: admin })).output as any;
    expect(port.nodes.map((n: any) => [n.id, n.dependencies, n.dependents])).toEqual([
      ["orders-rds", 0, 1],
      ["svc:db:5432", 0, 2],
    ]);
    expect(ids((await runTool(find, { query: "nginx" }, { caller: admin })).output)).toEqual(["svc:web:443"]);
    expect(ids((await runTool(find, { query: "10.9.0.5" }, { caller: admin })).output)).toEqual(["orders-rds"]);
    expect(ids((await runTool(find, { query: "team=web", kind: "static" }, { caller: admin })).output)).toEqual(["stripe"]);
    const hidden = (await runTool(find, { query: "5432" }, { caller: web })).output as any;
    expect([hidden.matched, hidden.nodes]).toEqual([0, []]);
    expect(hidden.hint).toMatch(/No node you may see matches/);
  });

  it("expand_topology: dependencies and dependents to a depth; a node outside reach answers like an unknown one", async () => {
    const deps = (await runTool(expandTool, { node: "svc:web:443", direction: "out", depth: 2 }, { caller: admin })).output as any;
    expect(deps.nodes.map((n: any) => [n.id, n.distance])).toEqual([
      ["svc:web:443", 0],
      ["ext:172.17.0.1:2375", 1],
      ["svc:api:8080", 1],
      ["ext:203.0.113.7:443", 2],
      ["orders-rds", 2],
      ["stripe", 2],
      ["svc:api:6379", 2],
      ["svc:db:5432", 2],
    ]);
    expect(deps.links.every((l: any) => l.from === "svc:web:443" || l.from === "svc:api:8080")).toBe(true);
    const limited = (await runTool(expandTool, { node: "svc:web:443", direction: "out", depth: 2 }, { caller: web })).output as any;
    expect(ids(limited)).not.toContain("svc:db:5432");
    expect(ids(limited)).not.toContain("orders-rds");
    const dependents = (await runTool(expandTool, { node: "svc:db:5432", direction: "in", depth: 1 }, { caller: admin })).output as any;
    expect(ids(dependents)).toEqual(["svc:db:5432", "ext:10.0.0.8", "svc:api:8080"]);
    const a = await runTool(expandTool, { node: "svc:db:5432" }, { caller: web });
    const b = await runTool(expandTool, { node: "svc:nowhere:1" }, { caller: web });
    expect(a.error).toMatchObject({ code: "not_found", message: 'no node "svc:db:5432" in the topology you may see' });
    expect(b.error).toMatchObject({ code: "not_found", message: 'no node "svc:nowhere:1" in the topology you may see' });
    expect(a.error!.hint).toBe(b.error!.hint);
  });

  it("refuse bad params naming the param and the rule", async () => {
    const refused = async (tool: typeof get | typeof find | typeof expandTool, params: Record<string, unknown>, re: RegExp) => {
      await expect(runTool(tool as any, params, { caller: admin })).rejects.toMatchObject({ code: "invalid_argument", message: expect.stringMatching(re) });
    };
    await refused(get, { limit: 0 }, /limit/);
    await refused(get, { kind: "database" }, /kind/);
    await refused(get, { edge_ids: ["Not An Edge"] }, /edge_ids/);
    await refused(get, { refresh: "yes" }, /refresh/);
    await refused(get, { everything: true }, /everything/);
    await refused(find, {}, /query/);
    await refused(find, { query: "   " }, /query/);
    await refused(find, { query: "x".repeat(201) }, /query/);
    await refused(expandTool, { node: "svc:a:1", depth: 7 }, /depth/);
    await refused(expandTool, { node: "svc:a:1", direction: "up" }, /direction/);
    await refused(expandTool, { node: "a b" }, /node/);
    const badSelector = await runTool(get, { selector: "team=a b" }, { caller: admin });
    expect(badSelector.error).toMatchObject({ code: "invalid_argument", message: 'selector: clause "team=a b" is not key=value, key!=value, key or !key (rule: selector)' });
  });
});
