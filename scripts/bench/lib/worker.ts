/** Request/response over the Node IPC channel between the benchmark and its TypeScript child processes. */
import { resolve } from "node:path";
import { start, type Child } from "./proc.ts";

/** A message to or from a worker; `id` pairs a reply with its request. */
export interface WorkerMessage {
  id?: number;
  cmd?: string;
  error?: string;
  [k: string]: unknown;
}

/** A running worker: a child process plus a way to ask it things. */
export interface Worker extends Child {
  request<T extends WorkerMessage>(msg: WorkerMessage, timeoutMs: number): Promise<T>;
}

const ROOT = resolve(import.meta.dirname, "..", "..", "..");

/** Starts `node [nodeArgs] --import tsx <file>` with an IPC channel; `needFds` raises its open-file limit when needed. */
export function startWorker(name: string, file: string, needFds = 0, nodeArgs: string[] = []): Worker {
  const child = start(name, process.execPath, [...nodeArgs, "--import", "tsx", file], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe", "ipc"],
    needFds,
  });
  let next = 1;
  const waiting = new Map<number, { resolve(m: WorkerMessage): void; reject(e: Error): void }>();
  child.proc.on("message", (m: WorkerMessage) => {
    const w = m.id !== undefined ? waiting.get(m.id) : undefined;
    if (!w) return;
    waiting.delete(m.id!);
    const { id: _id, ...reply } = m;
    if (m.error) w.reject(new Error(`${name}: ${m.error}`));
    else w.resolve(reply);
  });
  void child.exited.then(({ code, signal }) => {
    for (const w of waiting.values()) w.reject(new Error(`${name} exited (code ${code}, signal ${signal}); stderr:\n${child.stderr().slice(-4000)}`));
    waiting.clear();
  });
  return {
    ...child,
    request<T extends WorkerMessage>(msg: WorkerMessage, timeoutMs: number): Promise<T> {
      const id = next++;
      return new Promise<T>((res, rej) => {
        const timer = setTimeout(() => {
          waiting.delete(id);
          rej(new Error(`${name} did not answer "${msg.cmd}" within ${timeoutMs} ms`));
        }, timeoutMs);
        waiting.set(id, {
          resolve: (m) => {
            clearTimeout(timer);
            res(m as T);
          },
          reject: (e) => {
            clearTimeout(timer);
            rej(e);
          },
        });
        child.proc.send({ ...msg, id });
      });
    },
  };
}

/** The child side: answers each request with `handle`'s result, and exits when the parent goes away. */
export function serveWorker(handle: (msg: WorkerMessage) => Promise<WorkerMessage> | WorkerMessage): void {
  if (!process.send) throw new Error("this script is a benchmark worker; run it through scripts/bench/tunnel.ts");
  process.on("message", (msg: WorkerMessage) => {
    Promise.resolve()
      .then(() => handle(msg))
      .then(
        (res) => process.send!({ ...res, id: msg.id }),
        (err) => process.send!({ id: msg.id, error: String((err as Error)?.stack ?? err) }),
      );
  });
  process.on("disconnect", () => process.exit(0));
}

/** Runs `fn` over `items` with at most `parallel` in flight; resolves with the results in order. */
export async function pool<T, R>(items: readonly T[], parallel: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let nextIndex = 0;
  const lanes = Array.from({ length: Math.min(parallel, items.length) }, async () => {
    while (nextIndex < items.length) {
      const i = nextIndex++;
      out[i] = await fn(items[i], i);
    }
  });
  await Promise.all(lanes);
  return out;
}
