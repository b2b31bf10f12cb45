/**
 * The layout's rules (issue 27), checked on the production files' import graph (type-only imports
 * included): no import circles; the edge never imports the manager and the framework neither; the
 * manager imports the edge only where it runs one in process (the local edge, the eval harness's edge); no production file
 * over 600 lines. `npx tsx scripts/arch.ts` prints the figures.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { importCircles, importsOf, productionFiles, ROOT } from "../scripts/arch.ts";

const files = productionFiles();

describe("the layout", () => {
  it("finds the production files it checks", () => {
    expect(files.length).toBeGreaterThan(150);
    expect(files).toContain("manager/calls/execute.ts");
    expect(files.some((f) => f.endsWith(".test.ts"))).toBe(false);
  });

  it("has no import circles between production files", () => {
    expect(importCircles(files)).toEqual([]);
  });

  it("finds a circle when there is one (the check itself)", () => {
    const graph: Record<string, string[]> = { a: ["b"], b: ["c"], c: ["a"], d: ["a"], e: ["e"], f: [] };
    const circles = importCircles(Object.keys(graph), (f) => graph[f]);
    expect(circles.map((c) => c.join(","))).toEqual(expect.arrayContaining(["a,b,c", "e"]));
    expect(circles).toHaveLength(2);
  });

  it("keeps edge/ and skill/ free of manager/, and manager/ off edge/ but for the local edge and the eval edge", () => {
    const bad: string[] = [];
    for (const f of files) {
      for (const t of importsOf(f)) {
        if ((f.startsWith("edge/") || f.startsWith("skill/")) && t.startsWith("manager/")) bad.push(`${f} → ${t}`);
        if (f.startsWith("skill/") && t.startsWith("edge/")) bad.push(`${f} → ${t}`);
        // The two places that run an edge in the manager's process: the local edge and the eval harness's simulated edge.
        if (f.startsWith("manager/") && t.startsWith("edge/") && f !== "manager/fleet/local-edge.ts" && f !== "manager/eval/fixture-edge.ts") bad.push(`${f} → ${t}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it("has no production file over 600 lines", () => {
    const long = files.map((f) => ({ f, n: readFileSync(join(ROOT, f), "utf8").split("\n").length })).filter((x) => x.n > 600);
    expect(long).toEqual([]);
  });
});
