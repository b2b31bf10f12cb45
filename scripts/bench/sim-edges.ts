/**
 * Benchmark worker: many lightweight simulated edges in one process. Each edge is its own
 * node:http2 session (own TCP connection) speaking EdgeTunnelService.Connect by hand — gRPC
 * framing plus protobuf-es — says hello with one safe host skill, answers execute frames at
 * once and sends heartbeats like the real agent.
 */
import http2 from "node:http2";
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { ConnectRequestSchema, ConnectResponseSchema } from "../../proto/gen/ongrid/v1/tunnel_pb.ts";
import { ParamType, SkillClass, SkillScope } from "../../proto/gen/ongrid/v1/skill_pb.ts";
import { createDeframer, frame } from "./lib/grpc-frame.ts";
import { pool, serveWorker, type WorkerMessage } from "./lib/worker.ts";
import { BENCH_SKILL } from "./lib/constants.ts";

const TUNNEL_PATH = "/ongrid.v1.EdgeTunnelService/Connect";

interface SimEdge {
  id: string;
  session: http2.ClientHttp2Session;
  heartbeat?: NodeJS.Timeout;
}

const live = new Map<string, SimEdge>();
let lost = 0;
let answered = 0;
const lostReasons: string[] = [];

const send = (stream: http2.ClientHttp2Stream, msg: MessageInitShape<typeof ConnectRequestSchema>) =>
  stream.write(frame(toBinary(ConnectRequestSchema, create(ConnectRequestSchema, msg))));

/** Connects one edge and resolves once the manager's welcome arrives; rejects with the refusal. */
function connectEdge(url: string, id: string, token: string, labels: Record<string, string>, timeoutMs: number): Promise<SimEdge> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    const edge: SimEdge = { id, session };
    let welcomed = false;
    let status = "";
    session.on("error", (err) => (status ||= `session error: ${err.message}`));
    const timer = setTimeout(() => fail(`no welcome within ${timeoutMs} ms`), timeoutMs);
    const fail = (why: string) => {
      clearTimeout(timer);
      if (!welcomed) reject(new Error(`${id}: ${why}`));
      session.destroy();
    };
    const stream = session.request({
      ":method": "POST",
      ":path": TUNNEL_PATH,
      "content-type": "application/grpc+proto",
      te: "trailers",
      authorization: `Bearer ${token}`,
    });
    const onStatus = (h: http2.IncomingHttpHeaders) => {
      if (h["grpc-status"] !== undefined) status = `grpc-status ${h["grpc-status"]}: ${decodeURIComponent(String(h["grpc-message"] ?? ""))}`;
    };
    stream.on("response", onStatus);
    stream.on("trailers", onStatus);
    stream.on("error", (err) => (status ||= `stream error: ${err.message}`));
    stream.on("close", () => {
      clearInterval(edge.heartbeat);
      if (welcomed) {
        if (live.get(id) === edge) {
          live.delete(id);
          lost++;
          if (lostReasons.length < 5) lostReasons.push(`${id}: ${status || "stream closed"}`);
        }
        session.destroy();
      } else fail(status || "stream closed before welcome");
    });
    stream.on(
      "data",
      createDeframer((body) => {
        const f = fromBinary(ConnectResponseSchema, body).frame;
        if (f.case === "welcome") {
          welcomed = true;
          clearTimeout(timer);
          const every = Math.max(100, f.value.heartbeatIntervalMs || 5000);
          edge.heartbeat = setInterval(() => send(stream, { frame: { case: "heartbeat", value: { sentAtUnixMs: BigInt(Date.now()) } } }), every);
          live.set(id, edge);
          resolve(edge);
        } else if (f.case === "execute") {
          const x = f.value;
          const text = typeof x.params?.text === "string" ? x.params.text : "";
          send(stream, {
            frame: {
              case: "result",
              value: { callId: x.callId, result: { success: true, output: { kind: { case: "stringValue", value: text } }, durationMs: 0, edgeId: id } },
            },
          });
          answered++;
        }
      }),
    );
    send(stream, {
      frame: {
        case: "hello",
        value: {
          edgeId: id,
          version: "bench-sim",
          hostname: id,
          os: `${process.platform}/${process.arch}`,
          labels,
          skills: [
            {
              key: BENCH_SKILL,
              name: "Bench echo",
              description: "Use when benchmarking the tunnel: returns the text it is given.",
              class: SkillClass.SAFE,
              scope: SkillScope.HOST,
              category: "bench",
              params: { fields: [{ name: "text", type: ParamType.STRING, description: "what to echo", required: false }] },
            },
          ],
        },
      },
    });
  });
}

serveWorker(async (msg: WorkerMessage) => {
  switch (msg.cmd) {
    case "connect": {
      const edges = msg.edges as Array<{ id: string; token: string }>;
      const t0 = performance.now();
      const errors: string[] = [];
      let failed = 0;
      await pool(edges, Number(msg.parallel ?? 64), (e) =>
        connectEdge(String(msg.url), e.id, e.token, msg.labels as Record<string, string>, 60_000).then(
          () => undefined,
          (err: Error) => {
            failed++;
            if (errors.length < 5) errors.push(err.message);
          },
        ),
      );
      return { connected: live.size, failed, errors, ms: performance.now() - t0 };
    }
    case "stats":
      return { connected: live.size, lost, lostReasons, answered };
    case "close": {
      for (const e of live.values()) {
        clearInterval(e.heartbeat);
        live.delete(e.id);
        e.session.destroy();
      }
      return { closed: true };
    }
    default:
      throw new Error(`unknown command ${msg.cmd}`);
  }
});
