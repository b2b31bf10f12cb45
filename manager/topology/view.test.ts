import { describe, expect, it } from "vitest";
import { parseSelector } from "../fleet/selector.ts";
import type { Caller } from "../identity/caller.ts";
import { buildTopology } from "./build.ts";
import { smallFleet, smallLabels, smallStatic } from "./build.testkit.ts";
import { expand, neighbours, nodeMatches, selectNodes, viewFor } from "./view.ts";

const graph = buildTopology({ observations: smallFleet(), static: smallStatic });
const labels = { labels: (id: string) => smallLabels[id] };
const admin: Caller = { userId: "ada", role: "admin" };
const webTeam: Caller = { userId: "wes", role: "operator", reach: ["team=web"] };
const dataTeam: Caller = { userId: "dee", role: "viewer", reach: ["team=data"] };

/** Every edge id a view mentions anywhere: nodes, observers, links. */
function edgesMentioned(v: ReturnType<typeof viewFor>): Set<string> {
  const out = new Set<string>();
  for (const n of v.nodes.values()) {
    if (n.edge_id) out.add(n.edge_id);
    for (const e of n.observed_by ?? []) out.add(e);
  }
  for (const l of v.links) for (const e of l.observed_by) out.add(e);
  return out;
}

describe("the topology as a caller sees it", () => {
  it("shows everything to a caller whose reach is not limited, with each node's edge labels", () => {
    const v = viewFor(graph, admin, labels);
    expect(v.nodes.size).toBe(graph.nodes.length);
    expect(v.links).toHaveLength(graph.links.length);
    expect(v.hidden).toBe(0);
    expect(v.nodes.get("svc:db:5432")!.labels).toEqual({ team: "data" });
    expect(v.nodes.get("orders-rds")!.labels).toEqual({ team: "data" });
  });

  it("never shows a node on an edge outside the reach: not as a node, a neighbour, a link end or an observer", () => {
    const v = viewFor(graph, webTeam, labels);
    expect([...edgesMentioned(v)].sort()).toEqual(["api", "web"]);
    expect([...v.nodes.keys()].filter((id) => id.includes(":db:") || id === "orders-rds")).toEqual([]);
    expect(v.links.some((l) => l.to === "svc:db:5432" || l.to === "orders-rds")).toBe(false);
    expect([...neighbours(v, ["svc:api:8080"])].sort()).toEqual(["ext:203.0.113.7:443", "stripe", "svc:api:6379", "svc:web:443"]);
    expect(expand(v, "svc:api:8080", "out", 6, 100).reached.map((r) => r.id)).toEqual(["svc:api:8080", "ext:203.0.113.7:443", "stripe", "svc:api:6379"]);
    // The static node with team=web labels is seen; the team=data one is not.
    expect(v.nodes.has("stripe")).toBe(true);
    expect(v.hidden).toBe(4); // svc:db:5432, svc:db:9999, ext:10.0.0.8 (seen by db only), orders-rds
  });

  it("shows the other side only its own part, and an external peer only through an edge that saw it", () => {
    const v = viewFor(graph, dataTeam, labels);
    expect([...v.nodes.keys()].sort()).toEqual(["ext:10.0.0.8", "orders-rds", "svc:db:5432", "svc:db:9999"]);
    expect(v.links.map((l) => l.id)).toEqual(["ext:10.0.0.8->svc:db:5432"]);
    expect(expand(v, "svc:db:5432", "in", 6, 100).reached.map((r) => r.id)).toEqual(["svc:db:5432", "ext:10.0.0.8"]);
    expect([...v.nodes.values()].some((n) => nodeMatches(n, "10.0.0.2") || nodeMatches(n, "api"))).toBe(false);
  });

  it("filters an external peer's observers to the edges the caller reaches", () => {
    const g = { ...graph, nodes: graph.nodes.map((n) => (n.id === "ext:203.0.113.7:443" ? { ...n, observed_by: ["api", "db"] } : n)) };
    expect(viewFor(g, webTeam, labels).nodes.get("ext:203.0.113.7:443")!.observed_by).toEqual(["api"]);
    expect(viewFor(g, dataTeam, labels).nodes.get("ext:203.0.113.7:443")!.observed_by).toEqual(["db"]);
  });

  it("hides nodes of an edge the manager no longer knows from a limited caller", () => {
    const v = viewFor(graph, { userId: "x", role: "viewer", reach: ["team"] }, { labels: (id) => (id === "db" ? undefined : smallLabels[id]) });
    expect([...v.nodes.values()].some((n) => n.edge_id === "db")).toBe(false);
    expect(v.nodes.has("svc:web:443")).toBe(true);
  });

  it("selects by label selector, edge and kind", () => {
    const v = viewFor(graph, admin, labels);
    expect(selectNodes(v, { selector: parseSelector("team=data") }).sort()).toEqual(["orders-rds", "svc:db:5432", "svc:db:9999"]);
    expect(selectNodes(v, { edgeIds: ["web"], kind: "service" })).toEqual(["svc:web:443"]);
    expect(selectNodes(v, { kind: "static" }).sort()).toEqual(["orders-rds", "stripe"]);
    expect(selectNodes(v, { kind: "client" })).toEqual(["proc:api:cron-report"]);
  });

  it("finds nodes by port, label, name, address and id", () => {
    const v = viewFor(graph, admin, labels);
    const find = (q: string) => [...v.nodes.values()].filter((n) => nodeMatches(n, q)).map((n) => n.id).sort();
    expect(find("5432")).toEqual(["orders-rds", "svc:db:5432"]);
    expect(find("team=data")).toEqual(["orders-rds", "svc:db:5432", "svc:db:9999"]);
    expect(find("redis")).toEqual(["svc:api:6379"]);
    expect(find("10.9.0.5")).toEqual(["orders-rds"]);
    expect(find("proc:api:cron-report")).toEqual(["proc:api:cron-report"]);
    expect(find("  ")).toEqual([]);
  });

  it("expands breadth first to the depth asked, both ways, within the limit", () => {
    const v = viewFor(graph, admin, labels);
    expect(expand(v, "svc:web:443", "out", 1, 100).reached.map((r) => r.id)).toEqual(["svc:web:443", "ext:172.17.0.1:2375", "svc:api:8080"]);
    const two = expand(v, "svc:web:443", "out", 2, 100).reached;
    expect(two.find((r) => r.id === "svc:db:5432")).toEqual({ id: "svc:db:5432", distance: 2 });
    expect(expand(v, "svc:db:5432", "in", 2, 100).reached.map((r) => r.id)).toEqual(["svc:db:5432", "ext:10.0.0.8", "svc:api:8080", "svc:web:443"]);
    const capped = expand(v, "svc:web:443", "both", 3, 4);
    expect([capped.reached.length, capped.truncated]).toEqual([4, true]);
  });
});
