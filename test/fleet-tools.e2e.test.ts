/**
 * Issue 9, K1 end to end: the fleet base tools through the real RPC (SkillService.ExecuteSkill,
 * bearer tokens) on a real manager with five real compiled edges. Every edge runs on this machine
 * and would report the same load, so one edge is started with --proc-root pointing at a proc
 * directory of its own whose loadavg says 50 per CPU and whose meminfo says 97% used: host_load
 * reads those files exactly as it reads /proc, and the fleet tools see a loaded edge.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, waitFor, type TestEdge } from "./support/edge.ts";
import { bearer, makeUser } from "./support/auth.ts";

let m: TestManager;
let dir: string;
const edges: Record<string, TestEdge> = {};
const as: Record<string, Client<typeof SkillService>> = {};
const CPUS = os.cpus().length || 1;
const LOADED = "fl-3";

function clientFor(token: string): Client<typeof SkillService> {
  return createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(token)] }));
}

/** Calls a base tool as a user; the envelope with its output as plain JSON. */
async function tool(who: string, key: string, params: Record<string, unknown>, sessionId = "") {
  const res = await as[who].executeSkill({ key, input: { case: "params", value: params as never }, sessionId });
  const r = res.result!;
  return { success: r.success, output: (r.output ? toJson(ValueSchema, r.output as never) : null) as any, error: r.error, auditSeq: Number(res.auditSeq) };
}

/** A proc directory whose load is 50 per CPU and whose memory is 97% used. */
function loadedProc(root: string): string {
  const proc = join(root, "proc");
  mkdirSync(proc, { recursive: true });
  writeFileSync(join(proc, "loadavg"), `${(CPUS * 50).toFixed(2)} ${(CPUS * 40).toFixed(2)} ${(CPUS * 30).toFixed(2)} ${CPUS * 4}/900 4242\n`);
  writeFileSync(join(proc, "meminfo"), "MemTotal:       16384000 kB\nMemFree:          300000 kB\nMemAvailable:     491520 kB\nSwapTotal:             0 kB\nSwapFree:              0 kB\n");
  writeFileSync(join(proc, "uptime"), "86400.00 10000.00\n");
  writeFileSync(join(proc, "stat"), `cpu  100 0 100 1000 0 0 0 0 0 0\n${Array.from({ length: CPUS }, (_, i) => `cpu${i} 100 0 100 1000 0 0 0 0 0 0`).join("\n")}\n`);
  return proc;
}

/** A pack with one skill only fl-2 offers, to filter edges by skill. */
function markerPack(root: string): string {
  const pack = join(root, "packs", "marker");
  mkdirSync(pack, { recursive: true });
  writeFileSync(
    join(pack, "skill.json"),
    JSON.stringify({ key: "cache_inspect_keys", name: "Cache keys", description: "Lists cache keys; use it to check what the cache holds.", class: "safe", params: {}, result_preview: '{"keys": []}', executable: "run.sh", timeout: "5s" }),
  );
  writeFileSync(join(pack, "run.sh"), `#!/bin/sh\ncat >/dev/null\nprintf '{"output": {"keys": []}}'\n`);
  chmodSync(join(pack, "run.sh"), 0o755);
  return pack;
}

beforeAll(async () => {
  dir = mkdtempSync(join(os.tmpdir(), "ongrid-fleet-"));
  m = await bootManager();
  const specs: [string, Record<string, string>, string[]][] = [
    ["fl-1", { team: "a", role: "web" }, []],
    ["fl-2", { team: "a", role: "web" }, ["--pack-dir", markerPack(dir)]],
    [LOADED, { team: "a", role: "web" }, ["--proc-root", loadedProc(dir)]],
    ["fl-4", { team: "b", role: "web" }, []],
    ["fl-5", { team: "b", role: "web" }, []],
  ];
  await Promise.all(specs.map(async ([id, labels, args]) => (edges[id] = await startEdge(m, id, { labels, args }))));
  as.admin = clientFor(m.adminToken);
  as.olga = clientFor(await makeUser(m, "olga", "operator"));
  as.tina = clientFor(await makeUser(m, "tina", "viewer", { reach: "team=a" }));
}, 120_000);

afterAll(async () => {
  await Promise.all(Object.values(edges).map((e) => e.stop()));
  await m?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("fleet tools against five real edges", () => {
  it("are listed as safe manager skills of category fleet", async () => {
    const { skills } = await as.olga.listSkills({ category: "fleet" });
    expect(skills.map((s) => s.key).sort()).toEqual(["find_outlier_edges", "fleet_host_files", "fleet_host_load", "fleet_host_processes", "get_edge_summary", "query_edges", "rank_edges"]);
  });

  it("find_outlier_edges ranks the loaded edge first, with its explanation", async () => {
    const r = await tool("olga", "find_outlier_edges", { metric: "load_per_cpu", selector: "role=web" }, "fleet-outliers");
    expect(r.success, JSON.stringify(r.error)).toBe(true);
    expect(r.output.compared).toBe(5);
    expect(r.output.failures).toEqual([]);
    // First, and far ahead: the other four report this machine's own load, a few ms apart.
    expect(r.output.outliers[0].edge_id).toBe(LOADED);
    const top = r.output.outliers[0];
    expect(top.value).toBe(50);
    expect(top.side).toBe("high");
    expect(top.explanation).toMatch(new RegExp(`^load_per_cpu 50 load/CPU \\(load1 ${CPUS * 50} on ${CPUS} CPUs\\) is above the median [\\d.]+ of 5 edges; MAD [\\d.]+; .*z = \\+[\\d.]+, beyond the threshold 3\\.5$`));
    expect(r.output.scores[0].edge_id).toBe(LOADED);
    // Memory: the loaded edge's meminfo says 97% used; the others report this machine's.
    const mem = await tool("olga", "rank_edges", { metric: "memory_used_pct", selector: "role=web", limit: 1 });
    expect(mem.output.ranked).toEqual([{ rank: 1, edge_id: LOADED, value: 97 }]);
  });

  it("rank_edges puts the loaded edge first, and last in ascending order", async () => {
    const r = await tool("olga", "rank_edges", { metric: "load_per_cpu", selector: "role=web", limit: 3 });
    expect(r.success, JSON.stringify(r.error)).toBe(true);
    expect(r.output.ranked[0]).toMatchObject({ rank: 1, edge_id: LOADED, value: 50 });
    expect(r.output.ranked).toHaveLength(3);
    expect(r.output).toMatchObject({ compared: 5, returned: 3, order: "desc" });
    const asc = await tool("olga", "rank_edges", { metric: "load1", order: "asc", limit: 5 });
    expect(asc.output.ranked.map((x: any) => x.edge_id).at(-1)).toBe(LOADED);
  });

  it("query_edges filters by label, state and offered skill", async () => {
    const ids = async (who: string, params: Record<string, unknown>) => (await tool(who, "query_edges", params)).output.edges.map((e: any) => e.id);
    expect(await ids("olga", { selector: "team=b" })).toEqual(["fl-4", "fl-5"]);
    expect(await ids("olga", { state: "online" })).toEqual(["fl-1", "fl-2", LOADED, "fl-4", "fl-5"]);
    expect(await ids("olga", { state: "offline" })).toEqual([]);
    expect(await ids("olga", { skill: "cache_inspect_keys" })).toEqual(["fl-2"]);
    const one = (await tool("olga", "query_edges", { selector: "team=a", skill: "host_load", limit: 1 })).output;
    expect(one).toMatchObject({ matched: 3, returned: 1, online: 3, offline: 0 });
    expect(one.edges[0]).toMatchObject({ id: "fl-1", online: true, labels: { team: "a", role: "web" }, hostname: os.hostname(), version: "0.1.0" });
    expect(one.edges[0].skill_count).toBeGreaterThan(5);
    expect(Date.parse(one.edges[0].last_seen)).not.toBeNaN();
  });

  it("query_edges shows a user with reach team=a only team=a edges", async () => {
    const ids = async (params: Record<string, unknown>) => (await tool("tina", "query_edges", params)).output.edges.map((e: any) => e.id);
    expect(await ids({})).toEqual(["fl-1", "fl-2", LOADED]);
    expect(await ids({ selector: "team=b" })).toEqual([]);
    expect(await ids({ selector: "role=web" })).toEqual(["fl-1", "fl-2", LOADED]);
  });

  it("get_edge_summary gives the loaded edge's load, memory and disk, and says what failed in parts that failed", async () => {
    const r = await tool("olga", "get_edge_summary", { edge_id: LOADED, window: "15m" }, "fleet-summary");
    expect(r.success, JSON.stringify(r.error)).toBe(true);
    const out = r.output;
    expect(out.load).toMatchObject({ ok: true, load_per_cpu: 50, cpus: CPUS, memory_used_pct: 97 });
    expect(out.concerns).toEqual(expect.arrayContaining([`load: ${CPUS * 50} on ${CPUS} CPUs = 50 per CPU (over 1)`, "memory: 97% used (over 90%)"]));
    expect(out.disk.ok).toBe(true);
    expect(out.disk.filesystems.length).toBeGreaterThan(0);
    // The journal part answers where journald runs and fails with its reason where it does not; either way it says which.
    if (out.journal.ok) expect(out.journal).toMatchObject({ since: "15min ago", failed_units: expect.any(Array), recent_errors: expect.any(Array) });
    else expect(out.journal).toMatchObject({ skill: "read_journal", error: { code: expect.stringMatching(/^journal_|permission_denied/), message: expect.any(String) } });
    expect(out.failed_parts).toEqual(out.journal.ok ? [] : ["journal"]);
    await m.audit.flush();
    const rows = await m.audit.list({ sessionId: "fleet-summary" });
    expect(rows.filter((x) => x.deviceId === LOADED).map((x) => x.toolName).sort()).toEqual(["host_files", "host_load", "read_journal"]);
  });

  it("a viewer cannot use a fleet tool to reach edges outside their reach", async () => {
    const named = await tool("tina", "fleet_host_load", { edge_ids: ["fl-4", "fl-1"] }, "tina-named");
    expect(named.success).toBe(true);
    expect(named.output.results.map((x: any) => x.edge_id)).toEqual(["fl-1"]);
    expect(named.output.failures).toEqual([{ edge_id: "fl-4", code: "not_found", message: 'unknown edge "fl-4"', hint: "ListEdges shows the enrolled edges" }]);
    const all = await tool("tina", "fleet_host_load", {}, "tina-all");
    expect(all.output.results.map((x: any) => x.edge_id)).toEqual(["fl-1", "fl-2", LOADED]);
    expect(all.output.left_out).toBe(0); // the edges outside her reach are not even counted for her
    const summary = await tool("tina", "get_edge_summary", { edge_id: "fl-5" });
    expect(summary.success).toBe(false);
    expect(summary.error).toMatchObject({ code: "not_found", message: 'unknown edge "fl-5"' });
    const outliers = await tool("tina", "find_outlier_edges", { metric: "load_per_cpu", selector: "team=b" });
    expect(outliers.error).toMatchObject({ code: "no_edges" });
    // Nothing ran on a team=b edge as tina: the one named edge was refused before the tunnel, and audited as such.
    await m.audit.flush();
    const rows = (await m.audit.list({ userId: "tina" })).filter((x) => x.deviceId === "fl-4" || x.deviceId === "fl-5");
    expect(rows.map((x) => [x.toolName, x.deviceId, x.error])).toEqual([["host_load", "fl-4", 'not_found: unknown edge "fl-4"']]);
  });

  it("every per-edge call of a fleet tool is audited as the calling user in the tool's session", async () => {
    const r = await tool("tina", "fleet_host_processes", { selector: "role=web", limit: 2 }, "fleet-audit-1");
    expect(r.success).toBe(true);
    expect(r.output.session_id).toBe("fleet-audit-1");
    const answered = [...r.output.results, ...r.output.failures].map((x: any) => x.edge_id).sort();
    expect(answered).toEqual(["fl-1", "fl-2", LOADED]);
    await m.audit.flush();
    const rows = await m.audit.list({ sessionId: "fleet-audit-1" });
    const perEdge = rows.filter((x) => x.toolName === "host_processes");
    expect(perEdge.map((x) => x.deviceId).sort()).toEqual(answered);
    for (const row of perEdge) expect(row).toMatchObject({ callerUserId: "tina", callerRole: "viewer", decision: "allow", sessionId: "fleet-audit-1" });
    // And the tool's own call, in the same session.
    expect(rows.filter((x) => x.toolName === "fleet_host_processes").map((x) => [x.callerUserId, x.deviceId])).toEqual([["tina", ""]]);
  });

  it("returns every edge's failure, not a failed call, when each edge misses its deadline", async () => {
    // host_processes samples CPU over 200 ms, so a 100 ms per-edge deadline cannot be met.
    const r = await tool("olga", "fleet_host_processes", { edge_ids: ["fl-1", "fl-2"], per_edge_timeout_ms: 100 });
    expect(r.success).toBe(true);
    expect(r.output.results).toEqual([]);
    expect(r.output.failures.map((f: any) => [f.edge_id, f.code])).toEqual([
      ["fl-1", "deadline_exceeded"],
      ["fl-2", "deadline_exceeded"],
    ]);
    // The edge counts the deadline from when the call reached it, so it may say a few ms less.
    expect(r.output.failures[0].message).toMatch(/^skill "host_processes" did not finish within \d+ ms$/);
  });

  it("returns partial results naming the edge that went offline", async () => {
    await edges["fl-5"].stop();
    expect(await waitFor(() => !m.hub.session("fl-5"), 20_000)).toBe(true);
    const r = await tool("olga", "fleet_host_load", { selector: "role=web" }, "fleet-offline");
    expect(r.success).toBe(true);
    expect(r.output).toMatchObject({ targeted: 5, succeeded: 4, failed: 1 });
    expect(r.output.results.map((x: any) => x.edge_id)).toEqual(["fl-1", "fl-2", LOADED, "fl-4"]);
    expect(r.output.results.find((x: any) => x.edge_id === LOADED).output.loadavg[0]).toBe(CPUS * 50);
    expect(r.output.failures).toEqual([{ edge_id: "fl-5", code: "unavailable", message: expect.stringMatching(/^edge "fl-5" is offline \(last seen \d{4}-\d\d-\d\dT/), hint: expect.any(String) }]);
    // Named explicitly, the offline edge is refused by the dispatcher, with the same reason.
    const named = await tool("olga", "fleet_host_files", { edge_ids: ["fl-5", "fl-4"], limit: 2 });
    expect(named.output.results.map((x: any) => x.edge_id)).toEqual(["fl-4"]);
    expect(named.output.failures).toEqual([{ edge_id: "fl-5", code: "unavailable", message: expect.stringMatching(/^edge "fl-5" is offline/), hint: expect.any(String) }]);
    // query_edges now lists it as offline; outliers and ranks still compare the four that answered.
    expect((await tool("olga", "query_edges", { state: "offline" })).output.edges.map((e: any) => e.id)).toEqual(["fl-5"]);
    const out = await tool("olga", "find_outlier_edges", { metric: "load_per_cpu" });
    expect(out.output.compared).toBe(4);
    expect(out.output.outliers[0].edge_id).toBe(LOADED);
    expect(out.output.failures.map((f: any) => f.edge_id)).toEqual(["fl-5"]);
  });
});
