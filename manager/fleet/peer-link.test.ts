import net from "node:net";
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, test } from "vitest";
import { OngridError } from "../../skill/errors.ts";
import { createPeerLink, type PeerLink } from "./peer-link.ts";

/** A logger whose lines this test reads. */
function capturedLog() {
  const lines: Array<{ level: number; msg: string; url?: string }> = [];
  const log = pino(
    { level: "info" },
    new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    }),
  );
  return { log, lines };
}

/** A TCP server that takes connections and says nothing: dials to it open, and counting them shows whether a link was opened. */
async function silentPeer(): Promise<{ url: (host: string) => string; connections: () => number; close: () => void }> {
  let n = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    n++;
    sockets.add(s);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: (host) => `http://${host}:${port}`,
    connections: () => n,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

const call = { edgeId: "e1", key: "probe_tcp", params: { host: "x", port: 1 }, timeoutMs: 5_000 };
const links: PeerLink[] = [];
afterEach(() => {
  for (const l of links.splice(0)) l.close();
});

describe("peer link over plaintext (M2)", () => {
  test("with server.require_tls, a call for an edge held behind a plaintext http:// URL is refused unavailable, naming the holder and the rule, and nothing is dialled", async () => {
    const peer = await silentPeer();
    const { log } = capturedLog();
    const link = createPeerLink({ self: "m1", secret: () => "s".repeat(32), requireTls: true, log });
    links.push(link);
    const err = await link.call({ id: "m2", url: peer.url("127.0.0.1") }, call).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(OngridError);
    expect((err as OngridError).code).toBe("unavailable");
    expect((err as OngridError).message).toContain('manager "m2"');
    expect((err as OngridError).message).toContain("server.require_tls");
    await new Promise((r) => setTimeout(r, 100));
    expect(peer.connections()).toBe(0);
    peer.close();
  });

  test("without it, the first call to a plaintext peer off loopback logs a warning once; a loopback peer logs none", async () => {
    const { log, lines } = capturedLog();
    const link = createPeerLink({ self: "m1", secret: () => "s".repeat(32), log });
    links.push(link);
    const stop = new AbortController();
    const pending: Array<Promise<unknown>> = [];
    const settle = (p: Promise<unknown>) => pending.push(p.catch(() => undefined));
    // Off loopback (TEST-NET-1, never answered here): the warning comes with the call, before any dial.
    settle(link.call({ id: "m2", url: "http://192.0.2.10:7070" }, call, stop.signal));
    settle(link.call({ id: "m2", url: "http://192.0.2.10:7070" }, { ...call, edgeId: "e2" }, stop.signal));
    settle(link.call({ id: "m3", url: "http://127.0.0.1:7071" }, call, stop.signal));
    settle(link.call({ id: "m4", url: "http://[::1]:7072" }, call, stop.signal));
    const warnings = lines.filter((l) => l.level === 40 && /plaintext/.test(l.msg));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.url).toBe("http://192.0.2.10:7070");
    expect(warnings[0]!.msg).toContain("in clear");
    stop.abort();
    await Promise.all(pending);
  });

  test("an https:// peer is dialled under require_tls, and not warned about", async () => {
    const { log, lines } = capturedLog();
    const link = createPeerLink({ self: "m1", secret: () => "s".repeat(32), requireTls: true, log });
    links.push(link);
    // TEST-NET-1 is not routed here: the dial fails, which shows the call went out to be dialled.
    const err = await link.call({ id: "m2", url: "https://192.0.2.10:7070" }, call).catch((e: unknown) => e);
    expect((err as OngridError).code).toBe("unavailable");
    expect((err as OngridError).message).toContain("could not be reached");
    expect((err as OngridError).message).not.toContain("require_tls");
    expect(lines.filter((l) => /plaintext/.test(l.msg))).toHaveLength(0);
  });
});
