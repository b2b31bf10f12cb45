/**
 * The MCP benchmark (issue 29): ongrid's MCP endpoint against the same work over Connect, in one
 * run, on one manager (its own process, PGlite) with a simulated fleet (scripts/sim/).
 *
 *   npm run bench:mcp [-- --edges 1000] [--calls 300] [--list-runs 15] [--out FILE]
 *
 * - A safe tool call (`bench_echo` on one edge, a different `text` each time so no call is
 *   answered from the session's dedupe memory): MCP `tools/call` over streamable HTTP (the
 *   official SDK client, one session) against `SkillService.ExecuteSkill` over Connect
 *   (connect-node, HTTP/1.1, the same token). Both are gated, dispatched to the edge and
 *   audited (the answer waits for the row). Calls alternate one by one, sequentially, so drift in
 *   the machine's load hits both alike. Target: MCP median ≤ 1.3× Connect's.
 * - `tools/list` with `--edges` edges connected, each offering the real edge's host tools: MCP
 *   `tools/list` (raw JSON-RPC in the SDK client's session, so the figure is the server's and the
 *   wire's) against `AgentService.ListTools` over Connect (the same gated bridge, no MCP
 *   framing); alternated too. Reported, with the answer's size and the SDK client's own time
 *   (it compiles a validator for every tool's outputSchema).
 *
 * Prints a table and writes JSON (scripts/bench/results/mcp.json).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { AgentService } from "../../proto/gen/ongrid/v1/agent_service_pb.ts";
import { SkillService } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { enrollFleet, startFleet } from "../sim/fleet.ts";
import { freePort } from "../../test/support/free-port.ts";
import { BENCH_SKILL } from "./lib/constants.ts";
import { intFlag } from "./lib/flags.ts";
import { startManagerProcess } from "./lib/manager-proc.ts";
import { infoRow, machineInfo, ratioRow, table, writeJson, type Row } from "./lib/report.ts";
import { runBench, runContext } from "./lib/run.ts";
import { median, quantile } from "./lib/stats.ts";

const ROOT = resolve(import.meta.dirname, "..", "..");
const HERE = import.meta.dirname;
const CALL_TARGET = 1.3;

function flags() {
  const { values } = parseArgs({
    options: {
      edges: { type: "string", default: "1000" },
      calls: { type: "string", default: "300" },
      "list-runs": { type: "string", default: "15" },
      out: { type: "string" },
    },
  });
  return {
    edges: intFlag("edges", values.edges!, 1),
    calls: intFlag("calls", values.calls!, 10),
    listRuns: intFlag("list-runs", values["list-runs"]!, 3),
    out: resolve(values.out ?? join(HERE, "results", "mcp.json")),
  };
}

const { log, cleanups, cleanup } = runContext("bench:mcp");

async function main(): Promise<number> {
  const o = flags();
  const loadBefore = loadavg();
  const dataDir = mkdtempSync(join(tmpdir(), "ongrid-bench-mcp-"));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  log("starting the manager (PGlite)");
  const mgr = await startManagerProcess({ root: ROOT, port: await freePort(), dataDir, needFds: o.edges + 512, firstStart: true });
  const token = mgr.adminToken!;
  log(`enrolling and connecting ${o.edges} simulated edges with the real edge's host tools`);
  const edges = await enrollFleet(mgr.url, token, o.edges, "bench-mcp-", 8, () => ({ bench_mcp: "1" }));
  const fleet = await startFleet({ url: mgr.url, edges, processes: 1, labels: { bench_mcp: "1" }, latencyMs: 0, latencyJitterMs: 0, failureRate: 0, reconnect: false, maxBackoffMs: 30_000, inventory: "builtins", needFds: o.edges + 512 });
  cleanups.push(() => fleet.close());
  if (fleet.connected.connected !== o.edges) throw new Error(`${fleet.connected.failed} of ${o.edges} simulated edges did not connect: ${fleet.connected.errors.join("; ")}`);

  const bearer: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  const connect = createConnectTransport({ baseUrl: mgr.url, httpVersion: "1.1", interceptors: [bearer] });
  const skills = createClient(SkillService, connect);
  const agent = createClient(AgentService, connect);
  const mcp = new Client({ name: "bench-mcp", version: "1" });
  const mcpTransport = new StreamableHTTPClientTransport(new URL(`${mgr.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  await mcp.connect(mcpTransport);
  /** tools/list as raw JSON-RPC over the same session (fetch, the body read whole): the server's and the wire's time, without the SDK client's work on the answer. */
  let rpcId = 1000;
  const rawList = async (): Promise<{ tools: unknown[]; bytes: number }> => {
    const res = await fetch(`${mgr.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${token}`, "mcp-session-id": mcpTransport.sessionId!, "mcp-protocol-version": "2025-11-25" },
      body: JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method: "tools/list" }),
    });
    const body = await res.text();
    const data = body.split("\n").find((l) => l.startsWith("data: "));
    const msg = JSON.parse(data ? data.slice(6) : body) as { result?: { tools: unknown[] } };
    if (!res.ok || !msg.result) throw new Error(`tools/list answered ${res.status}: ${body.slice(0, 300)}`);
    return { tools: msg.result.tools, bytes: Buffer.byteLength(body) };
  };
  cleanups.push(() => mcp.close());
  const edgeId = edges[0]!.id;

  const viaMcp = async (i: number) => {
    const r = (await mcp.callTool({ name: BENCH_SKILL, arguments: { edge_id: edgeId, text: `mcp-${i}` } })) as CallToolResult;
    if (r.isError || (r.structuredContent as { deduplicated?: boolean })?.deduplicated) throw new Error(`MCP call ${i} failed or was not run: ${JSON.stringify(r.content)}`);
  };
  const viaConnect = async (i: number) => {
    const r = await skills.executeSkill({ key: BENCH_SKILL, edgeId, input: { case: "paramsJson", value: JSON.stringify({ text: `rpc-${i}` }) } });
    if (!r.result?.success || !r.auditSeq) throw new Error(`ExecuteSkill ${i} failed: ${JSON.stringify(r.result?.error)}`);
  };
  log(`safe call: ${o.calls} MCP tools/call and ${o.calls} ExecuteSkill, alternating (10 of each to warm up)`);
  for (let i = 0; i < 10; i++) {
    await viaMcp(-i - 1);
    await viaConnect(-i - 1);
  }
  const callMs = { mcp: [] as number[], connect: [] as number[] };
  for (let i = 0; i < o.calls; i++) {
    for (const [k, f] of (i % 2 ? [["connect", viaConnect], ["mcp", viaMcp]] : [["mcp", viaMcp], ["connect", viaConnect]]) as Array<["mcp" | "connect", (i: number) => Promise<void>]>) {
      const t0 = performance.now();
      await f(i);
      callMs[k].push(performance.now() - t0);
    }
  }

  log(`tools/list with ${o.edges} edges: ${o.listRuns} MCP tools/list and ${o.listRuns} AgentService.ListTools, alternating`);
  const listMs = { mcp: [] as number[], sdk: [] as number[], connect: [] as number[] };
  let mcpTools = 0;
  let mcpBytes = 0;
  let rpcTools = 0;
  for (let i = -2; i < o.listRuns; i++) {
    let t0 = performance.now();
    const l = await rawList();
    const m = performance.now() - t0;
    t0 = performance.now();
    await mcp.listTools();
    const s = performance.now() - t0;
    t0 = performance.now();
    const a = await agent.listTools({});
    const c = performance.now() - t0;
    if (i < 0) continue;
    listMs.mcp.push(m);
    listMs.sdk.push(s);
    listMs.connect.push(c);
    mcpTools = l.tools.length;
    mcpBytes = l.bytes;
    rpcTools = a.tools.length;
  }
  if (!mcpTools || mcpTools < rpcTools) throw new Error(`MCP listed ${mcpTools} tools, ListTools ${rpcTools}`);

  const rows: Row[] = [
    ratioRow("safe tool call, median: MCP tools/call vs ExecuteSkill", "ms", median(callMs.mcp), median(callMs.connect), CALL_TARGET),
    infoRow("safe tool call, p90: MCP tools/call vs ExecuteSkill", "ms", quantile(callMs.mcp, 0.9), quantile(callMs.connect, 0.9)),
    infoRow(`tools/list at ${o.edges} edges, median: MCP vs AgentService.ListTools`, "ms", median(listMs.mcp), median(listMs.connect)),
    infoRow(`tools/list at ${o.edges} edges, p90: MCP vs AgentService.ListTools`, "ms", quantile(listMs.mcp, 0.9), quantile(listMs.connect, 0.9)),
    infoRow(`tools/list at ${o.edges} edges, median, SDK client (validators compiled) vs raw`, "ms", median(listMs.sdk), median(listMs.mcp)),
    infoRow("tools listed: MCP vs ListTools", "tools", mcpTools, rpcTools),
    infoRow("tools/list answer size (MCP, as sent)", "KiB", mcpBytes / 1024),
  ];
  console.log(`\n${table(rows)}\n`);
  writeJson(o.out, {
    bench: "mcp",
    options: { edges: o.edges, calls: o.calls, list_runs: o.listRuns },
    rows,
    samples_ms: { call: callMs, list: listMs },
    machine: machineInfo(loadBefore, loadavg()),
  });
  log(`wrote ${o.out}`);
  return rows.some((r) => r.result === "fail") ? 1 : 0;
}

runBench(main, cleanup, 20);
