import { mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeBothBackends } from "../../../../test/support/pg.ts";
import type { Database } from "../../../db/client.ts";
import { createSessionStore } from "../../../agent/session/store.ts";
import { createKnowledgeIndexer } from "./indexer.ts";
import { writeRunbooks } from "./runbooks.testdata.ts";

const log = pino({ level: "silent" });
const dirs: string[] = [];

function runbookDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "ongrid-runbooks-"));
  dirs.push(dir);
  writeRunbooks(dir);
  return dir;
}

/** Sets a file's modification time to `secondsAgo` before now. */
function setMtime(path: string, secondsAgo: number): void {
  const t = new Date(Date.now() - secondsAgo * 1000);
  utimesSync(path, t, t);
}

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describeBothBackends("knowledge indexer", (backend) => {
  let database: Database;
  beforeAll(async () => {
    database = await backend.open();
  });

  it("indexes the Markdown files under its dirs and skips the rest with a reason", async () => {
    const dir = runbookDir();
    writeFileSync(join(dir, "huge.md"), `# Huge\n\n${"lorem ipsum dolor ".repeat(1000)}`);
    writeFileSync(join(dir, "binary.md"), Buffer.from([0x23, 0x20, 0x41, 0x00, 0x01, 0x02]));
    mkdirSync(join(dir, ".git"));
    writeFileSync(join(dir, ".git", "HEAD.md"), "# not a runbook\n");
    symlinkSync(dir, join(dir, "loop")); // a symlink back up must not walk forever
    const indexer = createKnowledgeIndexer({ database, dirs: [dir], watch: false, log, maxFileBytes: 8 * 1024 });

    const first = await indexer.refresh();
    expect(first.errors).toEqual([]);
    expect(first.runbooks).toEqual({ indexed: 3, unchanged: 0, removed: expect.any(Number) });
    expect(first.skipped.map((s) => [s.rel, s.reason]).sort()).toEqual([
      ["binary.md", "not text: it contains NUL bytes"],
      ["huge.md", expect.stringMatching(/^too large: 18\d{3} bytes \(the limit is 8192\); split it/)],
      ["notes.txt", "not a Markdown file (only *.md is indexed)"],
    ]);
    expect(await indexer.store.counts()).toMatchObject({ runbooks: 3 });
    const titles = (await indexer.store.search("check", "runbook", 10)).map((h) => h.title).sort();
    expect(titles).toEqual(["Nginx returns 502 Bad Gateway", "PostgreSQL: too many connections"]);

    // Nothing changed: nothing is read or written again.
    const second = await indexer.refresh();
    expect(second.runbooks).toEqual({ indexed: 0, unchanged: 3, removed: 0 });
  });

  it("re-indexes an edited file and forgets a deleted one", async () => {
    const dir = runbookDir();
    const indexer = createKnowledgeIndexer({ database, dirs: [dir], watch: false, log });
    await indexer.refresh();
    expect(await indexer.store.search("pgbouncer", "any", 5)).toHaveLength(1);

    const pg = join(dir, "databases", "postgres-connection-limit.md");
    writeFileSync(pg, "# PostgreSQL: too many connections\n\nScale the connection pooler (odyssey) out; never raise max_connections.\n");
    setMtime(pg, 1800); // saved half an hour after the original
    rmSync(join(dir, "disk-full.md"));
    const pass = await indexer.refresh();
    expect(pass.runbooks).toEqual({ indexed: 1, unchanged: 1, removed: 1 });

    expect(await indexer.store.search("pgbouncer", "any", 5)).toEqual([]);
    expect((await indexer.store.search("odyssey pooler", "any", 5)).map((h) => h.source)).toEqual([pg]);
    expect(await indexer.store.search("journalctl vacuum", "any", 5)).toEqual([]);
    expect(await indexer.store.counts()).toMatchObject({ runbooks: 2 });
  });

  it("reads again a file rewritten within the clock's resolution of being indexed (same mtime, new text)", async () => {
    const dir = runbookDir();
    const path = join(dir, "redis-evictions.md");
    const mtime = new Date(Math.floor(Date.now() / 1000) * 1000);
    writeFileSync(path, "# Redis evicts keys\n\nevicted_keys grows when maxmemory is reached.\n");
    utimesSync(path, mtime, mtime);
    const indexer = createKnowledgeIndexer({ database, dirs: [dir], watch: false, log });
    await indexer.refresh();
    writeFileSync(path, "# Redis evicts keys\n\nRaise maxmemory or pick the allkeys-lfu policy.\n");
    utimesSync(path, mtime, mtime);
    expect((await indexer.refresh()).runbooks.indexed).toBe(1);
    expect((await indexer.store.search("lfu policy", "any", 5)).map((h) => h.source)).toEqual([path]);
  });

  it("does not re-read and re-write an unchanged runbook on every pass because its mtime lies in the future", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ongrid-review-kb-"));
    dirs.push(dir);
    const file = join(dir, "future.md");
    writeFileSync(file, "# Future\n\nrestart nginx when it returns 502\n");
    const t = new Date(Date.now() + 3_600_000); // clock skew, or an archive extracted from a host ahead in time
    utimesSync(file, t, t);
    const indexer = createKnowledgeIndexer({ database, dirs: [dir], watch: false, log });
    expect((await indexer.refresh()).runbooks.indexed).toBe(1);
    const second = await indexer.refresh();
    // Before: indexed 1 again (and "knowledge: index updated" logged) on every pass, i.e. before every query after 15 s.
    expect(second.runbooks).toEqual({ indexed: 0, unchanged: 1, removed: 0 });
    // A real rewrite gives the file the current time as its mtime: it is read again.
    writeFileSync(file, "# Future\n\nreload nginx instead of restarting it\n");
    setMtime(file, 1800);
    expect((await indexer.refresh()).runbooks).toEqual({ indexed: 1, unchanged: 0, removed: 0 });
    expect((await indexer.store.search("reload nginx", "any", 5)).map((h) => h.source)).toEqual([file]);
  });

  it("brings a stale index up to date before a query, without a watcher", async () => {
    const dir = runbookDir();
    const indexer = createKnowledgeIndexer({ database, dirs: [dir], watch: false, log, maxAgeMs: 0 });
    await indexer.ensureFresh();
    writeFileSync(join(dir, "redis-evictions.md"), "# Redis evicts keys\n\nevicted_keys grows when maxmemory is reached.\n");
    expect(await indexer.store.search("evicted keys", "any", 5)).toEqual([]);
    const pass = await indexer.ensureFresh();
    expect(pass.runbooks.indexed).toBe(1);
    expect((await indexer.store.search("evicted keys", "any", 5)).map((h) => h.title)).toEqual(["Redis evicts keys"]);
  });

  it("indexes a finished session's report before a query even when the runbooks are fresh", async () => {
    const dir = runbookDir();
    const indexer = createKnowledgeIndexer({ database, dirs: [dir], watch: false, log });
    await indexer.refresh();
    const sessions = createSessionStore(database);
    await sessions.create({ id: "ses_dns1", userId: "olga", inputText: "resolver timeouts on web-3", edgeId: "web-3", mode: "" });
    await sessions.update("ses_dns1", { status: "done", report: "# Diagnosis report\n\nsystemd-resolved answered SERVFAIL for the internal zone." });
    const pass = await indexer.ensureFresh();
    expect(pass.reports.indexed).toBe(1);
    expect((await indexer.store.search("servfail", "report", 5)).map((h) => [h.source, h.title])).toEqual([["session:ses_dns1", "Diagnosis: resolver timeouts on web-3"]]);
    // Indexed once: the next query finds nothing new to index.
    expect((await indexer.ensureFresh()).reports.indexed).toBe(0);
  });

  it("reports a missing directory and a failing database instead of throwing", async () => {
    const missing = join(tmpdir(), `ongrid-no-such-dir-${process.pid}`);
    const indexer = createKnowledgeIndexer({ database, dirs: [missing], watch: false, log });
    const pass = await indexer.refresh();
    expect(pass.errors).toEqual([`knowledge.dirs: cannot read ${missing}: it does not exist`]);

    const closed = await backend.open();
    await closed.close();
    const broken = createKnowledgeIndexer({ database: closed, dirs: [runbookDir()], watch: false, log });
    const failed = await broken.refresh();
    expect(failed.errors).toHaveLength(1);
    expect(failed.errors[0]).toMatch(/^knowledge index: /);
  });
});
