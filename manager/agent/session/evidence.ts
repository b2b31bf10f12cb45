/**
 * The evidence a session gathered: every tool call, its result as the model saw it, and the
 * dedupe of identical calls (J5: same key + edge + params within a session answers from the
 * first result, marked so).
 */
import { redact } from "../../../skill/redact.ts";
import { canonicalJson } from "../../../skill/canonical.ts";
import type { Dispatcher } from "../../calls/execute.ts";
import type { Caller } from "../../identity/caller.ts";
import type { PermissionMode } from "../../calls/gate.ts";
import { callTool, type ToolCallOutput } from "../bridge/call.ts";
import type { BridgedTool } from "../bridge/tools.ts";
import { GUIDANCE_CATEGORY } from "../../skills/builtin/read-skill.ts";

/** Tool outputs longer than this reach the model condensed. */
export const CONDENSE_ABOVE_CHARS = 4000;

/** One gathered piece of evidence. */
export interface EvidenceItem {
  step: number;
  tool: string;
  edgeId: string;
  /** The call's arguments as shown, secrets masked. */
  args: unknown;
  success: boolean;
  /** What the model was given (possibly condensed). */
  content: string;
  auditSeq: number;
  /** Answered from an earlier identical call. */
  deduped: boolean;
  pendingApproval?: string;
}

/** Condenses a long tool message; the identity when short. */
export type Condenser = (content: string) => string | Promise<string>;

/** Collects evidence for one session and runs its calls. */
export function createEvidence(o: {
  dispatcher: Pick<Dispatcher, "execute" | "refuse">;
  user: Caller;
  offered: ReadonlyMap<string, BridgedTool>;
  sessionId: string;
  mode?: PermissionMode;
  playbook?: string;
  condense: Condenser;
  signal?: AbortSignal;
  waitForApproval?: boolean;
}) {
  const items: EvidenceItem[] = [];
  const seen = new Map<string, EvidenceItem>();

  /** Runs (or answers from an identical earlier call) one tool call given as name + JSON arguments. */
  async function call(name: string, argumentsJson: string): Promise<EvidenceItem> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(argumentsJson || "{}");
    } catch {
      parsed = undefined;
    }
    const edgeId = parsed && typeof parsed === "object" && typeof (parsed as Record<string, unknown>).edge_id === "string" ? String((parsed as Record<string, unknown>).edge_id) : "";
    const key = parsed === undefined ? undefined : `${name}\u0000${canonicalJson(parsed)}`;
    const earlier = key ? seen.get(key) : undefined;
    if (earlier && earlier.success) {
      const item: EvidenceItem = { ...earlier, step: items.length + 1, deduped: true, content: `${earlier.content}\n[answered from step ${earlier.step}: an identical call (same tool, edge and params) in this session]` };
      items.push(item);
      return item;
    }
    const out: ToolCallOutput = await callTool(o.dispatcher, o.user, o.offered, { name, argumentsJson, sessionId: o.sessionId, mode: o.mode, playbook: o.playbook, signal: o.signal, waitForApproval: o.waitForApproval });
    // Guidance (read_skill's playbook) is read whole; evidence is condensed when long.
    const guidance = o.offered.get(name)?.skill.meta.category === GUIDANCE_CATEGORY;
    const content = !guidance && out.content.length > CONDENSE_ABOVE_CHARS ? await o.condense(out.content) : out.content;
    const item: EvidenceItem = {
      step: items.length + 1,
      tool: name,
      edgeId,
      // What the report and the console show: secrets masked (the call was made with them whole).
      args: redact(parsed !== undefined ? parsed : argumentsJson),
      success: Boolean(out.result?.success),
      content,
      auditSeq: out.auditSeq,
      deduped: false,
      ...(out.approval && !out.result ? { pendingApproval: out.approval.id } : {}),
    };
    items.push(item);
    if (key) seen.set(key, item);
    return item;
  }

  return { call, items: () => items as readonly EvidenceItem[] };
}

/** The evidence as the verifier and the report read it. */
export function evidenceText(items: readonly EvidenceItem[], maxPerItem = 1500): string {
  return items
    .map((e) => `[${e.step}] ${e.tool}${e.edgeId ? ` on ${e.edgeId}` : ""} ${e.success ? "ok" : "FAILED"}${e.deduped ? " (deduplicated)" : ""}\n${e.content.length > maxPerItem ? `${e.content.slice(0, maxPerItem)} …[cut]` : e.content}`)
    .join("\n\n");
}
