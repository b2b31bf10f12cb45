import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { lintSkill } from "../../skill/lint.ts";
import { buildSkill } from "../../skill/registry.ts";
import { runSkill } from "../../skill/run.ts";
import { validateParams } from "../../skill/validate.ts";
import hostNetnsInspect from "./host-netns-inspect.ts";
import { requiredUnderCi } from "../../test/support/ci.ts";

const skill = buildSkill(hostNetnsInspect);
const log = pino({ level: "silent" });
const NS = `ongrid-t-${randomBytes(4).toString("hex")}`;
const sh = (...args: string[]) => execFileSync("ip", args, { stdio: ["ignore", "pipe", "pipe"] });

/** Creates the namespace with a veth pair, an address and a static route; the reason when it cannot. */
function setup(): string | undefined {
  try {
    sh("netns", "add", NS);
  } catch (err) {
    return `ip netns add is not permitted here (${String((err as { stderr?: Buffer }).stderr ?? err).trim()}): the real-namespace tests are skipped`;
  }
  sh("-n", NS, "link", "add", "og-a", "type", "veth", "peer", "name", "og-b");
  sh("-n", NS, "addr", "add", "10.123.45.6/24", "dev", "og-a");
  sh("-n", NS, "link", "set", "og-a", "mtu", "1400", "up");
  sh("-n", NS, "link", "set", "og-b", "up");
  sh("-n", NS, "route", "add", "10.200.0.0/16", "via", "10.123.45.1", "dev", "og-a");
  return undefined;
}
const skipReason = setup();
if (skipReason) console.warn(skipReason);
afterAll(() => {
  if (!skipReason) sh("netns", "del", NS);
});

function run(params: Record<string, unknown>, settings: Record<string, unknown> = {}) {
  return runSkill(skill, validateParams(skill, params), { callId: "t", timeoutMs: 30_000, outputCapBytes: 4 * 1024 * 1024, log, settings });
}

describe("host_netns_inspect", () => {
  it("passes the new-tool checklist with no finding", () => {
    expect(lintSkill(skill)).toEqual([]);
  });

  it.skipIf(skipReason)("reports a real namespace's interfaces, addresses and routes", async () => {
    const r = await run({});
    expect(r.success, JSON.stringify(r.error)).toBe(true);
    const out = r.output as { namespaces: { name: string; interfaces: any[]; routes: any[] }[]; count: number; total: number };
    const ns = out.namespaces.find((n) => n.name === NS)!;
    expect(ns).toBeDefined();
    const a = ns.interfaces.find((i) => i.name === "og-a");
    expect(a).toMatchObject({ mtu: 1400, peer: "og-b" });
    expect(a.addresses).toContain("10.123.45.6/24");
    expect(a.mac).toMatch(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);
    expect(a.flags).toContain("UP");
    expect(["UP", "LOWERLAYERDOWN", "DOWN", "UNKNOWN"]).toContain(a.state);
    expect(ns.interfaces.map((i) => i.name).sort()).toEqual(["lo", "og-a", "og-b"]);
    expect(ns.routes).toContainEqual(expect.objectContaining({ family: "inet", dst: "10.200.0.0/16", gateway: "10.123.45.1", dev: "og-a" }));
    expect(ns.routes).toContainEqual(expect.objectContaining({ family: "inet", dst: "10.123.45.0/24", dev: "og-a", protocol: "kernel", scope: "link" }));
    expect(out.count).toBe(out.namespaces.length);
  });

  it.skipIf(skipReason)("narrows to one namespace, and names the known ones for an unknown name", async () => {
    const one = await run({ namespace: NS });
    expect((one.output as { namespaces: { name: string }[] }).namespaces.map((n) => n.name)).toEqual([NS]);
    const none = await run({ namespace: "ongrid-no-such-ns" });
    expect(none.error).toMatchObject({ code: "namespace_not_found" });
    expect(none.error!.hint).toContain(NS);
  });

  it("says tool_missing when ip is not installed", async () => {
    const r = await run({}, { ip: "/nonexistent/ip" });
    expect(r.error).toMatchObject({ code: "tool_missing" });
    expect(r.error!.hint).toMatch(/iproute2/);
  });

  it("refuses namespace names that are options or paths", () => {
    for (const namespace of ["-all", "../x", "a/b", "a b", ""]) expect(() => validateParams(skill, { namespace }), namespace).toThrow(/namespace/);
  });
});

requiredUnderCi("the real-namespace tests", () => skipReason || undefined);
