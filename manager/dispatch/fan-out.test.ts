/**
 * fanOut's own wiring, against a stand-in dispatcher and hub: every call gets a signal of its own
 * that the caller's abort reaches, results stream in completion order, the summary counts them.
 * (The real dispatcher, hub and edges are exercised in test/edge.e2e.test.ts.)
 */
import { describe, expect, it } from "vitest";
import { OngridError } from "../../skill/errors.ts";
import { fanOut, type FanOutEvent } from "./fan-out.ts";
import type { Dispatcher } from "./dispatch.ts";
import type { Hub } from "../tunnel/hub.ts";

function fakes(n: number, run: (edgeId: string, signal: AbortSignal) => Promise<void>) {
  const sessions = Array.from({ length: n }, (_, i) => ({ edgeId: `e${i}`, hello: { labels: { team: "a" } } }));
  const signals: AbortSignal[] = [];
  const dispatcher = {
    async execute(input: { edgeId: string; signal: AbortSignal }) {
      signals.push(input.signal);
      await run(input.edgeId, input.signal);
      return { result: { success: true, output: input.edgeId, duration_ms: 0, truncated: false, edge_id: input.edgeId }, auditSeq: 1 };
    },
    async refuse(_: unknown, err: OngridError): Promise<never> {
      throw err;
    },
  } as unknown as Dispatcher;
  const hub = { sessions: () => sessions } as unknown as Hub;
  return { deps: { dispatcher, hub }, signals };
}

async function collect(gen: AsyncGenerator<FanOutEvent>): Promise<FanOutEvent[]> {
  const out: FanOutEvent[] = [];
  for await (const ev of gen) out.push(ev);
  return out;
}

describe("fanOut", () => {
  it("gives each call a signal of its own, and the caller's abort reaches every call in flight", async () => {
    const caller = new AbortController();
    let started = 0;
    const { deps, signals } = fakes(50, (_id, signal) => {
      if (++started === 50) setImmediate(() => caller.abort(new Error("caller went away")));
      return new Promise<void>((_r, reject) => signal.addEventListener("abort", () => reject(new OngridError("cancelled", "the caller went away")), { once: true }));
    });
    const events = await collect(fanOut(deps, { key: "k", edgeIds: [], selector: "team=a", caller: { userId: "u", role: "operator" }, signal: caller.signal }));
    expect(new Set(signals).size).toBe(50);
    expect(signals.every((s) => s.aborted)).toBe(true);
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
});
