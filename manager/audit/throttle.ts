/**
 * Refusals nobody authenticated for are counted, not written one row each (B1): a flood of
 * anonymous or undecodable requests must not fill the audit chain (6 connections of abandoned
 * streams wrote 160,000 rows). Per key (what was refused, and from where), the first `burst`
 * refusals of a window write their rows; the ones after them in the window are counted, and the
 * next row written for the key says how many were left out since the last one.
 */

/** The throttle's answer for one refusal. */
export interface ThrottleVerdict {
  write: boolean;
  /** Refusals of this key left out since its last row (shown in the next row). */
  suppressed: number;
}

/** Creates a throttle of `burst` rows per key and window; at most `maxKeys` keys are tracked (the oldest is dropped). */
export function createRefusalThrottle(opts: { windowMs?: number; burst?: number; maxKeys?: number; now?: () => number } = {}) {
  const { windowMs = 10_000, burst = 20, maxKeys = 10_000, now = Date.now } = opts;
  const keys = new Map<string, { since: number; written: number; suppressed: number }>();
  let total = 0;
  return {
    admit(key: string): ThrottleVerdict {
      const t = now();
      let k = keys.get(key);
      if (!k || t - k.since >= windowMs) {
        const carried = k?.suppressed ?? 0;
        keys.delete(key);
        k = { since: t, written: 0, suppressed: carried };
        keys.set(key, k);
        if (keys.size > maxKeys) keys.delete(keys.keys().next().value as string);
      }
      if (k.written >= burst) {
        k.suppressed++;
        total++;
        return { write: false, suppressed: k.suppressed };
      }
      k.written++;
      const suppressed = k.suppressed;
      k.suppressed = 0;
      return { write: true, suppressed };
    },
    /** Refusals left out since start, for the metrics page. */
    suppressedTotal(): number {
      return total;
    },
  };
}
