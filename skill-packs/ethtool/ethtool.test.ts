import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fakeTool, isRoot, loadPack, outputOf, scratchDir, sh, suffix, systemCommand, trySh, withEnv } from "../pack-kit.ts";
import { requiredUnderCi } from "../../test/support/ci.ts";

const pack = loadPack(import.meta.dirname);
const IP = systemCommand("ip");
const ETHTOOL = systemCommand("ethtool");
const ID = suffix();
const HOST_END = `oge${ID}a`;
const NS_END = `oge${ID}b`;
const NS = `ongrid-t-${ID}`;
const scratch = scratchDir("ethtool");

let skipReason: string | undefined = !IP || !ETHTOOL ? "ip or ethtool is not installed" : !isRoot ? "not root: cannot create a veth pair" : undefined;

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
  sh(IP!, "link", "set", HOST_END, "up");
});

afterAll(() => {
  if (IP && !skipReason) {
    trySh(IP, "link", "del", HOST_END);
    trySh(IP, "netns", "del", NS);
  }
  scratch.cleanup();
});

describe("ethtool pack: loading", () => {
  it("passes readManifest, registers ethtool_inspect through the loader and lints clean", () => {
    expect(pack.manifest.problems).toEqual([]);
    expect(pack.report.problems).toEqual([]);
    expect(pack.report.loaded).toEqual(["ethtool_inspect"]);
    expect(pack.lintErrors).toEqual([]);
    expect(pack.registry.getOrThrow("ethtool_inspect").meta).toMatchObject({ class: "safe", scope: "host" });
  });

  it("refuses an interface name that ethtool would read as an option, in validateParams and inside the pack", async () => {
    await expect(pack.call("ethtool_inspect", { interface: "--reset" })).rejects.toMatchObject({ code: "invalid_argument" });
    expect((await pack.callUnvalidated("ethtool_inspect", { interface: "--reset" })).error?.code).toBe("invalid_argument");
    expect((await pack.callUnvalidated("ethtool_inspect", { interface: "a-name-longer-than-15" })).error?.code).toBe("invalid_argument");
  });
});

describe.skipIf(!IP || !ETHTOOL || !isRoot)("ethtool pack against the real ethtool", () => {
  it("ethtool_inspect on the host end of a veth: driver veth, link settings and the veth counters", async (ctx) => {
    if (skipReason) ctx.skip();
    const out = outputOf(await pack.call("ethtool_inspect", { interface: HOST_END }));
    expect(out.interface).toBe(HOST_END);
    expect(out.netns).toBeNull();
    expect(out.driver).toMatchObject({ driver: "veth", supports_statistics: true });
    expect(out.link).toMatchObject({ speed_mbps: 10000, speed: "10000Mb/s", duplex: "Full", auto_negotiation: false, link_detected: expect.any(Boolean) });
    expect(Array.isArray(out.link.supported_link_modes)).toBe(true);
    expect(out.statistics).toMatchObject({ peer_ifindex: expect.any(Number) });
    expect(out.statistic_count).toBe(Object.keys(out.statistics).length);
    expect(out.errors).toBeUndefined();
  });

  it("ethtool_inspect inside a namespace, with only the counters matching stats_match", async (ctx) => {
    if (skipReason) ctx.skip();
    const out = outputOf(await pack.call("ethtool_inspect", { interface: NS_END, netns: NS, stats_match: "drop" }));
    expect(out).toMatchObject({ interface: NS_END, netns: NS, driver: { driver: "veth" } });
    const names = Object.keys(out.statistics);
    expect(names.length).toBeGreaterThan(0);
    for (const n of names) expect(n).toMatch(/drop/i);
  });

  it("reports what a driver cannot give (lo has no driver info and no counters) without failing the call", async (ctx) => {
    if (skipReason) ctx.skip();
    const out = outputOf(await pack.call("ethtool_inspect", { interface: "lo" }));
    expect(out.driver).toBeNull();
    expect(out.errors.driver).toMatch(/Operation not supported/);
    expect(out.link).toMatchObject({ link_detected: true });
  });

  it("an interface that does not exist is not_found", async () => {
    const env = await pack.call("ethtool_inspect", { interface: `ogx${suffix()}` });
    expect(env.error?.code).toBe("not_found");
    expect(env.error?.message).toMatch(/No such device/);
  });

  it("a namespace that does not exist is not_found", async () => {
    const env = await pack.call("ethtool_inspect", { interface: "lo", netns: `ongrid-absent-${suffix()}` });
    expect(env.error?.code).toBe("not_found");
    expect(env.error?.message).toMatch(/Cannot open network namespace/);
  });
});

describe("ethtool pack: parsing a physical NIC's output (stand-in ethtool printing ixgbe text)", () => {
  const fake = fakeTool(
    scratch.dir,
    "ethtool-ixgbe",
    String.raw`
flag = argv[0] if len(argv) > 1 else ""
if flag == "-i":
    print("driver: ixgbe\nversion: 5.1.0-k\nfirmware-version: 0x800003e7\nexpansion-rom-version: \nbus-info: 0000:03:00.0\nsupports-statistics: yes\nsupports-test: yes\nsupports-eeprom-access: yes\nsupports-register-dump: yes\nsupports-priv-flags: no")
elif flag == "-S":
    print("NIC statistics:\n     rx_packets: 123456\n     tx_packets: 654321\n     rx_missed_errors: 12\n     fdir_miss: 3")
else:
    print("Settings for eth0:\n\tSupported ports: [ FIBRE ]\n\tSupported link modes:   1000baseT/Full \n\t                        10000baseT/Full \n\tSupported pause frame use: Symmetric\n\tSupports auto-negotiation: Yes\n\tSupported FEC modes: Not reported\n\tAdvertised link modes:  1000baseT/Full \n\t                        10000baseT/Full \n\tAdvertised pause frame use: Symmetric\n\tAdvertised auto-negotiation: Yes\n\tAdvertised FEC modes: Not reported\n\tSpeed: 10000Mb/s\n\tDuplex: Full\n\tAuto-negotiation: on\n\tPort: FIBRE\n\tPHYAD: 0\n\tTransceiver: internal\n\tSupports Wake-on: d\n\tWake-on: d\n\tCurrent message level: 0x00000007 (7)\n\t\t\t       drv probe link\n\tLink detected: yes")
`,
  );

  it("turns driver info, continued link-mode lines and counters into typed fields", async () => {
    const out = outputOf(await withEnv({ ETHTOOL_BIN: fake.path }, () => pack.call("ethtool_inspect", { interface: "eth0", stats_match: "err" })));
    expect(out.driver).toEqual({
      driver: "ixgbe",
      version: "5.1.0-k",
      firmware_version: "0x800003e7",
      expansion_rom_version: "",
      bus_info: "0000:03:00.0",
      supports_statistics: true,
      supports_test: true,
      supports_eeprom_access: true,
      supports_register_dump: true,
      supports_priv_flags: false,
    });
    expect(out.link).toMatchObject({
      supported_ports: ["FIBRE"],
      supported_link_modes: ["1000baseT/Full", "10000baseT/Full"],
      advertised_link_modes: ["1000baseT/Full", "10000baseT/Full"],
      supported_fec_modes: [],
      supports_auto_negotiation: true,
      auto_negotiation: true,
      speed_mbps: 10000,
      duplex: "Full",
      port: "FIBRE",
      phyad: 0,
      wake_on: "d",
      current_message_level: "0x00000007 (7) drv probe link",
      link_detected: true,
    });
    expect(out.statistics).toEqual({ rx_missed_errors: 12 });
    expect(fake.calls()).toEqual([
      ["-i", "eth0"],
      ["eth0"],
      ["-S", "eth0"],
    ]);
  });
});

describe("ethtool pack without ethtool", () => {
  it("reports tool_missing with an install hint when the ethtool binary is absent", async () => {
    const env = await withEnv({ ETHTOOL_BIN: join(scratch.dir, "no-such-ethtool") }, () => pack.call("ethtool_inspect", { interface: "lo" }));
    expect(env.success).toBe(false);
    expect(env.error).toMatchObject({ code: "tool_missing", hint: expect.stringMatching(/install the ethtool package/) });
  });
});

requiredUnderCi("the ethtool pack against the real ethtool", () => skipReason || undefined);
