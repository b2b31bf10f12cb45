/**
 * K5 on real parts: three network namespaces on a bridge, each with a compiled edge and real
 * services talking to each other — shop-web (HTTP on 8081, keep-alive requests to the API) and a
 * batch client in one, orders-api (HTTP on 8080, two connections held to the database) in another,
 * orders-db (TCP on 5432) in the third; the manager listens on the bridge. A refresh asks each
 * edge for its sockets (host_sockets, gated and audited); the topology then shows the services
 * and who calls whom, find/expand/get answer, and callers with a limited reach see only their
 * part. The console's /topology draws the same graph, reach-filtered, in headless Chromium.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { createTopologyStore } from "../manager/topology/store.ts";
import { EDGE_BIN } from "./global-setup.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { stopChild, waitFor } from "./support/edge.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { requiredUnderCi } from "./support/ci.ts";
import { describeInBrowser, launchBrowser, openConsole, screenshot } from "./support/browser.ts";

const pid = process.pid;
const k = (pid % 200) + 20;
const NET = `10.201.${k}`;
const BRIDGE = `otb${pid % 100000}`;
const MANAGER_IP = `${NET}.1`;
const HOSTS = [
  { edge: "topo-db", ns: `ongrid-topo-${pid}-db`, ip: `${NET}.10`, team: "data" },
  { edge: "topo-api", ns: `ongrid-topo-${pid}-api`, ip: `${NET}.11`, team: "app" },
  { edge: "topo-web", ns: `ongrid-topo-${pid}-web`, ip: `${NET}.12`, team: "app" },
] as const;
const [DB, API, WEB] = HOSTS;

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: "pipe", encoding: "utf8" });

/** Why network namespaces cannot be made here (undefined when they can). */
function netnsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return "not root (ip netns needs CAP_SYS_ADMIN)";
  try {
    sh("ip", ["netns", "add", `ongrid-topo-probe-${pid}`]);
    sh("ip", ["netns", "del", `ongrid-topo-probe-${pid}`]);
    return undefined;
  } catch (err) {
    return `ip netns add failed: ${(err as Error).message.split("\n")[0]}`;
  }
}
const why = netnsUnavailable();
requiredUnderCi("the topology netns test", () => why);

let m: TestManager;
let dir: string;
const children: ChildProcess[] = [];
const tokens: Record<string, string> = {};

/** Runs `node -e code` inside a namespace; resolves once it prints "ready". */
function service(ns: string, code: string): Promise<ChildProcess> {
  const child = spawn("ip", ["netns", "exec", ns, process.execPath, "-e", code], { stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let out = "";
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (b: Buffer) => {
      out += b;
      if (out.includes("ready")) resolve(child);
    });
    child.stderr!.on("data", (b: Buffer) => (out += b));
    child.once("exit", (c) => reject(new Error(`service in ${ns} exited (${c}):\n${out}`)));
  });
}

/** Starts a compiled edge inside a namespace, enrolled with the team label; resolves once the manager holds its session. */
async function nsEdge(h: (typeof HOSTS)[number]): Promise<void> {
  const { token } = await m.edges.enroll(h.edge, { labels: { team: h.team } });
  const child = spawn("ip", ["netns", "exec", h.ns, EDGE_BIN, "--manager", m.url, "--token", token, "--id", h.edge, "--label", `team=${h.team}`], { stdio: ["ignore", "pipe", "pipe"], env: { PATH: process.env.PATH, HOME: process.env.HOME } });
  children.push(child);
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const ok = await waitFor(() => Boolean(m.hub.session(h.edge)) || child.exitCode !== null, 20_000);
  if (!ok || !m.hub.session(h.edge)) throw new Error(`edge ${h.edge} in ${h.ns} did not connect:\n${out}`);
}

function skills(token: string): Client<typeof SkillService> {
  return createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(token)] }));
}

/** Calls a topology tool as `who`; answers its output, or its error for a failed call. */
async function tool(who: string, key: string, params: Record<string, unknown>, sessionId = ""): Promise<any> {
  const res = await skills(tokens[who]).executeSkill({ key, sessionId, input: { case: "paramsJson", value: JSON.stringify(params) } });
  return res.result!.success ? toJson(ValueSchema, res.result!.output!) : { error: res.result!.error };
}
const ids = (out: any): string[] => out.nodes.map((n: { id: string }) => n.id);
const linkIds = (out: any): string[] => out.links.map((l: { from: string; to: string }) => `${l.from}->${l.to}`);

describe.skipIf(why !== undefined)("K5: service topology over network namespaces with real services", () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ongrid-topo-"));
    sh("ip", ["link", "add", BRIDGE, "type", "bridge"]);
    sh("ip", ["addr", "add", `${MANAGER_IP}/24`, "dev", BRIDGE]);
    sh("ip", ["link", "set", BRIDGE, "up"]);
    HOSTS.forEach((h, i) => {
      const host = `otv${pid % 100000}${i}`;
      sh("ip", ["netns", "add", h.ns]);
      sh("ip", ["link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", h.ns]);
      sh("ip", ["link", "set", host, "master", BRIDGE]);
      sh("ip", ["link", "set", host, "up"]);
      sh("ip", ["-n", h.ns, "addr", "add", `${h.ip}/24`, "dev", "eth0"]);
      sh("ip", ["-n", h.ns, "link", "set", "eth0", "up"]);
      sh("ip", ["-n", h.ns, "link", "set", "lo", "up"]);
    });
    // What no edge observes: a SaaS API the API calls (seen by the app team) and a ledger database (the data team's).
    const staticFile = join(dir, "topology.yaml");
    writeFileSync(
      staticFile,
      `nodes:\n  - id: payments-api\n    name: Payments SaaS\n    kind: saas\n    labels: { team: app }\n  - id: ledger-db\n    kind: database\n    addresses: [${NET}.99]\n    port: 5432\n    labels: { team: data }\nlinks:\n  - from: svc:topo-api:8080\n    to: payments-api\n    port: 443\n`,
    );
    m = await bootManager({ "server.host": MANAGER_IP, "topology.refresh_interval": "0s", "topology.static_file": staticFile });
    tokens.admin = m.adminToken;
    tokens.ann = await makeUser(m, "ann", "viewer", { reach: "team=app" });
    tokens.dan = await makeUser(m, "dan", "operator", { reach: "team=data" });
    await Promise.all(HOSTS.map(nsEdge));

    await service(DB.ns, `process.title = "orders-db"; require("net").createServer((s) => s.pipe(s)).listen(5432, "0.0.0.0", () => console.log("ready"));`);
    await service(
      API.ns,
      `process.title = "orders-api"; const net = require("net"); const pool = [];
       require("http").createServer((q, r) => r.end("ok")).listen(8080, "0.0.0.0", () => {
         let up = 0; for (let i = 0; i < 2; i++) pool.push(net.connect(5432, "${DB.ip}", () => ++up === 2 && console.log("ready")));
       });`,
    );
    await service(
      WEB.ns,
      `process.title = "shop-web"; const http = require("http"); const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
       const get = (cb) => http.get({ host: "${API.ip}", port: 8080, agent }, (r) => { r.resume(); r.on("end", cb); });
       http.createServer((q, r) => r.end("shop")).listen(8081, "0.0.0.0", () => get(() => { console.log("ready"); setInterval(() => get(() => {}), 300); }));`,
    );
    await service(WEB.ns, `process.title = "batch-client"; const s = require("net").connect(8080, "${API.ip}", () => console.log("ready")); setInterval(() => {}, 1000);`);
  }, 120_000);

  afterAll(async () => {
    for (const c of children.reverse()) await stopChild(c, "SIGKILL").catch(() => undefined);
    await m?.stop().catch((err) => console.warn("topology test: manager stop failed:", err));
    for (const h of HOSTS) {
      try {
        sh("ip", ["netns", "del", h.ns]);
      } catch {
        /* never made */
      }
    }
    try {
      sh("ip", ["link", "del", BRIDGE]);
    } catch {
      /* never made */
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("says there is no topology before the first refresh, then builds it from every edge's sockets, audited per edge", async () => {
    expect((await tool("admin", "get_topology", {})).error).toMatchObject({ code: "not_found", hint: expect.stringMatching(/refresh: true/) });
    const out = await tool("admin", "get_topology", { refresh: true }, "topo-refresh-1");
    expect(out.refresh).toMatchObject({ asked: 3, succeeded: 3, failed: [], not_offering: [] });
    expect(out.edges_observed).toBe(3);
    const node = (id: string) => out.nodes.find((n: any) => n.id === id);
    expect(node("svc:topo-db:5432")).toMatchObject({ kind: "service", name: "orders-db", edge_id: "topo-db", port: 5432, labels: { team: "data" }, process: { name: "orders-db" } });
    expect(node("svc:topo-api:8080")).toMatchObject({ name: "orders-api", edge_id: "topo-api", labels: { team: "app" } });
    expect(node("svc:topo-web:8081")).toMatchObject({ name: "shop-web", edge_id: "topo-web" });
    expect(node("proc:topo-web:batch-client")).toMatchObject({ kind: "client", edge_id: "topo-web" });
    expect(node("payments-api")).toMatchObject({ source: "static", kind: "saas" });
    const link = (from: string, to: string) => out.links.find((l: any) => l.from === from && l.to === to);
    expect(link("svc:topo-api:8080", "svc:topo-db:5432")).toMatchObject({ port: 5432, connections: 2, source: "observed" });
    expect(link("svc:topo-web:8081", "svc:topo-api:8080")).toMatchObject({ port: 8080, source: "observed" });
    expect(link("proc:topo-web:batch-client", "svc:topo-api:8080")).toMatchObject({ connections: 1 });
    expect(link("svc:topo-api:8080", "payments-api")).toMatchObject({ source: "static", port: 443 });
    // Each edge's tunnel to the manager is a connection too: to an address no edge owns.
    const port = new URL(m.url).port;
    expect(node(`ext:${MANAGER_IP}:${port}`)).toMatchObject({ kind: "external", observed_by: ["topo-api", "topo-db", "topo-web"] });
    // Stored: the graph survives in PostgreSQL/PGlite, and every edge call was gated and audited as the admin in the tool's session.
    const stored = await createTopologyStore(m.database).loadGraph();
    expect(stored!.nodes.map((n) => n.id).sort()).toEqual(ids(out).sort());
    await m.audit.flush();
    const rows = await m.audit.list({ sessionId: "topo-refresh-1" });
    expect(rows.filter((r) => r.toolName === "host_sockets").map((r) => [r.deviceId, r.callerUserId, r.decision]).sort()).toEqual([
      ["topo-api", "admin", "allow"],
      ["topo-db", "admin", "allow"],
      ["topo-web", "admin", "allow"],
    ]);
    expect(rows.filter((r) => r.toolName === "get_topology")).toHaveLength(1);
  });

  it("answers what a failing service depends on, and what depends on it", async () => {
    const deps = await tool("admin", "expand_topology", { node: "svc:topo-web:8081", direction: "out", depth: 3 });
    expect(deps.nodes.map((n: any) => [n.id, n.distance])).toEqual([
      ["svc:topo-web:8081", 0],
      ["svc:topo-api:8080", 1],
      ["payments-api", 2],
      ["svc:topo-db:5432", 2],
    ]);
    const dependents = await tool("admin", "expand_topology", { node: "svc:topo-db:5432", direction: "in", depth: 2 });
    expect(ids(dependents).sort()).toEqual(["proc:topo-web:batch-client", "svc:topo-api:8080", "svc:topo-db:5432", "svc:topo-web:8081"]);
    const found = await tool("admin", "find_topology_node", { query: "5432" });
    expect(found.nodes.map((n: any) => [n.id, n.dependents])).toEqual([
      ["ledger-db", 0],
      ["svc:topo-db:5432", 1],
    ]);
    // A service listening on every address is found by its edge's address (an alert's instance, an error's peer).
    expect(ids(await tool("admin", "find_topology_node", { query: DB.ip }))).toEqual(["svc:topo-db:5432"]);
    expect(ids(await tool("admin", "find_topology_node", { query: "orders-api" }))).toEqual(["svc:topo-api:8080"]);
    const sub = await tool("admin", "get_topology", { selector: "team=data", neighbours: true });
    expect(ids(sub)).toEqual(expect.arrayContaining(["ledger-db", "svc:topo-db:5432", "svc:topo-api:8080"]));
    expect(ids(sub).filter((id) => id.includes("topo-web"))).toEqual([]);
  });

  it("shows a caller with a limited reach only its part: no node, neighbour, link or address of an edge outside it", async () => {
    const ann = await tool("ann", "get_topology", {});
    expect(ids(ann)).toEqual(expect.arrayContaining(["svc:topo-api:8080", "svc:topo-web:8081", "proc:topo-web:batch-client", "payments-api"]));
    const text = JSON.stringify(ann);
    expect(text).not.toContain("topo-db");
    expect(text).not.toContain(DB.ip);
    expect(text).not.toContain("ledger-db");
    expect(ann.hidden_nodes).toBe(0); // how many are hidden is told to an admin only
    expect(ann.nodes.find((n: any) => n.kind === "external").observed_by).toEqual(["topo-api", "topo-web"]);
    const deps = await tool("ann", "expand_topology", { node: "svc:topo-api:8080", direction: "out", depth: 6 });
    expect(ids(deps)).toEqual(["svc:topo-api:8080", "payments-api"]);
    const hidden = await tool("ann", "expand_topology", { node: "svc:topo-db:5432" });
    const unknown = await tool("ann", "expand_topology", { node: "svc:topo-nowhere:1" });
    expect(hidden.error).toMatchObject({ code: "not_found", message: 'no node "svc:topo-db:5432" in the topology you may see' });
    expect(hidden.error.hint).toBe(unknown.error.hint);
    expect(ids(await tool("ann", "find_topology_node", { query: "5432" }))).toEqual([]);

    const dan = await tool("dan", "get_topology", {});
    expect(ids(dan)).toEqual(expect.arrayContaining(["ledger-db", "svc:topo-db:5432", `ext:${MANAGER_IP}:${new URL(m.url).port}`]));
    // Every node is on the data team's edge, in its static part, or seen only through its edge.
    expect(dan.nodes.every((n: any) => n.edge_id === "topo-db" || n.id === "ledger-db" || (n.kind === "external" && n.observed_by.join() === "topo-db"))).toBe(true);
    expect(linkIds(dan).some((l) => l.includes("topo-api") || l.includes("topo-web"))).toBe(false);
    const used = await tool("dan", "expand_topology", { node: "svc:topo-db:5432", direction: "in" });
    expect(ids(used)).toEqual(["svc:topo-db:5432"]);
    expect(used.hint).toMatch(/Nothing you may see is linked to this node/);
  });

  it("refreshes only the edges a limited caller reaches, audited as that caller", async () => {
    const out = await tool("ann", "get_topology", { refresh: true }, "topo-refresh-ann");
    expect(out.refresh).toMatchObject({ asked: 2, succeeded: 2, left_out: 0 });
    await m.audit.flush();
    const rows = await m.audit.list({ sessionId: "topo-refresh-ann", toolName: "host_sockets" });
    expect(rows.map((r) => [r.deviceId, r.callerUserId]).sort()).toEqual([
      ["topo-api", "ann"],
      ["topo-web", "ann"],
    ]);
    // The data team's part is still there for those who may see it.
    expect(ids(await tool("admin", "find_topology_node", { query: "orders-db" }))).toEqual(["svc:topo-db:5432"]);
  });

  describeInBrowser("the console's /topology", () => {
    let browser: Browser;
    beforeAll(async () => {
      // The graph the pages draw (when this block runs alone, nothing has refreshed it yet).
      await tool("admin", "get_topology", { refresh: true });
      browser = await launchBrowser();
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
    });

    it("draws the graph; a node shows what it depends on; the name filter narrows it; a limited caller sees only its part", async () => {
      const page = await openConsole(browser, m.url, tokens.admin);
      await page.getByRole("link", { name: "Topology" }).click();
      await page.getByRole("heading", { name: "Topology", level: 1 }).waitFor();
      const svg = page.getByTestId("topology-svg");
      await svg.locator('[data-node="svc:topo-db:5432"]').waitFor();
      for (const id of ["svc:topo-api:8080", "svc:topo-web:8081", "payments-api"]) expect(await svg.locator(`[data-node="${id}"]`).count()).toBe(1);
      expect(await svg.locator('[data-link="svc:topo-api:8080->svc:topo-db:5432"]').count()).toBe(1);
      await svg.locator('[data-node="svc:topo-api:8080"]').click();
      const detail = page.getByTestId("topology-detail");
      await detail.getByRole("heading", { name: "orders-api" }).waitFor();
      expect(await detail.getByRole("button", { name: "orders-db" }).count()).toBe(1);
      expect(await detail.getByRole("button", { name: "shop-web" }).count()).toBe(1);
      await screenshot(page, "topology");
      await page.getByLabel("Name, address or port").fill("orders-db");
      await svg.locator('[data-node="svc:topo-web:8081"]').waitFor({ state: "detached" });
      expect(await svg.locator("[data-node]").evaluateAll((els) => els.map((e) => e.getAttribute("data-node")).sort())).toEqual(["svc:topo-api:8080", "svc:topo-db:5432"]);
      await page.getByLabel("Name, address or port").fill("");
      await page.getByLabel("Label selector").fill("team=data");
      await page.getByRole("button", { name: "Apply" }).click();
      await svg.locator('[data-node="svc:topo-web:8081"]').waitFor({ state: "detached" });
      expect(await svg.locator('[data-node="ledger-db"]').count()).toBe(1);
      await page.context().close();

      const annPage = await openConsole(browser, m.url, tokens.ann);
      await annPage.goto(`${m.url}/topology`);
      const annSvg = annPage.getByTestId("topology-svg");
      await annSvg.locator('[data-node="svc:topo-api:8080"]').waitFor();
      expect(await annSvg.locator('[data-node="svc:topo-db:5432"]').count()).toBe(0);
      expect(await annPage.locator("main").textContent()).not.toContain("orders-db");
      await annPage.getByRole("button", { name: "Refresh now" }).click();
      await annPage.getByText("refreshed: 2 of 2 edges answered").waitFor();
      await annPage.context().close();
    });
  });
});
