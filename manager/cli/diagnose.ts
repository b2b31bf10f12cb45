/** `ongrid diagnose "text"`: a diagnosis session on a running manager, its events as they come, the report at the end. */
import { Command } from "commander";
import { PermissionMode } from "../../proto/gen/ongrid/v1/skill_pb.ts";
import { flagError, managerUrlOrLocal, rpcClients, withCoreOptions, type CoreOptions } from "./common.ts";

const MODES = ["READ_ONLY", "NORMAL", "ASK_DESTRUCTIVE", "BYPASS"];

/** One progress line per event on stderr. */
function progress(type: string, d: Record<string, any>): string | undefined {
  switch (type) {
    case "session":
      return `session ${d.sessionId}`;
    case "route":
      return `route: ${d.decision.isOncall ? d.decision.skillName : "not an operations question"} (${d.decision.path}${d.decision.fallbackCause ? `, ${d.decision.fallbackCause}` : ""})`;
    case "plan":
      return `plan (${d.source}): ${d.steps.length} steps — ${d.reason}`;
    case "tool_call":
      return `[${d.step}] ${d.tool} ${JSON.stringify(d.args)}`;
    case "tool_result":
      return `[${d.step}] ${d.tool}: ${d.pendingApproval ? `waiting for approval ${d.pendingApproval}` : d.success ? "ok" : "failed"}${d.deduped ? " (deduplicated)" : ""}`;
    case "guidance":
      return `guidance: ${d.tool} ${JSON.stringify(d.args)} ${d.success ? "read" : "failed"} (audit #${d.auditSeq}; not evidence)`;
    case "skipped":
      return `skipped ${d.tool}: ${d.reason}`;
    case "verdict":
      return `verifier: ${d.verdict}${d.unsupported.length ? ` — unsupported: ${d.unsupported.join("; ")}` : ""}`;
    default:
      return undefined;
  }
}

/** Builds `ongrid diagnose`. */
export function diagnoseCommand(): Command {
  return withCoreOptions(
    new Command("diagnose")
      .description("diagnose an incident on a running manager: route, plan, gated tool calls on an edge, a report (fallback steps when no model is configured)")
      .argument("<text...>", "the alert or question"),
  )
    .option("--edge <id>", "the edge to diagnose (default: the only online edge)")
    .option("--mode <mode>", "permission mode of the tool calls: READ_ONLY, NORMAL, ASK_DESTRUCTIVE")
    .option("--wait", "a tool call that needs approval waits for the approvers (within agent.max_duration) instead of going on without it")
    .option("--json", "print every event as a JSON line on stdout")
    .action(async (words: string[], opts: CoreOptions & { edge?: string; mode?: string; wait?: boolean }) => {
      const mode = opts.mode?.toUpperCase();
      if (mode && !MODES.includes(mode)) flagError("--mode", `must be one of ${MODES.join(", ")}, got "${opts.mode}"`);
      const url = managerUrlOrLocal(opts);
      const stream = rpcClients(url, opts).agent.diagnose({
        text: words.join(" "),
        edgeId: opts.edge ?? "",
        permissionMode: mode ? PermissionMode[mode as keyof typeof PermissionMode] : PermissionMode.UNSPECIFIED,
        waitForApproval: Boolean(opts.wait),
      });
      for await (const ev of stream) {
        const d = (ev.data ?? {}) as Record<string, any>;
        if (opts.json) {
          console.log(JSON.stringify({ session_id: ev.sessionId, type: ev.type, ...d }));
        } else if (ev.type === "report") {
          console.log(d.markdown);
        } else if (ev.type === "done") {
          console.error(`${d.status}: ${d.message}${d.usage?.totalTokens ? ` (tokens ${d.usage.promptTokens}+${d.usage.completionTokens})` : ""}`);
        } else {
          const line = progress(ev.type, d);
          if (line) console.error(line);
        }
        if (ev.type === "done") process.exitCode = d.status === "done" ? 0 : d.status === "refused" ? 3 : 1;
      }
    });
}
