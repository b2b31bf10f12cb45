/**
 * The report a session writes without a model (J3): Markdown that says what ran, summarises what
 * each step returned and links every step to its audit row, where the whole result is kept. It
 * invents nothing and draws no conclusion; the summary only shortens what the tool returned.
 */
import { redactString } from "../../../skill/redact.ts";
import type { Playbook } from "../../playbooks/parse.ts";
import type { RouteDecision } from "../router/router.ts";
import type { EvidenceItem } from "./evidence.ts";
import type { RecalledPage } from "../router/recall.ts";

/** How much of one result the report shows. */
const MAX_FIELDS = 12;
const MAX_TEXT_LINES = 10;
const MAX_ITEMS = 5;
const MAX_INLINE = 240;

/** One line of a value, cut to MAX_INLINE characters. */
function inline(v: unknown): string {
  const s = typeof v === "string" ? v : JSON.stringify(v) ?? String(v);
  const one = s.replace(/\s*\n\s*/g, " ⏎ ");
  return one.length > MAX_INLINE ? `${one.slice(0, MAX_INLINE)}…` : one;
}

/** The longest run of backticks in a text (0 when none): a fence must be longer to hold it. */
function longestBacktickRun(s: string): number {
  return Math.max(0, ...[...s.matchAll(/`+/g)].map((m) => m[0].length));
}

/** Backticks that cannot be closed by the text inside them. */
function code(s: string): string {
  const longest = longestBacktickRun(s);
  const fence = "`".repeat(longest + 1);
  return longest ? `${fence} ${s} ${fence}` : `${fence}${s}${fence}`;
}

/** A text block (fenced so that the text cannot end it), its first lines and how many were left out. */
function textBlock(text: string): string[] {
  const lines = text.replace(/\n$/, "").split("\n");
  const shown = lines.slice(0, MAX_TEXT_LINES);
  const longest = Math.max(2, longestBacktickRun(text));
  const fence = "`".repeat(longest + 1);
  const out = [fence + "text", ...shown, fence];
  if (lines.length > shown.length) out.push(`(${lines.length - shown.length} more lines in the audit row)`);
  return out;
}

/** Leaf keys that say what a record is or what state it is in: shown first in its one-line form. */
const TELLING_KEYS = /^(?:message|msg|reason|error|err|phase|state|status|active_state|sub_state|result|exit_code|exitCode|restartCount|ready|name|kind|path|mountpoint|used_pct|use_pct|size|bytes|cmd|command|unit|rcode|code|type|address|host|port)$/;
/** Leaf keys of log records, shown in front of the message. */
const MESSAGE_KEYS = ["message", "msg", "MESSAGE", "line", "log", "text"];
const LEVEL_KEYS = ["level", "priority", "severity"];

/** Scalar leaves of a value as path=value, the telling ones first, at most `max`. */
function leaves(v: unknown, max: number): Array<[string, string]> {
  const out: Array<[string, string, boolean]> = [];
  const walk = (x: unknown, path: string, depth: number) => {
    if (out.length >= 200) return;
    if (x === null || typeof x !== "object") {
      if (x === undefined || x === "") return;
      const key = path.slice(path.lastIndexOf(".") + 1).replace(/\[\d+\]$/, "");
      out.push([path, typeof x === "string" ? x : JSON.stringify(x), TELLING_KEYS.test(key)]);
      return;
    }
    if (depth >= 6) return;
    if (Array.isArray(x)) x.slice(0, 5).forEach((y, i) => walk(y, `${path}[${i}]`, depth + 1));
    else for (const [k, y] of Object.entries(x)) walk(y, path ? `${path}.${k}` : k, depth + 1);
  };
  walk(v, "", 0);
  return [...out.filter((l) => l[2]), ...out.filter((l) => !l[2])].slice(0, max).map(([k, x]) => [k, x]);
}

/** One line for one item of a list: a log record by its level and message, any other record by its telling fields. */
export function itemLine(item: unknown): string {
  if (item === null || typeof item !== "object") return inline(item);
  if (!Array.isArray(item)) {
    const o = item as Record<string, unknown>;
    const message = MESSAGE_KEYS.map((k) => o[k]).find((x) => typeof x === "string") as string | undefined;
    if (message !== undefined) {
      const level = LEVEL_KEYS.map((k) => o[k]).find((x) => typeof x === "string" || typeof x === "number");
      const source = ["unit", "identifier", "logger", "source"].map((k) => o[k]).find((x) => typeof x === "string");
      return inline(`${level !== undefined ? `[${String(level)}] ` : ""}${source !== undefined ? `${String(source)}: ` : ""}${message}`);
    }
  }
  return inline(leaves(item, 12).map(([k, v]) => `${k}=${v}`).join(", "));
}

/** A list as Markdown lines: its count, then up to MAX_ITEMS items, one line each. */
function listLines(list: readonly unknown[], indent = ""): string[] {
  const lines: string[] = [];
  for (const item of list.slice(0, MAX_ITEMS)) lines.push(`${indent}- ${code(itemLine(item))}`);
  if (list.length > MAX_ITEMS) lines.push(`${indent}- … ${list.length - MAX_ITEMS} more`);
  return lines;
}

/** A summary of one output value as Markdown lines. */
export function summariseOutput(output: unknown): string[] {
  if (output === null || output === undefined) return ["No output."];
  if (typeof output === "string") return output.includes("\n") ? textBlock(output) : [inline(output)];
  if (Array.isArray(output)) return [`${output.length} item${output.length === 1 ? "" : "s"}${output.length ? ":" : "."}`, ...listLines(output)];
  if (typeof output !== "object") return [code(String(output))];
  const entries = Object.entries(output as Record<string, unknown>);
  const lines: string[] = [];
  const blocks: string[] = [];
  for (const [k, v] of entries.slice(0, MAX_FIELDS)) {
    if (typeof v === "string" && v.includes("\n")) {
      const n = v.replace(/\n$/, "").split("\n").length;
      lines.push(`- ${k}: ${n} line${n === 1 ? "" : "s"} (below)`);
      blocks.push("", `${k}:`, "", ...textBlock(v));
    } else if (Array.isArray(v)) {
      lines.push(`- ${k}: ${v.length} item${v.length === 1 ? "" : "s"}${v.length ? ":" : ""}`, ...listLines(v, "  "));
    } else if (v !== null && typeof v === "object") {
      lines.push(`- ${k}: ${code(itemLine(v))}`);
    } else if (typeof v === "string" && v === "") {
      lines.push(`- ${k}: (empty)`);
    } else {
      lines.push(`- ${k}: ${code(inline(v))}`);
    }
  }
  if (entries.length > MAX_FIELDS) lines.push(`- … ${entries.length - MAX_FIELDS} more fields in the audit row`);
  if (!entries.length) lines.push("An empty object.");
  return [...lines, ...blocks];
}

/** What a tool message holds: the result envelope as the model was given it (bridge/call.ts toolContent). */
function parseContent(content: string): { success?: boolean; output?: unknown; error?: { code?: string; message?: string; hint?: string }; truncated?: boolean; note?: string } | undefined {
  try {
    const v = JSON.parse(content);
    return v && typeof v === "object" && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** The Markdown lines for one step's result: its error (code, message, hint) or a summary of its output. */
export function summariseStep(e: EvidenceItem): string[] {
  if (e.pendingApproval) return [`Waiting for approval ${code(e.pendingApproval)}; the call has not run.`];
  const env = parseContent(e.content);
  if (!env) return textBlock(e.content);
  const lines: string[] = [];
  if (env.error) {
    lines.push(`**Failed** ${code(String(env.error.code ?? "error"))}: ${inline(env.error.message ?? "")}`);
    if (env.error.hint) lines.push("", `Hint: ${inline(env.error.hint)}`);
  }
  if (env.output !== undefined) lines.push(...(lines.length ? [""] : []), ...summariseOutput(env.output));
  else if (!env.error) lines.push(...summariseOutput(env.note ?? null));
  if (env.truncated) lines.push("", "(The output was cut at the manager's output cap.)");
  return lines;
}

/** The state word of a step. */
function stateOf(e: EvidenceItem): string {
  return e.pendingApproval ? "waiting for approval" : e.success ? "ok" : "failed";
}

/** Where a step's whole result can be read. */
function auditLink(e: EvidenceItem, sessionId: string): string {
  return `[audit row #${e.auditSeq}](/admin/audit?session=${encodeURIComponent(sessionId)}&tool=${encodeURIComponent(e.tool)})`;
}

/** The deterministic report: what ran, what it returned (summarised), what was not checked; no conclusions. */
export function fallbackReport(
  text: string,
  decision: RouteDecision,
  playbook: Playbook,
  edgeId: string | undefined,
  items: readonly EvidenceItem[],
  skipped: ReadonlyArray<{ tool: string; reason: string }>,
  sessionId: string,
  recalled: readonly RecalledPage[] = [],
): string {
  const lines = [
    `# Diagnosis report`,
    ``,
    `- Incident: ${redactString(text.trim()).slice(0, 500)}`,
    `- Playbook: ${playbook.name} (${playbook.displayName}); routed by ${decision.path}${decision.fallbackCause ? ` (${decision.fallbackCause})` : ""}: ${decision.reason}`,
    `- Path: fallback steps — no model is configured, so the playbook's fallback steps ran as written and nothing below is interpreted or invented.`,
    `- Edge: ${edgeId ?? "none"}`,
    `- Session: ${sessionId} (every call's whole result: \`ongrid audit list --session ${sessionId}\`, or the console's audit page)`,
    ``,
    `## Steps`,
  ];
  if (!items.length) lines.push("", "No step ran.");
  else {
    lines.push("", "| # | Tool | Edge | Result | Audit |", "| --- | --- | --- | --- | --- |");
    for (const e of items) lines.push(`| ${e.step} | ${e.tool} | ${e.edgeId || "—"} | ${stateOf(e)}${e.deduped ? " (same as an earlier step)" : ""} | ${auditLink(e, sessionId)} |`);
    lines.push("", "## Evidence");
    for (const e of items) {
      lines.push("", `### ${e.step}. ${e.tool}${e.edgeId ? ` on ${e.edgeId}` : ""} — ${stateOf(e)}`, "");
      if (e.deduped) lines.push(`Same call as an earlier step; answered from its result (${auditLink(e, sessionId)}).`);
      else lines.push(...summariseStep(e), "", `Whole result: ${auditLink(e, sessionId)}.`);
    }
  }
  lines.push("", "## Not checked");
  if (!skipped.length) lines.push("", "Every fallback step ran.");
  else lines.push("");
  for (const s of skipped) lines.push(`- ${s.tool}: ${s.reason}`);
  if (recalled.length) lines.push("", pastDiagnosesSection(recalled, "Past diagnoses of similar incidents, by the router's recall (read them for what was found then; nothing here was checked against them):"));
  lines.push("", "## Next", "", `Read the playbook (\`ongrid playbooks show ${playbook.name}\`) for what these results mean and what to check next; configure a model (model.base_url, model.model) for an interpreted report.`);
  return lines.join("\n");
}

/** The report section naming the past diagnoses a session was given (L2): title, summary, playbook and file of each. */
export function pastDiagnosesSection(pages: readonly RecalledPage[], lead: string): string {
  return ["## Past diagnoses", "", lead, "", ...pages.map((p) => `- ${inline(p.title)}${p.summary ? ` — ${inline(p.summary)}` : ""}${p.playbook ? ` (playbook ${p.playbook})` : ""}: ${code(p.id)}`)].join("\n");
}
