import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { fakeTool, loadPack, outputOf, scratchDir, suffix, systemCommand, withEnv } from "../pack-kit.ts";

const pack = loadPack(import.meta.dirname);
const OVS_VSCTL = systemCommand("ovs-vsctl");
/** Output of the real ovs-vsctl 3.1.0 (Debian 12) for the five lists the pack runs, against an ovsdb-server holding two bridges. */
const FIXTURE = join(import.meta.dirname, "testdata", "list-ovs-3.1.0.json");
const scratch = scratchDir("ovs");
afterAll(() => scratch.cleanup());

describe("ovs pack: loading", () => {
  it("passes readManifest, registers ovs_show through the loader and lints clean", () => {
    expect(pack.manifest.problems).toEqual([]);
    expect(pack.report.problems).toEqual([]);
    expect(pack.report.loaded).toEqual(["ovs_show"]);
    expect(pack.lintErrors).toEqual([]);
    expect(pack.registry.getOrThrow("ovs_show").meta).toMatchObject({ class: "safe", scope: "host" });
  });
});

describe("ovs pack on this host", () => {
  it.runIf(!OVS_VSCTL)("ovs-vsctl is not installed here: ovs_show reports tool_missing with the package to install", async () => {
    const env = await pack.call("ovs_show", {});
    expect(env.success).toBe(false);
    expect(env.error).toMatchObject({ code: "tool_missing", hint: "install the openvswitch-switch package" });
    expect(env.error?.message).toMatch(/ovs-vsctl is not installed/);
  });

  it.runIf(Boolean(OVS_VSCTL))("ovs-vsctl is installed here: ovs_show answers, or reports unavailable when ovsdb-server is not running", async () => {
    const env = await pack.call("ovs_show", {});
    if (env.success) expect(outputOf(env).bridge_count).toBe(outputOf(env).bridges.length);
    else expect(env.error?.code).toBe("unavailable");
  });

  it("reports tool_missing when OVS_VSCTL_BIN names a binary that does not exist", async () => {
    const env = await withEnv({ OVS_VSCTL_BIN: join(scratch.dir, "no-such-ovs-vsctl") }, () => pack.call("ovs_show", {}));
    expect(env.error).toMatchObject({ code: "tool_missing", hint: expect.stringMatching(/openvswitch-switch/) });
  });
});

describe("ovs pack with a stand-in ovs-vsctl replaying real ovs-vsctl 3.1.0 output", () => {
  const fake = fakeTool(scratch.dir, "ovs-vsctl", `sys.stdout.write(open(${JSON.stringify(FIXTURE)}).read())`);

  it("builds the show tree: bridges, controllers, ports with VLAN/trunks/bonds, interfaces with type, ofport, options and errors", async () => {
    const out = outputOf(await withEnv({ OVS_VSCTL_BIN: fake.path }, () => pack.call("ovs_show", {})));
    expect(out).toMatchObject({ ovs_version: "3.1.0", db_version: "8.3.1", bridge_count: 2, port_count: 5 });
    expect(out.bridges.map((b: { name: string }) => b.name)).toEqual(["br-ex", "br-int"]);
    const [brEx, brInt] = out.bridges;
    expect(brInt).toMatchObject({ name: "br-int", uuid: expect.stringMatching(/^[0-9a-f-]{36}$/), fail_mode: "secure", controllers: [{ target: "tcp:127.0.0.1:6653", is_connected: true }] });
    expect(brInt.ports).toEqual([
      { name: "br-int", interfaces: [{ name: "br-int", type: "internal", ofport: 65534, admin_state: "up", link_state: "up", mtu: 1500 }] },
      { name: "vxlan0", tag: 10, interfaces: [{ name: "vxlan0", type: "vxlan", ofport: 1, admin_state: "up", link_state: "up", options: { remote_ip: "192.0.2.10" } }] },
    ]);
    expect(brEx.stp_enable).toBeUndefined();
    const bond = brEx.ports.find((p: { name: string }) => p.name === "bond0");
    expect(bond).toMatchObject({ bond_mode: "balance-slb" });
    expect(bond.interfaces.map((i: { name: string }) => i.name)).toEqual(["p1", "p2"]);
    expect(brEx.ports.find((p: { name: string }) => p.name === "eth9")).toMatchObject({
      trunks: [10, 20],
      interfaces: [{ name: "eth9", type: "system", ofport: null, error: "could not open network device eth9 (No such device)" }],
    });
  });

  it("runs one ovs-vsctl transaction: JSON format, a timeout inside the deadline, five lists", async () => {
    const own = fakeTool(scratch.dir, "ovs-vsctl-argv", `sys.stdout.write(open(${JSON.stringify(FIXTURE)}).read())`);
    outputOf(await withEnv({ OVS_VSCTL_BIN: own.path }, () => pack.call("ovs_show", {})));
    const [argv] = own.calls();
    expect(argv[0]).toMatch(/^--timeout=\d+$/);
    expect(argv.slice(1)).toEqual(["--format=json", "list", "Open_vSwitch", "--", "list", "Bridge", "--", "list", "Port", "--", "list", "Interface", "--", "list", "Controller"]);
  });

  it("bridge narrows to one bridge; detail adds every OVSDB column; an unknown bridge is not_found naming the real ones", async () => {
    const one = outputOf(await withEnv({ OVS_VSCTL_BIN: fake.path }, () => pack.call("ovs_show", { bridge: "br-int", detail: true })));
    expect(one.bridges.map((b: { name: string }) => b.name)).toEqual(["br-int"]);
    expect(one.bridges[0].columns).toMatchObject({ name: "br-int", fail_mode: "secure" });
    expect(one.bridges[0].ports[0].interfaces[0].columns).toMatchObject({ name: "br-int", type: "internal", statistics: expect.any(Object) });
    const env = await withEnv({ OVS_VSCTL_BIN: fake.path }, () => pack.call("ovs_show", { bridge: "br-nope" }));
    expect(env.error).toMatchObject({ code: "not_found", hint: expect.stringContaining("br-ex, br-int") });
  });

  it("refuses a bridge name that could be read as an option, in validateParams and inside the pack", async () => {
    await expect(pack.call("ovs_show", { bridge: "--all" })).rejects.toMatchObject({ code: "invalid_argument" });
    expect((await pack.callUnvalidated("ovs_show", { bridge: "--all" })).error?.code).toBe("invalid_argument");
  });
});

describe("ovs pack: daemon and permission failures (stand-ins printing real ovs-vsctl messages)", () => {
  it("no ovsdb-server socket is unavailable", async () => {
    const fake = fakeTool(scratch.dir, "ovs-vsctl-nodb", 'sys.stderr.write("ovs-vsctl: unix:/var/run/openvswitch/db.sock: database connection failed (No such file or directory)\\n")\nsys.exit(1)');
    const env = await withEnv({ OVS_VSCTL_BIN: fake.path }, () => pack.call("ovs_show", {}));
    expect(env.error).toMatchObject({ code: "unavailable", message: "ovs-vsctl: unix:/var/run/openvswitch/db.sock: database connection failed (No such file or directory)" });
    expect(env.error?.hint).toMatch(/ovsdb-server is not running/);
  });

  it("a socket this user may not open is permission_denied", async () => {
    const fake = fakeTool(scratch.dir, "ovs-vsctl-perm", 'sys.stderr.write("ovs-vsctl: unix:/var/run/openvswitch/db.sock: database connection failed (Permission denied)\\n")\nsys.exit(1)');
    const env = await withEnv({ OVS_VSCTL_BIN: fake.path }, () => pack.call("ovs_show", {}));
    expect(env.error?.code).toBe("permission_denied");
  });
});

/**
 * Optional: against a real ovsdb-server. Set ONGRID_TEST_OVS_VSCTL (an ovs-vsctl, or a wrapper
 * that sets its library path) and ONGRID_TEST_OVS_RUNDIR (the directory holding db.sock).
 */
const REAL = process.env.ONGRID_TEST_OVS_VSCTL;
const RUNDIR = process.env.ONGRID_TEST_OVS_RUNDIR;
describe.runIf(Boolean(REAL && RUNDIR))("ovs pack against a real ovsdb-server (ONGRID_TEST_OVS_VSCTL)", () => {
  const br = `ogt-${suffix()}`;
  const vsctl = (...args: string[]) => execFileSync(REAL!, ["--no-wait", ...args], { env: { ...process.env, OVS_RUNDIR: RUNDIR }, stdio: ["ignore", "pipe", "pipe"] });
  afterAll(() => {
    if (REAL && RUNDIR) vsctl("--if-exists", "del-br", br);
  });

  it("ovs_show reports a bridge added with ovs-vsctl, its tagged tunnel port and options", async () => {
    vsctl("add-br", br);
    vsctl("add-port", br, `${br}-vx`, "tag=42", "--", "set", "interface", `${br}-vx`, "type=geneve", "options:remote_ip=192.0.2.99");
    const out = outputOf(await withEnv({ OVS_VSCTL_BIN: REAL, OVS_RUNDIR: RUNDIR }, () => pack.call("ovs_show", { bridge: br })));
    expect(out.bridges[0].ports).toContainEqual({ name: `${br}-vx`, tag: 42, interfaces: [expect.objectContaining({ name: `${br}-vx`, type: "geneve", options: { remote_ip: "192.0.2.99" } })] });
  });
});
