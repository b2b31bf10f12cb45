/**
 * A call of an upstream's tool (tools/call) for one ongrid call: its deadline passed on, its
 * cancellation sent upstream (notifications/cancelled), its result made the call's output, and
 * every way it can fail said as an error the caller can act on.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ErrorCode, McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { InjectedSecret } from "../../../skill/credential.ts";
import { SkillError } from "../../../skill/errors.ts";
import { cleanText, describeError } from "./secrets.ts";
import type { UpstreamSpec } from "./spec.ts";
import { toolOutput } from "./tool-result.ts";
import type { UpstreamCall } from "./tool-skill.ts";
import type { UpstreamLink } from "./transport.ts";

/** One live connection to an upstream, as the supervisor holds it. */
export interface LiveConnection {
  client: Client;
  link: UpstreamLink;
  /** Credential values: scrubbed from what the upstream returns. */
  secrets: InjectedSecret[];
  /** Every env or header value: scrubbed from log lines and error messages too. */
  logSecrets: InjectedSecret[];
  /** Resolves, once, with why the connection is lost. */
  lost: Promise<string>;
  lose(why: string): void;
}

/** The executor of an upstream's skills: calls on the live connection, or unavailable when there is none. */
export function createCall(o: { spec: UpstreamSpec; live: () => LiveConnection | undefined; unavailable: (detail?: string) => SkillError }): UpstreamCall {
  return async function call(tool, params, ctx) {
    const l = o.live();
    if (!l) throw o.unavailable();
    const budget = ctx.deadline - Date.now();
    const own = o.spec.timeoutMs !== undefined && o.spec.timeoutMs < budget;
    // The call's own deadline is runSkill's to report; the SDK's timer stands in for the upstream's.
    const timeout = Math.max(1, own ? o.spec.timeoutMs! : budget + 1000);
    const cancel = new AbortController();
    const onAbort = () => cancel.abort(typeof ctx.signal.reason === "symbol" ? "the ongrid call's deadline passed" : "the ongrid call was cancelled");
    if (ctx.signal.aborted) onAbort();
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    try {
      // The SDK sends notifications/cancelled when `cancel` aborts or its timeout passes.
      const result = await l.client.callTool({ name: tool, arguments: params }, undefined, { signal: cancel.signal, timeout });
      return toolOutput(o.spec.name, tool, result as CallToolResult, l.secrets);
    } catch (err) {
      if (err instanceof SkillError || cancel.signal.aborted) throw err;
      if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
        throw new SkillError("deadline_exceeded", `the upstream MCP server "${o.spec.name}" did not answer tools/call "${tool}" within ${timeout} ms (its timeout in mcp.upstreams); the request was cancelled`, "raise that timeout if the work really takes longer, or narrow the request");
      }
      if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed) {
        throw o.unavailable(`it went away during the call (${l.link.ended() ?? "the connection closed"})`);
      }
      if (err instanceof McpError) {
        throw new SkillError("upstream_error", `the upstream MCP server "${o.spec.name}" refused tools/call "${tool}": ${cleanText(err.message, l.logSecrets)}`, "its message says what it wanted; check the params against GetSkill");
      }
      if (err !== null && typeof err === "object" && "issues" in err) {
        throw new SkillError("upstream_error", `the upstream MCP server "${o.spec.name}" answered tools/call "${tool}" with something that is not a tool result`, "report it to whoever runs that server");
      }
      // Not an answer at all: the transport failed (connection refused, an HTTP error, a lost session).
      const why = `a request failed: ${describeError(err, l.logSecrets)}`;
      l.lose(why);
      throw o.unavailable(why);
    } finally {
      ctx.signal.removeEventListener("abort", onAbort);
    }
  };
}
