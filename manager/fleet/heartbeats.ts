/**
 * The hub's heartbeat wheel (C3): heartbeats without a timer per edge. One timer ticks
 * HEARTBEAT_SLICES times an interval and each tick serves one slice of the sessions (given
 * round-robin as they join), so every session is served once an interval and the fleet's
 * heartbeats are spread over it.
 */
import type { Logger } from "pino";
import { Code } from "@connectrpc/connect";
import type { LiveSession } from "./live-session.ts";

/** Slices of the heartbeat wheel: the hub's one heartbeat timer ticks this many times an interval. */
const HEARTBEAT_SLICES = 10;
/** A live edge's token is re-checked every this many heartbeats. */
const RECHECK_EVERY_TICKS = 12;

/** Creates the wheel; its timer starts with the first session that joins. */
export function createHeartbeatWheel(opts: {
  /** How often each side sends a heartbeat; a peer silent for 3 intervals is dead. */
  heartbeatMs: number;
  /** Whether the session's token is still valid (a periodic, batched re-check). */
  recheck(session: LiveSession): Promise<boolean>;
  log: Logger;
}) {
  const { heartbeatMs, log } = opts;
  const wheel: Array<Set<LiveSession>> = Array.from({ length: HEARTBEAT_SLICES }, () => new Set());
  let nextSlice = 0;
  let wheelTick = 0;
  let wheelTimer: NodeJS.Timeout | undefined;

  function start(): void {
    if (wheelTimer) return;
    wheelTimer = setInterval(() => {
      const slice = wheel[wheelTick++ % HEARTBEAT_SLICES]!;
      // A copy, since a beat may close sessions; one closed meanwhile has left the slice.
      for (const session of [...slice]) if (slice.has(session)) beat(session);
    }, heartbeatMs / HEARTBEAT_SLICES);
    wheelTimer.unref();
  }

  /** One session's heartbeat: close it if the edge has been silent for 3 intervals, else send one; now and then re-check its token. */
  function beat(session: LiveSession): void {
    if (Date.now() - session.lastHeard > 3 * heartbeatMs) {
      session.close({ code: Code.Unavailable, message: `no heartbeat from the edge for ${3 * heartbeatMs} ms` });
      return;
    }
    session.call.send({ frame: { case: "heartbeat", value: { sentAtUnixMs: BigInt(Date.now()) } } });
    // Revocation or rotation done elsewhere (the CLI on a shared database, another manager) is noticed here.
    if (++session.ticks % RECHECK_EVERY_TICKS === 0) {
      opts.recheck(session).then(
        (ok) => ok || session.close({ code: Code.Unauthenticated, message: "the edge's token was revoked or rotated" }),
        (err) => log.warn({ err: String(err), edge: session.edgeId }, "could not re-check the edge's token"),
      );
    }
  }

  return {
    /** The slice the next session joins (round-robin), for its `slice` field. */
    nextSlice: (): number => nextSlice++ % HEARTBEAT_SLICES,
    /** Puts a session on its slice of the wheel and starts the timer if it is not running. */
    add(session: LiveSession): void {
      wheel[session.slice]!.add(session);
      start();
    },
    /** Takes a session off the wheel. */
    remove(session: LiveSession): void {
      wheel[session.slice]!.delete(session);
    },
    /** Stops the timer (manager shutdown). */
    stop(): void {
      clearInterval(wheelTimer);
      wheelTimer = undefined;
    },
  };
}

/** The hub's heartbeat wheel. */
export type HeartbeatWheel = ReturnType<typeof createHeartbeatWheel>;
