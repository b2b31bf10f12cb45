/**
 * Scale-out, a partitioned peer (M2, issue 31): manager A on the host, manager P as its own process
 * inside a network namespace (a veth pair on a private /30; P reaches PostgreSQL through a TCP
 * relay on the host side), a compiled edge beside P in the namespace. The partition is an nftables
 * table in the namespace dropping everything on the veth (silence, no RST); loopback inside the
 * namespace still works, so the edge keeps its tunnel to P. A call through A for P's edge ends
 * `unavailable` naming P within seconds, not after the call's timeout; once P's lease lapses A
 * shows the edge offline; after healing P renews, records its edge online again, and calls
 * through A reach it.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { EDGE_BIN } from "./global-setup.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { stopChild, waitFor } from "./support/edge.ts";
import { bearer } from "./support/auth.ts";
import { createTestDatabase, pgUnavailableReason, type TestDatabase } from "./support/pg.ts";
import { refusal } from "./support/rejection.ts";
import { createVethNamespace, removeVethNamespace } from "./support/netns.ts";

const reason = await pgUnavailableReason();
const requirePg = process.env.CI === "true";
const ROOT = resolve(import.meta.dirname, "..");
const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: "pipe", encoding: "utf8" });

describe.skipIf(reason !== null && !requirePg)(`a partitioned peer manager${reason ? ` (skipped: PostgreSQL not reachable: ${reason})` : ""}`, () => {
  const pid = process.pid;
  const k = ((pid + 97) % 250) + 1;
  const NS = `ongrid-p-${pid}`;
  const VH = `ogph${pid % 100_000}`;
  const VN = `ogpn${pid % 100_000}`;
  const HOST_IP = `10.201.${k}.1`;
  const NS_IP = `10.201.${k}.2`;
  const NET = { ns: NS, hostIf: VH, nsIf: VN, hostIp: HOST_IP, nsIp: NS_IP };
  const TABLE = `ongrid_part_${pid}`;
  const P_PORT = 17_000 + (pid % 1000);
  let pg: TestDatabase;
  let a: TestManager;
  let relay: net.Server;
  const relayed = new Set<net.Socket>();
  let p: { child: ChildProcess; output: () => string } | undefined;
  let edge: { child: ChildProcess; output: () => string } | undefined;

  const partition = () =>
    execFileSync("ip", ["netns", "exec", NS, "nft", "-f", "-"], {
      stdio: ["pipe", "pipe", "pipe"],
      input: `table inet ${TABLE} {\n chain in { type filter hook input priority raw; policy accept; iifname "${VN}" drop; }\n chain out { type filter hook output priority raw; policy accept; oifname "${VN}" drop; }\n}\n`,
    });
  const heal = () => sh("ip", ["netns", "exec", NS, "nft", "delete", "table", "inet", TABLE]);
  const inNs = (args: string[], env: NodeJS.ProcessEnv) => {
    const child = spawn("ip", ["netns", "exec", NS, ...args], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (out += d));
    return { child, output: () => out };
  };
  const call = (command: string) =>
    createClient(SkillService, createConnectTransport({ baseUrl: a.url, httpVersion: "1.1", interceptors: [bearer(a.adminToken)] })).executeSkill({ key: "exec", edgeId: "ns-edge", timeoutMs: 60_000, input: { case: "params", value: { command } as never } });

  beforeAll(async () => {
    if (reason !== null) throw new Error(`PostgreSQL is required when CI=true: ${reason}`);
    pg = await createTestDatabase();
    createVethNamespace(NET);
    // PostgreSQL listens on the host's loopback: P reaches it through this relay on the veth.
    const target = new URL(pg.url);
    relay = net.createServer((down) => {
      const up = net.connect({ host: target.hostname, port: Number(target.port || 5432) });
      relayed.add(down);
      down.on("close", () => relayed.delete(down));
      down.pipe(up).pipe(down);
      const end = () => (down.destroy(), up.destroy());
      down.on("error", end);
      up.on("error", end);
    });
    await new Promise<void>((r) => relay.listen(0, HOST_IP, r));
    const nsDbUrl = new URL(pg.url);
    nsDbUrl.hostname = HOST_IP;
    nsDbUrl.port = String((relay.address() as net.AddressInfo).port);
    a = await bootManager({ database_url: pg.url, "server.host": HOST_IP, "server.presence_poll": "200ms", "server.lease_ttl": "3s", "server.manager_id": "ma" });
    p = inNs([process.execPath, resolve(ROOT, "bin/ongrid.mjs"), "manager", "--host", NS_IP, "--port", String(P_PORT)], {
      ...process.env,
      DATABASE_URL: nsDbUrl.toString(),
      ONGRID_MANAGER_ID: "mp",
      ONGRID_LEASE_TTL: "3s",
      ONGRID_PRESENCE_POLL: "200ms",
      ONGRID_LOG_LEVEL: "warn",
    });
    expect(await waitFor(() => /web console: /.test(p!.output()) || p!.child.exitCode !== null, 30_000), p.output()).toBe(true);
    const { token } = await a.edges.enroll("ns-edge", { labels: { side: "ns" } });
    edge = inNs([EDGE_BIN, "--manager", `http://${NS_IP}:${P_PORT}`, "--token", token, "--id", "ns-edge", "--max-backoff", "1s"], { PATH: process.env.PATH, HOME: process.env.HOME });
    expect(await waitFor(() => a.cluster.holderOf("ns-edge") === "mp", 20_000), `${p.output()}\n${edge.output()}`).toBe(true);
  }, 120_000);

  afterAll(async () => {
    if (edge) await stopChild(edge.child);
    if (p && p.child.exitCode === null) {
      const exited = new Promise((r) => p!.child.once("exit", r));
      process.kill(-p.child.pid!, "SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (p.child.exitCode === null) process.kill(-p.child.pid!, "SIGKILL");
    }
    await a?.stop();
    for (const s of relayed) s.destroy();
    relay?.close();
    removeVethNamespace(NET, "partition");
    await pg?.drop();
  }, 60_000);

  test("calls through A fail unavailable naming P within seconds; P's lapsed lease shows its edge offline; after healing P's edge is reachable through A again", async () => {
    const before = await call("echo before-partition");
    expect(before.result?.success).toBe(true);
    // A's peer connection to P is established before the cut, as in production.
    partition();
    const cutAt = Date.now();
    const err = await refusal(call("echo during-partition"));
    const failedIn = Date.now() - cutAt;
    expect(err.code).toBe(Code.Unavailable);
    expect(err.rawMessage).toContain('manager "mp"');
    expect(failedIn).toBeLessThan(15_000);
    // P cannot renew: once its lease lapses, A shows its edge offline and says so at once.
    expect(await waitFor(() => !a.hub.session("ns-edge"), 15_000)).toBe(true);
    const offlineIn = Date.now() - cutAt;
    const offline = await refusal(call("echo offline"));
    expect(offline.code).toBe(Code.Unavailable);
    expect(offline.rawMessage).toMatch(/offline/);
    heal();
    const healedAt = Date.now();
    // P renews, records its still-connected edge online again; A reads it and forwards again.
    expect(await waitFor(() => a.cluster.holderOf("ns-edge") === "mp", 45_000), p!.output()).toBe(true);
    console.log(`partition observed: unavailable after ${failedIn} ms, offline through A after ${offlineIn} ms, back through A ${Date.now() - healedAt} ms after healing`);
    const after = await call("echo after-heal");
    expect(after.result?.success).toBe(true);
    expect(JSON.stringify(after.result?.output)).toContain("after-heal");
  }, 120_000);
});
