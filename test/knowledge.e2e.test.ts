/**
 * K2 end to end: a real manager indexing a directory of Markdown runbooks and its own diagnosis
 * reports, serving query_knowledge over the real RPC with a bearer token (listed, gated and
 * audited like any skill), and re-indexing on its own when a file changes while it runs.
 */
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toJson } from "@bufbuild/protobuf";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { AgentService } from "../proto/gen/ongrid/v1/agent_service_pb.ts";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { SkillResultSchema } from "../proto/gen/ongrid/v1/skill_pb.ts";
import { createKnowledgeStore } from "../manager/skills/base/knowledge/store.ts";
import { agentSessions, edges } from "../manager/db/schema/index.ts";
import type { Caller } from "../manager/identity/caller.ts";
import { writeRunbooks } from "../manager/skills/base/knowledge/runbooks.testdata.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { lastAuditRow } from "./support/audit.ts";

interface Output {
  returned: number;
  results: Array<{ kind: string; title: string; source: string; dir?: string; snippet: string }>;
  hint?: string;
}

let m: TestManager;
let dir: string;
let skills: Client<typeof SkillService>;
let viewerToken: string;

/** Polls until cond holds (or gives up after timeoutMs and returns false); no timing is asserted. */
async function waitFor(cond: () => Promise<boolean>, timeoutMs = 20_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function queryKnowledge(params: Record<string, unknown>, client = skills) {
  const res = await client.executeSkill({ key: "query_knowledge", input: { case: "params", value: params as never } });
  return toJson(SkillResultSchema, res.result!, { alwaysEmitImplicit: true }) as unknown as { success: boolean; output: Output; error?: { code: string; message: string } };
}

/** Whether the index holds a row whose text matches, read straight from the database (no query_knowledge call, so no lazy re-index). */
async function indexed(words: string): Promise<boolean> {
  return (await createKnowledgeStore(m.database).search(words, "any", 5)).length > 0;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ongrid-knowledge-"));
  writeRunbooks(dir);
  m = await bootManager({ "knowledge.dirs": dir });
  viewerToken = await makeUser(m, "vera", "viewer");
  skills = createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(m.adminToken)] }));
}, 120_000);
afterAll(async () => {
  await m?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("query_knowledge over the RPC", () => {
  it("indexes the runbooks at start, before any query", async () => {
    expect(await waitFor(() => indexed("too many clients"))).toBe(true);
  });

  it("is listed with its verbatim schema and answers with the right runbook first, audited", async () => {
    const listed = (await skills.listSkills({})).skills.find((s) => s.key === "query_knowledge");
    expect(listed).toBeDefined();
    expect(JSON.parse(listed!.rawJsonSchema)).toMatchObject({ required: ["query"], properties: { kind: { enum: ["runbook", "report", "any"] } } });

    const r = await queryKnowledge({ query: "upstream prematurely closed connection" });
    expect(r.success).toBe(true);
    expect(r.output.results[0]).toMatchObject({ kind: "runbook", title: "Nginx returns 502 Bad Gateway", source: join("web", "nginx-502.md"), dir });
    expect(r.output.results[0]!.snippet).toContain("«upstream» «prematurely» «closed» «connection»");
    const row = await lastAuditRow(m);
    expect(row).toMatchObject({ toolName: "query_knowledge", callerUserId: "admin", decision: "allow", error: "" });

    // A safe skill: a viewer may search too.
    const viewer = createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(viewerToken)] }));
    const v = await queryKnowledge({ query: "too many clients", limit: 1 }, viewer);
    expect(v.output.results.map((h) => h.title)).toEqual(["PostgreSQL: too many connections"]);
  });

  it("re-indexes while running: a new runbook appears, an edited one changes, a deleted one disappears", async () => {
    const path = join(dir, "kafka-consumer-lag.md");
    writeFileSync(path, "# Kafka consumer lag\n\nWhen consumer lag grows, check for a rebalance storm in the broker logs.\n");
    // The watcher re-indexes on its own: the database has it before anyone queries.
    expect(await waitFor(() => indexed("rebalance storm"))).toBe(true);
    const found = await queryKnowledge({ query: "rebalance storms" });
    expect(found.output.results.map((h) => h.source)).toEqual(["kafka-consumer-lag.md"]);

    writeFileSync(path, "# Kafka consumer lag\n\nWhen consumer lag grows, add partitions and consumers; check max.poll.interval.ms.\n");
    expect(await waitFor(async () => !(await indexed("rebalance storm")) && (await indexed("partitions")))).toBe(true);
    expect((await queryKnowledge({ query: "add partitions" })).output.results[0]!.title).toBe("Kafka consumer lag");

    unlinkSync(path);
    expect(await waitFor(async () => !(await indexed("partitions")))).toBe(true);
    const gone = await queryKnowledge({ query: "kafka consumer lag" });
    expect(gone).toMatchObject({ success: true, output: { returned: 0, results: [] } });
    expect(gone.output.hint).toMatch(/^Nothing in 3 runbooks/);
  });

  it("finds the report of a diagnosis session the manager ran, as session:<id>", async () => {
    const agent = createClient(AgentService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(m.adminToken)] }));
    let sessionId = "";
    let status: unknown;
    for await (const ev of agent.diagnose({ text: "checkout pods crashloop with OOMKilled after the 14:00 deploy" })) {
      sessionId = ev.sessionId;
      if (ev.type === "done") status = ev.data?.status;
    }
    expect(status).toBe("done");
    const r = await queryKnowledge({ query: "OOMKilled crashloop", kind: "report" });
    expect(r.output.results).toHaveLength(1);
    expect(r.output.results[0]).toMatchObject({ kind: "report", source: `session:${sessionId}`, title: "Diagnosis: checkout pods crashloop with OOMKilled after the 14:00 deploy" });
    expect(r.output.results[0]!.snippet).toMatch(/«OOMKilled»/);
  });

  it("refuses a stop-word-only query as a skill error the caller can read", async () => {
    const r = await queryKnowledge({ query: "the of and" });
    expect(r.success).toBe(false);
    expect(r.error).toMatchObject({ code: "invalid_query" });
  });
});

describe("query_knowledge and reach (G4)", () => {
  /** A viewer whose reach is team=web only. */
  const wendy: Caller = { userId: "wendy", role: "viewer", reach: ["team=web"] };

  async function tool(key: string, params: Record<string, unknown>, caller: Caller): Promise<any> {
    const out = await m.dispatcher.execute({ key, params, caller });
    expect(out.result?.success, JSON.stringify(out.result?.error)).toBe(true);
    return out.result!.output;
  }

  beforeAll(async () => {
    await makeUser(m, "am-db", "operator", { reach: "team=db" });
    await makeUser(m, "wendy", "viewer", { reach: "team=web" });
    await m.edges.enroll("web-01");
    await m.edges.enroll("db-01");
    await m.database.db.update(edges).set({ labels: { team: "web" } }).where(eq(edges.id, "web-01"));
    await m.database.db.update(edges).set({ labels: { team: "db" } }).where(eq(edges.id, "db-01"));
  });

  it("does not return the report of a diagnosis on an edge outside the caller's reach", async () => {
    await m.database.db.insert(agentSessions).values({
      id: "ses_review_db_000000002",
      createdAt: new Date(),
      updatedAt: new Date(),
      userId: "am-db",
      inputText: "postgres zebraquux on db-01",
      edgeId: "db-01",
      status: "done",
      report: "# Diagnosis report\n\nOn db-01 the zebraquux replica lags; pg_hba allows 10.9.0.0/16.",
    });
    const out = await tool("query_knowledge", { query: "zebraquux", kind: "report" }, wendy);
    expect(out.results.map((r: any) => r.source), "a team=web viewer found a db-01 diagnosis report").toEqual([]);
    // The report is indexed: callers who reach db-01 (and an unlimited reach) find it.
    const amDb: Caller = { userId: "am-db", role: "operator", reach: ["team=db"] };
    expect((await tool("query_knowledge", { query: "zebraquux", kind: "report" }, amDb)).results.map((r: any) => r.source)).toEqual(["session:ses_review_db_000000002"]);
    expect((await tool("query_knowledge", { query: "zebraquux" }, { userId: "admin", role: "admin" })).results.map((r: any) => r.source)).toEqual(["session:ses_review_db_000000002"]);
  });

  it("keeps a page full of the reports the caller reaches when better-ranked ones lie outside it", async () => {
    const at = new Date();
    const row = (id: string, edgeId: string, report: string) => ({ id, createdAt: at, updatedAt: at, userId: "am-db", inputText: `pulsarwidget on ${edgeId}`, edgeId, status: "done", report });
    await m.database.db.insert(agentSessions).values([
      ...Array.from({ length: 4 }, (_, i) => row(`ses_pulsar_db_${i}`, "db-01", "pulsarwidget pulsarwidget pulsarwidget pulsarwidget stalls on db-01")),
      row("ses_pulsar_web_0", "web-01", "the pulsarwidget on web-01 stalls"),
      row("ses_pulsar_web_1", "web-01", "a pulsarwidget stall on web-01 again"),
    ]);
    const out = await tool("query_knowledge", { query: "pulsarwidget", kind: "report", limit: 2 }, wendy);
    expect(out.results.map((r: any) => r.source).sort()).toEqual(["session:ses_pulsar_web_0", "session:ses_pulsar_web_1"]);
    expect(out.returned).toBe(2);
  });
});
