/**
 * Webhooks on the manager's port (K3): Alertmanager's alerts become incidents
 * (POST /hooks/alertmanager, webhook payload version 4); deploy tools post change events
 * (POST /hooks/change-events). Both need an ongrid API token of role operator or above
 * (`authorization: Bearer …`), the same identity store the RPC interceptor uses. Every post is
 * logged; every refused one answers 4xx with a JSON {code, message, hint} naming the field and
 * rule, and writes an audit row (decision deny), like a refused RPC. Nothing here can end the
 * manager: a failure answers 500 and the manager keeps serving.
 */
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import { OngridError } from "../../skill/errors.ts";
import { redact, redactString } from "../../skill/redact.ts";
import { auditRecord } from "../audit/types.ts";
import type { Caller } from "../identity/caller.ts";
import { isLimited, reaches } from "../identity/reach.ts";
import { roleAtLeast, type Role } from "../identity/store.ts";
import { edgeCandidates, parseAlertmanagerPayload, type AlertIn } from "../incidents/alertmanager.ts";
import { edgeVisibility } from "../incidents/changes.ts";
import { createIncidentStore, type IncidentRow } from "../incidents/store.ts";
import { calendarProblem } from "../incidents/time.ts";
import { runDiagnosisTask, tasksOf } from "../agent/session/tasks.ts";
import type { Core } from "../core.ts";
import { bearerToken } from "../rpc/auth.ts";
import type { HttpRoute } from "./route.ts";

/** The least role that may post to the webhooks: they write incidents and change events others rely on. */
export const HOOK_ROLE: Role = "operator";

/** Paths of the webhooks. */
export const ALERTMANAGER_PATH = "/hooks/alertmanager";
export const CHANGE_EVENTS_PATH = "/hooks/change-events";

const HTTP_STATUS: Record<string, number> = {
  invalid_argument: 400,
  unauthenticated: 401,
  permission_denied: 403,
  not_found: 404,
  method_not_allowed: 405,
  resource_exhausted: 413,
  unsupported_media_type: 415,
};

type Req = IncomingMessage | Http2ServerRequest;
type Res = Parameters<HttpRoute>[1];

/** A refused post: an OngridError plus its HTTP status. */
class HookError extends OngridError {
  readonly status: number;
  constructor(status: number, code: ConstructorParameters<typeof OngridError>[0], message: string, hint = "") {
    super(code, message, hint);
    this.status = status;
  }
}

/**
 * Reads a body up to `cap` bytes. A larger one is drained (up to a hard limit, so the client
 * reads the 413 instead of a reset connection) and reported as undefined.
 */
function readBody(req: Req, cap: number): Promise<Buffer | undefined> {
  const hardLimit = Math.max(cap * 16, 64 * 1024 * 1024);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size <= cap) chunks.push(c);
      else if (size > hardLimit) {
        req.destroy();
        resolve(undefined);
      }
    });
    req.on("end", () => resolve(size <= cap ? Buffer.concat(chunks) : undefined));
    req.on("error", reject);
    req.on("aborted", () => reject(new Error("the client went away")));
  });
}

/** Parses JSON, refusing it with the position only (the text around it may hold a secret). */
function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (err) {
    const at = /position (\d+)/.exec((err as Error).message)?.[1];
    throw new HookError(400, "invalid_argument", `body: is not valid JSON (rule: json)${at ? ` at position ${at}` : ""}`, "Send a JSON object with content-type application/json.");
  }
}

/** The webhook routes over the manager's parts. */
export function createHookRoutes(core: Core): HttpRoute {
  const { identity, audit, log, config } = core;
  const store = createIncidentStore(core.database);
  const cap = config.server.max_request_bytes;

  /** The edges a caller may name, by id and by hostname. */
  async function edgeIndex(caller: Caller): Promise<Map<string, string>> {
    const index = new Map<string, string>();
    for (const e of await core.edges.list()) {
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
   */
  async function alertmanager(body: unknown, caller: Caller, path: string): Promise<{ status: number; body: unknown; log: Record<string, unknown> }> {
    const alerts = parseAlertmanagerPayload(body);
    const index = await edgeIndex(caller);
    // The same rule as the incident tools: unlimited reach sees every edge.
    const visible = isLimited(caller) ? await edgeVisibility(core.edges, caller) : undefined;
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
      status: 200,
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
    const edgeId = incident.edgeIds.find((id) => core.hub.session(id));
    if (incident.edgeIds.length && !edgeId) {
      // Left to itself the agent would pick any single online edge: the wrong host.
      log.warn({ incident: incident.id, edges: incident.edgeIds }, "incident: no diagnosis started: none of its edges is online");
      return "not started: none of its edges is online";
    }
    const agent = core.agent;
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
    runDiagnosisTask({ agent, database: core.database }, { kind: "incident_diagnosis", input: { text, user: caller, edgeId }, slot }, async (sessionId) => {
      await store.setSession(incident.id, sessionId);
      log.info({ incident: incident.id, session: sessionId, user: caller.userId }, "incident: diagnosis started (incidents.auto_diagnose)");
    }).then(
      (o) => log.info({ incident: incident.id, session: o.sessionId, status: o.status }, "incident: diagnosis ended"),
      (err: unknown) => log.warn({ incident: incident.id, err: (err as Error)?.message }, "incident: no diagnosis started"),
    );
    return "starting";
  }

  /** POST /hooks/change-events: one change event, its source the token's user. */
  async function changeEvent(body: unknown, caller: Caller): Promise<{ status: number; body: unknown; log: Record<string, unknown> }> {
    const e = await checkChangeEvent(body, caller);
    const row = await store.addChangeEvent({ ...e, source: caller.userId });
    return {
      status: 201,
      body: { id: row.id, at: row.at.toISOString(), source: row.source, kind: row.kind, edge_id: row.edgeId },
      log: { id: row.id, kind: row.kind, edge_id: row.edgeId },
    };
  }

  async function checkChangeEvent(body: unknown, caller: Caller) {
    const bad = (field: string, what: string, rule: string) => new HookError(400, "invalid_argument", `${field}: ${what} (rule: ${rule})`, 'Send {"kind": "deploy", "summary": "…", "edge_id"?, "at"?, "actor"?, "details"?}.');
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

  const routes: Record<string, { name: string; act: typeof alertmanager }> = {
    [ALERTMANAGER_PATH]: { name: "hooks.alertmanager", act: alertmanager },
    [CHANGE_EVENTS_PATH]: { name: "hooks.change_events", act: changeEvent },
  };

  async function handle(req: Req, res: Res, route: { name: string; act: typeof alertmanager }): Promise<void> {
    let who: Caller | undefined;
    try {
      if (req.method !== "POST") {
        res.setHeader("allow", "POST");
        throw new HookError(405, "invalid_argument", `method: ${String(req.method).slice(0, 16)} is not allowed (rule: POST)`, "POST the payload.");
      }
      const raw = bearerToken((req.headers.authorization as string | undefined) ?? null);
      try {
        who = (await identity.authenticate(raw === "\u0000malformed" ? "malformed" : raw)).caller;
      } catch (err) {
        if (err instanceof OngridError) throw new HookError(401, err.code, err.message, err.hint);
        throw err;
      }
      if (!roleAtLeast(who.role, HOOK_ROLE)) throw new HookError(403, "permission_denied", `${route.name} needs role ${HOOK_ROLE} or above; "${who.userId}" is ${who.role}`, "Post with the token of a user with role operator (e.g. a dedicated alertmanager user).");
      const body = await readBody(req, cap);
      if (!body) throw new HookError(413, "resource_exhausted", `body: is larger than ${cap} bytes (rule: server.max_request_bytes)`, "Send fewer alerts per post (Alertmanager: max_alerts in webhook_configs) or raise server.max_request_bytes.");
      const out = await route.act(parseJson(body), who, (req.url ?? "").split("?")[0]);
      send(res, out.status, out.body);
      log.info({ hook: route.name, user: who.userId, status: out.status, ...out.log }, "webhook post accepted");
    } catch (err) {
      const e = err instanceof HookError ? err : err instanceof OngridError ? new HookError(HTTP_STATUS[err.code] ?? 500, err.code, err.message, err.hint) : undefined;
      if (!e) {
        log.error({ hook: route.name, err: redactString(String((err as Error)?.stack ?? err)) }, "webhook post failed");
        send(res, 500, { code: "internal", message: "internal error while handling the post; see the manager log" });
        return;
      }
      // Drain what the client still sends, so it reads the answer rather than a reset connection.
      if (!req.readableEnded && !req.destroyed) await readBody(req, 0).catch(() => undefined);
      log.warn({ hook: route.name, user: who?.userId ?? "", status: e.status, reason: e.message }, "webhook post refused");
      // Audited before the answer, so a client that reads the refusal finds its row.
      await audit
        .append(auditRecord({ toolName: route.name, args: { path: req.url?.split("?")[0] }, error: `${e.code}: ${e.message}`, callerUserId: who?.userId ?? "", callerRole: who?.role ?? "", decision: "deny", decisionReason: `${e.code}: ${e.message}` }))
        .catch((auditErr: unknown) => log.error({ err: (auditErr as Error)?.message }, "webhook: could not audit a refused post"));
      send(res, e.status, { code: e.code, message: e.message, ...(e.hint ? { hint: e.hint } : {}) });
    }
  }

  return (req, res) => {
    const path = (req.url ?? "").split("?")[0];
    const route = routes[path];
    if (!route) return false;
    handle(req, res, route).catch((err: unknown) => {
      log.error({ hook: route.name, err: String(err) }, "webhook handler failed");
      if (!res.headersSent) send(res, 500, { code: "internal", message: "internal error" });
      else res.end();
    });
    return true;
  };
}

/** Fields a change event may have. */
const CHANGE_FIELDS = new Set(["at", "kind", "summary", "edge_id", "actor", "details"]);

function send(res: Res, status: number, body: unknown): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { "content-type": "application/json" });
  res.end(`${JSON.stringify(body)}\n`);
}
