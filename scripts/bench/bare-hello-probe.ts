/**
 * A diagnostic, not a benchmark: a bare node:http2 server's RSS per held stream (after a forced
 * GC) when each client first sends HELLO_BYTES (default 0) — how much of the manager's memory
 * per edge that grows with the size of the edge's hello is node:http2's own.
 *
 *   HELLO_BYTES=15000 N=5000 npx tsx scripts/bench/bare-hello-probe.ts
 */
import { join } from "node:path";
import { startWorker } from "./lib/worker.ts";
import { attachGc } from "./lib/gc-rss.ts";
import { stop } from "./lib/proc.ts";

const N = Number(process.env.N ?? 5000);
const HELLO = Number(process.env.HELLO_BYTES ?? 0);
const HERE = import.meta.dirname;
const bare = startWorker("bare-server", join(HERE, "bare-server.ts"), N + 512);
const url = `http://127.0.0.1:${(await bare.request<{ port: number }>({ cmd: "listen" }, 30_000)).port}`;
const gc = await attachGc(bare, console.log);
if (!gc) throw new Error("cannot force GC in the bare server");
const before = await gc.read();
const clients = startWorker("bare-clients", join(HERE, "bare-clients.ts"), N + 512);
const r = await clients.request<{ connected: number }>({ cmd: "connect", url, n: N, parallel: 64, helloBytes: HELLO }, 300_000);
const after = await gc.read();
console.log(`hello ${HELLO} B: ${r.connected} clients, bare server RSS per stream after a forced GC ${(((after.medianKb - before.medianKb) * 1.024) / N).toFixed(1)} KB`);
await clients.request({ cmd: "close" }, 30_000);
await gc.close();
await stop(clients);
await stop(bare);
process.exit(0);
