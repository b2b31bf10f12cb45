/**
 * The hub in process, without a manager (C1–C3): its real edge store on PGlite, a node:http2
 * server handing the tunnel path to it, and grpc-js edges dialling it over loopback. Covers the
 * handshake's refusals, the welcome, a call down the tunnel, the heartbeat wheel dropping a
 * silent edge, and disconnect.
 */
import http2 from "node:http2";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { status as grpcStatus, type StatusObject } from "@grpc/grpc-js";
import pino from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../db/client.ts";
import type { ConnectResponse } from "../../proto/gen/ongrid/v1/tunnel_pb.ts";
import { ECHO_TEXT_METADATA, answerEchoText, connectGrpcEdge, type GrpcEdge } from "../../test/support/grpc-edge.ts";
import { createEdgeStore, type EdgeStore } from "./edge-store.ts";
import { createHub, TUNNEL_PATH, type Hub, type HubOptions } from "./hub.ts";

/** A generous bound for waiting on an event (not a duration under test). */
const WAIT_MS = 15_000;

/** Resolves like `p`, or fails the test naming `what` if it has not settled within WAIT_MS. */
function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${WAIT_MS} ms`)), WAIT_MS);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

let dir: string;
let database: Database;
let store: EdgeStore;
const tokens = new Map<string, string>();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ongrid-hub-"));
  database = await openDatabase({ dataDir: dir });
  store = createEdgeStore(database, "mgr-hub-test");
  for (const id of ["edge-a", "edge-b"]) tokens.set(id, (await store.enroll(id)).token);
});
afterAll(async () => {
  await database?.close();
  await rm(dir, { recursive: true, force: true });
});

/** What a test started: the hub, the server in front of it, and the edges that dialled it. */
let hub: Hub | undefined;
let server: http2.Http2Server | undefined;
const edges: GrpcEdge[] = [];

afterEach(async () => {
  for (const e of edges.splice(0)) e.close();
  hub?.closeAll();
  hub = undefined;
  if (server) await new Promise<void>((resolve) => server!.close(() => resolve()));
  server = undefined;
});

/** Starts a hub behind a loopback HTTP/2 server; answers the address edges dial. */
async function startHub(extra: Partial<HubOptions> = {}): Promise<string> {
  const h = createHub({ store, log: pino({ level: "silent" }), managerVersion: "test", heartbeatMs: 5_000, maxFrameBytes: 4 << 20, outputCapBytes: 64 << 10, ...extra });
  hub = h;
  const s = http2.createServer();
  server = s;
  s.on("stream", (stream, headers) => {
    if (headers[":path"] === TUNNEL_PATH) h.handleStream(stream, headers);
    else stream.respond({ ":status": 404 }, { endStream: true });
  });
  // Lets close() finish while a test's edges still hold their connections.
  s.on("session", (session) => session.unref());
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  return `127.0.0.1:${(s.address() as AddressInfo).port}`;
}

/** An edge dialling `address` as `id`; `onFrame` sees every frame, and `welcomed` resolves with the first welcome. */
function dial(address: string, id: string, opts: { token?: string; onFrame?: (f: ConnectResponse, e: GrpcEdge) => void } = {}) {
  let welcomed!: (f: ConnectResponse) => void;
  const welcome = new Promise<ConnectResponse>((resolve) => (welcomed = resolve));
  const edge = connectGrpcEdge(address, opts.token ?? tokens.get(id)!, (f, e) => {
    if (f.frame.case === "welcome") welcomed(f);
    opts.onFrame?.(f, e);
  });
  edges.push(edge);
  return { edge, welcome };
}

/** Says hello as `id`, offering echo_text. */
function hello(edge: GrpcEdge, id: string): void {
  edge.send({ frame: { case: "hello", value: { edgeId: id, version: "1.0.0", hostname: `${id}.test`, os: "linux/x64", labels: { team: "ops" }, skills: [ECHO_TEXT_METADATA] } } });
}

/** An `onFrame` that answers each heartbeat, as a live edge does. */
const heartbeatBack = (f: ConnectResponse, e: GrpcEdge) => {
  if (f.frame.case === "heartbeat") e.send({ frame: { case: "heartbeat", value: { sentAtUnixMs: BigInt(Date.now()) } } });
};

/** The final status an edge's stream ended with. */
const ended = (edge: GrpcEdge, what: string): Promise<StatusObject> => within(edge.ended, what);

describe("hub", () => {
  it("refuses a bad token with UNAUTHENTICATED, before any hello", async () => {
    const address = await startHub();
    const { edge } = dial(address, "edge-a", { token: "ogt_not-a-real-token" });
    const s = await ended(edge, "the refusal");
    expect(s.code).toBe(grpcStatus.UNAUTHENTICATED);
    expect(s.details).toBe("edge token is unknown or revoked");
    expect(hub!.sessions()).toEqual([]);
  });

  it("ends a stream that sends no hello once the hello timeout passes", async () => {
    const address = await startHub({ helloTimeoutMs: 200 });
    const { edge } = dial(address, "edge-a");
    const s = await ended(edge, "the end of a hello-less stream");
    expect(s.code).toBe(grpcStatus.INVALID_ARGUMENT);
    expect(s.details).toMatch(/^no hello within /);
    expect(hub!.connectedCount()).toBe(0);
  });

  it("welcomes a good edge, lists it, and returns its result of a call down the tunnel", async () => {
    const address = await startHub();
    const { edge, welcome } = dial(address, "edge-a", { onFrame: answerEchoText("edge-a") });
    hello(edge, "edge-a");
    const w = await within(welcome, "the welcome");
    expect(w.frame.value).toMatchObject({ edgeId: "edge-a", managerVersion: "test", heartbeatIntervalMs: 5_000 });
    expect((w.frame.value as { inventoryDigest: string }).inventoryDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(hub!.sessions().map((s) => s.edgeId)).toEqual(["edge-a"]);
    const session = hub!.session("edge-a")!;
    // The labels are the manager's (none were enrolled); the edge's own are only reported.
    expect(session.hello.labels).toEqual({});
    expect(session.reportedLabels).toEqual({ team: "ops" });
    expect([...session.skills.keys()]).toEqual(["echo_text"]);
    expect(hub!.offered("echo_text")).toBe(true);

    const result = await within(hub!.call("edge-a", "echo_text", { text: "hi" }, 5_000), "the call's result");
    expect(result).toMatchObject({ success: true, output: "edge-a:hi", edge_id: "edge-a", truncated: false });
    // The edge was sent one execute frame for it, with the params given.
    const executes = edge.received.filter((f) => f.frame.case === "execute");
    expect(executes).toHaveLength(1);
    expect(executes[0]!.frame.value).toMatchObject({ key: "echo_text", timeoutMs: 5_000 });
  });

  it("drops an edge silent for 3 heartbeat intervals and keeps one that answers", async () => {
    const address = await startHub({ heartbeatMs: 250 });
    const live = dial(address, "edge-a", { onFrame: heartbeatBack });
    const silent = dial(address, "edge-b");
    hello(live.edge, "edge-a");
    hello(silent.edge, "edge-b");
    await within(Promise.all([live.welcome, silent.welcome]), "both welcomes");
    expect(hub!.connectedCount()).toBe(2);
    const s = await ended(silent.edge, "the silent edge's drop");
    expect(s.code).toBe(grpcStatus.UNAVAILABLE);
    expect(s.details).toBe("no heartbeat from the edge for 750 ms");
    expect(hub!.sessions().map((x) => x.edgeId)).toEqual(["edge-a"]);
    expect(hub!.offered("echo_text")).toBe(true);
    // The silent edge was sent heartbeats before it was dropped; the one answering them is still there.
    expect(silent.edge.received.some((f) => f.frame.case === "heartbeat")).toBe(true);
    await expect(within(hub!.call("edge-b", "echo_text", { text: "x" }, 1_000), "the refusal")).rejects.toThrow('edge "edge-b" is offline');
  });

  it("disconnect() ends an edge's tunnel with UNAUTHENTICATED and forgets it", async () => {
    const address = await startHub();
    const { edge, welcome } = dial(address, "edge-a");
    hello(edge, "edge-a");
    await within(welcome, "the welcome");
    // A call in flight learns why the edge went.
    const inFlight = hub!.call("edge-a", "echo_text", { text: "never answered" }, 5_000);
    expect(hub!.disconnect("edge-a", "the edge's token was revoked")).toBe(true);
    await expect(within(inFlight, "the call's failure")).rejects.toThrow(`edge "edge-a" went away during the call: the edge's token was revoked`);
    const s = await ended(edge, "the disconnect");
    expect(s.code).toBe(grpcStatus.UNAUTHENTICATED);
    expect(s.details).toBe("the edge's token was revoked");
    expect(hub!.sessions()).toEqual([]);
    expect(hub!.offered("echo_text")).toBe(false);
    expect(hub!.disconnect("edge-a", "again")).toBe(false);
  });
});
