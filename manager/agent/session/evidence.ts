/**
 * The evidence a session gathered: every evidence tool call, its result as the model saw it, and
 * the dedupe of identical calls (J5: same key + edge + params within a session answers from the
 * first result, marked so). Guidance calls (read_skill, any tool of category "guidance") run
 * through the same gate and audit log but are kept apart (I4): they are never an evidence item,
 * never numbered [n], never counted as a tool call of the session, never cited.
 */
import { redact } from "../../../skill/redact.ts";
import { canonicalJson } from "../../../skill/canonical.ts";
import type { Dispatcher } from "../../calls/execute.ts";
import type { Caller } from "../../identity/caller.ts";
import type { PermissionMode } from "../../calls/gate.ts";
import { callTool, type ToolCallOutput } from "../bridge/call.ts";
import type { BridgedTool } from "../bridge/tools.ts";
import { isEvidenceTool } from "../../skills/builtin/read-skill.ts";

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
  /** A guidance call (read_skill): not evidence, no step number (0), never cited. */
  guidance?: true;
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
  const guidanceReads: EvidenceItem[] = [];
  const seen = new Map<string, EvidenceItem>();

  /** True when `name` is an offered guidance tool (read_skill): its result is not evidence. */
  const isGuidance = (name: string): boolean => {
    const meta = o.offered.get(name)?.skill.meta;
    return meta !== undefined && !isEvidenceTool(meta);
  };

  /**
   * Runs (or answers from an identical earlier call) one tool call given as name + JSON
   * arguments. An evidence call becomes the next numbered item; a guidance call is recorded
   * apart with step 0.
   */
  async function call(name: string, argumentsJson: string): Promise<EvidenceItem> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(argumentsJson || "{}");
    } catch {
      parsed = undefined;
    }
    const edgeId = parsed && typeof parsed === "object" && typeof (parsed as Record<string, unknown>).edge_id === "string" ? String((parsed as Record<string, unknown>).edge_id) : "";
    const key = parsed === undefined ? undefined : `${name}\u0000${canonicalJson(parsed)}`;
    const guidance = isGuidance(name);
    const earlier = key ? seen.get(key) : undefined;
    if (earlier && earlier.success && guidance) return earlier;
    if (earlier && earlier.success) {
      const item: EvidenceItem = { ...earlier, step: items.length + 1, deduped: true, content: `${earlier.content}\n[answered from step ${earlier.step}: an identical call (same tool, edge and params) in this session]` };
      items.push(item);
      return item;
    }
    const out: ToolCallOutput = await callTool(o.dispatcher, o.user, o.offered, { name, argumentsJson, sessionId: o.sessionId, mode: o.mode, playbook: o.playbook, signal: o.signal, waitForApproval: o.waitForApproval });
    // Guidance (read_skill's playbook) is read whole; evidence is condensed when long.
    const content = !guidance && out.content.length > CONDENSE_ABOVE_CHARS ? await o.condense(out.content) : out.content;
    const item: EvidenceItem = {
      step: guidance ? 0 : items.length + 1,
      tool: name,
      edgeId,
      // What the report and the console show: secrets masked (the call was made with them whole).
      args: redact(parsed !== undefined ? parsed : argumentsJson),
      success: Boolean(out.result?.success),
      content,
      auditSeq: out.auditSeq,
      deduped: false,
      ...(out.approval && !out.result ? { pendingApproval: out.approval.id } : {}),
      ...(guidance ? { guidance: true as const } : {}),
    };
    (guidance ? guidanceReads : items).push(item);
    if (key) seen.set(key, item);
    return item;
  }

  return {
    call,
    isGuidance,
    /** The evidence items, numbered from 1: what reports cite and the verifier reads. */
    items: () => items as readonly EvidenceItem[],
    /** The guidance calls (read_skill), apart from the evidence. */
    guidance: () => guidanceReads as readonly EvidenceItem[],
  };
}

/** The step numbers a report cites: [3], [1, 2], [2-4], [1][3]; bounded so that a hostile report cannot blow it up. */
export function citedSteps(report: string): Set<number> {
  const out = new Set<number>();
  for (const m of report.matchAll(/\[(\s*\d{1,4}\s*(?:[-–,]\s*\d{1,4}\s*){0,20})\]/g)) {
    for (const part of m[1].split(",")) {
      const [a, b] = part.split(/[-–]/).map((x) => Number(x.trim()));
      if (b === undefined) out.add(a);
      else for (let n = Math.min(a, b); n <= Math.max(a, b) && n - Math.min(a, b) < 100; n++) out.add(n);
    }
  }
  return out;
}

/** The evidence as the verifier and the report read it. */
export function evidenceText(items: readonly EvidenceItem[], maxPerItem = 1500): string {
  return items
    .map((e) => `[${e.step}] ${e.tool}${e.edgeId ? ` on ${e.edgeId}` : ""} ${e.success ? "ok" : "FAILED"}${e.deduped ? " (deduplicated)" : ""}\n${e.content.length > maxPerItem ? `${e.content.slice(0, maxPerItem)} …[cut]` : e.content}`)
    .join("\n\n");
}
