/**
 * query_promql's own decisions against a loopback server replaying recorded Prometheus HTTP API
 * answers: which endpoint and parameters it sends, the 11,000-steps bound checked before asking,
 * the automatic step, and how results are condensed. The real Prometheus is in
 * test/observability.e2e.test.ts.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { lintSkill } from "../../../../skill/lint.ts";
import { buildSkill } from "../../../../skill/registry.ts";
import { configWith, runTool } from "../../../../test/support/tools.ts";
import { startReplayServer, type ReplayServer } from "../../../../test/support/replay-server.ts";
import { createQueryPromql, rangeStep } from "./query-promql.ts";
import { MAX_POINTS, MAX_TOTAL_POINTS } from "./series.ts";

const VECTOR = {
  status: "success",
  data: {
    resultType: "vector",
    result: [
      { metric: { __name__: "up", instance: "web-1:9100", job: "node" }, value: [1738317600.5, "1"] },
      { metric: { __name__: "up", instance: "web-2:9100", job: "node" }, value: [1738317600.5, "0"] },
      { metric: { __name__: "up", instance: "web-3:9100", job: "node" }, value: [1738317600.5, "NaN"] },
    ],
  },
};

/** A matrix longer than MAX_POINTS, with a spike early on that the point cut drops but the summary keeps. */
const LONG = {
  status: "success",
  data: {
    resultType: "matrix",
    result: [{ metric: { job: "api" }, values: Array.from({ length: MAX_POINTS + 100 }, (_, i) => [1738310000 + i * 15, i === 3 ? "+Inf" : i === 5 ? "99" : "1"]) }],
  },
};

/** Forty series of 400 points: together more than MAX_TOTAL_POINTS. */
const MANY = {
  status: "success",
  data: { resultType: "matrix", result: Array.from({ length: 40 }, (_, k) => ({ metric: { instance: `web-${k}` }, values: Array.from({ length: 400 }, (_, i) => [1738310000 + i * 15, String(k)]) })) },
};

let prom: ReplayServer;
let tool: ReturnType<typeof createQueryPromql>;

beforeAll(async () => {
  prom = await startReplayServer((req) => {
    if (req.path === "/api/v1/query") {
      if (req.params.query === "scalar(1)") return { json: { status: "success", data: { resultType: "scalar", result: [1738317600, "1"] } } };
      if (req.params.query === "sum(up") return { status: 400, json: { status: "error", errorType: "bad_data", error: 'invalid parameter "query": 1:5: parse error: unclosed left parenthesis' } };
      return { json: VECTOR };
    }
    if (req.path === "/api/v1/query_range") return { json: req.params.query === "many" ? MANY : LONG };
    return undefined;
  });
  tool = createQueryPromql({ config: configWith({ "observability.prometheus_url": prom.url }) });
});
afterAll(() => prom.close());
beforeEach(() => {
  prom.requests.length = 0;
});

describe("query_promql", () => {
  it("passes lint and registers with its verbatim schema", () => {
    expect(lintSkill(buildSkill(tool as never))).toEqual([]);
    expect(buildSkill(tool as never).meta).toMatchObject({ key: "query_promql", class: "safe", scope: "manager", category: "observability" });
  });

  it("sends an instant query at the given time and keeps at most limit series, values as numbers", async () => {
    const r = await runTool(tool, { expr: "up", time: "2025-01-31T10:00:00.5Z", limit: 2 });
    expect(prom.requests.map((q) => [q.path, q.params])).toEqual([["/api/v1/query", { query: "up", time: "1738317600.5" }]]);
    expect(r.output).toEqual({
      expr: "up",
      kind: "instant",
      time: "2025-01-31T10:00:00.500Z",
      result_type: "vector",
      series_total: 3,
      series_returned: 2,
      series: [
        { metric: { __name__: "up", instance: "web-1:9100", job: "node" }, value: 1, at: "2025-01-31T10:00:00.500Z" },
        { metric: { __name__: "up", instance: "web-2:9100", job: "node" }, value: 0, at: "2025-01-31T10:00:00.500Z" },
      ],
    });
  });

  it("without time asks for now, and keeps a NaN as Prometheus's text", async () => {
    const r = await runTool(tool, { expr: "up" });
    expect(prom.requests[0]!.params).toEqual({ query: "up" });
    expect((r.output as { series: Array<{ value: unknown }> }).series[2]!.value).toBe("NaN");
    expect((await runTool(tool, { expr: "scalar(1)" })).output).toMatchObject({ result_type: "scalar", value: 1, at: "2025-01-31T10:00:00.000Z", series_total: 0 });
  });

  it("sends a range query with unix-second bounds and the step in seconds; long series are cut, the summary is not", async () => {
    const r = await runTool(tool, { expr: "sum(rate(x[5m]))", start: "1738310000", end: "1738317600", step: "15s" });
    expect(prom.requests.map((q) => [q.path, q.params])).toEqual([["/api/v1/query_range", { query: "sum(rate(x[5m]))", start: "1738310000", end: "1738317600", step: "15" }]]);
    const out = r.output as { kind: string; step_seconds: number; series: Array<{ points_total: number; points: Array<[number, number | string]>; summary: Record<string, unknown> }> };
    expect(out).toMatchObject({ kind: "range", start: "2025-01-31T07:53:20.000Z", end: "2025-01-31T10:00:00.000Z", step_seconds: 15, result_type: "matrix", series_total: 1 });
    const [s] = out.series;
    expect(s!.points_total).toBe(MAX_POINTS + 100);
    expect(s!.points).toHaveLength(MAX_POINTS);
    expect(s!.points[0]![0]).toBe(1738310000 + 100 * 15);
    expect(s!.summary).toEqual({ min: 1, max: 99, avg: expect.any(Number), first: 1, last: 1 });
  });

  it("shares the point budget among many series", async () => {
    const out = (await runTool(tool, { expr: "many", start: "now-100m", step: "15s", limit: 500 })).output as { series: Array<{ points_total: number; points: unknown[] }> };
    expect(out.series).toHaveLength(40);
    expect(out.series.every((s) => s.points_total === 400 && s.points.length === MAX_TOTAL_POINTS / 40)).toBe(true);
  });

  it("picks a step of about 250 points when none is given", () => {
    const end = new Date("2025-01-31T10:00:00Z");
    expect(rangeStep(new Date(end.getTime() - 3_600_000), end, undefined)).toBe(15);
    expect(rangeStep(new Date(end.getTime() - 60_000), end, undefined)).toBe(1);
    expect(rangeStep(new Date(end.getTime() - 30 * 86_400_000), end, undefined)).toBe(10_368);
  });

  it("refuses a range of more than 11,000 points per series before asking Prometheus", async () => {
    const r = await runTool(tool, { expr: "up", start: "now-2d", step: "10s" });
    expect(r.error).toMatchObject({
      code: "invalid_argument",
      message: "exceeded maximum resolution of 11,000 points per timeseries: a 172800s range at step 10s is 17280 steps, more than 11,000",
      hint: "Use a step of at least 16s, or a shorter range.",
    });
    expect(rangeStep(new Date(0), new Date(10_999_000), "1s")).toBe(1);
    expect(() => rangeStep(new Date(0), new Date(11_000_001), "1s")).toThrow(/11,000/);
    expect(() => rangeStep(new Date(0), new Date(11_001_000), "1s")).toThrow("a 11001s range at step 1s is 11001 steps, more than 11,000");
    expect(prom.requests).toHaveLength(0);
  });

  it("accepts a range of exactly 11,000 steps, as Prometheus does (it refuses only (end − start) / step > 11000)", () => {
    const start = new Date(Date.UTC(2026, 0, 31, 0, 0, 0));
    const end = new Date(start.getTime() + 11_000 * 1000);
    expect(rangeStep(start, end, "1s")).toBe(1);
    // Steps that are no exact binary fraction: 45100 / 4.1 is 11000.000000000002 in floating point.
    expect(rangeStep(new Date(0), new Date(45_100_000), "4.1s")).toBe(4.1);
    expect(rangeStep(new Date(0), new Date(781_000), "71ms")).toBe(0.071);
    expect(rangeStep(new Date(0), new Date(1_100_000), "0.1s")).toBe(0.1);
    expect(() => rangeStep(new Date(0), new Date(45_100_001), "4.1s")).toThrow(/more than 11,000/);
    // The least step the hint names fits: ceil(range / 11000).
    expect(() => rangeStep(new Date(0), new Date(22_000_001), "2s")).toThrow(expect.objectContaining({ hint: "Use a step of at least 3s, or a shorter range." }));
    expect(rangeStep(new Date(0), new Date(22_000_001), "3s")).toBe(3);
  });

  it("refuses mixed instant and range params, and an inverted range, without asking", async () => {
    expect((await runTool(tool, { expr: "up", time: "now", start: "now-1h" })).error?.code).toBe("invalid_argument");
    expect((await runTool(tool, { expr: "up", end: "now" })).error?.message).toBe("end and step belong to a range query, which needs start");
    expect((await runTool(tool, { expr: "up", start: "now", end: "now-5m" })).error?.code).toBe("invalid_argument");
    await expect(runTool(tool, { expr: "up", start: "now-1h", step: "fast" })).rejects.toThrow(/step/);
    expect(prom.requests).toHaveLength(0);
  });

  it("refuses an impossible date instead of rolling it over (2025-02-30 is not March 2), naming the param and the rule, without asking", async () => {
    let r = await runTool(tool, { expr: "up", time: "2025-02-30T10:00:00Z" });
    expect(r.error).toMatchObject({ code: "invalid_argument", message: 'time: "2025-02-30T10:00:00Z" is not a real date and time: February 2025 has 28 days, not 30' });
    r = await runTool(tool, { expr: "up", start: "2025-01-31T24:00:00Z" });
    expect(r.error).toMatchObject({ code: "invalid_argument", message: 'start: "2025-01-31T24:00:00Z" is not a real date and time: hour 24 is not 00-23' });
    expect(prom.requests).toHaveLength(0);
  });

  it("returns Prometheus's refusal as invalid_argument in its own words", async () => {
    const r = await runTool(tool, { expr: "sum(up" });
    expect(r.error).toMatchObject({ code: "invalid_argument", message: 'Prometheus refused the request: bad_data: invalid parameter "query": 1:5: parse error: unclosed left parenthesis' });
  });

  it("says when no Prometheus is configured", async () => {
    const r = await runTool(createQueryPromql({ config: configWith({}) }), { expr: "up" });
    expect(r.error).toMatchObject({ code: "not_configured", hint: "Set observability.prometheus_url (ONGRID_PROMETHEUS_URL) on the manager." });
  });
});
