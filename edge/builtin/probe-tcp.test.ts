import net from "node:net";
import { spawn, type ChildProcess } from "node:child_process";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSkill } from "../../skill/registry.ts";
import { validateParams } from "../../skill/validate.ts";
import { runSkill } from "../../skill/run.ts";
import { lintSkill } from "../../skill/lint.ts";
import probeTcp from "./probe-tcp.ts";

const skill = buildSkill(probeTcp);
const log = pino({ level: "silent" });

function run(params: Record<string, unknown>, signal?: AbortSignal) {
  return runSkill(skill, validateParams(skill, params), { callId: "t", timeoutMs: 10_000, outputCapBytes: 65536, log, signal });
}

/** A loopback listener that runs `onConn` for each connection and records the server side of each. */
async function listen(onConn: (s: net.Socket) => void): Promise<{ port: number; conns: net.Socket[]; close(): Promise<void> }> {
  const conns: net.Socket[] = [];
  const server = net.createServer((s) => {
    conns.push(s);
    s.on("error", () => {});
    onConn(s);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as net.AddressInfo).port,
    conns,
    close: () => {
      for (const c of conns) c.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

let ssh: Awaited<ReturnType<typeof listen>>;
let silent: Awaited<ReturnType<typeof listen>>;
beforeAll(async () => {
  ssh = await listen((s) => s.write("SSH-2.0-test\r\n"));
  silent = await listen(() => {});
});
afterAll(async () => {
  await ssh.close();
  await silent.close();
});

describe("probe_tcp", () => {
  it("connects and reports the banner the service sends first", async () => {
    const r = await run({ host: "127.0.0.1", port: ssh.port });
    expect(r.success).toBe(true);
    expect(r.output).toMatchObject({
      host: "127.0.0.1",
      port: ssh.port,
      connected: true,
      address: "127.0.0.1",
      family: 4,
      banner: "SSH-2.0-test\r\n",
      banner_read_bytes: 14,
      closed_by_peer: false,
    });
    expect((r.output as { connect_ms: number }).connect_ms).toBeGreaterThanOrEqual(0);
  });

  it("resolves a host name and reports the address it connected to", async () => {
    const r = await run({ host: "localhost", port: ssh.port });
    expect(r.success).toBe(true);
    expect(["127.0.0.1", "::1"]).toContain((r.output as { address: string }).address);
  });

  it("returns an empty banner for a service that waits for the client to speak", async () => {
    const r = await run({ host: "127.0.0.1", port: silent.port });
    expect(r.success).toBe(true);
    expect(r.output).toMatchObject({ connected: true, banner: "", banner_read_bytes: 0, closed_by_peer: false });
  });

  it("stops at banner_bytes, escapes control bytes and notices a peer that hangs up", async () => {
    const chatty = await listen((s) => s.write("x".repeat(1000)));
    const binary = await listen((s) => s.end(Buffer.from([0x00, 0x41, 0x1b, 0x0a])));
    try {
      const capped = await run({ host: "127.0.0.1", port: chatty.port, banner_bytes: 10 });
      expect(capped.output).toMatchObject({ banner: "xxxxxxxxxx", banner_read_bytes: 10 });
      const bin = await run({ host: "127.0.0.1", port: binary.port });
      expect(bin.output).toMatchObject({ banner: "\\x00A\\x1b\n", banner_read_bytes: 4, closed_by_peer: true });
    } finally {
      await chatty.close();
      await binary.close();
    }
  });

  it("does not wait for a banner when read_banner is false", async () => {
    const r = await run({ host: "127.0.0.1", port: ssh.port, read_banner: false });
    expect(r.success).toBe(true);
    expect(r.output).not.toHaveProperty("banner");
  });

  it("fails with connection_refused on a closed port", async () => {
    const closed = await listen(() => {});
    const port = closed.port;
    await closed.close();
    const r = await run({ host: "127.0.0.1", port });
    expect(r.success).toBe(false);
    expect(r.error).toMatchObject({ code: "connection_refused" });
    expect(r.error!.message).toContain(`127.0.0.1:${port}`);
    expect(r.error!.hint).toMatch(/service is running/);
  });

  it("fails with dns_failed for a name that does not resolve", async () => {
    const r = await run({ host: "no-such-host.invalid", port: 80 });
    expect(r.error).toMatchObject({ code: "dns_failed" });
    expect(r.error!.hint).toMatch(/probe_dns/);
  });

  it("fails with timeout when the connection is never accepted", async () => {
    // A listener whose process blocks its event loop right after listen() (backlog 1), so it never
    // accepts: once two connections fill its accept queue, the kernel drops further SYNs and
    // connect() hangs. (console.log to a pipe is synchronous on Linux, so the port is out first.)
    const child: ChildProcess = spawn(process.execPath, [
      "-e",
      "const s=require('net').createServer().listen({port:0,host:'127.0.0.1',backlog:1},()=>{console.log(s.address().port);Atomics.wait(new Int32Array(new SharedArrayBuffer(4)),0,0,60000)})",
    ]);
    const fillers: net.Socket[] = [];
    try {
      const port = Number(await new Promise<string>((r) => child.stdout!.once("data", (d: Buffer) => r(d.toString()))));
      let connected = 0;
      for (let i = 0; i < 2; i++) fillers.push(net.connect(port, "127.0.0.1", () => connected++).on("error", () => {}));
      await expect.poll(() => connected).toBe(2);
      const r = await run({ host: "127.0.0.1", port, timeout: "300ms" });
      expect(r.error).toMatchObject({ code: "timeout", message: `connecting to 127.0.0.1:${port} did not complete within 300ms` });
      expect(r.error!.hint).toMatch(/firewall/);
    } finally {
      for (const f of fillers) f.destroy();
      child.kill("SIGKILL");
    }
  });

  it("closes its connection when the call is cancelled", async () => {
    const controller = new AbortController();
    const before = silent.conns.length;
    const pending = run({ host: "127.0.0.1", port: silent.port, timeout: "10s" }, controller.signal);
    await expect.poll(() => silent.conns.length).toBe(before + 1);
    const serverSide = silent.conns[before];
    const closed = new Promise<void>((r) => serverSide.once("close", () => r()));
    controller.abort();
    const r = await pending;
    expect(r.error).toMatchObject({ code: "cancelled" });
    await closed; // the probe's socket really went away: the server saw the connection close
  });

  it("refuses bad params, naming the field", () => {
    expect(() => validateParams(skill, { host: "127.0.0.1", port: 0 })).toThrow(/param "port"/);
    expect(() => validateParams(skill, { host: "a host; rm -rf /", port: 22 })).toThrow(/param "host"/);
    expect(() => validateParams(skill, { host: "h", port: 22, banner_bytes: 5000 })).toThrow(/param "banner_bytes"/);
  });

  it("passes the new-tool checklist with no error", () => {
    expect(lintSkill(probeTcp).filter((f) => f.severity === "error")).toEqual([]);
  });
});
