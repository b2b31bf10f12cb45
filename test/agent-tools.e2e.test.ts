/** The bridge (J1) through a real manager and compiled edge: AgentService/ListTools follows the gate; CallTool runs as the system caller and feeds refusals back. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { AgentService } from "../proto/gen/ongrid/v1/agent_service_pb.ts";
import { ApprovalService, ApprovalState } from "../proto/gen/ongrid/v1/approval_service_pb.ts";
import { Code } from "@connectrpc/connect";
import { PermissionMode } from "../proto/gen/ongrid/v1/skill_pb.ts";
import { cacheFlushSkill } from "./support/skills.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, waitFor, type TestEdge } from "./support/edge.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { lastAuditRow } from "./support/audit.ts";
import { refusal } from "./support/rejection.ts";

let m: TestManager;
let edge: TestEdge;
let flushed = 0;

const agent = (token: string) => createClient(AgentService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(token)] }));

async function names(token: string, permissionMode = PermissionMode.UNSPECIFIED, playbook = "") {
  const r = await agent(token).listTools({ permissionMode, playbook });
  const tools = JSON.parse(r.toolsJson) as Array<{ type: string; function: { name: string; parameters: { properties: Record<string, unknown>; required: string[] } } }>;
  expect(tools.map((t) => t.function.name)).toEqual(r.tools.map((t) => t.name));
  return { list: r.tools.map((t) => t.name), tools, entries: r.tools };
}

const lastRow = () => lastAuditRow(m);

beforeAll(async () => {
  // This file tests the guardrail list itself, so it lists restart_service as high-risk; the
  // default list (kubernetes_action only) sends restart_service to approval in NORMAL instead.
  m = await bootManager({ "gate.high_risk_tools": "restart_service,kubernetes_action" });
  m.registry.register(cacheFlushSkill(() => {
      flushed++;
    }));
  edge = await startEdge(m, "tools-edge");
}, 90_000);
afterAll(async () => {
  await edge?.stop();
  await m?.stop();
});

describe("ListTools", () => {
  it("lists host tools with a required edge_id first, naming the edges, in OpenAI's shape", async () => {
    const { tools, entries } = await names(await makeUser(m, "otto", "operator"));
    const load = tools.find((t) => t.function.name === "host_load")!;
    expect(load.type).toBe("function");
    expect(Object.keys(load.function.parameters.properties)[0]).toBe("edge_id");
    expect(load.function.parameters.required[0]).toBe("edge_id");
    expect(entries.find((e) => e.name === "host_load")!.edgeIds).toEqual(["tools-edge"]);
    const web = tools.find((t) => t.function.name === "web_search")!;
    expect(web.function.parameters.properties).not.toHaveProperty("edge_id");
  });

  it("shows only what the gate allows: modes, guardrails, the playbook whitelist and the user's role", async () => {
    const op = await makeUser(m, "olga", "operator");
    const normal = await names(op);
    expect(normal.list).toEqual(expect.arrayContaining(["host_load", "probe_http", "read_skill", "cache_flush", "exec"]));
    expect(normal.list).not.toContain("restart_service"); // high-risk guardrail: denied in NORMAL
    expect(normal.entries.find((e) => e.name === "cache_flush")!.needsApproval).toBe(true);
    expect(normal.entries.find((e) => e.name === "host_load")!.needsApproval).toBe(false);

    expect(normal.entries.find((e) => e.name === "exec")!.needsApproval).toBe(true); // listed by its worst case
    const readOnly = await names(op, PermissionMode.READ_ONLY);
    expect(readOnly.list).not.toContain("cache_flush"); // a write tool is absent in READ_ONLY
    expect(readOnly.list).not.toContain("exec"); // so is a shell, whatever a given command would be
    expect(readOnly.list).toContain("host_load");

    const ask = await names(op, PermissionMode.ASK_DESTRUCTIVE);
    expect(ask.list).toContain("restart_service");
    // Under network_diagnosis, restart_service is not whitelisted: gone in every mode; a safe tool
    // the playbook does not list (host_files) stays (read-only exemption).
    const net = await names(op, PermissionMode.ASK_DESTRUCTIVE, "network_diagnosis");
    expect(net.list).not.toContain("restart_service");
    expect(net.list).not.toContain("cache_flush");
    expect(net.list).toContain("host_files");
    expect(net.list).not.toContain("exec");
    const svc = await names(op, PermissionMode.ASK_DESTRUCTIVE, "service_diagnosis");
    expect(svc.list).toContain("restart_service");

    const viewer = await names(await makeUser(m, "vic", "viewer"));
    expect(viewer.list).not.toContain("cache_flush"); // a viewer's agent runs safe tools only
    expect(viewer.list).toContain("host_load");
  });
});

describe("ListTools for another user", () => {
  it("an admin sees a user's list with that user's role and reach; others may not ask; unknown users are named", async () => {
    await makeUser(m, "val", "viewer");
    await makeUser(m, "zed", "operator", { reach: "zone=elsewhere" });
    const forVal = await agent(m.adminToken).listTools({ userId: "val" });
    const valNames = forVal.tools.map((t) => t.name);
    expect(valNames).toContain("host_load");
    expect(valNames).not.toContain("cache_flush"); // val is a viewer
    const forZed = (await agent(m.adminToken).listTools({ userId: "zed" })).tools.map((t) => t.name);
    expect(forZed).toContain("cache_flush");
    expect(forZed).not.toContain("host_load"); // tools-edge is outside zed's reach
    const asOperator = await refusal(agent(await makeUser(m, "ozzy", "operator")).listTools({ userId: "val" }));
    expect(asOperator.code).toBe(Code.PermissionDenied);
    expect(asOperator.rawMessage).toContain("user_id: only admins may list tools for another user");
    const unknown = await refusal(agent(m.adminToken).listTools({ userId: "nobody" }));
    expect(unknown.code).toBe(Code.NotFound);
    // An admin whose token is limited keeps that limit when listing for a user who has none.
    const limitedAdmin = await makeUser(m, "ada", "admin", { tokenReach: "zone=elsewhere" });
    expect((await agent(limitedAdmin).listTools({ userId: "val" })).tools.map((t) => t.name)).not.toContain("host_load");
  });
});

describe("CallTool", () => {
  it("runs a host tool on the edge as user 0 / role system on behalf of the caller", async () => {
    const out = await agent(await makeUser(m, "omar", "operator")).callTool({ name: "host_load", argumentsJson: JSON.stringify({ edge_id: "tools-edge" }), sessionId: "sess-1" });
    expect(out.result?.success, out.content).toBe(true);
    const content = JSON.parse(out.content);
    expect(content.success).toBe(true);
    expect(content.output).toHaveProperty("cpus");
    const row = await lastRow();
    expect(row).toMatchObject({ seq: Number(out.auditSeq), toolName: "host_load", deviceId: "tools-edge", sessionId: "sess-1", callerUserId: "0", callerRole: "system", onBehalfOf: "omar", decision: "allow" });
    // The user's audit trail includes what their agent did; the chain holds.
    expect((await m.audit.list({ userId: "omar" })).map((r) => r.seq)).toContain(Number(out.auditSeq));
    expect((await m.audit.verify()).ok).toBe(true);
  });

  it("feeds refusals back as results: a tool not offered, malformed arguments, a missing edge_id; each audited", async () => {
    const client = agent(await makeUser(m, "oona", "operator"));
    let out = await client.callTool({ name: "restart_service", argumentsJson: JSON.stringify({ edge_id: "tools-edge", unit: "nginx" }), sessionId: "sess-2" });
    expect(out.result?.success).toBe(false);
    expect(out.result?.error?.code).toBe("permission_denied");
    expect(JSON.parse(out.content).error.message).toBe('tool "restart_service" was not offered to this session');
    expect(await lastRow()).toMatchObject({ toolName: "restart_service", callerRole: "system", sessionId: "sess-2", seq: Number(out.auditSeq) });

    out = await client.callTool({ name: "web_search", argumentsJson: "{not json", sessionId: "sess-2" });
    expect(out.result?.error?.code).toBe("invalid_argument");
    expect(out.content).toContain("params_json: is not valid JSON (rule: json)");

    out = await client.callTool({ name: "host_load", argumentsJson: "{}", sessionId: "sess-2" });
    expect(out.result?.error?.code).toBe("invalid_argument");
    expect(out.content).toContain('edge_id: is required for the host skill \\"host_load\\"');
  });

  it("parks a mutating call for approval and tells the model it has not run", async () => {
    const out = await agent(await makeUser(m, "opal", "operator")).callTool({ name: "cache_flush", argumentsJson: "{}", sessionId: "sess-3" });
    expect(out.result).toBeUndefined();
    expect(out.approval?.key).toBe("cache_flush");
    expect(out.approval?.requesterUserId).toBe("0");
    expect(JSON.parse(out.content)).toMatchObject({ success: false, pending_approval: { id: out.approval!.id } });
    expect(flushed).toBe(0);
  });
});

describe("CallTool refusals before the call", () => {
  it("refuses joining another user's agent session, and an unknown playbook; both audited", async () => {
    const owner = await makeUser(m, "sam", "operator");
    const sessionId = "ses_e2e_owned_by_sam";
    await m.database.db.execute(`insert into agent_sessions (id, created_at, updated_at, user_id, input_text, status) values ('${sessionId}', now(), now(), 'sam', 'x', 'done')` as never);
    const other = agent(await makeUser(m, "tess", "operator"));
    let err = await refusal(other.callTool({ name: "host_load", argumentsJson: JSON.stringify({ edge_id: "tools-edge" }), sessionId }));
    expect(err.code).toBe(Code.PermissionDenied);
    expect(err.rawMessage).toContain("is another user's agent session (rule: owner)");
    expect(await lastRow()).toMatchObject({ toolName: "host_load", callerRole: "system", decision: "" });
    expect((await lastRow()).error).toContain("another user's agent session");
    // The owner may.
    expect((await agent(owner).callTool({ name: "host_load", argumentsJson: JSON.stringify({ edge_id: "tools-edge" }), sessionId })).result?.success).toBe(true);
    err = await refusal(other.callTool({ name: "host_load", argumentsJson: "{}", playbook: "no_such_playbook" }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect((await lastRow()).error).toContain('playbook: "no_such_playbook" is not a loaded playbook');
  });
});

describe("approvals of the agent's calls", () => {
  it("the user whose session asked cannot approve the agent's call; another approver can, and it runs", async () => {
    const alice = await makeUser(m, "alice", "approver");
    // Made before the request: an approver created after it does not count (separation of duties).
    const bob = await makeUser(m, "bob", "approver");
    const out = await agent(alice).callTool({ name: "cache_flush", argumentsJson: "{}", sessionId: "sess-4" });
    const id = out.approval!.id;
    const approvals = (token: string) => createClient(ApprovalService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(token)] }));
    const err = await refusal(approvals(alice).approve({ id }));
    expect(err.code).toBe(Code.PermissionDenied);
    expect(err.rawMessage).toContain('"alice" started the agent session that requested');
    // She still sees it (it is her session's request).
    expect((await approvals(alice).getApproval({ id })).approval?.id).toBe(id);
    const before = flushed;
    await approvals(bob).approve({ id });
    expect(await waitFor(async () => (await approvals(alice).getApproval({ id })).approval!.state === ApprovalState.EXECUTED, 20_000)).toBe(true);
    expect(flushed).toBe(before + 1);
  });
});
