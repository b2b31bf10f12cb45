/**
 * tools/call (M1): every call goes through the dispatcher (gate, approval, reach, credentials,
 * redaction, audit) via the LLM bridge, as AgentService.CallTool's do. A tool failure is a
 * result with isError (the model reads it); the envelope is the structuredContent and its text
 * rendering the content. A call that parks answers a structured pending result, after waiting up
 * to mcp.approval_wait with progress notifications; approval_status looks it up later.
 */
import type { CreateTaskResult } from "@modelcontextprotocol/sdk/experimental/tasks";
import type { RequestTaskStore } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { ErrorCode, McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { canonicalJson } from "../../../skill/canonical.ts";
import { OngridError } from "../../../skill/errors.ts";
import { redact } from "../../../skill/redact.ts";
import type { ResultEnvelope } from "../../../skill/types.ts";
import { callTool, systemCaller, type ToolCallOutput } from "../../agent/bridge/call.ts";
import type { BridgedTool } from "../../agent/bridge/tools.ts";
import type { ApprovalStore } from "../../calls/approvals/store.ts";
import { canSee } from "../../calls/approvals/workflow.ts";
import type { Dispatcher } from "../../calls/execute.ts";
import type { ApprovalRow } from "../../db/schema/index.ts";
import type { Caller } from "../../identity/caller.ts";
import { APPROVAL_STATUS_TOOL, mayBeDangerous, SOP_ARG } from "./tool-view.ts";

/** How long an identical safe call's result is reused within a session. */
export const DEDUPE_FRESH_MS = 5 * 60_000;
/** Results a session keeps for dedupe at most (oldest dropped first). */
const DEDUPE_MAX = 256;
/** Progress notifications while a parked call is waited on: one each this often. */
const PROGRESS_EVERY_MS = 5_000;

/** What a call needs of the manager. */
export interface McpCallDeps {
  dispatcher: Pick<Dispatcher, "execute" | "refuse">;
  approvals: Pick<ApprovalStore, "get" | "waitFinal">;
  /** mcp.approval_wait in ms (0: answer pending at once). */
  approvalWaitMs: number;
  /** Withdraws a parked request as its requester (a cancelled task's call must not run later). */
  withdraw(user: Caller, approvalId: string, reason: string): Promise<unknown>;
}

/** The request's side of a call: who, in which MCP session, with which progress token and signal. */
export interface McpCallContext {
  user: Caller;
  sessionId: string;
  /** The client's "name/version" from initialize, recorded in the audit row ("" when it gave none). */
  client?: string;
  offered: ReadonlyMap<string, BridgedTool>;
  signal: AbortSignal;
  /** Sends a progress notification when the client asked for them (a progressToken). */
  progress?: (progress: number, message: string) => Promise<void>;
}

/** The envelope as text for clients that read only `content`. */
export function envelopeText(e: ResultEnvelope & { audit_seq?: number; deduplicated?: boolean }): string {
  const where = e.edge_id ? ` on ${e.edge_id}` : "";
  const head = e.success ? `ok${where} (${e.duration_ms} ms, audit row ${e.audit_seq ?? 0})` : `FAILED${where}: ${e.error?.code}: ${e.error?.message}${e.error?.hint ? `\nhint: ${e.error.hint}` : ""}`;
  const body = e.output === undefined || e.output === null ? "" : `\n${typeof e.output === "string" ? e.output : JSON.stringify(e.output, null, 2)}`;
  return `${head}${e.deduplicated ? "\n[answered from an identical earlier call in this session]" : ""}${e.truncated ? "\n[output truncated]" : ""}${body}`;
}

/** A pending approval as the structured result a client reads. */
export function pendingResult(a: ApprovalRow, auditSeq: number, waitedMs: number): CallToolResult {
  const pending = {
    id: a.id,
    state: a.state,
    required_approvals: a.requiredApprovals,
    approvals: a.votes.length,
    expires_at: a.expiresAt.toISOString(),
    approve_with: `ongrid approvals approve ${a.id}`,
  };
  const text =
    `PENDING APPROVAL ${a.id}: the call has not run. It needs ${a.requiredApprovals} approver(s) other than you` +
    `${waitedMs ? ` (waited ${Math.round(waitedMs / 1000)} s)` : ""}; it expires at ${pending.expires_at}. ` +
    `An approver runs \`${pending.approve_with}\` (or uses the console's /approvals); call ${APPROVAL_STATUS_TOOL} with approval_id "${a.id}" to see what became of it.`;
  return { content: [{ type: "text", text }], structuredContent: { success: false, pending_approval: pending, audit_seq: auditSeq }, isError: false };
}

/** The result for a finished envelope. */
export function envelopeResult(e: ResultEnvelope, auditSeq: number, deduplicated = false): CallToolResult {
  const structured = { ...e, audit_seq: auditSeq, ...(deduplicated ? { deduplicated: true } : {}) };
  return { content: [{ type: "text", text: envelopeText(structured) }], structuredContent: structured as unknown as Record<string, unknown>, isError: !e.success };
}

/** What became of an approval request, for approval_status. */
export function approvalStatusResult(a: ApprovalRow): CallToolResult {
  const status = {
    id: a.id,
    state: a.state,
    skill: a.skillKey,
    edge_id: a.edgeId,
    params: redact(a.params),
    required_approvals: a.requiredApprovals,
    approved_by: a.votes.map((v) => v.userId),
    denied_by: a.deniedBy,
    reason: a.reason,
    expires_at: a.expiresAt.toISOString(),
    ...(a.result ? { result: a.result } : {}),
  };
  const r = a.result as ResultEnvelope | undefined;
  const text = `${a.id}: ${a.state} (${a.skillKey}${a.edgeId ? ` on ${a.edgeId}` : ""})${a.deniedBy ? `, denied by ${a.deniedBy}` : ""}${a.reason ? `: ${a.reason}` : ""}${r ? `\n${envelopeText(r)}` : ""}`;
  return { content: [{ type: "text", text }], structuredContent: { success: a.state === "executed" && Boolean(r?.success), approval: status }, isError: a.state === "denied" || a.state === "expired" || a.state === "failed" || (a.state === "executed" && r?.success === false) };
}

/** A tool failure the model reads (not a protocol error). */
function failure(code: string, message: string, hint = ""): CallToolResult {
  return envelopeResult({ success: false, output: null, error: { code, message, hint }, duration_ms: 0, truncated: false, edge_id: "" }, 0);
}

/** The result of a parked call that ended: its envelope once it ran, else what became of the request. */
function finalResult(end: ApprovalRow): CallToolResult {
  if (end.state === "executed" && end.result) return envelopeResult(end.result as ResultEnvelope, end.executionAuditSeq);
  return approvalStatusResult(end);
}

/** The first line of a result's text, short, for a task's status message. */
function textOf(r: CallToolResult): string {
  const t = r.content.find((c) => c.type === "text");
  return t && t.type === "text" ? t.text.split("\n")[0]!.slice(0, 300) : "";
}

/** The session's task store as a call needs it. */
export interface TaskHandle {
  store: Pick<RequestTaskStore, "createTask" | "updateTaskStatus" | "storeTaskResult">;
  /** The signal that stops the task's work; aborted with "cancelled" (tasks/cancel) or "closed" (the session ended). */
  signalFor(taskId: string): AbortSignal;
  forget(taskId: string): void;
}

/** Creates the call handler of one MCP session (it holds the session's dedupe memory). */
export function createMcpCaller(deps: McpCallDeps) {
  const seen = new Map<string, { out: ToolCallOutput; at: number }>();

  async function approvalStatus(ctx: McpCallContext, args: Record<string, unknown>): Promise<CallToolResult> {
    const id = typeof args.approval_id === "string" ? args.approval_id : "";
    if (!/^apr_[0-9a-f]{16}$/.test(id)) return failure("invalid_argument", 'param "approval_id": must match ^apr_[0-9a-f]{16}$ (rule: pattern)', "pass the id from the call's pending_approval.id");
    const row = await deps.approvals.get(id);
    // A request the caller may not see answers as one that does not exist.
    if (!row || !canSee(ctx.user, row)) return failure("not_found", `no approval request "${id}" that you can see`, "pass the id from one of your own calls' pending_approval");
    return approvalStatusResult(row);
  }

  /** Waits for a parked call up to the configured time, with progress; the final row, or undefined when still pending. */
  async function waitBounded(ctx: McpCallContext, a: ApprovalRow): Promise<ApprovalRow | undefined> {
    if (deps.approvalWaitMs <= 0) return undefined;
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    const t0 = Date.now();
    const timer = setTimeout(() => stop.abort(), deps.approvalWaitMs);
    const tick = setInterval(() => {
      const s = Math.round((Date.now() - t0) / 1000);
      void ctx.progress?.(s, `waiting for approval of ${a.id} (${s} s of ${Math.round(deps.approvalWaitMs / 1000)} s)`).catch(() => undefined);
    }, PROGRESS_EVERY_MS);
    try {
      await ctx.progress?.(0, `waiting for approval of ${a.id}`).catch(() => undefined);
      return await deps.approvals.waitFinal(a.id, stop.signal);
    } catch (err) {
      if (err instanceof OngridError && err.code === "cancelled") return undefined;
      throw err;
    } finally {
      clearTimeout(timer);
      clearInterval(tick);
      ctx.signal.removeEventListener("abort", onAbort);
    }
  }

  /** What a call came to at once: a result, or a request parked for approval. */
  type Dispatched = { result: CallToolResult } | { parked: ApprovalRow; auditSeq: number };

  /** Runs one call through the gate; a tool not offered is audited, then a protocol error. */
  async function dispatch(ctx: McpCallContext, name: string, args: Record<string, unknown> | undefined): Promise<Dispatched> {
    const params = args ?? {};
    if (name === APPROVAL_STATUS_TOOL) return { result: await approvalStatus(ctx, params) };
    const tool = ctx.offered.get(name);
    if (!tool) {
      // Audited like any refused call, then answered as the SDK does for a tool it does not have.
      const refused = await callTool(deps.dispatcher, ctx.user, ctx.offered, { name, argumentsJson: JSON.stringify(params), sessionId: ctx.sessionId, client: ctx.client, signal: ctx.signal });
      throw new McpError(ErrorCode.InvalidParams, `Tool ${name.slice(0, 64)} not found: ${refused.result?.error?.message ?? "not offered"} (tools/list shows the tools you may call)`);
    }
    const dedupe = tool.skill.meta.class === "safe" && !tool.skill.meta.dynamicRisk ? `${name}\u0000${canonicalJson(params)}` : undefined;
    const earlier = dedupe ? seen.get(dedupe) : undefined;
    if (earlier && Date.now() - earlier.at < DEDUPE_FRESH_MS) return { result: envelopeResult(earlier.out.result!, earlier.out.auditSeq, true) };
    // The SOP rides beside the params of a possibly dangerous skill; it is not one of its params.
    let rest = params;
    let sop: unknown;
    if (mayBeDangerous(tool.skill)) ({ [SOP_ARG]: sop, ...rest } = params);
    const out = await callTool(deps.dispatcher, ctx.user, ctx.offered, { name, argumentsJson: JSON.stringify(rest), sessionId: ctx.sessionId, client: ctx.client, signal: ctx.signal, waitForApproval: false, ...(typeof sop === "string" ? { sop } : {}) });
    if (out.approval && !out.result) return { parked: out.approval, auditSeq: out.auditSeq };
    if (dedupe && out.result?.success) {
      if (seen.size >= DEDUPE_MAX) seen.delete(seen.keys().next().value!);
      seen.set(dedupe, { out, at: Date.now() });
    }
    return { result: envelopeResult(out.result!, out.auditSeq) };
  }

  /** Answers one tools/call. */
  async function call(ctx: McpCallContext, name: string, args: Record<string, unknown> | undefined): Promise<CallToolResult> {
    const d = await dispatch(ctx, name, args);
    if ("result" in d) return d.result;
    const t0 = Date.now();
    const end = await waitBounded(ctx, d.parked);
    if (!end) return pendingResult((await deps.approvals.get(d.parked.id)) ?? d.parked, d.auditSeq, Date.now() - t0);
    return finalResult(end);
  }

  /**
   * Answers a tools/call sent with `task`: the task at once, the call in the background. A tool
   * not offered is refused before any task is made (as without `task`).
   */
  async function startTask(ctx: McpCallContext, name: string, args: Record<string, unknown> | undefined, tasks: TaskHandle): Promise<CreateTaskResult> {
    if (name !== APPROVAL_STATUS_TOOL && !ctx.offered.has(name)) await dispatch(ctx, name, args);
    const task = await tasks.store.createTask({});
    const signal = tasks.signalFor(task.taskId);
    void runTask({ ...ctx, signal, progress: undefined }, task.taskId, name, args, tasks).finally(() => tasks.forget(task.taskId));
    return { task };
  }

  /** A task's work: the call, then (when it parked) the approval's end; the task ends with the result. */
  async function runTask(ctx: McpCallContext, taskId: string, name: string, args: Record<string, unknown> | undefined, tasks: TaskHandle): Promise<void> {
    let result: CallToolResult;
    let why = "";
    try {
      const d = await dispatch(ctx, name, args);
      if ("result" in d) result = d.result;
      else {
        const a = d.parked;
        await tasks.store.updateTaskStatus(taskId, "working", `waiting for approval ${a.id}: it needs ${a.requiredApprovals} approver(s) other than you and expires at ${a.expiresAt.toISOString()}; an approver runs \`ongrid approvals approve ${a.id}\``);
        let end: ApprovalRow;
        try {
          end = await deps.approvals.waitFinal(a.id, ctx.signal);
        } catch (err) {
          // The client cancelled its task: the request is withdrawn, so the call never runs.
          if (ctx.signal.reason === "cancelled") await deps.withdraw(ctx.user, a.id, "withdrawn: the MCP client cancelled its task").catch(() => undefined);
          if (ctx.signal.aborted) return;
          throw err;
        }
        result = finalResult(end);
        why = end.state === "executed" ? "" : `${a.id} ${end.state}${end.deniedBy ? ` by ${end.deniedBy}` : ""}${end.reason ? `: ${end.reason}` : ""}`;
      }
    } catch (err) {
      if (ctx.signal.aborted) return;
      const e = err instanceof McpError ? new OngridError("invalid_argument", err.message) : err instanceof OngridError ? err : new OngridError("internal", "internal error while running the call; see the manager log");
      result = failure(e.code, e.message, e.hint);
    }
    if (ctx.signal.aborted) return;
    try {
      // The reason a task failed is its status message; the result tells the rest.
      if (result.isError) await tasks.store.updateTaskStatus(taskId, "working", why || textOf(result));
      await tasks.store.storeTaskResult(taskId, result.isError ? "failed" : "completed", result);
    } catch {
      // The session ended or the task was cancelled meanwhile: nobody is left to tell.
    }
  }

  return { call, startTask };
}

/** The caller an MCP call runs as: the LLM runtime acting for the token's user (G1), as AgentService.CallTool. */
export const mcpCaller = systemCaller;
