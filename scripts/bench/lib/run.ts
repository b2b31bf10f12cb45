/** What every benchmark script does around its main(): signals, a watchdog, cleanup, a database of its own. */
import { randomBytes } from "node:crypto";
import postgres from "postgres";
import { stopAll } from "./proc.ts";

/**
 * Runs `main`, then `cleanup`, then exits with main's code (1 when it throws). SIGINT/SIGTERM and
 * a watchdog after `limitMinutes` run `cleanup` too, so no process the bench started outlives it.
 */
export function runBench(main: () => Promise<number>, cleanup: () => Promise<void>, limitMinutes: number): void {
  let interrupted = false;
  for (const [sig, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
    process.on(sig, () => {
      interrupted = true;
      console.error(`bench: ${sig}, stopping every process it started`);
      void cleanup().finally(() => process.exit(code));
    });
  }
  const watchdog = setTimeout(() => {
    console.error(`bench: still running after ${limitMinutes} minutes; stopping everything`);
    void cleanup().finally(() => process.exit(1));
  }, limitMinutes * 60_000);
  watchdog.unref();
  main()
    .catch((err: Error) => {
      if (!interrupted) console.error(`bench failed: ${err.stack ?? err}`);
      return 1;
    })
    .then(async (code) => {
      await cleanup();
      process.exit(code);
    });
}

/**
 * A run's clock-stamped log and its cleanup list: `cleanup()` runs the cleanups last-added first
 * (each failure reported, not thrown), then stops every process started with proc.ts; it runs once.
 */
export function runContext(name: string) {
  const began = performance.now();
  const secs = () => (performance.now() - began) / 1000;
  const log = (msg: string) => console.log(`[${secs().toFixed(1).padStart(6)} s] ${msg}`);
  const cleanups: Array<() => Promise<void> | void> = [];
  let cleaning: Promise<void> | undefined;
  const cleanup = (): Promise<void> =>
    (cleaning ??= (async () => {
      for (const c of cleanups.reverse()) await Promise.resolve(c()).catch((err: Error) => console.error(`${name}: cleanup: ${err.message}`));
      await stopAll();
    })());
  return { secs, log, cleanups, cleanup };
}

/** A database of the run's own on the given PostgreSQL server (ongrid_bench_<random>), and how to drop it. */
export async function createBenchDatabase(serverUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `ongrid_bench_${randomBytes(4).toString("hex")}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    async drop() {
      const again = postgres(serverUrl, { max: 1, onnotice: () => {} });
      try {
        await again.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await again.end({ timeout: 5 });
      }
    },
  };
}
