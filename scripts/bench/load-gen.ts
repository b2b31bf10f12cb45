/**
 * Benchmark worker: a closed-loop load generator. `execute` keeps `concurrency` ExecuteSkill calls
 * in flight over one gRPC (HTTP/2) connection, spread round-robin over the given edges, for
 * `durationMs`; `bare` does the same with bare node:http2 unary echoes of the same size (the
 * baseline). Both answer with completed calls, failures and latency quantiles.
 */
import http2 from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { ExecuteSkillRequestSchema, SkillService } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { serveWorker, type WorkerMessage } from "./lib/worker.ts";
import { unary } from "./lib/round-trip.ts";
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
      const transport = createGrpcTransport({ baseUrl: String(msg.url), interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${token}`), next(req))] });
      const skills = createClient(SkillService, transport);
      const requests = edgeIds.map((edgeId) => create(ExecuteSkillRequestSchema, { key: BENCH_SKILL, edgeId, input: { case: "params", value: { text } } }));
      const out = await closedLoop(concurrency, durationMs, warmupMs, async (i) => {
        const res = await skills.executeSkill(requests[i % requests.length]!);
        if (!res.result?.success || res.auditSeq <= 0n) throw new Error(`call not successful: ${JSON.stringify(res.result?.error)}`);
      });
      return { ...out, requestBytes: toBinary(ExecuteSkillRequestSchema, requests[0]!).length + 5 } satisfies Outcome;
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
