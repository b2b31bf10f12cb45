/** query_change_events (K3): what changed in a window — approved or BYPASS calls from the audit log plus posted change events. */
import { defineBaseTool } from "../../define.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { invocationOf } from "../../invocation.ts";
import { createIncidentStore } from "../../../incidents/store.ts";
import { collectChanges } from "../../../incidents/changes.ts";
import { parseWindow, whenSchema } from "./when.ts";

interface Params {
  since?: string;
  until?: string;
  edge_id?: string;
  origin: "all" | "audit" | "external";
  limit: number;
}

/** The tool, bound to the manager's parts. */
export function createQueryChangeEvents(deps: BaseToolDeps) {
  const incidents = createIncidentStore(deps.database);
  return defineBaseTool<Params>({
    key: "query_change_events",
    name: "Query change events",
    description:
      "List what changed in a time window, newest first: calls through ongrid that changed something (mutating or dangerous calls that ran after approval, or in BYPASS mode, from the audit log) and change events deploy tools posted (deploys, config pushes, restarts). Use when diagnosing an incident to ask \"what changed just before it started?\"; a call's params are shown to approvers and admins only.",
    class: "safe",
    category: "observability",
    schema: {
      type: "object",
      additionalProperties: false,
      properties: {
        since: whenSchema("Start of the window; default 1h."),
        until: whenSchema("End of the window; default now."),
        edge_id: { type: "string", minLength: 1, maxLength: 128, description: "Only changes on this edge." },
        origin: { type: "string", enum: ["all", "audit", "external"], default: "all", description: "audit: calls through ongrid only; external: posted change events only; all: both." },
        limit: { type: "integer", minimum: 1, maximum: 1000, default: 100, description: "How many changes at most." },
      },
    },
    resultPreview: {
      window: { since: "2026-01-31T13:00:00.000Z", until: "2026-01-31T14:00:00.000Z" },
      changes: [
        { at: "2026-01-31T13:58:00.000Z", origin: "external", kind: "deploy", summary: "checkout v2.4.1", edge_id: "web-01", actor: "argocd", posted_by: "ci-bot" },
        { at: "2026-01-31T13:40:00.000Z", origin: "audit", kind: "skill_call", summary: "restart_service on web-01 by olga (approved by alice): ok", edge_id: "web-01", actor: "olga", tool: "restart_service", audit_seq: 812, approved_by: ["alice"], outcome: "ok" },
      ],
      returned: 2,
      truncated: false,
    },
    async execute(ctx, p) {
      const { caller } = invocationOf(ctx);
      const window = parseWindow(p, "1h");
      const out = await collectChanges({ database: deps.database, edges: deps.edges, incidents }, { ...window, edgeId: p.edge_id, origin: p.origin, limit: p.limit, viewer: caller });
      return {
        window: { since: window.since.toISOString(), until: window.until.toISOString() },
        changes: out.changes,
        returned: out.changes.length,
        truncated: out.truncated,
        ...(out.params_shown ? {} : { note: "params of audited calls are shown to approvers and admins only (they may read the audit log)" }),
      };
    },
  });
}
