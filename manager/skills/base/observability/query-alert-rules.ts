/** query_alert_rules (K3): the alerting rules the configured Prometheus evaluates, with their state and active alerts. */
import { parseDuration } from "../../../../skill/duration.ts";
import { createPrometheusClient } from "../../../observability/prometheus.ts";
import { defineBaseTool } from "../../define.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { sampleValue } from "./series.ts";

/** Active alerts listed per rule; the count of all is reported. */
const MAX_ALERTS_PER_RULE = 20;
const STATES = ["firing", "pending", "inactive"] as const;

interface Params {
  state?: (typeof STATES)[number];
  name?: string;
  limit: number;
}

/** A rule as /api/v1/rules reports it (the fields used here). */
interface PromRule {
  type?: string;
  name?: string;
  query?: string;
  duration?: number;
  state?: string;
  health?: string;
  lastError?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  alerts?: Array<{ labels?: Record<string, string>; state?: string; activeAt?: string; value?: string }>;
}

/** Builds query_alert_rules over the manager's Prometheus settings. */
export function createQueryAlertRules(deps: Pick<BaseToolDeps, "config">) {
  const { prometheus_url, timeout } = deps.config.observability;
  const prometheus = createPrometheusClient({ baseUrl: prometheus_url, timeoutMs: parseDuration(timeout) });
  return defineBaseTool<Params>({
    key: "query_alert_rules",
    name: "Query alert rules",
    description:
      "List the alerting rules of the configured Prometheus with their state (firing, pending, inactive), health, expression, labels, annotations and active alerts. Use to see what is alerting now, or whether an alert exists for a symptom, before querying metrics; filter by state and by a part of the rule or group name.",
    class: "safe",
    category: "observability",
    schema: {
      type: "object",
      additionalProperties: false,
      properties: {
        state: { type: "string", enum: [...STATES], description: "Only rules in this state." },
        name: { type: "string", minLength: 1, maxLength: 200, description: "Only rules whose name or group name contains this text (case-insensitive), e.g. HighErrorRate." },
        limit: { type: "integer", minimum: 1, maximum: 500, default: 100, description: "At most this many rules are returned (the count of all matching is reported)." },
      },
    },
    resultPreview: {
      rules_total: 1,
      rules_returned: 1,
      counts: { firing: 1, pending: 0, inactive: 3 },
      rules: [
        {
          name: "HighErrorRate",
          group: "api",
          file: "/etc/prometheus/rules/api.yml",
          state: "firing",
          health: "ok",
          query: "job:request_errors:rate5m > 0.05",
          for_seconds: 300,
          labels: { severity: "page" },
          annotations: { summary: "API error rate above 5%" },
          alerts_total: 1,
          alerts: [{ labels: { alertname: "HighErrorRate", job: "api" }, state: "firing", active_at: "2025-01-31T09:52:00Z", value: 0.083 }],
        },
      ],
    },
    async execute(ctx, p) {
      const { groups } = await prometheus.rules({ type: "alert", signal: ctx.signal });
      const needle = p.name?.toLowerCase();
      const counts = { firing: 0, pending: 0, inactive: 0 };
      const matching = [];
      for (const group of groups) {
        const groupName = String(group.name ?? "");
        for (const rule of (group.rules as PromRule[] | undefined) ?? []) {
          if (rule.type !== undefined && rule.type !== "alerting") continue;
          const state = rule.state ?? "inactive";
          if (needle && !String(rule.name ?? "").toLowerCase().includes(needle) && !groupName.toLowerCase().includes(needle)) continue;
          if (state in counts) counts[state as keyof typeof counts] += 1;
          if (p.state && state !== p.state) continue;
          const alerts = rule.alerts ?? [];
          matching.push({
            name: rule.name ?? "",
            group: groupName,
            file: String(group.file ?? ""),
            state,
            health: rule.health ?? "",
            ...(rule.lastError ? { last_error: rule.lastError } : {}),
            query: rule.query ?? "",
            for_seconds: rule.duration ?? 0,
            labels: rule.labels ?? {},
            annotations: rule.annotations ?? {},
            alerts_total: alerts.length,
            alerts: alerts.slice(0, MAX_ALERTS_PER_RULE).map((a) => ({ labels: a.labels ?? {}, state: a.state ?? "", active_at: a.activeAt ?? "", value: a.value === undefined ? null : sampleValue(a.value) })),
          });
        }
      }
      // Firing first, then pending, then the rest; the order within a state is Prometheus's.
      const rank = (s: string) => (s === "firing" ? 0 : s === "pending" ? 1 : 2);
      matching.sort((a, b) => rank(a.state) - rank(b.state));
      const rules = matching.slice(0, p.limit);
      return { rules_total: matching.length, rules_returned: rules.length, counts, rules };
    },
  });
}
