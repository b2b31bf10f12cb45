/** exec (D5): one shell command on the host — the seeds' ssh_execute — gated by its per-call risk (A6). */
import os from "node:os";
import { defineSkill } from "../../skill/define.ts";
import { parseDuration } from "../../skill/duration.ts";
import { SkillError } from "../../skill/errors.ts";
import { classifyCommand } from "../../skill/risk.ts";
import { ProcessStartError, runProcess, SYSTEM_PATH } from "../../skill/subprocess.ts";

/** Default of skills.exec.max_output_bytes: bytes kept of each of stdout and stderr. */
const DEFAULT_OUTPUT_BYTES = 256 * 1024;
const SHELL = "/bin/sh";

function tail(text: string, max = 500): string {
  const t = text.trimEnd();
  return t.length > max ? "…" + t.slice(-max) : t;
}

export default defineSkill({
  key: "exec",
  name: "Run a shell command",
  description:
    "Run one shell command line on the host with /bin/sh and return its exit code, stdout and stderr. Use when no dedicated skill (host_load, host_processes, host_files, tail_file, read_journal, probe_*) answers the question. Each call is classified by the command: read-only commands such as `df -h` run directly, changes such as `systemctl restart nginx` need approval and destructive ones such as `mkfs` need an SOP, so prefer read-only commands. A non-zero exit_code is reported as a result, not as a failure.",
  class: "dangerous",
  scope: "host",
  category: "shell",
  lintWaivers: { "key-format": "the key is fixed by SPEC D5 (the seeds' ssh_execute)" },
  params: {
    command: {
      type: "string",
      description: "One shell command line, e.g. `df -h` or `journalctl -u nginx -n 50 --no-pager`; pipes and && are allowed.",
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
    cwd: { type: "string", description: "Absolute working directory; the edge user's home directory when omitted.", pattern: "^/", max: 1024 },
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
  }),
  riskForArgs: (params) => classifyCommand(params.command).class,
  // The manager applies the same classifier to gate calls (it does not run the edge's code).
  riskClassifier: "shell_command:command",
  async execute(ctx, params) {
    const risk = classifyCommand(params.command);
    const configured = ctx.settings.max_output_bytes;
    const cap = typeof configured === "number" && Number.isInteger(configured) && configured > 0 ? configured : DEFAULT_OUTPUT_BYTES;
    const timeoutMs = Math.max(1, Math.min(parseDuration(params.timeout), ctx.deadline - Date.now()));
    let r;
    try {
      r = await runProcess({
        file: SHELL,
        args: ["-c", params.command],
        cwd: params.cwd,
        env: { PATH: SYSTEM_PATH, LANG: "C.UTF-8", HOME: os.homedir() },
        signal: ctx.signal,
        timeoutMs,
        maxOutputBytes: cap,
      });
    } catch (err) {
      if (err instanceof ProcessStartError && err.subject === "cwd") {
        throw new SkillError("cwd_not_found", err.message, "Pass an existing absolute directory as cwd, or omit cwd to run in the home directory.");
      }
      if (err instanceof ProcessStartError) {
        throw new SkillError("tool_missing", `cannot start ${SHELL}: ${err.message}`, "This host has no usable POSIX shell; use the dedicated skills (host_load, host_processes, host_files, tail_file) instead.");
      }
      throw err;
    }
    if (r.cancelled) throw new SkillError("cancelled", "the command was cancelled and killed with every process it started", "Run it again if the result is still needed.");
    if (r.timedOut) {
      const last = tail(r.stderr) || tail(r.stdout);
      throw new SkillError(
        "command_timeout",
        `the command did not finish within ${params.timeout} and was killed with every process it started${last ? `; last output: ${last}` : ""}`,
        "Retry with a longer timeout, or bound the command (e.g. -n/--lines, --since, head, timeout 10 …, ping -c 3).",
      );
    }
    return {
      command: params.command,
      exit_code: r.exitCode,
      ...(r.signal ? { signal: r.signal } : {}),
      stdout: r.stdout,
      stderr: r.stderr,
      stdout_truncated: r.stdoutTruncated,
      stderr_truncated: r.stderrTruncated,
      duration_ms: r.durationMs,
      risk,
    };
  },
});
