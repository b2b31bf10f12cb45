/** query_incidents (K3): the incidents Alertmanager reported, newest first, filtered. */
import { defineBaseTool } from "../../define.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { invocationOf } from "../../invocation.ts";
import { createIncidentStore } from "../../../incidents/store.ts";
import { edgeVisibility } from "../../../incidents/changes.ts";
import { parseWindow, whenSchema } from "./when.ts";
import { incidentSummary, incidentVisible } from "./view.ts";

interface Params {
  status: "firing" | "resolved" | "any";
  since?: string;
  until?: string;
  alertname?: string;
  edge_id?: string;
  limit: number;
}

/** The tool, bound to the manager's parts. */
export function createQueryIncidents(deps: BaseToolDeps) {
  const store = createIncidentStore(deps.database);
  return defineBaseTool<Params>({
    key: "query_incidents",
    name: "Query incidents",
    description:
      "List the incidents Alertmanager reported to this manager (one per alert fingerprint), newest first, with status, alert name, severity, summary, affected edges, times and the diagnosis session started for it. Use when starting an investigation to see what is firing or fired recently, on which edges; then get_incident_detail or correlate_incident for one of them.",
    class: "safe",
    category: "observability",
    schema: {
      type: "object",
      additionalProperties: false,
      properties: {
        status: { type: "string", enum: ["firing", "resolved", "any"], default: "any", description: "Only firing or only resolved incidents; any for both." },
        since: whenSchema("Only incidents still active at or after this time; default 24h."),
        until: whenSchema("Only incidents that started at or before this time; default now."),
        alertname: { type: "string", minLength: 1, maxLength: 200, description: "Only incidents of this alert (the alertname label), exact match." },
        edge_id: { type: "string", minLength: 1, maxLength: 128, description: "Only incidents whose alert names this edge." },
        limit: { type: "integer", minimum: 1, maximum: 500, default: 50, description: "How many incidents at most." },
      },
    },
    resultPreview: {
      incidents: [{ id: "inc_3f9c0a1b2c3d4e5f", status: "firing", alertname: "HighLoad", severity: "warning", summary: "load is high on web-01", edge_ids: ["web-01"], starts_at: "2026-01-31T14:00:00.000Z", ends_at: null, session_id: "" }],
      returned: 1,
      truncated: false,
    },
    async execute(ctx, p) {
      const { caller } = invocationOf(ctx);
      const window = parseWindow(p, "24h");
      const visible = await edgeVisibility(deps.edges, caller);
      if (p.edge_id && !visible(p.edge_id)) return { incidents: [], returned: 0, truncated: false, window: iso(window) };
      // A limited reach hides some rows after the query: read more so the page stays full.
      const read = caller.reach?.length ? Math.min(p.limit * 4, 2000) : p.limit;
      const rows = await store.list({ status: p.status === "any" ? undefined : p.status, ...window, alertname: p.alertname, edgeId: p.edge_id, limit: read });
      const shown = rows.filter((r) => incidentVisible(r, visible));
      const page = shown.slice(0, p.limit).map((r) => incidentSummary(r, visible));
      return { incidents: page, returned: page.length, truncated: shown.length > p.limit || rows.length > read, window: iso(window) };
    },
  });
}

const iso = (w: { since: Date; until: Date }) => ({ since: w.since.toISOString(), until: w.until.toISOString() });
