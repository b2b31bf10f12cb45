/**
 * One MCP session (M1): an SDK Server bound to the authenticated user of the connection that
 * opened it. Its tools are the user's gated view, recomputed on every tools/list and re-checked
 * when the fleet, the registry or the playbooks change (notifications/*\/list_changed only when
 * this user's view did change).
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import { MANAGER_VERSION } from "../../version.ts";
import type { Caller } from "../../identity/caller.ts";
import { createMcpCaller, mcpCaller, type McpCallDeps } from "./call.ts";
import { SessionTaskStore } from "./tasks.ts";
import { getPrompt, listPrompts, listResources, playbooksDigest, readResource } from "./playbooks.ts";
import { mcpToolView, viewDigest, type ToolViewDeps } from "./tool-view.ts";
import type { PlaybookRegistry } from "../../playbooks/registry.ts";
import type { Dispatcher } from "../../calls/execute.ts";

/** What a session needs of the manager. */
export interface McpSessionDeps extends Omit<ToolViewDeps, "dispatcher">, Omit<McpCallDeps, "dispatcher"> {
  dispatcher: Pick<Dispatcher, "preview" | "execute" | "refuse">;
  playbooks: Pick<PlaybookRegistry, "current" | "get">;
  log: Logger;
  /** How long an MCP task and its result are kept (longer than an approval can wait). */
  taskTtlMs: number;
  /**
   * A number that changes whenever what the views depend on (edges, their skills and labels, the
   * registry, the playbooks) may have changed; the session keeps its view until it does or the
   * user's role or reach changes. Without it the view is computed on every request.
   */
  viewGeneration?: () => number;
}

/** Tasks one session may have running at once, and the poll interval its clients are told. */
const MAX_LIVE_TASKS = 32;
const TASK_POLL_MS = 1000;

const INSTRUCTIONS =
  "ongrid: operations skills on a fleet of hosts. Every tool call passes ongrid's permission gate and is audited. " +
  "Host tools need edge_id. A call that changes a host parks for human approval (its result is pending_approval; " +
  "approval_status tells what became of it). Prompts are diagnosis playbooks; follow the tools they allow.";

/** A session: its SDK server, the user, and the check that sends list_changed. */
export interface McpSession {
  server: Server;
  /** The user as last authenticated (a request with a fresh token lookup updates it: reach and role changes apply). */
  user: Caller;
  /** Re-computes the user's views and notifies the client of those that changed. */
  recheck(): Promise<void>;
  /** The client's name/version from initialize (for logs and audit). */
  client(): string;
}

/** Creates the SDK server of one session for `user`; `sessionId()` is the transport's Mcp-Session-Id. */
export function createMcpSession(deps: McpSessionDeps, firstUser: Caller, sessionId: () => string): McpSession {
  const tasks = new SessionTaskStore({ maxLive: MAX_LIVE_TASKS, ttlMs: deps.taskTtlMs, pollMs: TASK_POLL_MS });
  const server = new Server(
    { name: "ongrid", title: "ongrid", version: MANAGER_VERSION },
    {
      capabilities: {
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { listChanged: true },
        tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
      },
      instructions: INSTRUCTIONS,
      taskStore: tasks,
    },
  );
  server.onclose = () => tasks.close();
  const caller = createMcpCaller(deps);
  const session = { user: firstUser } as McpSession;
  const scope = () => ({ caller: mcpCaller(session.user) });
  let cached: { key: string; view: ReturnType<typeof mcpToolView> } | undefined;
  const view = () => {
    if (!deps.viewGeneration) return mcpToolView(deps, scope());
    const u = session.user;
    const key = `${deps.viewGeneration()}\u0000${u.userId}\u0000${u.role}\u0000${(u.reach ?? []).join("\u0001")}`;
    if (cached?.key !== key) cached = { key, view: mcpToolView(deps, scope()) };
    return cached.view;
  };
  let toolsSeen: string | undefined;
  let playbooksSeen: string | undefined;

  server.setRequestHandler(ListToolsRequestSchema, () => {
    const v = view();
    toolsSeen = viewDigest(v.tools);
    return { tools: v.tools.map((t) => t.tool) };
  });
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const token = req.params._meta?.progressToken;
    const ctx = {
      user: session.user,
      sessionId: sessionId(),
      client: clientName(),
      offered: view().byName,
      signal: extra.signal,
      progress: token === undefined ? undefined : (progress: number, message: string) => extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, message } }),
    };
    // A client that asked for a task gets one (MCP tasks); the call goes on in the background.
    if (req.params.task && extra.taskStore) {
      const store = extra.taskStore;
      return caller.startTask(ctx, req.params.name, req.params.arguments, { store, signalFor: (id) => tasks.signalFor(id), forget: (id) => tasks.forget(id) });
    }
    return caller.call(ctx, req.params.name, req.params.arguments);
  });
  server.setRequestHandler(ListPromptsRequestSchema, () => {
    playbooksSeen = playbooksDigest(deps.playbooks);
    return { prompts: listPrompts(deps.playbooks) };
  });
  server.setRequestHandler(GetPromptRequestSchema, (req) => getPrompt(deps.playbooks, req.params.name, req.params.arguments));
  server.setRequestHandler(ListResourcesRequestSchema, () => {
    playbooksSeen = playbooksDigest(deps.playbooks);
    return { resources: listResources(deps.playbooks) };
  });
  server.setRequestHandler(ReadResourceRequestSchema, (req) => readResource(deps.playbooks, req.params.uri));

  async function recheck(): Promise<void> {
    if (toolsSeen !== undefined) {
      const now = viewDigest(view().tools);
      if (now !== toolsSeen) {
        toolsSeen = now;
        await server.sendToolListChanged();
      }
    }
    if (playbooksSeen !== undefined) {
      const now = playbooksDigest(deps.playbooks);
      if (now !== playbooksSeen) {
        playbooksSeen = now;
        await server.sendPromptListChanged();
        await server.sendResourceListChanged();
      }
    }
  }

  return Object.assign(session, {
    server,
    recheck,
    client: clientName,
  });

  /** The client's "name/version" as it gave them in initialize: untrusted text, so cut short and stripped of control characters. */
  function clientName(): string {
    const c = server.getClientVersion();
    if (!c) return "";
    const clean = (v: unknown, max: number) => String(v ?? "").replace(/[\p{Cc}\p{Cf}]/gu, "").slice(0, max);
    return `${clean(c.name, 64)}/${clean(c.version, 32)}`;
  }
}
