/**
 * Keeps the edge connected (C2, M2): dial, run a session, and on loss redial with full-jitter
 * exponential backoff. With several managers (`--manager URL1,URL2`, or a name resolving to
 * several addresses) the edge holds one tunnel to one of them; on loss it moves to the next, with
 * the same backoff. A call in flight on a lost manager is never replayed elsewhere: the manager
 * that sent it fails it for its caller. When the edge is away from its first choice it checks,
 * every rebalance interval (jittered), whether that manager answers again and moves back once no
 * call is running (bounded: it waits for running calls at most REBALANCE_DRAIN_MS).
 */
import type { Transport } from "@connectrpc/connect";
import { runSession, type EdgeRuntime } from "./session.ts";

/** Backoff settings: the n-th retry waits a random time in [0, min(max, base·2ⁿ)]. */
export interface Backoff {
  baseMs: number;
  maxMs: number;
}

/** The wait before retry number `attempt` (0-based): "full jitter", so a restarted manager is not hit by every edge at once. */
export function backoffDelay(attempt: number, b: Backoff, random = Math.random): number {
  return Math.floor(random() * Math.min(b.maxMs, b.baseMs * 2 ** Math.min(attempt, 30)));
}

/** One manager the edge may dial. */
export interface DialTarget {
  /** What logs name it by (its URL, and the address when a name resolved to several). */
  label: string;
  transport: Transport;
  /** Whether it accepts connections now (a TCP connect): the rebalancing check. */
  probe?(): Promise<boolean>;
}

/** Where to dial: targets in preference order, resolved afresh before each round (DNS). */
export interface DialPlan {
  targets(): Promise<DialTarget[]>;
  /** How often an edge away from its first target checks whether it answers again; 0: never. */
  rebalanceMs?: number;
}

/** Longest wait for running calls before a rebalancing move ends the tunnel anyway. */
const REBALANCE_DRAIN_MS = 30_000;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const onAbort = () => {
      clearTimeout(t);
      resolve();
    };
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Dials until `signal` aborts. `plan` is one transport (one manager) or a plan of several. */
export async function dialForever(plan: Transport | DialPlan, token: string, rt: EdgeRuntime, backoff: Backoff, signal: AbortSignal): Promise<void> {
  const p: DialPlan = "targets" in plan ? plan : { targets: async () => [{ label: "manager", transport: plan }] };
  let attempt = 0;
  /** Index (in the current round's list) of the target to dial next. */
  let next = 0;
  while (!signal.aborted) {
    let targets: DialTarget[];
    try {
      targets = await p.targets();
    } catch (err) {
      targets = [];
      rt.log.warn({ err: (err as Error).message }, "could not resolve the manager addresses");
    }
    if (!targets.length) {
      await sleep(backoffDelay(attempt++, backoff), signal);
      continue;
    }
    const index = next % targets.length;
    const target = targets[index];
    const session = new AbortController();
    const onAbort = () => session.abort();
    signal.addEventListener("abort", onAbort, { once: true });
    const track = { calls: 0 };
    let moving = false;
    // Away from the first choice: check it now and then, and move back when it answers.
    const rebalance =
      index !== 0 && p.rebalanceMs && targets[0].probe
        ? (async () => {
            while (!session.signal.aborted) {
              await sleep(Math.floor(p.rebalanceMs! * (0.5 + Math.random())), session.signal);
              if (session.signal.aborted) return;
              if (!(await targets[0].probe!().catch(() => false))) continue;
              const drainUntil = Date.now() + REBALANCE_DRAIN_MS;
              while (track.calls > 0 && Date.now() < drainUntil && !session.signal.aborted) await sleep(100, session.signal);
              if (session.signal.aborted) return;
              moving = true;
              rt.log.info({ from: target.label, to: targets[0].label }, "the preferred manager answers again; moving back to it");
              session.abort();
              return;
            }
          })()
        : undefined;
    const end = await runSession(target.transport, token, rt, session.signal, track);
    signal.removeEventListener("abort", onAbort);
    session.abort();
    await rebalance;
    if (signal.aborted) return;
    if (moving) {
      // A deliberate move: straight to the first target, no backoff.
      next = 0;
      attempt = 0;
      continue;
    }
    // A session that was welcomed resets the backoff, unless the manager replaced it with a newer
    // connection of the same edge (two agents sharing one token would otherwise flap forever).
    if (end.welcomed && !end.superseded) attempt = 0;
    // The next attempt goes to the next manager (a lost one is not tried first again).
    if (targets.length > 1) next = index + 1;
    const delay = backoffDelay(attempt++, backoff);
    rt.log.warn(
      { reason: end.reason, manager: target.label, next: targets[(index + (targets.length > 1 ? 1 : 0)) % targets.length].label, retry_in_ms: delay, attempt },
      end.welcomed ? "tunnel lost; redialling" : "could not connect to the manager; retrying",
    );
    await sleep(delay, signal);
  }
}
