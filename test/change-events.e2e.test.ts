/**
 * query_change_events on a real manager: the audit log's rows that changed something (decision
 * allow after approval, or in BYPASS) merged by time with posted change events; safe calls,
 * parked and refused calls are not changes; params only for audit readers; reach applies.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { bootManager, type TestManager } from "./support/manager.ts";
import { makeUser } from "./support/auth.ts";
import { describeBothBackends } from "./support/pg.ts";
import { auditRecord } from "../manager/audit/types.ts";
import { createAuditLog } from "../manager/audit/log.ts";
import { edges } from "../manager/db/schema/index.ts";
import type { Caller } from "../manager/identity/caller.ts";
import type { Database } from "../manager/db/client.ts";
import { createIncidentStore } from "../manager/incidents/store.ts";
import { collectChanges } from "../manager/incidents/changes.ts";
import { fakeDeps } from "../manager/skills/base/fleet/fleet.testkit.ts";

let m: TestManager;
let poster: string;
const at = (min: number) => new Date(Date.UTC(2026, 0, 31, 13, min));

beforeAll(async () => {
  m = await bootManager();
  poster = await makeUser(m, "deploybot", "operator");
  for (const [id, team] of [["web-01", "web"], ["db-01", "db"]]) {
    await m.edges.enroll(id);
    await m.database.db.update(edges).set({ labels: { team } }).where(eq(edges.id, id));
  }
  const row = (o: Parameters<typeof auditRecord>[0]) => m.audit.append(auditRecord({ args: { command: "systemctl restart nginx" }, result: { success: true, output: "" }, ...o }));
  // What the dispatcher writes: the ask, then the approved run; a BYPASS run; an agent's approved run; a failed approved run.
  await row({ toolName: "exec", deviceId: "web-01", startedAt: at(9), callerUserId: "olga", callerRole: "operator", decision: "ask", decisionReason: "approval_required: mutating", approvalId: "apr_1", result: null });
  await row({ toolName: "exec", deviceId: "web-01", startedAt: at(10), callerUserId: "olga", callerRole: "operator", decision: "allow", decisionReason: "approved: by bob (approval apr_1)", approvalId: "apr_1", approvedBy: "bob" });
  await row({ toolName: "exec", deviceId: "db-01", startedAt: at(20), callerUserId: "dev", callerRole: "admin", decision: "allow", decisionReason: "bypass: BYPASS mode: \"exec\" is mutating and runs without approval", args: { command: "rm /tmp/x" } });
  await row({ toolName: "restart_service", deviceId: "web-01", startedAt: at(30), callerUserId: "0", callerRole: "system", onBehalfOf: "alice", decision: "allow", decisionReason: "approved: by bob (approval apr_2)", approvalId: "apr_2", approvedBy: "bob", args: { unit: "nginx" } });
  await row({ toolName: "exec", deviceId: "db-01", startedAt: at(40), callerUserId: "olga", callerRole: "operator", decision: "allow", decisionReason: "approved: by bob,carol (approval apr_3)", approvalId: "apr_3", approvedBy: "bob,carol", result: null, error: "unavailable: edge \"db-01\" is offline" });
  // Running when the manager stopped: it may have changed something.
  await row({ toolName: "exec", deviceId: "web-01", startedAt: at(45), callerUserId: "olga", callerRole: "operator", decision: "allow", decisionReason: "approval_interrupted: the manager stopped while the call ran", approvalId: "apr_4", result: null, error: "unavailable: the manager stopped while the call ran" });
  // Not changes: a safe call, a refusal, an approver's vote, a call outside the window.
  await row({ toolName: "approval.approve", startedAt: at(11), callerUserId: "bob", callerRole: "approver", decision: "allow", decisionReason: 'approval_recorded: 1 of 1 for "exec"', approvalId: "apr_1", args: { comment: "ok" }, result: null });
  await row({ toolName: "exec", deviceId: "web-01", startedAt: at(15), callerUserId: "olga", callerRole: "operator", decision: "allow", decisionReason: "safe: \"exec\" is safe", args: { command: "df -h" } });
  await row({ toolName: "exec", deviceId: "web-01", startedAt: at(16), callerUserId: "vic", callerRole: "viewer", decision: "deny", decisionReason: "role: a viewer may run safe skills only" });
  await row({ toolName: "exec", deviceId: "web-01", startedAt: new Date(Date.UTC(2026, 0, 30)), callerUserId: "olga", callerRole: "operator", decision: "allow", decisionReason: "approved: by bob (approval apr_0)", approvalId: "apr_0", approvedBy: "bob" });
  for (const [min, kind, edge] of [[5, "deploy", "web-01"], [25, "config", "db-01"], [35, "deploy", ""]] as const) {
    const res = await fetch(`${m.url}/hooks/change-events`, {
      method: "POST",
      headers: { authorization: `Bearer ${poster}`, "content-type": "application/json" },
      body: JSON.stringify({ kind, summary: `${kind} at :${min}`, at: at(min).toISOString(), ...(edge ? { edge_id: edge } : {}) }),
    });
    expect(res.status).toBe(201);
  }
}, 60_000);
afterAll(async () => {
  await m?.stop();
});

const admin: Caller = { userId: "admin", role: "admin" };
async function changes(params: Record<string, unknown>, caller: Caller = admin): Promise<any> {
  const out = await m.dispatcher.execute({ key: "query_change_events", params: { since: at(0).toISOString(), until: at(59).toISOString(), ...params }, caller });
  expect(out.result?.success, JSON.stringify(out.result?.error)).toBe(true);
  return out.result!.output;
}
const brief = (c: any) => `${c.at.slice(11, 16)} ${c.origin} ${c.origin === "audit" ? c.tool : c.kind}${c.edge_id ? `@${c.edge_id}` : ""}`;

describe("query_change_events", () => {
  it("merges approved and BYPASS calls from the audit log with posted events, newest first, and leaves out everything else", async () => {
    const out = await changes({});
    expect(out.changes.map(brief)).toEqual([
      "13:45 audit exec@web-01",
      "13:40 audit exec@db-01",
      "13:35 external deploy",
      "13:30 audit restart_service@web-01",
      "13:25 external config@db-01",
      "13:20 audit exec@db-01",
      "13:10 audit exec@web-01",
      "13:05 external deploy@web-01",
    ]);
    expect(out).toMatchObject({ returned: 8, truncated: false });
    expect(out.note).toBeUndefined();
  });

  it("says who made each audited change, how it was let through, with what params, and whether it worked", async () => {
    const out = await changes({ origin: "audit" });
    const [interrupted, failed, agent, bypass, approved] = out.changes;
    expect(interrupted).toMatchObject({ outcome: "unknown", approval_id: "apr_4" });
    expect(interrupted.summary).toMatch(/interrupted by a manager stop, outcome unknown$/);
    expect(approved).toMatchObject({ actor: "olga", approval_id: "apr_1", approved_by: ["bob"], outcome: "ok", params: { command: "systemctl restart nginx" }, kind: "skill_call" });
    expect(approved.summary).toBe('exec {"command":"systemctl restart nginx"} on web-01 by olga (approved by bob): ok');
    expect(bypass.summary).toMatch(/by dev \(BYPASS mode, no approval\): ok$/);
    expect(agent).toMatchObject({ actor: "alice (agent)", tool: "restart_service" });
    expect(failed).toMatchObject({ outcome: "failed", approved_by: ["bob", "carol"], error: 'unavailable: edge "db-01" is offline' });
  });

  it("shows params of audited calls only to those who may read the audit log, and says so", async () => {
    const out = await changes({ origin: "audit" }, { userId: "olga", role: "operator" });
    expect(out.changes.every((c: any) => c.params === undefined && !c.summary.includes("systemctl"))).toBe(true);
    expect(out.note).toMatch(/approvers and admins only/);
    // An agent acting for an approver reads them; for an operator it does not.
    expect((await changes({ origin: "audit" }, { userId: "0", role: "system", onBehalfOf: "alice", onBehalfRole: "approver" })).changes[0].params).toBeDefined();
    expect((await changes({ origin: "audit" }, { userId: "0", role: "system", onBehalfOf: "olga", onBehalfRole: "operator" })).changes[0].params).toBeUndefined();
  });

  it("filters by origin, edge and window, and cuts at the limit", async () => {
    expect((await changes({ origin: "external" })).changes.map(brief)).toEqual(["13:35 external deploy", "13:25 external config@db-01", "13:05 external deploy@web-01"]);
    expect((await changes({ edge_id: "web-01" })).changes.map(brief)).toEqual(["13:45 audit exec@web-01", "13:30 audit restart_service@web-01", "13:10 audit exec@web-01", "13:05 external deploy@web-01"]);
    expect((await changes({ since: at(21).toISOString(), until: at(36).toISOString() })).changes.map(brief)).toEqual(["13:35 external deploy", "13:30 audit restart_service@web-01", "13:25 external config@db-01"]);
    const cut = await changes({ limit: 2 });
    expect(cut).toMatchObject({ returned: 2, truncated: true });
    expect(cut.changes.map(brief)).toEqual(["13:45 audit exec@web-01", "13:40 audit exec@db-01"]);
  });

  it("keeps to the caller's reach: changes on edges outside it do not exist for the caller", async () => {
    const out = await changes({}, { userId: "tina", role: "approver", reach: ["team=db"] });
    expect(out.changes.map(brief)).toEqual(["13:40 audit exec@db-01", "13:35 external deploy", "13:25 external config@db-01", "13:20 audit exec@db-01"]);
  });

  it("refuses a window that ends before it starts, and a time it cannot read, naming the param", async () => {
    let out = await m.dispatcher.execute({ key: "query_change_events", params: { since: at(30).toISOString(), until: at(10).toISOString() }, caller: admin });
    expect(out.result?.error).toMatchObject({ code: "invalid_argument" });
    expect(out.result?.error?.message).toMatch(/param "since": .* is after until/);
    out = await m.dispatcher.execute({ key: "query_change_events", params: { since: "last tuesday" }, caller: admin });
    expect(out.result?.error?.message).toMatch(/param "since": "last tuesday" is neither a time nor a duration back from now/);
  });
});

describeBothBackends("collectChanges and the caller's reach", (backend) => {
  let database: Database;
  beforeAll(async () => {
    database = await backend.open();
  });
  const { deps } = fakeDeps([{ id: "a-1", labels: { team: "a" } }, { id: "b-1", labels: { team: "b" } }], () => ({ output: {} }));
  const ann: Caller = { userId: "ann", role: "operator", reach: ["team=a"] };

  it("query_change_events applies the caller's reach before the limit, not after (visible changes are not lost)", async () => {
    const store = createIncidentStore(database);
    const now = Date.now();
    await store.addChangeEvent({ at: new Date(now - 50 * 60_000), source: "ci", kind: "deploy", summary: "visible one", edgeId: "a-1", actor: "", details: {} });
    for (let i = 1; i <= 3; i++) await store.addChangeEvent({ at: new Date(now - i * 60_000), source: "ci", kind: "deploy", summary: `hidden ${i}`, edgeId: "b-1", actor: "", details: {} });
    const out = await collectChanges(
      { database, edges: deps.edges, incidents: store },
      { since: new Date(now - 3_600_000), until: new Date(now), origin: "external", limit: 2, viewer: ann },
    );
    // Filtered after the query, the 3 newer rows outside the reach used up limit + 1 and left [] (truncated false).
    expect(out.changes.map((c) => c.summary)).toEqual(["visible one"]);
    expect(out.truncated).toBe(false);
  });

  it("keeps the audit log's changes in reach the same way, and says truncated only when more visible changes exist", async () => {
    const audit = createAuditLog(database);
    const store = createIncidentStore(database);
    const base = Date.UTC(2025, 5, 1, 10, 0);
    const at = (min: number) => new Date(base + min * 60_000);
    const approved = (min: number, edge: string) =>
      audit.append(auditRecord({ toolName: "restart_service", deviceId: edge, startedAt: at(min), callerUserId: "olga", callerRole: "operator", decision: "allow", decisionReason: "approved: by bob (approval apr_x)", approvedBy: "bob", args: { unit: "nginx" }, result: { success: true, output: "" } }));
    await approved(1, "a-1");
    for (let min = 2; min <= 5; min++) await approved(min, "b-1");
    const query = (limit: number) => collectChanges({ database, edges: deps.edges, incidents: store }, { since: at(0), until: at(59), origin: "audit", limit, viewer: ann });
    let out = await query(2);
    expect(out.changes.map((c) => `${c.at.slice(11, 16)} ${c.edge_id}`)).toEqual(["10:01 a-1"]);
    expect(out.truncated).toBe(false);
    await approved(6, "a-1");
    await approved(7, "a-1");
    out = await query(2);
    expect(out.changes.map((c) => `${c.at.slice(11, 16)} ${c.edge_id}`)).toEqual(["10:07 a-1", "10:06 a-1"]);
    expect(out.truncated).toBe(true);
    out = await query(3);
    expect(out.changes.map((c) => `${c.at.slice(11, 16)} ${c.edge_id}`)).toEqual(["10:07 a-1", "10:06 a-1", "10:01 a-1"]);
    expect(out.truncated).toBe(false);
  });
});
