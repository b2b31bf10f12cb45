/** An exclusive pid lock file, so two processes never open the same PGlite data directory. */
import { link, readFile, rename, unlink, writeFile } from "node:fs/promises";
import { readFileSync, statSync, type Stats } from "node:fs";
import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { OngridError } from "../../skill/errors.ts";

/** Lock files this process holds, so a lock naming our own pid is told apart from a stale one left by a previous life. */
const heldHere = new Set<string>();

/** A held lock; release() removes the file if it is still ours. */
export interface DirLock {
  readonly path: string;
  /** Writes where the holder serves (a manager's URL) into the lock file, for the CLI to find it (lockHolder). */
  advertise(url: string): Promise<void>;
  release(): Promise<void>;
}

/** Who holds a lock file, as lockHolder reads it. */
export interface LockHolder {
  pid: number;
  /** The URL the holder advertised (a running manager), if any. */
  url?: string;
  /** Set when the file's owner or mode means its URL is not followed (lockFileUntrusted). */
  untrusted?: string;
}

/**
 * The live process holding a lock file and the URL it advertised, or undefined when the file is
 * absent, unreadable, or its holder is gone (a stale lock). Synchronous, for the CLI's start.
 */
export function lockHolder(file: string): LockHolder | undefined {
  let text: string;
  let untrusted: string | undefined;
  try {
    text = readFileSync(file, "utf8");
    untrusted = lockFileUntrusted(statSync(file));
  } catch {
    return undefined;
  }
  const [first = "", second = "", ...rest] = text.split("\n");
  const pid = Number.parseInt(first.trim(), 10);
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || !pidAlive(pid)) return undefined;
  const identity = second.trim();
  const now = processIdentitySync(pid);
  if (identity && now && now !== identity) return undefined;
  const url = rest.find((l) => l.startsWith("url "))?.slice(4).trim();
  if (untrusted) return { pid, url: undefined, untrusted };
  return { pid, url: url && /^https?:\/\/[^\s]+$/.test(url) ? url : undefined };
}

/**
 * Why a lock file's URL must not be followed, or undefined when it may: the CLI sends its API token
 * to that URL, so the file must be written by this user (or root) and by nobody else — never a file
 * another local user planted in a shared or group-writable directory.
 */
export function lockFileUntrusted(st: Pick<Stats, "uid" | "mode">, uid = process.getuid?.()): string | undefined {
  if (uid === undefined) return undefined;
  if (st.uid !== uid && st.uid !== 0) return `it belongs to uid ${st.uid}, not to you (uid ${uid}) or root`;
  if (st.mode & 0o022) return `it is writable by ${st.mode & 0o002 ? "every user" : "its group"} (mode ${(st.mode & 0o777).toString(8)})`;
  return undefined;
}

/** processIdentity without waiting; identity "" (unknown) where /proc is not there, which never refutes a lock. */
function processIdentitySync(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const start = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    return start && boot ? `${boot}/${start}` : "";
  } catch {
    return "";
  }
}

/** Whether a process with this pid exists (EPERM means it does, but belongs to someone else). */
function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Who a process is beyond its pid, where Linux says: the boot and the process's start time (in
 * clock ticks since boot, field 22 of /proc/<pid>/stat). A pid can be reused by another process,
 * and after a reboot or a container restart the same pid comes back; boot id + start time cannot.
 * Undefined where /proc is not there.
 */
export async function processIdentity(pid: number | "self"): Promise<string | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ")".
    const start = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    const boot = (await readFile("/proc/sys/kernel/random/boot_id", "utf8")).trim();
    return start && boot ? `${boot}/${start}` : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the lock's holder, as the lock file describes it, is still running. */
async function holderAlive(pid: number, identity: string | undefined): Promise<boolean> {
  if (!pidAlive(pid)) return false;
  // A lock written with the holder's identity: the live process with that pid must be the same one.
  if (identity) {
    const now = await processIdentity(pid);
    if (now !== undefined && now !== identity) return false;
  }
  return true;
}

/**
 * Takes `path` exclusively, writing our pid (and, on Linux, our boot id and start time) into it. A
 * lock whose holder is not running is stale and taken over: its pid is not alive, or is alive but
 * is another process (a reused pid: another boot or start time), or is our own pid but not held by
 * this process (as after a container restart). A lock of the older form, a pid alone, counts as
 * held while that pid is alive.
 */
export async function acquireLock(file: string, what: string): Promise<DirLock> {
  const path = resolve(file);
  if (heldHere.has(path)) throw heldError(path, process.pid, what);
  const self = await processIdentity("self");
  const token = `${process.pid}\n${self ? `${self}\n` : ""}`;
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  await writeFile(tmp, token, { mode: 0o644 });
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await createExclusive(tmp, path, token);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST" || attempt >= 3) throw err;
      }
      const [first = "", second, ...rest] = (await readFile(path, "utf8").catch(() => "")).split("\n");
      const pid = Number.parseInt(first.trim(), 10);
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && (await holderAlive(pid, second?.trim() || undefined))) {
        throw heldError(path, pid, what, rest.find((l) => l.startsWith("url "))?.slice(4).trim());
      }
      // Stale (dead pid, a pid reused by another process, our own pid from a previous life, or garbage): remove and retry.
      await unlink(path).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== "ENOENT") throw e;
      });
    }
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
  heldHere.add(path);
  let released = false;
  let content = token;
  return {
    path,
    async advertise(url: string) {
      if (released) return;
      // A third line after pid and identity (kept even when empty, so the URL is never read as one); replaced atomically.
      const next = `${process.pid}\n${self ?? ""}\nurl ${url}\n`;
      const tmpUrl = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
      await writeFile(tmpUrl, next, { mode: 0o644 });
      try {
        await rename(tmpUrl, path);
        content = next;
      } catch (err) {
        await unlink(tmpUrl).catch(() => undefined);
        throw err;
      }
    },
    async release() {
      if (released) return;
      released = true;
      heldHere.delete(path);
      const text = await readFile(path, "utf8").catch(() => "");
      if (text === content) await unlink(path).catch(() => undefined);
    },
  };
}

/** Creates `path` holding `token`, failing with EEXIST if it exists: a hard link is atomic with its content;
 * file systems without hard links fall back to an exclusive create. */
async function createExclusive(tmp: string, path: string, token: string): Promise<void> {
  try {
    await link(tmp, path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP" && code !== "ENOSYS") throw err;
    await writeFile(path, token, { flag: "wx", mode: 0o644 });
  }
}

function heldError(path: string, pid: number, what: string, url?: string): OngridError {
  return new OngridError(
    "failed_precondition",
    url
      ? `${what} is held by the ongrid manager at ${url} (pid ${pid}, lock file ${path}), and this cannot be done through it: stop that manager first`
      : `${what} is in use by another ongrid process (pid ${pid}, lock file ${path}): ` + `stop that process, or use --manager URL to work through the running manager`,
    `if no process with pid ${pid} is running, delete ${path}`,
  );
}
