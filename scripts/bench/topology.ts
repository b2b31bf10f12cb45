/**
 * The topology benchmark (K5): how long a topology refresh takes for a fleet of simulated edges,
 * against fetching the same host_sockets results without joining them, in one run, on one
 * manager (its own process; PGlite, or PostgreSQL with --database-url).
 *
 *   npm run bench:topology [-- --edges 1000] [--runs 5] [--sim-processes 2] [--database-url postgres://…] [--out FILE]
 *
 * Every simulated edge (scripts/sim/) answers host_sockets with a realistic service mix that links
 * services across edges (scripts/sim/sockets.ts: databases, APIs, caches and web servers calling
 * each other, clients and a provider outside the fleet). Alternating, run by run:
 * - baseline: `SkillService.FanOutSkill` host_sockets to every edge (the same params a refresh
 *   sends), reading every result: the fan-out, gate and audit, no join, no storage;
 * - refresh: `get_topology` with refresh (ExecuteSkill): the same fan-out, then the join of every
 *   edge's sockets into the graph and its storage; the tool reports its collect, build and store
 *   times, which are shown too.
 * And in this process, the join alone (buildTopology over the edges' outputs, no I/O).
 *
 * Prints a table and writes JSON (scripts/bench/results/topology.json).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SkillService } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { buildTopology } from "../../manager/topology/build.ts";
import { SOCKETS_PER_EDGE } from "../../manager/topology/topology.ts";
import { enrollFleet, startFleet } from "../sim/fleet.ts";
import { simulatedSockets } from "../sim/sockets.ts";
import { freePort } from "../../test/support/free-port.ts";
import { intFlag } from "./lib/flags.ts";
import { startManagerProcess } from "./lib/manager-proc.ts";
import { infoRow, machineInfo, table, writeJson, type Row } from "./lib/report.ts";
import { createBenchDatabase, runBench, runContext } from "./lib/run.ts";
import { median, quantile } from "./lib/stats.ts";

const ROOT = resolve(import.meta.dirname, "..", "..");
const HERE = import.meta.dirname;
const LABEL = { bench_topology: "1" };

function flags() {
  const { values } = parseArgs({
    options: {
      edges: { type: "string", default: "1000" },
      runs: { type: "string", default: "5" },
      "sim-processes": { type: "string", default: "2" },
      "database-url": { type: "string" },
      out: { type: "string" },
    },
  });
  return {
    edges: intFlag("edges", values.edges!, 10),
    runs: intFlag("runs", values.runs!, 1),
    simProcesses: intFlag("sim-processes", values["sim-processes"]!, 1),
    databaseUrl: values["database-url"],
    out: resolve(values.out ?? join(HERE, "results", "topology.json")),
  };
}

const { log, cleanups, cleanup } = runContext("bench:topology");

interface Refresh {
  asked: number;
  succeeded: number;
  collect_ms: number;
  load_ms: number;
  build_ms: number;
  store_ms: number;
}

async function main(): Promise<number> {
  const o = flags();
  const loadBefore = loadavg();
  const dataDir = mkdtempSync(join(tmpdir(), "ongrid-bench-topology-"));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  let databaseUrl: string | undefined;
  if (o.databaseUrl) {
    const db = await createBenchDatabase(o.databaseUrl);
    cleanups.push(() => db.drop());
    databaseUrl = db.url;
  }
  log(`starting the manager (${databaseUrl ? "PostgreSQL" : "PGlite"}; no scheduled refresh)`);
  const mgr = await startManagerProcess({ root: ROOT, port: await freePort(), dataDir, databaseUrl, needFds: o.edges + 512, firstStart: true, env: { ONGRID_TOPOLOGY_REFRESH_INTERVAL: "0s", ONGRID_SKILL_TIMEOUT: "5m" } });
  const token = mgr.adminToken!;
  log(`enrolling and connecting ${o.edges} simulated edges answering host_sockets`);
  const edges = await enrollFleet(mgr.url, token, o.edges, "topo-", 8, () => LABEL);
  const fleet = await startFleet({ url: mgr.url, edges, processes: o.simProcesses, labels: LABEL, latencyMs: 0, latencyJitterMs: 0, failureRate: 0, reconnect: false, maxBackoffMs: 30_000, inventory: "builtins", needFds: o.edges + 512 });
  cleanups.push(() => fleet.close());
  if (fleet.connected.connected !== o.edges) throw new Error(`${fleet.connected.failed} of ${o.edges} simulated edges did not connect: ${fleet.connected.errors.join("; ")}`);

  const bearer: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  const skills = createClient(SkillService, createConnectTransport({ baseUrl: mgr.url, httpVersion: "1.1", interceptors: [bearer] }));
  const params = { state: "all", aggregate: true, limit: SOCKETS_PER_EDGE };

  /** The baseline: every edge's host_sockets through FanOutSkill, every result read. */
  const fetchOnly = async (): Promise<{ ms: number; results: number; bytes: number }> => {
    const t0 = performance.now();
    let results = 0;
    let bytes = 0;
    let succeeded = -1;
    for await (const ev of skills.fanOutSkill({ key: "host_sockets", selector: "bench_topology=1", input: { case: "paramsJson", value: JSON.stringify(params) }, batchResults: true }, { timeoutMs: 300_000 })) {
      if (ev.event.case === "edgeResults")
        for (const r of ev.event.value.results) {
          results++;
          bytes += JSON.stringify(toJson(ValueSchema, r.result!.output!)).length;
        }
      else if (ev.event.case === "summary") succeeded = ev.event.value.succeeded;
    }
    if (succeeded !== o.edges) throw new Error(`the fan-out answered ${succeeded} of ${o.edges} edges`);
    return { ms: performance.now() - t0, results, bytes };
  };
  /** A refresh: the same fan-out, the join and the storage, through get_topology. */
  const refresh = async (): Promise<{ ms: number; report: Refresh; nodes: number }> => {
    const t0 = performance.now();
    const res = await skills.executeSkill({ key: "get_topology", input: { case: "paramsJson", value: JSON.stringify({ refresh: true, limit: 1 }) }, timeoutMs: 300_000 });
    const ms = performance.now() - t0;
    if (!res.result?.success) throw new Error(`get_topology failed: ${JSON.stringify(res.result?.error)}`);
    const out = toJson(ValueSchema, res.result.output!) as unknown as { refresh: Refresh; matched: number };
    if (out.refresh.succeeded !== o.edges) throw new Error(`the refresh read ${out.refresh.succeeded} of ${o.edges} edges`);
    return { ms, report: out.refresh, nodes: out.matched };
  };

  log("warm-up: one fan-out and one refresh");
  const warm = await fetchOnly();
  await refresh();
  const runs: Array<{ fetch_ms: number; refresh_ms: number; collect_ms: number; load_ms: number; build_ms: number; store_ms: number }> = [];
  let nodes = 0;
  for (let i = 0; i < o.runs; i++) {
    const order = i % 2 ? (["refresh", "fetch"] as const) : (["fetch", "refresh"] as const);
    const run = { fetch_ms: 0, refresh_ms: 0, collect_ms: 0, load_ms: 0, build_ms: 0, store_ms: 0 };
    for (const what of order) {
      if (what === "fetch") run.fetch_ms = (await fetchOnly()).ms;
      else {
        const r = await refresh();
        Object.assign(run, { refresh_ms: r.ms, collect_ms: r.report.collect_ms, load_ms: r.report.load_ms, build_ms: r.report.build_ms, store_ms: r.report.store_ms });
        nodes = r.nodes;
      }
    }
    log(`  run ${i + 1}: fetch only ${run.fetch_ms.toFixed(0)} ms; refresh ${run.refresh_ms.toFixed(0)} ms (collect ${run.collect_ms.toFixed(0)}, load ${run.load_ms.toFixed(0)}, build ${run.build_ms.toFixed(0)}, store ${run.store_ms.toFixed(0)})`);
    runs.push(run);
  }

  log("the join alone, in this process: buildTopology over the same outputs");
  const observations = edges.map((e) => ({ edgeId: e.id, collectedAt: new Date(), sockets: simulatedSockets(e.id), error: "" }));
  const joinMs: number[] = [];
  let graph = buildTopology({ observations });
  for (let i = 0; i < Math.max(5, o.runs); i++) {
    const t0 = performance.now();
    graph = buildTopology({ observations });
    joinMs.push(performance.now() - t0);
  }
  const serviceLinks = graph.links.filter((l) => l.from.startsWith("svc:") && l.to.startsWith("svc:")).length;

  const col = (k: keyof (typeof runs)[number]) => runs.map((r) => r[k]);
  const rows: Row[] = [
    infoRow(`topology refresh at ${o.edges} edges, median: get_topology refresh vs fetch only (FanOutSkill)`, "ms", median(col("refresh_ms")), median(col("fetch_ms"))),
    infoRow(`topology refresh at ${o.edges} edges, p90: get_topology refresh vs fetch only`, "ms", quantile(col("refresh_ms"), 0.9), quantile(col("fetch_ms"), 0.9)),
    infoRow("  of which: collect (fan-out, record observations) vs fetch only", "ms", median(col("collect_ms")), median(col("fetch_ms"))),
    infoRow("  of which: load (every stored observation and the static file, read back)", "ms", median(col("load_ms"))),
    infoRow("  of which: build (join every edge's sockets)", "ms", median(col("build_ms"))),
    infoRow("  of which: store (the graph into the database)", "ms", median(col("store_ms"))),
    infoRow(`join alone in process (buildTopology, ${o.edges} edges), median`, "ms", median(joinMs)),
    infoRow("graph: nodes (in the manager / built here)", "count", nodes, graph.nodes.length),
    infoRow("graph: links", "count", graph.links.length),
    infoRow("graph: service-to-service links (resolved across edges)", "count", serviceLinks),
    infoRow("host_sockets answers: total size (JSON)", "KiB", warm.bytes / 1024),
  ];
  console.log(`\n${table(rows)}\n`);
  writeJson(o.out, {
    bench: "topology",
    options: { edges: o.edges, runs: o.runs, sim_processes: o.simProcesses, database: databaseUrl ? "postgres" : "pglite", sockets_per_edge: SOCKETS_PER_EDGE },
    rows,
    runs,
    join_ms: joinMs,
    graph: { nodes: graph.nodes.length, links: graph.links.length, service_links: serviceLinks, nodes_in_manager: nodes },
    machine: machineInfo(loadBefore, loadavg()),
  });
  log(`wrote ${o.out}`);
  return 0;
}

runBench(main, cleanup, 20);
