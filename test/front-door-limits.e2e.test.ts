/**
 * Unauthenticated peers are bounded (issue 26 F, spec B1): partial HTTP/1.1 headers are not held,
 * HTTP/2 connections advertise a stream limit, one address cannot open connections without end,
 * a flood of anonymous refusals is counted rather than written row by row, and an edge's tunnel
 * keeps its heartbeats and answers through a flood of held streams; a connection holding more
 * incomplete streams than server.max_incomplete_streams is closed with ENHANCE_YOUR_CALM, and the
 * edge's tunnel (a stream that never half-closes, but is answered) is not.
 */
import net from "node:net";
import http2 from "node:http2";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, waitFor, type TestEdge } from "./support/edge.ts";
import { bearer } from "./support/auth.ts";

let m: TestManager;
let edge: TestEdge;
const port = () => Number(new URL(m.url).port);
/** SETTINGS_MAX_CONCURRENT_STREAMS; of those, at most MAX_INCOMPLETE may be requests that never complete. */
const MAX_STREAMS = 50;
const MAX_INCOMPLETE = 20;
/** What the manager logs at warn and above. */
let logText = "";

beforeAll(async () => {
  m = await bootManager({ "server.header_timeout": "500ms", "server.max_concurrent_streams": MAX_STREAMS, "server.max_incomplete_streams": MAX_INCOMPLETE, "server.max_connections_per_address": 40, "tunnel.heartbeat_interval": "500ms" }, {}, undefined, {
    log: pino({ level: "warn" }, new Writable({ write: (c, _e, done) => ((logText += String(c)), done()) })),
  });
  edge = await startEdge(m, "door-edge");
}, 120_000);
afterAll(async () => {
  await edge?.stop();
  await m?.stop();
});

function closed(socket: net.Socket): Promise<void> {
  return new Promise((resolve) => (socket.destroyed ? resolve() : socket.once("close", () => resolve())));
}

/** Opens `n` streams on a session that send their headers and never end their request. */
function holdStreams(session: http2.ClientHttp2Session, n: number): void {
  for (let i = 0; i < n; i++) {
    const st = session.request({ ":method": "POST", ":path": "/ongrid.v1.SkillService/ExecuteSkill", "content-type": "application/grpc" }, { endStream: false });
    st.on("error", () => undefined);
  }
}

/** Runs a host skill on the edge through the manager, with a fresh admin token. */
async function callEdge(): Promise<boolean | undefined> {
  const token = (await m.identity.createToken("admin", { description: "door" })).token;
  const skills = createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(token)] }));
  const r = await skills.executeSkill({ key: "host_load", edgeId: "door-edge", input: { case: "params", value: {} as never } });
  return r.result?.success;
}

describe("the front door", () => {
  it("closes a connection whose HTTP/1.1 headers never end", async () => {
    const s = net.connect(port(), "127.0.0.1");
    await new Promise((r) => s.once("connect", r));
    s.on("error", () => undefined);
    s.resume(); // read what the server answers, so its close is seen
    s.write("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    const ended = await Promise.race([closed(s).then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 15_000))]);
    s.destroy();
    expect(ended, "the server still holds a connection with partial headers after 15 s").toBe(true);
  });

  it("advertises SETTINGS_MAX_CONCURRENT_STREAMS on HTTP/2", async () => {
    const session = http2.connect(m.url);
    const settings = await new Promise<http2.Settings>((resolve, reject) => {
      session.once("remoteSettings", resolve);
      session.once("error", reject);
    });
    session.close();
    expect(settings.maxConcurrentStreams).toBe(MAX_STREAMS);
  });

  it("closes connections from one address beyond the cap, and serves it again once they close", async () => {
    const sockets: net.Socket[] = [];
    for (let i = 0; i < 60; i++) {
      const s = net.connect(port(), "127.0.0.1");
      s.on("error", () => undefined);
      sockets.push(s);
    }
    await Promise.all(sockets.map((s) => new Promise((r) => (s.once("connect", r), s.once("close", r)))));
    await new Promise((r) => setTimeout(r, 300));
    const refused = sockets.filter((s) => s.destroyed || s.readyState === "closed").length;
    // The edge's tunnel holds one connection of the 40 allowed.
    expect(refused).toBeGreaterThanOrEqual(60 - 40 + 1);
    for (const s of sockets) s.destroy();
    await new Promise((r) => setTimeout(r, 300));
    const res = await fetch(`${m.url}/healthz`);
    expect(res.status).toBe(200);
  });

  it("writes a bounded number of rows for a flood of anonymous refusals, and keeps the edge answering through held streams", async () => {
    const before = (await m.audit.list({ newestFirst: true, limit: 1 }))[0]?.seq ?? 0;
    const anon = createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer("ogu_000000000000_" + "x".repeat(43))] }));
    for (let i = 0; i < 300; i++) await anon.listSkills({}).catch(() => undefined);
    await m.audit.flush();
    const rows = await m.audit.list({ afterSeq: before, limit: 1000 });
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThanOrEqual(25);

    // Three HTTP/2 connections, each holding as many incomplete streams as it may (MAX_INCOMPLETE,
    // fewer than the MAX_STREAMS it may open: more would close it, see the next test), none
    // sending a request body. Held within the bounds, they must not starve the edge.
    const sessions = [0, 1, 2].map(() => http2.connect(m.url));
    let goaways = 0;
    for (const s of sessions) {
      s.on("error", () => undefined);
      s.on("goaway", () => goaways++);
      holdStreams(s, MAX_INCOMPLETE);
    }
    await new Promise((r) => setTimeout(r, 2000)); // four heartbeat intervals
    expect(goaways, "a connection holding no more incomplete streams than allowed was closed").toBe(0);
    expect(m.hub.session("door-edge"), "the edge lost its tunnel during the flood").toBeTruthy();
    expect(await callEdge()).toBe(true);
    for (const s of sessions) s.destroy();
    expect(await waitFor(() => Boolean(m.hub.session("door-edge")), 5000)).toBe(true);
  });

  it("closes connections holding more incomplete streams than allowed with ENHANCE_YOUR_CALM, and keeps the edge's tunnel", async () => {
    // Three HTTP/2 connections, each opening as many streams as SETTINGS allow, none ending its request.
    const sessions = [0, 1, 2].map(() => http2.connect(m.url));
    const outcomes = sessions.map((s) => {
      s.on("error", () => undefined);
      const goaway = new Promise<number>((resolve) => s.once("goaway", (code: number) => resolve(code)));
      const closed = new Promise<void>((resolve) => s.once("close", () => resolve()));
      return Promise.all([goaway, closed]).then(([code]) => code);
    });
    const logged = logText.length;
    for (const s of sessions) holdStreams(s, MAX_STREAMS);
    const codes = await Promise.race([Promise.all(outcomes), new Promise<undefined>((r) => setTimeout(() => r(undefined), 15_000))]);
    for (const s of sessions) s.destroy();
    expect(codes, "the flooding connections were not all closed within 15 s").toEqual([0, 1, 2].map(() => http2.constants.NGHTTP2_ENHANCE_YOUR_CALM));
    // One warning per closed connection, none per stream.
    const warnings = logText.slice(logged).split("\n").filter((l) => l.includes("closed a connection over a front-door limit"));
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toContain("server.max_incomplete_streams");
    // The edge's tunnel, one stream that never half-closes on a connection of its own, is answered and does not count.
    expect(m.hub.session("door-edge"), "the edge lost its tunnel").toBeTruthy();
    expect(await callEdge()).toBe(true);
  });
});
