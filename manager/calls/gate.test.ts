/**
 * The permission gate (F1–F5, G1) as a table: every combination of effective class × mode × role
 * × playbook whitelist × guardrail list × allow_bypass × allow_notifications is decided by
 * `decide()` and compared with `expected()`, an independent reading of SPEC F/G1 and the
 * three-layer design in seeds/001 (Layer 0 playbook whitelist, Layer 1 modes, Layer 2 guardrails).
 * `expected()` never calls into gate.ts.
 *
 * Where the spec and gate.ts disagree the table follows the spec (marked "SPEC:" below):
 *  - Layer 0's read-only exemption does not cover a key on the high-risk or notification list,
 *    even when its effective class is safe (seeds/001 l.164).
 *  - A key on the high-risk list is denied in NORMAL whatever its effective class (F4).
 */
import { describe, expect, test } from "vitest";
import type { SkillClass } from "../../skill/types.ts";
import { loadConfig } from "../config/load.ts";
import { decide, MODES, policyFromConfig, type GateInput, type GatePolicy, type PermissionDecision, type PermissionMode, type ReasonType } from "./gate.ts";

// ---------------------------------------------------------------------------------------------
// The dimensions of the table.
// ---------------------------------------------------------------------------------------------

const CLASSES: readonly SkillClass[] = ["safe", "mutating", "dangerous"];
const ALL_MODES: readonly PermissionMode[] = ["READ_ONLY", "NORMAL", "ASK_DESTRUCTIVE", "BYPASS"];
/** G1's four user roles, "system" (the LLM acting for a user) and one role the gate does not know. */
const ROLES = ["viewer", "operator", "approver", "admin", "system", "guest"] as const;
type Role = (typeof ROLES)[number];
/** Layer 0: no playbook applies; the playbook's allowed_tools lists the key; it does not. */
const WHITELISTS = ["none", "includes", "excludes"] as const;
type Whitelist = (typeof WHITELISTS)[number];
/** Layer 2: which static list (if any) the key is on. */
const GUARDRAILS = ["none", "high-risk", "notification"] as const;
type Guardrail = (typeof GUARDRAILS)[number];
const BOOLS = [true, false] as const;

/** The skill key every row calls; the lists also hold unrelated keys so membership is really tested. */
const KEY = "svc_tool";

interface Row {
  cls: SkillClass;
  mode: PermissionMode;
  role: Role;
  whitelist: Whitelist;
  guardrail: Guardrail;
  allowBypass: boolean;
  allowNotifications: boolean;
}

type Expectation = Pick<PermissionDecision, "behavior" | "reasonType" | "approvals" | "needsSop">;

function inputFor(r: Row): GateInput {
  const policy: GatePolicy = {
    allowBypass: r.allowBypass,
    allowNotifications: r.allowNotifications,
    highRisk: new Set(r.guardrail === "high-risk" ? ["restart_service", KEY] : ["restart_service"]),
    notification: new Set(r.guardrail === "notification" ? ["send_page", KEY] : ["send_page"]),
  };
  const whitelist = r.whitelist === "none" ? undefined : r.whitelist === "includes" ? ["host_info", KEY] : ["host_info"];
  return { key: KEY, cls: r.cls, mode: r.mode, role: r.role, whitelist, policy };
}

function label(r: Row): string {
  return `${r.cls} | ${r.mode} | role=${r.role} | whitelist=${r.whitelist} | guardrail=${r.guardrail} | allowBypass=${r.allowBypass} | allowNotifications=${r.allowNotifications}`;
}

function allRows(): Row[] {
  const rows: Row[] = [];
  for (const cls of CLASSES)
    for (const mode of ALL_MODES)
      for (const role of ROLES)
        for (const whitelist of WHITELISTS)
          for (const guardrail of GUARDRAILS)
            for (const allowBypass of BOOLS)
              for (const allowNotifications of BOOLS) rows.push({ cls, mode, role, whitelist, guardrail, allowBypass, allowNotifications });
  return rows;
}

// ---------------------------------------------------------------------------------------------
// The independent expectation, written from SPEC F1–F5, G1 and seeds/001 lines 130–170.
// ---------------------------------------------------------------------------------------------

const ALLOW = (reasonType: ReasonType): Expectation => ({ behavior: "allow", reasonType, approvals: 0, needsSop: false });
const DENY = (reasonType: ReasonType): Expectation => ({ behavior: "deny", reasonType, approvals: 0, needsSop: false });
/** F1/G2: mutating needs one approver; G3: dangerous needs a signed SOP and two approvers. */
const ASK = (reasonType: ReasonType, cls: SkillClass): Expectation =>
  cls === "dangerous" ? { behavior: "ask", reasonType, approvals: 2, needsSop: true } : { behavior: "ask", reasonType, approvals: 1, needsSop: false };

const KNOWN_ROLES: readonly string[] = ["viewer", "operator", "approver", "admin", "system"];

function expected(r: Row): Expectation {
  // G1: the gate knows the four user roles and "system"; anything else runs nothing.
  if (!KNOWN_ROLES.includes(r.role)) return DENY("role");

  // SPEC: Layer 0 (F3): outside the playbook's allowed_tools → denied in every mode, BYPASS included.
  // The exemption is for read-only tools only. seeds/001 l.164: "只读工具（read_only=true）自动放入候选
  // … 写/通知/高危工具仍然必须显式声明" — write, notification and high-risk tools must still be
  // declared. So a key on a Layer 2 list is not exempt even when its effective class is safe.
  const readOnlyExempt = r.cls === "safe" && r.guardrail === "none";
  if (r.whitelist === "excludes" && !readOnlyExempt) return DENY("playbook_whitelist");

  // Layer 1, BYPASS (F2): refused unless enabled in config; when enabled it skips layers 1 and 2
  // (seed: "跳过所有检查"), but a viewer still runs safe skills only (F1/G1).
  if (r.mode === "BYPASS") {
    if (!r.allowBypass) return DENY("bypass_disabled");
    if (r.cls === "safe") return ALLOW("safe");
    if (r.role === "viewer") return DENY("role");
    return ALLOW("bypass");
  }

  // Layer 2, notifications (F4): denied by default, whatever the class.
  if (r.guardrail === "notification" && !r.allowNotifications) return DENY("guardrail_notification");

  if (r.cls === "safe") {
    // SPEC: Layer 2, high-risk (F4): "static high-risk list … denied in NORMAL" — the list is by key,
    // not by class, so this holds for a safe effective class too (seed l.149: "高危工具 → NORMAL 模式默认拦截").
    if (r.guardrail === "high-risk" && r.mode === "NORMAL") return DENY("guardrail_high_risk");
    // F1: safe → any (known) role, the LLM ("system") and viewers included; READ_ONLY allows it.
    return ALLOW("safe");
  }

  // Non-safe from here on.
  if (r.mode === "READ_ONLY") return DENY("mode_read_only"); // F2: only read-only tools
  if (r.role === "viewer") return DENY("role"); // a viewer runs safe skills only
  if (r.guardrail === "high-risk") {
    if (r.mode === "NORMAL") return DENY("guardrail_high_risk"); // F4
    return ASK("high_risk_approval", r.cls); // ASK_DESTRUCTIVE: to human approval, approvals by class
  }
  if (r.cls === "mutating") return ASK("approval_required", r.cls); // F1/G2
  return ASK("sop_required", r.cls); // F1/G3
}

function pick(d: PermissionDecision): Expectation {
  return { behavior: d.behavior, reasonType: d.reasonType, approvals: d.approvals, needsSop: d.needsSop };
}

// ---------------------------------------------------------------------------------------------
// The table.
// ---------------------------------------------------------------------------------------------

const ROWS = allRows();
const EXPECTED_ROW_COUNT = 3 * 4 * 6 * 3 * 3 * 2 * 2; // 2592

describe("gate table: every class × mode × role × whitelist × guardrail × allowBypass × allowNotifications", () => {
  test("the table has every combination exactly once", () => {
    expect(EXPECTED_ROW_COUNT).toBe(2592);
    expect(ROWS).toHaveLength(EXPECTED_ROW_COUNT);
    expect(new Set(ROWS.map(label)).size).toBe(EXPECTED_ROW_COUNT);
    // The table's modes are the gate's modes.
    expect([...MODES].sort()).toEqual([...ALL_MODES].sort());
  });

  test("the expectation reaches every reason type", () => {
    const seen = new Set(ROWS.map((r) => expected(r).reasonType));
    const all: ReasonType[] = [
      "safe", "role", "playbook_whitelist", "bypass_disabled", "bypass", "guardrail_notification",
      "mode_read_only", "guardrail_high_risk", "high_risk_approval", "approval_required", "sop_required",
    ];
    expect([...seen].sort()).toEqual([...all].sort());
  });

  const cases = ROWS.map((r) => ({ name: label(r), row: r, want: expected(r) }));
  let checked = 0;

  test.each(cases)("$name", ({ name, row, want }) => {
    checked++;
    expect(pick(decide(inputFor(row))), name).toEqual(want);
  });

  test("every row was checked", () => {
    expect(checked).toBe(EXPECTED_ROW_COUNT);
  });
});

describe("every refusal names the way forward", () => {
  const denials = ROWS.map((r) => ({ row: r, d: decide(inputFor(r)) })).filter((x) => x.d.behavior === "deny");

  test("each denial carries a hint, and the mode-related ones name a mode and where to choose it", () => {
    expect(denials.length).toBeGreaterThan(100);
    for (const { row, d } of denials) {
      expect(d.hint, label(row)).toMatch(/\w{3,}/);
      if (["guardrail_high_risk", "mode_read_only", "bypass_disabled"].includes(d.reasonType)) {
        expect(d.hint, label(row)).toMatch(/(NORMAL|ASK_DESTRUCTIVE) mode/);
        expect(d.hint, label(row)).toContain("--mode");
        expect(d.hint, label(row)).toContain("/skills");
      }
    }
  });

  test("following a hint's mode gets past that refusal: the call is allowed or goes to approval", () => {
    let followed = 0;
    for (const { row, d } of denials) {
      if (!/(NORMAL|ASK_DESTRUCTIVE) mode/.test(d.hint ?? "")) continue;
      // ASK_DESTRUCTIVE, when named, is the mode that sends every class to approval.
      const mode: PermissionMode = d.hint!.includes("ASK_DESTRUCTIVE") ? "ASK_DESTRUCTIVE" : "NORMAL";
      const again = decide({ ...inputFor(row), mode });
      expect(again.reasonType, label(row)).not.toBe(d.reasonType);
      if (again.behavior === "deny") expect(["role", "playbook_whitelist", "guardrail_notification"], label(row)).toContain(again.reasonType);
      followed++;
    }
    expect(followed).toBeGreaterThan(50);
  });
});

describe("the default guardrail list (issue 28: the approval demo works by default)", () => {
  const policy = policyFromConfig(loadConfig({ env: {} }).gate);

  test("restart_service, a mutating host skill, goes to one approver in NORMAL, not refused", () => {
    const d = decide({ key: "restart_service", cls: "mutating", mode: "NORMAL", role: "operator", policy });
    expect(pick(d)).toEqual({ behavior: "ask", reasonType: "approval_required", approvals: 1, needsSop: false });
  });

  test("cluster destruction (kubernetes_action) stays high-risk: refused in NORMAL with the way to approval", () => {
    const d = decide({ key: "kubernetes_action", cls: "dangerous", mode: "NORMAL", role: "operator", policy });
    expect(d.reasonType).toBe("guardrail_high_risk");
    expect(d.hint).toContain("ASK_DESTRUCTIVE");
    expect(pick(decide({ key: "kubernetes_action", cls: "dangerous", mode: "ASK_DESTRUCTIVE", role: "operator", policy }))).toMatchObject({ behavior: "ask", approvals: 2, needsSop: true });
  });

  test("the list stays configurable", () => {
    const custom = policyFromConfig(loadConfig({ env: { ONGRID_GATE_HIGH_RISK_TOOLS: "restart_service, kubernetes_action" } }).gate);
    expect(decide({ key: "restart_service", cls: "mutating", mode: "NORMAL", role: "operator", policy: custom }).reasonType).toBe("guardrail_high_risk");
  });
});

// ---------------------------------------------------------------------------------------------
// Readable spot checks.
// ---------------------------------------------------------------------------------------------

function call(over: Partial<GateInput> & { key: string; cls: SkillClass }, policy: Partial<GatePolicy> = {}): PermissionDecision {
  return decide({
    mode: "NORMAL",
    role: "operator",
    ...over,
    policy: { allowBypass: false, allowNotifications: false, highRisk: new Set(), notification: new Set(), ...policy },
  });
}

describe("gate spot checks", () => {
  test("operator, NORMAL, exec mutating → ask approval_required, 1 approver, no SOP", () => {
    expect(pick(call({ key: "exec", cls: "mutating" }))).toEqual({ behavior: "ask", reasonType: "approval_required", approvals: 1, needsSop: false });
  });

  test("operator, NORMAL, exec dangerous (mkfs) → ask sop_required, 2 approvers + SOP", () => {
    expect(pick(call({ key: "exec", cls: "dangerous" }))).toEqual({ behavior: "ask", reasonType: "sop_required", approvals: 2, needsSop: true });
  });

  test("system (LLM), READ_ONLY, disk_usage safe → allow safe", () => {
    expect(pick(call({ key: "disk_usage", cls: "safe", role: "system", mode: "READ_ONLY" }))).toEqual({ behavior: "allow", reasonType: "safe", approvals: 0, needsSop: false });
  });

  test("viewer, NORMAL, host_info safe → allow; restart_service mutating → deny role", () => {
    expect(call({ key: "host_info", cls: "safe", role: "viewer" }).behavior).toBe("allow");
    expect(pick(call({ key: "restart_service", cls: "mutating", role: "viewer" }))).toEqual({ behavior: "deny", reasonType: "role", approvals: 0, needsSop: false });
  });

  test("admin, READ_ONLY, restart_service mutating → deny mode_read_only", () => {
    expect(call({ key: "restart_service", cls: "mutating", role: "admin", mode: "READ_ONLY" }).reasonType).toBe("mode_read_only");
  });

  test("guest (unknown role), NORMAL, host_info safe → deny role", () => {
    expect(pick(call({ key: "host_info", cls: "safe", role: "guest" }))).toEqual({ behavior: "deny", reasonType: "role", approvals: 0, needsSop: false });
  });

  test("playbook whitelist: mutating tool not listed → deny in every mode, BYPASS included", () => {
    for (const mode of ALL_MODES) {
      const d = call({ key: "restart_service", cls: "mutating", mode, whitelist: ["host_info", "top_processes"] }, { allowBypass: true });
      expect(d.reasonType, mode).toBe("playbook_whitelist");
      expect(d.behavior, mode).toBe("deny");
    }
  });

  test("playbook whitelist: a read-only tool the playbook forgot to list is exempt (seed: list_top_processes)", () => {
    expect(pick(call({ key: "list_top_processes", cls: "safe", whitelist: ["restart_service"] }))).toEqual({ behavior: "allow", reasonType: "safe", approvals: 0, needsSop: false });
  });

  test("playbook whitelist: an empty allowed_tools denies every non-safe tool and says so", () => {
    const d = call({ key: "restart_service", cls: "mutating", whitelist: [] });
    expect(d.reasonType).toBe("playbook_whitelist");
    expect(d.reason).toContain("none");
    expect(call({ key: "host_info", cls: "safe", whitelist: [] }).behavior).toBe("allow");
  });

  test("restart_service on the high-risk list: NORMAL → deny guardrail_high_risk; ASK_DESTRUCTIVE → ask high_risk_approval 1", () => {
    const highRisk = new Set(["restart_service", "kubernetes_action"]);
    expect(call({ key: "restart_service", cls: "mutating" }, { highRisk }).reasonType).toBe("guardrail_high_risk");
    expect(pick(call({ key: "restart_service", cls: "mutating", mode: "ASK_DESTRUCTIVE" }, { highRisk }))).toEqual({ behavior: "ask", reasonType: "high_risk_approval", approvals: 1, needsSop: false });
  });

  test("kubernetes_action dangerous on the high-risk list, ASK_DESTRUCTIVE → ask high_risk_approval with 2 approvers + SOP", () => {
    const highRisk = new Set(["kubernetes_action"]);
    expect(pick(call({ key: "kubernetes_action", cls: "dangerous", role: "approver", mode: "ASK_DESTRUCTIVE" }, { highRisk }))).toEqual({ behavior: "ask", reasonType: "high_risk_approval", approvals: 2, needsSop: true });
  });

  test("send_page notification tool: denied by default, follows its class once notifications are allowed", () => {
    const notification = new Set(["send_page"]);
    expect(call({ key: "send_page", cls: "mutating" }, { notification }).reasonType).toBe("guardrail_notification");
    expect(call({ key: "send_page", cls: "mutating" }, { notification, allowNotifications: true }).reasonType).toBe("approval_required");
  });

  test("BYPASS: refused unless enabled, even for safe tools; enabled → allow bypass with no approvals", () => {
    expect(call({ key: "host_info", cls: "safe", mode: "BYPASS" }).reasonType).toBe("bypass_disabled");
    expect(pick(call({ key: "exec", cls: "dangerous", mode: "BYPASS" }, { allowBypass: true }))).toEqual({ behavior: "allow", reasonType: "bypass", approvals: 0, needsSop: false });
    expect(call({ key: "exec", cls: "mutating", mode: "BYPASS", role: "viewer" }, { allowBypass: true }).reasonType).toBe("role");
  });

  test("BYPASS skips the guardrails (high-risk and notification lists)", () => {
    const d = call({ key: "restart_service", cls: "mutating", mode: "BYPASS" }, { allowBypass: true, highRisk: new Set(["restart_service"]), notification: new Set(["restart_service"]) });
    expect(d.reasonType).toBe("bypass");
  });
});

// ---------------------------------------------------------------------------------------------
// Reasons (F5: every decision carries a reason; the audit log greps reason_type and the key).
// ---------------------------------------------------------------------------------------------

describe("gate reasons", () => {
  test("every decision in the table has a non-empty reason that names the key", () => {
    const offenders: string[] = [];
    for (const r of ROWS) {
      const d = decide(inputFor(r));
      if (d.reason.trim() === "" || !d.reason.includes(KEY)) offenders.push(`${d.reasonType}: ${JSON.stringify(d.reason)} (${label(r)})`);
    }
    // One example per reason type keeps the failure message short.
    const byType = new Map<string, string>();
    for (const o of offenders) byType.set(o.split(":")[0]!, o);
    expect([...byType.values()], `${offenders.length} decisions lack the key in their reason`).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// policyFromConfig.
// ---------------------------------------------------------------------------------------------

describe("policyFromConfig", () => {
  const base = { allow_bypass: false, high_risk_tools: "", notification_tools: "", allow_notifications: false };

  test("comma lists are trimmed and empty entries dropped", () => {
    const p = policyFromConfig({ ...base, high_risk_tools: " restart_service , ,kubernetes_action,, ", notification_tools: "send_page,  notify_slack ,," });
    expect([...p.highRisk].sort()).toEqual(["kubernetes_action", "restart_service"]);
    expect([...p.notification].sort()).toEqual(["notify_slack", "send_page"]);
  });

  test("empty and blank lists give empty sets", () => {
    for (const s of ["", " ", ",", " , ,, "]) {
      const p = policyFromConfig({ ...base, high_risk_tools: s, notification_tools: s });
      expect(p.highRisk.size, JSON.stringify(s)).toBe(0);
      expect(p.notification.size, JSON.stringify(s)).toBe(0);
    }
  });

  test("duplicates collapse; keys are matched exactly (no substring or case folding)", () => {
    const p = policyFromConfig({ ...base, high_risk_tools: "exec,exec , exec" });
    expect([...p.highRisk]).toEqual(["exec"]);
    expect(p.highRisk.has("exe")).toBe(false);
    expect(p.highRisk.has("EXEC")).toBe(false);
  });

  test("booleans pass through", () => {
    for (const allow_bypass of BOOLS)
      for (const allow_notifications of BOOLS) {
        const p = policyFromConfig({ ...base, allow_bypass, allow_notifications });
        expect(p.allowBypass).toBe(allow_bypass);
        expect(p.allowNotifications).toBe(allow_notifications);
      }
  });

  test("the documented defaults drive the gate: restart_service denied in NORMAL, asked in ASK_DESTRUCTIVE", () => {
    const policy = policyFromConfig({ ...base, high_risk_tools: "restart_service,kubernetes_action" });
    expect(decide({ key: "restart_service", cls: "mutating", mode: "NORMAL", role: "operator", policy }).reasonType).toBe("guardrail_high_risk");
    expect(decide({ key: "restart_service", cls: "mutating", mode: "ASK_DESTRUCTIVE", role: "operator", policy }).reasonType).toBe("high_risk_approval");
    expect(decide({ key: "exec", cls: "mutating", mode: "NORMAL", role: "operator", policy }).reasonType).toBe("approval_required");
    expect(decide({ key: "send_page", cls: "mutating", mode: "BYPASS", role: "admin", policy }).reasonType).toBe("bypass_disabled");
  });
});
