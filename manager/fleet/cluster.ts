/**
 * The fleet as one manager among several sees it (M2): its own edges (the local hub) plus the
 * edges the other live managers hold, read from the presence they write into the edges table.
 * It has the hub's interface, so listing, inventory, selectors, fan-out and the agent see the
 * whole fleet from any manager; a call for another manager's edge is forwarded to it
 * (peer-link.ts), after this manager has authenticated, authorised, validated, gated and audited
 * it exactly as for its own. With one manager (PGlite, or nobody else's lease live) it is the
 * local hub and nothing more.
 *
 * Freshness: each manager announces its presence writes on the `ongrid_presence` channel and the
 * others read what changed at once (debounced), besides every `server.presence_poll` and a full
 * read every 30 s. Revocation, rotation and relabelling reach the holder on `ongrid_fleet`.
 */
import { create, fromJson, type JsonValue } from "@bufbuild/protobuf";
import { and, eq, gt, inArray, ne } from "drizzle-orm";
import type { Logger } from "pino";
import type { Skill } from "../../skill/types.ts";
import { HelloSchema } from "../../proto/gen/ongrid/v1/tunnel_pb.ts";
import { MetadataSchema } from "../../proto/gen/ongrid/v1/skill_pb.ts";
import type { Database } from "../db/client.ts";
import { edges } from "../db/schema/index.ts";
import type { Hub } from "./hub.ts";
import type { ManagerLease } from "./lease.ts";
import type { EdgeSession } from "./live-session.ts";
import type { Holder, PeerLink } from "./peer-link.ts";
import { skillFromMetadata } from "./remote-skill.ts";

/** Channel of presence announcements (payload: the writer's manager id). */
export const PRESENCE_CHANNEL = "ongrid_presence";
/** Channel of commands for whichever manager holds an edge (payload: JSON). */
export const FLEET_CHANNEL = "ongrid_fleet";
/** A full read of the other managers' edges this often (the incremental reads' safety net). */
const FULL_READ_MS = 30_000;
/**
 * Incremental reads take rows whose presence_at (the database's clock) is past the newest one
 * seen, less this: a write whose statement started earlier may commit after a read.
 */
const OVERLAP_MS = 3_000;
/** Distinct skill lists kept parsed. */
const SKILL_LISTS = 256;

/** An edge another manager holds, as this one sees it. */
interface RemoteEdge extends EdgeSession {
  readonly manager: string;
  readonly digest: string;
  /** presence_at of the row it was built from: an unchanged row is not built again. */
  readonly presenceAt: number;
}

/** What a reload asked through one manager reloads on every manager (each from its own files). */
export type ReloadKind = "packs" | "playbooks";

/** A command for an edge's holder, or for every manager. */
type FleetCommand =
  | { op: "disconnect"; edge: string; message: string; from: string }
  | { op: "relabel"; edge: string; from: string }
  | { op: "reload"; what: ReloadKind; from: string };

/** Creates the cluster view over the local hub. `labelsOf` reads an edge's labels from the database (for a relabel made elsewhere). */
export function createCluster(o: {
  local: Hub;
  database: Database;
  lease: ManagerLease;
  peers: PeerLink;
  pollMs: number;
  log: Logger;
  labelsOf(edgeId: string): Promise<Record<string, string> | undefined>;
  /** Reloads this manager's packs or playbooks when another manager was asked to (RescanPacks, Reload). */
  onReload?(what: ReloadKind): void;
}) {
  const { local, database, lease, log } = o;
  const db = database.db;
  const self = lease.id;
  let others = new Map<string, Holder>();
  const view = new Map<string, RemoteEdge>();
  const lists = new Map<string, ReadonlyMap<string, Skill>>();
  let lastRead = 0;
  let lastFull = 0;
  /** The newest presence_at read so far (database clock), for the next incremental read. */
  let watermark = 0;
  let reading: Promise<void> | undefined;
  let again = false;
  let timer: ReturnType<typeof setInterval> | undefined;
  let soon: ReturnType<typeof setTimeout> | undefined;
  let announceTimer: ReturnType<typeof setTimeout> | undefined;
  const stops: Array<() => Promise<void>> = [];
  let running = false;

  async function skillLists(digests: string[]): Promise<void> {
    const missing = digests.filter((d) => d && !lists.has(d));
    if (!missing.length) return;
    const rows = await db
      .selectDistinctOn([edges.skillsDigest], { digest: edges.skillsDigest, skills: edges.skills })
      .from(edges)
      .where(inArray(edges.skillsDigest, missing));
    for (const r of rows) {
      const map = new Map<string, Skill>();
      for (const j of r.skills as JsonValue[]) {
        try {
          const m = fromJson(MetadataSchema, j, { ignoreUnknownFields: true });
          map.set(m.key, skillFromMetadata(m));
        } catch (err) {
          log.warn({ digest: r.digest, err: (err as Error).message }, "a skill another manager recorded for its edges could not be read; left out");
        }
      }
      lists.set(r.digest, map);
      if (lists.size > SKILL_LISTS) lists.delete(lists.keys().next().value!);
    }
  }

  async function readOnce(): Promise<void> {
    const started = Date.now();
    const live = await lease.live();
    others = new Map(live.filter((m) => m.id !== self && m.advertiseUrl).map((m) => [m.id, { id: m.id, url: m.advertiseUrl }]));
    for (const [id, r] of view) if (!others.has(r.manager)) view.delete(id);
    if (!others.size) {
      lastRead = started;
      return;
    }
    const full = started - lastFull >= FULL_READ_MS || !lastRead || !watermark;
    const rows = await db
      .select({
        id: edges.id,
        manager: edges.managerId,
        online: edges.online,
        revokedAt: edges.revokedAt,
        labels: edges.labels,
        reportedLabels: edges.reportedLabels,
        hostname: edges.hostname,
        version: edges.version,
        os: edges.os,
        lastSeenAt: edges.lastSeenAt,
        digest: edges.skillsDigest,
        presenceAt: edges.presenceAt,
      })
      .from(edges)
      .where(full ? and(eq(edges.online, true), ne(edges.managerId, self)) : gt(edges.presenceAt, new Date(watermark - OVERLAP_MS)));
    for (const r of rows) if (r.presenceAt && r.presenceAt.getTime() > watermark) watermark = r.presenceAt.getTime();
    // Held now by another live manager: in the view; any other row read is not (any more).
    const isHeld = (r: (typeof rows)[number]) => r.online && !r.revokedAt && r.manager !== self && others.has(r.manager);
    const held = rows.filter(isHeld);
    await skillLists([...new Set(held.map((r) => r.digest))].filter((d) => !lists.has(d)));
    if (full) {
      const seen = new Set(held.map((r) => r.id));
      for (const id of view.keys()) if (!seen.has(id)) view.delete(id);
      lastFull = started;
    } else {
      for (const r of rows) if (!isHeld(r)) view.delete(r.id);
    }
    for (const r of held) {
      const at = r.presenceAt?.getTime() ?? 0;
      const had = view.get(r.id);
      // Re-read in the overlap or a full read, unchanged: keep the object built before.
      if (had && had.presenceAt === at && had.manager === r.manager && had.digest === r.digest && at) continue;
      const seen = r.lastSeenAt ?? new Date(started);
      view.set(r.id, {
        presenceAt: at,
        edgeId: r.id,
        manager: r.manager,
        digest: r.digest,
        hello: create(HelloSchema, { edgeId: r.id, version: r.version, hostname: r.hostname, os: r.os, labels: { ...r.labels } }),
        reportedLabels: { ...r.reportedLabels },
        skills: lists.get(r.digest) ?? new Map(),
        connectedAt: seen,
        lastHeard: seen.getTime(),
      });
    }
    lastRead = started;
  }

  /** One read at a time; a read asked for while one runs runs once after it. */
  function read(): Promise<void> {
    if (reading) {
      again = true;
      return reading;
    }
    reading = readOnce()
      .catch((err: Error) => log.warn({ err: err.message }, "could not read the edges the other managers hold; the view is kept as it was"))
      .finally(() => {
        reading = undefined;
        if (again && running) {
          again = false;
          void read();
        }
      });
    return reading;
  }

  function readSoon(): void {
    if (soon || !running) return;
    soon = setTimeout(() => {
      soon = undefined;
      void read();
    }, 100);
    soon.unref();
  }

  function publish(cmd: FleetCommand): void {
    database.notify(FLEET_CHANNEL, JSON.stringify(cmd)).catch((err: Error) => log.warn({ err: err.message, op: cmd.op, edge: "edge" in cmd ? cmd.edge : "" }, "could not tell the other managers about an edge change; the holder's periodic token re-check still applies it"));
  }

  async function onCommand(payload: string): Promise<void> {
    let cmd: FleetCommand;
    try {
      cmd = JSON.parse(payload) as FleetCommand;
    } catch {
      return;
    }
    if (cmd.from === self) return;
    if (cmd.op === "reload") {
      if (cmd.what === "packs" || cmd.what === "playbooks") o.onReload?.(cmd.what);
      return;
    }
    if (typeof cmd.edge !== "string" || !local.session(cmd.edge)) return;
    if (cmd.op === "disconnect") local.disconnect(cmd.edge, String(cmd.message ?? "disconnected by another manager"));
    else if (cmd.op === "relabel") {
      const labels = await o.labelsOf(cmd.edge);
      if (labels) local.relabel(cmd.edge, labels);
    }
  }

  /** A remote edge's holder, when it is live. */
  function holderOf(edgeId: string): Holder | undefined {
    const r = view.get(edgeId);
    return r ? others.get(r.manager) : undefined;
  }

  const hub: Hub & {
    start(): Promise<void>;
    stop(): Promise<void>;
    announce(): void;
    holderOf(edgeId: string): string | undefined;
    refresh(): Promise<void>;
    reloadEverywhere(what: ReloadKind): void;
  } = {
    ...local,
    session: (edgeId) => local.session(edgeId) ?? view.get(edgeId),
    sessions: () => {
      const mine = local.sessions();
      if (!view.size) return mine;
      for (const r of view.values()) if (!local.session(r.edgeId)) mine.push(r);
      return mine;
    },
    offered(key) {
      if (local.offered(key)) return true;
      for (const r of view.values()) if (r.skills.has(key)) return true;
      return false;
    },
    forwarding: {
      peerOf: (edgeId) => (local.session(edgeId) ? undefined : holderOf(edgeId)),
      callEncoded: o.peers.callEncoded,
    },
    call(edgeId, key, params, timeoutMs, signal, evidence) {
      if (local.session(edgeId)) return local.call(edgeId, key, params, timeoutMs, signal, evidence);
      const h = holderOf(edgeId);
      if (!h) return local.call(edgeId, key, params, timeoutMs, signal, evidence); // offline: the local hub says so
      return o.peers.call(h, { edgeId, key, params, timeoutMs, evidence }, signal);
    },
    relabel(edgeId, labels) {
      local.relabel(edgeId, labels);
      const r = view.get(edgeId);
      if (r) (r.hello as { labels: Record<string, string> }).labels = { ...labels };
      if (others.size) publish({ op: "relabel", edge: edgeId, from: self });
    },
    disconnect(edgeId, message) {
      const here = local.disconnect(edgeId, message);
      const there = view.delete(edgeId);
      if (others.size || there) publish({ op: "disconnect", edge: edgeId, message, from: self });
      return here || there;
    },
    /** The id of the manager holding the edge: this one's, another's, or undefined (offline). */
    holderOf(edgeId) {
      if (local.session(edgeId)) return self;
      return holderOf(edgeId)?.id;
    },
    /** Asks every other manager to reload its packs or playbooks too (this one already did). */
    reloadEverywhere(what) {
      if (database.kind === "postgres") publish({ op: "reload", what, from: self });
    },
    /** Reads the other managers' edges now (tests, and after this manager's start). */
    refresh: () => read(),
    /** Tells the others this manager's presence changed (debounced to one announcement per 100 ms). */
    announce() {
      if (announceTimer || database.kind !== "postgres") return;
      announceTimer = setTimeout(() => {
        announceTimer = undefined;
        database.notify(PRESENCE_CHANNEL, self).catch((err: Error) => log.debug({ err: err.message }, "could not announce presence"));
      }, 100);
      announceTimer.unref();
    },
    async start() {
      // One manager on an embedded database: nobody to share the fleet with.
      if (database.kind !== "postgres") return;
      running = true;
      stops.push(await database.listen(PRESENCE_CHANNEL, (from) => from !== self && readSoon()));
      stops.push(await database.listen(FLEET_CHANNEL, (payload) => void onCommand(payload).catch((err: Error) => log.warn({ err: err.message }, "an edge command from another manager failed"))));
      await read();
      timer = setInterval(() => void read(), o.pollMs);
      timer.unref();
      await database.notify(PRESENCE_CHANNEL, self).catch(() => undefined);
    },
    async stop() {
      running = false;
      if (timer) clearInterval(timer);
      if (soon) clearTimeout(soon);
      if (announceTimer) clearTimeout(announceTimer);
      timer = soon = announceTimer = undefined;
      await reading;
      for (const s of stops.splice(0)) await s().catch(() => undefined);
    },
  };
  return hub;
}

/** The cluster view's interface. */
export type Cluster = ReturnType<typeof createCluster>;
