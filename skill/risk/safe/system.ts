/** The safe system readers (A6): free, uptime, uname, ps, top, dmesg, hostname, id, whoami, date, nproc, lscpu, lsblk, findmnt, vmstat, w, who, echo, sleep. */
import { listsOperands, noOperands, numericValues, operandsMatch, type CommandSpec } from "../options.ts";

const USER = /^[a-z_][a-z0-9_.-]{0,31}$/;
const NONE = { reads: [], lists: [] };

/** ps's BSD-style option letters (no dash) allowed in a safe call; `e` (show the environment) is not among them. */
const PS_BSD = /^[auxfwjlsvrHhcmLSTX]+$/;

/** The system commands, by name. */
export const SYSTEM_COMMANDS: Record<string, CommandSpec> = {
  free: {
    options: { flags: "bkmgthlwv", valued: "sc", long: { bytes: "flag", kilo: "flag", mega: "flag", giga: "flag", tera: "flag", peta: "flag", kibi: "flag", mebi: "flag", gibi: "flag", tebi: "flag", pebi: "flag", human: "flag", si: "flag", lohi: "flag", total: "flag", wide: "flag", seconds: "value", count: "value" } },
    check: (a) => numericValues(a, ["-s", "-c", "--seconds", "--count"]) ?? noOperands(a),
  },
  uptime: { options: { flags: "ps", long: { pretty: "flag", since: "flag" } }, check: noOperands },
  uname: {
    options: { flags: "asnrvmpio", long: { all: "flag", "kernel-name": "flag", nodename: "flag", "kernel-release": "flag", "kernel-version": "flag", machine: "flag", processor: "flag", "hardware-platform": "flag", "operating-system": "flag" } },
    check: noOperands,
  },
  // An operand would set the host name; -F/-b would too.
  hostname: { options: { flags: "sfdAiIa", long: { short: "flag", fqdn: "flag", long: "flag", domain: "flag", "ip-address": "flag", "all-ip-addresses": "flag", "all-fqdns": "flag", alias: "flag" }, never: ["-F", "--file", "-b", "--boot"] }, check: noOperands },
  id: { options: { flags: "ugGnrz", long: { user: "flag", group: "flag", groups: "flag", name: "flag", real: "flag", zero: "flag" } }, check: (a) => operandsMatch(a, USER, "a user name") },
  whoami: { options: {}, check: noOperands },
  // Only +FORMAT operands (any other operand sets the clock); no -s/--set, -f/--file.
  date: {
    options: { flags: "uRI", valued: "d", long: { utc: "flag", universal: "flag", "rfc-email": "flag", "iso-8601": "optional", "rfc-3339": "value", date: "value" }, never: ["-s", "--set", "-f", "--file"] },
    check: (a) => operandsMatch(a, /^\+/, "a +FORMAT", 1),
  },
  nproc: { options: { long: { all: "flag", ignore: "value" } }, check: (a) => numericValues(a, ["--ignore"]) ?? noOperands(a) },
  lscpu: { options: { flags: "aebcJy", long: { all: "flag", json: "flag", online: "flag", offline: "flag", physical: "flag", hierarchic: "optional" } }, check: noOperands },
  lsblk: {
    options: { flags: "abdDfmnpPrStlJzOA", valued: "oex", long: { all: "flag", bytes: "flag", nodeps: "flag", discard: "flag", fs: "flag", perms: "flag", noheadings: "flag", paths: "flag", pairs: "flag", raw: "flag", scsi: "flag", topology: "flag", list: "flag", json: "flag", "output-all": "flag", output: "value", exclude: "value", sort: "value", tree: "optional" } },
    check: (a) => operandsMatch(a, /^\/dev\/[A-Za-z0-9_./-]+$/, "a device under /dev"),
  },
  findmnt: {
    // No -F/--tab-file (reads a file), no --poll (waits), no -w.
    options: { flags: "AbDfklnrRsuJ", valued: "tOoS", long: { all: "flag", bytes: "flag", df: "flag", first: "flag", fstab: "flag", kernel: "flag", list: "flag", noheadings: "flag", raw: "flag", real: "flag", pseudo: "flag", submounts: "flag", json: "flag", types: "value", options: "value", output: "value", source: "value", target: "value", mountpoint: "value" }, never: ["-F", "--tab-file", "-p", "--poll", "-w", "--timeout"] },
    check: (a, ctx) => listsOperands(a.operands, ctx),
  },
  vmstat: {
    options: { flags: "adfmnsDtwSy", valued: "S", long: { active: "flag", forks: "flag", slabs: "flag", "one-header": "flag", stats: "flag", disk: "flag", "disk-sum": "flag", timestamp: "flag", wide: "flag", unit: "value" } },
    check: (a) => operandsMatch(a, /^\d{1,6}$/, "a delay or count", 2),
  },
  // No operand: `who FILE` reads another utmp file.
  who: { options: { flags: "abdHlmpqrstuT", long: { all: "flag", boot: "flag", dead: "flag", heading: "flag", login: "flag", process: "flag", count: "flag", runlevel: "flag", short: "flag", time: "flag", users: "flag", mesg: "flag" } }, check: noOperands },
  w: { options: { flags: "hsfiuo", long: { "no-header": "flag", short: "flag", from: "flag", "ip-addr": "flag", "no-current": "flag", "old-style": "flag" } }, check: (a) => operandsMatch(a, USER, "a user name", 1) },
  // /bin/echo (there is no shell): its words are only printed.
  echo: { options: { stopAtOperand: true, flags: "neE" }, check: () => NONE },
  sleep: { options: {}, check: (a) => (a.operands.length === 0 ? "sleep needs a duration" : operandsMatch(a, /^\d{1,9}(\.\d{1,20})?[smhd]?$/, "a duration")) },
  ps: {
    options: {
      flags: "AaedfFHjlLMNTwyZc",
      valued: "oOpqsuUgGtC",
      long: { sort: "value", forest: "flag", pid: "value", ppid: "value", user: "value", User: "value", group: "value", Group: "value", format: "value", "no-headers": "flag", headers: "flag", cols: "value", columns: "value", width: "value", lines: "value", rows: "value", "quick-pid": "value", sid: "value", tty: "value", deselect: "flag", cumulative: "flag" },
    },
    check: (a) => {
      // A BSD cluster (`aux`, `auxf`) or pids; never `e` (the environment) or BSD letters that take values.
      const bad = a.operands.find((o) => !PS_BSD.test(o) && !/^\d{1,10}(,\d{1,10})*$/.test(o));
      if (bad) return `ps operand "${bad}" is not a BSD option cluster of ${PS_BSD.source} or a pid list`;
      return NONE;
    },
  },
  top: {
    // Batch mode only: an interactive top needs a terminal.
    options: { flags: "bcHiS1", valued: "ndopuUEe", long: {} },
    check: (a) => (a.opts.some((o) => o.name === "-b") ? (numericValues(a, ["-n", "-d", "-p"], /^[\d.,]{1,32}$/) ?? noOperands(a)) : "top needs -b (batch mode)"),
  },
  dmesg: {
    // No -c/-C (clear), -D/-E/-n (console), -F (file), -w/-W (follow), -S.
    options: {
      flags: "TkuxtrdeP",
      valued: "lf",
      long: { ctime: "flag", kernel: "flag", userspace: "flag", decode: "flag", notime: "flag", reltime: "flag", "show-delta": "flag", raw: "flag", nopager: "flag", level: "value", facility: "value", "time-format": "value", since: "value", until: "value", color: "optional", json: "flag" },
      never: ["-c", "--read-clear", "-C", "--clear", "-D", "--console-off", "-E", "--console-on", "-n", "--console-level", "-F", "--file", "-w", "--follow", "-W", "--follow-new", "-S", "--syslog"],
    },
    check: noOperands,
  },
};
