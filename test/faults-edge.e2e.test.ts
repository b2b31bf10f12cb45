/**
 * Edge faults with real parts (issue 11): F5, an edge that stops reading its tunnel (slow
 * consumer), and F6, a host pack that hangs (a child and a grandchild that ignore SIGTERM) on an
 * edge with one concurrency slot.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import http2 from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ConnectRequestSchema, ConnectResponseSchema, type ConnectResponse } from "../proto/gen/ongrid/v1/tunnel_pb.ts";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { EdgeService } from "../proto/gen/ongrid/v1/edge_service_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, waitFor, type TestEdge } from "./support/edge.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { ECHO_TEXT_METADATA } from "./support/grpc-edge.ts";

/**
 * 1 s, not the 400 ms of edge.e2e: auditing the F5 flood (~11 MB of params: redaction, hashing,
 * PGlite in this very process) holds the manager's event loop for up to ~1.1 s on a loaded 2-core
 * machine, and at 400 ms (a 1.2 s death bound) that alone got the bystander edge declared dead.
 */
const HEARTBEAT_MS = 1000;
/** What grpc-stream.ts lets an edge leave unread before its stream is ended. */
const MAX_UNSENT_BYTES = 8 * 1024 * 1024;

let m: TestManager;
let good: TestEdge;
let skills: ReturnType<typeof createClient<typeof SkillService>>;
let edgeClient: ReturnType<typeof createClient<typeof EdgeService>>;
const edges: TestEdge[] = [];
const cleanups: Array<() => void> = [];

beforeAll(async () => {
  m = await bootManager({ "tunnel.heartbeat_interval": `${HEARTBEAT_MS}ms` });
  const opToken = await makeUser(m, "oper", "operator");
  const transport = createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(opToken)] });
  skills = createClient(SkillService, transport);
  edgeClient = createClient(EdgeService, transport);
  // The well-behaved bystander both faults must leave alone.
  good = await startEdge(m, "edge-good");
  edges.push(good);
});
afterAll(async () => {
  for (const c of cleanups) c();
  await Promise.all(edges.map((e) => e.stop()));
  await m?.stop();
});

async function run(key: string, edgeId: string, params: Record<string, unknown>, timeoutMs = 0) {
  return skills.executeSkill({ key, edgeId, input: { case: "params", value: params as never }, timeoutMs });
}

/** The audit row of a call (its seq comes with the answer, or with the error's metadata). */
async function auditRow(seq: number) {
  expect(seq).toBeGreaterThan(0);
  await m.audit.flush();
  const [row] = await m.audit.list({ afterSeq: seq - 1, limit: 1 });
  expect(row?.seq).toBe(seq);
  return row!;
}
const seqOf = (err: ConnectError) => Number(err.metadata.get("ongrid-audit-seq"));

/**
 * An edge on a bare node:http2 client, so that "not reading" is exact: it says hello, is
 * welcomed, keeps sending heartbeats, and on stopReading() pauses its stream — node then stops
 * consuming it and sends no more flow-control credit, so the manager's frames stay unsent on the
 * manager's side. `received()` counts the bytes that reached this edge (read or buffered unread).
 */
function connectStallingEdge(id: string, token: string) {
  const session = http2.connect(m.url);
  session.on("error", () => {});
  const stream = session.request({
    ":method": "POST",
    ":path": "/ongrid.v1.EdgeTunnelService/Connect",
    "content-type": "application/grpc+proto",
    te: "trailers",
    authorization: `Bearer ${token}`,
  });
  stream.on("error", () => {});
  const frames: ConnectResponse[] = [];
  let consumed = 0;
  let pending = Buffer.alloc(0);
  let status: { code: number; message: string; at: number } | undefined;
  const onData = (chunk: Buffer) => {
    consumed += chunk.length;
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 5 && pending.length >= 5 + pending.readUInt32BE(1)) {
      const len = pending.readUInt32BE(1);
      frames.push(fromBinary(ConnectResponseSchema, pending.subarray(5, 5 + len)));
      pending = pending.subarray(5 + len);
    }
  };
  stream.on("data", onData);
  stream.on("trailers", (t) => (status ??= { code: Number(t["grpc-status"]), message: decodeURIComponent(String(t["grpc-message"] ?? "")), at: Date.now() }));
  // A reset stream has no trailers: its RST code maps to a gRPC status as grpc-js maps it.
  stream.on("close", () => (status ??= { code: stream.rstCode === http2.constants.NGHTTP2_ENHANCE_YOUR_CALM ? grpc.status.RESOURCE_EXHAUSTED : grpc.status.INTERNAL, message: `reset with code ${stream.rstCode}`, at: Date.now() }));
  let heartbeatsSent = 0;
  const send = (f: MessageInitShape<typeof ConnectRequestSchema>) => {
    if (status || stream.destroyed) return false;
    const body = toBinary(ConnectRequestSchema, create(ConnectRequestSchema, f));
    const head = Buffer.alloc(5);
    head.writeUInt32BE(body.length, 1);
    stream.write(Buffer.concat([head, body]));
    return true;
  };
  const hb = setInterval(() => {
    if (send({ frame: { case: "heartbeat", value: { sentAtUnixMs: BigInt(Date.now()) } } })) heartbeatsSent++;
  }, HEARTBEAT_MS);
  send({
    frame: {
      case: "hello",
      value: {
        edgeId: id,
        version: "stall-test",
        hostname: "stall",
        os: "linux/x64",
        skills: [
          ECHO_TEXT_METADATA,
        ],
      },
    },
  });
  const close = () => {
    clearInterval(hb);
    if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
    session.destroy();
  };
  cleanups.push(close);
  return {
    frames,
    status: () => status,
    heartbeatsSent: () => heartbeatsSent,
    received: () => consumed + stream.readableLength,
    stopReading: () => {
      stream.off("data", onData);
      stream.pause();
    },
    close,
  };
}

describe("F5: a slow consumer (an edge that stops reading its tunnel)", () => {
  it("cuts the edge off once 8 MiB is unread: every call to it ends UNAVAILABLE naming the edge and the reason within 10 s, none succeeds, each has exactly one audit row; the stream is ended while the edge still stalls; another edge answers during and after", async () => {
    const { token } = await m.edges.enroll("edge-slow");
    const slow = connectStallingEdge("edge-slow", token);
    expect(await waitFor(() => Boolean(m.hub.session("edge-slow")) && slow.frames.some((f) => f.frame.case === "welcome"), 10_000)).toBe(true);
    expect(m.hub.connectedCount()).toBe(2);
    const goodSession = m.hub.session("edge-good");
    expect(goodSession).toBeDefined();
    slow.stopReading();
    // Not reading is not silence: its heartbeats keep it alive past the 3-interval death bound.
    const beats = slow.heartbeatsSent();
    await new Promise((r) => setTimeout(r, 3 * HEARTBEAT_MS + 600));
    expect(slow.heartbeatsSent()).toBeGreaterThan(beats);
    expect(m.hub.session("edge-slow")).toBeDefined();

    // ~0.7 MB of params a call: 16 calls are ~11 MB, well past the 8 MiB the manager may hold unsent.
    const N = 16;
    const big = "x".repeat(700_000);
    expect(N * big.length).toBeGreaterThan(MAX_UNSENT_BYTES + 1024 * 1024);
    const started = Date.now();
    let floodDone = false;
    const flood = Promise.all(
      Array.from({ length: N }, (_, i) =>
        run("echo_text", "edge-slow", { text: `${i}:${big}` }, 20_000).then(
          (res) => ({ i, res, err: undefined, at: Date.now() }),
          (err: ConnectError) => ({ i, res: undefined, err, at: Date.now() }),
        ),
      ),
    ).finally(() => (floodDone = true));

    // The bystander keeps answering while the flood piles up on the stalled tunnel.
    const during: Array<{ ok: boolean; seq: number; error?: string }> = [];
    while (!floodDone && Date.now() - started < 25_000) {
      const res = await run("host_load", "edge-good", {}, 5000).catch((e: ConnectError) => e);
      if (res instanceof ConnectError) during.push({ ok: false, seq: seqOf(res), error: res.rawMessage });
      else during.push({ ok: Boolean(res.result?.success), seq: Number(res.auditSeq), error: JSON.stringify(res.result?.error) });
    }
    const outcomes = await flood;
    const longest = Math.max(...outcomes.map((o) => o.at - started));

    // The edge really stalled: almost none of the >8 MiB the manager was given reached it.
    const reached = slow.received();
    expect(reached, `bytes that reached the stalled edge`).toBeLessThan(2 * 1024 * 1024);

    // (a) + (b): each call ended, with a clear error, within the bound; none succeeded.
    expect(outcomes.filter((o) => o.res !== undefined).map((o) => o.i), "calls reported successful").toEqual([]);
    expect(longest, `the last call ended after ${longest} ms`).toBeLessThan(10_000);
    for (const o of outcomes) {
      const err = o.err!;
      expect(err, `call ${o.i}`).toBeInstanceOf(ConnectError);
      expect(err.code, `call ${o.i}: ${err.rawMessage}`).toBe(Code.Unavailable);
      // In flight when the stream was cut: the reason; sent after: the edge is offline.
      expect(err.rawMessage, `call ${o.i}`).toMatch(/^edge "edge-slow" (went away during the call: .*the peer is not reading|is offline)/);
    }
    // More than 8 MiB was handed to the tunnel before it was cut: at least 12 calls were in flight then.
    const inFlight = outcomes.filter((o) => /not reading/.test(o.err!.rawMessage)).length;
    expect(inFlight).toBeGreaterThanOrEqual(Math.ceil(MAX_UNSENT_BYTES / big.length));

    // (b): exactly one audit row per call, each with the error its caller saw.
    const seqs = outcomes.map((o) => seqOf(o.err!));
    expect(new Set(seqs).size).toBe(N);
    for (const o of outcomes) {
      const row = await auditRow(seqOf(o.err!));
      // A call in flight passed the gate; one refused as offline never reached it.
      const inflight = /not reading/.test(o.err!.rawMessage);
      expect(row).toMatchObject({ toolName: "echo_text", deviceId: "edge-slow", decision: inflight ? "allow" : "", result: null });
      expect(row.error).toBe(`unavailable: ${o.err!.rawMessage.replace(/ \(hint: [^)]*\)$/, "")}`);
    }
    await m.audit.flush();
    const rows = await m.audit.list({ edgeId: "edge-slow", toolName: "echo_text", limit: 1000 });
    expect(rows.map((r) => r.seq).sort((a, b) => a - b)).toEqual([...seqs].sort((a, b) => a - b));

    // (c): the session is dropped, and the stream is ended while the edge is still stalled and
    // still sending heartbeats (so the unsent megabytes are released, not kept until it reads).
    expect(m.hub.session("edge-slow")).toBeUndefined();
    expect(m.hub.connectedCount()).toBe(1);
    expect((await edgeClient.getEdge({ id: "edge-slow" })).edge?.online).toBe(false);
    const ended = await waitFor(() => slow.status() !== undefined, 10_000 - (Date.now() - started) + 2000);
    expect(ended, "the stalled edge's stream was never ended").toBe(true);
    const endedAfter = slow.status()!.at - started;
    expect(endedAfter).toBeLessThan(10_000);
    expect(slow.status()!.code).toBe(grpc.status.RESOURCE_EXHAUSTED);

    // (d): the bystander answered during the flood, and answers after it, each call audited.
    expect(during.length).toBeGreaterThan(0);
    expect(during.filter((d) => !d.ok), JSON.stringify(during)).toEqual([]);
    // Same session all along: the bystander was never cut off or reconnected.
    expect(m.hub.session("edge-good")).toBe(goodSession);
    expect(good.output().match(/connected to the manager/g)).toHaveLength(1);
    const after = await run("host_load", "edge-good", {}, 5000);
    expect(after.result?.success, JSON.stringify(after.result?.error)).toBe(true);
    for (const d of [...during, { seq: Number(after.auditSeq) }]) {
      expect(await auditRow(d.seq)).toMatchObject({ toolName: "host_load", deviceId: "edge-good", decision: "allow", error: "" });
    }
    slow.close();
    console.log(`F5: ${N} calls ended within ${longest} ms (${inFlight} in flight at the cut; ${reached} bytes reached the edge); stream ended ${endedAfter} ms after the flood began; bystander answered ${during.length} calls during the flood`);
  });
});

/** Pids of live processes whose command line contains one of `markers` (zombies have none). */
function processesWith(...markers: string[]): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8");
      if (markers.some((mk) => cmdline.includes(mk))) pids.push(Number(name));
    } catch {
      /* gone */
    }
  }
  return pids;
}

describe("F6: a pack that hangs (its child and grandchild ignore SIGTERM) on an edge with one slot", () => {
  const uniq = `${process.pid}${Date.now() % 100000}`;
  /** In the leader's argv and the bash -c child's. */
  const marker = `ongridhang${uniq}`;
  /** The duration every sleep of the pack is given: finds the sleeping child and grandchild. */
  const sleepArg = `99999.${uniq}`;
  const packProcesses = () => processesWith(marker, `sleep\0${sleepArg}`);
  let dir: string;
  let hang: TestEdge;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ongrid-f6-")); // no marker here: the edge's own argv names this dir
    const pack = join(dir, "hang");
    mkdirSync(pack);
    writeFileSync(
      join(pack, "skill.json"),
      JSON.stringify({
        key: "pack_hang",
        name: "Hanging pack",
        description: "Sleeps forever; use it to check that a hanging pack is stopped at its deadline.",
        class: "safe",
        params: {},
        executable: "run.sh",
        args: [marker],
        timeout: "1h",
      }),
    );
    // The leader ignores SIGTERM and sleeps; so does a grandchild (bash -c → sleep). Only SIGKILL ends them.
    const sleep = `sleep ${sleepArg}`;
    writeFileSync(join(pack, "run.sh"), `#!/bin/bash\n# ${marker}\ntrap '' TERM\nbash -c "trap '' TERM; ${sleep}; : ${marker}" &\n${sleep}\nwait\n`);
    chmodSync(join(pack, "run.sh"), 0o755);
    hang = await startEdge(m, "edge-hang", { args: ["--pack-dir", dir, "--no-watch-packs", "--concurrency", "1"] });
    edges.push(hang);
    cleanups.push(() => {
      for (const pid of packProcesses()) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          /* gone */
        }
      }
      rmSync(dir, { recursive: true, force: true });
    });
  });

  it("ends the call with deadline_exceeded within its 1.5 s deadline + 4 s, audited; no process of the pack is left within 10 s; the single slot is free for the next call at once; another edge answers during the hang", async () => {
    const TIMEOUT_MS = 1500;
    const started = Date.now();
    const pending = run("pack_hang", "edge-hang", {}, TIMEOUT_MS);
    // The pack really runs: the leader and its sleep, the bash -c child and its sleeping grandchild.
    expect(await waitFor(() => packProcesses().length >= 4, 10_000), `pack processes: ${packProcesses()}`).toBe(true);
    const hanging = packProcesses();

    // (e): another edge is unaffected while the pack hangs.
    const other = await run("host_load", "edge-good", {}, 5000);
    expect(Date.now() - started, "the bystander's call must have run during the hang").toBeLessThan(TIMEOUT_MS);
    expect(other.result?.success, JSON.stringify(other.result?.error)).toBe(true);
    expect(await auditRow(Number(other.auditSeq))).toMatchObject({ toolName: "host_load", deviceId: "edge-good", error: "" });

    // (a): the hanging call ends with deadline_exceeded, not before its deadline, within the bound.
    const res = await pending;
    const took = Date.now() - started;
    expect(res.result?.success).toBe(false);
    expect(res.result?.error?.code, JSON.stringify(res.result?.error)).toBe("deadline_exceeded");
    expect(res.result?.error?.message).toMatch(/pack_hang/);
    expect(took).toBeGreaterThanOrEqual(TIMEOUT_MS);
    expect(took, `took ${took} ms`).toBeLessThan(TIMEOUT_MS + 4000);

    // (b): its audit row says so.
    const row = await auditRow(Number(res.auditSeq));
    expect(row).toMatchObject({ toolName: "pack_hang", deviceId: "edge-hang", decision: "allow" });
    expect(row.error).toMatch(/^deadline_exceeded: .*pack_hang/);
    await m.audit.flush();
    expect((await m.audit.list({ edgeId: "edge-hang", toolName: "pack_hang", limit: 100 })).map((r) => r.seq)).toEqual([Number(res.auditSeq)]);

    // (d): the one slot is free: the next call on the same edge runs at once (a held slot would
    // leave it waiting until its deadline, then fail "waited for a free slot").
    const nextAt = Date.now();
    const next = await run("host_load", "edge-hang", {}, 3000);
    const nextTook = Date.now() - nextAt;
    expect(next.result?.success, JSON.stringify(next.result?.error)).toBe(true);
    expect(nextTook).toBeLessThan(3000);
    expect(await auditRow(Number(next.auditSeq))).toMatchObject({ toolName: "host_load", deviceId: "edge-hang", error: "" });

    // (c): nothing of the pack is left: SIGTERM is ignored, so the group's SIGKILL (after a 2 s grace) ends them.
    const goneAt = Date.now();
    expect(await waitFor(() => packProcesses().length === 0, 10_000), `left: ${packProcesses()}`).toBe(true);
    expect(hanging.filter((pid) => existsSync(`/proc/${pid}/cmdline`) && readFileSync(`/proc/${pid}/cmdline`, "utf8") !== "")).toEqual([]);
    const goneAfter = Date.now() - started;

    // The edge stayed connected through it all.
    expect(m.hub.session("edge-hang")).toBeDefined();
    console.log(`F6: deadline_exceeded after ${took} ms; next call on the slot took ${nextTook} ms; pack processes gone ${goneAfter} ms after the call started (waited ${Date.now() - goneAt} ms)`);
  });
});
