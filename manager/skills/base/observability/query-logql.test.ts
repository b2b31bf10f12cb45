/**
 * query_logql against a loopback server replaying recorded responses of Loki's documented HTTP API
 * (GET /loki/api/v1/query_range and /query; streams, matrix and vector results; the plain-text
 * 400 Loki sends for a query it cannot parse). Loki itself cannot be installed here. The requests
 * the tool sends (path, query, nanosecond times, limit, direction) are checked too.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { lintSkill } from "../../../../skill/lint.ts";
import { buildSkill } from "../../../../skill/registry.ts";
import { configWith, runTool } from "../../../../test/support/tools.ts";
import { startReplayServer, type ReplayServer } from "../../../../test/support/replay-server.ts";
import { createQueryLogql, MAX_LINE_CHARS } from "./query-logql.ts";

/** A log query's answer as Loki returns it: two streams, newest entries first in each (direction=backward). */
const STREAMS = {
  status: "success",
  data: {
    resultType: "streams",
    result: [
      {
        stream: { app: "api", host: "web-1", level: "error", namespace: "shop" },
        values: [
          ["1738317492345000000", 'level=error msg="upstream timeout" upstream=10.0.0.7:8080 duration=30.001s'],
          ["1738317300120000000", 'level=error msg="upstream timeout" upstream=10.0.0.7:8080 duration=30.000s'],
        ],
      },
      {
        stream: { app: "api", host: "web-2", level: "error", namespace: "shop" },
        values: [["1738317400000000000", `level=error msg="connection reset by peer" upstream=10.0.0.7:8080 body=${"x".repeat(1500)}`]],
      },
    ],
    stats: {
      summary: { bytesProcessedPerSecond: 2621440, linesProcessedPerSecond: 18421, totalBytesProcessed: 524288, totalLinesProcessed: 3684, execTime: 0.2, queueTime: 0.001, subqueries: 1, totalEntriesReturned: 3 },
      querier: { store: { totalChunksRef: 4, totalChunksDownloaded: 4 } },
      ingester: { totalReached: 1, totalChunksMatched: 2, totalBatches: 1, totalLinesSent: 3 },
    },
  },
};

/** A metric query over a range: a matrix, Prometheus-shaped. */
const MATRIX = {
  status: "success",
  data: {
    resultType: "matrix",
    result: [
      { metric: { level: "error" }, values: [[1738317300, "12"], [1738317360, "31"], [1738317420, "7"]] },
      { metric: { level: "warn" }, values: [[1738317300, "2"], [1738317360, "0"], [1738317420, "1"]] },
    ],
    stats: { summary: { totalBytesProcessed: 1048576, execTime: 0.05 } },
  },
};

/** A metric query at an instant: a vector. */
const VECTOR = { status: "success", data: { resultType: "vector", result: [{ metric: { app: "api" }, value: [1738317600, "43"] }], stats: { summary: { totalBytesProcessed: 2048, execTime: 0.01 } } } };

let loki: ReplayServer;
let tool: ReturnType<typeof createQueryLogql>;

beforeAll(async () => {
  loki = await startReplayServer((req) => {
    const q = req.params.query ?? "";
    if (q.includes("{app=api}")) return { status: 400, text: "parse error at line 1, col 2: syntax error: unexpected IDENTIFIER, expecting STRING\n" };
    if (req.path === "/loki/api/v1/query_range") return { json: q.startsWith("sum") ? MATRIX : STREAMS };
    if (req.path === "/loki/api/v1/query") return { json: VECTOR };
    return undefined;
  });
  tool = createQueryLogql({ config: configWith({ "observability.loki_url": `${loki.url}/` }) });
});
afterAll(() => loki.close());
beforeEach(() => {
  loki.requests.length = 0;
});

describe("query_logql", () => {
  it("passes lint and registers with its verbatim schema", () => {
    expect(lintSkill(buildSkill(tool as never))).toEqual([]);
    expect(buildSkill(tool as never).meta).toMatchObject({ key: "query_logql", class: "safe", scope: "manager", category: "observability" });
  });

  it("sends a range log query with nanosecond times, the limit and the direction", async () => {
    const r = await runTool(tool, { query: '{app="api"} |= "timeout"', start: "2025-01-31T09:00:00Z", end: "2025-01-31T10:00:00.5Z", limit: 50 });
    expect(r.success).toBe(true);
    expect(loki.requests).toHaveLength(1);
    const [req] = loki.requests;
    expect(req!.path).toBe("/loki/api/v1/query_range");
    expect(req!.params).toEqual({ query: '{app="api"} |= "timeout"', start: "1738314000000000000", end: "1738317600500000000", limit: "50", direction: "backward" });
    expect(req!.headers.accept).toBe("application/json");
  });

  it("merges the streams' lines by time, newest first, each naming its stream, long lines cut", async () => {
    const r = await runTool(tool, { query: '{app="api"} |= "error"' });
    expect(r.success).toBe(true);
    const out = r.output as { kind: string; start: string; end: string; streams: unknown[]; lines: Array<{ at: string; stream: number; line: string }>; [k: string]: unknown };
    expect(out).toMatchObject({ kind: "range", result_type: "streams", lines_total: 3, lines_returned: 3, limit_reached: false, stats: { bytes_processed: 524288, exec_seconds: 0.2 } });
    // Default window: the last hour.
    expect(Date.parse(out.end) - Date.parse(out.start)).toBe(3_600_000);
    expect(out.streams).toEqual([
      { id: 0, labels: { app: "api", host: "web-1", level: "error", namespace: "shop" }, lines: 2 },
      { id: 1, labels: { app: "api", host: "web-2", level: "error", namespace: "shop" }, lines: 1 },
    ]);
    expect(out.lines.map((l) => [l.at, l.stream])).toEqual([
      ["2025-01-31T09:58:12.345Z", 0],
      ["2025-01-31T09:56:40.000Z", 1],
      ["2025-01-31T09:55:00.120Z", 0],
    ]);
    expect(out.lines[0]!.line).toBe('level=error msg="upstream timeout" upstream=10.0.0.7:8080 duration=30.001s');
    const long = out.lines[1]!.line;
    expect(long.length).toBeLessThan(MAX_LINE_CHARS + 40);
    expect(long).toMatch(/… \[\+\d+ chars\]$/);
  });

  it("orders oldest first with direction forward and keeps at most limit lines", async () => {
    const r = await runTool(tool, { query: '{app="api"}', direction: "forward", limit: 2 });
    const out = r.output as { lines: Array<{ at: string }>; lines_returned: number; limit_reached: boolean };
    expect(loki.requests[0]!.params).toMatchObject({ direction: "forward", limit: "2" });
    expect(out.lines.map((l) => l.at)).toEqual(["2025-01-31T09:55:00.120Z", "2025-01-31T09:56:40.000Z"]);
    expect(out).toMatchObject({ lines_returned: 2, limit_reached: true });
  });

  it("condenses a metric query's matrix into series with summaries", async () => {
    const r = await runTool(tool, { query: 'sum by (level) (count_over_time({app="api"}[1m]))', start: "now-3m" });
    expect(r.success).toBe(true);
    expect(r.output).toMatchObject({
      result_type: "matrix",
      series_total: 2,
      series: [
        { metric: { level: "error" }, points_total: 3, summary: { min: 7, max: 31, first: 12, last: 7 }, points: [[1738317300, 12], [1738317360, 31], [1738317420, 7]] },
        { metric: { level: "warn" }, points_total: 3, summary: { min: 0, max: 2, avg: 1 } },
      ],
    });
  });

  it("asks /loki/api/v1/query at an instant when time is given", async () => {
    const r = await runTool(tool, { query: 'sum(count_over_time({app="api"}[5m]))', time: "1738317600" });
    expect(loki.requests.map((q) => q.path)).toEqual(["/loki/api/v1/query"]);
    expect(loki.requests[0]!.params).toEqual({ query: 'sum(count_over_time({app="api"}[5m]))', time: "1738317600000000000", limit: "100", direction: "backward" });
    expect(r.output).toMatchObject({ kind: "instant", time: "2025-01-31T10:00:00.000Z", result_type: "vector", series: [{ metric: { app: "api" }, value: 43, at: "2025-01-31T10:00:00.000Z" }] });
  });

  it("returns Loki's parse error as invalid_argument", async () => {
    const r = await runTool(tool, { query: "{app=api}" });
    expect(r.success).toBe(false);
    expect(r.error).toMatchObject({ code: "invalid_argument", message: "Loki refused the query: parse error at line 1, col 2: syntax error: unexpected IDENTIFIER, expecting STRING" });
  });

  it("refuses time with start, and a window that ends before it starts, without asking Loki", async () => {
    const both = await runTool(tool, { query: '{app="api"}', time: "now", start: "now-1h" });
    expect(both.error?.code).toBe("invalid_argument");
    const backwards = await runTool(tool, { query: '{app="api"}', start: "now", end: "now-1h" });
    expect(backwards.error).toMatchObject({ code: "invalid_argument", message: expect.stringMatching(/^start \(.*\) must be before end/) });
    const garbage = await runTool(tool, { query: '{app="api"}', start: "yesterday" });
    expect(garbage.error).toMatchObject({ code: "invalid_argument", message: 'start: "yesterday" is not a time' });
    expect(loki.requests).toHaveLength(0);
  });

  it("says when no Loki is configured, and when it cannot be reached", async () => {
    const none = await runTool(createQueryLogql({ config: configWith({}) }), { query: '{app="api"}' });
    expect(none.error).toMatchObject({ code: "not_configured", hint: "Set observability.loki_url (ONGRID_LOKI_URL) on the manager." });
    const closed = await startReplayServer(() => undefined);
    await closed.close();
    const gone = await runTool(createQueryLogql({ config: configWith({ "observability.loki_url": closed.url }) }), { query: '{app="api"}' });
    expect(gone.error?.code).toBe("upstream_unavailable");
  });
});
