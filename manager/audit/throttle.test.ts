import { describe, expect, it } from "vitest";
import { createRefusalThrottle } from "./throttle.ts";

describe("createRefusalThrottle", () => {
  it("writes `burst` rows per key and window, counts the rest, and reports them in the next row", () => {
    let t = 0;
    const th = createRefusalThrottle({ windowMs: 1000, burst: 2, now: () => t });
    expect([th.admit("a"), th.admit("a"), th.admit("a"), th.admit("a")].map((v) => v.write)).toEqual([true, true, false, false]);
    expect(th.admit("b").write).toBe(true);
    t = 1000;
    expect(th.admit("a")).toEqual({ write: true, suppressed: 2 });
    expect(th.admit("a")).toEqual({ write: true, suppressed: 0 });
    expect(th.suppressedTotal()).toBe(2);
  });

  it("keeps a bounded number of keys (a flood of distinct keys cannot grow it without bound)", () => {
    const th = createRefusalThrottle({ maxKeys: 100, burst: 1 });
    for (let i = 0; i < 10_000; i++) th.admit(`k${i}`);
    // The oldest keys were dropped: an early key is admitted again.
    expect(th.admit("k0").write).toBe(true);
    expect(th.admit("k9999").write).toBe(false);
  });
});
