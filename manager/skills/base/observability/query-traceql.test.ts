/**
 * query_traceql against a loopback server replaying recorded responses of Tempo's documented HTTP
 * API (GET /api/search with a TraceQL `q`, GET /api/traces/<id> as OTLP JSON with base64 ids, the
 * plain-text 400 for a query Tempo cannot parse and the 404 for an unknown trace). Tempo itself
 * cannot be installed here. The requests the tool sends (path, q, start/end, limit, spss, the
 * JSON accept header without which Tempo answers protobuf) are checked too.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { lintSkill } from "../../../../skill/lint.ts";
import { buildSkill } from "../../../../skill/registry.ts";
import { configWith, runTool } from "../../../../test/support/tools.ts";
import { startReplayServer, type ReplayServer } from "../../../../test/support/replay-server.ts";
import { createQueryTraceql, hexId } from "./query-traceql.ts";

const TRACE_ID = "2f3e0cee77ae5dc9c17ade3689eb2e54";

/** A search answer as Tempo returns it (spanSet is the older single field, spanSets the current one). */
const SEARCH = {
  traces: [
    {
      traceID: TRACE_ID,
      rootServiceName: "shop-backend",
      rootTraceName: "update-billing",
      startTimeUnixNano: "1684778327699392724",
      durationMs: 557,
      spanSet: { spans: [{ spanID: "563d623c76514f8e", startTimeUnixNano: "1684778327735077898", durationNanos: "446979497", attributes: [{ key: "status", value: { stringValue: "error" } }] }], matched: 1 },
      spanSets: [{ spans: [{ spanID: "563d623c76514f8e", startTimeUnixNano: "1684778327735077898", durationNanos: "446979497", attributes: [{ key: "status", value: { stringValue: "error" } }] }], matched: 1 }],
    },
    {
      traceID: "b9a1c0e4d2f3a5b6c7d8e9f0a1b2c3d4",
      rootServiceName: "shop-frontend",
      rootTraceName: "GET /cart",
      startTimeUnixNano: "1684778329100000000",
      durationMs: 1204,
      spanSets: [
        {
          spans: [
            { spanID: "1a2b3c4d5e6f7081", startTimeUnixNano: "1684778329200000000", durationNanos: "1100000000", attributes: [{ key: "http.status_code", value: { intValue: "503" } }, { key: "status", value: { stringValue: "error" } }] },
          ],
          matched: 2,
        },
      ],
    },
  ],
  metrics: { inspectedTraces: 1264, inspectedBytes: "2101984", completedJobs: 1, totalJobs: 1 },
};

/** One trace by id: OTLP JSON in `batches`, ids as base64 (protobuf bytes), two services, one error span. */
const TRACE = {
  batches: [
    {
      resource: { attributes: [{ key: "service.name", value: { stringValue: "shop-backend" } }, { key: "host.name", value: { stringValue: "web-3" } }] },
      scopeSpans: [
        {
          scope: { name: "shop-backend-instrumentation" },
          spans: [
            {
              traceId: "Lz4M7neuXcnBet42iesuVA==",
              spanId: "Vj1iPHZRT44=",
              parentSpanId: "",
              name: "update-billing",
              kind: "SPAN_KIND_SERVER",
              startTimeUnixNano: "1684778327699392724",
              endTimeUnixNano: "1684778328256392724",
              attributes: [{ key: "http.method", value: { stringValue: "POST" } }, { key: "http.status_code", value: { intValue: "500" } }],
              status: { code: "STATUS_CODE_ERROR", message: "billing provider unavailable" },
            },
          ],
        },
      ],
    },
    {
      resource: { attributes: [{ key: "service.name", value: { stringValue: "billing-client" } }] },
      scopeSpans: [
        {
          scope: { name: "billing" },
          spans: [
            {
              traceId: "Lz4M7neuXcnBet42iesuVA==",
              spanId: "Gis8TV5vcIE=",
              parentSpanId: "Vj1iPHZRT44=",
              name: "POST https://billing.example/charge",
              kind: "SPAN_KIND_CLIENT",
              startTimeUnixNano: "1684778327735077898",
              endTimeUnixNano: "1684778328182057395",
              attributes: [{ key: "net.peer.name", value: { stringValue: "billing.example" } }, { key: "retry", value: { boolValue: true } }, { key: "timeout_s", value: { doubleValue: 0.45 } }],
              status: {},
            },
          ],
        },
      ],
    },
  ],
};

let tempo: ReplayServer;
let tool: ReturnType<typeof createQueryTraceql>;

beforeAll(async () => {
  tempo = await startReplayServer((req) => {
    if (req.path === "/api/search") {
      if (req.params.q?.startsWith("{ status =")) return { json: SEARCH };
      return { status: 400, text: "invalid TraceQL query: parse error at line 1, col 3: syntax error: unexpected IDENTIFIER" };
    }
    if (req.path === `/api/traces/${TRACE_ID}`) return { json: TRACE };
    if (req.path.startsWith("/api/traces/")) return { status: 404, text: "trace not found" };
    return undefined;
  });
  tool = createQueryTraceql({ config: configWith({ "observability.tempo_url": tempo.url }) });
});
afterAll(() => tempo.close());
beforeEach(() => {
  tempo.requests.length = 0;
});

describe("query_traceql", () => {
  it("passes lint and registers with its verbatim schema", () => {
    expect(lintSkill(buildSkill(tool as never))).toEqual([]);
    expect(buildSkill(tool as never).meta).toMatchObject({ key: "query_traceql", class: "safe", scope: "manager", category: "observability" });
  });

  it("searches with q, start/end in unix seconds, limit and spans per set, and condenses the traces", async () => {
    const r = await runTool(tool, { query: "{ status = error }", start: "2023-05-22T17:00:00Z", end: "2023-05-22T18:00:00Z", limit: 5 });
    expect(r.success).toBe(true);
    expect(tempo.requests).toHaveLength(1);
    expect(tempo.requests[0]).toMatchObject({ path: "/api/search", params: { q: "{ status = error }", start: "1684774800", end: "1684778400", limit: "5", spss: "3" } });
    expect(r.output).toEqual({
      query: "{ status = error }",
      start: "2023-05-22T17:00:00.000Z",
      end: "2023-05-22T18:00:00.000Z",
      traces_returned: 2,
      traces: [
        {
          trace_id: TRACE_ID,
          root_service: "shop-backend",
          root_name: "update-billing",
          start: "2023-05-22T17:58:47.699Z",
          duration_ms: 557,
          matched: 1,
          spans: [{ span_id: "563d623c76514f8e", start: "2023-05-22T17:58:47.735Z", duration_ms: 446.979, attributes: { status: "error" } }],
        },
        {
          trace_id: "b9a1c0e4d2f3a5b6c7d8e9f0a1b2c3d4",
          root_service: "shop-frontend",
          root_name: "GET /cart",
          start: "2023-05-22T17:58:49.100Z",
          duration_ms: 1204,
          matched: 2,
          spans: [{ span_id: "1a2b3c4d5e6f7081", start: "2023-05-22T17:58:49.200Z", duration_ms: 1100, attributes: { "http.status_code": 503, status: "error" } }],
        },
      ],
      metrics: { inspected_traces: 1264, inspected_bytes: "2101984" },
    });
  });

  it("fetches a trace by id as JSON and lists its spans, errors first, with hex ids, services and durations", async () => {
    const r = await runTool(tool, { trace_id: TRACE_ID.toUpperCase() });
    expect(r.success).toBe(true);
    expect(tempo.requests[0]).toMatchObject({ path: `/api/traces/${TRACE_ID}`, params: {} });
    expect(tempo.requests[0]!.headers.accept).toBe("application/json");
    expect(r.output).toEqual({
      trace_id: TRACE_ID,
      start: "2023-05-22T17:58:47.699Z",
      duration_ms: 557,
      services: ["shop-backend", "billing-client"],
      error_spans: 1,
      spans_total: 2,
      spans_returned: 2,
      spans: [
        {
          span_id: "563d623c76514f8e",
          parent_span_id: "",
          service: "shop-backend",
          name: "update-billing",
          kind: "server",
          start: "2023-05-22T17:58:47.699Z",
          duration_ms: 557,
          status: "error",
          status_message: "billing provider unavailable",
          attributes: { "http.method": "POST", "http.status_code": 500 },
        },
        {
          span_id: "1a2b3c4d5e6f7081",
          parent_span_id: "563d623c76514f8e",
          service: "billing-client",
          name: "POST https://billing.example/charge",
          kind: "client",
          start: "2023-05-22T17:58:47.735Z",
          duration_ms: 446.979,
          status: "unset",
          attributes: { "net.peer.name": "billing.example", retry: true, timeout_s: 0.45 },
        },
      ],
    });
  });

  it("pads a short trace id to 32 hex digits and reports an unknown trace as not_found", async () => {
    const r = await runTool(tool, { trace_id: "abc123" });
    expect(tempo.requests[0]!.path).toBe("/api/traces/00000000000000000000000000abc123");
    expect(r.error).toMatchObject({ code: "not_found", message: "Tempo has no trace 00000000000000000000000000abc123" });
  });

  it("returns Tempo's parse error as invalid_argument", async () => {
    const r = await runTool(tool, { query: "{ stat us }" });
    expect(r.error).toMatchObject({ code: "invalid_argument", message: "Tempo refused the query: invalid TraceQL query: parse error at line 1, col 3: syntax error: unexpected IDENTIFIER" });
  });

  it("needs a query or a trace id, not both, and refuses a bad id before asking Tempo", async () => {
    expect((await runTool(tool, {})).error?.code).toBe("invalid_argument");
    expect((await runTool(tool, { query: "{ status = error }", trace_id: TRACE_ID })).error?.code).toBe("invalid_argument");
    await expect(runTool(tool, { trace_id: "not-hex" })).rejects.toThrow(/trace_id/);
    expect(tempo.requests).toHaveLength(0);
  });

  it("says when no Tempo is configured", async () => {
    const r = await runTool(createQueryTraceql({ config: configWith({}) }), { query: "{ status = error }" });
    expect(r.error).toMatchObject({ code: "not_configured", hint: "Set observability.tempo_url (ONGRID_TEMPO_URL) on the manager." });
  });

  it("reads ids in hex or base64", () => {
    expect(hexId("Vj1iPHZRT44=")).toBe("563d623c76514f8e");
    expect(hexId("563D623C76514F8E")).toBe("563d623c76514f8e");
    expect(hexId("")).toBe("");
  });
});
