/** exec's metadata (D1–D5): what the manager trusts and the edge runs with (edge/builtin/exec.ts). */
import { defineSkillMeta } from "../define.ts";
import { classifyCommand } from "../risk/index.ts";

export const EXEC = defineSkillMeta({
  key: "exec",
  name: "Run a shell command",
  description:
    "Run one command line on the host and return its exit code, stdout and stderr. Use when no dedicated skill (host_load, host_processes, host_files, tail_file, read_journal, probe_*) answers the question. Each call is classified by the command: a read-only command or `|` pipeline of allowlisted tools such as `df -h` or `journalctl -u nginx -n 50 --no-pager | grep -i error` runs at once (without a shell, as an unprivileged user); anything else (`;`, `&&`, redirections, `$VAR`, globs, other tools) needs approval, and destructive commands such as `mkfs` need an SOP, so prefer plain read-only commands. A command that exits non-zero fails the call with exit_status, its exit code, stdout and stderr kept in the output.",
  class: "dangerous",
  scope: "host",
  category: "shell",
  lintWaivers: { "key-format": "the key is fixed by SPEC D5 (the seeds' ssh_execute)" },
  params: {
    command: {
      type: "string",
      description: "One command line, e.g. `df -h` or `journalctl -u nginx -n 50 --no-pager | tail -n 20`; shell syntax beyond `|` makes the call need approval.",
      required: true,
      min: 1,
      max: 4096,
    },
    timeout: {
      type: "duration",
      description: "Kill the command and everything it started after this long, e.g. 30s or 2m.",
      default: "30s",
      min: 100,
      max: 3_600_000,
    },
    cwd: { type: "string", description: "Absolute working directory; relative file operands resolve against it. Default: / for a read-only command, the edge user's home directory otherwise.", pattern: "^/", max: 1024 },
  },
  resultPreview: JSON.stringify({
    command: "df -h /",
    exit_code: 0,
    stdout: "Filesystem Size Used Avail Use% Mounted on\n/dev/vda 252G 23G 217G 10% /\n",
    stderr: "",
    stdout_truncated: false,
    stderr_truncated: false,
    duration_ms: 4,
    risk: { class: "safe", level: "low", reason: "read-only: df" },
    ran: { via: "argv", stages: 1, as: "nobody" },
  }),
  riskForArgs: (params) => classifyCommand(params.command, { cwd: params.cwd }).class,
  // The manager applies the same classifier to gate calls (it does not run the edge's code).
  riskClassifier: "shell_command:command:cwd",
});
