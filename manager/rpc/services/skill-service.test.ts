/** How many results one batched FanOutSkill message may carry (the batches themselves: test/edge.e2e.test.ts, manager/calls/fan-out.test.ts). */
import { expect, test } from "vitest";
import { resultsPerMessage } from "./skill-service.ts";

test("a batch holds 256 results at most, fewer as the output cap grows, so a batch of capped results stays under 4 MiB, and never none", () => {
  expect(resultsPerMessage(256)).toBe(256);
  expect(resultsPerMessage(65_536)).toBe(45); // the default cap
  for (const cap of [256, 4096, 65_536, 1_048_576, 67_108_864]) {
    const n = resultsPerMessage(cap);
    expect(n).toBeGreaterThanOrEqual(1);
    if (n > 1) expect(n * (cap + 4096)).toBeLessThan(4 * 1024 * 1024);
  }
  expect(resultsPerMessage(67_108_864)).toBe(1);
});
