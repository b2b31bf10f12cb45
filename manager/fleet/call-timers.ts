/**
 * What the hub needs per call without a timer or a listener per call: deadlines gathered into
 * buckets (one timer per bucket), and abort signals watched once each however many calls share
 * one. A fan-out to 10,000 edges thus arms one timer and adds one listener, not 10,000 of each
 * (Node's EventTarget also scans its listeners on every add, so many on one signal cost O(n²)).
 */

/** A scheduled callback; `cancel()` removes it (a no-op once it ran). */
export interface Scheduled {
  cancel(): void;
}

/**
 * Deadlines rounded up to the next multiple of `granularityMs`: every deadline in the same slot
 * shares one unref'd timer, and fires at most `granularityMs` late, never early.
 */
export function createDeadlines(granularityMs: number) {
  const slots = new Map<number, { timer: NodeJS.Timeout; due: Set<() => void> }>();

  function fire(at: number): void {
    const slot = slots.get(at);
    if (!slot) return;
    slots.delete(at);
    for (const fn of slot.due) fn();
  }

  return {
    /** Calls `fn` once, `ms` from now (rounded up to the granularity). */
    after(ms: number, fn: () => void): Scheduled {
      const at = Math.ceil((Date.now() + ms) / granularityMs) * granularityMs;
      let slot = slots.get(at);
      if (!slot) {
        const timer = setTimeout(() => fire(at), Math.max(0, at - Date.now()));
        timer.unref();
        slots.set(at, (slot = { timer, due: new Set() }));
      }
      const entry = () => fn();
      slot.due.add(entry);
      const s = slot;
      return {
        cancel() {
          if (!s.due.delete(entry) || s.due.size > 0 || slots.get(at) !== s) return;
          clearTimeout(s.timer);
          slots.delete(at);
        },
      };
    },
    /** Timers armed now (for tests). */
    armed: (): number => slots.size,
  };
}

/**
 * Watches abort signals with one listener each: `watch(signal, fn)` calls `fn` when the signal
 * aborts, however many callbacks share the signal; the returned function stops watching. A
 * signal already aborted is not watched (the caller checks `signal.aborted` first).
 */
export function createAbortWatchers() {
  const watched = new WeakMap<AbortSignal, Set<() => void>>();
  return function watch(signal: AbortSignal, fn: () => void): () => void {
    let set = watched.get(signal);
    if (!set) {
      const callbacks = (set = new Set());
      watched.set(signal, callbacks);
      signal.addEventListener(
        "abort",
        () => {
          watched.delete(signal);
          for (const cb of [...callbacks]) cb();
        },
        { once: true },
      );
    }
    set.add(fn);
    const mine = set;
    return () => {
      mine.delete(fn);
    };
  };
}
