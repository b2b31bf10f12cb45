/** S2: the per-address limiter of failed authentications, with time injected. */
import { describe, expect, it } from "vitest";
import { AuthFailureLimiter } from "./auth.ts";

function clock(start = 1_000_000) {
  const c = { t: start, now: () => c.t };
  return c;
}

describe("AuthFailureLimiter", () => {
  it("blocks an address after `limit` failures within the window, until the oldest leaves it", () => {
    const c = clock();
    const l = new AuthFailureLimiter({ limit: 3, windowMs: 60_000, now: c.now });
    l.recordFailure("10.0.0.1");
    c.t += 10_000;
    l.recordFailure("10.0.0.1");
    expect(l.blockedForMs("10.0.0.1")).toBe(0);
    c.t += 10_000;
    l.recordFailure("10.0.0.1"); // failures at 0 s, 10 s, 20 s
    expect(l.blockedForMs("10.0.0.1")).toBe(40_000); // the first leaves the window at 60 s
    c.t += 39_999;
    expect(l.blockedForMs("10.0.0.1")).toBe(1);
    c.t += 1;
    expect(l.blockedForMs("10.0.0.1")).toBe(0);
  });

  it("is a sliding window: failures spread wider than the window never block", () => {
    const c = clock();
    const l = new AuthFailureLimiter({ limit: 3, windowMs: 1000, now: c.now });
    for (let i = 0; i < 50; i++) {
      l.recordFailure("a");
      expect(l.blockedForMs("a")).toBe(0);
      c.t += 501; // at most 2 in any 1 s
    }
  });

  it("checks while blocked do not extend the block (only recorded failures count)", () => {
    const c = clock();
    const l = new AuthFailureLimiter({ limit: 2, windowMs: 1000, now: c.now });
    l.recordFailure("a");
    l.recordFailure("a");
    for (let i = 0; i < 9; i++) {
      expect(l.blockedForMs("a")).toBe(1000 - i * 100);
      c.t += 100;
    }
    c.t += 100;
    expect(l.blockedForMs("a")).toBe(0);
  });

  it("keeps addresses apart", () => {
    const c = clock();
    const l = new AuthFailureLimiter({ limit: 1, windowMs: 1000, now: c.now });
    l.recordFailure("127.0.0.1");
    expect(l.blockedForMs("127.0.0.1")).toBe(1000);
    expect(l.blockedForMs("127.0.0.2")).toBe(0);
    expect(l.blockedForMs("::1")).toBe(0);
  });

  it("bounds memory: at most maxAddresses tracked, the least recently failing dropped first; at most `limit` times each", () => {
    const c = clock();
    const l = new AuthFailureLimiter({ limit: 2, windowMs: 60_000, maxAddresses: 100, now: c.now });
    l.recordFailure("old");
    l.recordFailure("old");
    l.recordFailure("keep");
    for (let i = 0; i < 98; i++) l.recordFailure(`10.0.${i >> 8}.${i & 255}`);
    l.recordFailure("keep"); // refreshed: now the newest
    expect(l.size).toBe(100);
    l.recordFailure("new-1");
    expect(l.size).toBe(100);
    expect(l.blockedForMs("old")).toBe(0); // dropped, the oldest
    expect(l.blockedForMs("keep")).toBeGreaterThan(0); // survived, it failed recently
    for (let i = 0; i < 20_000; i++) l.recordFailure(`x${i}`);
    expect(l.size).toBe(100);
    // One address failing forever keeps only `limit` timestamps, and stays blocked exactly one window after its last failure.
    const solo = new AuthFailureLimiter({ limit: 2, windowMs: 1000, now: c.now });
    for (let i = 0; i < 10_000; i++) solo.recordFailure("a");
    expect(solo.blockedForMs("a")).toBe(1000);
  });

  it("forgets an address once its failures have all left the window", () => {
    const c = clock();
    const l = new AuthFailureLimiter({ limit: 5, windowMs: 1000, now: c.now });
    l.recordFailure("a");
    expect(l.size).toBe(1);
    c.t += 1000;
    expect(l.blockedForMs("a")).toBe(0);
    expect(l.size).toBe(0);
  });
});
