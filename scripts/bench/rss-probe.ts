/**
 * A diagnostic, not a benchmark: where the manager's memory per connected edge goes. Starts the
 * manager as its own process on PostgreSQL, connects N simulated edges, and prints per edge the
 * RSS growth after a forced full GC, split into glibc's main heap ([heap] in /proc/PID/smaps:
 * malloc — nghttp2, Node's native objects) and anonymous mappings (the V8 heap among them).
 *
 *   N=5000 INV=builtins|echo [TRIM=1] [MGR_LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2] \
 *     npx tsx scripts/bench/rss-probe.ts
 *
 * INV: the edges' hello offers the edge binary's builtins (≈ 15 KB of metadata) or one echo skill.
 * TRIM=1 then calls malloc_trim(0) in the manager through gdb and reads again (what the allocator
 * holds free but has not returned). MGR_LD_PRELOAD preloads a library into the manager (another
 * allocator).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startManagerProcess } from "./lib/manager-proc.ts";
import { createBenchDatabase } from "./lib/run.ts";
import { enrollFleet, startFleet } from "../sim/fleet.ts";
import { attachGc } from "./lib/gc-rss.ts";
import { stop } from "./lib/proc.ts";
import { freePort } from "../../test/support/free-port.ts";

const N = Number(process.env.N ?? 5000);
const inventory = (process.env.INV ?? "builtins") as "builtins" | "echo";
const ROOT = resolve(import.meta.dirname, "..", "..");
const db = await createBenchDatabase("postgres://postgres@127.0.0.1:5432/postgres");
const log = (m: string) => console.log(m);
const env = process.env.MGR_LD_PRELOAD ? { LD_PRELOAD: process.env.MGR_LD_PRELOAD } : {};
const proc = await startManagerProcess({ root: ROOT, port: await freePort(), dataDir: mkdtempSync(join(tmpdir(), "rssprobe-")), databaseUrl: db.url, needFds: N + 1024, firstStart: true, env });
const pid = proc.child.pid;
const smaps = () => {
  const txt = readFileSync(`/proc/${pid}/smaps`, "utf8");
  let heap = 0, anon = 0;
  let cur = "";
  for (const line of txt.split("\n")) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) cur = line;
    const m = /^Rss:\s+(\d+) kB/.exec(line);
    if (m) { if (cur.includes("[heap]")) heap += +m[1]!; else if (!cur.includes("/")) anon += +m[1]!; }
  }
  return { heap, anon };
};
const edges = await enrollFleet(proc.url, proc.adminToken!, N, "rp-");
const gc = await attachGc(proc.child, log);
const b = await gc!.read();
const sb = smaps();
const fleet = await startFleet({ url: proc.url, edges, processes: 2, labels: {}, latencyMs: 0, latencyJitterMs: 0, failureRate: 0, reconnect: false, maxBackoffMs: 30_000, inventory, needFds: N / 2 + 512 });
console.log("connected", fleet.connected.connected);
const a = await gc!.read();
const sa = smaps();
const per = (x: number, y: number) => (((y - x) * 1.024) / N).toFixed(1);
console.log(`${inventory} ${N}: rss/edge ${per(b.medianKb, a.medianKb)} KB; [heap] ${per(sb.heap, sa.heap)} KB; anon ${per(sb.anon, sa.anon)} KB; v8 heapUsed ${(((a.memory.heapUsed! - b.memory.heapUsed!) / N) / 1000).toFixed(1)} KB`);
if (process.env.TRIM) {
  execFileSync("gdb", ["-p", String(pid), "-batch", "-ex", "call (int)malloc_trim(0)"], { stdio: "ignore" });
  const t = await gc!.read();
  const st = smaps();
  console.log(`after malloc_trim(0): rss/edge ${per(b.medianKb, t.medianKb)} KB; [heap] ${per(sb.heap, st.heap)} KB; anon ${per(sb.anon, st.anon)} KB`);
}
await gc!.close();
await fleet.close();
await stop(proc.child, 30_000);
await db.drop();
process.exit(0);
