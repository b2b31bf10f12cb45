import { describe, expect, it } from "vitest";
import { explain, findOutliers, median, round, scoreSamples, spreadOf, type Sample } from "./outliers.ts";

const samples = (values: number[]): Sample[] => values.map((value, i) => ({ edgeId: `e${i + 1}`, value }));

describe("median and MAD", () => {
  it("takes the middle value, or the mean of the middle two", () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(() => median([])).toThrow(RangeError);
  });

  it("measures spread by the median absolute deviation, which one extreme value does not inflate", () => {
    const s = spreadOf([1, 2, 3, 4, 100]);
    expect(s).toMatchObject({ n: 5, median: 3, mad: 1, basis: "mad" });
    expect(s.scale).toBeCloseTo(1.4826, 6);
    // The same data with a tenfold larger extreme: median, MAD and scale do not move.
    expect(spreadOf([1, 2, 3, 4, 1000])).toMatchObject({ median: 3, mad: 1 });
  });
});

describe("modified z-scores", () => {
  it("flags the one edge far from its peers with a score of (value − median) / (1.4826 × MAD)", () => {
    const r = findOutliers(samples([1, 2, 3, 4, 100]));
    expect(r.outliers.map((o) => o.edgeId)).toEqual(["e5"]);
    expect(r.outliers[0].score).toBeCloseTo(97 / 1.4826, 6);
    // Sorted by |score|: the outlier first, then the others, each with its signed score.
    expect(r.scored[0].edgeId).toBe("e5");
    expect(r.scored.find((s) => s.edgeId === "e1")!.score).toBeCloseTo(-2 / 1.4826, 6);
  });

  it("gives tied values the same score and orders ties by edge id", () => {
    const r = findOutliers([
      { edgeId: "c", value: 9 },
      { edgeId: "a", value: 9 },
      { edgeId: "b", value: 5 },
      { edgeId: "d", value: 5 },
      { edgeId: "e", value: 5 },
      { edgeId: "f", value: 6 },
      { edgeId: "g", value: 5 },
    ]);
    expect(r.spread).toMatchObject({ median: 5, mad: 0 });
    const a = r.scored.find((s) => s.edgeId === "a")!;
    const c = r.scored.find((s) => s.edgeId === "c")!;
    expect(a.score).toBe(c.score);
    expect(r.scored.slice(0, 2).map((s) => s.edgeId)).toEqual(["a", "c"]);
  });

  it("when MAD is 0 (more than half the edges report the same value) divides by the metric's resolution, exactly as for a MAD just above 0", () => {
    const exact = findOutliers(samples([1, 1, 1, 1, 1, 1, 10]), { resolution: 0.5 });
    expect(exact.spread).toMatchObject({ median: 1, mad: 0, scale: 0.5, basis: "resolution" });
    expect(exact.outliers.map((o) => [o.edgeId, o.score])).toEqual([["e7", 18]]);
    // A little noise among the peers gives a MAD of 0.01: below the resolution too, so the score does not jump.
    const noisy = findOutliers(samples([1, 1, 1.01, 0.99, 1.01, 0.99, 10]), { resolution: 0.5 });
    expect(noisy.spread.mad).toBeCloseTo(0.01, 9);
    expect(noisy.spread.basis).toBe("resolution");
    expect(noisy.outliers[0].score).toBeCloseTo(18, 9);
  });

  it("without a resolution, falls back to 1.2533 × the mean absolute deviation when MAD is 0", () => {
    const r = findOutliers(samples([1, 1, 1, 1, 10]));
    expect(r.spread).toMatchObject({ median: 1, mad: 0, meanAbsDev: 9 / 5, basis: "mean_abs_dev" });
    expect(r.spread.scale).toBeCloseTo(1.2533 * 1.8, 6);
    expect(r.outliers.map((o) => o.edgeId)).toEqual(["e5"]);
    expect(r.outliers[0].score).toBeCloseTo(9 / (1.2533 * 1.8), 6);
    // The score of one deviant among n equal edges is n / 1.2533 whatever its size: with a stricter threshold it is not flagged.
    expect(findOutliers(samples([1, 1, 1, 1, 10]), { threshold: 4 }).outliers).toEqual([]);
  });

  it("scores nothing when every edge reports the same value (no division by zero)", () => {
    const r = findOutliers(samples([2, 2, 2]));
    expect(r.spread).toMatchObject({ mad: 0, meanAbsDev: 0, scale: 0, basis: "none" });
    expect(r.scored.map((s) => s.score)).toEqual([0, 0, 0]);
    expect(r.outliers).toEqual([]);
  });

  it("never divides by less than the metric's resolution, so negligible differences are not outliers", () => {
    const values = [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.11];
    expect(findOutliers(samples(values)).outliers.map((o) => o.edgeId)).toEqual(["e10"]);
    const floored = findOutliers(samples(values), { resolution: 0.05 });
    expect(floored.spread).toMatchObject({ basis: "resolution", scale: 0.05 });
    expect(floored.outliers).toEqual([]);
    expect(floored.scored[0].score).toBeCloseTo(0.2, 6);
  });

  it("looks only at the side asked for", () => {
    const data = samples([10, 11, 10, 9, 10, 50, -30]);
    expect(findOutliers(data, { direction: "both" }).outliers.map((o) => o.edgeId).sort()).toEqual(["e6", "e7"]);
    expect(findOutliers(data, { direction: "high" }).outliers.map((o) => o.edgeId)).toEqual(["e6"]);
    expect(findOutliers(data, { direction: "low" }).outliers.map((o) => o.edgeId)).toEqual(["e7"]);
  });

  it("still computes with fewer than 3 edges (the tool refuses to call that a comparison)", () => {
    const r = scoreSamples(samples([1, 9]));
    expect(r.spread).toMatchObject({ n: 2, median: 5, mad: 4 });
    expect(findOutliers(samples([1, 9])).outliers).toEqual([]);
  });

  it("explains a score with the value, the median, the MAD, the scale and z", () => {
    const r = findOutliers(samples([1, 1, 1, 1, 10]));
    const line = explain(r.outliers[0], r.spread, { metric: "load_per_cpu", unit: "load/CPU", threshold: 3.5, resolution: 0.05, detail: "load1 40 on 4 CPUs" });
    expect(line).toBe(
      "load_per_cpu 10 load/CPU (load1 40 on 4 CPUs) is above the median 1 of 5 edges; MAD 0; MAD is 0 (more than half the edges report exactly the median), so scale = 1.2533 × mean absolute deviation 1.8 = 2.26; z = +3.99, beyond the threshold 3.5",
    );
    const floored = findOutliers(samples([0.1, 0.1, 0.1, 0.12, 6]), { resolution: 0.05 });
    expect(explain(floored.outliers[0], floored.spread, { metric: "load_per_cpu", unit: "load/CPU", threshold: 3.5, resolution: 0.05 })).toBe(
      "load_per_cpu 6 load/CPU is above the median 0.1 of 5 edges; MAD 0; MAD is 0 (more than half the edges report exactly the median), so scale = the metric's resolution 0.05; z = +118, beyond the threshold 3.5",
    );
  });

  it("rounds for display without losing small values", () => {
    expect(round(3.98765)).toBe(3.99);
    expect(round(0.0123456)).toBe(0.01235);
    expect(round(0)).toBe(0);
    expect(round(-0.5)).toBe(-0.5);
  });
});
