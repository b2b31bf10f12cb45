/**
 * Benchmark worker: the bare baseline's clients. Each is its own node:http2 session holding one
 * POST /hold stream open, and replies with one small message to every message it receives.
 */
import http2 from "node:http2";
import { BARE_MESSAGE_BYTES } from "./lib/constants.ts";
import { pool, serveWorker, type WorkerMessage } from "./lib/worker.ts";

const sessions = new Set<http2.ClientHttp2Session>();
const reply = Buffer.alloc(BARE_MESSAGE_BYTES, 0x72);

/** Opens one client; `helloBytes` > 0 sends that many bytes first, as an edge's hello would (the server counts them as replies owed to no broadcast, so only for memory probes). */
function open(url: string, timeoutMs: number, helloBytes = 0): Promise<void> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    session.on("error", () => {});
    const timer = setTimeout(() => {
      session.destroy();
      reject(new Error(`no response within ${timeoutMs} ms`));
    }, timeoutMs);
    const stream = session.request({ ":method": "POST", ":path": "/hold", "content-type": "application/octet-stream" });
    stream.on("error", () => {});
    if (helloBytes > 0) stream.write(Buffer.alloc(helloBytes, 0x68));
    let received = 0;
    stream.on("data", (c: Buffer) => {
      const before = Math.floor(received / BARE_MESSAGE_BYTES);
      received += c.length;
      for (let i = before; i < Math.floor(received / BARE_MESSAGE_BYTES); i++) stream.write(reply);
    });
    stream.on("response", () => {
      clearTimeout(timer);
      sessions.add(session);
      resolve();
    });
    stream.on("close", () => {
      sessions.delete(session);
      session.destroy();
      clearTimeout(timer);
      reject(new Error("stream closed before its response"));
    });
  });
}

serveWorker(async (msg: WorkerMessage) => {
  switch (msg.cmd) {
    case "connect": {
      const t0 = performance.now();
      const errors: string[] = [];
      let failed = 0;
      await pool(Array.from({ length: Number(msg.n) }), Number(msg.parallel ?? 64), () =>
        open(String(msg.url), 60_000, Number(msg.helloBytes ?? 0)).catch((err: Error) => {
          failed++;
          if (errors.length < 5) errors.push(err.message);
        }),
      );
      return { connected: sessions.size, failed, errors, ms: performance.now() - t0 };
    }
    case "close":
      for (const s of sessions) s.destroy();
      sessions.clear();
      return { closed: true };
    default:
      throw new Error(`unknown command ${msg.cmd}`);
  }
});
