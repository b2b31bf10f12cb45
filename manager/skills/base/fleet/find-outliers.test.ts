import { describe, expect, it } from "vitest";
import { createFindOutlierEdges } from "./find-outliers.ts";
import { createRankEdges, rankSamples } from "./rank-edges.ts";
import { fakeDeps, loadOutput, runTool, type FakeEdge } from "./fleet.testkit.ts";

const five: FakeEdge[] = ["n-1", "n-2", "n-3", "n-4", "n-5"].map((id) => ({ id, labels: { role: "web" } }));
const load1 = (id: string) => ({ "n-1": 0.4, "n-2": 0.5, "n-3": 0.4, "n-4": 24, "n-5": 0.6 })[id] ?? 0;

describe("find_outlier_edges", () => {
  it("names the loaded edge with its score and explanation", async () => {
    const { deps, calls } = fakeDeps(five, (i) => ({ output: loadOutput(load1(i.edgeId!), 4) }));
    const r = await runTool(createFindOutlierEdges(deps), { metric: "load_per_cpu", selector: "role=web" });
    expect(r.success).toBe(true);
    const out = r.output as any;
    expect(out).toMatchObject({ metric: "load_per_cpu", compared: 5, median: 0.125, threshold: 3.5, direction: "both" });
    expect(out.outliers.map((o: any) => o.edge_id)).toEqual(["n-4"]);
    expect(out.outliers[0]).toMatchObject({ value: 6, side: "high", detail: "load1 24 on 4 CPUs" });
    expect(out.outliers[0].explanation).toMatch(/^load_per_cpu 6 load\/CPU \(load1 24 on 4 CPUs\) is above the median 0\.125 of 5 edges; MAD 0\.025; .*z = \+\d+(\.\d+)?, beyond the threshold 3\.5$/);
    expect(out.scores[0].edge_id).toBe("n-4");
    expect(calls.every((c) => c.key === "host_load")).toBe(true);
  });

  it("reads disk use from host_files: the fullest writable filesystem", async () => {
    const fs = (pct: number) => ({ filesystems: [{ mount: "/", fs_type: "ext4", read_only: false, used_pct: 20 }, { mount: "/data", fs_type: "xfs", read_only: false, used_pct: pct }, { mount: "/snap/x", fs_type: "squashfs", read_only: true, used_pct: 100 }] });
    const { deps, calls } = fakeDeps(five, (i) => ({ output: fs(i.edgeId === "n-2" ? 97 : 30) }));
    const out = (await runTool(createFindOutlierEdges(deps), { metric: "disk_used_pct", direction: "high" })).output as any;
    expect(out.outliers).toMatchObject([{ edge_id: "n-2", value: 97, detail: "fullest filesystem /data (xfs)" }]);
    expect(calls[0]).toMatchObject({ key: "host_files", params: { limit: 200 } });
  });

  it("refuses to compare fewer than 3 edges that report the metric, naming the ones that failed", async () => {
    const { deps } = fakeDeps(five, (i) => (["n-1", "n-2"].includes(i.edgeId!) ? { output: loadOutput(1) } : { error: { code: "deadline_exceeded", message: "too slow" } }));
    const r = await runTool(createFindOutlierEdges(deps), { metric: "load1" });
    expect(r.success).toBe(false);
    expect(r.error!.code).toBe("too_few_edges");
    expect(r.error!.message).toBe("only 2 of 5 targeted edges reported load1 (n-3: deadline_exceeded, n-4: deadline_exceeded, n-5: deadline_exceeded); at least 3 are needed to compare an edge with its peers");
    expect(r.error!.hint).toMatch(/rank_edges/);
  });

  it("lists edges without a value (no swap) under failures and compares the rest", async () => {
    const withSwap = (pct: number) => ({ ...(loadOutput(1) as object), swap: { total_bytes: 100, free_bytes: 100 - pct, used_bytes: pct, used_pct: pct } });
    const { deps } = fakeDeps(five, (i) => ({ output: i.edgeId === "n-5" ? loadOutput(1) : withSwap(({ "n-1": 80, "n-2": 5, "n-3": 6, "n-4": 4 } as Record<string, number>)[i.edgeId!]) }));
    const out = (await runTool(createFindOutlierEdges(deps), { metric: "swap_used_pct" })).output as any;
    expect(out.compared).toBe(4);
    expect(out.failures).toEqual([{ edge_id: "n-5", code: "no_value", message: "the edge has no swap", hint: expect.any(String) }]);
    expect(out.outliers.map((o: any) => o.edge_id)).toEqual(["n-1"]);
  });
});

describe("rank_edges", () => {
  it("ranks by the metric, highest first, top N", async () => {
    const { deps } = fakeDeps(five, (i) => ({ output: loadOutput(load1(i.edgeId!), 4) }));
    const out = (await runTool(createRankEdges(deps), { metric: "load1", limit: 2 })).output as any;
    expect(out.ranked).toEqual([
      { rank: 1, edge_id: "n-4", value: 24, detail: "4 CPUs" },
      { rank: 2, edge_id: "n-5", value: 0.6, detail: "4 CPUs" },
    ]);
    expect(out).toMatchObject({ compared: 5, returned: 2, order: "desc" });
    const asc = (await runTool(createRankEdges(deps), { metric: "load1", order: "asc", limit: 3 })).output as any;
    expect(asc.ranked.map((x: any) => [x.rank, x.edge_id])).toEqual([
      [1, "n-1"],
      [1, "n-3"],
      [3, "n-2"],
    ]);
  });

  it("gives ties one rank (1, 2, 2, 4) and orders them by edge id", () => {
    const r = rankSamples(
      [
        { edgeId: "d", value: 1 },
        { edgeId: "c", value: 5 },
        { edgeId: "b", value: 5 },
        { edgeId: "a", value: 9 },
      ],
      "desc",
    );
    expect(r.map((s) => [s.rank, s.edgeId])).toEqual([
      [1, "a"],
      [2, "b"],
      [2, "c"],
      [4, "d"],
    ]);
  });
});
