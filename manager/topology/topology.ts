/**
 * The service topology (K5) as the manager keeps it: collects host_sockets from the edges through
 * the dispatcher (each call gated, reach-checked and audited as whoever asked for the refresh),
 * stores each edge's observation, builds the graph from every stored observation and the static
 * file, stores it, and serves it from memory (reloaded when another manager sharing the database
 * built a newer one). Refreshes run one at a time: on a schedule (topology.refresh_interval, as the
 * manager's own collector) and on demand (get_topology's refresh, as the caller).
 */
import type { Logger } from "pino";
import type { HostSocketsOutput } from "../../skill/catalog/host-sockets.ts";
import { OngridError } from "../../skill/errors.ts";
import { fanOut } from "../calls/fan-out.ts";
import type { Dispatcher } from "../calls/execute.ts";
import type { PermissionMode } from "../calls/gate.ts";
import type { Database } from "../db/client.ts";
import { errorText } from "../db/error-text.ts";
import type { EdgeRow } from "../db/schema/index.ts";
import type { Hub } from "../fleet/hub.ts";
import type { Caller } from "../identity/caller.ts";
import { leftOutShown, reaches } from "../identity/reach.ts";
import { buildTopology } from "./build.ts";
import { loadStaticTopology, StaticFileError, type StaticTopology } from "./static-file.ts";
import { createTopologyStore, type Collected, type TopologyStore } from "./store.ts";
import type { TopologyGraph } from "./types.ts";
import type { EdgeLabels } from "./view.ts";

/** The host skill the topology is built from. */
export const SOCKETS_SKILL = "host_sockets";
/** Entries of each list one edge is asked for: aggregated, a busy host's list fits the default 64 KiB output cap. */
export const SOCKETS_PER_EDGE = 150;
/** Who the scheduled refresh calls as: not a user id anyone can have (USER_ID_PATTERN), the least role that runs safe skills, every edge in reach. */
export const COLLECTOR: Caller = { userId: "ongrid:topology", role: "viewer" };

/** What a refresh did. */
export interface RefreshReport {
  /** Edges asked (connected, in reach, offering host_sockets). */
  asked: number;
  succeeded: number;
  failed: Array<{ edge_id: string; error: string }>;
  /** Connected edges in reach that do not offer host_sockets (older agents): not asked. */
  not_offering: string[];
  /** Connected edges outside the caller's reach (counted for an admin only). */
  left_out: number;
  /** Asking the edges and recording their answers. */
  collect_ms: number;
  /** Reading every stored observation and the static file back for the build. */
  load_ms: number;
  /** The join. */
  build_ms: number;
  /** Writing the graph. */
  store_ms: number;
}

/** Who asks for a refresh, and under what. */
export interface RefreshBy {
  caller: Caller;
  sessionId: string;
  signal?: AbortSignal;
  mode?: PermissionMode;
  playbook?: string;
  /** Each edge's deadline. */
  perEdgeTimeoutMs?: number;
  /**
   * Only the edges this manager holds (the schedule: with several managers each collects its own
   * edges' sockets, and the graph is built from every stored observation, whoever collected it).
   */
  ownEdgesOnly?: boolean;
}

/** What the topology needs of the manager. */
export interface TopologyDeps {
  database: Database;
  hub: Hub;
  /** Enrolled edges with their labels (the manager passes listEdgeLabels: not the edges' skill metadata). */
  edges: { list(): Promise<Array<Pick<EdgeRow, "id" | "labels" | "revokedAt">>> };
  dispatcher: Dispatcher;
  log: Logger;
  /** topology.static_file ("" for none). */
  staticFile: string;
  /** topology.refresh_interval in ms (0: no schedule). */
  intervalMs: number;
}

/** Creates the topology; nothing runs until start() or a refresh. */
export function createTopology(deps: TopologyDeps) {
  const store: TopologyStore = createTopologyStore(deps.database);
  const log = deps.log.child({ part: "topology" });
  let cached: TopologyGraph | null = null;
  let lastStatic: StaticTopology | undefined;
  let queue: Promise<unknown> = Promise.resolve();

  /** The static file, or the last good one when it has become invalid (the problem is reported in the graph). */
  async function staticPart(): Promise<{ topology?: StaticTopology; problems: string[] }> {
    if (!deps.staticFile) return { problems: [] };
    try {
      lastStatic = await loadStaticTopology(deps.staticFile);
      return { topology: lastStatic, problems: [] };
    } catch (err) {
      const lines = err instanceof StaticFileError ? err.problems.map((p) => `topology.static_file ${deps.staticFile}: ${p}`) : [`topology.static_file ${deps.staticFile}: ${errorText(err)}`];
      log.warn({ file: deps.staticFile, problems: lines }, "topology: the static file cannot be used");
      return { topology: lastStatic, problems: [...lines, ...(lastStatic ? ["the static nodes and links shown are the file's last valid content"] : [])] };
    }
  }

  /** Builds the graph from every stored observation and the static file, and stores it. */
  async function rebuild(): Promise<{ graph: TopologyGraph; loadMs: number; buildMs: number; storeMs: number }> {
    const tl = performance.now();
    const enrolled = (await deps.edges.list()).filter((e) => !e.revokedAt).map((e) => e.id);
    await store.forget({ keep: enrolled });
    const observations = await store.observations();
    const st = await staticPart();
    const t0 = performance.now();
    const loadMs = t0 - tl;
    const graph = buildTopology({ observations, static: st.topology, staticFile: deps.staticFile, problems: st.problems });
    const buildMs = performance.now() - t0;
    const t1 = performance.now();
    await store.saveGraph(graph);
    cached = graph;
    return { graph, loadMs, buildMs, storeMs: performance.now() - t1 };
  }

  /** Asks the caller's reachable edges for their sockets, records the answers and rebuilds. */
  async function collectAndBuild(by: RefreshBy): Promise<{ graph: TopologyGraph; report: RefreshReport }> {
    const t0 = performance.now();
    const asked: string[] = [];
    const notOffering: string[] = [];
    let leftOut = 0;
    for (const s of deps.hub.sessions()) {
      if (by.ownEdgesOnly && s.manager) continue;
      if (!reaches(by.caller, s.hello.labels)) leftOut++;
      else if (s.skills.has(SOCKETS_SKILL)) asked.push(s.edgeId);
      else notOffering.push(s.edgeId);
    }
    const results: Collected[] = [];
    const failed: RefreshReport["failed"] = [];
    if (asked.length) {
      const events = fanOut(
        { dispatcher: deps.dispatcher, hub: deps.hub },
        { key: SOCKETS_SKILL, params: { state: "all", aggregate: true, limit: SOCKETS_PER_EDGE }, edgeIds: asked, selector: "", perEdgeTimeoutMs: by.perEdgeTimeoutMs ?? 10_000, sessionId: by.sessionId, caller: by.caller, signal: by.signal, mode: by.mode, playbook: by.playbook },
      );
      for await (const ev of events) {
        if (ev.kind !== "edge") continue;
        const at = new Date();
        const r = ev.result;
        let error: string | undefined;
        if (r?.success && r.truncated) error = "its host_sockets output was over the output cap (skills.output_cap_bytes) and was cut; raise the cap";
        else if (r?.success && !isSockets(r.output)) error = "its host_sockets output is not the expected shape (an agent of another version?)";
        else if (!r?.success) error = `${(r?.error ?? ev.error)?.code ?? "internal"}: ${(r?.error ?? ev.error)?.message ?? "no result"}`;
        if (error) {
          failed.push({ edge_id: ev.edgeId, error });
          results.push({ edgeId: ev.edgeId, at, error });
        } else results.push({ edgeId: ev.edgeId, at, sockets: r!.output as HostSocketsOutput });
      }
    }
    for (const id of notOffering) results.push({ edgeId: id, at: new Date(), error: `the edge does not offer ${SOCKETS_SKILL} (an agent older than this manager)` });
    await store.record(results);
    const collectMs = performance.now() - t0;
    const { graph, loadMs, buildMs, storeMs } = await rebuild();
    failed.sort((a, b) => (a.edge_id < b.edge_id ? -1 : 1));
    const round = (ms: number) => Math.round(ms * 10) / 10;
    return {
      graph,
      report: { asked: asked.length, succeeded: asked.length - failed.length, failed, not_offering: notOffering.sort(), left_out: leftOutShown(by.caller, leftOut), collect_ms: round(collectMs), load_ms: round(loadMs), build_ms: round(buildMs), store_ms: round(storeMs) },
    };
  }

  /** Runs `fn` after every refresh before it (one at a time, in order). */
  function serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = queue.then(fn, fn);
    queue = run.catch(() => undefined);
    return run;
  }

  return {
    store,
    /** Collects from the edges `by.caller` reaches and rebuilds; waits for a refresh already running. */
    refresh: (by: RefreshBy) => serial(() => collectAndBuild(by)),

    /** Rebuilds from what is stored (the static file re-read), without asking any edge. */
    rebuild: () => serial(rebuild),

    /** The current graph: the one in memory, unless the database holds a newer one; an empty one before the first build. */
    async graph(): Promise<TopologyGraph> {
      const at = await store.builtAt();
      if (at && (!cached || new Date(cached.built_at).getTime() < at.getTime())) cached = await store.loadGraph();
      return cached ?? { built_at: "", nodes: [], links: [], edges: [], problems: [], static_file: deps.staticFile, build_ms: 0 };
    },

    /** The labels of every edge as reach judges them: a connected edge's from its hello, else as last recorded. */
    async edgeLabels(): Promise<EdgeLabels> {
      const map = new Map<string, Readonly<Record<string, string>>>();
      for (const e of await deps.edges.list()) if (!e.revokedAt) map.set(e.id, e.labels);
      for (const s of deps.hub.sessions()) map.set(s.edgeId, s.hello.labels);
      return { labels: (id) => map.get(id) };
    },

    /** Starts the schedule: a refresh every interval (the first one interval after the start); returns how to stop it. */
    start(): () => Promise<void> {
      if (deps.intervalMs <= 0) return async () => {};
      const ac = new AbortController();
      let timer: NodeJS.Timeout | undefined;
      let running: Promise<unknown> = Promise.resolve();
      const tick = () => {
        running = serial(() => collectAndBuild({ caller: COLLECTOR, sessionId: `topology-${Date.now()}`, signal: ac.signal, ownEdgesOnly: true }))
          .then(({ report }) => log.debug({ asked: report.asked, failed: report.failed.length, build_ms: report.build_ms }, "topology: refreshed"))
          .catch((err) => !ac.signal.aborted && log.warn({ err: errorText(err) }, "topology: scheduled refresh failed"))
          .finally(() => {
            if (!ac.signal.aborted) timer = setTimeout(tick, deps.intervalMs);
          });
      };
      // The first pass comes one interval after the start, like every other: a restart does not
      // ask the whole fleet at once, and until then the stored graph answers (or refresh: true).
      timer = setTimeout(tick, deps.intervalMs);
      return async () => {
        ac.abort(new OngridError("cancelled", "the manager is stopping"));
        clearTimeout(timer);
        await running.catch(() => undefined);
      };
    },
  };
}

/** Whether an output looks like host_sockets's (an edge could be of another version). */
function isSockets(v: unknown): v is HostSocketsOutput {
  const o = v as HostSocketsOutput;
  return typeof o === "object" && o !== null && Array.isArray(o.listening) && Array.isArray(o.connections);
}

/** The topology's interface. */
export type Topology = ReturnType<typeof createTopology>;
