/** Dispatch (B3): the one path every execution takes — resolve, validate, gate, run, audit — whatever the surface. */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { OngridError } from "../../skill/errors.ts";
import { parseDuration } from "../../skill/duration.ts";
import { validateParams } from "../../skill/validate.ts";
import { effectiveClass, type SkillRegistry } from "../../skill/registry.ts";
import { runSkill } from "../../skill/run.ts";
import { redactString } from "../../skill/redact.ts";
import type { ResultEnvelope, Skill } from "../../skill/types.ts";
import type { AuditLog } from "../audit/types.ts";
import type { ManagerConfig } from "../config/schema.ts";
import type { Hub } from "../tunnel/hub.ts";
import type { EdgeStore } from "../edges/store.ts";

/** Who is calling; "0"/"system" is the LLM caller (G1). */
export interface Caller {
  userId: string;
  /** viewer | operator | approver | admin | system (the LLM, on behalf of onBehalfOf). */
  role: string;
  /** Label selectors (user's, token's) an edge must all match to be reachable; none reaches all (G4). */
  reach?: string[];
  /** The API token that authenticated the call. */
  tokenId?: string;
  /** For the system caller: the user whose session it acts for. */
  onBehalfOf?: string;
}

/** One request to execute a skill, as every surface (RPC, CLI, later the LLM bridge) hands it over. */
export interface ExecuteInput {
  key: string;
  /** Params as a JSON value; ignored when paramsJson is set. */
  params?: unknown;
  /** Params as JSON text (parsed here so a malformed document is refused and audited). */
  paramsJson?: string;
  edgeId?: string;
  sessionId?: string;
  timeoutMs?: number;
  caller: Caller;
  signal?: AbortSignal;
}

/** The envelope plus the audit row it produced. */
export interface ExecuteOutput {
  result: ResultEnvelope;
  auditSeq: number;
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
}

/** Creates the dispatcher: one row per call, on every outcome. */
export function createDispatcher(deps: DispatcherDeps) {
  const { registry, audit, config, log, hub, edges } = deps;
  const defaultTimeout = parseDuration(config.skills.default_timeout);
  const maxTimeout = parseDuration(config.skills.max_timeout);

  function resolveTimeout(requested: number | undefined): number {
    if (!requested) return defaultTimeout;
    if (requested > maxTimeout) {
      throw new OngridError(
        "invalid_argument",
        `timeout_ms: must be <= ${maxTimeout} (rule: maximum; skills.max_timeout is ${config.skills.max_timeout})`,
        "ask for a shorter deadline or raise skills.max_timeout",
      );
    }
    return requested;
  }

  function parseParams(input: ExecuteInput): unknown {
    if (input.paramsJson === undefined) return input.params ?? {};
    if (input.paramsJson.trim() === "") return {};
    try {
      return JSON.parse(input.paramsJson);
    } catch (err) {
      // The parser's message quotes the text around the fault, which may be part of a secret:
      // report only where it failed.
      const at = /position (\d+)/.exec((err as Error).message)?.[1];
      throw new OngridError(
        "invalid_argument",
        `params_json: is not valid JSON (rule: json)${at ? ` at position ${at}` : ""}`,
        "send the params as a JSON object, e.g. {\"query\": \"nginx 502\"}",
      );
    }
  }

  /** Where a call goes: in process, or down one edge's tunnel. */
  type Target = { skill: Skill; edgeId: string };

  async function resolveTarget(input: ExecuteInput): Promise<Target> {
    if (!input.key) throw new OngridError("invalid_argument", "key: is required (rule: required)", "name a skill; ListSkills shows the keys");
    const local = registry.get(input.key);
    if (local) {
      if (input.edgeId) {
        throw new OngridError(
          "invalid_argument",
          `edge_id: must be empty for the manager-scope skill "${local.meta.key}" (rule: scope)`,
          "leave edge_id out; this skill runs inside the manager",
        );
      }
      return { skill: local, edgeId: "" };
    }
    if (!input.edgeId) {
      const offeredBy = hub.sessions().filter((s) => s.skills.has(input.key)).map((s) => s.edgeId);
      if (!offeredBy.length) return { skill: registry.getOrThrow(input.key), edgeId: "" };
      throw new OngridError(
        "invalid_argument",
        `edge_id: is required for the host skill "${input.key}" (rule: required)`,
        `online edges offering it: ${offeredBy.slice(0, 10).join(", ")}${offeredBy.length > 10 ? ", …" : ""}`,
      );
    }
    const session = hub.session(input.edgeId);
    if (!session) {
      const row = await edges.get(input.edgeId);
      if (!row || row.revokedAt) throw new OngridError("not_found", `unknown edge "${input.edgeId}"`, "ListEdges shows the enrolled edges");
      const seen = row.lastSeenAt ? `last seen ${row.lastSeenAt.toISOString()}` : "never connected";
      throw new OngridError("unavailable", `edge "${input.edgeId}" is offline (${seen})`, "retry when the edge is back online, or pick another edge");
    }
    const skill = session.skills.get(input.key);
    if (!skill) {
      if (!hub.sessions().some((s) => s.skills.has(input.key))) registry.getOrThrow(input.key);
      throw new OngridError(
        "failed_precondition",
        `edge "${input.edgeId}" does not offer skill "${input.key}"`,
        "GetEdge lists the skills an edge offers; ListSkills shows which edges offer a key",
      );
    }
    return { skill, edgeId: input.edgeId };
  }

  const inflight = new Set<Promise<unknown>>();

  /** Runs one call end to end; throws AuditedError for refusals, returns the envelope otherwise. */
  function execute(input: ExecuteInput): Promise<ExecuteOutput> {
    const p = executeOnce(input);
    inflight.add(p);
    const done = () => inflight.delete(p);
    p.then(done, done);
    return p;
  }

  /** Resolves once every call started so far has written its audit row. */
  async function drain(): Promise<void> {
    while (inflight.size) await Promise.allSettled([...inflight]);
  }

  async function executeOnce(input: ExecuteInput): Promise<ExecuteOutput> {
    const startedAt = new Date();
    const callId = randomUUID();
    let args: unknown = input.paramsJson ?? input.params ?? {};
    let decision = "";
    let decisionReason = "";
    const base = () => ({
      sessionId: input.sessionId ?? "",
      toolName: input.key,
      args,
      deviceId: input.edgeId ?? "",
      startedAt,
      callerUserId: input.caller.userId,
      callerRole: input.caller.role,
      approvalId: "",
      sopHash: "",
    });
    let result: ResultEnvelope;
    try {
      const raw = parseParams(input);
      args = raw;
      const { skill, edgeId } = await resolveTarget(input);
      const params = validateParams(skill, raw);
      const timeoutMs = resolveTimeout(input.timeoutMs);
      const cls = effectiveClass(skill, params);
      if (cls !== "safe") {
        decision = "deny";
        decisionReason = `approval_required: effective class ${cls}`;
        throw new OngridError(
          "permission_denied",
          `approval required: "${skill.meta.key}" is ${cls} for these params and the approval workflow is not available`,
          "only safe calls run until approvals are enabled",
        );
      }
      decision = "allow";
      decisionReason = "safe";
      result = edgeId
        ? await hub.call(edgeId, skill.meta.key, params, timeoutMs, input.signal)
        : await runSkill(skill, params, {
            callId,
            timeoutMs,
            outputCapBytes: config.skills.output_cap_bytes,
            log: log.child({ skill: skill.meta.key, call_id: callId }),
            settings: (config.skills as Record<string, unknown>)[skill.meta.key] as Record<string, unknown> | undefined,
            signal: input.signal,
          });
    } catch (err) {
      let e: OngridError;
      if (err instanceof OngridError) e = err;
      else {
        log.error({ err: { message: redactString(String((err as Error)?.message ?? err)), stack: redactString(String((err as Error)?.stack ?? "")) } }, "unexpected error while dispatching a call");
        e = new OngridError("internal", "internal error while dispatching the call; see the manager log");
      }
      const finishedAt = new Date();
      const row = await audit.append({
        ...base(),
        result: null,
        error: `${e.code}: ${e.message}`,
        finishedAt,
        durationMs: finishedAt.getTime() - startedAt.getTime(),
        decision,
        decisionReason,
      });
      throw new AuditedError(e, row.seq);
    }
    const finishedAt = new Date();
    const row = await audit.append({
      ...base(),
      result,
      error: result.success ? "" : `${result.error?.code}: ${result.error?.message}`,
      finishedAt,
      durationMs: finishedAt.getTime() - startedAt.getTime(),
      decision,
      decisionReason,
    });
    return { result, auditSeq: row.seq };
  }

  /** Audits a request refused before any call was made (e.g. a fan-out with a bad selector) and throws it. */
  async function refuse(input: ExecuteInput, err: OngridError): Promise<never> {
    const now = new Date();
    const row = await audit.append({
      sessionId: input.sessionId ?? "",
      toolName: input.key,
      args: input.paramsJson ?? input.params ?? {},
      result: null,
      error: `${err.code}: ${err.message}`,
      deviceId: input.edgeId ?? "",
      startedAt: now,
      finishedAt: now,
      durationMs: 0,
      callerUserId: input.caller.userId,
      callerRole: input.caller.role,
      decision: "",
      decisionReason: "",
      approvalId: "",
      sopHash: "",
    });
    throw new AuditedError(err, row.seq);
  }

  return { execute, drain, refuse };
}

/** The dispatcher's interface, for the RPC services and the CLI. */
export type Dispatcher = ReturnType<typeof createDispatcher>;
