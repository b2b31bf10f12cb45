/** The composition root: opens storage, the registries, the dispatcher and the agent, without listening (the CLI runs skills on it in process). */
import { createPackSet } from "../skill/pack/loader.ts";
import pino, { type Logger } from "pino";
import { OngridError } from "../skill/errors.ts";
import type { SkillRegistry } from "../skill/registry.ts";
import type { Skill } from "../skill/types.ts";
import { openDatabase } from "./db/client.ts";
import { createAuditLog } from "./audit/log.ts";
import type { ManagerConfig } from "./config/schema.ts";
import { configureShellPolicy } from "../skill/risk/index.ts";
import { ExecAllowError } from "../skill/risk/allow.ts";
import { createManagerRegistry } from "./skills/builtin/index.ts";
import { createDispatcher } from "./calls/execute.ts";
import { parseDuration } from "../skill/duration.ts";
import { createEdgeStore } from "./fleet/edge-store.ts";
import { createHub, type Hub } from "./fleet/hub.ts";
import { createManagerMetrics } from "./observability/metrics.ts";
import { createBaseTools } from "./skills/index.ts";
import { topologyToolDefinitions } from "./skills/base/topology/index.ts";
import { buildSkill } from "../skill/registry.ts";
import { createManagerLease, managerIdOf } from "./fleet/lease.ts";
import { createCluster, type Cluster } from "./fleet/cluster.ts";
import { createPeerLink } from "./fleet/peer-link.ts";
import { clusterSecret } from "./fleet/peer-auth.ts";
import { createIdentityStore } from "./identity/store.ts";
import { createApprovalStore } from "./calls/approvals/store.ts";
import { createApprovalWorkflow } from "./calls/approvals/workflow.ts";
import { createCredentialStore } from "./calls/credentials/store.ts";
import { loadCredentialKey } from "./calls/credentials/crypto.ts";
import { createPlaybookRegistry, type PlaybookRegistry } from "./playbooks/registry.ts";
import { createToolCatalog } from "./playbooks/catalog.ts";
import { createReadSkill } from "./skills/builtin/read-skill.ts";
import { createModelClient } from "./agent/llm.ts";
import { createRouter } from "./agent/router/router.ts";
import { createDirectoryRecall } from "./agent/router/recall.ts";
import { createRouteStore } from "./agent/router/route-store.ts";
import { createAgent } from "./agent/session/diagnose.ts";
import { createSessionStore } from "./agent/session/store.ts";
import { createUpstreams } from "./mcp/upstream/upstreams.ts";

import { MANAGER_VERSION } from "./version.ts";

/** The manager's version (manager/version.ts), reported to edges and in logs. */
export { MANAGER_VERSION };

/** Creates the logger every part of the manager shares (JSON lines on stderr). */
export function createLogger(level: ManagerConfig["log_level"]): Logger {
  return pino({ level, base: { svc: "ongrid-manager" } }, pino.destination(2));
}

/** A ':'-separated directory list from the config; empty entries dropped. */
export function splitDirs(value: string): string[] {
  return value.split(":").map((d) => d.trim()).filter(Boolean);
}

/** Loads the playbooks (configured dirs, disabled list, tool check) and registers read_skill over them. */
export function openPlaybooks(config: ManagerConfig, registry: SkillRegistry, edgeSkills: () => Skill[], log: Logger): PlaybookRegistry {
  // The manager's base tools are registered after the playbooks load (they need the dispatcher);
  // the tool check knows the ones playbooks list by their metadata meanwhile.
  const known = topologyToolDefinitions().map((d) => buildSkill(d));
  // Registered first so the playbooks' tool check knows it; it reads the registry at call time.
  registry.register(createReadSkill({ current: () => playbooks.current() }));
  const playbooks: PlaybookRegistry = createPlaybookRegistry({
    dirs: splitDirs(config.playbooks.dirs),
    disabled: config.playbooks.disabled.split(",").map((n) => n.trim()).filter(Boolean),
    tools: createToolCatalog({ registry, edgeSkills, hostPackDirs: splitDirs(config.packs.local_edge_dirs), known: () => known }),
    log,
  });
  return playbooks;
}

/** The manager's parts as openCore assembles them. */
export type Core = Awaited<ReturnType<typeof openCore>> & { config: ManagerConfig; log: Logger };

/** Opens storage, the registries and the router without listening: what the CLI needs to run skills in process. */
export async function openCore(config: ManagerConfig, log: Logger) {
  // The gate classifies exec calls with the same read roots and allowlist the edges are told to use.
  try {
    configureShellPolicy({ readRoots: splitDirs(config.skills.exec?.read_roots ?? "/var/log"), allowFile: config.skills.exec?.allow_file || undefined });
  } catch (err) {
    if (err instanceof ExecAllowError) throw new OngridError("invalid_argument", `skills.exec.allow_file: ${err.message}`, "fix the file (docs/security.md, \"Adding to the exec allowlist\"), or set skills.exec.allow_file to \"\" for the built-in allowlist");
    throw err;
  }
  const registry = createManagerRegistry(log);
  const packDirs = splitDirs(config.packs.dirs);
  const packs = packDirs.length ? createPackSet({ dirs: packDirs, scope: "manager", registry, log }) : undefined;
  packs?.rescan();
  // Before the database opens: a missing generic_oncall stops the start with nothing to close.
  let hub: Hub | undefined;
  const playbooks = openPlaybooks(config, registry, () => (hub?.sessions() ?? []).flatMap((s) => [...s.skills.values()]), log);
  const model = createModelClient(config.model, log);
  const database = await openDatabase({ databaseUrl: config.database_url || undefined, dataDir: config.data_dir, log });
  const audit = createAuditLog(database, { log });
  const managerId = managerIdOf(config.server.manager_id ?? "");
  let cluster: Cluster | undefined;
  const edges = createEdgeStore(database, managerId, { onPresenceWritten: () => cluster?.announce() });
  const lease = createManagerLease({
    database,
    id: managerId,
    version: MANAGER_VERSION,
    ttlMs: parseDuration(config.server.lease_ttl ?? "30s"),
    log,
    onRecovered: async () => {
      await edges.reassert(localHub.sessions().map((s) => s.edgeId));
      cluster?.announce();
    },
  });
  const localHub = createHub({
    store: edges,
    log,
    managerVersion: MANAGER_VERSION,
    heartbeatMs: parseDuration(config.tunnel.heartbeat_interval),
    maxFrameBytes: config.tunnel.max_frame_bytes,
    helloTimeoutMs: parseDuration(config.tunnel.hello_timeout),
    outputCapBytes: config.skills.output_cap_bytes,
  });
  // The cluster secret is read (or first written) when the manager starts serving (startManager).
  let peerSecret = "";
  const peers = createPeerLink({ self: managerId, secret: () => peerSecret, tlsCa: config.server.peer_ca || config.server.tls_cert || undefined, requireTls: config.server.require_tls, log });
  cluster = createCluster({
    local: localHub,
    database,
    lease,
    peers,
    pollMs: parseDuration(config.server.presence_poll ?? "1s"),
    log,
    labelsOf: async (id) => (await edges.credential(id))?.labels,
    // A rescan or reload asked through another manager: the same here, from this manager's files.
    onReload: (what) => {
      const r = what === "packs" ? packs?.rescan() : playbooks.reload();
      if (r) log.info({ what, loaded: r.loaded.length, problems: r.problems.length }, `${what} reloaded: another manager was asked to`);
    },
  });
  hub = cluster;
  const peering = {
    self: managerId,
    peers,
    localHub,
    secret: () => peerSecret,
    async loadSecret() {
      peerSecret = await clusterSecret(database, config.server.cluster_secret ?? "");
    },
  };
  const identity = createIdentityStore(database, { tokenCacheMs: parseDuration(config.server.token_cache) });
  const approvals = createApprovalStore(database, { managerId, onAnnounceError: (err) => log.warn({ err: err.message }, "could not relay an approval change between managers") });
  const credentials = createCredentialStore(database, loadCredentialKey(config.credentials));
  const metrics = createManagerMetrics({
    knows: (key) => Boolean(registry.get(key)) || Boolean(hub?.offered(key)),
    connectedEdges: () => hub?.connectedCount() ?? 0,
    managerSkills: () => registry.size,
    database,
    version: MANAGER_VERSION,
    log,
    tokenLookups: () => identity.tokenLookups(),
  });
  const dispatcher = createDispatcher({ registry, audit, config, log, hub, edges, approvals, credentials, playbooks, onCall: metrics.observeCall });
  const workflow = createApprovalWorkflow({ store: approvals, audit, log, run: dispatcher.runApproved, provenance: (userId, tokenId) => identity.provenance(userId, tokenId) });
  const router = createRouter({
    playbooks,
    model,
    recall: config.router.recall_dir ? createDirectoryRecall(config.router.recall_dir) : undefined,
    recallLimit: config.router.recall_limit,
    recallLevel: config.router.recall_level,
    store: createRouteStore(database),
    log,
  });
  const agent = createAgent({
    registry,
    hub,
    dispatcher,
    playbooks,
    router,
    sessions: createSessionStore(database),
    model,
    limits: { maxSteps: config.agent.max_steps, maxDurationMs: parseDuration(config.agent.max_duration), toolList: config.agent.tool_list },
    log,
  });
  // The base tools (fleet, knowledge, observability, agent helpers) are manager skills like any other.
  // Their background work (e.g. the knowledge index) starts once startManager serves; the CLI never starts it.
  const serving: Array<() => () => Promise<void>> = [];
  for (const tool of createBaseTools({ hub, edges, dispatcher, database, audit, approvals, config, log, agent: () => agent, onServe: (start) => serving.push(start) })) registry.register(tool);
  // Upstream MCP servers (mcp.upstreams): their tools become manager skills once the manager serves.
  const upstreams = createUpstreams({ config, registry, credentials, log });
  serving.push(upstreams.start);
  return { registry, database, audit, dispatcher, hub, edges, packs, identity, approvals, workflow, credentials, playbooks, router, agent, serving, metrics, upstreams, lease, cluster, peering };
}
