/**
 * The MCP endpoint on the manager's one port (M1): streamable HTTP at mcp.path. Each request is
 * authenticated by the plain-HTTP guard (the same tokens, refusals audited); a session belongs to
 * the user who opened it (another user's Mcp-Session-Id answers 404, as an unknown one does); a
 * browser Origin must be the manager's own (DNS rebinding); sessions are bounded per user and
 * closed when idle. When the fleet, the registry or the playbooks change, every session re-checks
 * its user's view and tells its client if that view changed.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { Logger } from "pino";
import { OngridError } from "../../skill/errors.ts";
import type { SkillRegistry } from "../../skill/registry.ts";
import type { AuditLog } from "../audit/types.ts";
import type { Hub } from "../fleet/hub.ts";
import type { Caller } from "../identity/caller.ts";
import type { IdentityStore } from "../identity/store.ts";
import { createGuard, type GuardRule } from "../http/guard.ts";
import { HttpError } from "../http/errors.ts";
import type { HttpRoute } from "../http/route.ts";
import { createMcpSession, type McpSession, type McpSessionDeps } from "./server/session.ts";

type Req = Parameters<HttpRoute>[0];
type Res = Parameters<HttpRoute>[1];

/** How often the fleet and registry are looked at for changes, and how often every view is re-checked anyway (reach and role changes). */
const WATCH_MS = 1000;
const RECHECK_ALL_MS = 15_000;

/** What the endpoint needs. */
export interface McpHttpDeps extends Omit<McpSessionDeps, "log"> {
  identity: Pick<IdentityStore, "authenticate">;
  audit: AuditLog;
  log: Logger;
  registry: SkillRegistry;
  hub: Hub;
  path: string;
  maxSessionsPerUser: number;
  idleTimeoutMs: number;
  maxRequestBytes: number;
}

interface Entry {
  transport: StreamableHTTPServerTransport;
  session: McpSession;
  userId: string;
  lastUsed: number;
}

const RULE: GuardRule = {
  name: "mcp",
  args: (req) => ({ method: req.method, path: (req.url ?? "").split("?")[0] }),
  hints: { unauthenticated: "send your ongrid API token as `Authorization: Bearer ogu_…` (docs/mcp.md shows each client's config)" },
};

/** Whether a browser's Origin is the manager's own address (the Host the request was sent to). */
export function originAllowed(origin: string | undefined, host: string | undefined): boolean {
  if (origin === undefined) return true;
  if (!host) return false;
  try {
    const o = new URL(origin);
    return (o.protocol === "http:" || o.protocol === "https:") && o.host.toLowerCase() === host.toLowerCase();
  } catch {
    return false;
  }
}

/** A JSON-RPC error answer for a request refused before it reached a session. */
function rpcError(res: Res, status: number, message: string): void {
  if (res.headersSent) return void res.end();
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: status === 404 ? -32001 : -32000, message }, id: null }));
}

/** A stable, cheap picture of what the views depend on: connected edges (skills, labels), registered skills and the playbook set. */
function viewSignature(hub: Hub, registry: SkillRegistry, playbooks: McpHttpDeps["playbooks"], ids: WeakMap<object, number>, next: { n: number }): string {
  const id = (o: object) => {
    let v = ids.get(o);
    if (v === undefined) ids.set(o, (v = ++next.n));
    return v;
  };
  const parts: string[] = [];
  for (const s of hub.sessions()) parts.push(`${s.edgeId}:${id(s.skills)}:${JSON.stringify(s.hello.labels)}`);
  parts.sort();
  for (const sk of registry.list()) parts.push(`#${id(sk)}`);
  parts.push(`pb:${id(playbooks.current())}`);
  return parts.join("|");
}

/** Creates the /mcp route; `close()` ends every session and the watcher (manager shutdown). */
export function createMcpRoute(deps: McpHttpDeps): { route: HttpRoute; close(): Promise<void>; sessionCount(): number } {
  const guard = createGuard(deps);
  const entries = new Map<string, Entry>();
  const ids = new WeakMap<object, number>();
  const counter = { n: 0 };
  let seen = "";
  /** Bumped whenever the views may have changed (sessions keep their view until it is). */
  let generation = 0;
  let lastFull = Date.now();

  const watcher = setInterval(() => {
    if (!entries.size) return;
    const now = viewSignature(deps.hub, deps.registry, deps.playbooks, ids, counter);
    const full = Date.now() - lastFull >= RECHECK_ALL_MS;
    if (now === seen && !full) return;
    seen = now;
    generation++;
    if (full) lastFull = Date.now();
    for (const e of entries.values()) e.session.recheck().catch((err: unknown) => deps.log.warn({ err: String(err) }, "MCP list_changed check failed"));
    // Idle sessions end here too.
    const cut = Date.now() - deps.idleTimeoutMs;
    for (const [sid, e] of entries) if (e.lastUsed < cut) void closeEntry(sid, e, "idle");
  }, WATCH_MS);
  watcher.unref();

  async function closeEntry(sid: string, e: Entry, why: string): Promise<void> {
    if (entries.get(sid) !== e) return;
    entries.delete(sid);
    deps.log.info({ mcp_session: sid, user: e.userId, client: e.session.client(), why }, "MCP session closed");
    await e.transport.close().catch(() => undefined);
    await e.session.server.close().catch(() => undefined);
  }

  async function open(req: Req, res: Res, who: Caller): Promise<void> {
    const mine = [...entries.values()].filter((e) => e.userId === who.userId).length;
    if (mine >= deps.maxSessionsPerUser) {
      await guard.refuse(req, res, RULE, new HttpError(429, "resource_exhausted", `"${who.userId}" already holds ${mine} MCP sessions (mcp.max_sessions_per_user)`, "close sessions you no longer use (HTTP DELETE with their Mcp-Session-Id), or wait for idle ones to end (mcp.session_idle_timeout)"), who);
      return;
    }
    let sid = "";
    const session = createMcpSession({ ...deps, viewGeneration: () => generation }, who, () => sid);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => `mcp_${randomBytes(16).toString("hex")}`,
      maxRequestBodySize: deps.maxRequestBytes,
      onsessioninitialized: (id) => {
        sid = id;
        entries.set(id, { transport, session, userId: who.userId, lastUsed: Date.now() });
        deps.log.info({ mcp_session: id, user: who.userId, client: session.client() }, "MCP session opened");
      },
      onsessionclosed: (id) => {
        const e = entries.get(id);
        if (e) void closeEntry(id, e, "closed by the client");
      },
    });
    transport.onclose = () => {
      const e = sid ? entries.get(sid) : undefined;
      if (e && e.transport === transport) entries.delete(sid);
    };
    await session.server.connect(transport);
    await transport.handleRequest(req as IncomingMessage, res as ServerResponse);
    // A first request that was not a valid initialize made no session: nothing stays behind.
    if (!sid) await session.server.close().catch(() => undefined);
  }

  async function serve(req: Req, res: Res): Promise<void> {
    if (!originAllowed(req.headers.origin, req.headers.host)) {
      await guard.refuse(req, res, RULE, new OngridError("permission_denied", `Origin ${String(req.headers.origin).slice(0, 128)} is not this manager's address`, "MCP clients in a browser must be served from the manager's own origin"));
      return;
    }
    const who = await guard.admit(req, res, RULE);
    if (!who) return;
    const header = req.headers["mcp-session-id"];
    const sid = Array.isArray(header) ? header[0] : header;
    if (!sid) {
      if (req.method !== "POST") return rpcError(res, 400, "Bad Request: no Mcp-Session-Id; open a session with a POST of initialize first");
      return open(req, res, who);
    }
    const e = entries.get(sid);
    // Another user's session is answered like an unknown one: its existence is not disclosed.
    if (!e || e.userId !== who.userId) return rpcError(res, 404, "Session not found: it ended or was never opened here; initialize a new one");
    e.lastUsed = Date.now();
    e.session.user = who; // role and reach as of this request's token lookup
    await e.transport.handleRequest(req as IncomingMessage, res as ServerResponse);
  }

  const route: HttpRoute = (req, res) => {
    if ((req.url ?? "").split("?")[0] !== deps.path) return false;
    serve(req, res).catch((err: unknown) => {
      deps.log.error({ err: String(err) }, "MCP request failed");
      rpcError(res, 500, "internal error; see the manager log");
    });
    return true;
  };

  return {
    route,
    sessionCount: () => entries.size,
    async close() {
      clearInterval(watcher);
      await Promise.all([...entries].map(([sid, e]) => closeEntry(sid, e, "manager shutting down")));
    },
  };
}
