/**
 * Benchmark worker: a closed-loop load generator. `execute` keeps `concurrency` ExecuteSkill calls
 * in flight over one gRPC (HTTP/2) connection, spread round-robin over the given edges, for
 * `durationMs`; `bare` does the same with bare node:http2 unary echoes of the same size (the
 * baseline). Both answer with completed calls, failures and latency quantiles.
 *
 * `execute` sends its calls with `client`: "raw" (the default) frames gRPC by hand on a node:http2
 * session — the same client code as `bare`, so the two rates compare the servers; "connect" uses
 * connect-node's gRPC transport, which costs about as much CPU a call as the manager itself
 * (≈ 0.5–1 ms on a 2-core machine, measured against a bare connect-node echo server) and, on
 * the same cores, bounds the rate it can show.
 */
import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { ExecuteSkillRequestSchema, ExecuteSkillResponseSchema, SkillService } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { serveWorker, type WorkerMessage } from "./lib/worker.ts";
import { grpcUnary, unary } from "./lib/round-trip.ts";
import { frame } from "./lib/grpc-frame.ts";
import { closedLoop, type LoopOutcome } from "./lib/closed-loop.ts";
import { BENCH_SKILL } from "./lib/constants.ts";

interface Outcome extends LoopOutcome {
  /** Request message size in bytes (gRPC framed). */
  requestBytes: number;
}

serveWorker(async (msg: WorkerMessage) => {
  const concurrency = Number(msg.concurrency ?? 64);
  const durationMs = Number(msg.durationMs ?? 10_000);
  const warmupMs = Number(msg.warmupMs ?? 2000);
  const text = String(msg.text ?? "x".repeat(64));
  switch (msg.cmd) {
    case "execute": {
      const token = String(msg.token);
      const edgeIds = msg.edgeIds as string[];
      const requests = edgeIds.map((edgeId) => create(ExecuteSkillRequestSchema, { key: BENCH_SKILL, edgeId, input: { case: "params", value: { text } } }));
      const requestBytes = toBinary(ExecuteSkillRequestSchema, requests[0]!).length + 5;
      const check = (res: { result?: { success: boolean; error?: unknown }; auditSeq: bigint }) => {
        if (!res.result?.success || res.auditSeq <= 0n) throw new Error(`call not successful: ${JSON.stringify(res.result?.error)}`);
      };
      if (msg.client === "connect") {
        const transport = createGrpcTransport({ baseUrl: String(msg.url), interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${token}`), next(req))] });
        const skills = createClient(SkillService, transport);
        const out = await closedLoop(concurrency, durationMs, warmupMs, async (i) => check(await skills.executeSkill(requests[i % requests.length]!)));
        return { ...out, requestBytes } satisfies Outcome;
      }
      const session = http2.connect(String(msg.url));
      const framed = requests.map((r) => frame(toBinary(ExecuteSkillRequestSchema, r)));
      const headers = { authorization: `Bearer ${token}` };
      try {
        const out = await closedLoop(concurrency, durationMs, warmupMs, async (i) => {
          const res = await grpcUnary(session, "/ongrid.v1.SkillService/ExecuteSkill", framed[i % framed.length]!, headers);
          if (res.grpcStatus !== 0) throw new Error(`ExecuteSkill answered grpc-status ${res.grpcStatus}: ${res.grpcMessage}`);
          check(fromBinary(ExecuteSkillResponseSchema, res.message));
        });
        return { ...out, requestBytes } satisfies Outcome;
      } finally {
        session.destroy();
      }
    }
    case "bare": {
      const session = http2.connect(String(msg.url));
      const bytes = Number(msg.requestBytes ?? 100);
      const payload = Buffer.alloc(bytes, 0x78);
      try {
        const out = await closedLoop(concurrency, durationMs, warmupMs, async () => {
          const res = await unary(session, "/echo", payload);
          if (res.status !== 200 || res.body.length !== bytes) throw new Error(`bare echo answered ${res.status} with ${res.body.length} bytes`);
        });
        return { ...out, requestBytes: bytes } satisfies Outcome;
      } finally {
        session.destroy();
      }
    }
    default:
      throw new Error(`unknown command ${msg.cmd}`);
  }
});
