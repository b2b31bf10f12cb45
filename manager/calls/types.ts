/** The nouns of the execute path (B3): a request, its outcome, what the dispatcher needs and tells. */
import type { Logger } from "pino";
import { OngridError } from "../../skill/errors.ts";
import type { SkillRegistry } from "../../skill/registry.ts";
import type { ResultEnvelope, Skill, SkillClass, SkillInvocation } from "../../skill/types.ts";
import type { AuditLog } from "../audit/types.ts";
import type { PreparedJson } from "../audit/record.ts";
import type { ManagerConfig } from "../config/schema.ts";
import type { ApprovalRow } from "../db/schema/index.ts";
import type { EdgeStore } from "../fleet/edge-store.ts";
import type { Hub } from "../fleet/hub.ts";
import type { Caller } from "../identity/caller.ts";
import type { ApprovalStore } from "./approvals/store.ts";
import type { CredentialStore } from "./credentials/store.ts";
import type { PermissionDecision, PermissionMode } from "./gate.ts";

declare module "../../skill/types.ts" {
  /** Who made a call and in which session: handed to manager skills that make calls of their own. */
  interface SkillInvocation {
    caller: Caller;
    sessionId: string;
    mode?: PermissionMode;
    playbook?: string;
  }
}

/** Who made a call and in which session (SkillContext.invocation). */
export type Invocation = SkillInvocation;

/** One request to execute a skill, as every surface (RPC, CLI, later the LLM bridge) hands it over. */
export interface ExecuteInput {
  key: string;
  /** Params as a JSON value; ignored when paramsJson is set. */
  params?: unknown;
  /** Params as JSON text (parsed here so a malformed document is refused and audited). */
  paramsJson?: string;
  edgeId?: string;
  sessionId?: string;
  /** The client program that made the call, as it named itself (an MCP client's "name/version"); recorded in the audit row. */
  client?: string;
  timeoutMs?: number;
  caller: Caller;
  signal?: AbortSignal;
  /** The gate's mode; undefined uses gate.default_mode. */
  mode?: PermissionMode;
  /** Layer 0: the current playbook's allowed_tools (undefined: no playbook). */
  whitelist?: readonly string[];
  /** Layer 0 by name: the playbook the call runs under (its allowed_tools); unknown names are refused. */
  playbook?: string;
  /** The signed SOP text for a dangerous call. */
  sop?: string;
  /** For a call that needs approval: wait until it ran (true) or return the pending request (false). */
  waitForApproval?: boolean;
  /** Refuse instead of parking when approval would be needed (fan-out, the fleet tools). */
  noApproval?: boolean;
}

/**
 * What the per-edge calls of one fan-out work out once instead of once per edge: the params
 * parsed, and per skill object (edges offering the same metadata share one) the validated params,
 * their class and the gate's decision — all the same for every edge, since the caller, mode,
 * playbook and params are; and the params as the audit log stores them. Created by
 * `dispatcher.shareWork()` for one fan-out, handed to each `dispatcher.fanOutCall`, and dropped with it.
 */
export interface SharedWork {
  parsed?: { raw: unknown; audit: PreparedJson };
  checked: Map<Skill, { params: Record<string, unknown>; cls: SkillClass; decision: PermissionDecision }>;
}

/** The envelope plus the audit row it produced; for a parked call, the approval request instead of a result. */
export interface ExecuteOutput {
  result?: ResultEnvelope;
  auditSeq: number;
  approval?: ApprovalRow;
}

/** An OngridError that also carries the audit row written for the refused call. */
export class AuditedError extends OngridError {
  readonly auditSeq: number;
  constructor(err: OngridError, auditSeq: number) {
    super(err.code, err.message, err.hint);
    this.auditSeq = auditSeq;
  }
}

/** What the dispatcher needs. */
export interface DispatcherDeps {
  registry: SkillRegistry;
  hub: Hub;
  edges: EdgeStore;
  audit: AuditLog;
  config: ManagerConfig;
  log: Logger;
  approvals: ApprovalStore;
  credentials?: CredentialStore;
  /** Loaded playbooks, for calls that name one (layer 0). */
  playbooks?: { get(name: string): { allowedTools: string[] } | undefined };
  /** Told of every call as its audit row is written (the manager's /metrics counts them); must not throw. */
  onCall?: (call: CallObservation) => void;
}

/** One call as its audit row records it, for observers such as /metrics. */
export interface CallObservation {
  key: string;
  edgeId: string;
  /** The gate's decision: allow | ask | deny, "" when refused before the gate. */
  decision: string;
  /** "code: message", "" on success (and for a call parked for approval). */
  error: string;
  /** The envelope when the call ran, else null. */
  result: ResultEnvelope | null;
  /** From the dispatcher taking the call to its row. */
  durationMs: number;
}
