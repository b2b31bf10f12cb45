/**
 * The fleet simulator: N simulated edges spread over P worker processes (scripts/sim/edges.ts),
 * enrolled through the manager's EdgeService.EnrollEdge and connected with the real tunnel
 * protocol. A library for the benchmarks (startFleet) and a command:
 *
 *   npm run sim -- --manager http://127.0.0.1:8080[,URL2…] --token ogu_… [--edges 1000] [--processes 2]
 *                  [--latency-ms 0] [--latency-jitter-ms 0] [--failure-rate 0] [--labels sim=1]
 *                  [--prefix sim-] [--inventory builtins|echo] [--hello digest|full] [--no-reconnect]
 *                  [--duration 0]
 *
 * --token is an admin's API token (or ONGRID_TOKEN). Enrolling an id that exists rotates its
 * token (the old connection is dropped), so reruns with the same prefix take over the same ids.
 * --duration 0 runs until Ctrl-C; it prints the fleet's counters every 5 s. Several --manager URLs
 * (comma-separated, managers sharing one database) are a failover list: the edges are enrolled
 * through the first, dial it, and on each loss move on to the next.
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { EdgeService } from "../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { pool, startWorker, type Worker, type WorkerMessage } from "../bench/lib/worker.ts";
import { stop } from "../bench/lib/proc.ts";
import type { SimOptions } from "./edges.ts";

/** The fleet's counters, summed over its workers. */
export interface FleetStats {
  connected: number;
  /** Connected edges by the manager URL they dialled. */
  connectedTo: Record<string, number>;
  edges: number;
  lost: number;
  lostReasons: string[];
  answered: number;
  failedAnswers: number;
  cancelled: number;
  welcomes: number;
  /** Inventory requests the edges answered (hellos naming an inventory the manager did not hold). */
  inventoryRequests: number;
  /** Per-second welcome counts since the last mark (when asked for). */
  welcomesPerSecond?: number[];
  /** Latest welcome, ms after the last mark (max over workers). */
  lastWelcomeMs?: number;
}

/** What startFleet needs: the edges (ids and tokens) and how they behave. */
export interface FleetOptions extends Omit<SimOptions, "edges" | "parallel"> {
  /** The edges; an edge's own labels (optional) are added to `labels`, its own `url` (optional) replaces `url`. */
  edges: Array<{ id: string; token: string; labels?: Record<string, string>; url?: string }>;
  processes: number;
  /** Dials in flight per process. */
  parallel?: number;
  /** Open files each worker needs (its edges + slack); raises the soft limit when needed. */
  needFds?: number;
}

/** A running simulated fleet. */
export interface Fleet {
  workers: Worker[];
  /** Result of the initial connect: how many were welcomed, how many failed, and the first errors. */
  connected: { connected: number; failed: number; errors: string[]; ms: number };
  stats(histogram?: boolean): Promise<FleetStats>;
  /** Restarts the welcome clock and histogram (before a manager restart). */
  mark(): Promise<void>;
  close(): Promise<void>;
}

const HERE = import.meta.dirname;

/**
 * Enrolls `n` edge ids `${prefix}00000…` through EdgeService.EnrollEdge with an admin's token,
 * with the labels `labels(i)` gives the i-th (reach and selectors use the labels given at
 * enrolment, not the ones an edge reports; each edge is returned with them, for its hello).
 */
export async function enrollFleet(
  url: string,
  adminToken: string,
  n: number,
  prefix: string,
  parallel = 8,
  labels: (i: number) => Record<string, string> = () => ({}),
): Promise<Array<{ id: string; token: string; labels: Record<string, string> }>> {
  const transport = createGrpcTransport({ baseUrl: url, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${adminToken}`), next(req))] });
  const edges = createClient(EdgeService, transport);
  const ids = Array.from({ length: n }, (_, i) => ({ id: `${prefix}${String(i).padStart(5, "0")}`, labels: labels(i) }));
  return pool(ids, parallel, async ({ id, labels: l }) => ({ id, token: (await edges.enrollEdge({ id, labels: l })).token, labels: l }));
}

/** Starts the worker processes and connects every edge; resolves once each has been welcomed or failed. */
export async function startFleet(o: FleetOptions): Promise<Fleet> {
  const p = Math.max(1, Math.min(o.processes, o.edges.length || 1));
  const share = Math.ceil(o.edges.length / p);
  const workers: Worker[] = [];
  for (let i = 0; i < p; i++) workers.push(startWorker(`sim-${i}`, join(HERE, "edges.ts"), o.needFds ?? share + 256));
  const { processes: _p, edges, needFds: _n, ...behaviour } = o;
  const parts = await Promise.all(
    workers.map((w, i) =>
      w.request<{ connected: number; failed: number; errors: string[]; ms: number }>(
        { cmd: "connect", ...behaviour, parallel: o.parallel ?? 64, edges: edges.slice(i * share, (i + 1) * share) },
        600_000,
      ),
    ),
  );
  const connected = {
    connected: parts.reduce((a, r) => a + r.connected, 0),
    failed: parts.reduce((a, r) => a + r.failed, 0),
    errors: parts.flatMap((r) => r.errors).slice(0, 5),
    ms: Math.max(...parts.map((r) => r.ms)),
  };
  return {
    workers,
    connected,
    async stats(histogram = false) {
      const all = await Promise.all(workers.map((w) => w.request<WorkerMessage & FleetStats & { sinceMarkMs: number }>({ cmd: "stats", histogram }, 30_000)));
      const sum = (k: keyof FleetStats) => all.reduce((a, s) => a + Number(s[k] ?? 0), 0);
      const hist: number[] = [];
      if (histogram) for (const s of all) (s.welcomesPerSecond ?? []).forEach((c, i) => (hist[i] = (hist[i] ?? 0) + c));
      const last = all.map((s) => s.lastWelcomeMs).filter((x): x is number => x !== undefined);
      const to: Record<string, number> = {};
      for (const s of all) for (const [u, c] of Object.entries(s.connectedTo ?? {})) to[u] = (to[u] ?? 0) + c;
      return {
        connected: sum("connected"),
        connectedTo: to,
        edges: sum("edges"),
        lost: sum("lost"),
        lostReasons: all.flatMap((s) => s.lostReasons).slice(0, 5),
        answered: sum("answered"),
        failedAnswers: sum("failedAnswers"),
        cancelled: sum("cancelled"),
        welcomes: sum("welcomes"),
        inventoryRequests: sum("inventoryRequests"),
        ...(histogram ? { welcomesPerSecond: Array.from(hist, (c) => c ?? 0) } : {}),
        ...(last.length ? { lastWelcomeMs: Math.max(...last) } : {}),
      };
    },
    async mark() {
      await Promise.all(workers.map((w) => w.request({ cmd: "mark" }, 30_000)));
    },
    async close() {
      await Promise.all(workers.map((w) => w.request({ cmd: "close" }, 60_000).catch(() => undefined)));
      await Promise.all(workers.map((w) => stop(w)));
    },
  };
}

function labelsFlag(v: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of v.split(",").map((s) => s.trim()).filter(Boolean)) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new Error(`--labels: "${pair}" must look like key=value`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

function num(name: string, v: string, min: number, max = Infinity): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < min || n > max) throw new Error(`--${name}: "${v}" must be a number in [${min}, ${max}]`);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      manager: { type: "string" },
      token: { type: "string", default: process.env.ONGRID_TOKEN ?? "" },
      edges: { type: "string", default: "1000" },
      processes: { type: "string", default: "2" },
      "latency-ms": { type: "string", default: "0" },
      "latency-jitter-ms": { type: "string", default: "0" },
      "failure-rate": { type: "string", default: "0" },
      labels: { type: "string", default: "sim=1" },
      prefix: { type: "string", default: "sim-" },
      inventory: { type: "string", default: "builtins" },
      hello: { type: "string", default: "digest" },
      "no-reconnect": { type: "boolean", default: false },
      "max-backoff-ms": { type: "string", default: "30000" },
      duration: { type: "string", default: "0" },
    },
  });
  if (!values.manager) throw new Error("--manager: the manager's URL is required (e.g. http://127.0.0.1:8080)");
  const enrolAt = values.manager.split(",")[0]!.trim();
  if (!values.token) throw new Error("--token: an admin's API token is required (or ONGRID_TOKEN)");
  if (values.inventory !== "builtins" && values.inventory !== "echo") throw new Error(`--inventory: "${values.inventory}" must be builtins or echo`);
  if (values.hello !== "digest" && values.hello !== "full") throw new Error(`--hello: "${values.hello}" must be digest or full`);
  const n = num("edges", values.edges!, 1, 100_000);
  const started = performance.now();
  console.log(`enrolling ${n} edges (${values.prefix}00000…) at ${enrolAt}`);
  const edges = await enrollFleet(enrolAt, values.token, n, values.prefix!, 8, () => labelsFlag(values.labels!));
  console.log(`connecting them from ${values.processes} processes`);
  const fleet = await startFleet({
    url: values.manager,
    edges,
    processes: num("processes", values.processes!, 1, 64),
    labels: labelsFlag(values.labels!),
    latencyMs: num("latency-ms", values["latency-ms"]!, 0),
    latencyJitterMs: num("latency-jitter-ms", values["latency-jitter-ms"]!, 0),
    failureRate: num("failure-rate", values["failure-rate"]!, 0, 1),
    reconnect: !values["no-reconnect"],
    maxBackoffMs: num("max-backoff-ms", values["max-backoff-ms"]!, 1),
    inventory: values.inventory,
    hello: values.hello,
  });
  console.log(`${fleet.connected.connected} connected, ${fleet.connected.failed} failed in ${(fleet.connected.ms / 1000).toFixed(1)} s${fleet.connected.errors.length ? `; first errors: ${fleet.connected.errors.join("; ")}` : ""}`);
  const durationS = num("duration", values.duration!, 0);
  let done = false;
  const finish = async () => {
    if (done) return;
    done = true;
    clearInterval(ticker);
    await fleet.close();
    process.exit(0);
  };
  const ticker = setInterval(async () => {
    const s = await fleet.stats();
    const where = Object.keys(s.connectedTo).length > 1 ? ` (${Object.entries(s.connectedTo).map(([u, c]) => `${c} to ${u}`).join(", ")})` : "";
    console.log(`[${((performance.now() - started) / 1000).toFixed(0)} s] connected ${s.connected}/${s.edges}${where}, answered ${s.answered} (${s.failedAnswers} failed on purpose), cancelled ${s.cancelled}, lost ${s.lost}, welcomes ${s.welcomes}`);
  }, 5000);
  process.on("SIGINT", () => void finish());
  process.on("SIGTERM", () => void finish());
  if (durationS > 0) setTimeout(() => void finish(), durationS * 1000);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: Error) => {
    console.error(`sim: ${err.message}`);
    process.exit(2);
  });
}
