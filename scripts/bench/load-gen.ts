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
import { quantile } from "./lib/stats.ts";
import { BENCH_SKILL } from "./lib/constants.ts";

interface Outcome {
  ok: number;
  failed: number;
  errors: string[];
  ms: number;
  latency: { p50: number; p99: number };
  /** Request message size in bytes (gRPC framed). */
  requestBytes: number;
}

/** Runs `call` with `concurrency` loops until `durationMs` has passed (after `warmupMs` untimed). */
async function closedLoop(concurrency: number, durationMs: number, warmupMs: number, call: (i: number) => Promise<void>): Promise<Omit<Outcome, "requestBytes">> {
  let phase: "warmup" | "measure" | "stop" = warmupMs > 0 ? "warmup" : "measure";
  let ok = 0;
  let failed = 0;
  const errors: string[] = [];
  const lat: number[] = [];
  let i = 0;
  let t0 = performance.now();
  const loop = async () => {
    while (phase !== "stop") {
      const p = phase;
      const s = performance.now();
      try {
        await call(i++);
        if (p === "measure" && phase === "measure") {
          ok++;
          if (lat.length < 200_000) lat.push(performance.now() - s);
        }
      } catch (err) {
        if (p === "measure" && phase === "measure") failed++;
        if (errors.length < 5) errors.push(String((err as Error)?.message ?? err));
      }
    }
  };
  const loops = Array.from({ length: concurrency }, loop);
  if (warmupMs > 0) {
    await new Promise((r) => setTimeout(r, warmupMs));
    phase = "measure";
    t0 = performance.now();
  }
  await new Promise((r) => setTimeout(r, durationMs));
  const ms = performance.now() - t0;
  phase = "stop";
  await Promise.all(loops);
  return { ok, failed, errors, ms, latency: { p50: quantile(lat, 0.5), p99: quantile(lat, 0.99) } };
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
