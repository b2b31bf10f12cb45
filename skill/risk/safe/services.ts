/** The safe service readers (A6): `systemctl status|is-active|list-units…` and `journalctl -u … -n N`. */
import { numericValues, type CommandSpec } from "../options.ts";

const NONE = { reads: [], lists: [] };
/** systemctl verbs that only read (not `show` or `cat`: unit environments can hold secrets). */
const SYSTEMCTL_READ = new Set(["status", "is-active", "is-enabled", "is-failed", "is-system-running", "list-units", "list-timers", "list-sockets", "list-unit-files", "list-dependencies", "list-jobs"]);
const UNIT = /^[A-Za-z0-9_@:.*\\-]{1,256}$/;

/** The service commands, by name. */
export const SERVICE_COMMANDS: Record<string, CommandSpec> = {
  systemctl: {
    // No -H/-M (another host or container), --user (another manager), --runtime/--now (changes).
    options: {
      flags: "alqr",
      valued: "tn",
      long: { "no-pager": "flag", full: "flag", all: "flag", failed: "flag", plain: "flag", "no-legend": "flag", quiet: "flag", recursive: "flag", reverse: "flag", type: "value", state: "value", lines: "value", output: "value" },
      never: ["-H", "--host", "-M", "--machine", "--user", "--global", "--runtime", "--now", "--root", "--image", "-f", "--force", "-i", "--ignore-inhibitors", "--no-block"],
    },
    check: (a) => {
      const [verb, ...units] = a.operands;
      if (verb === undefined) return "systemctl needs a read-only verb (status, is-active, list-units, …)";
      if (!SYSTEMCTL_READ.has(verb)) return `systemctl ${verb} is not a read-only verb (${[...SYSTEMCTL_READ].join(", ")})`;
      const bad = units.find((u) => !UNIT.test(u));
      if (bad) return `"${bad}" is not a unit name or pattern`;
      return numericValues(a, ["-n", "--lines"]) ?? NONE;
    },
  },
  journalctl: {
    // No -f (never ends), -D/--directory/--file/-i/--root/--image (other journals), --vacuum-*/--rotate/--flush/--sync/--setup-keys/--relinquish-var (changes).
    options: {
      flags: "abkrxqmeN",
      valued: "ucgnoptSUF",
      long: {
        "no-pager": "flag", "no-hostname": "flag", utc: "flag", reverse: "flag", dmesg: "flag", catalog: "flag", quiet: "flag", all: "flag", merge: "flag",
        "list-boots": "flag", "disk-usage": "flag", fields: "flag", "show-cursor": "flag", system: "flag", "no-full": "flag", full: "flag", "pager-end": "flag",
        since: "value", until: "value", unit: "value", identifier: "value", priority: "value", grep: "value", "case-sensitive": "optional",
        output: "value", "output-fields": "value", lines: "optional", boot: "optional", field: "value", cursor: "value", "after-cursor": "value",
      },
      never: [
        "-f", "--follow", "-D", "--directory", "--file", "-i", "--root", "--image", "-M", "--machine", "-m", "--vacuum-size", "--vacuum-time", "--vacuum-files", "--rotate", "--flush",
        "--sync", "--setup-keys", "--relinquish-var", "--smart-relinquish-var", "--update-catalog", "--verify-key", "--cursor-file",
      ],
    },
    check: (a) => {
      const bad = numericValues(a, ["-n", "--lines"]);
      if (bad) return bad;
      // Matches (FIELD=value, +) only: a path operand would read another journal's matches.
      const op = a.operands.find((o) => o !== "+" && !/^[A-Z0-9_]{1,64}=/.test(o));
      return op === undefined ? NONE : `journalctl operand "${op}" is not a FIELD=value match`;
    },
  },
};
