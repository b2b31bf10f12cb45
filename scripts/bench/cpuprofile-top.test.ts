import { describe, expect, test } from "vitest";
import { summarise } from "./cpuprofile-top.ts";

/** root → a (self) and root → b → c: a sampled at 100 and 300 µs, c at 200 and 400 µs, each sample 100 µs. */
const profile = {
  startTime: 0,
  endTime: 500,
  nodes: [
    { id: 1, callFrame: { functionName: "(root)", url: "", lineNumber: -1 }, children: [2, 3] },
    { id: 2, callFrame: { functionName: "a", url: "file:///x/manager/a.ts", lineNumber: 9 } },
    { id: 3, callFrame: { functionName: "b", url: "file:///x/manager/b.ts", lineNumber: 0 }, children: [4] },
    { id: 4, callFrame: { functionName: "c", url: "file:///x/manager/b.ts", lineNumber: 4 } },
  ],
  samples: [2, 4, 2, 4, 2],
  timeDeltas: [100, 100, 100, 100, 100],
};

describe("cpuprofile-top", () => {
  test("counts self and inclusive time per function, whole profile", () => {
    const out = summarise(profile, [], 10);
    expect(out).toMatch(/sampled 0 ms over 0\.00 s \(whole profile\)/);
    // a: samples at 100 and 300 (100 µs each; the last sample, at 500, has no next delta).
    expect(out).toMatch(/0 ms\s+50\.0 %\s+a manager\/a\.ts:10/);
    // b is inclusive of c's two samples.
    expect(out.split("inclusive, by function:")[1]).toMatch(/50\.0 %\s+b manager\/b\.ts:1/);
  });

  test("a window keeps only the samples inside it", () => {
    // [150, 250) holds only the sample at 200 (c).
    const out = summarise(profile, [[150, 250]], 10);
    const self = out.split("self, by file:")[0]!;
    expect(self).toMatch(/100\.0 %\s+c manager\/b\.ts:5/);
    expect(self).not.toMatch(/ a manager/);
    expect(out).toMatch(/over 0\.00 s/);
  });
});
