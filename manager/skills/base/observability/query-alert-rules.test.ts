/**
 * query_alert_rules against a loopback server replaying a recorded Prometheus /api/v1/rules answer
 * (two groups, alerting rules in every state, one recording rule): the request it sends, the
 * filters, the order (firing first) and the alert cap. The real Prometheus is in
 * test/observability.e2e.test.ts.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { lintSkill } from "../../../../skill/lint.ts";
import { buildSkill } from "../../../../skill/registry.ts";
import { configWith, runTool } from "../../../../test/support/tools.ts";
import { startReplayServer, type ReplayServer } from "../../../../test/support/replay-server.ts";
import { createQueryAlertRules } from "./query-alert-rules.ts";

const alert = (instance: string) => ({
  labels: { alertname: "InstanceDown", instance, job: "node", severity: "page" },
  annotations: { summary: `${instance} is down` },
  state: "firing",
  activeAt: "2025-01-31T09:40:00.000Z",
  value: "0e+00",
});

const RULES = {
  status: "success",
  data: {
    groups: [
      {
        name: "node",
        file: "/etc/prometheus/rules/node.yml",
        rules: [
          { state: "inactive", name: "DiskFilling", query: "predict_linear(node_filesystem_avail_bytes[6h], 86400) < 0", duration: 3600, labels: { severity: "ticket" }, annotations: {}, alerts: [], health: "ok", evaluationTime: 0.001, lastEvaluation: "2025-01-31T10:00:00Z", type: "alerting" },
          { state: "firing", name: "InstanceDown", query: "up == 0", duration: 300, labels: { severity: "page" }, annotations: { summary: "{{ $labels.instance }} is down" }, alerts: Array.from({ length: 25 }, (_, i) => alert(`web-${i}:9100`)), health: "ok", evaluationTime: 0.0004, lastEvaluation: "2025-01-31T10:00:00Z", type: "alerting" },
        ],
        interval: 15,
      },
      {
        name: "api",
        file: "/etc/prometheus/rules/api.yml",
        rules: [
          { name: "job:request_errors:rate5m", query: "sum by (job) (rate(http_requests_total{code=~\"5..\"}[5m]))", labels: {}, health: "ok", type: "recording" },
          {
            state: "pending",
            name: "HighErrorRate",
            query: "job:request_errors:rate5m > 0.05",
            duration: 600,
            labels: { severity: "page" },
            annotations: { summary: "API error rate above 5%" },
            alerts: [{ labels: { alertname: "HighErrorRate", job: "api" }, annotations: {}, state: "pending", activeAt: "2025-01-31T09:58:00Z", value: "8.3e-02" }],
            health: "err",
            lastError: "query timed out",
            type: "alerting",
          },
        ],
        interval: 15,
      },
    ],
  },
};

let prom: ReplayServer;
let tool: ReturnType<typeof createQueryAlertRules>;

beforeAll(async () => {
  prom = await startReplayServer((req) => (req.path === "/api/v1/rules" ? { json: RULES } : undefined));
  tool = createQueryAlertRules({ config: configWith({ "observability.prometheus_url": prom.url }) });
});
afterAll(() => prom.close());
beforeEach(() => {
  prom.requests.length = 0;
});

type Out = { rules_total: number; rules_returned: number; counts: Record<string, number>; rules: Array<Record<string, any>> };

describe("query_alert_rules", () => {
  it("passes lint and registers with its verbatim schema", () => {
    expect(lintSkill(buildSkill(tool as never))).toEqual([]);
    expect(buildSkill(tool as never).meta).toMatchObject({ key: "query_alert_rules", class: "safe", scope: "manager", category: "observability" });
  });

  it("asks for alerting rules and lists them firing first, recording rules left out", async () => {
    const out = (await runTool(tool, {})).output as Out;
    expect(prom.requests.map((q) => [q.path, q.params])).toEqual([["/api/v1/rules", { type: "alert" }]]);
    expect(out.counts).toEqual({ firing: 1, pending: 1, inactive: 1 });
    expect(out.rules.map((r) => [r.name, r.state])).toEqual([["InstanceDown", "firing"], ["HighErrorRate", "pending"], ["DiskFilling", "inactive"]]);
    expect(out.rules[1]).toEqual({
      name: "HighErrorRate",
      group: "api",
      file: "/etc/prometheus/rules/api.yml",
      state: "pending",
      health: "err",
      last_error: "query timed out",
      query: "job:request_errors:rate5m > 0.05",
      for_seconds: 600,
      labels: { severity: "page" },
      annotations: { summary: "API error rate above 5%" },
      alerts_total: 1,
      alerts: [{ labels: { alertname: "HighErrorRate", job: "api" }, state: "pending", active_at: "2025-01-31T09:58:00Z", value: 0.083 }],
    });
  });

  it("caps the alerts listed per rule and reports how many there are", async () => {
    const out = (await runTool(tool, { state: "firing" })).output as Out;
    expect(out.rules).toHaveLength(1);
    expect(out.rules[0]!.alerts_total).toBe(25);
    expect(out.rules[0]!.alerts).toHaveLength(20);
    expect(out.rules[0]!.alerts[0]).toEqual({ labels: { alertname: "InstanceDown", instance: "web-0:9100", job: "node", severity: "page" }, state: "firing", active_at: "2025-01-31T09:40:00.000Z", value: 0 });
  });

  it("filters by state, and by part of the rule or group name, case-insensitively; counts cover the name filter", async () => {
    const byState = (await runTool(tool, { state: "inactive" })).output as Out;
    expect(byState.rules.map((r) => r.name)).toEqual(["DiskFilling"]);
    expect(byState).toMatchObject({ rules_total: 1, counts: { firing: 1, pending: 1, inactive: 1 } });
    const byGroup = (await runTool(tool, { name: "API" })).output as Out;
    expect(byGroup.rules.map((r) => r.name)).toEqual(["HighErrorRate"]);
    expect(byGroup.counts).toEqual({ firing: 0, pending: 1, inactive: 0 });
    const byName = (await runTool(tool, { name: "disk", state: "firing" })).output as Out;
    expect(byName).toMatchObject({ rules_total: 0, rules: [], counts: { firing: 0, pending: 0, inactive: 1 } });
  });

  it("keeps at most limit rules", async () => {
    const out = (await runTool(tool, { limit: 1 })).output as Out;
    expect(out).toMatchObject({ rules_total: 3, rules_returned: 1 });
    expect(out.rules[0]!.name).toBe("InstanceDown");
  });
});
