/**
 * Which files a safe command may read or list (A6): a positive set, checked on the normalised
 * absolute path (so `/etc//shadow`, `/var/log/../../etc/shadow` and `/proc/1/root/…` are the
 * paths they lead to), and on the edge again after realpath (a symlink out of a root is refused).
 */
import path from "node:path";

/** Non-secret system files any safe command may read, whatever the read roots. */
export const SYSTEM_FILES: readonly string[] = [
  "/etc/os-release",
  "/usr/lib/os-release",
  "/etc/lsb-release",
  "/etc/debian_version",
  "/etc/redhat-release",
  "/etc/hostname",
  "/etc/hosts",
  "/etc/resolv.conf",
  "/etc/nsswitch.conf",
  "/etc/fstab",
  "/etc/mtab",
  "/etc/timezone",
  "/etc/passwd",
  "/etc/group",
  "/proc/loadavg",
  "/proc/meminfo",
  "/proc/cpuinfo",
  "/proc/uptime",
  "/proc/version",
  "/proc/mounts",
  "/proc/stat",
  "/proc/diskstats",
  "/proc/vmstat",
  "/proc/swaps",
  "/proc/partitions",
  "/proc/filesystems",
  "/proc/pressure/cpu",
  "/proc/pressure/memory",
  "/proc/pressure/io",
  "/proc/net/dev",
  "/proc/net/tcp",
  "/proc/net/tcp6",
  "/proc/net/udp",
  "/proc/net/udp6",
  "/proc/net/sockstat",
  "/proc/net/snmp",
  "/proc/sys/fs/file-nr",
  "/proc/sys/fs/file-max",
  "/proc/self/stat",
  "/proc/self/status",
];

/** The read roots when none are configured. */
export const DEFAULT_READ_ROOTS: readonly string[] = ["/var/log"];

/** Where secrets live: refused for reading and listing below these, whatever the roots say. */
const SECRET_DIRS = ["/etc/ssl/private", "/etc/ongrid", "/var/lib/ongrid", "/root/.ssh", "/root/.gnupg", "/root/.kube", "/root/.aws", "/root/.config", "/proc/sys/kernel/random"];
/** Secret file and directory names, in any directory. */
const SECRET_NAME = /^(shadow|gshadow|shadow-|gshadow-|sudoers|\.env(\..*)?|\.netrc|\.pgpass|\.my\.cnf|\.git-credentials|\.npmrc|\.pypirc|\.dockercfg|credentials|\.ssh|\.gnupg|\.kube|\.aws|\.docker|id_[a-z0-9]+(\.pub)?|authorized_keys|known_hosts|.*\.(key|pem|p12|pfx|jks|keystore|kdbx|token|secret|secrets)|.*(token|secret|password|credential)s?(\..*)?|environ)$/i;

/** The context a path is judged in. */
export interface PathContext {
  /** The call's working directory; relative paths are refused without one. */
  cwd?: string;
  /** Directories whose files may be read. */
  readRoots: readonly string[];
}

/** The absolute, normalised form of an operand, or why it has none. */
export function absolute(p: string, ctx: PathContext): string | { problem: string } {
  if (p.includes("\0")) return { problem: "a path holds a NUL byte" };
  if (path.posix.isAbsolute(p)) return path.posix.resolve(p);
  if (!ctx.cwd || !path.posix.isAbsolute(ctx.cwd)) return { problem: `relative path "${p}" without an absolute cwd` };
  return path.posix.resolve(ctx.cwd, p);
}

/** Whether `p` is `root` or below it. */
export function under(p: string, root: string): boolean {
  return p === root || p.startsWith(root.endsWith("/") ? root : `${root}/`);
}

/** Why an absolute normalised path is secret, or undefined. */
export function secretProblem(abs: string): string | undefined {
  if (SECRET_DIRS.some((d) => under(abs, d)) || /^\/home\/[^/]+\/\.(ssh|gnupg|kube|aws|config|docker)(\/|$)/.test(abs)) return `${abs} is in a secret location`;
  if (abs.split("/").some((c) => c !== "" && SECRET_NAME.test(c))) return `${abs} has a secret file or directory name`;
  // /proc/<pid>/… other than the listed files: environ, cmdline, root, cwd, fd, mem, maps of other processes.
  if (/^\/proc\/[^/]+\//.test(abs) && !SYSTEM_FILES.includes(abs) && !/^\/proc\/(net|pressure|sys\/fs)\//.test(abs)) return `${abs} is a per-process /proc file`;
  return undefined;
}

/** Why a file's contents may not be read by a safe command, or undefined when they may. */
export function readProblem(abs: string, roots: readonly string[]): string | undefined {
  const secret = secretProblem(abs);
  if (secret) return secret;
  if (SYSTEM_FILES.includes(abs)) return undefined;
  if (roots.some((r) => under(abs, r))) return undefined;
  return `${abs} is outside the read roots (${roots.join(", ") || "none"}) and not a listed system file`;
}

/** Why a path may not be listed or measured (ls, du, df, stat) by a safe command, or undefined. */
export function listProblem(abs: string): string | undefined {
  return secretProblem(abs);
}
