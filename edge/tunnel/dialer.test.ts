import { describe, expect, it } from "vitest";
import { backoffDelay } from "./dialer.ts";

describe("reconnect backoff (full jitter)", () => {
  const b = { baseMs: 250, maxMs: 30_000 };
  it("waits a random time in [0, min(max, base·2ⁿ)]", () => {
    expect(backoffDelay(0, b, () => 0.999)).toBe(249);
    expect(backoffDelay(3, b, () => 0.5)).toBe(1000);
    expect(backoffDelay(10, b, () => 0.999)).toBe(29_970);
    expect(backoffDelay(1000, b, () => 0.999)).toBe(29_970); // capped, no overflow
    expect(backoffDelay(5, b, () => 0)).toBe(0);
  });

  it("spreads a fleet's retries instead of synchronising them", () => {
    const delays = Array.from({ length: 1000 }, () => backoffDelay(6, b));
    const buckets = new Set(delays.map((d) => Math.floor(d / 1000)));
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...delays)).toBeLessThan(16_000);
    expect(buckets.size).toBeGreaterThanOrEqual(14); // 16 one-second buckets, nearly all used
  });
});
