/**
 * correlate_incident (K3): for an incident's window (its start minus a lookback, to its end or
 * now), PromQL series, recent changes and the logs of the affected edges, merged into one
 * timeline sorted by time, each entry naming its source. A source that is not configured or
 * fails is a note, not a failure: the rest of the timeline still comes back. Log skills run on
 * the edges through the dispatcher as the caller, so they are gated and audited like any call.
 */
import { SkillError } from "../../../../skill/errors.ts";
import { parseDuration } from "../../../../skill/duration.ts";
import type { ResultEnvelope, SkillContext } from "../../../../skill/types.ts";
import { defineBaseTool } from "../../define.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { invocationOf } from "../../invocation.ts";
import type { Invocation } from "../../../calls/types.ts";
import { createIncidentStore, type IncidentRow } from "../../../incidents/store.ts";
import { collectChanges } from "../../../incidents/changes.ts";
import { exprsFromGeneratorUrl } from "../../../incidents/alertmanager.ts";
import { createPrometheusClient, type PromSeries } from "../../../observability/prometheus.ts";
import { visibleIncident } from "./get-incident-detail.ts";
import { incidentSummary } from "./view.ts";

/** One entry of the timeline. */
export interface TimelineEntry {
  at: string;
  /** incident | prometheus | audit | change_event | read_journal | tail_file */
  source: string;
  kind: string;
  summary: string;
  edge_id?: string;
  [extra: string]: unknown;
}

interface Params {
  id: string;
  lookback: string;
  logs: boolean;
}

const MAX_EXPRS = 5;
const MAX_SERIES_PER_EXPR = 10;
const MAX_POINTS_PER_SERIES = 20;
const MAX_CHANGES = 200;
const MAX_LOG_EDGES = 5;
const LOG_LINES = 50;
const MAX_LOOKBACK_MS = 24 * 3_600_000;

/** The tool, bound to the manager's parts. */
export function createCorrelateIncident(deps: BaseToolDeps) {
  const incidents = createIncidentStore(deps.database);
  return defineBaseTool<Params>({
    key: "correlate_incident",
    name: "Correlate an incident",
    description:
      "Build one timeline for an incident's window (its start minus lookback, to its end or now): the alert's own PromQL expression and its ALERTS/up series from Prometheus, the changes made in the window (approved calls from the audit log, posted deploy and config events) and warnings from the journals of the affected edges, sorted by time with each entry's source. Use when diagnosing an incident to see what happened around it in one view; sources that are not configured or fail are listed as notes.",
    class: "safe",
    category: "observability",
    schema: {
      type: "object",
      additionalProperties: false,
      required: ["id"],
      properties: {
        id: { type: "string", minLength: 1, maxLength: 140, description: "The incident's id (inc_…) or its Alertmanager fingerprint." },
        lookback: { type: "string", default: "30m", pattern: "^\\d{1,4}(?:h|m|s)$", description: "How far before the incident's start the window begins, e.g. 30m or 2h (at most 24h)." },
        logs: { type: "boolean", default: true, description: "Also read recent warnings from the affected edges' journals (read_journal), and their log file when the alert names one (tail_file)." },
      },
    },
    resultPreview: {
      incident: { id: "inc_3f9c0a1b2c3d4e5f", alertname: "HighLoad", status: "firing", edge_ids: ["web-01"] },
      window: { start: "2026-01-31T13:30:00.000Z", end: "2026-01-31T14:05:00.000Z" },
      timeline: [
        { at: "2026-01-31T13:58:00.000Z", source: "change_event", kind: "deploy", summary: "checkout v2.4.1", edge_id: "web-01" },
        { at: "2026-01-31T14:00:00.000Z", source: "incident", kind: "started", summary: "HighLoad started firing: load is high on web-01" },
        { at: "2026-01-31T14:00:15.000Z", source: "prometheus", kind: "series", summary: "node_load1{instance=\"web-01:9100\"} = 12.5", expr: "node_load1 > 10" },
      ],
      notes: ["read_journal on web-01: journal_unavailable: there is no systemd journal on this host"],
    },
    async execute(ctx, p) {
      const inv = invocationOf(ctx);
      const { row, visible } = await visibleIncident(deps, inv.caller, p.id);
      const lookbackMs = parseDuration(p.lookback);
      if (lookbackMs > MAX_LOOKBACK_MS) throw new SkillError("invalid_argument", `param "lookback": ${p.lookback} is more than 24h`, "Ask for at most 24h before the incident's start.");
      const start = new Date(row.startsAt.getTime() - lookbackMs);
      const end = row.endsAt ?? new Date();
      const notes: string[] = [];
      const timeline: TimelineEntry[] = [{ at: row.startsAt.toISOString(), source: "incident", kind: "started", summary: `${row.alertname || "alert"} started firing${row.summary ? `: ${row.summary}` : ""}` }];
      if (row.endsAt) timeline.push({ at: row.endsAt.toISOString(), source: "incident", kind: "resolved", summary: `${row.alertname || "alert"} resolved` });
      const edgeIds = row.edgeIds.filter(visible);

      const [prom, changes, logs] = await Promise.all([
        promTimeline(deps, row, start, end, ctx.signal),
        collectChanges({ database: deps.database, edges: deps.edges, incidents }, { since: start, until: end, origin: "all", limit: MAX_CHANGES, viewer: inv.caller }),
        p.logs ? logTimeline(deps, inv, ctx, row, edgeIds, start, end) : Promise.resolve({ entries: [], untimed: [], notes: ["logs: not asked for (logs: false)"], status: {} }),
      ]);
      timeline.push(...prom.entries);
      notes.push(...prom.notes);
      for (const c of changes.changes) {
        const { at, origin, kind, summary, edge_id, ...rest } = c;
        timeline.push({ at, source: origin === "audit" ? "audit" : "change_event", kind, summary, ...(edge_id ? { edge_id } : {}), ...(edge_id && edgeIds.includes(edge_id) ? { on_incident_edge: true } : {}), ...rest });
      }
      if (changes.truncated) notes.push(`changes: more than ${MAX_CHANGES} in the window; the newest ${MAX_CHANGES} are shown (query_change_events pages through them)`);
      if (!changes.params_shown) notes.push("changes: params of audited calls are shown to approvers and admins only");
      timeline.push(...logs.entries);
      notes.push(...logs.notes);

      const order = (e: TimelineEntry) => Date.parse(e.at);
      const sorted = timeline.map((e, i) => ({ e, i })).sort((a, b) => order(a.e) - order(b.e) || a.i - b.i).map((x) => x.e);
      return {
        incident: { ...incidentSummary(row, visible), labels: row.labels },
        window: { start: start.toISOString(), end: end.toISOString() },
        timeline: sorted,
        series: prom.series,
        ...(logs.untimed.length ? { logs: logs.untimed } : {}),
        sources: { prometheus: prom.status, changes: changes.changes.length, logs: logs.status },
        notes,
      };
    },
  });
}

const labelText = (m: Record<string, string>) => {
  const { __name__: name, ...rest } = m;
  const inner = Object.entries(rest).map(([k, v]) => `${k}="${v}"`).join(",");
  return `${name ?? ""}{${inner}}`;
};

const quote = (s: string) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;

/** The PromQL part: the alert's expressions and the standard ALERTS / up series, as change points. */
async function promTimeline(deps: BaseToolDeps, row: IncidentRow, start: Date, end: Date, signal: AbortSignal) {
  const entries: TimelineEntry[] = [];
  const notes: string[] = [];
  const series: Array<Record<string, unknown>> = [];
  const base = deps.config.observability.prometheus_url;
  if (!base) return { entries, notes: ["prometheus: not configured (observability.prometheus_url); no series on the timeline"], series, status: "not_configured" };
  const client = createPrometheusClient({ baseUrl: base, timeoutMs: parseDuration(deps.config.observability.timeout) });
  const exprs = exprsFromGeneratorUrl(row.generatorUrl).slice(0, MAX_EXPRS - 2);
  if (!exprs.length) notes.push("prometheus: the alert's generatorURL names no expression; only the standard series were queried");
  if (row.alertname) exprs.push(`ALERTS{alertname=${quote(row.alertname)}}`);
  if (row.labels.instance) exprs.push(`up{instance=${quote(row.labels.instance)}}`);
  // About 120 points over the window, never finer than 15 s.
  const step = Math.max(15, Math.ceil((end.getTime() - start.getTime()) / 1000 / 120));
  // Points counted back from the end, so the newest state (e.g. the alert just fired) is always one of them.
  const from = new Date(end.getTime() - Math.ceil((end.getTime() - start.getTime()) / 1000 / step) * step * 1000);
  let failed = 0;
  await Promise.all(
    exprs.map(async (expr) => {
      let result;
      try {
        result = await client.queryRange(expr, from, end, step, { signal });
      } catch (err) {
        failed++;
        const e = err as SkillError;
        notes.push(`prometheus: ${expr}: ${e.code ?? "error"}: ${e.message}`);
        return;
      }
      const list = result.resultType === "matrix" ? (result.result as PromSeries[]) : [];
      if (!list.length) notes.push(`prometheus: ${expr}: no series in the window`);
      if (list.length > MAX_SERIES_PER_EXPR) notes.push(`prometheus: ${expr}: ${list.length} series; the first ${MAX_SERIES_PER_EXPR} are shown`);
      for (const s of list.slice(0, MAX_SERIES_PER_EXPR)) {
        const name = Object.keys(s.metric).length ? labelText(s.metric) : expr;
        const values = s.values ?? [];
        const nums = values.map(([, v]) => Number(v)).filter((n) => Number.isFinite(n));
        series.push({ expr, labels: s.metric, points: values.length, ...(values.length ? { first_at: iso(values[0][0]), last_at: iso(values[values.length - 1][0]), last: values[values.length - 1][1] } : {}), ...(nums.length ? { min: Math.min(...nums), max: Math.max(...nums) } : {}) });
        let prev: [number, string] | undefined;
        let shown = 0;
        for (const point of values) {
          const gap = prev && point[0] - prev[0] > 2 * step;
          if (!prev || gap || point[1] !== prev[1]) {
            if (shown === MAX_POINTS_PER_SERIES) {
              notes.push(`prometheus: ${name} changes more than ${MAX_POINTS_PER_SERIES} times; later changes are left out (query_promql shows them all)`);
              break;
            }
            const what = !prev ? `${name} = ${point[1]}` : gap ? `${name} = ${point[1]} (after no data since ${iso(prev[0])})` : `${name} changed ${prev[1]} → ${point[1]}`;
            entries.push({ at: iso(point[0]), source: "prometheus", kind: "series", summary: what, expr, value: point[1] });
            shown++;
          }
          prev = point;
        }
      }
    }),
  );
  return { entries, notes, series, status: failed === 0 ? "ok" : failed === exprs.length ? "failed" : "partial" };
}

const iso = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString();

/** A log line's leading timestamp (ISO 8601 / RFC 3339), when it has one. */
const LINE_TIME = /^\[?(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)/;

/** The log part: read_journal (and tail_file when the alert names a log file) on each affected edge, through the dispatcher as the caller. */
async function logTimeline(deps: BaseToolDeps, inv: Invocation, ctx: SkillContext, row: IncidentRow, edgeIds: string[], start: Date, end: Date) {
  const entries: TimelineEntry[] = [];
  const untimed: Array<Record<string, unknown>> = [];
  const notes: string[] = [];
  const status: Record<string, string> = {};
  if (!edgeIds.length) notes.push("logs: the incident names no edge in your reach; no logs read");
  if (edgeIds.length > MAX_LOG_EDGES) notes.push(`logs: ${edgeIds.length} edges; logs were read on the first ${MAX_LOG_EDGES}`);
  const unit = row.labels.unit || row.labels.systemd_unit || "";
  const logFile = row.annotations.log_file || row.labels.log_file || "";
  const call = async (key: string, edgeId: string, params: Record<string, unknown>): Promise<ResultEnvelope | string> => {
    const timeoutMs = Math.max(1000, Math.min(20_000, ctx.deadline - Date.now() - 500));
    try {
      const out = await deps.dispatcher.execute({ key, edgeId, params, caller: inv.caller, sessionId: inv.sessionId, mode: inv.mode, playbook: inv.playbook, signal: ctx.signal, timeoutMs, noApproval: true });
      return out.result ?? "did not run";
    } catch (err) {
      const e = err as { code?: string; message?: string };
      return `${e.code ?? "error"}: ${e.message ?? String(err)}`;
    }
  };
  await Promise.all(
    edgeIds.slice(0, MAX_LOG_EDGES).map(async (edgeId) => {
      const live = deps.hub.session(edgeId);
      if (!live) {
        status[edgeId] = "offline";
        notes.push(`logs: edge ${edgeId} is offline; no logs read`);
        return;
      }
      const parts: string[] = [];
      const journal = live.skills.get("read_journal");
      if (journal) {
        // read_journal returns the newest `lines` entries: bounded at the window's end, they are the
        // newest of the window, not of today. An edge whose read_journal predates `until` says so in
        // its schema; it is asked without it, and the note below tells what that costs.
        const props = (journal as { jsonSchema?: { properties?: Record<string, unknown> } }).jsonSchema?.properties;
        const takesUntil = !props || "until" in props;
        const res = await call("read_journal", edgeId, { since: start.toISOString(), ...(takesUntil ? { until: end.toISOString() } : {}), priority: "warning", lines: LOG_LINES, ...(unit ? { unit } : {}) });
        if (typeof res === "string" || !res.success) {
          const why = typeof res === "string" ? res : `${res.error?.code}: ${res.error?.message}`;
          notes.push(`logs: read_journal on ${edgeId}: ${why}`);
          parts.push("read_journal failed");
        } else {
          const all = (res.output as { entries?: Array<Record<string, unknown>> })?.entries ?? [];
          const got = all.filter((e) => typeof e.time === "string" && Date.parse(e.time) <= end.getTime());
          for (const e of got) entries.push({ at: new Date(Date.parse(String(e.time))).toISOString(), source: "read_journal", kind: "log", summary: `[${e.priority ?? "?"}] ${e.unit ?? e.identifier ?? ""}: ${String(e.message ?? "").slice(0, 500)}`, edge_id: edgeId });
          if (all.length >= LOG_LINES) {
            notes.push(
              takesUntil
                ? `logs: read_journal on ${edgeId} returned its cap of ${LOG_LINES} entries, the newest of the window; earlier entries in the window may be missing (read_journal with since/until and more lines reads them)`
                : `logs: read_journal on ${edgeId} returned its cap of ${LOG_LINES} entries, the newest since the window's start (this edge's read_journal takes no until); ${all.length - got.length} fell after the window's end and were left out, and entries in the window may be missing (read_journal with since and more lines reads them)`,
            );
          } else if (!takesUntil && all.length > got.length) {
            notes.push(`logs: read_journal on ${edgeId}: ${all.length - got.length} entries after the window's end were left out (this edge's read_journal takes no until)`);
          }
          parts.push(`read_journal ok (${got.length} entries${all.length >= LOG_LINES ? `, cap of ${LOG_LINES} reached` : ""})`);
        }
      }
      if (logFile && live.skills.has("tail_file")) {
        const res = await call("tail_file", edgeId, { path: logFile, lines: LOG_LINES });
        if (typeof res === "string" || !res.success) {
          notes.push(`logs: tail_file ${logFile} on ${edgeId}: ${typeof res === "string" ? res : `${res.error?.code}: ${res.error?.message}`}`);
          parts.push("tail_file failed");
        } else {
          const lines = ((res.output as { lines?: string[] })?.lines ?? []).map(String);
          const rest: string[] = [];
          for (const line of lines) {
            const t = LINE_TIME.exec(line)?.[1];
            const at = t ? Date.parse(t.replace(" ", "T").replace(",", ".")) : NaN;
            if (Number.isFinite(at) && at >= start.getTime() && at <= end.getTime()) entries.push({ at: new Date(at).toISOString(), source: "tail_file", kind: "log", summary: line.slice(0, 500), edge_id: edgeId, path: logFile });
            else if (!Number.isFinite(at)) rest.push(line);
          }
          if (rest.length) untimed.push({ edge_id: edgeId, source: "tail_file", path: logFile, note: "lines without a leading timestamp: not placed on the timeline", lines: rest });
          parts.push(`tail_file ok (${lines.length} lines)`);
        }
      }
      if (!parts.length) {
        notes.push(`logs: edge ${edgeId} offers no log skill (read_journal${logFile ? ", tail_file" : ""})`);
        parts.push("no log skill");
      }
      status[edgeId] = parts.join("; ");
    }),
  );
  return { entries, untimed, notes, status };
}
