/** What the destroyer rules share: how options are spotted (as getopt would read them, abbreviations included) and which paths are the system's. */
import path from "node:path";
import type { ShWord } from "../shell.ts";

/** A command's name and words as the destroyer rules see them. */
export interface Call {
  /** The command's base name (`/usr/bin/rm` → rm). */
  name: string;
  /** The words after the name, with quotes removed. */
  args: ShWord[];
}

/** A rule of one family: the reason a call is dangerous, or undefined. */
export type DangerRule = (call: Call) => string | undefined;

/** Whether a short option letter is given, alone or in a cluster (`-rf`, `-fR`). */
export function hasShort(call: Call, letters: string): boolean {
  return call.args.some((w) => /^-[^-]/.test(w.value) && [...w.value.slice(1)].some((c) => letters.includes(c)));
}

/** Whether a long option is given, in full or abbreviated as GNU getopt accepts (`--rec` for `--recursive`), with or without `=value`. */
export function hasLong(call: Call, ...names: string[]): boolean {
  return call.args.some((w) => {
    if (!w.value.startsWith("--") || w.value === "--") return false;
    const given = w.value.slice(2).split("=")[0];
    return given.length > 0 && names.some((n) => n.startsWith(given));
  });
}

/** The operands: words that are not options (a dynamic word counts: it could be anything). */
export function operands(call: Call): ShWord[] {
  return call.args.filter((w) => w.dynamic || !w.value.startsWith("-") || w.value === "-");
}

/** Whether any word is only known at run time. */
export function anyDynamic(call: Call): boolean {
  return call.args.some((w) => w.dynamic);
}

const SYSTEM_DIRS = ["/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/usr", "/var", "/var/lib", "/var/log", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/local", "/snap", "/mnt", "/media"];
/** Everything below these is the system's: deleting or overwriting any of it is dangerous. */
const SYSTEM_TREES = ["/boot", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/usr/bin", "/usr/sbin", "/usr/lib", "/proc/sys", "/proc/sysrq-trigger", "/sys", "/var/lib/dpkg", "/var/lib/rpm", "/var/lib/ongrid", "/etc/ongrid"];
/** Devices that are not storage or memory. */
const HARMLESS_DEVICES = /^\/dev\/(null|zero|full|random|urandom|tty|stdin|stdout|stderr|fd\/\d+|pts\/\d+|shm(\/.*)?)$/;

/**
 * Why a path some command deletes, overwrites or changes modes of is the system's: `/`, a top-level
 * directory, a home, a device (raw disks, /dev/mem), /proc/sysrq-trigger, /boot, /etc, …; a glob or
 * a word only known at run time there, `~`, and a relative path climbing with `..` (the working
 * directory is not known) count as such.
 */
export function systemPath(w: ShWord): string | undefined {
  if (w.dynamic) return `"${w.value}" is only known at run time`;
  let p = w.value;
  if (p === "~" || p.startsWith("~/") || /^~[a-z_]/.test(p)) return `"${p}" is a home directory`;
  if (!p.startsWith("/")) {
    if (p.split("/").includes("..")) return `"${p}" climbs out of the working directory with ..`;
    if (w.glob && /^[*?[]/.test(p)) return `"${p}" is a glob over the working directory`;
    return undefined;
  }
  p = path.posix.normalize(p).replace(/\/+$/, "") || "/";
  if (w.glob) {
    // `/e*`, `/etc/*`: the literal part before the first glob character decides.
    const lit = p.slice(0, p.search(/[*?[{]/));
    const dir = lit.endsWith("/") ? lit.slice(0, -1) || "/" : path.posix.dirname(lit);
    if (dir === "/" || SYSTEM_DIRS.includes(dir) || SYSTEM_TREES.some((t) => dir === t || dir.startsWith(`${t}/`))) return `"${w.value}" is a glob over ${dir}`;
    return undefined;
  }
  if (SYSTEM_DIRS.includes(p)) return `${p} is a system directory`;
  if (/^\/home\/[^/]+$/.test(p)) return `${p} is a home directory`;
  if (p.startsWith("/dev/") && !HARMLESS_DEVICES.test(p)) return `${p} is a device`;
  if (SYSTEM_TREES.some((t) => p === t || p.startsWith(`${t}/`))) return `${p} is a system file`;
  return undefined;
}

/** The first system path among the operands, as a reason. */
export function firstSystemPath(words: readonly ShWord[]): string | undefined {
  for (const w of words) {
    const why = systemPath(w);
    if (why) return why;
  }
  return undefined;
}
