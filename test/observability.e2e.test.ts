/**
 * K3 end to end with a real Prometheus (Debian's package): it scrapes the manager's /metrics with a
 * viewer's API token, evaluates a rules file of the test's, and query_promql / query_alert_rules,
 * called over the real RPC with bearer tokens, read the manager's own series and rules back from it.
 * Loki and Tempo cannot be installed here: query_logql and query_traceql are tested against
 * recorded responses in manager/skills/base/observability/.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { describeWithPrometheus, freePort, startPrometheus, type TestPrometheus } from "./support/prometheus.ts";

let m: TestManager | undefined;
let prom: TestPrometheus | undefined;
let dir: string;
let skills: Client<typeof SkillService>;

const RULES = `groups:
  - name: ongrid-test
    rules:
      - alert: OngridAnalyzeOutputCalled
        expr: sum(ongrid_skill_calls_total{skill="analyze_output",outcome="success"}) > 0
        labels: { severity: info }
        annotations: { summary: "analyze_output was called" }
      - alert: OngridNeverFires
        expr: vector(1) < 0
        for: 10m
        labels: { severity: page }
`;

/** Runs a skill over the RPC as the operator; returns the envelope with its output as plain JSON. */
async function run(key: string, params: Record<string, unknown>) {
  const { result } = await skills.executeSkill({ key, input: { case: "params", value: params as never } });
  return { success: result!.success, output: result!.output ? toJson(ValueSchema, result!.output as never) : null, error: result!.error };
}

type Sample = { metric: Record<string, string>; value: number | string };
type Series = { metric: Record<string, string>; points: Array<[number, number]>; points_total: number; summary: { max: number; last: number } };

/** Calls query_promql until `accept` takes its output (Prometheus scrapes every second), or fails with the last output. */
async function promqlUntil<T>(params: Record<string, unknown>, accept: (out: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 45_000;
  let last: unknown;
  for (;;) {
    const r = await run("query_promql", params);
    last = r.success ? r.output : r.error;
    if (r.success && accept(r.output as T)) return r.output as T;
    if (Date.now() > deadline) throw new Error(`${what}: not seen within 45 s; last answer ${JSON.stringify(last)}\nprometheus said:\n${prom?.output()}`);
    await new Promise((res) => setTimeout(res, 250));
  }
}

describeWithPrometheus("observability with a real Prometheus (K3)", () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ongrid-observability-"));
    const promPort = await freePort();
    m = await bootManager({ "observability.prometheus_url": `http://127.0.0.1:${promPort}` });
    // Prometheus scrapes as a viewer: any API token may read /metrics.
    writeFileSync(join(dir, "scrape.token"), await makeUser(m, "prometheus", "viewer"));
    const transport = createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(await makeUser(m, "olga", "operator"))] });
    skills = createClient(SkillService, transport);
    prom = await startPrometheus({ port: promPort, rules: RULES, targets: [{ job: "ongrid", address: `127.0.0.1:${m.port}`, tokenFile: join(dir, "scrape.token") }] });
  }, 120_000);

  afterAll(async () => {
    await prom?.stop();
    await m?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("Prometheus scrapes /metrics with a viewer's token (up is 1)", async () => {
    const out = await promqlUntil<{ series: Sample[] }>({ expr: 'up{job="ongrid"}' }, (o) => o.series.some((s) => s.value === 1), "up{job=ongrid} == 1");
    expect(out.series).toHaveLength(1);
    expect(out.series[0]!.metric).toMatchObject({ job: "ongrid", instance: `127.0.0.1:${m!.port}` });
  });

  it("query_promql returns the manager's real call counters and latency histogram", async () => {
    for (let i = 0; i < 3; i++) expect((await run("analyze_output", { text: `line ${i}\nERROR disk full on /var` })).success).toBe(true);
    // Refused before the gate: params that do not validate.
    const bad = await skills.executeSkill({ key: "analyze_output", input: { case: "params", value: { max_chars: 5 } as never } }).catch((e: Error) => e);
    expect(bad).toBeInstanceOf(Error);

    const calls = await promqlUntil<{ kind: string; series: Sample[] }>(
      { expr: 'ongrid_skill_calls_total{skill="analyze_output"}' },
      (o) => o.series.some((s) => s.metric.outcome === "success" && s.value === 3) && o.series.some((s) => s.metric.outcome === "error"),
      "analyze_output calls",
    );
    expect(calls.kind).toBe("instant");
    const byOutcome = Object.fromEntries(calls.series.map((s) => [`${s.metric.decision}/${s.metric.outcome}`, s.value]));
    expect(byOutcome).toEqual({ "allow/success": 3, "none/error": 1 });

    const errors = await promqlUntil<{ series: Sample[] }>({ expr: 'ongrid_skill_call_errors_total{skill="analyze_output"}' }, (o) => o.series.length > 0, "analyze_output errors");
    expect(errors.series.map((s) => [s.metric.code, s.value])).toEqual([["invalid_argument", 1]]);

    const count = await promqlUntil<{ series: Sample[] }>({ expr: 'ongrid_skill_call_duration_seconds_count{skill="analyze_output"}' }, (o) => o.series[0]?.value === 3, "latency histogram count");
    expect(count.series).toHaveLength(1);
  });

  it("a range query returns points with a summary", async () => {
    await promqlUntil<{ series: Sample[] }>({ expr: 'ongrid_skill_calls_total{skill="analyze_output",outcome="success"}' }, (o) => o.series[0]?.value === 3, "counter at 3");
    const out = await promqlUntil<{ kind: string; result_type: string; step_seconds: number; series: Series[] }>(
      { expr: 'ongrid_skill_calls_total{skill="analyze_output",outcome="success"}', start: "now-5m", step: "1s" },
      (o) => o.series[0]?.summary.last === 3,
      "range ending at 3",
    );
    expect(out).toMatchObject({ kind: "range", result_type: "matrix", step_seconds: 1 });
    const [series] = out.series;
    expect(series!.points.length).toBeGreaterThan(0);
    expect(series!.points_total).toBe(series!.points.length);
    expect(series!.points.at(-1)![1]).toBe(3);
    expect(series!.summary.max).toBe(3);
    // Points are [unix seconds, value], oldest first, one step apart.
    for (let i = 1; i < series!.points.length; i++) expect(series!.points[i]![0] - series!.points[i - 1]![0]).toBeCloseTo(1, 6);
  });

  it("a bad PromQL expression comes back as invalid_argument with Prometheus's own message", async () => {
    const r = await run("query_promql", { expr: "sum(rate(ongrid_skill_calls_total[5m]" });
    expect(r.success).toBe(false);
    expect(r.error!.code).toBe("invalid_argument");
    expect(r.error!.message).toMatch(/^Prometheus refused the request: bad_data: .*parse error/);
  });

  it("a range of more than 11,000 steps is refused before Prometheus is asked", async () => {
    const r = await run("query_promql", { expr: "up", start: "now-1d", step: "1s" });
    expect(r.success).toBe(false);
    expect(r.error!.code).toBe("invalid_argument");
    expect(r.error!.message).toContain("11,000 points");
    expect(r.error!.hint).toBe("Use a step of at least 8s, or a shorter range.");
  });

  it("a range of exactly 11,000 steps is accepted, by query_promql and by Prometheus", async () => {
    // Prometheus refuses only (end − start) / step > 11000; 11,000 steps of 1s is the largest range it answers at that step.
    const r = await run("query_promql", { expr: "vector(1)", start: "now-11000s", step: "1s", limit: 1 });
    expect(r.success, JSON.stringify(r.error)).toBe(true);
    expect(r.output).toMatchObject({ kind: "range", step_seconds: 1 });
  });

  it("query_alert_rules lists the rules file's rules with their state", async () => {
    const quiet = await run("query_alert_rules", { name: "neverfires" });
    expect(quiet.success).toBe(true);
    expect(quiet.output).toMatchObject({
      rules_total: 1,
      counts: { firing: 0, pending: 0, inactive: 1 },
      rules: [{ name: "OngridNeverFires", group: "ongrid-test", state: "inactive", health: "ok", query: "vector(1) < 0", for_seconds: 600, labels: { severity: "page" }, alerts_total: 0, alerts: [] }],
    });
    // analyze_output ran in an earlier test: the other rule fires once Prometheus has evaluated it.
    const deadline = Date.now() + 45_000;
    let out: { rules: Array<{ name: string; state: string; alerts: Array<{ state: string; value: number }>; annotations: Record<string, string> }> };
    for (;;) {
      const r = await run("query_alert_rules", { state: "firing" });
      expect(r.success).toBe(true);
      out = r.output as typeof out;
      if (out.rules.length > 0 || Date.now() > deadline) break;
      await new Promise((res) => setTimeout(res, 250));
    }
    expect(out.rules.map((r) => r.name)).toEqual(["OngridAnalyzeOutputCalled"]);
    expect(out.rules[0]!.annotations).toEqual({ summary: "analyze_output was called" });
    expect(out.rules[0]!.alerts).toEqual([expect.objectContaining({ state: "firing", value: 3 })]);
  });
});
