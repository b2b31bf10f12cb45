/** get_incident_detail (K3): one incident with its labels, annotations, edges and diagnosis session. */
import { SkillError } from "../../../../skill/errors.ts";
import { defineBaseTool } from "../../define.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { invocationOf } from "../../invocation.ts";
import { createIncidentStore, type IncidentRow } from "../../../incidents/store.ts";
import { edgeVisibility, effectiveRole } from "../../../incidents/changes.ts";
import { createSessionStore, type AgentSession } from "../../../agent/session/store.ts";
import type { Caller } from "../../../identity/caller.ts";
import { incidentSummary, incidentVisible } from "./view.ts";

/** Longest report shown; the whole one is in the session (console /chat, agent_sessions). */
const MAX_REPORT_CHARS = 4000;

/** Why a diagnosis session's report is not shown (an incident is visible when one of its edges is; its diagnosis may have run on another). */
export const REPORT_WITHHELD = "the diagnosis ran on an edge outside your reach";

/**
 * Whether the caller may read a diagnosis session's report and details (G4): the session ran on no
 * edge or on an edge in reach, or the caller is the session's user (an agent: acting for it) or an
 * admin.
 */
export function sessionReadable(caller: Caller, s: Pick<AgentSession, "userId" | "edgeId">, visible: (edgeId: string) => boolean): boolean {
  if (visible(s.edgeId)) return true;
  const user = caller.role === "system" ? caller.onBehalfOf : caller.userId;
  return (Boolean(user) && user === s.userId) || effectiveRole(caller) === "admin";
}

/** Reads an incident the caller may see, or fails with not_found (an incident outside the caller's reach does not exist for it). */
export async function visibleIncident(deps: BaseToolDeps, caller: Caller, id: string): Promise<{ row: IncidentRow; visible: (edgeId: string) => boolean }> {
  const row = await createIncidentStore(deps.database).get(id);
  const visible = await edgeVisibility(deps.edges, caller);
  if (!row || !incidentVisible(row, visible)) throw new SkillError("not_found", `unknown incident "${id.slice(0, 64)}"`, "query_incidents lists the incidents and their ids.");
  return { row, visible };
}

/** The tool, bound to the manager's parts. */
export function createGetIncidentDetail(deps: BaseToolDeps) {
  const sessions = createSessionStore(deps.database);
  return defineBaseTool<{ id: string }>({
    key: "get_incident_detail",
    name: "Get incident detail",
    description:
      "Return one incident in full: every label and annotation of its alert, the Prometheus expression link, its edges with their online state and labels, and the diagnosis session started for it (status, playbook, report). Use when an incident from query_incidents needs a closer look before diagnosing or correlating it.",
    class: "safe",
    category: "observability",
    schema: {
      type: "object",
      additionalProperties: false,
      required: ["id"],
      properties: { id: { type: "string", minLength: 1, maxLength: 140, description: "The incident's id (inc_…) as query_incidents gives it, or its Alertmanager fingerprint." } },
    },
    resultPreview: {
      id: "inc_3f9c0a1b2c3d4e5f",
      status: "firing",
      alertname: "HighLoad",
      labels: { alertname: "HighLoad", instance: "web-01:9100", severity: "warning" },
      annotations: { summary: "load is high on web-01" },
      edges: [{ id: "web-01", online: true, hostname: "web-01", labels: { team: "web" } }],
      session: { id: "ses_…", status: "done", playbook: "host_resource_diagnosis", report: "# Diagnosis report …" },
    },
    async execute(ctx, p) {
      const { caller } = invocationOf(ctx);
      const { row, visible } = await visibleIncident(deps, caller, p.id);
      const edgeRows = new Map((await deps.edges.list()).map((e) => [e.id, e]));
      const edges = row.edgeIds.filter(visible).map((id) => {
        const e = edgeRows.get(id);
        return { id, online: Boolean(deps.hub.session(id)), hostname: e?.hostname ?? "", labels: e?.labels ?? {}, last_seen_at: e?.lastSeenAt?.toISOString() ?? null };
      });
      const s = row.sessionId ? await sessions.get(row.sessionId) : undefined;
      let session: Record<string, unknown> | null = null;
      if (s && !sessionReadable(caller, s, visible)) session = { id: s.id, status: s.status, report_withheld: REPORT_WITHHELD };
      else if (s) {
        session = {
          id: s.id,
          status: s.status,
          user_id: s.userId,
          playbook: s.skillName,
          path: s.path,
          error: s.error,
          report: s.report.length > MAX_REPORT_CHARS ? `${s.report.slice(0, MAX_REPORT_CHARS)} …[cut: ${s.report.length} characters in all]` : s.report,
          verdict: s.verdict ?? null,
          created_at: s.createdAt.toISOString(),
          updated_at: s.updatedAt.toISOString(),
        };
      }
      return {
        ...incidentSummary(row, visible),
        fingerprint: row.fingerprint,
        labels: row.labels,
        annotations: row.annotations,
        generator_url: row.generatorUrl,
        edges,
        session,
        created_at: row.createdAt.toISOString(),
        updated_at: row.updatedAt.toISOString(),
      };
    },
  });
}
