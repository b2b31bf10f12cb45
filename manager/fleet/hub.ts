/**
 * The manager's side of the edge tunnel (C1–C3): accepts EdgeTunnelService.Connect streams,
 * keeps one session per edge, sends execute/cancel frames and matches results to callers. This
 * file composes the parts: handshake.ts (token, hello, inventory, welcome), sessions.ts (the
 * live sessions), heartbeats.ts (the heartbeat wheel), tunnel-calls.ts (calls and results).
 */
import type http2 from "node:http2";
import type { Logger } from "pino";
import { Code } from "@connectrpc/connect";
import type { ConnectRequest } from "../../proto/gen/ongrid/v1/tunnel_pb.ts";
import type { EdgeStore } from "./edge-store.ts";
import { refuse } from "./grpc-stream.ts";
import { createEdgeTokens } from "./edge-tokens.ts";
import { createInventoryCache } from "./inventory-cache.ts";
import { createHeartbeatWheel } from "./heartbeats.ts";
import { createSessions } from "./sessions.ts";
import { createTunnelCalls } from "./tunnel-calls.ts";
import { createHandshake } from "./handshake.ts";
import type { EdgeSession, LiveSession } from "./live-session.ts";
import type { Holder, PeerLink } from "./peer-link.ts";

/** Path of the tunnel RPC. */
export const TUNNEL_PATH = "/ongrid.v1.EdgeTunnelService/Connect";

/** Settings of the hub. */
export interface HubOptions {
  store: EdgeStore;
  log: Logger;
  managerVersion: string;
  /** How often each side sends a heartbeat; a peer silent for 3 intervals is dead. */
  heartbeatMs: number;
  /** Largest frame accepted from an edge. */
  maxFrameBytes: number;
  /** Output cap applied again to what edges return. */
  outputCapBytes: number;
  /** How long an edge has to send hello, and its inventory when asked for it (tunnel.hello_timeout; default 10 s). */
  helloTimeoutMs?: number;
}

/** Creates the hub. */
export function createHub(opts: HubOptions) {
  const { store, log } = opts;
  const tokens = createEdgeTokens(store);
  const inventories = createInventoryCache();
  const wheel = createHeartbeatWheel({ heartbeatMs: opts.heartbeatMs, recheck: (s) => tokens.stillValid(s.edgeId, s.tokenHash, false), log });
  const sessions = createSessions({ store, log, managerVersion: opts.managerVersion, heartbeatMs: opts.heartbeatMs, wheel, inventories });
  const calls = createTunnelCalls({ session: sessions.get, outputCapBytes: opts.outputCapBytes });

  /** A frame of a welcomed edge: any frame is a sign of life; results go to their callers, inventories replace its skills. */
  function onFrame(session: LiveSession, f: ConnectRequest["frame"]): void {
    session.lastHeard = Date.now();
    if (f.case === "result") calls.deliver(session, f.value);
    else if (f.case === "inventory") sessions.replaceInventory(session, f.value.skills);
    else if (f.case === "hello") session.close({ code: Code.InvalidArgument, message: "hello may only be sent once" });
  }

  const handshake = createHandshake({
    log,
    maxFrameBytes: opts.maxFrameBytes,
    helloTimeoutMs: opts.helloTimeoutMs ?? 10_000,
    tokens,
    inventories,
    admit: sessions.admit,
    onFrame,
    drop: sessions.drop,
  });

  return {
    /** The raw HTTP/2 stream handler for TUNNEL_PATH. */
    handleStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
      handshake.open(stream, headers).catch((err) => {
        log.error({ err: String(err) }, "tunnel open failed");
        refuse(stream, { code: Code.Internal, message: "internal error; see the manager log" });
      });
    },
    call: calls.call,
    session: (edgeId: string): EdgeSession | undefined => sessions.get(edgeId),
    sessions: (): EdgeSession[] => sessions.all(),
    /** How many edges are connected (without copying the session list). */
    connectedCount: (): number => sessions.size(),
    /** Whether any connected edge offers the skill key. */
    offered: (key: string): boolean => sessions.offered(key),
    /** Gives a connected edge the labels an admin set (its reach and selectors follow at once). */
    relabel(edgeId: string, labels: Record<string, string>): void {
      sessions.relabel(edgeId, labels);
    },
    /** Closes an edge's tunnel and any stream of it still awaiting its welcome (revocation, rotation). */
    disconnect(edgeId: string, message: string): boolean {
      const s = sessions.get(edgeId);
      s?.close({ code: Code.Unauthenticated, message });
      handshake.endOpening(edgeId, message);
      return Boolean(s);
    },
    /** Closes every tunnel and stops the heartbeat timer (manager shutdown). */
    closeAll(): void {
      for (const s of sessions.all()) s.close({ code: Code.Unavailable, message: "manager shutting down" });
      wheel.stop();
    },
  };
}

/**
 * How a fan-out hands the share of the fleet one peer manager holds to that peer in one batch
 * (M2): the cluster view's (cluster.ts); absent while this manager is alone.
 */
export interface Forwarding {
  /** The live peer holding an edge; undefined when this manager holds it or nobody does. */
  peerOf(edgeId: string): Holder | undefined;
  /** Runs calls on edges `holder` holds, their results encoded by it (peer-link.ts). */
  callEncoded: PeerLink["callEncoded"];
}

/** The hub's interface (with `forwarding` when it is the cluster view). */
export type Hub = ReturnType<typeof createHub> & { forwarding?: Forwarding };
