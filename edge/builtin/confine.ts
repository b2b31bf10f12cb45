/**
 * Confinement of a path param to the directories an edge's config allows (`allowed_roots`), shared by
 * the skills that read the host's files (tail_file, host_files).
 *
 * The rule: a path is checked lexically first, then resolved one component at a time without ever
 * looking at anything outside the roots, so the answer for a path outside never depends on whether
 * something exists there (no probing which files exist elsewhere), and a symlink leading out of a
 * root (as the last or any middle component) is refused like the path it leads to.
 */
import { lstat, readlink, realpath } from "node:fs/promises";
import path from "node:path";

/** The allowed roots, as configured (made absolute) and as real paths (configured roots that do not exist are left out of `real`). */
export interface Roots {
  configured: string[];
  real: string[];
}

/**
 * Reads an `allowed_roots` setting: a list of absolute paths, each also resolved to its real path
 * (a configured root that is a symlink allows what is under its target; one that does not exist on
 * this host allows nothing). Throws the caller's `invalid()` for a malformed setting and its
 * `empty()` for a missing or empty one, so each skill keeps its own messages.
 */
export async function loadRoots(raw: unknown, errors: { invalid: () => Error; empty: () => Error }): Promise<Roots> {
  if (raw !== undefined && (!Array.isArray(raw) || raw.some((r) => typeof r !== "string" || !path.isAbsolute(r)))) throw errors.invalid();
  const configured = ((raw as string[] | undefined) ?? []).map((r) => path.resolve(r));
  if (configured.length === 0) throw errors.empty();
  const real: string[] = [];
  for (const root of configured) {
    try {
      real.push(await realpath(root));
    } catch {
      /* a root that does not exist on this host allows nothing */
    }
  }
  return { configured, real };
}

/** The roots to name in a refusal's hint: the configured ones and, where different, their real paths. */
export function shownRoots(roots: Roots): string[] {
  return [...new Set([...roots.configured, ...roots.real])];
}

/**
 * Whether absolute `target` is `root` or below it, lexically. `..` counts only as a whole first
 * component of the relative path: a file named "..foo" inside the root is inside, "/a/root..foo"
 * (a sibling sharing the root's name as a prefix) is not.
 */
export function inside(target: string, root: string): boolean {
  const rel = path.relative(root, target);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/** Whether absolute `target` is inside any of `roots` (see inside). */
export function insideAny(target: string, roots: readonly string[]): boolean {
  return roots.some((r) => inside(target, r));
}

/** Symlinks followed at most while resolving one path (Linux's own limit). */
export const MAX_SYMLINK_HOPS = 40;

/** What resolveConfined found. */
export type Resolved =
  /** The real path, inside a root. */
  | { kind: "ok"; real: string }
  /** The path, or a symlink on it, leads outside the roots; nothing outside was looked at. */
  | { kind: "outside" }
  /** More than MAX_SYMLINK_HOPS symlinks. */
  | { kind: "loop" }
  /** A component inside a root does not exist (or is not a directory where one is needed). */
  | { kind: "missing" }
  /** lstat failed otherwise (EACCES, ENAMETOOLONG, …), inside the roots. */
  | { kind: "error"; code: string };

/**
 * Resolves absolute `lexical` one component at a time, like the kernel (a `..` after a symlink goes
 * to the parent of the link's target), and stops as soon as the resolved prefix leaves the real
 * roots (other than on the way down from / to a root), so nothing outside is ever looked at: whether
 * a file outside exists, or a symlink out dangles, cannot change the answer. Only the roots, their
 * ancestors and what is inside them are lstat'ed; only symlinks inside them are read.
 */
export async function resolveConfined(lexical: string, realRoots: readonly string[]): Promise<Resolved> {
  const onTheWay = (p: string) => realRoots.some((r) => inside(p, r) || inside(r, p));
  const pending = lexical.split("/").filter((c) => c !== "" && c !== ".");
  let cur = "/";
  let hops = 0;
  while (pending.length > 0) {
    const part = pending.shift()!;
    const next = part === ".." ? path.dirname(cur) : path.join(cur, part);
    if (!onTheWay(next)) return { kind: "outside" };
    if (part === "..") {
      cur = next;
      continue;
    }
    let info;
    try {
      info = await lstat(next);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "EIO";
      // A missing component counts as inside only if the path would be inside a root.
      if (code === "ENOENT" || code === "ENOTDIR") return insideAny(next, realRoots) ? { kind: "missing" } : { kind: "outside" };
      return { kind: "error", code };
    }
    if (info.isSymbolicLink()) {
      if (++hops > MAX_SYMLINK_HOPS) return { kind: "loop" };
      const target = await readlink(next);
      pending.unshift(...target.split("/").filter((c) => c !== "" && c !== "."));
      if (target.startsWith("/")) cur = "/";
      continue;
    }
    if (pending.length > 0 && !info.isDirectory()) return insideAny(next, realRoots) ? { kind: "missing" } : { kind: "outside" };
    cur = next;
  }
  return insideAny(cur, realRoots) ? { kind: "ok", real: cur } : { kind: "outside" };
}

/** What confine found for a requested path: resolveConfined's answers, plus the checks before it. */
export type Confined =
  | Exclude<Resolved, { kind: "outside" }>
  /**
   * Refused: `lexical` when the path itself (with `.` and `..` applied as text) is outside every
   * root, so nothing at all was looked at; `resolved` when it is inside lexically but leads out
   * through `..` after a symlink, or a symlink.
   */
  | { kind: "outside"; how: "lexical" | "resolved" }
  /** Over Linux's limits: 4095 bytes in all, 255 bytes per component. */
  | { kind: "too_long" }
  /** Under a configured root (a symlink or a missing directory) that does not exist on this host. */
  | { kind: "root_missing" };

/**
 * The whole check of an absolute, NUL-free `requested` path (callers refuse others first, with their
 * own messages) against `roots`: lexically first, then resolved with resolveConfined — from the real
 * path of the configured root when the path is under a configured root that is itself a symlink.
 */
export async function confine(requested: string, roots: Roots): Promise<Confined> {
  const lexical = path.resolve(requested);
  if (!insideAny(lexical, [...roots.configured, ...roots.real])) return { kind: "outside", how: "lexical" };
  if (Buffer.byteLength(lexical) > 4095 || lexical.split("/").some((c) => Buffer.byteLength(c) > 255)) return { kind: "too_long" };

  // Under a configured root that is itself a symlink: continue from its real path.
  let start = lexical;
  const viaConfigured = roots.configured.find((c) => inside(lexical, c) && !insideAny(lexical, roots.real));
  if (viaConfigured !== undefined) {
    const realRoot = await realpath(viaConfigured).catch(() => undefined);
    if (realRoot === undefined) return { kind: "root_missing" };
    start = path.join(realRoot, path.relative(viaConfigured, lexical));
  }
  const resolved = await resolveConfined(start, roots.real);
  return resolved.kind === "outside" ? { kind: "outside", how: "resolved" } : resolved;
}

/**
 * Where the kernel says an open file descriptor points (the target of /proc/self/fd/N), to re-check
 * after opening that no directory above was swapped for a symlink since the checks; undefined where
 * /proc is not available.
 */
export async function openedPath(fd: number): Promise<string | undefined> {
  return realpath(`/proc/self/fd/${fd}`).catch(() => undefined);
}
