import { describe, expect, it } from "vitest";
import { OngridError } from "../../../../skill/errors.ts";
import { createFleetHostLoad } from "./fleet-host-load.ts";
import { createFleetHostFiles } from "./fleet-host-files.ts";
import { fakeDeps, loadOutput, runTool, type FakeEdge } from "./fleet.testkit.ts";
import { resolveTargets } from "./targets.ts";

const fleet: FakeEdge[] = [
  { id: "a-1", labels: { team: "a", env: "prod" } },
  { id: "a-2", labels: { team: "a", env: "dev" } },
  { id: "a-3", labels: { team: "a", env: "prod" }, online: false, lastSeen: new Date("2025-01-30T10:00:00Z") },
  { id: "b-1", labels: { team: "b", env: "prod" } },
  { id: "b-2", labels: { team: "b", env: "prod" }, revoked: true },
];

describe("resolveTargets", () => {
  const { deps } = fakeDeps(fleet, () => ({ output: {} }));
  const everyone = { caller: { userId: "olga", role: "operator" } };
  const teamA = { caller: { userId: "tina", role: "viewer", reach: ["team=a"] } };

  it("picks connected edges by selector, reports enrolled offline ones apart, skips revoked ones", async () => {
    const t = await resolveTargets(deps, everyone, { selector: "env=prod" });
    expect(t.call).toEqual(["a-1", "b-1"]);
    expect(t.offline.map((o) => o.edgeId)).toEqual(["a-3"]);
    expect(t.leftOut).toBe(0);
  });

  it("with neither selector nor ids takes every edge in reach", async () => {
    expect((await resolveTargets(deps, everyone, {})).call).toEqual(["a-1", "a-2", "b-1"]);
  });

  it("narrows a selector to the caller's reach; what it left out is counted for an admin only (the count says such edges exist)", async () => {
    const t = await resolveTargets(deps, teamA, { selector: "env=prod" });
    expect(t.call).toEqual(["a-1"]);
    expect(t.offline.map((o) => o.edgeId)).toEqual(["a-3"]);
    expect(t.leftOut).toBe(0);
    const admin = await resolveTargets(deps, { caller: { ...teamA.caller, role: "admin" } }, { selector: "env=prod" });
    expect(admin.call).toEqual(["a-1"]);
    expect(admin.leftOut).toBe(1);
  });

  it("hands named edges to the dispatcher even outside reach (it answers them as unknown), without adding the rest of the fleet", async () => {
    const t = await resolveTargets(deps, teamA, { edge_ids: ["b-1", "zz-9"] });
    expect(t.call).toEqual(["b-1", "zz-9"]);
    expect(t.offline).toEqual([]);
  });

  it("refuses a malformed selector as the tool's own invalid_argument", async () => {
    await expect(resolveTargets(deps, everyone, { selector: "=x" })).rejects.toMatchObject({ code: "invalid_argument" });
  });
});

describe("a fleet host_* tool (fleet_host_load)", () => {
  it("runs host_load on each target as the caller, in the caller's session and mode, and returns every edge's output", async () => {
    const { deps, calls } = fakeDeps(fleet, (i) => ({ output: loadOutput(i.edgeId === "a-1" ? 2 : 1) }));
    const r = await runTool(createFleetHostLoad(deps), { selector: "team=a,env=prod" }, { caller: { userId: "olga", role: "operator" }, sessionId: "chat-9" });
    expect(r.success).toBe(true);
    const out = r.output as any;
    expect(out).toMatchObject({ skill: "host_load", targeted: 2, succeeded: 1, failed: 1, left_out: 0, session_id: "chat-9" });
    expect(out.results.map((x: any) => x.edge_id)).toEqual(["a-1"]);
    expect(out.results[0].output.loadavg[0]).toBe(2);
    // The offline edge the selector matched is reported with its last contact, and no call is made to it.
    expect(out.failures).toEqual([{ edge_id: "a-3", code: "unavailable", message: 'edge "a-3" is offline (last seen 2025-01-30T10:00:00.000Z)', hint: expect.any(String) }]);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ key: "host_load", edgeId: "a-1", sessionId: "chat-9", caller: { userId: "olga", role: "operator" }, noApproval: true });
  });

  it("never fails as a whole because some edges failed: each failure keeps its code, message and hint", async () => {
    const { deps } = fakeDeps(fleet, (i) => {
      if (i.edgeId === "a-2") return { error: { code: "deadline_exceeded", message: 'skill "host_load" did not finish within 100 ms', hint: "retry" } };
      if (i.edgeId === "b-1") return { throws: new OngridError("unavailable", 'edge "b-1" went away during the call: tunnel lost', "retry when the edge is back online") };
      return { output: loadOutput(1) };
    });
    const r = await runTool(createFleetHostLoad(deps), {});
    expect(r.success).toBe(true);
    const out = r.output as any;
    expect(out.results.map((x: any) => x.edge_id)).toEqual(["a-1"]);
    expect(out.failures.map((f: any) => [f.edge_id, f.code])).toEqual([
      ["a-2", "deadline_exceeded"],
      ["a-3", "unavailable"],
      ["b-1", "unavailable"],
    ]);
    expect(out.failures.find((f: any) => f.edge_id === "b-1").message).toMatch(/went away during the call/);
  });

  it("reports a named edge outside the caller's reach exactly like an unknown one, and never reaches it", async () => {
    const { deps, calls } = fakeDeps(fleet, () => ({ output: loadOutput(1) }));
    const r = await runTool(createFleetHostLoad(deps), { edge_ids: ["b-1"] }, { caller: { userId: "tina", role: "viewer", reach: ["team=a"] } });
    const out = r.output as any;
    expect(out.results).toEqual([]);
    expect(out.failures).toEqual([{ edge_id: "b-1", code: "not_found", message: 'unknown edge "b-1"', hint: "" }]);
    expect(calls.map((c) => [c.edgeId, c.caller.reach])).toEqual([["b-1", ["team=a"]]]);
  });

  it("gives a call made outside any session a session of its own, so its edge calls can be found together", async () => {
    const { deps, calls } = fakeDeps(fleet, () => ({ output: loadOutput(1) }));
    const r = await runTool(createFleetHostLoad(deps), { edge_ids: ["a-1", "a-2"] }, { sessionId: "" });
    expect((r.output as any).session_id).toBe("fleet-call-1");
    expect(new Set(calls.map((c) => c.sessionId))).toEqual(new Set(["fleet-call-1"]));
  });

  it("keeps each edge's deadline inside the tool's own", async () => {
    const { deps, calls } = fakeDeps(fleet, () => ({ output: loadOutput(1) }));
    const r = await runTool(createFleetHostLoad(deps), { edge_ids: ["a-1"], per_edge_timeout_ms: 60_000 }, { timeoutMs: 5000 });
    const used = (r.output as any).per_edge_timeout_ms;
    expect(used).toBeLessThanOrEqual(3500);
    expect(calls[0].timeoutMs).toBe(used);
  });

  it("fails with no_edges, naming the selector, when nothing in reach matches", async () => {
    const { deps, calls } = fakeDeps(fleet, () => ({ output: loadOutput(1) }));
    const r = await runTool(createFleetHostLoad(deps), { selector: "team=b" }, { caller: { userId: "tina", role: "viewer", reach: ["team=a"] } });
    expect(r.success).toBe(false);
    expect(r.error).toMatchObject({ code: "no_edges", message: 'selector "team=b" matched no edge you may reach' });
    expect(r.error!.hint).toMatch(/query_edges/);
    expect(calls).toEqual([]);
  });

  it("refuses params outside the schema before any edge is called", async () => {
    const { deps } = fakeDeps(fleet, () => ({ output: {} }));
    await expect(runTool(createFleetHostLoad(deps), { selector: "team=a", command: "uptime" })).rejects.toMatchObject({ code: "invalid_argument" });
    await expect(runTool(createFleetHostLoad(deps), { per_edge_timeout_ms: 5 })).rejects.toMatchObject({ code: "invalid_argument" });
    await expect(runTool(createFleetHostFiles(deps), { path: "var/log" })).rejects.toMatchObject({ code: "invalid_argument" });
  });

  it("fleet_host_files passes path and limit to host_files on each edge", async () => {
    const { deps, calls } = fakeDeps(fleet, () => ({ output: { path: "/var/log", entries: [] } }));
    await runTool(createFleetHostFiles(deps), { edge_ids: ["a-1"], path: "/var/log", limit: 3 });
    expect(calls[0]).toMatchObject({ key: "host_files", params: { path: "/var/log", limit: 3 } });
  });
});
