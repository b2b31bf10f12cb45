/**
 * ongrid as an MCP server (M1), driven by the official SDK client over streamable HTTP against a
 * real manager and a compiled edge: the caller's gated list, calls through the gate with their
 * audit rows, failures as isError, a parked call and its approval, list_changed when an edge
 * connects, playbooks as prompts and resources, and the endpoint's own refusals.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, McpError, ToolListChangedNotificationSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApprovalService } from "../proto/gen/ongrid/v1/approval_service_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, waitFor, type TestEdge } from "./support/edge.ts";
import { bearer, makeUser } from "./support/auth.ts";

let m: TestManager;
const edges: TestEdge[] = [];
let dir: string;
const open: Client[] = [];

async function connect(token: string, name = "ongrid-test"): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${m.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  const client = new Client({ name, version: "1.2.3" });
  await client.connect(transport);
  open.push(client);
  return { client, transport };
}

const structured = (r: unknown) => (r as CallToolResult).structuredContent as Record<string, any>;
const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ongrid-mcp-"));
  m = await bootManager();
  edges.push(await startEdge(m, "mcp-edge"));
}, 60_000);
afterAll(async () => {
  for (const c of open) await c.close().catch(() => undefined);
  for (const e of edges) await e.stop();
  await m?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("MCP server over streamable HTTP", () => {
  it("lists the caller's gated tools with schemas, edge ids and annotations", async () => {
    const { client } = await connect(await makeUser(m, "op-list", "operator"));
    expect(client.getServerVersion()?.name).toBe("ongrid");
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    const load = byName.get("host_load")!;
    expect(load.inputSchema.required?.[0]).toBe("edge_id");
    expect((load.inputSchema.properties as any).edge_id.enum).toEqual(["mcp-edge"]);
    expect(load.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    expect(load.outputSchema?.properties).toHaveProperty("success");
    expect(byName.get("restart_service")?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(byName.get("restart_service")?.description).toMatch(/park for human approval/);
    expect(byName.get("web_search")?.annotations?.openWorldHint).toBe(true);
    expect(byName.has("approval_status")).toBe(true);
    // The guardrail's high-risk tool is denied in NORMAL: never listed.
    expect(byName.has("kubernetes_action")).toBe(false);
  });

  it("a viewer's list lacks every tool that is not safe", async () => {
    const { client } = await connect(await makeUser(m, "viewer-list", "viewer"));
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain("host_load");
    expect(names).not.toContain("restart_service");
    expect(names).not.toContain("exec");
  });

  it("runs a call through the gate with one audit row in the MCP session, and answers an identical safe call from the first", async () => {
    const { client, transport } = await connect(await makeUser(m, "op-call", "operator"), "claude-code");
    const first = await client.callTool({ name: "host_load", arguments: { edge_id: "mcp-edge" } });
    expect(first.isError).toBe(false);
    expect(structured(first)).toMatchObject({ success: true, edge_id: "mcp-edge" });
    expect(structured(first).output).toHaveProperty("loadavg");
    expect(text(first)).toMatch(/^ok on mcp-edge/);
    await m.audit.flush();
    let rows = await m.audit.list({ sessionId: transport.sessionId! });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ toolName: "host_load", deviceId: "mcp-edge", decision: "allow", callerUserId: "0", onBehalfOf: "op-call", client: "claude-code/1.2.3", seq: structured(first).audit_seq });
    expect((await m.audit.verify()).ok).toBe(true);
    const again = await client.callTool({ name: "host_load", arguments: { edge_id: "mcp-edge" } });
    expect(structured(again)).toMatchObject({ success: true, deduplicated: true, audit_seq: structured(first).audit_seq });
    await m.audit.flush();
    rows = await m.audit.list({ sessionId: transport.sessionId! });
    expect(rows).toHaveLength(1);
  });

  it("answers failures as tool errors the model reads: bad params name the field, a failing command shows its exit status, an unknown tool is a protocol error and audited", async () => {
    const { client, transport } = await connect(await makeUser(m, "op-fail", "operator"));
    const bad = await client.callTool({ name: "host_processes", arguments: { edge_id: "mcp-edge", limit: "many" } });
    expect(bad.isError).toBe(true);
    expect(structured(bad).error.code).toBe("invalid_argument");
    expect(text(bad)).toMatch(/param "limit"/);
    const failed = await client.callTool({ name: "exec", arguments: { edge_id: "mcp-edge", command: "ls /nonexistent-mcp-dir" } });
    expect(failed.isError).toBe(true);
    expect(structured(failed).error.code).toBe("exit_status");
    expect(structured(failed).output.exit_code).toBe(2);
    const unknown = await client.callTool({ name: "no_such_tool", arguments: {} }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(McpError);
    expect((unknown as McpError).message).toMatch(/Tool no_such_tool not found/);
    await m.audit.flush();
    const rows = await m.audit.list({ sessionId: transport.sessionId! });
    const by = (tool: string) => rows.find((r) => r.toolName === tool);
    expect(by("host_processes")?.error).toMatch(/^invalid_argument: .*param "limit"/);
    expect(by("exec")).toMatchObject({ decision: "allow", deviceId: "mcp-edge" });
    expect(by("exec")?.error).toMatch(/^exit_status: /);
    expect(by("no_such_tool")?.error).toMatch(/^permission_denied: tool "no_such_tool" was not offered/);
    expect(rows).toHaveLength(3);
  });

  it("parks a mutating call: a structured pending result, approval_status before and after an approver approves", async () => {
    const target = join(dir, "approved-over-mcp");
    const approver = await makeUser(m, "mcp-approver", "approver");
    const { client } = await connect(await makeUser(m, "op-park", "operator"));
    const parked = await client.callTool({ name: "exec", arguments: { edge_id: "mcp-edge", command: `touch ${target}` } });
    expect(parked.isError).toBe(false);
    const pending = structured(parked).pending_approval;
    expect(pending.id).toMatch(/^apr_[0-9a-f]{16}$/);
    expect(pending.required_approvals).toBe(1);
    expect(text(parked)).toMatch(/PENDING APPROVAL apr_.*has not run/);
    expect(existsSync(target)).toBe(false);
    let status = await client.callTool({ name: "approval_status", arguments: { approval_id: pending.id } });
    expect(structured(status).approval.state).toBe("pending");
    const t = createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(approver)] });
    await createClient(ApprovalService, t).approve({ id: pending.id });
    expect(await waitFor(() => existsSync(target), 15_000)).toBe(true);
    expect(
      await waitFor(async () => {
        status = await client.callTool({ name: "approval_status", arguments: { approval_id: pending.id } });
        return structured(status).approval.state === "executed";
      }, 15_000),
    ).toBe(true);
    expect(structured(status).success).toBe(true);
    expect(status.isError).toBe(false);
    // Both rows, the request and the run its approval released, name the MCP client that asked.
    await m.audit.flush();
    const rows = (await m.audit.list({ toolName: "exec" })).filter((r) => r.approvalId === pending.id);
    expect(rows.map((r) => [r.decision, r.client])).toEqual([["ask", "ongrid-test/1.2.3"], ["allow", "ongrid-test/1.2.3"]]);
    // Another operator cannot look at it: answered as if it did not exist.
    const other = (await connect(await makeUser(m, "op-other", "operator"))).client;
    const hidden = await other.callTool({ name: "approval_status", arguments: { approval_id: pending.id } });
    expect(hidden.isError).toBe(true);
    expect(structured(hidden).error.code).toBe("not_found");
  });

  it("MCP tasks: a parked call's task completes when an approver approves, fails when one denies, and cancelling it withdraws the request", async () => {
    const approver = await makeUser(m, "task-approver", "approver");
    const approvals = createClient(ApprovalService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(approver)] }));
    const { client } = await connect(await makeUser(m, "op-task", "operator"), "task-client");
    const exec = (target: string) => client.experimental.tasks.callToolStream({ name: "exec", arguments: { edge_id: "mcp-edge", command: `touch ${target}` } }, undefined, { task: { ttl: 60_000 } });
    /** Starts a task-augmented call; resolves once it is parked, with its task id and approval id. */
    async function parked(target: string) {
      const stream = exec(target);
      const first = await stream.next();
      expect(first.value).toMatchObject({ type: "taskCreated", task: { status: "working" } });
      const taskId = (first.value as { task: { taskId: string } }).task.taskId;
      let approvalId = "";
      expect(
        await waitFor(async () => {
          const t = await client.experimental.tasks.getTask(taskId);
          approvalId = /waiting for approval (apr_[0-9a-f]{16})/.exec(t.statusMessage ?? "")?.[1] ?? "";
          return approvalId !== "";
        }, 15_000),
      ).toBe(true);
      return { stream, taskId, approvalId };
    }
    // Approved: the task completes with the envelope of the run the approval released.
    const ran = join(dir, "task-approved");
    const a = await parked(ran);
    expect(existsSync(ran)).toBe(false);
    expect((await client.experimental.tasks.getTask(a.taskId)).status).toBe("working");
    await approvals.approve({ id: a.approvalId });
    let last: any;
    for await (const msg of a.stream) last = msg;
    expect(last.type).toBe("result");
    expect(last.result.isError).toBe(false);
    expect(last.result.structuredContent).toMatchObject({ success: true, edge_id: "mcp-edge" });
    expect(existsSync(ran)).toBe(true);
    expect((await client.experimental.tasks.getTask(a.taskId)).status).toBe("completed");
    // Denied: the task fails; its status message and its result say who denied it.
    const denied = join(dir, "task-denied");
    const d = await parked(denied);
    await approvals.deny({ id: d.approvalId, reason: "not during the freeze" });
    for await (const msg of d.stream) last = msg;
    expect(last.type).toBe("error");
    const failedTask = await client.experimental.tasks.getTask(d.taskId);
    expect(failedTask.status).toBe("failed");
    expect(failedTask.statusMessage).toMatch(new RegExp(`${d.approvalId} denied by task-approver: not during the freeze`));
    const failedResult = (await client.experimental.tasks.getTaskResult(d.taskId, CallToolResultSchema)) as CallToolResult;
    expect(failedResult.isError).toBe(true);
    expect(structured(failedResult).approval).toMatchObject({ id: d.approvalId, state: "denied", denied_by: "task-approver" });
    expect(existsSync(denied)).toBe(false);
    // Cancelled: the request is withdrawn, so no approver can release it afterwards.
    const withdrawn = join(dir, "task-cancelled");
    const c = await parked(withdrawn);
    expect((await client.experimental.tasks.cancelTask(c.taskId)).status).toBe("cancelled");
    expect(await waitFor(async () => /the MCP client cancelled its task/.test((await approvals.getApproval({ id: c.approvalId })).approval?.reason ?? ""), 15_000)).toBe(true);
    await expect(approvals.approve({ id: c.approvalId })).rejects.toThrow(/already denied/);
    expect(existsSync(withdrawn)).toBe(false);
    // A safe call sent as a task completes with its envelope; the task list shows the session's tasks only.
    const safe = client.experimental.tasks.callToolStream({ name: "host_load", arguments: { edge_id: "mcp-edge" } }, undefined, { task: { ttl: 60_000 } });
    for await (const msg of safe) last = msg;
    expect(last.type).toBe("result");
    expect(last.result.structuredContent).toMatchObject({ success: true });
    expect((await client.experimental.tasks.listTasks()).tasks.map((t) => t.status).sort()).toEqual(["cancelled", "completed", "completed", "failed"]);
    const other = (await connect(await makeUser(m, "op-task-other", "operator"))).client;
    expect((await other.experimental.tasks.listTasks()).tasks).toEqual([]);
    await expect(other.experimental.tasks.getTask(a.taskId)).rejects.toThrow(/not found/i);
    // The audit holds each call once: ask rows for the three parked calls, the approved run, the denial and the withdrawal.
    await m.audit.flush();
    const rows = (await m.audit.list({ toolName: "exec" })).filter((r) => [a.approvalId, d.approvalId, c.approvalId].includes(r.approvalId));
    expect(rows.map((r) => `${r.approvalId === a.approvalId ? "a" : r.approvalId === d.approvalId ? "d" : "c"}:${r.decision}`).sort()).toEqual(["a:allow", "a:ask", "c:ask", "c:deny", "d:ask", "d:deny"]);
    expect(rows.filter((r) => r.decision === "ask").every((r) => r.client === "task-client/1.2.3")).toBe(true);
  });

  it("tells the client its tool list changed when an edge connects, and lists the new edge", async () => {
    const { client } = await connect(await makeUser(m, "op-changes", "operator"));
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changed++;
    });
    await client.listTools();
    edges.push(await startEdge(m, "mcp-edge-2"));
    expect(await waitFor(() => changed > 0, 15_000)).toBe(true);
    const load = (await client.listTools()).tools.find((t) => t.name === "host_load")!;
    expect((load.inputSchema.properties as any).edge_id.enum).toEqual(["mcp-edge", "mcp-edge-2"]);
  });

  it("serves the playbooks as prompts and resources", async () => {
    const { client } = await connect(await makeUser(m, "viewer-pb", "viewer"));
    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toContain("generic_oncall");
    const got = await client.getPrompt({ name: "host_resource_diagnosis", arguments: { incident: "disk full", edge_id: "mcp-edge" } });
    const body = (got.messages[0]!.content as { text: string }).text;
    expect(body).toMatch(/^Diagnose this incident on edge mcp-edge: disk full/);
    expect(body).toMatch(/Allowed tools: .*`host_files`/);
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toContain("ongrid://playbooks/network_diagnosis");
    const read = await client.readResource({ uri: "ongrid://playbooks/network_diagnosis" });
    expect((read.contents[0] as { text: string }).text).toMatch(/^# .*\(network_diagnosis\)/);
    await expect(client.getPrompt({ name: "no_such_playbook" })).rejects.toThrow(/unknown playbook/);
  });

  it("refuses what the endpoint must: no token (401, audited), a foreign Origin, another user's session id", async () => {
    const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "curl", version: "0" } } };
    const post = (headers: Record<string, string>) =>
      fetch(`${m.url}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }, body: JSON.stringify(init) });
    let res = await post({});
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    const token = await makeUser(m, "op-refuse", "operator");
    res = await post({ authorization: `Bearer ${token}`, origin: "http://evil.example" });
    expect(res.status).toBe(403);
    res = await post({ authorization: `Bearer ${token}`, origin: m.url });
    expect(res.status).toBe(200);
    const { transport } = await connect(await makeUser(m, "op-owner", "operator"));
    res = await fetch(`${m.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${token}`, "mcp-session-id": transport.sessionId!, "mcp-protocol-version": "2025-11-25" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
    });
    expect(res.status).toBe(404);
    await m.audit.flush();
    const refusals = await m.audit.list({ toolName: "mcp" });
    expect(refusals.some((r) => r.decision === "deny" && /unauthenticated/.test(r.decisionReason ?? ""))).toBe(true);
  });
});

describe("MCP server with mcp.approval_wait", () => {
  let w: TestManager;
  let edge: TestEdge;
  beforeAll(async () => {
    w = await bootManager({ "mcp.approval_wait": "60s" });
    edge = await startEdge(w, "wait-edge");
  }, 60_000);
  afterAll(async () => {
    await edge?.stop();
    await w?.stop();
  });

  it("a parked call waits with progress notifications and answers the executed result once an approver approves", async () => {
    const target = join(dir, "approved-while-waiting");
    const approver = await makeUser(w, "wait-approver", "approver");
    const transport = new StreamableHTTPClientTransport(new URL(`${w.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${await makeUser(w, "wait-op", "operator")}` } } });
    const client = new Client({ name: "wait-test", version: "1" });
    await client.connect(transport);
    const progress: string[] = [];
    const call = client.callTool({ name: "exec", arguments: { edge_id: "wait-edge", command: `touch ${target}` } }, undefined, {
      onprogress: (p) => void progress.push(p.message ?? ""),
      timeout: 120_000,
    });
    const approvals = createClient(ApprovalService, createConnectTransport({ baseUrl: w.url, httpVersion: "1.1", interceptors: [bearer(approver)] }));
    let id = "";
    expect(
      await waitFor(async () => {
        id = (await approvals.listApprovals({ limit: 10 })).approvals.find((a) => a.key === "exec")?.id ?? "";
        return id !== "";
      }, 15_000),
    ).toBe(true);
    expect(await waitFor(() => progress.length > 0, 15_000)).toBe(true);
    expect(progress[0]).toMatch(new RegExp(`waiting for approval of ${id}`));
    await approvals.approve({ id });
    const r = (await call) as CallToolResult;
    expect(r.isError).toBe(false);
    expect(structured(r)).toMatchObject({ success: true, edge_id: "wait-edge" });
    expect(structured(r).pending_approval).toBeUndefined();
    expect(existsSync(target)).toBe(true);
    await client.close();
  });
});
