/**
 * Benchmark worker: attaches to another Node process's inspector (opened with SIGUSR1) and runs
 * full garbage collections there, so an RSS reading is not skewed by garbage left from earlier
 * phases. Needs `node --experimental-websocket` on Node 20.
 */
import { serveWorker, type WorkerMessage } from "./lib/worker.ts";

let ws: WebSocket | undefined;
let nextId = 1;
const waiting = new Map<number, { resolve(v: Record<string, unknown>): void; reject(e: Error): void }>();

/** Sends one Chrome DevTools Protocol command and resolves with its result. */
function cdp(method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    if (!ws) return reject(new Error("not attached"));
    const timer = setTimeout(() => reject(new Error(`${method} timed out`)), 30_000);
    waiting.set(id, {
      resolve: (v) => (clearTimeout(timer), resolve(v)),
      reject: (e) => (clearTimeout(timer), reject(e)),
    });
    ws.send(JSON.stringify({ id, method, params }));
  });
}

async function evaluate(expression: string): Promise<unknown> {
  const res = (await cdp("Runtime.evaluate", { expression, returnByValue: true })) as { result?: { value?: unknown } };
  return res.result?.value;
}

serveWorker(async (msg: WorkerMessage) => {
  switch (msg.cmd) {
    case "attach": {
      const socket = new WebSocket(String(msg.url));
      await new Promise<void>((resolve, reject) => {
        socket.onopen = () => resolve();
        socket.onerror = () => reject(new Error(`cannot open ${msg.url}`));
      });
      socket.onmessage = (ev) => {
        const m = JSON.parse(String(ev.data)) as { id?: number; result?: Record<string, unknown>; error?: { message: string } };
        const w = m.id !== undefined ? waiting.get(m.id) : undefined;
        if (!w) return;
        waiting.delete(m.id!);
        if (m.error) w.reject(new Error(m.error.message));
        else w.resolve(m.result ?? {});
      };
      ws = socket;
      return { pid: await evaluate("process.pid") };
    }
    case "gc": {
      for (let i = 0; i < 3; i++) await cdp("HeapProfiler.collectGarbage");
      return { memory: JSON.parse(String(await evaluate("JSON.stringify(process.memoryUsage())"))) };
    }
    default:
      throw new Error(`unknown command ${msg.cmd}`);
  }
});
