/**
 * agent_tool (K4, the seeds' worker life cycle): starts a worker — a diagnosis session of its own
 * for one sub-question — waits for it and returns its report. The worker runs as the caller's
 * user (an agent's call: as the user the agent acts for), in the caller's permission mode, with
 * the agent's usual bounds (agent.max_steps, agent.max_duration) and this call's deadline; it is
 * a task task_stop can stop. Bounded: a worker cannot start workers, and a user runs at most
 * MAX_WORKERS_PER_USER at once. A worker inherits the calling playbook's whitelist (F3): called
 * under a playbook, the worker routes to a playbook of its own, but its tools and calls are limited
 * to what both that playbook and the caller's allow (agent_tool, safe, is offered under every
 * playbook; without this a worker would route itself to one that allows more).
 */
import { OngridError, SkillError } from "../../../../skill/errors.ts";
import { defineBaseTool } from "../../define.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { invocationOf } from "../../invocation.ts";
import { runDiagnosisTask, tasksOf } from "../../../agent/session/tasks.ts";
import type { Caller } from "../../../identity/caller.ts";

/** Workers one user may run at the same time. */
export const MAX_WORKERS_PER_USER = 3;

/** The user a call acts for: an agent's call (system) acts for its session's user, with that user's role and the agent's reach. */
export function userOf(caller: Caller): Caller {
  if (caller.role !== "system") return caller;
  if (!caller.onBehalfOf) throw new SkillError("permission_denied", "an agent call without a user it acts for cannot start a worker", "Start the worker from a session of a user.");
  return { userId: caller.onBehalfOf, role: caller.onBehalfRole ?? "viewer", reach: caller.reach };
}

/** The tool, bound to the manager's parts. */
export function createAgentTool(deps: BaseToolDeps) {
  return defineBaseTool<{ question: string; edge_id?: string }>({
    key: "agent_tool",
    name: "Start a worker agent",
    description:
      "Start a worker: a separate diagnosis session (router, playbook, gated tools, report, verifier) for one sub-question, wait for it and return its report. Use when an investigation splits into an independent question — e.g. \"is the database on db-01 healthy?\" while diagnosing web-01 — that deserves its own playbook. The worker runs as your user with the same permissions and within your playbook's allowed tools; it cannot start workers itself; this call's deadline bounds it, and task_stop stops it.",
    class: "safe",
    category: "agent",
    schema: {
      type: "object",
      additionalProperties: false,
      required: ["question"],
      properties: {
        question: { type: "string", minLength: 3, maxLength: 2000, description: "The sub-question, as an incident description: what is wrong, on which host or service." },
        edge_id: { type: "string", minLength: 1, maxLength: 128, description: "The edge the worker's host tools run on; omit when only one edge is online in your reach." },
      },
    },
    resultPreview: {
      session_id: "ses_0123456789abcdef0123",
      status: "done",
      playbook: "host_resource_diagnosis",
      path: "model",
      report: "# Diagnosis report …",
      verdict: { verdict: "supported", unsupported: [] },
      tool_calls: 4,
    },
    async execute(ctx, p) {
      const inv = invocationOf(ctx);
      const agent = deps.agent();
      if (!agent) throw new SkillError("unavailable", "the diagnosis agent is not running in this process", "Call agent_tool through the manager.");
      const registry = tasksOf(agent);
      const parent = inv.sessionId ? registry.get(inv.sessionId) : undefined;
      if (parent?.kind === "worker") {
        throw new SkillError("invalid_argument", `agent_tool: session ${inv.sessionId} is itself a worker, and a worker cannot start workers (rule: depth 1)`, "Answer the sub-question with your own tools, or report what is missing.");
      }
      const user = userOf(inv.caller);
      // Layer 0 goes with the worker: the allowed_tools of the playbook this call runs under.
      let whitelist: readonly string[] | undefined;
      if (inv.playbook) {
        whitelist = agent.allowedTools(inv.playbook);
        if (!whitelist) throw new SkillError("failed_precondition", `agent_tool: the playbook "${inv.playbook.slice(0, 64)}" this call runs under is not loaded, so a worker cannot inherit its allowed_tools`, "ListPlaybooks shows the loaded playbooks; call again under one of them.");
      }
      // The place is taken before the first await: a worker registers only once its session row is
      // written, so a count of the registered ones alone lets concurrent calls all pass.
      const slot = registry.reserve("worker", MAX_WORKERS_PER_USER, user.userId);
      if (!slot) {
        const running = registry.count("worker", user.userId);
        throw new SkillError("resource_exhausted", `${user.userId} already runs ${running} workers (at most ${MAX_WORKERS_PER_USER} at once)`, "Wait for one to finish, or stop one with task_stop.");
      }
      let out;
      try {
        out = await runDiagnosisTask(
          { agent, database: deps.database },
          { kind: "worker", parentSessionId: inv.sessionId, input: { text: p.question, user, edgeId: p.edge_id, mode: inv.mode, ...(whitelist ? { whitelist } : {}) }, signal: ctx.signal, slot },
          (id) => void deps.log.info({ worker: id, parent: inv.sessionId, user: user.userId }, "agent_tool: worker started"),
        );
      } catch (err) {
        // Refused before a session existed (e.g. the edge is not online): say why, as the model can act on it.
        if (err instanceof OngridError) throw new SkillError(err.code, err.message, err.hint);
        throw err;
      }
      if (out.status === "cancelled") throw new SkillError("stopped", `worker ${out.sessionId} was ${out.message} before it finished`, "Start it again if the question still matters.");
      if (out.status === "failed") throw new SkillError("worker_failed", `worker ${out.sessionId} failed: ${out.message}`, "Read the session in the console (/chat) for what it did; retry or answer the question another way.");
      return {
        session_id: out.sessionId,
        status: out.status,
        message: out.message,
        playbook: out.playbook,
        ...(inv.playbook ? { within_playbook: inv.playbook } : {}),
        path: out.path,
        report: out.report,
        ...(out.verdict ? { verdict: out.verdict } : {}),
        tool_calls: out.toolCalls,
      };
    },
  });
}
