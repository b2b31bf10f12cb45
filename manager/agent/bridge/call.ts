/**
 * One tool call as a model produced it (J1): the LLM calls as user "0", role "system", on behalf
 * of the session's user, through the dispatcher (gate, approval, audit). A refusal is a result the
 * model reads, not an error: the model learns why and can change course.
 */
import { OngridError } from "../../../skill/errors.ts";
import type { ResultEnvelope } from "../../../skill/types.ts";
import type { ApprovalRow } from "../../db/schema/index.ts";
import { type Dispatcher } from "../../calls/execute.ts";
import { AuditedError } from "../../calls/types.ts";
import { type Caller } from "../../identity/caller.ts";
import type { PermissionMode } from "../../calls/gate.ts";
import type { BridgedTool } from "./tools.ts";

/** The LLM caller acting for a user (G1): audited as user "0", role "system". */
export function systemCaller(user: Caller): Caller {
  return { userId: "0", role: "system", reach: user.reach, onBehalfOf: user.userId, onBehalfRole: user.role };
}

/** One call. */
export interface ToolCallInput {
  name: string;
  argumentsJson: string;
  sessionId: string;
  mode?: PermissionMode;
  playbook?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** A call that needs approval waits until it ran (or was denied or expired, or the signal fired) instead of returning pending. */
  waitForApproval?: boolean;
  /** The signed SOP text a dangerous call needs (given by the caller, never made up). */
  sop?: string;
  /** The client program that made the call (an MCP client's "name/version"), for the audit row. */
  client?: string;
}

/** What comes back; `content` is what the model is given as the tool message. */
export interface ToolCallOutput {
  result?: ResultEnvelope;
  approval?: ApprovalRow;
  auditSeq: number;
  content: string;
}

/** A refusal as the envelope the model reads. */
function refusalEnvelope(err: OngridError, edgeId: string): ResultEnvelope {
  return { success: false, output: null, error: { code: err.code, message: err.message, hint: err.hint }, duration_ms: 0, truncated: false, edge_id: edgeId };
}

/** The tool message for a result: the envelope as JSON. */
export function toolContent(result: ResultEnvelope): string {
  return JSON.stringify({ success: result.success, ...(result.success ? { output: result.output } : { error: result.error }), ...(result.truncated ? { truncated: true } : {}) });
}

/**
 * Runs one call. `offered` is the session's tool list: a name not in it is refused (and audited)
 * before anything else, so a model cannot reach a tool it was not shown.
 */
export async function callTool(dispatcher: Pick<Dispatcher, "execute" | "refuse">, user: Caller, offered: ReadonlyMap<string, BridgedTool>, call: ToolCallInput): Promise<ToolCallOutput> {
  const caller = systemCaller(user);
  const tool = offered.get(call.name);
  let args: unknown;
  let edgeId: string | undefined;
  let paramsJson: string | undefined;
  try {
    args = call.argumentsJson.trim() === "" ? {} : JSON.parse(call.argumentsJson);
  } catch {
    // Handed on as text: the dispatcher refuses it naming the rule, and audits it.
    paramsJson = call.argumentsJson;
  }
  if (tool?.skill.meta.scope === "host" && args && typeof args === "object" && !Array.isArray(args)) {
    const { edge_id, ...rest } = args as Record<string, unknown>;
    edgeId = typeof edge_id === "string" ? edge_id : undefined;
    args = rest;
  }
  const input = { key: call.name, params: args, paramsJson, edgeId, sessionId: call.sessionId, caller, mode: call.mode, playbook: call.playbook, timeoutMs: call.timeoutMs, signal: call.signal, waitForApproval: Boolean(call.waitForApproval), ...(call.sop ? { sop: call.sop } : {}), ...(call.client ? { client: call.client } : {}) };
  try {
    if (!tool) {
      await dispatcher.refuse(
        input,
        new OngridError("permission_denied", `tool "${call.name.slice(0, 64)}" was not offered to this session`, "call only the tools in the list you were given"),
      );
    }
    const out = await dispatcher.execute(input);
    if (out.approval && !out.result) {
      const content = JSON.stringify({ success: false, pending_approval: { id: out.approval.id, state: out.approval.state, required_approvals: out.approval.requiredApprovals }, note: "the call waits for a human approver; it has not run" });
      return { approval: out.approval, auditSeq: out.auditSeq, content };
    }
    const result = out.result!;
    return { result, approval: out.approval, auditSeq: out.auditSeq, content: toolContent(result) };
  } catch (err) {
    if (!(err instanceof AuditedError)) throw err;
    const result = refusalEnvelope(err, edgeId ?? "");
    return { result, auditSeq: err.auditSeq, content: toolContent(result) };
  }
}
