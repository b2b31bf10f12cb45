/**
 * The permission gate (F1–F5, G1): one function turns a call's effective class, the permission
 * mode, the playbook whitelist, the guardrail lists and the caller's role into a decision.
 * Pure: no I/O, so every combination is tested as a table.
 */
import type { SkillClass } from "../../skill/types.ts";

/** Layer 1: the permission mode. */
export const MODES = ["READ_ONLY", "NORMAL", "ASK_DESTRUCTIVE", "BYPASS"] as const;
/** A permission mode. */
export type PermissionMode = (typeof MODES)[number];

/** Roles the gate knows: the four user roles and "system" (the LLM acting for a user). */
const GATE_ROLES = new Set(["viewer", "operator", "approver", "admin", "system"]);

/** Why the gate decided what it did; grep-able in the audit log (decision_reason starts with it). */
export type ReasonType =
  | "safe"
  | "role"
  | "playbook_whitelist"
  | "bypass_disabled"
  | "bypass"
  | "guardrail_notification"
  | "mode_read_only"
  | "guardrail_high_risk"
  | "high_risk_approval"
  | "approval_required"
  | "sop_required";

/** The gate's answer. For ask: how many approvers, and whether a signed SOP is needed. */
export interface PermissionDecision {
  behavior: "allow" | "ask" | "deny";
  reasonType: ReasonType;
  reason: string;
  approvals: 0 | 1 | 2;
  needsSop: boolean;
  /** For a denial: the way forward (the mode, the role, the setting) that would let such a call through the gate. */
  hint?: string;
}

/** Configuration of layers 1 and 2. */
export interface GatePolicy {
  allowBypass: boolean;
  /** Layer 2: denied in NORMAL, asked in ASK_DESTRUCTIVE. */
  highRisk: ReadonlySet<string>;
  /** Layer 2: tools that notify people; denied unless allowNotifications. */
  notification: ReadonlySet<string>;
  allowNotifications: boolean;
}

/** One call as the gate sees it. */
export interface GateInput {
  key: string;
  /** The effective class for these params (A6), never only the static one. */
  cls: SkillClass;
  mode: PermissionMode;
  role: string;
  /** Layer 0: the current playbook's allowed_tools; undefined when no playbook applies. */
  whitelist?: readonly string[];
  policy: GatePolicy;
}

const allow = (reasonType: ReasonType, reason: string): PermissionDecision => ({ behavior: "allow", reasonType, reason, approvals: 0, needsSop: false });
const deny = (reasonType: ReasonType, reason: string, hint: string): PermissionDecision => ({ behavior: "deny", reasonType, reason, approvals: 0, needsSop: false, hint });

/** How to choose a mode, named in every hint that asks for one. */
const HOW_MODE = "permission_mode in the request, --mode on the CLI, the Mode choice on the console's /skills";
const VIEWER_HINT = "a viewer runs safe skills only: ask an operator to request it (it then waits for an approver), or an admin to give you the operator role";
const ask = (reasonType: ReasonType, reason: string, cls: SkillClass): PermissionDecision =>
  cls === "dangerous" ? { behavior: "ask", reasonType, reason, approvals: 2, needsSop: true } : { behavior: "ask", reasonType, reason, approvals: 1, needsSop: false };

/** Decides one call. */
export function decide(input: GateInput): PermissionDecision {
  const { key, cls, mode, role, whitelist, policy } = input;
  if (!GATE_ROLES.has(role)) return deny("role", `role "${role}" may not run skills ("${key}")`, "ask an admin to give your user one of the roles viewer, operator, approver or admin");
  const guarded = policy.highRisk.has(key) || policy.notification.has(key);
  // Layer 0: no mode gets around the playbook's whitelist. Read-only tools are exempt, but not
  // tools on a guardrail list: write, notification and high-risk tools must be declared.
  if (whitelist && (cls !== "safe" || guarded) && !whitelist.includes(key)) {
    return deny(
      "playbook_whitelist",
      `"${key}" is ${guarded ? "on a guardrail list" : cls} and not in the playbook's allowed_tools (${whitelist.join(", ") || "none"})`,
      `no mode gets around a playbook's allowed_tools: add "${key}" to the playbook's allowed_tools (a reviewed playbook change), or call it outside this playbook`,
    );
  }
  if (mode === "BYPASS") {
    if (!policy.allowBypass) return deny("bypass_disabled", `BYPASS mode is not enabled on this manager (gate.allow_bypass); "${key}" not run`, `call it in NORMAL or ASK_DESTRUCTIVE mode (${HOW_MODE}), where a non-safe call waits for human approval; BYPASS is for development only`);
    if (cls === "safe") return allow("safe", `"${key}" is safe`);
    if (role === "viewer") return deny("role", `a viewer may run safe skills only; "${key}" is ${cls}`, VIEWER_HINT);
    return allow("bypass", `BYPASS mode: "${key}" is ${cls} and runs without approval`);
  }
  // Layer 2, notifications: off unless enabled, whatever the class.
  if (policy.notification.has(key) && !policy.allowNotifications) {
    return deny("guardrail_notification", `"${key}" is a notification tool and notifications are off (gate.allow_notifications)`, "an admin turns notification tools on with gate.allow_notifications: true (ONGRID_GATE_ALLOW_NOTIFICATIONS); they then follow their class");
  }
  if (cls === "safe") {
    // The high-risk list is by key: a safe call of a listed tool is still denied in NORMAL.
    if (policy.highRisk.has(key) && mode === "NORMAL") return deny("guardrail_high_risk", `"${key}" is on the high-risk list (gate.high_risk_tools), denied in NORMAL mode`, highRiskHint(key));
    return allow("safe", `"${key}" is safe`);
  }
  if (mode === "READ_ONLY") return deny("mode_read_only", `READ_ONLY mode runs safe skills only; "${key}" is ${cls}`, `call it in NORMAL or ASK_DESTRUCTIVE mode (${HOW_MODE}) to send it to human approval`);
  if (role === "viewer") return deny("role", `a viewer may run safe skills only; "${key}" is ${cls}`, VIEWER_HINT);
  if (policy.highRisk.has(key)) {
    if (mode === "NORMAL") return deny("guardrail_high_risk", `"${key}" is on the high-risk list (gate.high_risk_tools), denied in NORMAL mode`, highRiskHint(key));
    return ask("high_risk_approval", `"${key}" is on the high-risk list and is ${cls}: ASK_DESTRUCTIVE sends it to human approval`, cls);
  }
  if (cls === "mutating") return ask("approval_required", `"${key}" is mutating for these params: an approver other than the requester must approve`, cls);
  return ask("sop_required", `"${key}" is dangerous for these params: a signed SOP covering it and two approvers other than the requester are needed`, cls);
}

/** The way forward for a high-risk tool refused in NORMAL mode. */
function highRiskHint(key: string): string {
  return `call it in ASK_DESTRUCTIVE mode (${HOW_MODE}) to send it to human approval; an admin decides which tools are high-risk with gate.high_risk_tools ("${key}" is listed)`;
}

/** The gate policy from the manager's configuration. */
export function policyFromConfig(gate: { allow_bypass: boolean; high_risk_tools: string; notification_tools: string; allow_notifications: boolean }): GatePolicy {
  const list = (s: string) => new Set(s.split(",").map((k) => k.trim()).filter(Boolean));
  return { allowBypass: gate.allow_bypass, highRisk: list(gate.high_risk_tools), notification: list(gate.notification_tools), allowNotifications: gate.allow_notifications };
}
