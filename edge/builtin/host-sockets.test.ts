import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HostSocketsOutput } from "../../skill/catalog/host-sockets.ts";
import { lintSkill } from "../../skill/lint.ts";
import { buildSkill } from "../../skill/registry.ts";
import { runSkill } from "../../skill/run.ts";
import { validateParams } from "../../skill/validate.ts";
import hostSockets from "./host-sockets.ts";
import { decodeAddress, ipv6FromBytes, isLocalOnly, parseFibTrieLocal, parseIfInet6, parseProcNetTcp } from "./proc-net.ts";

const skill = buildSkill(hostSockets);
const log = pino({ level: "silent" });
const dir = mkdtempSync(path.join(tmpdir(), "ongrid-sockets-"));
const CLIENT_TITLE = "ongrid-t-cli";
const CONNECTIONS = 3;

let server: net.Server;
let port: number;
let v6: net.Server | undefined;
let v6Port = 0;
let client: ChildProcess;
const serverSide: net.Socket[] = [];

/** A child process named CLIENT_TITLE holding CONNECTIONS connections to `port`; resolves once all are up. */
function startClient(target: number): Promise<ChildProcess> {
  const code = `process.title = ${JSON.stringify(CLIENT_TITLE)}; const net = require("net"); let up = 0; const socks = [];
    for (let i = 0; i < ${CONNECTIONS}; i++) socks.push(net.connect(${target}, "127.0.0.1", () => ++up === ${CONNECTIONS} && console.log("ready")));
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (b: Buffer) => b.toString().includes("ready") && resolve(child));
    child.once("error", reject);
  });
}

beforeAll(async () => {
  server = net.createServer((s) => serverSide.push(s));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as net.AddressInfo).port;
  client = await startClient(port);
  // The accepted sockets exist once the server has seen them.
  for (let i = 0; i < 100 && serverSide.length < CONNECTIONS; i++) await new Promise((r) => setTimeout(r, 20));
  try {
    v6 = net.createServer();
    await new Promise<void>((resolve, reject) => {
      v6!.once("error", reject);
      v6!.listen(0, "::1", resolve);
    });
    v6Port = (v6.address() as net.AddressInfo).port;
  } catch {
    v6 = undefined; // no IPv6 loopback on this host
  }
});
afterAll(() => {
  client?.kill("SIGKILL");
  for (const s of serverSide) s.destroy();
  server?.close();
  v6?.close();
  rmSync(dir, { recursive: true, force: true });
});

function run(params: Record<string, unknown>, settings: Record<string, unknown> = {}) {
  return runSkill(skill, validateParams(skill, params), { callId: "t", timeoutMs: 30_000, outputCapBytes: 4 * 1024 * 1024, log, settings });
}
const myName = () => readFileSync(`/proc/${process.pid}/comm`, "utf8").trim();

describe("the /proc/net parsers", () => {
  it("read a listening socket and its established connections from this host's real /proc/net/tcp", () => {
    const rows = parseProcNetTcp(readFileSync("/proc/net/tcp", "utf8"), "tcp");
    const listen = rows.filter((r) => r.localPort === port && r.state === "LISTEN");
    expect(listen).toHaveLength(1);
    expect(listen[0]).toMatchObject({ protocol: "tcp", localAddress: "127.0.0.1", remoteAddress: "0.0.0.0", remotePort: 0, uid: process.getuid!() });
    expect(listen[0].inode).toBeGreaterThan(0);
    // Each connection shows twice: the client's end (remote port = ours) and the server's accepted end (local port = ours).
    const clientEnds = rows.filter((r) => r.remotePort === port && r.state === "ESTABLISHED");
    const serverEnds = rows.filter((r) => r.localPort === port && r.state === "ESTABLISHED");
    expect(clientEnds).toHaveLength(CONNECTIONS);
    expect(serverEnds.map((r) => r.remotePort).sort()).toEqual(clientEnds.map((r) => r.localPort).sort());
    expect(new Set(serverEnds.map((r) => r.remoteAddress))).toEqual(new Set(["127.0.0.1"]));
  });

  it("reads IPv6 rows, compressed, and IPv4-mapped addresses as IPv4", () => {
    if (v6) {
      const rows = parseProcNetTcp(readFileSync("/proc/net/tcp6", "utf8"), "tcp6");
      expect(rows.find((r) => r.localPort === v6Port && r.state === "LISTEN")).toMatchObject({ localAddress: "::1", remoteAddress: "::" });
    }
    expect(ipv6FromBytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 10, 1, 2, 3])).toBe("10.1.2.3");
    expect(ipv6FromBytes([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2])).toBe("fd00::2");
    expect(ipv6FromBytes([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1])).toBe("2001:db8::1:0:0:1");
    expect(() => decodeAddress("0102")).toThrow(/neither 8 nor 32/);
    // A garbled row is skipped, the others kept.
    const text = "  sl  local_address rem_address   st\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  0 0 77 1\n   1: zz:zz yy:yy QQ\n";
    expect(parseProcNetTcp(text, "tcp")).toEqual([{ protocol: "tcp", localAddress: "127.0.0.1", localPort: 8080, remoteAddress: "0.0.0.0", remotePort: 0, state: "LISTEN", uid: 0, inode: 77 }]);
  });

  it("finds this host's addresses in fib_trie and if_inet6 as the interfaces report them", () => {
    const v4 = parseFibTrieLocal(readFileSync("/proc/net/fib_trie", "utf8"));
    expect(v4).toContain("127.0.0.1");
    let v6list: string[] = [];
    try {
      v6list = parseIfInet6(readFileSync("/proc/net/if_inet6", "utf8"));
    } catch {
      /* no IPv6 */
    }
    const seen = Object.values(networkInterfaces()).flatMap((l) => (l ?? []).map((a) => a.address));
    for (const a of seen) expect([...v4, ...v6list], a).toContain(a);
    expect(isLocalOnly("127.0.0.1") && isLocalOnly("::1") && isLocalOnly("fe80::1") && isLocalOnly("169.254.1.1")).toBe(true);
    expect(isLocalOnly("10.0.0.1") || isLocalOnly("fd00::2")).toBe(false);
  });
});

describe("host_sockets", () => {
  it("passes the new-tool checklist with no finding", () => {
    expect(lintSkill(skill)).toEqual([]);
  });

  it("lists the listener with its process, and the connections both ways, merged with a count", async () => {
    const r = await run({});
    expect(r.success, JSON.stringify(r.error)).toBe(true);
    const out = r.output as HostSocketsOutput;
    expect(out.listening).toContainEqual({ protocol: "tcp", address: "127.0.0.1", port, pid: process.pid, process: myName() });
    const outbound = out.connections.filter((c) => c.direction === "outbound" && c.peer_port === port);
    expect(outbound).toEqual([
      { direction: "outbound", protocol: "tcp", local_address: "127.0.0.1", local_port: null, peer_address: "127.0.0.1", peer_port: port, state: "ESTABLISHED", pid: client.pid, process: CLIENT_TITLE, count: CONNECTIONS },
    ]);
    const inbound = out.connections.filter((c) => c.direction === "inbound" && c.local_port === port);
    expect(inbound).toEqual([
      { direction: "inbound", protocol: "tcp", local_address: "127.0.0.1", local_port: port, peer_address: "127.0.0.1", peer_port: null, state: "ESTABLISHED", pid: process.pid, process: myName(), count: CONNECTIONS },
    ]);
    // Loopback is no other host's address: never reported as one of this host's.
    expect(out.addresses.some(isLocalOnly)).toBe(false);
    expect(out.totals.connections).toBeGreaterThanOrEqual(2 * CONNECTIONS);
  });

  it("lists each socket with aggregate false, and filters by port and state", async () => {
    const each = (await run({ port, aggregate: false })).output as HostSocketsOutput;
    expect(each.listening.map((l) => l.port)).toEqual([port]);
    const outbound = each.connections.filter((c) => c.direction === "outbound");
    expect(outbound).toHaveLength(CONNECTIONS);
    expect(outbound.every((c) => c.count === 1 && typeof c.local_port === "number" && c.peer_port === port)).toBe(true);
    expect(each.connections.filter((c) => c.direction === "inbound").every((c) => c.local_port === port && typeof c.peer_port === "number")).toBe(true);
    const listening = (await run({ state: "listening", port })).output as HostSocketsOutput;
    expect([listening.listening.length, listening.connections.length]).toEqual([1, 0]);
    const established = (await run({ state: "established", port })).output as HostSocketsOutput;
    expect([established.listening.length, established.connections.length]).toEqual([0, 2]);
  });

  it("bounds each list by limit and says so", async () => {
    const out = (await run({ port, aggregate: false, limit: 2 })).output as HostSocketsOutput;
    expect(out.connections).toHaveLength(2);
    expect(out.totals.connections).toBe(2 * CONNECTIONS);
    expect(out.truncated).toBe(true);
  });

  it("refuses bad params naming the param and the rule", () => {
    expect(() => validateParams(skill, { port: 0 })).toThrow(/param "port".*minimum|port.*at least/i);
    expect(() => validateParams(skill, { port: 65536 })).toThrow(/port/);
    expect(() => validateParams(skill, { port: "80; rm -rf /" })).toThrow(/port/);
    expect(() => validateParams(skill, { limit: 2001 })).toThrow(/limit/);
    expect(() => validateParams(skill, { state: "closed" })).toThrow(/state/);
    expect(() => validateParams(skill, { aggregate: "maybe" })).toThrow(/aggregate/);
    expect(() => validateParams(skill, { peer: "x" })).toThrow(/peer/);
  });

  it("fails with proc_unavailable where there is no /proc", async () => {
    const r = await run({}, { proc_root: path.join(dir, "none") });
    expect(r.error).toMatchObject({ code: "proc_unavailable" });
    expect(r.error!.hint).toMatch(/proc_root/);
  });
});
