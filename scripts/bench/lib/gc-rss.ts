/**
 * RSS readings after a forced full garbage collection in another Node process: SIGUSR1 opens its
 * inspector on loopback, a small worker (heap-gc.ts) attaches and runs HeapProfiler.collectGarbage.
 */
import { join } from "node:path";
import { settledRss, stop, waitForLine, type Child, type SettledRss } from "./proc.ts";
import { startWorker } from "./worker.ts";

/** A settled RSS reading taken right after full GCs, with the target's process.memoryUsage() then. */
export interface GcReading extends SettledRss {
  memory: Record<string, number>;
}

/** Reads a process's RSS after forcing GC; `close` detaches. */
export interface GcReader {
  read(): Promise<GcReading>;
  close(): Promise<void>;
}

/** Opens the target's inspector and attaches; undefined (with the reason logged) when that fails, e.g. port 9229 is taken. */
export async function attachGc(target: Child, log: (m: string) => void): Promise<GcReader | undefined> {
  const worker = startWorker(`heap-gc ${target.name}`, join(import.meta.dirname, "..", "heap-gc.ts"), 0, ["--experimental-websocket", "--no-warnings"]);
  try {
    target.proc.kill("SIGUSR1");
    const url = (await waitForLine(target, /Debugger listening on (ws:\/\/\S+)/, 10_000, "stderr"))[1];
    const { pid } = await worker.request<{ pid: number }>({ cmd: "attach", url }, 10_000);
    if (pid !== target.pid) throw new Error(`the inspector at ${url} belongs to pid ${pid}, not ${target.name} (${target.pid})`);
    return {
      async read() {
        const { memory } = await worker.request<{ memory: Record<string, number> }>({ cmd: "gc" }, 60_000);
        return { ...(await settledRss(target.pid)), memory };
      },
      close: () => stop(worker),
    };
  } catch (err) {
    log(`warning: cannot force GC in ${target.name}, skipping the GC-forced RSS reading: ${(err as Error).message.split("\n")[0]}`);
    await stop(worker);
    return undefined;
  }
}
