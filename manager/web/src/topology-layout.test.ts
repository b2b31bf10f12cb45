/** The topology page's layout: columns by dependency depth, cycles not looping forever, rows that follow callers, paths inside the drawing. */
import { describe, expect, it } from "vitest";
import { BOX, columns, layoutTopology } from "./topology-layout.ts";

const chain = [
  { from: "web", to: "api" },
  { from: "api", to: "db" },
  { from: "cron", to: "db" },
];

describe("layoutTopology", () => {
  it("puts callers left of what they depend on: a column per link of the longest path", () => {
    expect(Object.fromEntries(columns(["db", "api", "web", "cron"], chain))).toEqual({ web: 0, cron: 0, api: 1, db: 2 });
  });

  it("ranks a cycle without looping, and draws the link that closes it as a back link", () => {
    const links = [...chain, { from: "db", to: "web" }];
    const col = columns(["web", "api", "db", "cron"], links);
    expect(new Set(col.values()).size).toBeGreaterThan(1);
    const l = layoutTopology(["web", "api", "db", "cron"], links);
    expect(l.links.filter((r) => r.back).map((r) => `${r.from}->${r.to}`)).toHaveLength(1);
    expect(l.links).toHaveLength(4);
  });

  it("places every node once, without overlap, inside the drawing, and routes links between their boxes", () => {
    const ids = ["web", "api", "db", "cron", "lonely"];
    const l = layoutTopology(ids, chain);
    expect([...l.nodes.keys()].sort()).toEqual([...ids].sort());
    const boxes = [...l.nodes.values()];
    for (const a of boxes) {
      expect(a.x + BOX.w).toBeLessThanOrEqual(l.width);
      expect(a.y + BOX.h).toBeLessThanOrEqual(l.height);
      for (const b of boxes) if (a !== b) expect(a.x === b.x && a.y === b.y).toBe(false);
    }
    const api = l.nodes.get("api")!;
    const link = l.links.find((r) => r.from === "web" && r.to === "api")!;
    expect(link.path.startsWith(`M${l.nodes.get("web")!.x + BOX.w},`)).toBe(true);
    expect(link.path.endsWith(` ${api.x},${api.y + BOX.h / 2}`)).toBe(true);
    expect(layoutTopology([], [])).toMatchObject({ links: [], width: expect.any(Number) });
  });

  it("orders a column by the rows of the nodes that call into it", () => {
    // a1 is called by z (row 1 of column 0), a2 by b (row 0): a2 goes above a1 although its id sorts after.
    const l = layoutTopology(["b", "z", "a1", "a2"], [{ from: "z", to: "a1" }, { from: "b", to: "a2" }]);
    expect(l.nodes.get("a2")!.row).toBeLessThan(l.nodes.get("a1")!.row);
  });
});
