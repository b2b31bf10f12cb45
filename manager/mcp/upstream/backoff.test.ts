import { describe, expect, it } from "vitest";
import { backoffDelay, DEFAULT_BACKOFF } from "./backoff.ts";

describe("backoffDelay", () => {
  it("doubles from the initial delay up to the cap, each delay in the upper half of its step", () => {
    const low = (a: number) => backoffDelay(a, DEFAULT_BACKOFF, () => 0);
    const high = (a: number) => backoffDelay(a, DEFAULT_BACKOFF, () => 1);
    expect([0, 1, 2, 3, 4, 5, 6, 7].map(high)).toEqual([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    expect([0, 1, 2, 6].map(low)).toEqual([250, 500, 1000, 15000]);
    expect(high(10_000)).toBe(30000);
    expect(high(-3)).toBe(500);
  });

  it("spreads retries of the same step (jitter)", () => {
    const seen = new Set(Array.from({ length: 50 }, () => backoffDelay(3)));
    expect(seen.size).toBeGreaterThan(10);
    for (const d of seen) {
      expect(d).toBeGreaterThanOrEqual(2000);
      expect(d).toBeLessThanOrEqual(4000);
    }
  });
});
