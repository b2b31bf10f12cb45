/**
 * Edge labels are the manager's (issue 26 E, spec C4/G4): reach and selectors use the labels given
 * at enrolment or by an admin, never what an edge reports of itself, so an edge token cannot move
 * its edge into another team's reach. What the edge reports is shown, apart.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { EdgeService } from "../proto/gen/ongrid/v1/edge_service_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, type TestEdge } from "./support/edge.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { lastAuditRow } from "./support/audit.ts";

let m: TestManager;
const edges: TestEdge[] = [];
type Clients = { skills: Client<typeof SkillService>; edges: Client<typeof EdgeService> };
const as: Record<string, Clients> = {};
const clientsFor = (token: string): Clients => {
  const t = createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(token)] });
  return { skills: createClient(SkillService, t), edges: createClient(EdgeService, t) };
};

beforeAll(async () => {
  m = await bootManager();
  // Enrolled with no labels; the agent claims team=b (its own --label).
  edges.push(await startEdge(m, "liar", { args: ["--label", "team=b"] }));
  edges.push(await startEdge(m, "honest-b", { labels: { team: "b" } }));
  as.tina = clientsFor(await makeUser(m, "tina", "operator", { reach: "team=b" }));
  as.admin = clientsFor(m.adminToken);
}, 120_000);
afterAll(async () => {
  await Promise.all(edges.map((e) => e.stop()));
  await m?.stop();
});

async function fanOutTargets(c: Clients, selector: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const ev of c.skills.fanOutSkill({ key: "host_load", selector, input: { case: "params", value: {} as never } })) {
    if (ev.event.case === "edgeResult") ids.push(ev.event.value.edgeId);
  }
  return ids.sort();
}

describe("edge labels", () => {
  it("labels an edge reports never widen reach or match a selector; they are shown as reported", async () => {
    const listed = (await as.tina.edges.listEdges({})).edges.map((e) => e.id);
    expect(listed).toEqual(["honest-b"]);
    const err = await as.tina.skills.executeSkill({ key: "host_load", edgeId: "liar", input: { case: "params", value: {} as never } }).catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.NotFound);
    expect(await fanOutTargets(as.admin, "team=b")).toEqual(["honest-b"]);
    const liar = (await as.admin.edges.getEdge({ id: "liar" })).edge!;
    expect(liar.labels).toEqual({});
    expect(liar.reportedLabels).toEqual({ team: "b" });
  });

  it("an admin's relabel takes effect at once for reach and selectors, and is audited", async () => {
    const r = await as.admin.edges.setEdgeLabels({ id: "liar", labels: { team: "b", role: "web" } });
    expect(r.edge!.labels).toEqual({ team: "b", role: "web" });
    const row = await lastAuditRow(m);
    expect(row).toMatchObject({ toolName: "ongrid.v1.EdgeService/SetEdgeLabels", callerUserId: "admin", decision: "allow", args: { id: "liar", labels: { team: "b", role: "web" } } });
    expect((await as.tina.edges.listEdges({})).edges.map((e) => e.id)).toEqual(["honest-b", "liar"]);
    expect(await fanOutTargets(as.tina, "role=web")).toEqual(["liar"]);
    // Only an admin may relabel.
    const refused = await as.tina.edges.setEdgeLabels({ id: "liar", labels: {} }).catch((e: unknown) => ConnectError.from(e));
    expect((refused as ConnectError).code).toBe(Code.PermissionDenied);
    const bad = await as.admin.edges.setEdgeLabels({ id: "liar", labels: { "bad key": "x" } }).catch((e: unknown) => ConnectError.from(e));
    expect((bad as ConnectError).code).toBe(Code.InvalidArgument);
  });

  it("labels given at enrolment are kept across a token rotation without labels", async () => {
    await as.admin.edges.enrollEdge({ id: "rotated", labels: { team: "c" } });
    await as.admin.edges.enrollEdge({ id: "rotated" });
    expect((await as.admin.edges.getEdge({ id: "rotated" })).edge!.labels).toEqual({ team: "c" });
  });
});
