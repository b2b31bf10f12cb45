/** Keeps the edge connected (C2): dial, run a session, and on loss redial with full-jitter exponential backoff. */
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

/** Dials until `signal` aborts; `onSessionEnd` sees each session's outcome (for logs and tests). */
export async function dialForever(
  transport: Transport,
  token: string,
  rt: EdgeRuntime,
  backoff: Backoff,
  signal: AbortSignal,
): Promise<void> {
  let attempt = 0;
  while (!signal.aborted) {
    const end = await runSession(transport, token, rt, signal);
    if (signal.aborted) return;
    // A session that was welcomed resets the backoff, unless the manager replaced it with a newer
    // connection of the same edge (two agents sharing one token would otherwise flap forever).
    if (end.welcomed && !end.superseded) attempt = 0;
    const delay = backoffDelay(attempt++, backoff);
    rt.log.warn({ reason: end.reason, retry_in_ms: delay, attempt }, end.welcomed ? "tunnel lost; redialling" : "could not connect to the manager; retrying");
    await new Promise<void>((resolve) => {
      const onAbort = () => {
        clearTimeout(t);
        resolve();
      };
      const t = setTimeout(() => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      }, delay);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}
