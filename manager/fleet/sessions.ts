/**
 * The hub's live sessions (C1–C3): one per edge, admitted after its welcome (replacing an older
 * one of the same edge), changed by inventory frames and relabelling, dropped when the tunnel
 * goes; with how many edges offer each skill key, and the edge's presence in the edges table.
 */
import type { Logger } from "pino";
import { Code } from "@connectrpc/connect";
import { OngridError } from "../../skill/errors.ts";
import type { Skill } from "../../skill/types.ts";
import type { Hello } from "../../proto/gen/ongrid/v1/tunnel_pb.ts";
import type { Metadata } from "../../proto/gen/ongrid/v1/skill_pb.ts";
import type { EdgeCredential, EdgeStore } from "./edge-store.ts";
import type { HeartbeatWheel } from "./heartbeats.ts";
import type { Inventory, InventoryCache } from "./inventory-cache.ts";
import type { LiveSession, TunnelCall } from "./live-session.ts";

/** What admitting an edge needs of its enrolment: its id, its token's hash and the manager's labels for it. */
export type EnrolledEdge = Pick<EdgeCredential, "id" | "tokenHash" | "labels">;

/** Adds `delta` to the count of every key `skills` offers, forgetting keys no edge offers any more. */
function count(offerCount: Map<string, number>, skills: ReadonlyMap<string, Skill>, delta: 1 | -1): void {
  for (const key of skills.keys()) {
    const n = (offerCount.get(key) ?? 0) + delta;
    if (n > 0) offerCount.set(key, n);
    else offerCount.delete(key);
  }
}

/** Creates the session table. */
export function createSessions(opts: { store: EdgeStore; log: Logger; managerVersion: string; heartbeatMs: number; wheel: HeartbeatWheel; inventories: InventoryCache }) {
  const { store, log, wheel } = opts;
  const sessions = new Map<string, LiveSession>();
  /** How many connected edges offer each skill key: "does any edge offer K" in O(1) (asked on every call by /metrics). */
  const offerCount = new Map<string, number>();
  const countOffers = (skills: ReadonlyMap<string, Skill>, delta: 1 | -1) => count(offerCount, skills, delta);

  /** Makes the edge's session live (replacing an older one of the same edge), welcomes it and records it online. */
  function admit(call: TunnelCall, edge: EnrolledEdge, hello: Hello, inv: Inventory): LiveSession {
    const skills = inv.skills;
    const previous = sessions.get(edge.id);
    if (previous) previous.close({ code: Code.Aborted, message: "superseded by a newer connection of the same edge" });
    const session: LiveSession = {
      edgeId: edge.id,
      tokenHash: edge.tokenHash,
      // Without its skill list (kept as `skills`, shared by the edges offering the same inventory):
      // the metadata of a dozen skills is ~15 KB an edge. Its labels are the manager's (enrolment,
      // `ongrid edge label`): what the edge says of itself never widens anyone's reach (C4, G4).
      hello: { ...hello, labels: { ...edge.labels }, skills: [] },
      reportedLabels: { ...hello.labels },
      skills,
      connectedAt: new Date(),
      lastHeard: Date.now(),
      call,
      pending: new Map(),
      slice: wheel.nextSlice(),
      ticks: 0,
      close(status) {
        drop(session, status.message); // first, so pending calls learn the real reason
        call.end(status);
      },
    };
    wheel.add(session);
    sessions.set(edge.id, session);
    countOffers(skills, 1);
    call.send({
      frame: { case: "welcome", value: { edgeId: edge.id, managerVersion: opts.managerVersion, heartbeatIntervalMs: opts.heartbeatMs, inventoryDigest: inv.digest } },
    });
    store
      .markOnline(edge.id, {
        version: hello.version,
        hostname: hello.hostname,
        os: hello.os,
        labels: { ...hello.labels },
        skills: inv.json,
        skillsDigest: inv.digest,
      })
      .catch((err) => log.error({ err: String(err), edge: edge.id }, "could not record edge presence"));
    log.info({ edge: edge.id, version: hello.version, skills: skills.size }, "edge connected");
    return session;
  }

  /** An inventory frame: the edge's skill set changed without a reconnect. A defective one ends the session, as a bad hello would. */
  function replaceInventory(session: LiveSession, list: Metadata[]): void {
    let inv: Inventory;
    try {
      inv = opts.inventories.of(list);
      if (sessions.get(session.edgeId) === session) {
        countOffers(session.skills, -1);
        countOffers(inv.skills, 1);
      }
      session.skills = inv.skills;
    } catch (err) {
      session.close({ code: Code.InvalidArgument, message: `inventory refused: ${(err as Error).message}` });
      return;
    }
    const h = session.hello;
    store
      .markOnline(session.edgeId, { version: h.version, hostname: h.hostname, os: h.os, labels: { ...h.labels }, skills: inv.json, skillsDigest: inv.digest })
      .catch((err) => log.error({ err: String(err), edge: session.edgeId }, "could not record the edge's new skills"));
    log.info({ edge: session.edgeId, skills: session.skills.size }, "edge skills changed");
  }

  /** Takes a session off the wheel, fails its calls in flight, and, unless a newer one replaced it, forgets it and records the edge offline. */
  function drop(session: LiveSession, reason: string): void {
    wheel.remove(session);
    for (const p of [...session.pending.values()]) {
      p.reject(new OngridError("unavailable", `edge "${session.edgeId}" went away during the call: ${reason}`, "retry when the edge is back online"));
    }
    if (sessions.get(session.edgeId) !== session) return;
    sessions.delete(session.edgeId);
    countOffers(session.skills, -1);
    store.markOffline(session.edgeId, new Date(session.lastHeard)).catch((err) => log.error({ err: String(err) }, "could not record edge offline"));
    log.info({ edge: session.edgeId, reason }, "edge disconnected");
  }

  return {
    admit,
    replaceInventory,
    drop,
    get: (edgeId: string): LiveSession | undefined => sessions.get(edgeId),
    all: (): LiveSession[] => [...sessions.values()],
    size: (): number => sessions.size,
    /** Whether any connected edge offers the skill key. */
    offered: (key: string): boolean => offerCount.has(key),
    /** Gives a connected edge the labels an admin set (its reach and selectors follow at once). */
    relabel(edgeId: string, labels: Record<string, string>): void {
      const s = sessions.get(edgeId);
      if (s) (s.hello as { labels: Record<string, string> }).labels = { ...labels };
    },
  };
}

/** The hub's session table. */
export type Sessions = ReturnType<typeof createSessions>;
