/**
 * The fleet simulator's worker: many simulated edges in one process, each its own HTTP/2
 * connection speaking EdgeTunnelService.Connect with the real frames (gRPC framing + protobuf-es),
 * so the manager cannot tell them from real edges:
 * - `hello` carries id, version, hostname, OS, labels and the full metadata of the real edge
 *   builtins (host_load, tail_file, exec, …) plus `bench_echo`, the benchmark's safe echo skill;
 * - heartbeats at the interval the manager's welcome asks for (one sweep timer per process, not
 *   one timer per edge);
 * - each execute frame is answered after the configured reply latency, and fails with the
 *   configured probability (`unavailable: simulated failure`); a cancel drops a pending reply;
 * - with `reconnect`, an edge whose tunnel ends redials with the real agent's full-jitter
 *   exponential backoff (base 250 ms, cap `maxBackoffMs`);
 * - given several manager URLs (comma-separated, as the edge's `--manager URL1,URL2`), an edge
 *   dials the first and, each time its tunnel ends or a dial fails, moves on to the next one
 *   (round the list) after that backoff: a dead manager's edges fail over to the others. The
 *   list is dialled in the order given (the edge's `--manager-order first`); to spread a fleet, as
 *   the edge's default random order does, give edges their own `url` lists. Not simulated: the
 *   edge's move back to its first manager once that one answers again (`--rebalance-interval`).
 *
 * Driven over the Node IPC channel (scripts/bench/lib/worker.ts) by scripts/sim/fleet.ts and the
 * benchmarks: commands connect, stats, mark, close.
 */
import http2 from "node:http2";
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { pino } from "pino";
import { ConnectRequestSchema, ConnectResponseSchema } from "../../proto/gen/ongrid/v1/tunnel_pb.ts";
import { MetadataSchema, ParamType, SkillClass, SkillScope, type Metadata } from "../../proto/gen/ongrid/v1/skill_pb.ts";
import { createDeframer, frame } from "../bench/lib/grpc-frame.ts";
import { pool, serveWorker, type WorkerMessage } from "../bench/lib/worker.ts";
import { BENCH_SKILL } from "../bench/lib/constants.ts";
import { EDGE_BUILTINS } from "../../edge/builtin/index.ts";
import { createRegistry } from "../../skill/registry.ts";
import { inventoryDigest, metadataToProto, toValue } from "../../skill/proto.ts";
import { backoffDelay } from "../../edge/tunnel/dialer.ts";
import { simulatedSockets } from "./sockets.ts";

const TUNNEL_PATH = "/ongrid.v1.EdgeTunnelService/Connect";
const BACKOFF_BASE_MS = 250;

/** How the simulated edges behave (the `connect` command's options). */
export interface SimOptions {
  /** The manager's URL, or several separated by commas: dialled in turn, moving on at each loss or failed dial. */
  url: string;
  /** Each edge; its own labels (optional) are added to the common ones, its own `url` (optional, same form) replaces the common one. */
  edges: Array<{ id: string; token: string; labels?: Record<string, string>; url?: string }>;
  labels: Record<string, string>;
  /** Dials in flight at once. */
  parallel: number;
  /** Reply latency: fixed part plus a uniform random part in [0, latencyJitterMs]. */
  latencyMs: number;
  latencyJitterMs: number;
  /** Fraction of calls answered with success false (0..1). */
  failureRate: number;
  /** Redial when a welcomed tunnel ends. */
  reconnect: boolean;
  maxBackoffMs: number;
  /** "builtins" (the real edge's skills + bench_echo) or "echo" (bench_echo alone). */
  inventory: "builtins" | "echo";
  /**
   * "digest" (the default, as the real edge does): hello names the inventory by its digest and
   * the skills follow in an inventory frame when the manager asks for them;
   * "full": hello carries the skills (as edges before digests did).
   */
  hello?: "digest" | "full";
}

interface SimEdge {
  id: string;
  token: string;
  labels?: Record<string, string>;
  /** The managers it may dial, and which of them it dials now. */
  urls: string[];
  at: number;
  session?: http2.ClientHttp2Session;
  stream?: http2.ClientHttp2Stream;
  welcomed: boolean;
  nextBeatAt: number;
  everyMs: number;
  attempt: number;
  pending: Map<string, NodeJS.Timeout>;
}

const echoSkill: MessageInitShape<typeof MetadataSchema> = {
  key: BENCH_SKILL,
  name: "Bench echo",
  description: "Use when benchmarking the tunnel: returns the text it is given.",
  class: SkillClass.SAFE,
  scope: SkillScope.HOST,
  category: "bench",
  params: { fields: [{ name: "text", type: ParamType.STRING, description: "what to echo", required: false }] },
};

/** The real edge's builtin metadata, as its hello sends it. */
function builtinInventory(): Metadata[] {
  const registry = createRegistry({ log: pino({ level: "silent" }) });
  for (const d of EDGE_BUILTINS) registry.register(d);
  return registry.list().map((s) => metadataToProto(s));
}

/** Canned outputs per skill, shaped like the real skills' (enough for fleet tools to read). */
function cannedOutput(key: string, id: string, params: Record<string, unknown>): unknown {
  switch (key) {
    case BENCH_SKILL:
      return typeof params.text === "string" ? params.text : "";
    case "host_load": {
      const h = [...id].reduce((a, c) => (a * 31 + c.charCodeAt(0)) >>> 0, 7);
      const load = 0.2 + (h % 100) / 100;
      return { cpus: 2, load1: load, load5: load, load15: load, mem_total_bytes: 8 << 30, mem_available_bytes: 6 << 30, uptime_s: 86_400, simulated: true };
    }
    case "host_sockets":
      return simulatedSockets(id);
    default:
      return { simulated: true, key };
  }
}

const state = {
  opts: undefined as SimOptions | undefined,
  edges: new Map<string, SimEdge>(),
  closing: false,
  answered: 0,
  failedAnswers: 0,
  cancelled: 0,
  lost: 0,
  lostReasons: [] as string[],
  welcomes: 0,
  /** Inventory requests answered (the manager did not hold the inventory the hello named). */
  inventoryRequests: 0,
  /** Welcome times (ms since mark) since the last `mark`. */
  welcomeTimes: [] as number[],
  markAt: performance.now(),
  sweep: undefined as NodeJS.Timeout | undefined,
  inventory: [] as MessageInitShape<typeof MetadataSchema>[],
  /** The inventory's digest (hello's inventory_digest). */
  digest: "",
};

const send = (stream: http2.ClientHttp2Stream, msg: MessageInitShape<typeof ConnectRequestSchema>) => {
  if (!stream.destroyed && !stream.writableEnded) stream.write(frame(toBinary(ConnectRequestSchema, create(ConnectRequestSchema, msg))));
};

const liveCount = () => [...state.edges.values()].filter((e) => e.welcomed).length;

/** Welcomed edges by the manager URL they are connected to. */
function connectedTo(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of state.edges.values()) if (e.welcomed) out[e.urls[e.at]!] = (out[e.urls[e.at]!] ?? 0) + 1;
  return out;
}

/** The URLs of a `url` option: one, or several separated by commas. */
const urlList = (url: string) => url.split(",").map((u) => u.trim()).filter(Boolean);

/** One dial: resolves once welcomed, rejects with the refusal or the failure. */
function dial(edge: SimEdge, timeoutMs: number): Promise<void> {
  const o = state.opts!;
  return new Promise((resolve, reject) => {
    const session = http2.connect(edge.urls[edge.at]!);
    edge.session = session;
    let status = "";
    let settled = false;
    session.on("error", (err) => (status ||= `session error: ${err.message}`));
    const timer = setTimeout(() => fail(`no welcome within ${timeoutMs} ms`), timeoutMs);
    const fail = (why: string) => {
      clearTimeout(timer);
      if (!settled) {
        settled = true;
        reject(new Error(`${edge.id}: ${why}`));
      }
      session.destroy();
    };
    const stream = session.request({ ":method": "POST", ":path": TUNNEL_PATH, "content-type": "application/grpc+proto", te: "trailers", authorization: `Bearer ${edge.token}` });
    edge.stream = stream;
    const sendInventory = () => send(stream, { frame: { case: "inventory", value: { skills: state.inventory } } });
    const onStatus = (h: http2.IncomingHttpHeaders) => {
      if (h["grpc-status"] !== undefined) status = `grpc-status ${h["grpc-status"]}: ${decodeURIComponent(String(h["grpc-message"] ?? ""))}`;
    };
    stream.on("response", onStatus);
    stream.on("trailers", onStatus);
    stream.on("error", (err) => (status ||= `stream error: ${err.message}`));
    stream.on("close", () => {
      for (const t of edge.pending.values()) clearTimeout(t);
      edge.pending.clear();
      if (!edge.welcomed) return fail(status || "stream closed before welcome");
      edge.welcomed = false;
      session.destroy();
      if (state.closing) return;
      state.lost++;
      if (state.lostReasons.length < 5) state.lostReasons.push(`${edge.id}: ${status || "stream closed"}`);
      if (o.reconnect) redial(edge);
    });
    stream.on(
      "data",
      createDeframer((body) => {
        const f = fromBinary(ConnectResponseSchema, body).frame;
        if (f.case === "inventoryRequest") {
          state.inventoryRequests++;
          sendInventory();
        } else if (f.case === "welcome") {
          // A manager that predates digests welcomes without one, before it has the skills.
          if (o.hello !== "full" && !f.value.inventoryDigest) sendInventory();
          edge.welcomed = true;
          edge.attempt = 0;
          edge.everyMs = Math.max(100, f.value.heartbeatIntervalMs || 5000);
          edge.nextBeatAt = performance.now() + edge.everyMs;
          state.welcomes++;
          state.welcomeTimes.push(performance.now() - state.markAt);
          clearTimeout(timer);
          settled = true;
          resolve();
        } else if (f.case === "execute") answer(edge, stream, f.value);
        else if (f.case === "cancel") {
          const t = edge.pending.get(f.value.callId);
          if (t) {
            clearTimeout(t);
            edge.pending.delete(f.value.callId);
            state.cancelled++;
          }
        }
      }),
    );
    send(stream, {
      frame: {
        case: "hello",
        value: {
          edgeId: edge.id,
          version: "sim",
          hostname: edge.id,
          os: `${process.platform}/${process.arch}`,
          labels: edge.labels ? { ...o.labels, ...edge.labels } : o.labels,
          ...(o.hello === "full" ? { skills: state.inventory } : { skills: [], inventoryDigest: state.digest }),
        },
      },
    });
  });
}

/** Answers one execute frame after the configured latency, failing with the configured probability. */
function answer(edge: SimEdge, stream: http2.ClientHttp2Stream, x: { callId: string; key: string; params?: Record<string, unknown> }): void {
  const o = state.opts!;
  const reply = () => {
    edge.pending.delete(x.callId);
    const fail = o.failureRate > 0 && Math.random() < o.failureRate;
    const params = x.params ?? {};
    const result = fail
      ? { success: false, error: { code: "unavailable", message: "simulated failure", hint: "the fleet simulator fails this share of calls (--failure-rate)" }, durationMs: 0, edgeId: edge.id }
      : { success: true, output: toValue(cannedOutput(x.key, edge.id, params)), durationMs: 0, edgeId: edge.id };
    if (fail) state.failedAnswers++;
    state.answered++;
    send(stream, { frame: { case: "result", value: { callId: x.callId, result } } });
  };
  const delay = o.latencyMs + (o.latencyJitterMs > 0 ? Math.random() * o.latencyJitterMs : 0);
  if (delay <= 0) reply();
  else edge.pending.set(x.callId, setTimeout(reply, delay));
}

/**
 * Redials with full-jitter backoff until welcomed or the worker closes; each redial (after a lost
 * tunnel or a failed dial) goes to the next manager URL of the edge's list.
 */
function redial(edge: SimEdge): void {
  const o = state.opts!;
  edge.at = (edge.at + 1) % edge.urls.length;
  const wait = backoffDelay(edge.attempt++, { baseMs: BACKOFF_BASE_MS, maxMs: o.maxBackoffMs });
  setTimeout(() => {
    if (state.closing) return;
    dial(edge, 30_000).catch(() => redial(edge));
  }, wait);
}

/** Heartbeats for every welcomed edge whose time has come: one timer for the whole process. */
function startSweep(): void {
  state.sweep ??= setInterval(() => {
    const now = performance.now();
    const sentAtUnixMs = BigInt(Date.now());
    for (const e of state.edges.values()) {
      if (!e.welcomed || now < e.nextBeatAt || !e.stream) continue;
      e.nextBeatAt = now + e.everyMs;
      send(e.stream, { frame: { case: "heartbeat", value: { sentAtUnixMs } } });
    }
  }, 200);
}

/** How welcomes spread over time since the last mark: per-second counts. */
function welcomeHistogram(): number[] {
  const out: number[] = [];
  for (const t of state.welcomeTimes) {
    const s = Math.floor(t / 1000);
    while (out.length <= s) out.push(0);
    out[s]!++;
  }
  return out;
}

serveWorker(async (msg: WorkerMessage) => {
  switch (msg.cmd) {
    case "connect": {
      const o = msg as unknown as SimOptions;
      state.opts = {
        url: o.url,
        edges: o.edges,
        labels: o.labels ?? {},
        parallel: Number(o.parallel ?? 64),
        latencyMs: Number(o.latencyMs ?? 0),
        latencyJitterMs: Number(o.latencyJitterMs ?? 0),
        failureRate: Number(o.failureRate ?? 0),
        reconnect: Boolean(o.reconnect),
        maxBackoffMs: Number(o.maxBackoffMs ?? 30_000),
        inventory: o.inventory === "echo" ? "echo" : "builtins",
        hello: o.hello === "full" ? "full" : "digest",
      };
      state.inventory = state.opts.inventory === "echo" ? [echoSkill] : [...builtinInventory(), echoSkill];
      state.digest = inventoryDigest(state.inventory.map((m) => create(MetadataSchema, m)));
      startSweep();
      const t0 = performance.now();
      const errors: string[] = [];
      let failed = 0;
      await pool(state.opts.edges, state.opts.parallel, (e) => {
        const urls = urlList(e.url ?? state.opts!.url);
        if (!urls.length) throw new Error(`${e.id}: no manager URL`);
        const edge: SimEdge = { id: e.id, token: e.token, labels: e.labels, urls, at: 0, welcomed: false, nextBeatAt: 0, everyMs: 5000, attempt: 0, pending: new Map() };
        state.edges.set(e.id, edge);
        return dial(edge, 60_000).then(
          () => undefined,
          (err: Error) => {
            failed++;
            if (errors.length < 5) errors.push(err.message);
            if (state.opts!.reconnect) redial(edge);
          },
        );
      });
      return { connected: liveCount(), failed, errors, ms: performance.now() - t0 };
    }
    case "stats":
      return {
        connected: liveCount(),
        connectedTo: connectedTo(),
        edges: state.edges.size,
        lost: state.lost,
        lostReasons: state.lostReasons,
        answered: state.answered,
        failedAnswers: state.failedAnswers,
        cancelled: state.cancelled,
        welcomes: state.welcomes,
        inventoryRequests: state.inventoryRequests,
        sinceMarkMs: performance.now() - state.markAt,
        welcomesPerSecond: msg.histogram ? welcomeHistogram() : undefined,
        lastWelcomeMs: state.welcomeTimes.length ? state.welcomeTimes[state.welcomeTimes.length - 1] : undefined,
      };
    case "mark":
      state.markAt = performance.now();
      state.welcomeTimes = [];
      return { marked: true };
    case "close": {
      state.closing = true;
      clearInterval(state.sweep);
      for (const e of state.edges.values()) {
        for (const t of e.pending.values()) clearTimeout(t);
        e.welcomed = false;
        e.session?.destroy();
      }
      state.edges.clear();
      return { closed: true };
    }
    default:
      throw new Error(`unknown command ${msg.cmd}`);
  }
});
