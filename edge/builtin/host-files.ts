/**
 * host_files (D4): disk usage — every real filesystem's size and use, or (with a path inside the
 * configured roots) the largest entries under a directory, like `du` with a budget.
 */
import { constants, type Dir, type Stats } from "node:fs";
import { lstat, open, opendir, readFile, statfs, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { defineSkill } from "../../skill/define.ts";
import { HOST_FILES } from "../../skill/catalog/host-files.ts";
import { parseDuration } from "../../skill/duration.ts";
import { SkillError } from "../../skill/errors.ts";
import { confine, insideAny, loadRoots as loadAllowedRoots, MAX_SYMLINK_HOPS, openedPath, shownRoots, type Roots } from "./confine.ts";

const SETTINGS = "skills.host_files";
/** Default of skills.host_files.max_entries: entries a walk examines at most. */
const DEFAULT_MAX_ENTRIES = 200_000;
/** Default of skills.host_files.walk_budget. */
const DEFAULT_WALK_BUDGET = "10s";
/** How long one statfs may take (a hung NFS mount never answers). */
const STATFS_TIMEOUT_MS = 2000;
/** Filesystems without disk space of their own; listed only with all_filesystems. */
const PSEUDO_FS = new Set([
  "proc", "sysfs", "cgroup", "cgroup2", "tmpfs", "devtmpfs", "devpts", "mqueue", "debugfs", "tracefs", "securityfs", "pstore", "bpf",
  "configfs", "fusectl", "hugetlbfs", "autofs", "binfmt_misc", "rpc_pipefs", "nsfs", "ramfs", "efivarfs", "selinuxfs", "squashfs",
  "nfsd", "fuse.lxcfs", "fuse.gvfsd-fuse", "fuse.portal",
]);

interface Mount {
  device: string;
  mount: string;
  fsType: string;
  readOnly: boolean;
}

/** Parses /proc/mounts (octal escapes such as \040 for a space decoded); a later mount on the same point hides an earlier one. */
export function parseMounts(text: string): Mount[] {
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  const byPoint = new Map<string, Mount>();
  for (const line of text.split("\n")) {
    const f = line.split(" ");
    if (f.length < 4) continue;
    const m = { device: unescape(f[0]), mount: unescape(f[1]), fsType: f[2], readOnly: f[3].split(",").includes("ro") };
    byPoint.delete(m.mount);
    byPoint.set(m.mount, m);
  }
  return [...byPoint.values()];
}

function pct(part: number, whole: number): number | null {
  return whole > 0 ? Math.round((part / whole) * 1000) / 10 : null;
}

function withTimeout<T>(p: Promise<T>, ms: number, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms (hung network filesystem?)`)), ms);
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => {
      clearTimeout(t);
      signal.removeEventListener("abort", onAbort);
    });
  });
}

async function filesystems(signal: AbortSignal, all: boolean, limit: number) {
  const mounts = parseMounts(await readFile("/proc/self/mounts", "utf8"));
  const chosen: (Mount & { also: string[] })[] = [];
  const byDevice = new Map<string, Mount & { also: string[] }>();
  for (const m of mounts) {
    if (!all && PSEUDO_FS.has(m.fsType)) continue;
    const key = `${m.device}\0${m.fsType}`;
    const seen = m.device.startsWith("/") ? byDevice.get(key) : undefined;
    if (seen && !all) {
      seen.also.push(m.mount); // a bind mount of a filesystem already listed
      continue;
    }
    const entry = { ...m, also: [] as string[] };
    byDevice.set(key, entry);
    chosen.push(entry);
  }
  const rows = await Promise.all(
    chosen.map(async (m) => {
      const base = { mount: m.mount, device: m.device, fs_type: m.fsType, read_only: m.readOnly, ...(m.also.length ? { also_mounted_at: m.also } : {}) };
      try {
        const s = await withTimeout(statfs(m.mount), STATFS_TIMEOUT_MS, signal);
        const size = s.blocks * s.bsize;
        const used = (s.blocks - s.bfree) * s.bsize;
        const avail = s.bavail * s.bsize;
        return {
          ...base,
          size_bytes: size,
          used_bytes: used,
          avail_bytes: avail,
          used_pct: pct(used, used + avail),
          inodes_used_pct: pct(s.files - s.ffree, s.files),
        };
      } catch (err) {
        signal.throwIfAborted();
        return { ...base, error: (err as Error).message };
      }
    }),
  );
  const real = all ? rows : rows.filter((r) => !("size_bytes" in r) || r.size_bytes > 0);
  const usedPct = (r: (typeof rows)[number]) => ("used_pct" in r && typeof r.used_pct === "number" ? r.used_pct : -1);
  real.sort((a, b) => usedPct(b) - usedPct(a) || a.mount.localeCompare(b.mount));
  return { filesystems: real.slice(0, limit), total: real.length };
}

/** The configured roots, as configured and as real paths (roots that do not exist here allow nothing). */
function loadRoots(settings: Readonly<Record<string, unknown>>): Promise<Roots> {
  return loadAllowedRoots(settings.allowed_roots, {
    invalid: () => new SkillError("not_configured", `${SETTINGS}.allowed_roots must be a list of absolute directory paths`, `Fix ${SETTINGS}.allowed_roots in the edge config, e.g. ["/var", "/srv"].`),
    empty: () =>
      new SkillError(
        "not_configured",
        "host_files has no allowed roots configured, so no directory may be walked",
        `Call without path to see filesystem usage, or ask an operator to list the directories this edge may measure under ${SETTINGS}.allowed_roots, e.g. ["/var", "/srv"].`,
      ),
  });
}

function notAllowed(requested: string, shown: string[], why: string): SkillError {
  return new SkillError(
    "path_not_allowed",
    `${JSON.stringify(requested)} ${why}`,
    `host_files only measures directories under ${shown.join(", ")} (${SETTINGS}.allowed_roots); pass a path inside one of them.`,
  );
}

interface Entry {
  path: string;
  type: "dir" | "file" | "symlink" | "other";
  size_bytes: number;
  files?: number;
}

/**
 * A du-like walk that stays on one filesystem, counts hard links once and stops at an entry count or
 * time budget. Symlinks met on the way are listed as links, never followed.
 *
 * Each directory is opened with O_NOFOLLOW and must be the one lstat saw; where /proc is mounted, its
 * entries are then reached through /proc/self/fd/N of that open directory rather than by path from /,
 * so a directory (or one above it) swapped for a symlink during the walk does not lead the walk out
 * of the roots. The top directory is also re-checked to be inside `realRoots` by asking the kernel
 * what was opened; `changed()` is thrown when it is not, or when it is not the directory lstat saw.
 */
async function walk(start: string, depth: number, maxEntries: number, until: number, signal: AbortSignal, realRoots: readonly string[], changed: () => Error) {
  const entries: Entry[] = [];
  const seenInodes = new Set<string>();
  let scanned = 0;
  let unreadable = 0;
  let stopped: string | undefined;
  /** Entries are reached through /proc/self/fd (known once the top directory is open). */
  let anchored = false;
  const root = await lstat(start);
  const size = (st: Stats) => {
    if (st.nlink > 1 && !st.isDirectory()) {
      const key = `${st.dev}:${st.ino}`;
      if (seenInodes.has(key)) return 0;
      seenInodes.add(key);
    }
    return st.blocks * 512;
  };
  const typeOf = (st: Stats): Entry["type"] => (st.isDirectory() ? "dir" : st.isFile() ? "file" : st.isSymbolicLink() ? "symlink" : "other");

  /** Sums the directory `shown` (its real path, as reported), opened as `access`, which lstat saw as `expected`. */
  const dir = async (shown: string, access: string, expected: Stats, level: number): Promise<{ bytes: number; files: number }> => {
    let fh: FileHandle;
    try {
      fh = await open(access, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // The top directory turned into a symlink or a file since it was resolved.
      if (level === 0 && (code === "ELOOP" || code === "ENOTDIR")) throw changed();
      unreadable++;
      return { bytes: 0, files: 0 };
    }
    try {
      const opened = await fh.stat();
      if (opened.dev !== expected.dev || opened.ino !== expected.ino) {
        if (level === 0) throw changed();
        unreadable++; // replaced since lstat: not entered
        return { bytes: 0, files: 0 };
      }
      if (level === 0) {
        const where = await openedPath(fh.fd);
        if (where !== undefined && !insideAny(where, realRoots)) throw changed();
        anchored = where !== undefined;
      }
      const at = anchored ? `/proc/self/fd/${fh.fd}` : access;
      let handle: Dir;
      try {
        handle = await opendir(at, { bufferSize: 256 });
      } catch {
        unreadable++;
        return { bytes: 0, files: 0 };
      }
      let bytes = 0;
      let files = 0;
      // Streamed, so a directory with millions of entries never sits in memory; breaking out closes it.
      for await (const d of handle) {
        signal.throwIfAborted();
        if (stopped) break;
        if (scanned >= maxEntries) {
          stopped = `stopped after ${maxEntries} entries (${SETTINGS}.max_entries)`;
          break;
        }
        if (performance.now() > until) {
          stopped = `stopped at the time budget (${SETTINGS}.walk_budget or the call's deadline)`;
          break;
        }
        scanned++;
        const full = path.join(shown, d.name);
        const child = path.join(at, d.name);
        let st: Stats;
        try {
          st = await lstat(child);
        } catch {
          unreadable++;
          continue;
        }
        let own = size(st);
        let count = 1;
        if (st.isDirectory() && st.dev === root.dev) {
          const sub = await dir(full, child, st, level + 1);
          own += sub.bytes;
          count = sub.files;
        }
        bytes += own;
        files += count;
        if (level + 1 <= depth) entries.push({ path: full, type: typeOf(st), size_bytes: own, ...(st.isDirectory() ? { files: count } : {}) });
      }
      return { bytes, files };
    } finally {
      await fh.close();
    }
  };

  if (!root.isDirectory()) return { total: size(root), files: 1, entries, scanned: 1, unreadable, stopped, type: typeOf(root) };
  const sub = await dir(start, start, root, 0);
  return { total: root.blocks * 512 + sub.bytes, files: sub.files, entries, scanned, unreadable, stopped, type: "dir" as const };
}

export default defineSkill({
  ...HOST_FILES,
  async execute(ctx, params) {
    if (params.path === undefined) return filesystems(ctx.signal, params.all_filesystems, params.limit);

    const roots = await loadRoots(ctx.settings);
    const shown = shownRoots(roots);
    const requested = params.path;
    if (requested.includes("\0") || !path.isAbsolute(requested)) {
      throw new SkillError("invalid_argument", 'param "path": must be an absolute path', "Pass an absolute directory such as /var/log; call without path to see the filesystems.");
    }
    // Lexical check first, then one component at a time, never looking outside the roots: the answer
    // for a path outside is the same whether or not something exists there.
    const confined = await confine(requested, roots);
    if (confined.kind === "outside") {
      throw notAllowed(requested, shown, confined.how === "lexical" ? "is outside the allowed roots" : "leads outside the allowed roots (through .. or a symlink)");
    }
    if (confined.kind === "missing" || confined.kind === "root_missing") {
      throw new SkillError("path_not_found", `${JSON.stringify(requested)} does not exist`, "Check the path; call without path to see the filesystems.");
    }
    if (confined.kind === "loop") {
      throw new SkillError("path_unreadable", `cannot resolve ${JSON.stringify(requested)}: ELOOP (more than ${MAX_SYMLINK_HOPS} symlinks: a symlink loop)`, "Fix or remove the symlink loop, or pass the directory's real path.");
    }
    if (confined.kind === "too_long") {
      throw new SkillError("path_unreadable", `cannot resolve ${JSON.stringify(requested)}: ENAMETOOLONG (at most 4095 bytes, and 255 bytes per path component)`, "Pass a shorter path to the directory.");
    }
    if (confined.kind === "error") {
      throw new SkillError("path_unreadable", `cannot resolve ${JSON.stringify(requested)}: ${confined.code}`, "The edge user may lack permission; try a directory it can read.");
    }
    const real = confined.real;
    const max = typeof ctx.settings.max_entries === "number" && ctx.settings.max_entries > 0 ? ctx.settings.max_entries : DEFAULT_MAX_ENTRIES;
    const budget = parseDuration(typeof ctx.settings.walk_budget === "string" ? ctx.settings.walk_budget : DEFAULT_WALK_BUDGET);
    // Leave time to build the answer before the call's deadline.
    const until = performance.now() + Math.max(0, Math.min(budget, ctx.deadline - Date.now() - 500));
    const w = await walk(real, params.depth, max, until, ctx.signal, roots.real, () => notAllowed(requested, shown, "changed while being measured (a directory on the path was replaced)"));
    w.entries.sort((a, b) => b.size_bytes - a.size_bytes || a.path.localeCompare(b.path));
    return {
      path: requested,
      real_path: real,
      type: w.type,
      total_bytes: w.total,
      files: w.files,
      entries: w.entries.slice(0, params.limit),
      entries_total: w.entries.length,
      scanned_entries: w.scanned,
      complete: w.stopped === undefined,
      ...(w.stopped ? { stopped_reason: w.stopped } : {}),
      ...(w.unreadable ? { unreadable: w.unreadable } : {}),
      note: "sizes are allocated bytes (like du), hard links counted once, other filesystems below path not entered",
    };
  },
});
