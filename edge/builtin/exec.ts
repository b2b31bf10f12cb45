/**
 * exec (D5): one shell command on the host — the seeds' ssh_execute — gated by its per-call risk
 * (A6). A safe command runs without a shell, as the argv lists the classifier parsed (a pipeline is
 * wired here, stdout to stdin), each file operand checked again after realpath, and as the
 * unprivileged `safe_run_as` user when the edge runs as root. Any other command ran the gate's
 * approval and runs through /bin/sh -c with exactly the approved text.
 */
import os from "node:os";
import { defineSkill } from "../../skill/define.ts";
import { EXEC } from "../../skill/catalog/exec.ts";
import { parseDuration } from "../../skill/duration.ts";
import { SkillError } from "../../skill/errors.ts";
import { classifyCommand, type SafePlan } from "../../skill/risk/index.ts";
import { ProcessStartError, runPipeline, SYSTEM_PATH, type Stage } from "../../skill/subprocess.ts";
import { checkSafePlan, resolveRunAs } from "./exec-safe.ts";

/** Default of skills.exec.max_output_bytes: bytes kept of each of stdout and stderr. */
const DEFAULT_OUTPUT_BYTES = 256 * 1024;
const SHELL = "/bin/sh";

function tail(text: string, max = 500): string {
  const t = text.trimEnd();
  return t.length > max ? "…" + t.slice(-max) : t;
}

export default defineSkill({
  ...EXEC,
  async execute(ctx, params) {
    const risk = classifyCommand(params.command, { cwd: params.cwd });
    const configured = ctx.settings.max_output_bytes;
    const cap = typeof configured === "number" && Number.isInteger(configured) && configured > 0 ? configured : DEFAULT_OUTPUT_BYTES;
    const timeoutMs = Math.max(1, Math.min(parseDuration(params.timeout), ctx.deadline - Date.now()));
    const safe = risk.class === "safe" && risk.plan ? await prepareSafe(risk.plan, ctx.settings.safe_run_as) : undefined;
    const stages: Stage[] = safe ? risk.plan!.argv.map(([file, ...args]) => ({ file, args })) : [{ file: SHELL, args: ["-c", params.command] }];
    let r;
    try {
      r = await runPipeline(stages, {
        cwd: params.cwd ?? (safe ? "/" : undefined),
        env: { PATH: SYSTEM_PATH, LANG: "C.UTF-8", HOME: safe?.home ?? os.homedir() },
        signal: ctx.signal,
        timeoutMs,
        maxOutputBytes: cap,
        ...(safe?.runAs ? { runAs: safe.runAs } : {}),
      });
    } catch (err) {
      if (err instanceof ProcessStartError && err.subject === "cwd") {
        throw new SkillError("cwd_not_found", err.message, "Pass an existing absolute directory as cwd, or omit cwd to run in the home directory.");
      }
      if (err instanceof ProcessStartError && safe) {
        throw new SkillError("tool_missing", `cannot start ${err.message}`, "This host lacks that tool; use the dedicated skills (host_load, host_processes, host_files, tail_file) instead.");
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
    const output = {
      command: params.command,
      exit_code: r.exitCode,
      ...(r.signal ? { signal: r.signal } : {}),
      stdout: r.stdout,
      stderr: r.stderr,
      stdout_truncated: r.stdoutTruncated,
      stderr_truncated: r.stderrTruncated,
      duration_ms: r.durationMs,
      risk: { class: risk.class, level: risk.level, reason: risk.reason },
      // How it ran (the argv is the command's parse, `ongrid skills classify` shows it; not repeated here to keep rows small).
      ran: safe ? { via: "argv", stages: risk.plan!.argv.length, as: safe.user } : { via: "sh", stages: 1, as: os.userInfo().username },
    };
    // The exit status is the result: a command that failed is a failed call, whoever reads it (the
    // console, the CLI, an approver, the audit log), with what it printed kept in the output.
    if (r.exitCode !== 0 || r.signal) {
      const what = r.signal ? `was killed by ${r.signal}` : `exited with status ${r.exitCode}`;
      const last = tail(r.stderr, 200);
      throw new SkillError("exit_status", `the command ${what}${last ? `: ${last}` : ""}`, "Read stderr and stdout in the output; the command ran, and its exit status says it did not succeed.", output);
    }
    return output;
  },
});

/** The user a safe plan runs as, once its paths are checked again on this host. */
async function prepareSafe(plan: SafePlan, runAsSetting: unknown): Promise<{ runAs?: { uid: number; gid: number }; user: string; home: string }> {
  const problem = await checkSafePlan(plan);
  if (problem) throw new SkillError("permission_denied", `refused: ${problem}`, "Read files under the read roots (skills.exec.read_roots / --exec-read-root) or the listed system files; a path that resolves elsewhere (a symlink) needs approval.");
  return resolveRunAs(runAsSetting);
}
