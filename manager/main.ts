/** Starts a manager: the core (core.ts) behind one port, and its lifecycle. */
import { createRefusalAudit } from "./audit/throttle.ts";
import type { Cluster } from "./fleet/cluster.ts";
import { createPeerHandler, createPeerLinkHandler, PEER_LINK_PATH, PEER_PATH_PREFIX } from "./fleet/peer-service.ts";
import { PRESENCE_CHANNEL } from "./fleet/cluster.ts";
import type { Interceptor } from "@connectrpc/connect";
import type { ManagerLease } from "./fleet/lease.ts";
import { type PackSet } from "../skill/pack/loader.ts";
import { type Logger } from "pino";
import { OngridError } from "../skill/errors.ts";
import { isLoopbackHost } from "../skill/net.ts";
import type { SkillRegistry } from "../skill/registry.ts";
import { type Database } from "./db/client.ts";
import type { AuditLog } from "./audit/types.ts";
import type { ManagerConfig } from "./config/schema.ts";
import { textGuard } from "./rpc/text-guard.ts";
import { type Dispatcher } from "./calls/execute.ts";
import { parseDuration } from "../skill/duration.ts";
import { type EdgeStore } from "./fleet/edge-store.ts";
import { TUNNEL_PATH, type Hub } from "./fleet/hub.ts";
import { listen } from "./rpc/listen.ts";
import { rpcAdapter } from "./rpc/adapter.ts";
import { routes } from "./rpc/routes.ts";
import { createConsole } from "./http/console.ts";
import { createMetricsRoute } from "./http/metrics.ts";
import { createHookRoutes } from "./http/hooks.ts";
import type { HttpRoute } from "./http/route.ts";
import { createMcpRoute } from "./mcp/http.ts";
import { toConnectError } from "./rpc/errors.ts";
import { auditUndecodable, auditUndecoded, markDecoded, requestContextValues, streamContextValues } from "./rpc/undecoded-audit.ts";
import { grpcUnaryHandlers } from "./rpc/grpc-unary.ts";
import { type IdentityStore } from "./identity/store.ts";
import { type ApprovalStore } from "./calls/approvals/store.ts";
import { type ApprovalWorkflow } from "./calls/approvals/workflow.ts";
import { type CredentialStore } from "./calls/credentials/store.ts";
import { authInterceptor } from "./rpc/auth.ts";
import { type PlaybookRegistry } from "./playbooks/registry.ts";
import { type Router } from "./agent/router/router.ts";
import { type Agent } from "./agent/session/diagnose.ts";
import { createLogger, openCore } from "./core.ts";
import type { UpstreamSet } from "./mcp/upstream/upstreams.ts";

/** A running manager. */
export interface Manager {
  url: string;
  port: number;
  registry: SkillRegistry;
  audit: AuditLog;
  dispatcher: Dispatcher;
  hub: Hub;
  edges: EdgeStore;
  /** Skill packs of the manager (packs.dirs), when configured. */
  packs?: PackSet;
  database: Database;
  identity: IdentityStore;
  approvals: ApprovalStore;
  workflow: ApprovalWorkflow;
  credentials: CredentialStore;
  playbooks: PlaybookRegistry;
  router: Router;
  agent: Agent;
  /** The upstream MCP servers of mcp.upstreams, whose tools are manager skills. */
  upstreams: UpstreamSet;
  /** This manager's id and lease among the managers sharing the database. */
  lease: ManagerLease;
  /** The fleet across the managers sharing the database (the hub is this, seen as a Hub). */
  cluster: Cluster;
  /** Set on the first start of an empty database: the "admin" user's token, to print once. */
  bootstrapToken?: string;
  log: Logger;
  close(): Promise<void>;
}

/** Starts a manager on the configured port. */
export async function startManager(config: ManagerConfig, log: Logger = createLogger(config.log_level)): Promise<Manager> {
  // Checked here, not when the config is loaded: the CLI reads the same config as a client, where
  // require_tls means "refuse an http:// manager URL" and needs no certificate of its own.
  if (config.server.require_tls && !config.server.tls_cert) {
    throw new OngridError(
      "invalid_argument",
      "invalid config:\n  server.require_tls: TLS is required but server.tls_cert and server.tls_key are not set (rule: requires)",
      "set server.tls_cert and server.tls_key (ONGRID_TLS_CERT, ONGRID_TLS_KEY), or unset server.require_tls",
    );
  }
  if (!config.server.tls_cert && !isLoopbackHost(config.server.host)) {
    log.warn({ host: config.server.host }, "serving plaintext on an address other hosts can reach: API tokens, edge tokens and every call cross the network in clear; set server.tls_cert and server.tls_key (server.require_tls refuses to start without them)");
  }
  const core = await openCore(config, log);
  await core.edges.resetPresence();
  if (config.gate.allow_bypass) log.warn("gate.allow_bypass is set: callers may ask for BYPASS mode and run non-safe skills WITHOUT approval (development only)");
  if (config.gate.default_mode === "BYPASS" && !config.gate.allow_bypass) {
    await core.database.close();
    throw new OngridError("invalid_argument", "gate.default_mode: BYPASS needs gate.allow_bypass: true (rule: bypass)", "BYPASS is for development only");
  }
  const boot = await core.identity.bootstrap();
  if (boot) log.warn({ user: boot.userId }, "first start: created the admin user; its token is printed once on stdout");
  const errorMapper: Interceptor = (next) => async (req) => {
    let res;
    try {
      res = await next(req);
    } catch (err) {
      throw toConnectError(err, log);
    }
    if (!res.stream) return res;
    // Streaming handlers fail while their messages are being iterated: map those errors too.
    const messages = res.message;
    return {
      ...res,
      message: (async function* () {
        try {
          yield* messages;
        } catch (err) {
          throw toConnectError(err, log);
        }
      })(),
    } as typeof res;
  };
  const serveConsole = createConsole(config.server.console_dir || undefined);
  const mcp = config.mcp.enabled
    ? createMcpRoute({
        ...core,
        log,
        path: config.mcp.path,
        approvalWaitMs: Math.min(parseDuration(config.mcp.approval_wait), 600_000),
        // A task outlives the approval it waits on by a margin, so its result can still be fetched.
        taskTtlMs: parseDuration(config.approvals.ttl) + 15 * 60_000,
        withdraw: (user, id, reason) => core.workflow.deny(user, id, reason),
        maxSessionsPerUser: config.mcp.max_sessions_per_user,
        idleTimeoutMs: parseDuration(config.mcp.session_idle_timeout),
        maxRequestBytes: config.server.max_request_bytes,
      })
    : undefined;
  const httpRoutes: HttpRoute[] = [createMetricsRoute({ ...core, config, log }), createHookRoutes({ ...core, config, log }), ...(mcp ? [mcp.route] : [])];
  const interceptors = [markDecoded, errorMapper, authInterceptor({ identity: core.identity, audit: core.audit, log, authFailures: { limit: config.server.auth_failures_per_minute, windowMs: parseDuration(config.server.auth_failure_window) } }), textGuard];
  const rpc = rpcAdapter({
    routes: routes({ ...core, outputCapBytes: config.skills.output_cap_bytes, reloadEverywhere: (what) => core.cluster.reloadEverywhere(what) }),
    readMaxBytes: config.server.max_request_bytes,
    interceptors,
    contextValues: requestContextValues,
    fallback: (req, res) => {
      try {
        if (req.url === "/healthz") {
          res.writeHead(200, { "content-type": "text/plain" });
          res.end("ok\n");
          return;
        }
        for (const route of httpRoutes) if (route(req, res)) return;
        if (serveConsole(req, res)) return;
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ code: "not_found", message: `no route for ${req.method} ${req.url}` }));
      } catch (err) {
        // A throw here would reach no handler and end the process: answer 500 and keep serving.
        log.error({ err, url: req.url }, "request failed outside the RPC router");
        if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ code: "internal", message: "internal error" }));
      }
    },
  });
  const userHandler = auditUndecoded(rpc, core.audit, log);
  // The peer service (M2) has a router of its own, authenticated by the cluster credential only.
  const refusedPeer = createRefusalAudit(core.audit);
  const peerOptions = {
    call: core.peering.localHub.call,
    holds: (edgeId: string) => Boolean(core.peering.localHub.session(edgeId)),
    self: core.peering.self,
    secret: core.peering.secret,
    log,
    readMaxBytes: Math.max(config.server.max_request_bytes, 64 * 1024 * 1024),
    // Unauthenticated like any request without a valid credential: audited, throttled per RPC.
    refused: (rpc: string, reason: string) =>
      refusedPeer({ toolName: rpc, args: { rpc } }, new OngridError("unauthenticated", `not a manager of this cluster: ${reason}`), { userId: "", role: "" }, `peer|${rpc}`),
  };
  const peerHandler = createPeerHandler(peerOptions);
  // Link, the managers' own path, is served straight on HTTP/2 streams (see `streams` below).
  const peerLink = createPeerLinkHandler(peerOptions);
  const handler = ((req: Parameters<typeof userHandler>[0], res: Parameters<typeof userHandler>[1]) =>
    (req.url ?? "").startsWith(PEER_PATH_PREFIX) ? peerHandler(req, res) : userHandler(req, res)) as typeof userHandler;
  // Unary gRPC calls in their common form skip connect's generic pipeline (same interceptors,
  // same services; see rpc/grpc-unary.ts); the rest goes through `handler`.
  const unary = grpcUnaryHandlers(rpc.specs, {
    interceptors,
    readMaxBytes: config.server.max_request_bytes,
    contextValues: streamContextValues,
    onUndecodable: (path, err, startedAt) => auditUndecodable(core.audit, log, path, startedAt, err.code),
    mapError: (err) => toConnectError(err, log),
  });
  let listener;
  try {
    listener = await listen(handler, {
      host: config.server.host,
      port: config.server.port,
      tlsCert: config.server.tls_cert || undefined,
      tlsKey: config.server.tls_key || undefined,
      streams: { ...unary, [TUNNEL_PATH]: core.hub.handleStream, [PEER_LINK_PATH]: peerLink },
      limits: {
        headersTimeoutMs: parseDuration(config.server.header_timeout ?? "10s"),
        requestTimeoutMs: parseDuration(config.server.request_timeout ?? "60s"),
        maxConcurrentStreams: config.server.max_concurrent_streams ?? 1000,
        maxIncompleteStreams: config.server.max_incomplete_streams ?? 100,
        maxConnectionsPerAddress: config.server.max_connections_per_address ?? 4096,
      },
      // Once per connection the front door closes for a limit (never per stream: a flood would flood the log).
      onLimit: (what, peer) => log.warn({ peer, limit: what }, "closed a connection over a front-door limit"),
    });
  } catch (err) {
    await core.database.close();
    throw err;
  }
  // The CLI on this host finds the manager holding the data directory by the URL in its lock file.
  await core.database.advertise?.(listener.url).catch((err: Error) => log.warn({ err: err.message }, "could not write the manager's URL into the data directory's lock file"));
  // This manager among those sharing the database: its lease, renewed; lapsed managers' edges offline.
  let stopApprovalRelay: (() => Promise<void>) | undefined;
  try {
    await core.peering.loadSecret();
    await core.lease.start(config.server.advertise_url || listener.url);
    // The edges the other live managers hold, and the channels they announce changes on.
    await core.cluster.start();
    stopApprovalRelay = await core.approvals.listen();
    // Approved calls left running by this manager's previous run, or by managers now dead, fail.
    await core.workflow.recover();
    core.workflow.start();
  } catch (err) {
    await listener.close();
    await core.database.close();
    throw err;
  }
  const stopWatching = config.packs.watch ? core.packs?.watch() : undefined;
  const stopWatchingPlaybooks = config.playbooks.watch ? core.playbooks.watch() : undefined;
  const stopServing = core.serving.map((start) => start());
  log.info({ url: listener.url, tls: listener.tls, db: core.database.kind, skills: core.registry.size, manager_id: core.lease.id }, "manager listening");
  return {
    url: listener.url,
    port: listener.port,
    ...core,
    bootstrapToken: boot?.token,
    log,
    async close() {
      stopWatching?.();
      stopWatchingPlaybooks?.();
      core.workflow.stop();
      await core.cluster.stop();
      core.peering.peers.close();
      await stopApprovalRelay?.().catch(() => undefined);
      core.hub.closeAll();
      // MCP sessions hold open SSE streams the listener would wait for.
      await mcp?.close();
      await listener.close();
      await core.dispatcher.drain();
      await core.audit.flush();
      await Promise.allSettled(stopServing.map((stop) => stop()));
      await core.edges.flushPresence().catch((err: Error) => log.warn({ err: err.message }, "could not record every edge offline at close"));
      await core.lease.stop().catch((err: Error) => log.warn({ err: err.message }, "could not remove the manager's lease; the others will see it dead once it lapses"));
      if (core.database.kind === "postgres") await core.database.notify(PRESENCE_CHANNEL, core.lease.id).catch(() => undefined);
      await core.database.close();
    },
  };
}
