/**
 * fanOut's own wiring, against a stand-in dispatcher and hub: the calls share one signal of the
 * fan-out's own that the caller's abort reaches, and one SharedWork; results stream in completion order, the summary counts them; the
 * fan-out holds one slot of skills.max_calls_per_user until its last call settles, its calls take
 * none, and a reader that stops early cancels the calls still running; fanOutBatches hands over
 * the results that are ready together, at most maxBatch at a time, without holding one back.
 * (The real dispatcher, hub and edges are exercised in test/edge.e2e.test.ts and test/user-call-limit.e2e.test.ts.)
 */
import { describe, expect, it } from "vitest";
import { OngridError } from "../../skill/errors.ts";
import { fanOut, fanOutBatches, type FanOutEvent } from "./fan-out.ts";
import type { Dispatcher } from "./execute.ts";
import type { Hub } from "../fleet/hub.ts";

function fakes(n: number, run: (edgeId: string, signal: AbortSignal) => Promise<void>, opts: { slotsFree?: boolean } = {}) {
  const sessions = Array.from({ length: n }, (_, i) => ({ edgeId: `e${i}`, hello: { labels: { team: "a" } } }));
  const signals: AbortSignal[] = [];
  const inFanOut: unknown[] = [];
  const shared: unknown[] = [];
  const shareWorks: unknown[] = [];
  /** Slots taken and given back; refused: errors handed to refuse. */
  const slots = { taken: 0, released: 0, refused: [] as OngridError[] };
  const dispatcher = {
    async fanOutCall(input: { edgeId: string; signal: AbortSignal }, work: unknown) {
      signals.push(input.signal);
      // Every per-edge call goes through the dispatcher's fan-out entry point (no slot of its own).
      inFanOut.push(true);
      shared.push(work);
      await run(input.edgeId, input.signal);
      return { result: { success: true, output: input.edgeId, duration_ms: 0, truncated: false, edge_id: input.edgeId }, auditSeq: 1 };
    },
    async refuse(_: unknown, err: OngridError): Promise<never> {
      slots.refused.push(err);
      throw err;
    },
    shareWork() {
      const work = { checked: new Map() };
      shareWorks.push(work);
      return work;
    },
    acquireCallSlot() {
      if (opts.slotsFree === false) throw new OngridError("resource_exhausted", 'user "u" has 1 calls running (skills.max_calls_per_user is 1)');
      slots.taken++;
      let held = true;
      return () => {
        if (held) slots.released++;
        held = false;
      };
    },
  } as unknown as Dispatcher;
  const hub = { sessions: () => sessions } as unknown as Hub;
  return { deps: { dispatcher, hub }, signals, inFanOut, shared, shareWorks, slots };
}

async function collect(gen: AsyncGenerator<FanOutEvent>): Promise<FanOutEvent[]> {
  const out: FanOutEvent[] = [];
  for await (const ev of gen) out.push(ev);
  return out;
}

describe("fanOut", () => {
  it("gives the calls one signal of its own and one SharedWork, and the caller's abort reaches every call in flight", async () => {
    const caller = new AbortController();
    let started = 0;
    const { deps, signals, shared, shareWorks } = fakes(50, (_id, signal) => {
      if (++started === 50) setImmediate(() => caller.abort(new Error("caller went away")));
      return new Promise<void>((_r, reject) => signal.addEventListener("abort", () => reject(new OngridError("cancelled", "the caller went away")), { once: true }));
    });
    const events = await collect(fanOut(deps, { key: "k", edgeIds: [], selector: "team=a", caller: { userId: "u", role: "operator" }, signal: caller.signal }));
    expect(signals).toHaveLength(50);
    expect(new Set(signals).size).toBe(1);
    expect(signals[0]).not.toBe(caller.signal);
    expect(signals[0]!.aborted).toBe(true);
    expect(shareWorks).toHaveLength(1);
    expect(shared.every((w) => w === shareWorks[0])).toBe(true);
    const edges = events.filter((e) => e.kind === "edge");
    expect(edges).toHaveLength(50);
    expect(edges.every((e) => e.kind === "edge" && e.error?.code === "cancelled")).toBe(true);
    expect(events.at(-1)).toMatchObject({ kind: "summary", targeted: 50, succeeded: 0, failed: 50 });
  });

  it("starts no call un-aborted when the caller has already gone", async () => {
    const caller = new AbortController();
    caller.abort(new Error("gone"));
    const { deps, signals } = fakes(3, async (_id, signal) => {
      if (signal.aborted) throw new OngridError("cancelled", "gone");
    });
    const events = await collect(fanOut(deps, { key: "k", edgeIds: [], selector: "team=a", caller: { userId: "u", role: "operator" }, signal: caller.signal }));
    expect(signals.every((s) => s.aborted)).toBe(true);
    expect(events.at(-1)).toMatchObject({ kind: "summary", targeted: 3, failed: 3 });
  });

  it("streams results in completion order, then the summary", async () => {
    const delays: Record<string, number> = { e0: 30, e1: 10, e2: 20 };
    const { deps } = fakes(3, (id) => new Promise((r) => setTimeout(r, delays[id])));
    const events = await collect(fanOut(deps, { key: "k", edgeIds: [], selector: "team=a", caller: { userId: "u", role: "operator" } }));
    expect(events.map((e) => (e.kind === "edge" ? e.edgeId : "summary"))).toEqual(["e1", "e2", "e0", "summary"]);
    expect(events.at(-1)).toMatchObject({ targeted: 3, succeeded: 3, failed: 0 });
  });

  it("holds one slot for the whole fan-out, its calls take none, and gives it back when it ends", async () => {
    let resolveAll!: () => void;
    const gate = new Promise<void>((r) => (resolveAll = r));
    const { deps, slots, inFanOut } = fakes(4, () => gate);
    const gen = fanOut(deps, { key: "k", edgeIds: [], selector: "team=a", caller: { userId: "u", role: "operator" } });
    const first = gen.next();
    await new Promise((r) => setImmediate(r));
    expect(slots).toMatchObject({ taken: 1, released: 0 });
    expect(inFanOut).toEqual([true, true, true, true]);
    resolveAll();
    const events = [(await first).value, ...(await collect(gen))];
    expect(events.at(-1)).toMatchObject({ kind: "summary", succeeded: 4 });
    expect(slots).toMatchObject({ taken: 1, released: 1 });
  });

  it("a reader that stops early cancels the calls still running and gives the slot back once they settle", async () => {
    const { deps, slots, signals } = fakes(3, (id, signal) =>
      id === "e0"
        ? Promise.resolve()
        : new Promise<void>((_r, reject) => signal.addEventListener("abort", () => setTimeout(() => reject(signal.reason), 20), { once: true })),
    );
    for await (const ev of fanOut(deps, { key: "k", edgeIds: [], selector: "team=a", caller: { userId: "u", role: "operator" } })) {
      expect(ev).toMatchObject({ kind: "edge", edgeId: "e0" });
      break;
    }
    expect(new Set(signals).size).toBe(1);
    expect(signals[0]!.aborted).toBe(true);
    expect(signals[0]!.reason).toMatchObject({ code: "cancelled", message: "the fan-out's reader stopped reading its results" });
    // The two cancelled calls are still settling: the slot is held until they have.
    expect(slots).toMatchObject({ taken: 1, released: 0 });
    await new Promise((r) => setTimeout(r, 60));
    expect(slots).toMatchObject({ taken: 1, released: 1 });
  });

  it("a refused slot goes through refuse (audited) and starts no call", async () => {
    const { deps, slots, signals } = fakes(3, async () => {}, { slotsFree: false });
    const err = await collect(fanOut(deps, { key: "k", edgeIds: [], selector: "team=a", caller: { userId: "u", role: "operator" } })).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "resource_exhausted" });
    expect(slots.refused.map((e) => e.code)).toEqual(["resource_exhausted"]);
    expect(signals).toHaveLength(0);
  });
});

describe("fanOutBatches", () => {
  it("hands over the results ready together in batches of at most maxBatch, each result once, the summary alone and last", async () => {
    // All seven settle in the same turn: the reader finds them queued together.
    const { deps } = fakes(7, async () => {});
    const batches: FanOutEvent[][] = [];
    for await (const b of fanOutBatches(deps, { key: "k", edgeIds: [], selector: "team=a", caller: { userId: "u", role: "operator" } }, 3)) batches.push(b);
    expect(batches.map((b) => b.length)).toEqual([3, 3, 1, 1]);
    const edges = batches.slice(0, -1).flat();
    expect(edges.every((e) => e.kind === "edge")).toBe(true);
    expect(edges.map((e) => (e.kind === "edge" ? e.edgeId : "")).sort()).toEqual(["e0", "e1", "e2", "e3", "e4", "e5", "e6"]);
    expect(batches.at(-1)).toEqual([expect.objectContaining({ kind: "summary", targeted: 7, succeeded: 7 })]);
  });

  it("does not hold a ready result back waiting for others", async () => {
    // e0 answers at once, the others only when released: e0 must arrive on its own before that.
    let release!: () => void;
    const later = new Promise<void>((r) => (release = r));
    const { deps } = fakes(3, (id) => (id === "e0" ? Promise.resolve() : later));
    const gen = fanOutBatches(deps, { key: "k", edgeIds: [], selector: "team=a", caller: { userId: "u", role: "operator" } }, 100);
    const first = await gen.next();
    expect(first.value).toEqual([expect.objectContaining({ kind: "edge", edgeId: "e0" })]);
    release();
    const rest: FanOutEvent[][] = [];
    for await (const b of gen) rest.push(b);
    expect(rest.flat().map((e) => (e.kind === "edge" ? e.edgeId : e.kind))).toEqual(["e1", "e2", "summary"]);
  });
});
