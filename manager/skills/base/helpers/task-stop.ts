/**
 * task_stop (K4): stops a running task by its session id — an agent_tool worker, a diagnosis the
 * Alertmanager webhook started, or a diagnosis streamed to its caller by AgentService/Diagnose
 * (manager/agent/session/tasks.ts). Only its owner or an admin may stop
 * it; an agent may stop its own user's tasks, never with its user's admin rights.
 */
import { SkillError } from "../../../../skill/errors.ts";
import { defineBaseTool } from "../../define.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { invocationOf } from "../../invocation.ts";
import { tasksOf } from "../../../agent/session/tasks.ts";
import { createSessionStore } from "../../../agent/session/store.ts";

/** The tool, bound to the manager's parts. */
export function createTaskStop(deps: BaseToolDeps) {
  const sessions = createSessionStore(deps.database);
  return defineBaseTool<{ id: string }>({
    key: "task_stop",
    name: "Stop a running task",
    description:
      "Stop a running task by its session id: a worker started by agent_tool, a diagnosis started for an incident, or a diagnosis someone runs from the console or `ongrid diagnose`. Its model calls and tool calls in flight are cancelled and the session is recorded as cancelled. Use when a worker runs on a question that no longer matters or takes too long. Only the task's owner or an admin may stop it.",
    class: "safe",
    category: "agent",
    schema: {
      type: "object",
      additionalProperties: false,
      required: ["id"],
      properties: { id: { type: "string", minLength: 1, maxLength: 64, description: "The task's session id (ses_…), as agent_tool, get_incident_detail or the console name it." } },
    },
    resultPreview: { stopped: true, id: "ses_0123456789abcdef0123", kind: "worker", owner: "alice", stopped_by: "alice", ended: true },
    async execute(ctx, p) {
      const { caller } = invocationOf(ctx);
      const agent = deps.agent();
      if (!agent) throw new SkillError("unavailable", "the diagnosis agent is not running in this process", "Call task_stop on the manager that runs the task.");
      // An agent acts for its user: it may stop that user's tasks, never with the user's admin rights.
      const agentCall = caller.role === "system";
      const who = agentCall ? (caller.onBehalfOf ?? "") : caller.userId;
      const admin = !agentCall && caller.role === "admin";
      const registry = tasksOf(agent);
      const task = registry.get(p.id);
      if (!task) {
        const s = await sessions.get(p.id);
        const mine = registry.list(who).map((t) => t.id);
        const yours = mine.length ? ` Your running tasks: ${mine.slice(0, 10).join(", ")}.` : "";
        if (!s || (s.userId !== who && !admin)) throw new SkillError("not_found", `no running task "${p.id.slice(0, 64)}"`, `Give the session id of a worker (agent_tool) or an incident's diagnosis.${yours}`);
        if (s.status !== "running") throw new SkillError("failed_precondition", `session ${s.id} already ended (status ${s.status})`, `Nothing to stop.${yours}`);
        throw new SkillError(
          "not_stoppable",
          `session ${s.id} is recorded as running but does not run in this manager process`,
          "It runs in another manager process sharing the database (stop it there), or the process that ran it ended without closing it.",
        );
      }
      if (task.owner !== who && !admin) {
        throw new SkillError("permission_denied", `task ${task.id} belongs to ${task.owner}; only its owner or an admin may stop it ("${caller.userId}"${agentCall ? ` acting for ${who}` : ""} is neither)`, "Ask its owner or an admin.");
      }
      const by = agentCall ? `${who} (agent)` : who;
      const out = await registry.stop(task.id, by);
      if (!out) throw new SkillError("failed_precondition", `task ${task.id} ended before it could be stopped`, "Nothing to stop.");
      deps.log.info({ task: task.id, kind: task.kind, owner: task.owner, by }, "task stopped (task_stop)");
      return { stopped: true, id: task.id, kind: task.kind, owner: task.owner, stopped_by: out.task.stoppedBy ?? by, ended: out.ended };
    },
  });
}
