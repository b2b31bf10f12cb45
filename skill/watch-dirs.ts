/** Debounced recursive directory watching, shared by the pack loader and the playbook registry. */
import { watch, type FSWatcher } from "node:fs";
import type { Logger } from "pino";

/**
 * Calls onChange (debounced) whenever a file under one of dirs changes; returns a stop function.
 * A directory that cannot be watched is logged with `what` and skipped: the caller's other reload
 * paths (signal, command) still work. An error thrown by onChange is logged, never raised.
 */
export function watchDirs(dirs: readonly string[], onChange: () => unknown, o: { log: Logger; what: string; debounceMs?: number }): () => void {
  const watchers: FSWatcher[] = [];
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      try {
        onChange();
      } catch (err) {
        o.log.error({ err: (err as Error).message }, `${o.what} reload failed`);
      }
    }, o.debounceMs ?? 250);
    timer.unref?.();
  };
  for (const dir of dirs) {
    try {
      const w = watch(dir, { recursive: true, persistent: false }, schedule);
      w.on("error", (err) => o.log.warn({ dir, err: err.message }, `${o.what} watch failed; reload by signal or command`));
      watchers.push(w);
    } catch (err) {
      o.log.warn({ dir, err: (err as Error).message }, `cannot watch the ${o.what} directory; reload by signal or command`);
    }
  }
  return () => {
    clearTimeout(timer);
    for (const w of watchers) w.close();
  };
}
