/** Destroyers of the running system (A6): power and init, killing everything or init, kernel switches. */
import { hasShort, operands, type DangerRule } from "./common.ts";

const POWER = new Set(["reboot", "poweroff", "halt", "shutdown", "init", "telinit", "kexec", "systemd-halt"]);
const SYSTEMCTL_DANGER = new Set(["reboot", "poweroff", "halt", "kexec", "soft-reboot", "emergency", "rescue", "isolate", "default", "suspend", "hibernate", "hybrid-sleep", "suspend-then-hibernate", "exit", "switch-root", "mask", "daemon-reexec"]);
const CRITICAL_PROCS = /^(init|systemd|sshd|ongrid|ongrid-edge|dbus-daemon|journald|systemd-journald|containerd|dockerd|kubelet)$/;

/** System destroyers. */
export const systemRule: DangerRule = (call) => {
  const { name } = call;
  if (POWER.has(name)) return `${name} stops or restarts the host`;
  if (name === "systemctl") {
    const verb = call.args.find((w) => w.dynamic || !w.value.startsWith("-"));
    if (verb?.dynamic) return "systemctl with a verb only known at run time";
    if (verb && SYSTEMCTL_DANGER.has(verb.value)) return `systemctl ${verb.value} changes the whole system's state`;
    return undefined;
  }
  if (name === "kill") {
    // kill 1, kill -9 -1, kill -- -1: init, or every process.
    const targets = call.args.filter((w) => w.dynamic || /^-?\d+$/.test(w.value) || !w.value.startsWith("-"));
    if (call.args.some((w) => w.dynamic)) return "kill of a process only known at run time";
    const sigIndex = call.args.findIndex((w) => /^-(\d+|[A-Z]+|s)$/.test(w.value));
    const pids = targets.map((w) => w.value).filter((v, i) => !(i === 0 && sigIndex === 0 && /^-\d+$/.test(v)));
    if (pids.some((v) => v === "1" || v === "-1" || v === "0")) return "kill of init, of every process or of the caller's group";
    return undefined;
  }
  if (name === "killall" || name === "pkill") {
    const ops = operands(call);
    if (ops.some((w) => w.dynamic || CRITICAL_PROCS.test(w.value))) return `${name} of a system process`;
    if (name === "pkill" && hasShort(call, "u") && ops.length === 0) return "pkill of a user's every process";
    return undefined;
  }
  if (name === "sysctl" && (hasShort(call, "wp") || call.args.some((w) => w.value.includes("=")))) return "sysctl changes kernel settings";
  if (name === "modprobe" || name === "rmmod" || name === "insmod") return `${name} loads or removes kernel modules`;
  if ((name === "userdel" || name === "deluser" || name === "passwd" || name === "usermod") && call.args.some((w) => w.value === "root" || w.dynamic)) return `${name} changes the root account`;
  return undefined;
};
