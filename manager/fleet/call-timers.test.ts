import { describe, expect, it, vi } from "vitest";
import { createAbortWatchers, createDeadlines } from "./call-timers.ts";

describe("createDeadlines", () => {
  it("gives deadlines of one slot one timer, fires each once and never early", async () => {
    const d = createDeadlines(50);
    const fired: number[] = [];
    const t0 = Date.now();
    for (let i = 0; i < 1000; i++) d.after(30, () => fired.push(Date.now() - t0));
    expect(d.armed()).toBeLessThanOrEqual(2); // the 1,000 calls may straddle a slot boundary
    await new Promise((r) => setTimeout(r, 150));
    expect(fired).toHaveLength(1000);
    expect(Math.min(...fired)).toBeGreaterThanOrEqual(30);
    expect(d.armed()).toBe(0);
  });

  it("cancel() drops a deadline, and the slot's timer with its last one", async () => {
    const d = createDeadlines(50);
    const fn = vi.fn();
    const a = d.after(20, fn);
    const b = d.after(20, fn);
    a.cancel();
    expect(d.armed()).toBe(1);
    b.cancel();
    b.cancel(); // twice is harmless
    expect(d.armed()).toBe(0);
    await new Promise((r) => setTimeout(r, 120));
    expect(fn).not.toHaveBeenCalled();
  });

  it("a deadline added after its slot fired gets a new timer", async () => {
    const d = createDeadlines(20);
    const fn = vi.fn();
    d.after(0, fn);
    await new Promise((r) => setTimeout(r, 60));
    d.after(0, fn);
    await new Promise((r) => setTimeout(r, 60));
    expect(fn).toHaveBeenCalledTimes(2);
  });
});

describe("createAbortWatchers", () => {
  it("adds one listener to a signal however many callbacks watch it, and calls each that is still watching", () => {
    const watch = createAbortWatchers();
    const c = new AbortController();
    const add = vi.spyOn(c.signal, "addEventListener");
    const called: number[] = [];
    const stops = Array.from({ length: 100 }, (_, i) => watch(c.signal, () => called.push(i)));
    expect(add).toHaveBeenCalledTimes(1);
    stops[3]!();
    c.abort();
    expect(called).toHaveLength(99);
    expect(called).not.toContain(3);
  });

  it("keeps signals apart", () => {
    const watch = createAbortWatchers();
    const a = new AbortController();
    const b = new AbortController();
    const fa = vi.fn();
    const fb = vi.fn();
    watch(a.signal, fa);
    watch(b.signal, fb);
    a.abort();
    expect(fa).toHaveBeenCalledOnce();
    expect(fb).not.toHaveBeenCalled();
  });
});
