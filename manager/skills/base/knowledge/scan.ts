/** Walks knowledge.dirs for Markdown runbooks: which files to index, and which were skipped and why. */
import { readdir, realpath, stat } from "node:fs/promises";
import { join, relative } from "node:path";

/** A Markdown file the index should hold. */
export interface ScannedFile {
  /** The configured directory it was found under (absolute). */
  dir: string;
  /** Its absolute path: the row's source. */
  path: string;
  /** Its path relative to dir, as results show it. */
  rel: string;
  /** Modification time, whole milliseconds (the column's precision). */
  mtimeMs: number;
  size: number;
}

/** A file or directory the index leaves out, and why (reported with query results and logged). */
export interface Skipped {
  dir: string;
  rel: string;
  reason: string;
}

/** What a walk found. */
export interface ScanResult {
  files: ScannedFile[];
  skipped: Skipped[];
  /** Directories that could not be read at all. */
  errors: Array<{ dir: string; message: string }>;
}

/** Limits of one walk. */
export interface ScanLimits {
  /** A larger Markdown file is skipped (PostgreSQL's tsvector has a 1 MB limit; a runbook is far smaller). */
  maxFileBytes: number;
  /** Files beyond this many are skipped (a mistyped dir such as / must not index a disk). */
  maxFiles: number;
}

const MARKDOWN = /\.md$/i;

/** Lists the Markdown files under dirs (recursively; dot entries such as .git are not entered); never throws. */
export async function scanDirs(dirs: readonly string[], limits: ScanLimits): Promise<ScanResult> {
  const out: ScanResult = { files: [], skipped: [], errors: [] };
  const seenFiles = new Set<string>();
  const seenDirs = new Set<string>();

  async function walk(dir: string, current: string): Promise<void> {
    let real: string;
    let entries;
    try {
      real = await realpath(current);
      if (seenDirs.has(real)) return; // a symlink loop, or a dir configured twice
      seenDirs.add(real);
      entries = await readdir(current, { withFileTypes: true });
    } catch (err) {
      if (current === dir) out.errors.push({ dir, message: describe(err) });
      else out.skipped.push({ dir, rel: relative(dir, current), reason: `directory not readable: ${describe(err)}` });
      return;
    }
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const e of entries) {
      if (e.name.startsWith(".")) continue;
      const full = join(current, e.name);
      const rel = relative(dir, full);
      let isDir = e.isDirectory();
      let isFile = e.isFile();
      let st;
      if (e.isSymbolicLink() || isFile) {
        try {
          st = await stat(full);
        } catch (err) {
          out.skipped.push({ dir, rel, reason: `cannot read it: ${describe(err)}` });
          continue;
        }
        isDir = st.isDirectory();
        isFile = st.isFile();
      }
      if (isDir) {
        await walk(dir, full);
        continue;
      }
      if (!isFile || !st) continue; // sockets, fifos, devices
      if (!MARKDOWN.test(e.name)) {
        out.skipped.push({ dir, rel, reason: "not a Markdown file (only *.md is indexed)" });
        continue;
      }
      if (st.size > limits.maxFileBytes) {
        out.skipped.push({ dir, rel, reason: `too large: ${st.size} bytes (the limit is ${limits.maxFileBytes}); split it into smaller runbooks` });
        continue;
      }
      if (seenFiles.has(full)) continue;
      if (out.files.length >= limits.maxFiles) {
        out.skipped.push({ dir, rel, reason: `over the limit of ${limits.maxFiles} files per index; narrow knowledge.dirs` });
        continue;
      }
      seenFiles.add(full);
      out.files.push({ dir, path: full, rel, mtimeMs: Math.floor(st.mtimeMs), size: st.size });
    }
  }

  for (const dir of dirs) await walk(dir, dir);
  return out;
}

function describe(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e?.code === "ENOENT") return "it does not exist";
  if (e?.code === "EACCES" || e?.code === "EPERM") return "permission denied";
  if (e?.code === "ENOTDIR") return "not a directory";
  return e?.message ?? String(err);
}
