/** The agent helpers (K4): send_message, task_stop, agent_tool; each tool in its own file. */
import type { SkillDefinition } from "../../../../skill/types.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { createSendMessage } from "./send-message.ts";
import { createTaskStop } from "./task-stop.ts";
import { createAgentTool } from "./agent-tool.ts";
import { tasksOf } from "../../../agent/session/tasks.ts";

/** Every helpers tool, bound to the manager's parts. */
export function createHelpersTools(deps: BaseToolDeps): SkillDefinition<any>[] {
  // At close, running tasks (workers, incident diagnoses) are stopped before the database closes.
  deps.onServe?.(() => async () => {
    const agent = deps.agent();
    if (agent) await tasksOf(agent).stopAll("the manager shutting down");
  });
  return [createSendMessage(deps), createTaskStop(deps), createAgentTool(deps)];
}
