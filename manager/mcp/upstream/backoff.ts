/** When to try an upstream again after it failed: exponential, capped, with jitter so restarts of many upstreams do not line up. */

/** The backoff's bounds. */
export interface BackoffOptions {
  /** The first delay's upper bound, in ms. */
  initialMs: number;
  /** No delay is longer than this, in ms. */
  maxMs: number;
}

/** The defaults: 0.5 s, doubling, at most 30 s. */
export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 30_000 };

/** The delay before retry number `attempt` (0 for the first): a random point in the upper half of min(max, initial·2^attempt). */
export function backoffDelay(attempt: number, o: BackoffOptions = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  const ceiling = Math.min(o.maxMs, o.initialMs * 2 ** Math.min(Math.max(0, attempt), 30));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
