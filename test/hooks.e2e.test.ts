/**
 * The webhooks on a real manager's port (K3): POST /hooks/alertmanager turns Alertmanager's
 * payload into incidents, POST /hooks/change-events records change events. Refusals — no or a
 * wrong token, a role too low, bad JSON, a missing or unknown field, a body over the limit —
 * answer 4xx naming the field and rule, are audited, and the manager keeps serving.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { bootManager, type TestManager } from "./support/manager.ts";
import { makeUser } from "./support/auth.ts";
import { lastAuditRow } from "./support/audit.ts";
import { waitFor } from "./support/edge.ts";
import { describeBothBackends } from "./support/pg.ts";
import { startScriptedModel } from "./support/openai-server.ts";
import { agentSessions, edges } from "../manager/db/schema/index.ts";
import type { Caller } from "../manager/identity/caller.ts";
import type { Database } from "../manager/db/client.ts";
import { createIncidentStore } from "../manager/incidents/store.ts";
import { tasksOf } from "../manager/agent/session/tasks.ts";

let m: TestManager;
let am: string;
let viewer: string;
const LIMIT = 65_536;

beforeAll(async () => {
  m = await bootManager({ "server.max_request_bytes": LIMIT });
  am = await makeUser(m, "am", "operator");
  viewer = await makeUser(m, "vic", "viewer");
  // Enrolled edges are known to the webhook whether or not they are online.
  await m.edges.enroll("web-01");
  await m.edges.enroll("db-01");
  await m.database.db.update(edges).set({ labels: { team: "web" } }).where(eq(edges.id, "web-01"));
  await m.database.db.update(edges).set({ labels: { team: "db" }, hostname: "db-01.internal" }).where(eq(edges.id, "db-01"));
}, 60_000);
afterAll(async () => {
  await m?.stop();
});

function post(path: string, body: string | Buffer, token: string | null = am, method = "POST"): Promise<Response> {
  return fetch(`${m.url}${path}`, {
    method,
    headers: { "content-type": "application/json", ...(token === null ? {} : { authorization: `Bearer ${token}` }) },
    ...(method === "GET" ? {} : { body }),
  });
}

const alert = (o: Partial<Record<string, unknown>> = {}) => ({
  status: "firing",
  labels: { alertname: "DiskFull", instance: "web-01:9100", severity: "critical" },
  annotations: { summary: "disk / is 97% full on web-01" },
  startsAt: "2026-01-31T14:00:00.000Z",
  endsAt: "0001-01-01T00:00:00Z",
  generatorURL: "http://prom:9090/graph?g0.expr=node_filesystem_avail_bytes+%3C+1e9&g0.tab=1",
  fingerprint: "a1b2c3d4e5f60718",
  ...o,
});
const payload = (alerts: unknown[], extra: Record<string, unknown> = {}) => JSON.stringify({ version: "4", groupKey: "{}:{alertname=\"DiskFull\"}", status: "firing", receiver: "ongrid", groupLabels: {}, commonLabels: {}, commonAnnotations: {}, externalURL: "http://am:9093", truncatedAlerts: 0, alerts, ...extra });

const admin: Caller = { userId: "admin", role: "admin" };
/** Runs a tool through the real dispatcher (gate and audit) and returns its output, failing on a failed call. */
async function tool(key: string, params: Record<string, unknown>, caller: Caller = admin): Promise<any> {
  const out = await m.dispatcher.execute({ key, params, caller });
  expect(out.result?.success, JSON.stringify(out.result?.error)).toBe(true);
  return out.result!.output;
}

async function healthy() {
  const res = await fetch(`${m.url}/healthz`);
  expect(await res.text()).toBe("ok\n");
}

describe("POST /hooks/alertmanager refuses", () => {
  const cases: Array<{ name: string; token: () => string | null; body: () => string | Buffer; method?: string; status: number; code: string; message: RegExp }> = [
    { name: "no token", token: () => null, body: () => payload([alert()]), status: 401, code: "unauthenticated", message: /no API token/ },
    { name: "a wrong token", token: () => `ogu_000000000000_${"A".repeat(43)}`, body: () => payload([alert()]), status: 401, code: "unauthenticated", message: /unknown API token/ },
    { name: "a malformed token", token: () => "not-a-token", body: () => payload([alert()]), status: 401, code: "unauthenticated", message: /malformed/ },
    { name: "a viewer", token: () => viewer, body: () => payload([alert()]), status: 403, code: "permission_denied", message: /hooks\.alertmanager needs role operator or above; "vic" is viewer/ },
    { name: "GET", token: () => am, body: () => "", method: "GET", status: 405, code: "invalid_argument", message: /method: GET is not allowed/ },
    { name: "bad JSON", token: () => am, body: () => '{"alerts": [', status: 400, code: "invalid_argument", message: /^body: is not valid JSON \(rule: json\)/ },
    { name: "a body that is not an object", token: () => am, body: () => "[1,2]", status: 400, code: "invalid_argument", message: /^body: must be a JSON object \(rule: type object\)/ },
    { name: "no alerts", token: () => am, body: () => JSON.stringify({ version: "4" }), status: 400, code: "invalid_argument", message: /^alerts: is required \(rule: required\)/ },
    { name: "another payload version", token: () => am, body: () => payload([alert()], { version: "3" }), status: 400, code: "invalid_argument", message: /^version: .* \(rule: const 4\)/ },
    { name: "an alert without fingerprint", token: () => am, body: () => payload([alert(), alert({ fingerprint: undefined })]), status: 400, code: "invalid_argument", message: /^alerts\[1\]\.fingerprint: is required \(rule: required\)/ },
    { name: "an unknown status", token: () => am, body: () => payload([alert({ status: "pending" })]), status: 400, code: "invalid_argument", message: /^alerts\[0\]\.status: is "pending" \(rule: enum firing\|resolved\)/ },
    { name: "a bad startsAt", token: () => am, body: () => payload([alert({ startsAt: "yesterday" })]), status: 400, code: "invalid_argument", message: /^alerts\[0\]\.startsAt: must be an RFC 3339 time \(rule: format date-time\)/ },
    // Date alone would roll it over to March 2 and store a time nobody sent.
    { name: "an impossible startsAt", token: () => am, body: () => payload([alert({ startsAt: "2025-02-30T10:00:00Z" })]), status: 400, code: "invalid_argument", message: /^alerts\[0\]\.startsAt: is not a real date and time: February 2025 has 28 days, not 30 \(rule: format date-time\)/ },
    { name: "an impossible endsAt", token: () => am, body: () => payload([alert({ status: "resolved", endsAt: "2026-04-31T10:00:00Z" })]), status: 400, code: "invalid_argument", message: /^alerts\[0\]\.endsAt: is not a real date and time: April 2026 has 30 days, not 31 \(rule: format date-time\)/ },
    { name: "a label that is not a string", token: () => am, body: () => payload([alert({ labels: { alertname: "X", port: 9100 } })]), status: 400, code: "invalid_argument", message: /^alerts\[0\]\.labels\.port: must be a string \(rule: type string\)/ },
    { name: "a body over server.max_request_bytes", token: () => am, body: () => Buffer.from(payload([alert({ annotations: { description: "x".repeat(LIMIT) } })])), status: 413, code: "resource_exhausted", message: /^body: is larger than 65536 bytes \(rule: server\.max_request_bytes\)/ },
  ];
  for (const c of cases) {
    it(`${c.name}: ${c.status} naming the field and rule, audited, and the manager keeps serving`, async () => {
      const res = await post("/hooks/alertmanager", c.body(), c.token(), c.method);
      expect(res.status).toBe(c.status);
      const body = (await res.json()) as { code: string; message: string };
      expect(body.code).toBe(c.code);
      expect(body.message).toMatch(c.message);
      const row = await lastAuditRow(m);
      expect(row).toMatchObject({ toolName: "hooks.alertmanager", decision: "deny" });
      expect(row.decisionReason).toBe(`${c.code}: ${body.message}`);
      await healthy();
    });
  }

  it("stored nothing for any refused post", async () => {
    expect((await tool("query_incidents", { since: "3650d" })).incidents).toEqual([]);
  });
});

describe("POST /hooks/alertmanager records incidents", () => {
  it("creates one incident per fingerprint with its edges resolved from instance (port stripped) and host (by hostname)", async () => {
    const second = alert({ fingerprint: "ffff000011112222", labels: { alertname: "ReplicationLag", host: "db-01.internal", severity: "warning" }, annotations: { description: "replica 30s behind" }, startsAt: "2026-01-31T14:05:00Z" });
    const res = await post("/hooks/alertmanager", payload([alert(), second, alert({ fingerprint: "9999", labels: { alertname: "Other", instance: "unknown-host:80" }, startsAt: "2026-01-31T13:00:00Z" })]));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { accepted: number; incidents: Array<{ id: string; opened: boolean; edge_ids: string[] }> };
    expect(body.accepted).toBe(3);
    expect(body.incidents.map((i) => [i.opened, i.edge_ids])).toEqual([[true, ["web-01"]], [true, ["db-01"]], [true, []]]);

    const list = await tool("query_incidents", { since: "3650d" });
    // Newest first.
    expect(list.incidents.map((i: any) => i.alertname)).toEqual(["ReplicationLag", "DiskFull", "Other"]);
    const disk = list.incidents[1];
    expect(disk).toMatchObject({ status: "firing", severity: "critical", summary: "disk / is 97% full on web-01", edge_ids: ["web-01"], ends_at: null, starts_at: "2026-01-31T14:00:00.000Z" });
    expect(list.incidents[0].summary).toBe("replica 30s behind");

    const detail = await tool("get_incident_detail", { id: disk.id });
    expect(detail).toMatchObject({ fingerprint: "a1b2c3d4e5f60718", labels: { instance: "web-01:9100" }, annotations: { summary: "disk / is 97% full on web-01" }, session: null });
    expect(detail.generator_url).toContain("g0.expr=");
    expect(detail.edges).toEqual([{ id: "web-01", online: false, hostname: "", labels: { team: "web" }, last_seen_at: null }]);
    // By fingerprint too.
    expect((await tool("get_incident_detail", { id: "a1b2c3d4e5f60718" })).id).toBe(disk.id);
  });

  it("filters by status, alert name, edge and time", async () => {
    expect((await tool("query_incidents", { since: "3650d", alertname: "DiskFull" })).incidents).toHaveLength(1);
    expect((await tool("query_incidents", { since: "3650d", edge_id: "db-01" })).incidents.map((i: any) => i.alertname)).toEqual(["ReplicationLag"]);
    expect((await tool("query_incidents", { since: "3650d", status: "resolved" })).incidents).toEqual([]);
    expect((await tool("query_incidents", { since: "3650d", until: "2026-01-31T13:30:00Z" })).incidents.map((i: any) => i.alertname)).toEqual(["Other"]);
    const cut = await tool("query_incidents", { since: "3650d", limit: 2 });
    expect(cut).toMatchObject({ returned: 2, truncated: true });
  });

  it("resolves an incident, and a later firing of the same fingerprint reopens it", async () => {
    let res = await post("/hooks/alertmanager", payload([alert({ status: "resolved", endsAt: "2026-01-31T14:20:00Z" })]));
    expect(res.status).toBe(200);
    let inc = await tool("get_incident_detail", { id: "a1b2c3d4e5f60718" });
    expect(inc).toMatchObject({ status: "resolved", ends_at: "2026-01-31T14:20:00.000Z" });
    expect((await tool("query_incidents", { since: "3650d", status: "resolved" })).incidents.map((i: any) => i.id)).toEqual([inc.id]);

    // A late firing notification of the old occurrence changes nothing.
    res = await post("/hooks/alertmanager", payload([alert()]));
    expect(((await res.json()) as any).incidents[0]).toMatchObject({ opened: false, stale: true, status: "resolved" });

    res = await post("/hooks/alertmanager", payload([alert({ startsAt: "2026-01-31T15:00:00Z" })]));
    expect(((await res.json()) as any).incidents[0]).toMatchObject({ id: inc.id, opened: true, status: "firing" });
    inc = await tool("get_incident_detail", { id: inc.id });
    expect(inc).toMatchObject({ status: "firing", ends_at: null, starts_at: "2026-01-31T15:00:00.000Z" });

    // A late resolved notification of the old occurrence (a retry, an HA peer) does not end the new one.
    res = await post("/hooks/alertmanager", payload([alert({ status: "resolved", endsAt: "2026-01-31T14:20:00Z" })]));
    expect(((await res.json()) as any).incidents[0]).toMatchObject({ id: inc.id, opened: false, stale: true, status: "firing" });
    expect(await tool("get_incident_detail", { id: inc.id })).toMatchObject({ status: "firing", ends_at: null, starts_at: "2026-01-31T15:00:00.000Z" });
  });

  it("shows an incident only to callers whose reach includes one of its edges", async () => {
    const tina: Caller = { userId: "tina", role: "operator", reach: ["team=db"] };
    const seen = await tool("query_incidents", { since: "3650d" }, tina);
    expect(seen.incidents.map((i: any) => i.alertname).sort()).toEqual(["Other", "ReplicationLag"]);
    const out = await m.dispatcher.execute({ key: "get_incident_detail", params: { id: "a1b2c3d4e5f60718" }, caller: tina });
    expect(out.result?.error?.code).toBe("not_found");
  });
});

describe("POST /hooks/change-events", () => {
  const cases: Array<{ name: string; body: unknown; message: RegExp }> = [
    { name: "no kind", body: { summary: "deployed v2" }, message: /^kind: is required \(rule: required\)/ },
    { name: "no summary", body: { kind: "deploy" }, message: /^summary: is required \(rule: required\)/ },
    { name: "an unknown field", body: { kind: "deploy", summary: "v2", edgeId: "web-01" }, message: /^edgeId: is not a field of a change event \(rule: additionalProperties\)/ },
    { name: "an unknown edge", body: { kind: "deploy", summary: "v2", edge_id: "nope-01" }, message: /^edge_id: "nope-01" is not an enrolled edge \(rule: known\)/ },
    { name: "a bad time", body: { kind: "deploy", summary: "v2", at: "now" }, message: /^at: must be an RFC 3339 time/ },
    { name: "an impossible date", body: { kind: "deploy", summary: "v2", at: "2025-02-30T10:00:00Z" }, message: /^at: is not a real date and time: February 2025 has 28 days, not 30 \(rule: format date-time\)/ },
    { name: "an impossible hour", body: { kind: "deploy", summary: "v2", at: "2025-01-31T24:00:00Z" }, message: /^at: is not a real date and time: hour 24 is not 00-23 \(rule: format date-time\)/ },
    { name: "details that are not an object", body: { kind: "deploy", summary: "v2", details: [1] }, message: /^details: must be a JSON object \(rule: type object\)/ },
  ];
  for (const c of cases) {
    it(`refuses ${c.name} with 400 naming the field and rule`, async () => {
      const res = await post("/hooks/change-events", JSON.stringify(c.body));
      expect(res.status).toBe(400);
      expect(((await res.json()) as { message: string }).message).toMatch(c.message);
      expect(await lastAuditRow(m)).toMatchObject({ toolName: "hooks.change_events", decision: "deny", callerUserId: "am" });
    });
  }

  it("refuses a viewer and a missing token", async () => {
    expect((await post("/hooks/change-events", JSON.stringify({ kind: "deploy", summary: "x" }), viewer)).status).toBe(403);
    expect((await post("/hooks/change-events", JSON.stringify({ kind: "deploy", summary: "x" }), null)).status).toBe(401);
  });

  it("records an event with the token's user as its source, secrets redacted, and query_change_events returns it", async () => {
    const res = await post("/hooks/change-events", JSON.stringify({ kind: "Deploy", summary: "checkout v2.4.1 to web-01", edge_id: "web-01", actor: "argocd", at: "2026-01-31T13:58:00Z", details: { commit: "abc123", password: "hunter2" } }));
    expect(res.status).toBe(201);
    const body = (await res.json()) as { id: number; source: string; kind: string; at: string };
    expect(body).toMatchObject({ source: "am", kind: "deploy", at: "2026-01-31T13:58:00.000Z", edge_id: "web-01" });
    const out = await tool("query_change_events", { since: "2026-01-31T13:00:00Z", until: "2026-01-31T15:00:00Z" });
    expect(out.changes).toEqual([
      { at: "2026-01-31T13:58:00.000Z", origin: "external", kind: "deploy", summary: "checkout v2.4.1 to web-01", edge_id: "web-01", actor: "argocd", id: body.id, posted_by: "am", details: { commit: "abc123", password: "[REDACTED]" } },
    ]);
  });
});

describe("correlate_incident without Prometheus and with the edge offline", () => {
  it("still returns the timeline of changes around the incident, and says what it could not read as notes", async () => {
    const now = Date.now();
    const startsAt = new Date(now - 5 * 60_000).toISOString();
    let res = await post("/hooks/alertmanager", payload([alert({ fingerprint: "c0ffee", labels: { alertname: "LatencyHigh", edge: "web-01" }, annotations: { summary: "p99 over 2s" }, startsAt })]));
    const id = ((await res.json()) as any).incidents[0].id;
    res = await post("/hooks/change-events", JSON.stringify({ kind: "config", summary: "raised worker count", edge_id: "web-01", at: new Date(now - 10 * 60_000).toISOString() }));
    expect(res.status).toBe(201);
    res = await post("/hooks/change-events", JSON.stringify({ kind: "deploy", summary: "long before the window", at: new Date(now - 3 * 3_600_000).toISOString() }));
    expect(res.status).toBe(201);

    const out = await tool("correlate_incident", { id });
    expect(out.timeline.map((e: any) => `${e.source}: ${e.summary}`)).toEqual(["change_event: raised worker count", "incident: LatencyHigh started firing: p99 over 2s"]);
    expect(out.timeline[0]).toMatchObject({ on_incident_edge: true, posted_by: "am" });
    expect(out.sources).toEqual({ prometheus: "not_configured", changes: 1, logs: { "web-01": "offline" } });
    expect(out.notes).toEqual(["prometheus: not configured (observability.prometheus_url); no series on the timeline", "logs: edge web-01 is offline; no logs read"]);
    // A longer lookback reaches the older change.
    const wide = await tool("correlate_incident", { id, lookback: "4h", logs: false });
    expect(wide.timeline.map((e: any) => e.summary)).toContain("long before the window");
    expect(wide.notes).toContain("logs: not asked for (logs: false)");
  });

  it("refuses an unknown incident and a lookback over a day, naming them", async () => {
    let out = await m.dispatcher.execute({ key: "correlate_incident", params: { id: "inc_nope" }, caller: admin });
    expect(out.result?.error).toMatchObject({ code: "not_found", message: 'unknown incident "inc_nope"' });
    const any = (await tool("query_incidents", { since: "3650d" })).incidents[0].id;
    out = await m.dispatcher.execute({ key: "correlate_incident", params: { id: any, lookback: "25h" }, caller: admin });
    expect(out.result?.error?.message).toMatch(/param "lookback": 25h is more than 24h/);
  });
});

describe("incidents.auto_diagnose", () => {
  it("starts one diagnosis session per new firing incident, as the webhook's user, and stores its id on the incident", async () => {
    const auto = await bootManager({ "incidents.auto_diagnose": true });
    try {
      const token = await makeUser(auto, "am", "operator");
      const send = (alerts: unknown[]) => fetch(`${auto.url}/hooks/alertmanager`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: payload(alerts) });
      expect((await send([alert({ labels: { alertname: "DiskFull", instance: "web-1:9100" }, annotations: { summary: "disk full on web-1" } })])).status).toBe(200);
      const run = async (key: string, params: Record<string, unknown>) => (await auto.dispatcher.execute({ key, params, caller: admin })).result!.output as any;
      let inc: any;
      const deadline = Date.now() + 30_000;
      do {
        inc = await run("get_incident_detail", { id: "a1b2c3d4e5f60718" });
        if (inc.session?.status === "done") break;
        await new Promise((r) => setTimeout(r, 50));
      } while (Date.now() < deadline);
      expect(inc.session_id).toMatch(/^ses_/);
      expect(inc.session).toMatchObject({ id: inc.session_id, status: "done", user_id: "am", path: "fallback" });
      expect(inc.session.report).toContain("Alert DiskFull is firing");
      // A repeat of the same firing alert is no new occurrence: no second session.
      expect((await send([alert({ labels: { alertname: "DiskFull", instance: "web-1:9100" } })])).status).toBe(200);
      expect((await run("get_incident_detail", { id: "a1b2c3d4e5f60718" })).session_id).toBe(inc.session_id);
    } finally {
      await auto.stop();
    }
  });

  it("runs at most incidents.max_auto_diagnoses (3) at once: of five new incidents in one post three get a diagnosis, the others are skipped and the answer says so", async () => {
    // A model that never answers keeps every started diagnosis running until it is stopped.
    const model = await startScriptedModel(Array.from({ length: 50 }, () => ({ hang: true as const })));
    const auto = await bootManager({ "incidents.auto_diagnose": true, "model.base_url": model.url, "model.model": "bound-test", "model.max_retries": 0, "model.timeout": "5m" });
    try {
      const token = await makeUser(auto, "am", "operator");
      const send = async (alerts: unknown[]) => {
        const res = await fetch(`${auto.url}/hooks/alertmanager`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: payload(alerts) });
        expect(res.status).toBe(200);
        return ((await res.json()) as { incidents: Array<{ opened: boolean; diagnosis?: string }> }).incidents;
      };
      const burst = Array.from({ length: 5 }, (_, i) => alert({ fingerprint: `b0b0b0b0000${i}`, labels: { alertname: `Burst${i}` }, annotations: {} }));
      const answered = await send(burst);
      expect(answered.map((i) => i.opened)).toEqual([true, true, true, true, true]);
      expect(answered.map((i) => i.diagnosis)).toEqual([
        "starting",
        "starting",
        "starting",
        ...Array(2).fill("skipped: 3 automatic diagnoses already run (incidents.max_auto_diagnoses); diagnose it by hand or when one ends"),
      ]);
      const registry = tasksOf(auto.agent);
      expect(await waitFor(() => registry.list().length === 3, 20_000)).toBe(true);
      expect(registry.list().every((t) => t.kind === "incident_diagnosis" && t.owner === "am")).toBe(true);
      // While three run, another new incident gets none either.
      expect((await send([alert({ fingerprint: "b0b0b0b00009", labels: { alertname: "Burst9" } })]))[0].diagnosis).toMatch(/^skipped: /);
      expect(registry.count("incident_diagnosis")).toBe(3);
      // Once they end, the places are free again.
      for (const t of registry.list()) expect((await auto.dispatcher.execute({ key: "task_stop", params: { id: t.id }, caller: admin })).result?.success).toBe(true);
      expect(await waitFor(() => registry.count("incident_diagnosis") === 0, 20_000)).toBe(true);
      expect((await send([alert({ fingerprint: "b0b0b0b00010", labels: { alertname: "Burst10" } })]))[0].diagnosis).toBe("starting");
    } finally {
      await auto.stop();
      await model.close();
    }
  });
});

describe("POST /hooks/alertmanager and the poster's reach (G4)", () => {
  let amWeb: string; // webhook user of team web
  let amDb: string; // webhook user of team db
  /** A viewer whose reach is team=web only. */
  const wendy: Caller = { userId: "wendy", role: "viewer", reach: ["team=web"] };
  const base = (fp: string, o: Record<string, unknown> = {}) => ({ status: "firing", startsAt: "2026-02-01T10:00:00Z", endsAt: "0001-01-01T00:00:00Z", generatorURL: "", fingerprint: fp, ...o });
  beforeAll(async () => {
    amWeb = await makeUser(m, "am-web", "operator", { reach: "team=web" });
    amDb = await makeUser(m, "am-db", "operator", { reach: "team=db" });
    await makeUser(m, "wendy", "viewer", { reach: "team=web" });
  });

  it("a webhook user cannot rewrite an incident on an edge outside its reach (and so expose it and its diagnosis to everyone)", async () => {
    const fp = "dbdbdbdbdbdb0001";
    // team db's Alertmanager reports an incident on db-01.
    let res = await post("/hooks/alertmanager", payload([base(fp, { labels: { alertname: "PgDown", instance: "db-01:9187" }, annotations: { summary: "postgres down on db-01" } })]), amDb);
    expect(res.status).toBe(200);
    const inc = ((await res.json()) as any).incidents[0];
    expect(inc.edge_ids).toEqual(["db-01"]);
    // Its diagnosis session (what incidents.auto_diagnose stores) ran on db-01 as am-db.
    await m.database.db.insert(agentSessions).values({ id: "ses_review_db_000000001", createdAt: new Date(), updatedAt: new Date(), userId: "am-db", inputText: "PgDown on db-01", edgeId: "db-01", status: "done", report: "# Diagnosis report\nreplication user pg_repl on db-01 ..." });
    await createIncidentStore(m.database).setSession(inc.id, "ses_review_db_000000001");
    // Wendy (team web) cannot see it.
    expect((await tool("query_incidents", { since: "3650d" }, wendy)).incidents.map((i: any) => i.id)).not.toContain(inc.id);

    // team web's webhook user posts the same fingerprint (computable from the label set) without an edge it can reach.
    res = await post("/hooks/alertmanager", payload([base(fp, { labels: { alertname: "Hijacked", instance: "db-01:9187" }, annotations: { summary: "rewritten by am-web", log_file: "/etc/shadow" } })]), amWeb);
    // The alert is refused in the answer, which tells nothing of the incident; the refusal is audited.
    expect(res.status).toBe(200);
    const answer = (await res.json()) as any;
    expect(answer).toMatchObject({ accepted: 0, refused: 1 });
    expect(answer.incidents).toEqual([{ fingerprint: fp, error: { code: "not_found", message: `alert ${fp}: no incident with this fingerprint is in your reach; nothing was changed`, hint: expect.any(String) } }]);
    expect(JSON.stringify(answer)).not.toMatch(/inc_|PgDown|db-01|firing/);
    expect(await lastAuditRow(m)).toMatchObject({ toolName: "hooks.alertmanager", decision: "deny", callerUserId: "am-web", decisionReason: expect.stringMatching(/^not_found: alert dbdbdbdbdbdb0001: /) });
    // Secure behaviour: Wendy still cannot read the incident nor the db-01 diagnosis report ...
    const detail = await m.dispatcher.execute({ key: "get_incident_detail", params: { id: fp }, caller: wendy });
    expect(detail.result?.error?.code, `wendy (team=web) reads: ${JSON.stringify(detail.result?.output)}`).toBe("not_found");
    // ... and the incident keeps its edge and its content.
    const row = await createIncidentStore(m.database).get(fp);
    expect(row?.edgeIds, "am-web (reach team=web) emptied the edges of a team=db incident").toEqual(["db-01"]);
    expect(row?.alertname).toBe("PgDown");
    expect(row?.annotations).toEqual({ summary: "postgres down on db-01" });
  });

  it("a webhook user cannot resolve an incident on an edge outside its reach", async () => {
    const fp = "dbdbdbdbdbdb0002";
    const b = { startsAt: "2026-02-01T11:00:00Z", generatorURL: "", fingerprint: fp, labels: { alertname: "DiskFull", instance: "db-01:9100" }, annotations: {} };
    expect((await post("/hooks/alertmanager", payload([{ ...b, status: "firing", endsAt: "0001-01-01T00:00:00Z" }]), amDb)).status).toBe(200);
    await post("/hooks/alertmanager", payload([{ ...b, status: "resolved", endsAt: "2026-02-01T11:01:00Z" }]), amWeb);
    expect((await createIncidentStore(m.database).get(fp))?.status, "am-web resolved a team=db incident").toBe("firing");
    // Its own team's webhook user still resolves it.
    const res = await post("/hooks/alertmanager", payload([{ ...b, status: "resolved", endsAt: "2026-02-01T11:02:00Z" }]), amDb);
    expect(((await res.json()) as any).incidents[0]).toMatchObject({ status: "resolved", edge_ids: ["db-01"] });
  });

  it("a webhook user updating an incident it may touch keeps the incident's edges outside its reach, and its answer names only its own", async () => {
    const fp = "webdb0000000003";
    // The unlimited Alertmanager user reports an incident on web-01 (instance) and db-01 (host, by hostname).
    let res = await post("/hooks/alertmanager", payload([base(fp, { labels: { alertname: "Latency", instance: "web-01:9100", host: "db-01.internal" }, annotations: {} })]));
    expect(((await res.json()) as any).incidents[0].edge_ids).toEqual(["web-01", "db-01"]);
    // team web's webhook user updates it naming nothing: db-01 stays (web-01 is its own to drop).
    res = await post("/hooks/alertmanager", payload([base(fp, { labels: { alertname: "Latency", instance: "elsewhere:9100" }, annotations: { summary: "p99 high" } })]), amWeb);
    expect(((await res.json()) as any).incidents[0]).toMatchObject({ status: "firing", edge_ids: [] });
    const row = await createIncidentStore(m.database).get(fp);
    expect(row?.edgeIds, "am-web dropped db-01, outside its reach").toEqual(["db-01"]);
    expect(row?.summary).toBe("p99 high");
    // team db's Tina still sees it; the unlimited user may still rewrite its edges as before.
    expect((await tool("query_incidents", { since: "3650d" }, { userId: "tina", role: "operator", reach: ["team=db"] })).incidents.map((i: any) => i.id)).toContain(row!.id);
    res = await post("/hooks/alertmanager", payload([base(fp, { labels: { alertname: "Latency", instance: "web-01:9100" }, annotations: {} })]));
    expect(((await res.json()) as any).incidents[0].edge_ids).toEqual(["web-01"]);
  });
});

describeBothBackends("the incident store", (backend) => {
  let database: Database;
  beforeAll(async () => {
    database = await backend.open();
  });

  it("a late 'resolved' of an earlier occurrence does not resolve the reopened incident", async () => {
    const store = createIncidentStore(database);
    const t0 = new Date("2026-01-31T10:00:00Z");
    const t1 = new Date("2026-01-31T10:10:00Z");
    const t2 = new Date("2026-01-31T12:00:00Z");
    const base = { labels: { alertname: "HighLoad" }, annotations: {}, generatorUrl: "", fingerprint: "fp-stale-resolved" };
    await store.recordAlert({ ...base, status: "firing", startsAt: t0 }, []);
    await store.recordAlert({ ...base, status: "resolved", startsAt: t0, endsAt: t1 }, []);
    const reopened = await store.recordAlert({ ...base, status: "firing", startsAt: t2 }, []);
    expect(reopened.opened).toBe(true);
    // Alertmanager re-sends (HA peers, retries) the old occurrence's resolved notification.
    const late = await store.recordAlert({ ...base, status: "resolved", startsAt: t0, endsAt: t1 }, []);
    expect(late.stale).toBe(true);
    expect(late.incident.status).toBe("firing");
    // Resolving it would leave ends_at (10:10) before starts_at (12:00): correlate_incident's window would be inverted.
    expect(late.incident.endsAt === null || late.incident.endsAt.getTime() >= late.incident.startsAt.getTime()).toBe(true);
    // The stored row is unchanged too, and the new occurrence's own resolved notification still resolves it.
    expect(await store.get("fp-stale-resolved")).toMatchObject({ status: "firing", endsAt: null, startsAt: t2 });
    const t3 = new Date("2026-01-31T12:30:00Z");
    const resolved = await store.recordAlert({ ...base, status: "resolved", startsAt: t2, endsAt: t3 }, []);
    expect(resolved).toMatchObject({ stale: false, incident: { status: "resolved", startsAt: t2, endsAt: t3 } });
  });

  it("refuses a poster with a limited reach an incident on none of its edges, and keeps the edges it cannot see", async () => {
    const store = createIncidentStore(database);
    const t0 = new Date("2026-02-01T10:00:00Z");
    const a = { status: "firing" as const, labels: { alertname: "PgDown" }, annotations: { summary: "down" }, generatorUrl: "", fingerprint: "fp-reach", startsAt: t0 };
    await store.recordAlert(a, ["db-01"]);
    const webOnly = { visible: (id: string) => id === "web-01" };
    // Outside its reach: refused, in every state change, and nothing is written.
    expect(await store.recordAlert({ ...a, labels: { alertname: "Hijacked" } }, [], webOnly)).toEqual({ refused: true });
    expect(await store.recordAlert({ ...a, status: "resolved", endsAt: new Date("2026-02-01T10:05:00Z") }, [], webOnly)).toEqual({ refused: true });
    expect(await store.get("fp-reach")).toMatchObject({ status: "firing", alertname: "PgDown", edgeIds: ["db-01"] });
    // Once it names an edge in reach it may be updated, and keeps db-01.
    await store.recordAlert(a, ["db-01", "web-01"]);
    const r = await store.recordAlert({ ...a, annotations: { summary: "slow" } }, [], webOnly);
    expect(r).toMatchObject({ incident: { summary: "slow", edgeIds: ["db-01"] } });
    expect((await store.get("fp-reach"))?.edgeIds).toEqual(["db-01"]);
  });
});
