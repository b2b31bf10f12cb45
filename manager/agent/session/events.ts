/** What a diagnosis session tells its caller, in order, and the bounds it runs within. */
import type { EvidenceItem } from "./evidence.ts";
import { ModelError, type ModelUsage } from "../llm.ts";
import type { RouteDecision } from "../router/router.ts";
import type { ToolListMode } from "../bridge/tools.ts";

/** One event of a session, in order. */
export type AgentEvent =
  | { type: "session"; sessionId: string }
  | { type: "route"; decision: RouteDecision }
  | { type: "plan"; source: "planner" | "fallback_plan" | "fallback_steps" | "replan"; steps: string[]; reason: string }
  | { type: "tool_call"; step: number; tool: string; args: unknown }
  | { type: "tool_result"; step: number; tool: string; success: boolean; content: string; deduped: boolean; auditSeq: number; pendingApproval?: string }
  | { type: "guidance"; tool: string; args: unknown; success: boolean; content: string; auditSeq: number }
  | { type: "skipped"; tool: string; reason: string }
  | { type: "report"; path: "model" | "fallback"; markdown: string }
  | { type: "verdict"; verdict: string; unsupported: string[]; notes: string }
  | { type: "done"; status: "done" | "failed" | "refused" | "cancelled"; message: string; usage: ModelUsage; stoppedBy?: string };

/** Bounds of one session (config agent.*). */
export interface AgentLimits {
  maxSteps: number;
  maxDurationMs: number;
  /** How the executor lists its tools (agent.tool_list, whose default is on_demand); unset: full. */
  toolList?: ToolListMode;
}

/** A guidance event (read_skill): audited like any call, but not evidence and not a numbered step. */
export function guidanceEvent(item: EvidenceItem): AgentEvent {
  return { type: "guidance", tool: item.tool, args: item.args, success: item.success, content: item.content, auditSeq: item.auditSeq };
}

/** A tool_result event from an evidence item. */
export function toolResultEvent(item: EvidenceItem): AgentEvent {
  return { type: "tool_result", step: item.step, tool: item.tool, success: item.success, content: item.content, deduped: item.deduped, auditSeq: item.auditSeq, ...(item.pendingApproval ? { pendingApproval: item.pendingApproval } : {}) };
}

/** Why a model call failed, as plan and verdict events name it: the failure class, else the message. */
export function failureOf(err: unknown): string {
  return err instanceof ModelError ? err.failure : err instanceof Error ? err.message : String(err);
}
