import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSkill } from "../../../../skill/registry.ts";
import { lintSkill } from "../../../../skill/lint.ts";
import { runSkill } from "../../../../skill/run.ts";
import { validateParams } from "../../../../skill/validate.ts";
import type { ResultEnvelope, SkillDefinition } from "../../../../skill/types.ts";
import { describeBothBackends } from "../../../../test/support/pg.ts";
import { MIGRATIONS_FOLDER, openDatabase, type Database } from "../../../db/client.ts";
import type { EdgeRow } from "../../../db/schema/index.ts";
import type { Caller } from "../../../identity/caller.ts";
import { createSessionStore } from "../../../agent/session/store.ts";
import { createKnowledgeIndexer, type KnowledgeIndexer } from "./indexer.ts";
import { createQueryKnowledge } from "./query-knowledge.ts";
import { RUNBOOKS, writeRunbooks } from "./runbooks.testdata.ts";

const log = pino({ level: "silent" });

/** The enrolled edges the tool sees: two teams. */
const EDGES = [
  { id: "web-1", labels: { team: "web" } },
  { id: "db-1", labels: { team: "db" } },
] as unknown as EdgeRow[];
const olga: Caller = { userId: "olga", role: "operator" };

interface Hit {
  kind: string;
  title: string;
  source: string;
  dir?: string;
  snippet: string;
  rank: number;
  modified_at: string;
}
interface Output {
  query: string;
  returned: number;
  results: Hit[];
  hint?: string;
  index: { runbooks: number; reports: number; skipped: Array<{ file: string; reason: string }>; errors: string[] };
}

describeBothBackends("query_knowledge", (backend) => {
  let database: Database;
  let dir: string;
  let indexer: KnowledgeIndexer;
  let skill: ReturnType<typeof buildSkill>;

  async function query(params: Record<string, unknown>, caller: Caller = olga): Promise<ResultEnvelope & { output: Output }> {
    return (await runSkill(skill, validateParams(skill, params), { callId: "t", timeoutMs: 30_000, outputCapBytes: 1 << 20, log, invocation: { caller, sessionId: "t" } })) as ResultEnvelope & { output: Output };
  }

  beforeAll(async () => {
    database = await backend.open();
    dir = mkdtempSync(join(tmpdir(), "ongrid-runbooks-"));
    writeRunbooks(dir);
    indexer = createKnowledgeIndexer({ database, dirs: [dir], watch: false, log });
    skill = buildSkill(createQueryKnowledge(indexer, { list: async () => EDGES }) as SkillDefinition<any>);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("is a safe manager skill in the knowledge category that passes the new-tool lint", () => {
    expect(skill.meta).toMatchObject({ key: "query_knowledge", class: "safe", scope: "manager", category: "knowledge" });
    expect(lintSkill(skill)).toEqual([]);
    expect(() => validateParams(skill, { query: "x", kind: "wiki" })).toThrow(/kind/);
  });

  it("ranks the runbook about the problem first, with its path under its dir, its title and a snippet marking the match", async () => {
    const r = await query({ query: "502 bad gateway" });
    expect(r.success).toBe(true);
    const top = r.output.results[0]!;
    expect(top).toMatchObject({ kind: "runbook", title: "Nginx returns 502 Bad Gateway", source: join("web", "nginx-502.md"), dir });
    expect(top.snippet).toContain("«502» «Bad» «Gateway»");
    expect(top.rank).toBeGreaterThan(0);
    expect(Number.isNaN(Date.parse(top.modified_at))).toBe(false);

    // Mentioned in passing elsewhere, the subject of one runbook: that one comes first.
    const nginx = await query({ query: "nginx" });
    expect(nginx.output.results.map((h) => h.source)).toEqual([join("web", "nginx-502.md"), "disk-full.md"]);
    expect(nginx.output.results[0]!.rank).toBeGreaterThan(nginx.output.results[1]!.rank);
    expect(nginx.output.results[1]!.snippet).toContain("«nginx» access logs");

    const pg = await query({ query: "too many connections", limit: 1 });
    expect(pg.output.returned).toBe(1);
    expect(pg.output.results[0]).toMatchObject({ title: "PostgreSQL: too many connections", source: join("databases", "postgres-connection-limit.md") });

    const disk = await query({ query: "no space left on device" });
    expect(disk.output.results[0]).toMatchObject({ title: "Disk full on /var", source: "disk-full.md" });
    // The frontmatter is metadata: the snippet quotes the prose.
    expect(disk.output.results[0]!.snippet).not.toContain("owner: sre");
  });

  it("stems words: “restarting” finds the runbook that says “restart”", async () => {
    expect(RUNBOOKS["web/nginx-502.md"]).not.toMatch(/restarting/i);
    const r = await query({ query: "restarting upstream" });
    expect(r.output.results.map((h) => h.title)).toEqual(["Nginx returns 502 Bad Gateway"]);
    expect(r.output.results[0]!.snippet).toContain("«Restart» the «upstream»");
  });

  it("speaks web-search syntax: a quoted phrase, or, and -exclusion", async () => {
    const phrase = await query({ query: '"too many clients"' });
    expect(phrase.output.results.map((h) => h.source)).toEqual([join("databases", "postgres-connection-limit.md")]);
    const either = await query({ query: "pgbouncer or journalctl" });
    expect(either.output.results.map((h) => h.source).sort()).toEqual([join("databases", "postgres-connection-limit.md"), "disk-full.md"]);
    const without = await query({ query: "nginx -logrotate" });
    expect(without.output.results.map((h) => h.source)).toEqual([join("web", "nginx-502.md")]);
  });

  it("refuses an empty or stop-word-only query with an error that says what to do", async () => {
    for (const q of ["   ", "the and of", '"" -'] as const) {
      const r = await query({ query: q });
      expect(r.success, q).toBe(false);
      expect(r.error).toMatchObject({ code: "invalid_query" });
      expect(r.error!.message).toMatch(/no words to search for/);
      expect(r.error!.hint).toMatch(/distinctive words/);
    }
  });

  it("answers no match as a normal result with a hint, and lists skipped files", async () => {
    const r = await query({ query: "kafka consumer lag" });
    expect(r.success).toBe(true);
    expect(r.output).toMatchObject({ returned: 0, results: [] });
    expect(r.output.hint).toMatch(/^Nothing in 3 runbooks and \d+ reports matches/);
    expect(r.output.index.skipped).toEqual([{ file: "notes.txt", dir, reason: "not a Markdown file (only *.md is indexed)" }]);
  });

  it("finds a finished diagnosis report as source session:<id>, and filters by kind", async () => {
    const sessions = createSessionStore(database);
    await sessions.create({ id: "ses_kafka1", userId: "olga", inputText: "checkout is slow, kafka consumer lag keeps growing", edgeId: "", mode: "" });
    await sessions.update("ses_kafka1", { status: "done", report: "# Diagnosis report\n\nThe consumer group `checkout` fell behind after a rebalance storm; lag recovered once the stuck partition's consumer was restarted." });
    // Unfinished and failed sessions are not knowledge.
    await sessions.create({ id: "ses_kafka2", userId: "olga", inputText: "kafka lag again", edgeId: "", mode: "" });
    await sessions.update("ses_kafka2", { report: "half-written: kafka rebalance" });
    await sessions.create({ id: "ses_kafka3", userId: "olga", inputText: "kafka lag again", edgeId: "", mode: "" });
    await sessions.update("ses_kafka3", { status: "failed", report: "kafka rebalance, model timed out" });

    const r = await query({ query: "kafka rebalance" });
    expect(r.output.results).toHaveLength(1);
    expect(r.output.results[0]).toMatchObject({ kind: "report", source: "session:ses_kafka1", title: "Diagnosis: checkout is slow, kafka consumer lag keeps growing" });
    expect(r.output.results[0]!.dir).toBeUndefined();
    expect(r.output.results[0]!.snippet).toContain("«rebalance»");

    expect((await query({ query: "kafka rebalance", kind: "runbook" })).output.returned).toBe(0);
    expect((await query({ query: "kafka rebalance", kind: "report" })).output.results.map((h) => h.source)).toEqual(["session:ses_kafka1"]);
    // "restarted" in the report stems like "restart" in the runbooks: kind any answers with both.
    const both = await query({ query: "restarted", kind: "any" });
    expect(new Set(both.output.results.map((h) => h.kind))).toEqual(new Set(["runbook", "report"]));
  });

  it("returns a report only to callers who reach its session's edge, and still fills the page from what they may see", async () => {
    const sessions = createSessionStore(database);
    // Five reports on db-1 (team db) rank above the one on web-1 (team web) and the one on no edge.
    for (let i = 1; i <= 5; i++) {
      await sessions.create({ id: `ses_quasar_db${i}`, userId: "dora", inputText: `quasar replica lag on db-1 (${i})`, edgeId: "db-1", mode: "" });
      await sessions.update(`ses_quasar_db${i}`, { status: "done", report: "quasar quasar quasar: the quasar replica on db-1 lags behind its primary" });
    }
    await sessions.create({ id: "ses_quasar_web", userId: "wade", inputText: "quasar client errors on web-1", edgeId: "web-1", mode: "" });
    await sessions.update("ses_quasar_web", { status: "done", report: "the quasar client on web-1 times out" });
    await sessions.create({ id: "ses_quasar_none", userId: "wade", inputText: "quasar question", edgeId: "", mode: "" });
    await sessions.update("ses_quasar_none", { status: "done", report: "a quasar question that named no host" });

    // An unlimited reach sees every report; the db ones rank first.
    const all = await query({ query: "quasar", kind: "report", limit: 2 });
    expect(all.output.returned).toBe(2);
    expect(all.output.results.every((h) => h.source.startsWith("session:ses_quasar_db")), JSON.stringify(all.output.results)).toBe(true);

    // team=web: not one db-1 report, yet two results (the page is not emptied by what was left out).
    const web: Caller = { userId: "wade", role: "viewer", reach: ["team=web"] };
    const w = await query({ query: "quasar", kind: "report", limit: 2 }, web);
    expect(w.output.results.map((h) => h.source).sort()).toEqual(["session:ses_quasar_none", "session:ses_quasar_web"]);
    expect(w.output.index.reports).toBeLessThan(all.output.index.reports);

    // A reach that matches no edge sees only the report on no edge; runbooks are not edge-scoped.
    const nobody: Caller = { userId: "nobody", role: "viewer", reach: ["team=none"] };
    expect((await query({ query: "quasar", kind: "report" }, nobody)).output.results.map((h) => h.source)).toEqual(["session:ses_quasar_none"]);
    expect((await query({ query: "502 bad gateway", kind: "runbook", limit: 1 }, nobody)).output.results.map((h) => h.title)).toEqual(["Nginx returns 502 Bad Gateway"]);
  });
});

describe("migration 0008_knowledge_report_edge", () => {
  it("gives the reports indexed before it their session's edge (else they would show to every reach)", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "ongrid-mig-"));
    const older = mkdtempSync(join(tmpdir(), "ongrid-mig-0007-"));
    try {
      // The migrations as they were before 0008.
      cpSync(MIGRATIONS_FOLDER, older, { recursive: true });
      const journalFile = join(older, "meta", "_journal.json");
      const journal = JSON.parse(readFileSync(journalFile, "utf8")) as { entries: Array<{ tag: string }> };
      journal.entries = journal.entries.filter((e) => e.tag < "0008");
      writeFileSync(journalFile, JSON.stringify(journal));
      const before = await openDatabase({ dataDir, migrationsFolder: older });
      await before.db.execute(sql`insert into agent_sessions (id, created_at, updated_at, user_id, input_text, edge_id, status, report) values ('ses_old', now(), now(), 'dora', 'replica lag', 'db-1', 'done', 'the replica lags')`);
      await before.db.execute(sql`insert into knowledge_docs (kind, source, title, body, modified_at, indexed_at) values ('report', 'session:ses_old', 'Diagnosis: replica lag', 'the replica lags', now(), now()), ('runbook', '/srv/runbooks/lag.md', 'Lag', 'replica lag', now(), now())`);
      await before.close();

      const after = await openDatabase({ dataDir });
      try {
        const rows = (await after.db.execute(sql`select source, edge_id from knowledge_docs order by source`)) as unknown as { rows?: unknown[] } | unknown[];
        expect(Array.isArray(rows) ? rows : rows.rows).toEqual([
          { source: "/srv/runbooks/lag.md", edge_id: "" },
          { source: "session:ses_old", edge_id: "db-1" },
        ]);
      } finally {
        await after.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(older, { recursive: true, force: true });
    }
  });
});
