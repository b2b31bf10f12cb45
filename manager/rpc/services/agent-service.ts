/** ongrid.v1.AgentService: the gated tool list and the call path for LLM runtimes (J1). */
import type { ServiceImpl } from "@connectrpc/connect";
import { AgentService } from "../../../proto/gen/ongrid/v1/agent_service_pb.ts";
import type { SkillRegistry } from "../../../skill/registry.ts";
import type { Dispatcher } from "../../calls/execute.ts";
import type { Hub } from "../../fleet/hub.ts";
import { callTool, systemCaller } from "../../agent/bridge/call.ts";
import { bridgeTools } from "../../agent/bridge/tools.ts";
import { resultToProto } from "../convert.ts";
import { approvalToProto } from "../messages/approval.ts";
import { callerOf } from "../../identity/caller.ts";
import { modeFromProto } from "../messages/mode.ts";
import type { Agent } from "../../agent/session/diagnose.ts";
import { diagnoseAsTask } from "../../agent/session/tasks.ts";
import type { Database } from "../../db/client.ts";
import type { IdentityStore } from "../../identity/store.ts";
import type { Caller } from "../../identity/caller.ts";
import { OngridError } from "../../../skill/errors.ts";

/** Builds the AgentService implementation. */
export function createAgentService(deps: { registry: SkillRegistry; hub: Hub; dispatcher: Dispatcher; agent: Agent; identity: IdentityStore; database: Database }): ServiceImpl<typeof AgentService> {
  /** The user a tool list is for: the caller, or (admins only) the named user with their role and reach. */
  async function subject(caller: Caller, userId: string): Promise<Caller> {
    if (!userId || userId === caller.userId) return caller;
    if (caller.role !== "admin") throw new OngridError("permission_denied", `user_id: only admins may list tools for another user ("${caller.userId}" is ${caller.role})`, "leave user_id empty for your own list");
    const u = await deps.identity.getUser(userId);
    if (!u) throw new OngridError("not_found", `unknown user "${userId.slice(0, 64)}"`, "ongrid users list shows the users");
    if (u.disabledAt) throw new OngridError("failed_precondition", `user "${u.id}" is disabled`);
    // The admin's own reach limits still apply: the list never names edges the admin cannot see.
    return { userId: u.id, role: u.role, reach: [...(caller.reach ?? []), ...(u.reach ? [u.reach] : [])] };
  }

  return {
    async *diagnose(req, ctx) {
      const user = callerOf(ctx);
      let sessionId = "";
      // A stoppable task while it runs: its owner or an admin may end it with task_stop.
      const task = { kind: "diagnosis" as const, input: { text: req.text, user, edgeId: req.edgeId || undefined, mode: modeFromProto(req.permissionMode), waitForApproval: req.waitForApproval }, signal: ctx.signal };
      for await (const ev of diagnoseAsTask({ agent: deps.agent, database: deps.database }, task)) {
        if (ev.type === "session") sessionId = ev.sessionId;
        const { type, ...rest } = ev;
        yield { sessionId, type, data: JSON.parse(JSON.stringify(rest)) as never };
      }
    },
    async listTools(req, ctx) {
      const user = await subject(callerOf(ctx), req.userId);
      const tools = bridgeTools(deps, { caller: systemCaller(user), mode: modeFromProto(req.permissionMode), playbook: req.playbook || undefined });
      return {
        toolsJson: JSON.stringify(tools.map((t) => t.tool)),
        tools: tools.map((t) => ({ name: t.skill.meta.key, edgeIds: t.edgeIds, needsApproval: t.behavior === "ask" })),
      };
    },
    async callTool(req, ctx) {
      const user = callerOf(ctx);
      // A call may join only the caller's own agent session: audit rows of agent calls are tied to
      // their user through the session. Ids that are not agent sessions here (an external
      // runtime's own) are taken as given.
      if (req.sessionId) {
        const owner = await deps.agent.sessionOwner(req.sessionId);
        if (owner !== undefined && owner !== user.userId) {
          await deps.dispatcher.refuse({ key: req.name, paramsJson: req.argumentsJson, caller: systemCaller(user) }, new OngridError("permission_denied", `session_id: "${req.sessionId.slice(0, 64)}" is another user's agent session (rule: owner)`, "use your own session id, or none"));
        }
      }
      const mode = modeFromProto(req.permissionMode);
      const playbook = req.playbook || undefined;
      let offered;
      try {
        offered = new Map(bridgeTools(deps, { caller: systemCaller(user), mode, playbook }).map((t) => [t.skill.meta.key, t]));
      } catch (err) {
        // An unknown playbook: refused and audited, like the same request through ExecuteSkill.
        if (err instanceof OngridError) await deps.dispatcher.refuse({ key: req.name, paramsJson: req.argumentsJson, sessionId: req.sessionId, caller: systemCaller(user) }, err);
        throw err;
      }
      const out = await callTool(deps.dispatcher, user, offered, {
        name: req.name,
        argumentsJson: req.argumentsJson,
        sessionId: req.sessionId,
        mode,
        playbook,
        timeoutMs: req.timeoutMs || undefined,
        signal: ctx.signal,
      });
      return {
        result: out.result ? resultToProto(out.result) : undefined,
        auditSeq: BigInt(out.auditSeq),
        approval: out.approval ? approvalToProto(out.approval) : undefined,
        content: out.content,
      };
    },
  };
}
