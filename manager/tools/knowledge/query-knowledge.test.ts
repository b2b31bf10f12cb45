import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildSkill } from "../../../skill/registry.ts";
import { lintSkill } from "../../../skill/lint.ts";
import { runSkill } from "../../../skill/run.ts";
import { validateParams } from "../../../skill/validate.ts";
import type { ResultEnvelope, SkillDefinition } from "../../../skill/types.ts";
import { describeBothBackends } from "../../../test/support/pg.ts";
import type { Database } from "../../db/client.ts";
import { createSessionStore } from "../../agent/session-store.ts";
import { createKnowledgeIndexer, type KnowledgeIndexer } from "./indexer.ts";
import { createQueryKnowledge } from "./query-knowledge.ts";
import { RUNBOOKS, writeRunbooks } from "./runbooks.testdata.ts";

const log = pino({ level: "silent" });

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

  async function query(params: Record<string, unknown>): Promise<ResultEnvelope & { output: Output }> {
    return (await runSkill(skill, validateParams(skill, params), { callId: "t", timeoutMs: 30_000, outputCapBytes: 1 << 20, log })) as ResultEnvelope & { output: Output };
  }

  beforeAll(async () => {
    database = await backend.open();
    dir = mkdtempSync(join(tmpdir(), "ongrid-runbooks-"));
    writeRunbooks(dir);
    indexer = createKnowledgeIndexer({ database, dirs: [dir], watch: false, log });
    skill = buildSkill(createQueryKnowledge(indexer) as SkillDefinition<any>);
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
});
