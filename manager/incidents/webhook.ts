/**
 * What the webhooks do with a post (K3), apart from HTTP (manager/http/hooks.ts): Alertmanager's
 * alerts become incidents on the edges they name, a new firing incident may start a diagnosis,
 * and a deploy tool's change event is checked and stored. The Alertmanager payload's format is
 * alertmanager.ts; this file is what a checked payload does, within the poster's reach (G4).
 * A refusal is an OngridError naming the field and the rule.
 */
import type { Logger } from "pino";
import { OngridError } from "../../skill/errors.ts";
import { redact, redactString } from "../../skill/redact.ts";
import { auditRecord, type AuditLog } from "../audit/types.ts";
import type { ManagerConfig } from "../config/schema.ts";
import type { Database } from "../db/client.ts";
import type { EdgeStore } from "../fleet/edge-store.ts";
import type { Hub } from "../fleet/hub.ts";
import type { Caller } from "../identity/caller.ts";
import { isLimited, reaches } from "../identity/reach.ts";
import type { Agent } from "../agent/session/diagnose.ts";
import { runDiagnosisTask, tasksOf } from "../agent/session/tasks.ts";
import { edgeCandidates, parseAlertmanagerPayload, type AlertIn } from "./alertmanager.ts";
import { edgeVisibility } from "./changes.ts";
import { createIncidentStore, type IncidentRow } from "./store.ts";
import { calendarProblem } from "./time.ts";

/** What the webhooks need of the manager. */
export interface WebhookDeps {
  database: Database;
  edges: Pick<EdgeStore, "list">;
  hub: Pick<Hub, "session">;
  agent: Agent;
  audit: AuditLog;
  log: Logger;
  config: Pick<ManagerConfig, "incidents">;
}

/** What a webhook post did: the answer's body, and what the post's log line says of it. */
export interface WebhookOutcome {
  body: unknown;
  log: Record<string, unknown>;
}

/** Fields a change event may have. */
const CHANGE_FIELDS = new Set(["at", "kind", "summary", "edge_id", "actor", "details"]);

/** The webhooks' work over the manager's parts. */
export function createWebhooks(deps: WebhookDeps) {
  const { audit, log, config } = deps;
  const store = createIncidentStore(deps.database);

  /** The edges a caller may name, by id and by hostname. */
  async function edgeIndex(caller: Caller): Promise<Map<string, string>> {
    const index = new Map<string, string>();
    for (const e of await deps.edges.list()) {
      if (e.revokedAt || !reaches(caller, e.labels)) continue;
      index.set(e.id, e.id);
      if (e.hostname && !index.has(e.hostname.toLowerCase())) index.set(e.hostname.toLowerCase(), e.id);
    }
    return index;
  }

  function resolveEdges(index: Map<string, string>, labels: Record<string, string>): string[] {
    const out = new Set<string>();
    for (const name of edgeCandidates(labels)) {
      const id = index.get(name) ?? index.get(name.toLowerCase());
      if (id) out.add(id);
    }
    return [...out];
  }

  /**
   * POST /hooks/alertmanager: records each alert; a new firing incident may start a diagnosis. A
   * poster whose reach is limited (G4) may not touch an incident that names edges none of which it
   * reaches: that alert is refused in the answer (not_found, like an edge outside its reach),
   * audited, and changes nothing; an incident it may touch keeps its edges outside the poster's reach.
   * `path` is the post's path, for the audit row of a refused alert.
   */
  async function recordAlerts(body: unknown, caller: Caller, path: string): Promise<WebhookOutcome> {
    const alerts = parseAlertmanagerPayload(body);
    const index = await edgeIndex(caller);
    // The same rule as the incident tools: unlimited reach sees every edge.
    const visible = isLimited(caller) ? await edgeVisibility(deps.edges, caller) : undefined;
    const out: Array<Record<string, unknown> & { opened?: boolean; diagnosis?: string; error?: unknown }> = [];
    let refused = 0;
    for (const a of alerts) {
      const r = await store.recordAlert(a, resolveEdges(index, a.labels), { visible });
      if ("refused" in r) {
        refused++;
        const error = { code: "not_found", message: `alert ${a.fingerprint.slice(0, 64)}: no incident with this fingerprint is in your reach; nothing was changed`, hint: "Post alerts of the edges in your reach; an incident on other edges is theirs to update." };
        out.push({ fingerprint: a.fingerprint, error });
        log.warn({ hook: "hooks.alertmanager", user: caller.userId, fingerprint: a.fingerprint.slice(0, 64) }, "webhook: alert refused: its incident is outside the poster's reach");
        await audit
          .append(auditRecord({ toolName: "hooks.alertmanager", args: { path, fingerprint: a.fingerprint.slice(0, 64) }, error: `not_found: ${error.message}`, callerUserId: caller.userId, callerRole: caller.role, decision: "deny", decisionReason: `not_found: ${error.message}` }))
          .catch((auditErr: unknown) => log.error({ err: (auditErr as Error)?.message }, "webhook: could not audit a refused alert"));
        continue;
      }
      const diagnosis = r.opened && config.incidents.auto_diagnose ? startDiagnosis(r.incident, a, caller) : undefined;
      const edgeIds = visible ? r.incident.edgeIds.filter(visible) : r.incident.edgeIds;
      out.push({ id: r.incident.id, fingerprint: r.incident.fingerprint, status: r.incident.status, opened: r.opened, ...(r.stale ? { stale: true } : {}), edge_ids: edgeIds, ...(diagnosis ? { diagnosis } : {}) });
    }
    const skipped = out.filter((o) => o.diagnosis?.startsWith("skipped")).length;
    return {
      body: { accepted: out.length - refused, ...(refused ? { refused } : {}), incidents: out },
      log: { alerts: alerts.length, opened: out.filter((o) => o.opened).length, ...(skipped ? { diagnoses_skipped: skipped } : {}), ...(refused ? { refused } : {}) },
    };
  }

  /**
   * Starts a diagnosis session for a new firing incident, as the webhook's user, in the background;
   * its id is stored on the incident. Returns what became of it, for the webhook's answer:
   * "starting" (in the background), or why not: "skipped: …" when incidents.max_auto_diagnoses
   * already run, "not started: …" when the incident's edges are offline.
   */
  function startDiagnosis(incident: IncidentRow, alert: AlertIn, caller: Caller): string {
    const edgeId = incident.edgeIds.find((id) => deps.hub.session(id));
    if (incident.edgeIds.length && !edgeId) {
      // Left to itself the agent would pick any single online edge: the wrong host.
      log.warn({ incident: incident.id, edges: incident.edgeIds }, "incident: no diagnosis started: none of its edges is online");
      return "not started: none of its edges is online";
    }
    const agent = deps.agent;
    // One post may open hundreds of incidents (an outage fires everything at once), each a
    // model-backed session: at most incidents.max_auto_diagnoses (default 3) run at once in this
    // manager, counting those still starting. The place is taken here, synchronously, before the
    // session is created; the rest get none, logged and said in the answer.
    const max = config.incidents.max_auto_diagnoses;
    const slot = tasksOf(agent).reserve("incident_diagnosis", max);
    if (!slot) {
      log.warn({ incident: incident.id, alertname: incident.alertname, max }, "incident: diagnosis skipped: incidents.max_auto_diagnoses already run");
      return `skipped: ${max} automatic diagnoses already run (incidents.max_auto_diagnoses); diagnose it by hand or when one ends`;
    }
    const a = alert.annotations;
    const labels = Object.entries(alert.labels).map(([k, v]) => `${k}=${v}`).join(", ");
    const text = [`Alert ${incident.alertname || "(no alertname)"}${incident.severity ? ` (${incident.severity})` : ""} is firing${edgeId ? ` on ${edgeId}` : ""}.`, a.summary, a.description, `Labels: ${labels}.`]
      .filter(Boolean)
      .join(" ")
      .slice(0, 4000);
    runDiagnosisTask({ agent, database: deps.database }, { kind: "incident_diagnosis", input: { text, user: caller, edgeId }, slot }, async (sessionId) => {
      await store.setSession(incident.id, sessionId);
      log.info({ incident: incident.id, session: sessionId, user: caller.userId }, "incident: diagnosis started (incidents.auto_diagnose)");
    }).then(
      (o) => log.info({ incident: incident.id, session: o.sessionId, status: o.status }, "incident: diagnosis ended"),
      (err: unknown) => log.warn({ incident: incident.id, err: (err as Error)?.message }, "incident: no diagnosis started"),
    );
    return "starting";
  }

  /** POST /hooks/change-events: one change event, its source the token's user. */
  async function addChangeEvent(body: unknown, caller: Caller): Promise<WebhookOutcome> {
    const e = await checkChangeEvent(body, caller);
    const row = await store.addChangeEvent({ ...e, source: caller.userId });
    return {
      body: { id: row.id, at: row.at.toISOString(), source: row.source, kind: row.kind, edge_id: row.edgeId },
      log: { id: row.id, kind: row.kind, edge_id: row.edgeId },
    };
  }

  async function checkChangeEvent(body: unknown, caller: Caller) {
    const bad = (field: string, what: string, rule: string) => new OngridError("invalid_argument", `${field}: ${what} (rule: ${rule})`, 'Send {"kind": "deploy", "summary": "…", "edge_id"?, "at"?, "actor"?, "details"?}.');
    if (typeof body !== "object" || body === null || Array.isArray(body)) throw bad("body", "must be a JSON object", "type object");
    const b = body as Record<string, unknown>;
    for (const k of Object.keys(b)) if (!CHANGE_FIELDS.has(k)) throw bad(k.slice(0, 64), "is not a field of a change event", "additionalProperties");
    if (b.kind === undefined) throw bad("kind", "is required", "required");
    if (typeof b.kind !== "string") throw bad("kind", "must be a string", "type string");
    const kind = b.kind.trim().toLowerCase();
    if (!/^[a-z][a-z0-9_.:-]{0,63}$/.test(kind)) throw bad("kind", "must be a word such as deploy, config or restart (letters, digits, _.:-; at most 64)", "pattern");
    if (b.summary === undefined) throw bad("summary", "is required", "required");
    if (typeof b.summary !== "string") throw bad("summary", "must be a string", "type string");
    const summary = b.summary.trim();
    if (!summary) throw bad("summary", "must not be empty", "minLength");
    if (summary.length > 2000) throw bad("summary", "is longer than 2000 characters", "maxLength");
    let at = new Date();
    if (b.at !== undefined) {
      if (typeof b.at !== "string" || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/.test(b.at)) throw bad("at", "must be an RFC 3339 time, e.g. 2026-01-31T14:00:00Z", "format date-time");
      // Date would roll an impossible date over (2025-02-30 → March 2): refuse it, saying what is wrong.
      const impossible = calendarProblem(b.at);
      if (impossible) throw bad("at", `is not a real date and time: ${impossible}`, "format date-time");
      if (Number.isNaN(Date.parse(b.at))) throw bad("at", "must be an RFC 3339 time, e.g. 2026-01-31T14:00:00Z", "format date-time");
      at = new Date(b.at);
      if (at.getTime() > Date.now() + 5 * 60_000) throw bad("at", "is more than 5 minutes in the future", "maximum");
    }
    let edgeId = "";
    if (b.edge_id !== undefined) {
      if (typeof b.edge_id !== "string" || !b.edge_id) throw bad("edge_id", "must be a non-empty string", "type string");
      // By id only; an edge outside the poster's reach is not known to it (G4).
      if ((await edgeIndex(caller)).get(b.edge_id) !== b.edge_id) throw bad("edge_id", `"${b.edge_id.slice(0, 64)}" is not an enrolled edge`, "known");
      edgeId = b.edge_id;
    }
    if (b.actor !== undefined && (typeof b.actor !== "string" || b.actor.length > 200)) throw bad("actor", "must be a string of at most 200 characters", "type string");
    if (b.details !== undefined && (typeof b.details !== "object" || b.details === null || Array.isArray(b.details))) throw bad("details", "must be a JSON object", "type object");
    if (b.details !== undefined && JSON.stringify(b.details).length > 16_384) throw bad("details", "is larger than 16384 bytes as JSON", "maxLength");
    return {
      at,
      kind,
      summary: redactString(summary),
      edgeId,
      actor: redactString(((b.actor as string | undefined) ?? "").trim()),
      details: redact((b.details as Record<string, unknown> | undefined) ?? {}),
    };
  }

  return { recordAlerts, addChangeEvent };
}

/** The webhooks' work (createWebhooks). */
export type Webhooks = ReturnType<typeof createWebhooks>;
