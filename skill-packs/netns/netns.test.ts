import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asNobody, isRoot, loadPack, outputOf, scratchDir, sh, suffix, systemCommand, trySh, withEnv } from "../pack-kit.ts";
import { requiredUnderCi } from "../../test/support/ci.ts";

const pack = loadPack(import.meta.dirname);
const IP = systemCommand("ip");
const NS = `ongrid-t-${suffix()}`;
// Interface names are at most 15 bytes: "ogt" + 6 hex + "a"/"b".
const ID = suffix();
const HOST_END = `ogt${ID}a`;
const NS_END = `ogt${ID}b`;
const scratch = scratchDir("netns");

/** Why the real-namespace tests cannot run here, or undefined when they can. */
let skipReason: string | undefined = !IP ? "ip (iproute2) is not installed" : !isRoot ? "not root: cannot create network namespaces" : undefined;

beforeAll(() => {
  if (skipReason) return;
  try {
    sh(IP!, "netns", "add", NS);
  } catch (err) {
    skipReason = `ip netns add is not permitted here: ${String((err as { stderr?: string }).stderr ?? err).trim()}`;
    return;
  }
  sh(IP!, "link", "add", HOST_END, "type", "veth", "peer", "name", NS_END);
  sh(IP!, "link", "set", NS_END, "netns", NS);
  sh(IP!, "-n", NS, "addr", "add", "10.251.7.2/24", "dev", NS_END);
  sh(IP!, "-n", NS, "link", "set", NS_END, "up");
  sh(IP!, "-n", NS, "link", "set", "lo", "up");
  sh(IP!, "addr", "add", "10.251.7.1/24", "dev", HOST_END);
  sh(IP!, "link", "set", HOST_END, "up");
  sh(IP!, "-n", NS, "route", "add", "default", "via", "10.251.7.1", "dev", NS_END);
});

afterAll(() => {
  if (IP) {
    trySh(IP, "link", "del", HOST_END);
    trySh(IP, "netns", "del", NS);
  }
  scratch.cleanup();
});

describe("netns pack: loading", () => {
  it("passes readManifest, registers both skills through the loader and lints clean", () => {
    expect(pack.manifest.problems).toEqual([]);
    expect(pack.manifest.skills.map((s) => s.key)).toEqual(["netns_list", "netns_inspect"]);
    expect(pack.report.problems).toEqual([]);
    expect(pack.report.loaded).toEqual(["netns_inspect", "netns_list"]);
    expect(pack.lintErrors).toEqual([]);
    for (const key of ["netns_list", "netns_inspect"]) expect(pack.registry.getOrThrow(key).meta).toMatchObject({ class: "safe", scope: "host" });
  });

  it("refuses a namespace name that could be read as an option: in validateParams, and again inside the pack", async () => {
    await expect(pack.call("netns_inspect", { netns: "-all" })).rejects.toMatchObject({ code: "invalid_argument" });
    const env = await pack.callUnvalidated("netns_inspect", { netns: "-all" });
    expect(env.success).toBe(false);
    expect(env.error?.code).toBe("invalid_argument");
    expect(env.error?.message).toMatch(/netns/);
  });
});

describe.skipIf(!IP || !isRoot)("netns pack against the real ip", () => {
  it("netns_list reports the test namespace, with its interfaces on request", async (ctx) => {
    if (skipReason) ctx.skip();
    const out = outputOf(await pack.call("netns_list", { with_interfaces: true }));
    expect(out.count).toBe(out.namespaces.length);
    const ns = out.namespaces.find((n: { name: string }) => n.name === NS);
    expect(ns).toBeDefined();
    const veth = ns.interfaces.find((i: { ifname: string }) => i.ifname === NS_END);
    expect(veth).toMatchObject({ kind: "veth", addresses: expect.arrayContaining([{ family: "inet", address: "10.251.7.2", prefixlen: 24, scope: "global" }]) });
  });

  it("netns_inspect shows the veth end, its address and the default route inside the namespace", async (ctx) => {
    if (skipReason) ctx.skip();
    const out = outputOf(await pack.call("netns_inspect", { netns: NS }));
    expect(out.netns).toBe(NS);
    expect(out.interfaces.map((i: { ifname: string }) => i.ifname).sort()).toEqual([NS_END, "lo"].sort());
    expect(out.interface_count).toBe(2);
    const veth = out.interfaces.find((i: { ifname: string }) => i.ifname === NS_END);
    expect(veth).toMatchObject({ kind: "veth", link_type: "ether", mtu: 1500, operstate: "UP" });
    expect(veth.addresses).toContainEqual({ family: "inet", address: "10.251.7.2", prefixlen: 24, scope: "global" });
    expect(veth.flags).toContain("UP");
    expect(typeof veth.peer_ifindex).toBe("number");
    expect(out.routes.ipv4).toContainEqual(expect.objectContaining({ dst: "default", gateway: "10.251.7.1", dev: NS_END }));
    expect(out.routes.ipv4).toContainEqual(expect.objectContaining({ dst: "10.251.7.0/24", dev: NS_END, protocol: "kernel" }));
    expect(Array.isArray(out.routes.ipv6)).toBe(true);
  });

  it("netns_inspect with all_tables includes the local table", async (ctx) => {
    if (skipReason) ctx.skip();
    const out = outputOf(await pack.call("netns_inspect", { netns: NS, all_tables: true }));
    expect(out.routes.ipv4).toContainEqual(expect.objectContaining({ type: "local", dst: "10.251.7.2", table: "local" }));
  });

  it("netns_inspect on a namespace that does not exist is not_found, with ip's own message", async () => {
    const env = await pack.call("netns_inspect", { netns: `ongrid-absent-${suffix()}` });
    expect(env.success).toBe(false);
    expect(env.error?.code).toBe("not_found");
    expect(env.error?.message).toMatch(/Cannot open network namespace/);
    expect(env.error?.hint).toMatch(/netns_list/);
  });

  it("netns_inspect run by a user who may not enter namespaces is permission_denied (real ip as nobody)", async (ctx) => {
    if (skipReason) ctx.skip();
    const wrapper = asNobody(scratch.dir, IP!);
    if (!wrapper) ctx.skip();
    const env = await withEnv({ IP_BIN: wrapper }, () => pack.call("netns_inspect", { netns: NS }));
    expect(env.error?.code).toBe("permission_denied");
    expect(env.error?.message).toMatch(/Operation not permitted/);
    expect(env.error?.hint).toMatch(/CAP_SYS_ADMIN/);
  });
});

describe("netns pack without ip", () => {
  it("reports tool_missing with an install hint when the ip binary is absent", async () => {
    const env = await withEnv({ IP_BIN: join(scratch.dir, "no-such-ip") }, () => pack.call("netns_list", {}));
    expect(env.success).toBe(false);
    expect(env.error).toMatchObject({ code: "tool_missing", hint: expect.stringMatching(/iproute2/) });
  });

  it("refuses a relative override path instead of resolving it against the pack directory", async () => {
    const env = await withEnv({ IP_BIN: "ip" }, () => pack.call("netns_list", {}));
    expect(env.error?.code).toBe("invalid_config");
  });
});

requiredUnderCi("the netns pack against the real ip", () => skipReason || undefined);
