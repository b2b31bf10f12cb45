/**
 * host_files (D4): disk usage — every real filesystem's size and use, or (with a path inside the
 * configured roots) the largest entries under a directory, like `du` with a budget.
 */
import type { Dir, Stats } from "node:fs";
import { lstat, opendir, readFile, realpath, statfs } from "node:fs/promises";
import path from "node:path";
import { defineSkill } from "../../skill/define.ts";
import { parseDuration } from "../../skill/duration.ts";
import { SkillError } from "../../skill/errors.ts";

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

async function loadRoots(settings: Readonly<Record<string, unknown>>): Promise<string[]> {
  const raw = settings.allowed_roots;
  if (raw !== undefined && (!Array.isArray(raw) || raw.some((r) => typeof r !== "string" || !path.isAbsolute(r)))) {
    throw new SkillError("not_configured", `${SETTINGS}.allowed_roots must be a list of absolute directory paths`, `Fix ${SETTINGS}.allowed_roots in the edge config, e.g. ["/var", "/srv"].`);
  }
  const roots = (raw as string[] | undefined) ?? [];
  if (roots.length === 0) {
    throw new SkillError(
      "not_configured",
      "host_files has no allowed roots configured, so no directory may be walked",
      `Call without path to see filesystem usage, or ask an operator to list the directories this edge may measure under ${SETTINGS}.allowed_roots, e.g. ["/var", "/srv"].`,
    );
  }
  const real: string[] = [];
  for (const r of roots) {
    try {
      real.push(await realpath(r));
    } catch {
      /* a root that does not exist here allows nothing */
    }
  }
  return real;
}

function inside(target: string, root: string): boolean {
  const rel = path.relative(root, target);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

interface Entry {
  path: string;
  type: "dir" | "file" | "symlink" | "other";
  size_bytes: number;
  files?: number;
}

/** A du-like walk that stays on one filesystem, counts hard links once and stops at an entry count or time budget. */
async function walk(start: string, depth: number, maxEntries: number, until: number, signal: AbortSignal) {
  const entries: Entry[] = [];
  const seenInodes = new Set<string>();
  let scanned = 0;
  let unreadable = 0;
  let stopped: string | undefined;
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

  const dir = async (p: string, level: number): Promise<{ bytes: number; files: number }> => {
    let handle: Dir;
    try {
      handle = await opendir(p, { bufferSize: 256 });
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
      const full = path.join(p, d.name);
      let st: Stats;
      try {
        st = await lstat(full);
      } catch {
        unreadable++;
        continue;
      }
      let own = size(st);
      let count = 1;
      if (st.isDirectory() && st.dev === root.dev) {
        const sub = await dir(full, level + 1);
        own += sub.bytes;
        count = sub.files;
      }
      bytes += own;
      files += count;
      if (level + 1 <= depth) entries.push({ path: full, type: typeOf(st), size_bytes: own, ...(st.isDirectory() ? { files: count } : {}) });
    }
    return { bytes, files };
  };

  if (!root.isDirectory()) return { total: size(root), files: 1, entries, scanned: 1, unreadable, stopped, type: typeOf(root) };
  const sub = await dir(start, 0);
  return { total: root.blocks * 512 + sub.bytes, files: sub.files, entries, scanned, unreadable, stopped, type: "dir" as const };
}

export default defineSkill({
  key: "host_files",
  name: "Disk usage",
  description:
    "Report disk usage: without path, every real filesystem's size, used and available bytes, use % and inode use %, fullest first; with path (inside the configured allowed roots), the largest files and directories under it, like du. Use when a disk is filling up or a write fails with ENOSPC, to find which filesystem and then which directory is responsible.",
  class: "safe",
  scope: "host",
  category: "host",
  params: {
    path: { type: "string", description: "Absolute directory to measure, inside the edge's allowed roots; omit to list filesystems.", pattern: "^/", max: 4096 },
    depth: { type: "integer", description: "How many directory levels below path to list (0 = only the total).", min: 0, max: 3, default: 1 },
    limit: { type: "integer", description: "How many filesystems or entries to return, largest first.", min: 1, max: 200, default: 20 },
    all_filesystems: { type: "boolean", description: "Also list pseudo filesystems (proc, sysfs, cgroup, tmpfs, squashfs, …) and bind mounts.", default: false },
  },
  resultPreview: JSON.stringify({
    filesystems: [{ mount: "/", device: "/dev/vda1", fs_type: "ext4", read_only: false, size_bytes: 270_549_000_192, used_bytes: 24_696_061_952, avail_bytes: 232_080_334_848, used_pct: 9.6, inodes_used_pct: 2.6 }],
    total: 1,
  }),
  async execute(ctx, params) {
    if (params.path === undefined) return filesystems(ctx.signal, params.all_filesystems, params.limit);

    const roots = await loadRoots(ctx.settings);
    const requested = params.path;
    let real: string;
    try {
      real = await realpath(requested);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") throw new SkillError("path_not_found", `${JSON.stringify(requested)} does not exist`, "Check the path; call without path to see the filesystems.");
      throw new SkillError("path_unreadable", `cannot resolve ${JSON.stringify(requested)}: ${code ?? (err as Error).message}`, "The edge user may lack permission; try a directory it can read.");
    }
    if (!roots.some((r) => inside(real, r))) {
      throw new SkillError(
        "path_not_allowed",
        `${JSON.stringify(requested)}${real !== path.resolve(requested) ? ` (really ${real})` : ""} is outside the allowed roots`,
        `host_files only measures directories under ${roots.join(", ") || "(none that exist here)"} (${SETTINGS}.allowed_roots); pass a path inside one of them.`,
      );
    }
    const max = typeof ctx.settings.max_entries === "number" && ctx.settings.max_entries > 0 ? ctx.settings.max_entries : DEFAULT_MAX_ENTRIES;
    const budget = parseDuration(typeof ctx.settings.walk_budget === "string" ? ctx.settings.walk_budget : DEFAULT_WALK_BUDGET);
    // Leave time to build the answer before the call's deadline.
    const until = performance.now() + Math.max(0, Math.min(budget, ctx.deadline - Date.now() - 500));
    const w = await walk(real, params.depth, max, until, ctx.signal);
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
