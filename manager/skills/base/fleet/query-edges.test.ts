import { describe, expect, it } from "vitest";
import { createQueryEdges } from "./query-edges.ts";
import { fakeDeps, runTool, type FakeEdge } from "./fleet.testkit.ts";

const fleet: FakeEdge[] = [
  { id: "a-1", labels: { team: "a" }, skills: ["host_load", "nft_list"] },
  { id: "a-2", labels: { team: "a" }, online: false, lastSeen: new Date("2025-01-30T10:00:00Z"), skills: ["host_load", "nft_list"] },
  { id: "a-3", labels: { team: "a" }, online: false, skills: ["host_load"] },
  { id: "b-1", labels: { team: "b" } },
  { id: "b-2", labels: { team: "b" }, revoked: true },
];
const { deps } = fakeDeps(fleet, () => ({ output: {} }));
const ids = async (params: Record<string, unknown>, caller?: { userId: string; role: string; reach?: string[] }) => ((await runTool(createQueryEdges(deps), params, { caller })).output as any).edges.map((e: any) => e.id);

describe("query_edges", () => {
  it("lists every enrolled, unrevoked edge with presence and counts", async () => {
    const out = (await runTool(createQueryEdges(deps), {})).output as any;
    expect(out).toMatchObject({ matched: 4, returned: 4, online: 2, offline: 2 });
    expect(out.edges[1]).toEqual({ id: "a-2", online: false, labels: { team: "a" }, hostname: "a-2.test", os: "linux/x64", version: "0.1.0", last_seen: "2025-01-30T10:00:00.000Z", skill_count: 2 });
    expect(out.edges[2].last_seen).toBeNull();
  });

  it("filters by selector, state and offered skill (an offline edge's skills as of its last hello)", async () => {
    expect(await ids({ selector: "team=a" })).toEqual(["a-1", "a-2", "a-3"]);
    expect(await ids({ state: "online" })).toEqual(["a-1", "b-1"]);
    expect(await ids({ state: "offline", skill: "nft_list" })).toEqual(["a-2"]);
    expect(await ids({ selector: "team=a", state: "online", skill: "nft_list" })).toEqual(["a-1"]);
    expect(await ids({ limit: 1 })).toEqual(["a-1"]);
  });

  it("shows only edges in the caller's reach", async () => {
    expect(await ids({}, { userId: "tina", role: "viewer", reach: ["team=b"] })).toEqual(["b-1"]);
    expect(await ids({ selector: "team=a" }, { userId: "tina", role: "viewer", reach: ["team=b"] })).toEqual([]);
  });

  it("refuses a bad state or skill key by the schema", async () => {
    await expect(runTool(createQueryEdges(deps), { state: "down" })).rejects.toMatchObject({ code: "invalid_argument" });
    await expect(runTool(createQueryEdges(deps), { skill: "Host-Load" })).rejects.toMatchObject({ code: "invalid_argument" });
  });
});
