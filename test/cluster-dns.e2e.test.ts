/**
 * Scale-out, one DNS name for several managers (M2, issue 31): two managers on one real
 * PostgreSQL listen on two addresses of the host side of a veth pair, on the same port; a
 * compiled edge in a network namespace is given only `--manager http://managers.ongrid.test:PORT`,
 * a name its resolver (the namespace's own /etc/hosts, which `ip netns exec` mounts over the
 * host's) gives both addresses for. The edge connects to one; when that manager goes away it
 * dials the name's other address, and calls through the survivor reach it.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { EDGE_BIN } from "./global-setup.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { stopChild, waitFor } from "./support/edge.ts";
import { bearer } from "./support/auth.ts";
import { createTestDatabase, pgUnavailableReason, type TestDatabase } from "./support/pg.ts";
import { createVethNamespace, removeVethNamespace } from "./support/netns.ts";

const reason = await pgUnavailableReason();
const requirePg = process.env.CI === "true";
const ROOT = resolve(import.meta.dirname, "..");
const NAME = "managers.ongrid.test";
const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: "pipe", encoding: "utf8" });

describe.skipIf(reason !== null && !requirePg)(`an edge given one DNS name for two managers${reason ? ` (skipped: PostgreSQL not reachable: ${reason})` : ""}`, () => {
  const pid = process.pid;
  const k = ((pid + 131) % 250) + 1;
  const NS = `ongrid-d-${pid}`;
  const NET = { ns: NS, hostIf: `ogdh${pid % 100_000}`, nsIf: `ogdn${pid % 100_000}`, hostIp: `10.204.${k}.1`, nsIp: `10.204.${k}.2` };
  /** The host's second address, on the same veth (a /32 the namespace routes to over the link). */
  const HOST_IP2 = `10.205.${k}.1`;
  const PORT = 18_000 + (pid % 1000);
  const HOSTS_DIR = `/etc/netns/${NS}`;
  let pg: TestDatabase;
  const managers = new Map<string, TestManager>();
  let edge: { child: ChildProcess; output: () => string } | undefined;

  const exec = (m: TestManager, command: string) =>
    createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(m.adminToken)] })).executeSkill({
      key: "exec",
      edgeId: "dns-edge",
      timeoutMs: 30_000,
      input: { case: "params", value: { command } as never },
    });

  beforeAll(async () => {
    if (reason !== null) throw new Error(`PostgreSQL is required when CI=true: ${reason}`);
    pg = await createTestDatabase();
    createVethNamespace(NET);
    sh("ip", ["addr", "add", `${HOST_IP2}/32`, "dev", NET.hostIf]);
    sh("ip", ["-n", NS, "route", "add", `${HOST_IP2}/32`, "dev", NET.nsIf]);
    // Files under /etc/netns/<name>/ replace their /etc namesakes for processes `ip netns exec` starts.
    mkdirSync(HOSTS_DIR, { recursive: true });
    writeFileSync(`${HOSTS_DIR}/hosts`, `127.0.0.1 localhost\n${NET.hostIp} ${NAME}\n${HOST_IP2} ${NAME}\n`);
    const common = { database_url: pg.url, "server.port": PORT, "server.presence_poll": "200ms" };
    const first = await bootManager({ ...common, "server.host": NET.hostIp, "server.manager_id": "md1" });
    managers.set("md1", first);
    // The second manager's admin is the first's: the first start created it in the shared database.
    managers.set("md2", await bootManager({ ...common, "server.host": HOST_IP2, "server.manager_id": "md2" }));
    const { token } = await first.edges.enroll("dns-edge", { labels: { side: "ns" } });
    const child = spawn("ip", ["netns", "exec", NS, EDGE_BIN, "--manager", `http://${NAME}:${PORT}`, "--token", token, "--id", "dns-edge", "--max-backoff", "1s", "--log-level", "info"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (out += d));
    edge = { child, output: () => out };
  }, 120_000);

  afterAll(async () => {
    if (edge) await stopChild(edge.child);
    for (const m of managers.values()) await m.stop();
    removeVethNamespace(NET, "dns");
    rmSync(HOSTS_DIR, { recursive: true, force: true });
    await pg?.drop();
  }, 60_000);

  test("the edge reaches a manager through the name; when that one stops it dials the name's other address, and calls through the survivor reach it", async () => {
    const m1 = managers.get("md1")!;
    expect(await waitFor(() => Boolean(m1.hub.session("dns-edge")) && m1.cluster.holderOf("dns-edge") !== undefined, 30_000), edge!.output()).toBe(true);
    const firstHolder = m1.cluster.holderOf("dns-edge")!;
    const survivorId = firstHolder === "md1" ? "md2" : "md1";
    const survivor = managers.get(survivorId)!;
    const survivorIp = survivorId === "md1" ? NET.hostIp : HOST_IP2;
    const lostIp = survivorId === "md1" ? HOST_IP2 : NET.hostIp;
    // The other manager sees the edge too (presence), and forwards a call to its holder.
    expect(await waitFor(() => survivor.cluster.holderOf("dns-edge") === firstHolder && Boolean(survivor.hub.session("dns-edge")), 30_000)).toBe(true);
    const before = await exec(survivor, "echo through-the-name");
    expect(before.result?.success, JSON.stringify(before.result?.error)).toBe(true);

    await managers.get(firstHolder)!.stop();
    managers.delete(firstHolder);
    expect(await waitFor(() => survivor.cluster.holderOf("dns-edge") === survivorId && Boolean(survivor.hub.session("dns-edge")), 30_000), edge!.output()).toBe(true);
    const after = await exec(survivor, "echo after-the-move");
    expect(after.result?.success, JSON.stringify(after.result?.error)).toBe(true);
    expect(JSON.stringify(after.result?.output)).toContain("after-the-move");
    // The edge's log names the address it lost and the one it dials next, both under the one name.
    const lossLine = edge!
      .output()
      .split("\n")
      .find((l) => l.includes(`(${lostIp})`));
    expect(lossLine, edge!.output()).toBeDefined();
    expect(lossLine).toContain(`http://${NAME}:${PORT} (${survivorIp})`);
  }, 120_000);
});
