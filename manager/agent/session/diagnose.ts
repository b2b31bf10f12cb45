/**
 * The diagnosis agent (J2, J3): Router → Planner → Executor → Verifier with a model; without one
 * (or when the model fails at the start) the playbook's fallback steps run deterministically and
 * the report lists what they returned, inventing nothing. Events stream to the caller; the
 * session is stored; every tool call goes through the gate and the audit log as user "0".
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { OngridError } from "../../../skill/errors.ts";
import { REDACTED, redactString } from "../../../skill/redact.ts";
import type { SkillRegistry } from "../../../skill/registry.ts";
import type { Dispatcher } from "../../calls/execute.ts";
import type { Caller } from "../../identity/caller.ts";
import type { PermissionMode } from "../../calls/gate.ts";
import { reaches } from "../../identity/reach.ts";
import { describeSteps, type Playbook } from "../../playbooks/parse.ts";
import { extractPlaceholders, fillPlaceholders, unmetCondition, type PlaceholderValues } from "../../playbooks/placeholders.ts";
import type { PlaybookRegistry } from "../../playbooks/registry.ts";
import type { Hub } from "../../fleet/hub.ts";
import { systemCaller } from "../bridge/call.ts";
import { condense } from "./condense.ts";
import { createEvidence } from "./evidence.ts";
import { fallbackReport, pastDiagnosesSection } from "./report.ts";
import { metered, type ModelClient, type ModelUsage } from "../llm.ts";
import { runPlanner } from "./planner.ts";
import { runExecutor } from "./executor.ts";
import { runVerifier } from "./verifier.ts";
import { guidanceEvent, toolResultEvent, type AgentEvent, type AgentLimits } from "./events.ts";
import type { RouteDecision, Router } from "../router/router.ts";
import type { SessionStore } from "./store.ts";
import { bridgeTools } from "../bridge/tools.ts";

/** What the agent needs. */
export interface AgentDeps {
  registry: SkillRegistry;
  hub: Hub;
  dispatcher: Dispatcher;
  playbooks: PlaybookRegistry;
  router: Router;
  sessions: SessionStore;
  model?: ModelClient;
  limits: AgentLimits;
  log: Logger;
}

/** One diagnosis request. */
export interface DiagnoseInput {
  text: string;
  user: Caller;
  edgeId?: string;
  mode?: PermissionMode;
  signal?: AbortSignal;
  /** A tool call that needs approval waits for it (bounded by the session's time) instead of telling the model it has not run. */
  waitForApproval?: boolean;
  /**
   * Layer 0 inherited from a parent (F3): the allowed_tools of the playbook the session was started
   * under (an agent_tool worker of a session under a playbook). Every tool listed to the model and
   * every call is then limited to what both it and the session's own playbook allow; read-only
   * tools stay exempt, guardrail tools must be in both.
   */
  whitelist?: readonly string[];
}

/** Condenses a long tool message deterministically (analyze_output's first stage). */
export const condenseContent = (content: string): string => `[condensed by analyze_output]\n${condense(content, { maxChars: 3000 }).summary}`;

/**
 * analyze_output's second stage (J5): with a model, the deterministic digest is summarised for the
 * incident in a few lines, kept under the digest; a model failure leaves the digest alone.
 */
export function modelCondenser(model: ModelClient, incident: string, signal?: AbortSignal) {
  return async (content: string): Promise<string> => {
    const digest = condenseContent(content);
    try {
      const res = await model.chat({
        signal,
        timeoutMs: 30_000,
        maxTokens: 400,
        messages: [
          { role: "system", content: "Summarise this condensed tool output for an SRE diagnosing the incident: at most 8 lines, facts from the output only (errors, counts, times, numbers), no advice." },
          { role: "user", content: `Incident: ${incident.slice(0, 500)}\n\nOutput digest:\n${digest}` },
        ],
      });
      return res.content ? `${digest}\n\n[model summary of the digest]\n${res.content.trim()}` : digest;
    } catch {
      return digest;
    }
  };
}

/** Creates the agent. */
export function createAgent(deps: AgentDeps) {
  /** The edge host tools run on: the one asked for, else the only online edge in the caller's reach. */
  function targetEdge(input: DiagnoseInput): string | undefined {
    if (input.edgeId) {
      // Checked before anything runs: a mistyped edge is one clear refusal, not a session of failures.
      const live = deps.hub.session(input.edgeId);
      if (!live || !reaches(input.user, live.hello.labels)) {
        throw new OngridError("invalid_argument", `edge_id: "${input.edgeId.slice(0, 64)}" is not an online edge in your reach (rule: online)`, "ListEdges shows the edges and whether they are online");
      }
      return input.edgeId;
    }
    const online = deps.hub.sessions().filter((s) => reaches(input.user, s.hello.labels)).map((s) => s.edgeId);
    if (online.length === 1) return online[0];
    if (online.length > 1) throw new OngridError("invalid_argument", `edge_id: is required when several edges are online (rule: required); online: ${online.slice(0, 10).join(", ")}`, "name the edge to diagnose (--edge ID)");
    return undefined;
  }

  async function* diagnose(input: DiagnoseInput): AsyncGenerator<AgentEvent> {
    const usage: ModelUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
    const addUsage = (u: ModelUsage) => {
      usage.promptTokens += u.promptTokens;
      usage.completionTokens += u.completionTokens;
      usage.totalTokens += u.totalTokens;
    };
    // Every model call of the session (planner, executor, verifier, summaries) counts its tokens here.
    const model = deps.model && metered(deps.model, addUsage);
    const edgeId = targetEdge(input);
    const sessionId = `ses_${randomUUID().replace(/-/g, "").slice(0, 20)}`;
    const text = redactString(input.text.trim());
    await deps.sessions.create({ id: sessionId, userId: input.user.userId, inputText: text.slice(0, 8000), edgeId: edgeId ?? "", mode: input.mode ?? "" });
    yield { type: "session", sessionId };
    let finished = false;
    const finish = async (status: "done" | "failed" | "refused", message: string, patch: Parameters<SessionStore["update"]>[1] = {}): Promise<AgentEvent> => {
      finished = true;
      await deps.sessions.update(sessionId, { status, error: status === "done" ? "" : message, promptTokens: usage.promptTokens, completionTokens: usage.completionTokens, model: deps.model?.model ?? "", ...patch });
      return { type: "done", status, message, usage: { ...usage } };
    };
    // The session's time bound covers everything after the route: model calls (all retries
    // included), tool calls and waits for approval.
    const deadline = Date.now() + deps.limits.maxDurationMs;
    const bounded = AbortSignal.any([...(input.signal ? [input.signal] : []), AbortSignal.timeout(deps.limits.maxDurationMs)]);
    try {
      const decision = await deps.router.route({ text: input.text, userId: input.user.userId, sessionId, signal: input.signal });
      addUsage(decision.usage);
      yield { type: "route", decision };
      await deps.sessions.update(sessionId, { routeDecisionId: decision.id, skillName: decision.skillName });
      if (!decision.isOncall) {
        yield await finish("refused", decision.reason);
        return;
      }
      const playbook = deps.playbooks.get(decision.skillName) ?? deps.playbooks.get("generic_oncall")!;
      const agentCaller = systemCaller(input.user);
      const { whitelist } = input;
      const offered = new Map(bridgeTools(deps, { caller: agentCaller, mode: input.mode, playbook: playbook.name, ...(whitelist ? { whitelist } : {}) }).map((t) => [t.skill.meta.key, t]));
      // An inherited whitelist goes with every call too: the gate intersects it with the playbook's.
      const dispatcher: Pick<Dispatcher, "execute" | "refuse"> = whitelist ? { execute: (call) => deps.dispatcher.execute({ ...call, whitelist }), refuse: (call, err) => deps.dispatcher.refuse({ ...call, whitelist }, err) } : deps.dispatcher;
      const evidence = createEvidence({ dispatcher, user: input.user, offered, sessionId, mode: input.mode, playbook: playbook.name, condense: model ? modelCondenser(model, text, bounded) : condenseContent, signal: bounded, waitForApproval: input.waitForApproval });

      const recalled = deps.router.recalledPages?.(decision) ?? [];
      if (model) {
        // Planner, Executor, Verifier in turn. The stored plan is the last one: a replan's, if any.
        let plan = await runPlanner({ model, playbook, text, recalled, signal: bounded });
        yield plan;
        let report = "";
        // Which past diagnoses the plan was made with (L2): stated by the agent, not left to the model;
        // the verifier checks the model's report alone.
        const withPast = (markdown: string) => `${markdown}\n\n${pastDiagnosesSection(recalled, "The planner was given these past diagnoses of similar incidents (hints, not evidence):")}`;
        for await (const ev of runExecutor({ model, playbook: playbook.name, text, steps: plan.steps, edgeId, offered, evidence, limits: deps.limits, deadline, signal: bounded, log: deps.log })) {
          if (ev.type === "report") {
            report = ev.markdown;
            yield recalled.length ? { ...ev, markdown: withPast(ev.markdown) } : ev;
            continue;
          }
          if (ev.type === "plan") plan = ev;
          yield ev;
        }
        const verdict = await runVerifier({ model, report, evidence: evidence.items(), signal: bounded });
        if (recalled.length) report = withPast(report);
        yield verdict;
        yield await finish("done", "diagnosis finished", { path: "model", report, verdict, plan, toolCalls: evidence.items().length });
        return;
      }

      // No model: the playbook's fallback steps, as written, and a report of what they returned.
      const steps = describeSteps(playbook.fallbackSteps);
      yield { type: "plan", source: "fallback_steps", steps, reason: `no model configured: ${playbook.name}'s fallback steps run as written` };
      // From the redacted text: a token in the input never becomes a tool argument.
      const values = Object.fromEntries(Object.entries(extractPlaceholders(text)).filter(([, v]) => !String(v).includes(REDACTED.slice(0, -1)))) as PlaceholderValues;
      const skipped: Array<{ tool: string; reason: string }> = [];
      const skip = (tool: string, reason: string): AgentEvent => (skipped.push({ tool, reason }), { type: "skipped", tool, reason });
      for (const step of playbook.fallbackSteps) {
        if (Date.now() > deadline || input.signal?.aborted) {
          skipped.push({ tool: step.tool, reason: "the session's time bound (agent.max_duration) was reached" });
          continue;
        }
        const unmet = unmetCondition(step.when, values);
        if (unmet) {
          yield skip(step.tool, unmet);
          continue;
        }
        const filled = fillPlaceholders(step.args, values);
        if ("missing" in filled) {
          yield skip(step.tool, `the input names no ${filled.missing.map((n) => `{{${n}}}`).join(", ")}`);
          continue;
        }
        const host = offered.get(step.tool)?.skill.meta.scope === "host";
        if (host && !edgeId) {
          yield skip(step.tool, "no edge to run it on (no online edge in your reach)");
          continue;
        }
        const args = host ? { edge_id: edgeId, ...filled.args } : filled.args;
        if (evidence.isGuidance(step.tool)) {
          yield guidanceEvent(await evidence.call(step.tool, JSON.stringify(args)));
          continue;
        }
        yield { type: "tool_call", step: evidence.items().length + 1, tool: step.tool, args };
        const item = await evidence.call(step.tool, JSON.stringify(args));
        yield toolResultEvent(item);
      }
      const report = fallbackReport(input.text, decision, playbook, edgeId, evidence.items(), skipped, sessionId, recalled);
      yield { type: "report", path: "fallback", markdown: report };
      yield await finish("done", "diagnosis finished (fallback steps, no model)", { path: "fallback", report, plan: { source: "fallback_steps", steps }, toolCalls: evidence.items().length });
    } catch (err) {
      const e = err instanceof OngridError ? err : new OngridError("internal", "the diagnosis failed unexpectedly; see the manager log");
      if (!(err instanceof OngridError)) deps.log.error({ err: String(err), session: sessionId }, "diagnosis failed");
      yield await finish("failed", `${e.code}: ${e.message}`);
    } finally {
      // The caller went away mid-session (the generator was closed): record it, never leave "running".
      if (!finished) await deps.sessions.update(sessionId, { status: "failed", error: "cancelled: the caller went away", promptTokens: usage.promptTokens, completionTokens: usage.completionTokens }).catch(() => {});
    }
  }

  /** The user who started a session, or undefined for an id that is not an agent session here. */
  async function sessionOwner(id: string): Promise<string | undefined> {
    return (await deps.sessions.get(id))?.userId;
  }

  /** A loaded playbook's allowed_tools (what a worker started under it inherits), or undefined for an unknown name. */
  function allowedTools(playbook: string): readonly string[] | undefined {
    return deps.playbooks.get(playbook)?.allowedTools;
  }

  return { diagnose, sessionOwner, allowedTools };
}

/** The agent's interface. */
export type Agent = ReturnType<typeof createAgent>;
