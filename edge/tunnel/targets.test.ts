/** The edge's manager list (M2): order by preference, names expanded to every address, probes. */
import net from "node:net";
import { describe, expect, it } from "vitest";
import { createDialPlan, shuffled, tcpProbe } from "./targets.ts";

const urls = (...u: string[]) => u.map((x) => new URL(x));

describe("dial plan", () => {
  it("keeps the listed order with first, and draws one random order per process with random", async () => {
    const first = createDialPlan({ urls: urls("http://10.0.0.1:7070", "http://10.0.0.2:7070", "http://10.0.0.3:7070"), order: "first", rebalanceMs: 0 });
    expect((await first.targets()).map((t) => t.label)).toEqual(["http://10.0.0.1:7070", "http://10.0.0.2:7070", "http://10.0.0.3:7070"]);
    const seq = [0.1, 0.9, 0.5];
    let i = 0;
    const random = createDialPlan({ urls: urls("http://10.0.0.1:7070", "http://10.0.0.2:7070", "http://10.0.0.3:7070"), order: "random", rebalanceMs: 0, random: () => seq[i++ % seq.length] });
    const a = (await random.targets()).map((t) => t.label);
    expect(a.sort()).toEqual(["http://10.0.0.1:7070", "http://10.0.0.2:7070", "http://10.0.0.3:7070"]);
    // The same order every round: an edge returns to the same manager after a failover.
    const b = (await random.targets()).map((t) => t.label);
    const c = (await random.targets()).map((t) => t.label);
    expect(c).toEqual(b);
  });

  it("spreads a fleet over the managers with random", () => {
    const firsts = new Map<string, number>();
    for (let n = 0; n < 3000; n++) {
      const f = shuffled(["a", "b", "c"])[0];
      firsts.set(f, (firsts.get(f) ?? 0) + 1);
    }
    for (const k of ["a", "b", "c"]) expect(firsts.get(k)!).toBeGreaterThan(800);
  });

  it("dials every address a name resolves to, in a stable order, re-resolving each round", async () => {
    let answer = ["192.0.2.1", "192.0.2.2"];
    const plan = createDialPlan({ urls: urls("https://managers.example:7070"), order: "first", rebalanceMs: 0, resolve: async () => answer });
    expect((await plan.targets()).map((t) => t.label)).toEqual(["https://managers.example:7070 (192.0.2.1)", "https://managers.example:7070 (192.0.2.2)"]);
    answer = ["192.0.2.3", "192.0.2.2", "192.0.2.1"];
    expect((await plan.targets()).map((t) => t.label)).toEqual(["https://managers.example:7070 (192.0.2.1)", "https://managers.example:7070 (192.0.2.2)", "https://managers.example:7070 (192.0.2.3)"]);
    // A name that does not resolve (or to one address) is dialled by name.
    answer = [];
    expect((await plan.targets()).map((t) => t.label)).toEqual(["https://managers.example:7070"]);
  });

  it("probes a manager by TCP connect", async () => {
    const server = net.createServer((s) => s.destroy());
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as net.AddressInfo).port;
    expect(await tcpProbe("127.0.0.1", port)).toBe(true);
    await new Promise((r) => server.close(r));
    expect(await tcpProbe("127.0.0.1", port)).toBe(false);
  });
});
