/**
 * Commands that run another command, code or script the approver cannot see whole (A6): dangerous
 * whatever they wrap — privilege and environment wrappers (sudo, env, nice, timeout, unshare,
 * nsenter, chroot…), shells and interpreters given code (`sh -c`, `bash`, `python -c`, `eval`),
 * and runners (xargs, find -exec, parallel, watch, ssh with a command).
 */
import { hasLong, hasShort, type DangerRule } from "./common.ts";

const WRAPPERS = new Set([
  "sudo", "doas", "su", "runuser", "pkexec", "setpriv", "capsh", "nice", "renice", "ionice", "chrt", "taskset", "numactl", "timeout", "nohup",
  "stdbuf", "time", "command", "builtin", "exec", "eval", "source", ".", "xargs", "parallel", "watch", "chroot", "nsenter", "unshare", "setsid",
  "systemd-run", "flock", "strace", "ltrace", "gdb", "script", "expect", "firejail", "bwrap", "busybox", "toybox", "trap", "coproc", "fakeroot",
  "proot", "schroot", "machinectl", "systemd-nspawn", "at", "batch", "enable", "hash", "alias",
]);
const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "csh", "tcsh", "fish", "ash", "rbash"]);
const INTERPRETERS = new Set(["python", "python2", "python3", "perl", "ruby", "node", "nodejs", "bun", "deno", "php", "lua", "tclsh", "wish", "Rscript", "osascript", "pwsh", "awk", "gawk", "mawk", "nawk"]);

/** Wrappers, shells and interpreters. */
export const wrapperRule: DangerRule = (call) => {
  const { name } = call;
  if (name === "env" || name === "printenv") {
    // Alone (or with only assignments and -i/-u/-0), env prints the environment: mutating, not a wrapper.
    const runs = call.args.some((w) => w.dynamic || (!w.value.startsWith("-") && !/^[A-Za-z_][A-Za-z0-9_]*=/.test(w.value))) || hasShort(call, "SC") || hasLong(call, "split-string", "chdir");
    return name === "env" && runs ? "env runs another command with a changed environment" : undefined;
  }
  if (name === "ssh" && call.args.filter((w) => w.dynamic || !w.value.startsWith("-")).length >= 2) return "ssh runs a command on another host";
  if (WRAPPERS.has(name)) return `${name} runs another command or changes how the next ones run`;
  if (SHELLS.has(name)) return `${name} runs shell code the approver does not see as this command`;
  if (INTERPRETERS.has(name) && (!name.endsWith("awk") || call.args.some((w) => w.dynamic || /system|getline|\||@/.test(w.value)))) return `${name} runs a program`;
  if (name === "find" && call.args.some((w) => /^-(exec|execdir|ok|okdir|delete|fprint|fprint0|fprintf|fls)$/.test(w.value))) return "find -exec/-delete runs commands or deletes";
  if ((name === "ssh" || name === "kubectl" || name === "docker" || name === "podman" || name === "nerdctl" || name === "crictl") && call.args.some((w) => w.value === "exec" || w.value === "run" || w.value === "debug" || w.value === "attach")) return `${name} runs a command elsewhere`;
  if (name === "ip" && call.args.some((w) => w.value === "exec")) return "ip netns exec runs a command";
  if (name === "git" && (hasLong(call, "upload-pack", "receive-pack", "exec") || call.args.some((w) => w.value === "-c" || /core\.(fsmonitor|pager|sshCommand|editor|hooksPath)/i.test(w.value)))) return "git runs a configured program";
  if ((name === "tar" && (hasLong(call, "use-compress-program", "to-command", "checkpoint-action", "info-script", "new-volume-script", "rsh-command") || hasShort(call, "IF"))) || (name === "rsync" && hasLong(call, "rsh", "rsync-path"))) {
    return `${name} runs a program given as an option`;
  }
  if (name === "man" && (hasShort(call, "PH") || hasLong(call, "pager", "html", "preprocessor"))) return "man runs the pager or browser it is given";
  return undefined;
};
