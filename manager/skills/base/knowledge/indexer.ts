/**
 * Keeps knowledge_docs in step with knowledge.dirs and the finished diagnosis reports: a scan at
 * start, another when a file changes (knowledge.watch), and a lazy one before a query when the
 * last is stale. Runs one at a time; a failure is logged and reported, never thrown.
 */
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { Logger } from "pino";
import { watchDirs } from "../../../../skill/watch-dirs.ts";
import type { Database } from "../../../db/client.ts";
import { errorText } from "../../../db/error-text.ts";
import { parseMarkdown } from "./markdown.ts";
import { scanDirs, type Skipped } from "./scan.ts";
import { createKnowledgeStore, type KnowledgeStore } from "./store.ts";

/** How the indexer is set up. */
export interface KnowledgeIndexerOptions {
  database: Database;
  /** Directories of Markdown runbooks (resolved against the working directory). */
  dirs: readonly string[];
  /** Re-index when a file under dirs changes. */
  watch: boolean;
  log: Logger;
  /** A larger file is skipped with a reason (default 512 KiB). */
  maxFileBytes?: number;
  /** Files beyond this many are skipped (default 10,000). */
  maxFiles?: number;
  /** A scan older than this is redone before a query, covering missed or unwatched changes (default 15 s). */
  maxAgeMs?: number;
}

/** What one pass did. */
export interface IndexPass {
  at: Date;
  runbooks: { indexed: number; unchanged: number; removed: number };
  reports: { indexed: number; removed: number };
  /** Files left out, with why. */
  skipped: Skipped[];
  /** What went wrong (a missing directory, a database error); the pass did what it could. */
  errors: string[];
}

/** A file modified this close to its indexing is read again on the next pass (coarse filesystem clocks: 2 s on FAT). */
const RACY_MS = 2_000;

/**
 * Whether a file whose mtime equals the stored one is unchanged. A rewrite gives the file the
 * clock's current time as its mtime (rounded down to the filesystem's resolution), so the same
 * mtime proves nothing only when a write since the last indexing could have produced it: when the
 * mtime lies within RACY_MS before the indexing ("racy": written again within the clock's
 * resolution of being read) or anywhere from then up to now. An mtime well before the indexing,
 * or still ahead of the clock (clock skew, an archive from a host ahead in time), no write since
 * can have produced: the file is unchanged, and is not re-read and re-written on every pass.
 */
export function sameMtimeProvesNoChange(mtimeMs: number, indexedMs: number, nowMs: number): boolean {
  return indexedMs - mtimeMs > RACY_MS || mtimeMs - nowMs > RACY_MS;
}

/** Default limits. */
export const KNOWLEDGE_LIMITS = { maxFileBytes: 512 * 1024, maxFiles: 10_000, maxAgeMs: 15_000 } as const;

/** Creates the indexer; nothing runs until start(), refresh() or ensureFresh(). */
export function createKnowledgeIndexer(o: KnowledgeIndexerOptions) {
  const store: KnowledgeStore = createKnowledgeStore(o.database);
  const dirs = o.dirs.map((d) => resolve(d));
  const maxFileBytes = o.maxFileBytes ?? KNOWLEDGE_LIMITS.maxFileBytes;
  const maxFiles = o.maxFiles ?? KNOWLEDGE_LIMITS.maxFiles;
  const maxAgeMs = o.maxAgeMs ?? KNOWLEDGE_LIMITS.maxAgeMs;
  const log = o.log.child({ part: "knowledge" });
  let running: Promise<IndexPass> | undefined;
  let queued: Promise<IndexPass> | undefined;
  let last: IndexPass | undefined;
  let dirty = true;
  /** Problems already logged, so a pass every few seconds does not repeat them. */
  const logged = new Set<string>();

  function note(key: string, fn: () => void) {
    if (logged.has(key)) return;
    logged.add(key);
    fn();
  }

  async function pass(): Promise<IndexPass> {
    dirty = false;
    const at = new Date();
    const out: IndexPass = { at, runbooks: { indexed: 0, unchanged: 0, removed: 0 }, reports: { indexed: 0, removed: 0 }, skipped: [], errors: [] };
    try {
      const scan = await scanDirs(dirs, { maxFileBytes, maxFiles });
      out.skipped.push(...scan.skipped);
      for (const e of scan.errors) out.errors.push(`knowledge.dirs: cannot read ${e.dir}: ${e.message}`);
      const known = await store.runbookTimes();
      const kept = new Set<string>();
      for (const f of scan.files) {
        const k = known.get(f.path);
        if (k && k.modified === f.mtimeMs && sameMtimeProvesNoChange(f.mtimeMs, k.indexed, at.getTime())) {
          kept.add(f.path);
          out.runbooks.unchanged++;
          continue;
        }
        let text: string;
        try {
          const bytes = await readFile(f.path);
          if (bytes.length > maxFileBytes) {
            out.skipped.push({ dir: f.dir, rel: f.rel, reason: `too large: ${bytes.length} bytes (the limit is ${maxFileBytes}); split it into smaller runbooks` });
            continue;
          }
          if (bytes.includes(0)) {
            out.skipped.push({ dir: f.dir, rel: f.rel, reason: "not text: it contains NUL bytes" });
            continue;
          }
          text = bytes.toString("utf8");
        } catch (err) {
          out.skipped.push({ dir: f.dir, rel: f.rel, reason: `cannot read it: ${(err as Error).message}` });
          continue;
        }
        try {
          await store.upsert({ kind: "runbook", source: f.path, ...parseMarkdown(text, f.path), modifiedAt: new Date(f.mtimeMs) });
          kept.add(f.path);
          out.runbooks.indexed++;
        } catch (err) {
          // One file PostgreSQL refuses (e.g. a tsvector over its size limit) must not stop the rest.
          out.skipped.push({ dir: f.dir, rel: f.rel, reason: `the database refused it: ${errorText(err)}` });
        }
      }
      out.runbooks.removed = await store.remove([...known.keys()].filter((s) => !kept.has(s)));
      out.reports = await store.syncReports(maxFileBytes, true);
    } catch (err) {
      out.errors.push(`knowledge index: ${errorText(err)}`);
    }
    last = out;
    for (const s of out.skipped) note(`skip:${s.dir}/${s.rel}:${s.reason}`, () => log.info({ dir: s.dir, file: s.rel, reason: s.reason }, "knowledge: file skipped"));
    for (const e of out.errors) note(`error:${e}`, () => log.warn({ err: e }, "knowledge: indexing problem"));
    const changed = out.runbooks.indexed + out.runbooks.removed + out.reports.indexed + out.reports.removed;
    if (changed) log.info({ runbooks: out.runbooks, reports: out.reports, skipped: out.skipped.length }, "knowledge: index updated");
    return out;
  }

  /** Runs a pass now, or right after the one running (changes made during it are not lost); never rejects. */
  function refresh(): Promise<IndexPass> {
    if (!running) {
      running = pass().finally(() => {
        running = undefined;
      });
      return running;
    }
    queued ??= running.then(() => {
      queued = undefined;
      return refresh();
    });
    return queued;
  }

  return {
    /** The configured directories, absolute. */
    dirs,
    store,
    refresh,

    /** Before a query: a full pass when a change is pending or the last is stale, else only the reports finished since (what this call indexed). */
    async ensureFresh(): Promise<IndexPass> {
      if (running && !dirty) return queued ?? running;
      if (dirty || !last || Date.now() - last.at.getTime() > maxAgeMs) return refresh();
      try {
        return { ...last, reports: await store.syncReports(maxFileBytes, false) };
      } catch (err) {
        return { ...last, errors: [...last.errors, `knowledge index: reports: ${errorText(err)}`] };
      }
    },

    /** Starts the first pass (in the background) and the watcher; returns how to stop, which waits for a pass running. */
    start(): () => Promise<void> {
      void refresh();
      const stopWatch = o.watch && dirs.length
        ? watchDirs(dirs, () => {
            dirty = true;
            void refresh();
          }, { log, what: "knowledge" })
        : undefined;
      return async () => {
        stopWatch?.();
        await (queued ?? running);
      };
    },
  };
}

/** The indexer's interface. */
export type KnowledgeIndexer = ReturnType<typeof createKnowledgeIndexer>;
