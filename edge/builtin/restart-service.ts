/** restart_service (D5): restart or reload one systemd service, then report the state it is in. */
import { existsSync, readFileSync } from "node:fs";
import { defineSkill } from "../../skill/define.ts";
import { RESTART_SERVICE } from "../../skill/catalog/restart-service.ts";
import { SkillError } from "../../skill/errors.ts";
import { ProcessStartError, runProcess, SYSTEM_PATH, type ProcessResult } from "../../skill/subprocess.ts";

/** Unit suffixes that are not services: restarting e.g. reboot.target would reboot the host. */
const NON_SERVICE = /\.(?:target|socket|timer|mount|automount|swap|path|slice|scope|device)$/;
const NO_SYSTEMD = /not been booted with systemd|Failed to connect to bus|System has not been booted|Host is down/i;

function pid1(): string {
  try {
    return readFileSync("/proc/1/comm", "utf8").trim();
  } catch {
    return "unknown";
  }
}

function unavailable(detail: string): SkillError {
  return new SkillError(
    "systemd_unavailable",
    `systemd is not running on this host (PID 1 is ${pid1()})${detail ? `: ${detail}` : ""}`,
    "This host has no systemd to restart services with; use its own init system instead (e.g. exec `service NAME restart`, which is gated as mutating) or check the service with host_processes.",
  );
}

export default defineSkill({
  ...RESTART_SERVICE,
  async execute(ctx, params) {
    const unit = params.unit.endsWith(".service") ? params.unit : `${params.unit}.service`;
    if (NON_SERVICE.test(params.unit)) {
      throw new SkillError("invalid_argument", `param "unit": ${JSON.stringify(params.unit)} is not a service unit`, "restart_service only restarts .service units; targets, sockets, timers and mounts are refused.");
    }
    const bin = typeof ctx.settings.systemctl === "string" && ctx.settings.systemctl ? ctx.settings.systemctl : "systemctl";
    const systemctl = async (args: string[]): Promise<ProcessResult> => {
      try {
        return await runProcess({
          file: bin,
          args,
          env: { PATH: SYSTEM_PATH, LANG: "C.UTF-8", SYSTEMD_PAGER: "", SYSTEMD_COLORS: "0" },
          signal: ctx.signal,
          timeoutMs: Math.max(1, ctx.deadline - Date.now()),
          maxOutputBytes: 64 * 1024,
        });
      } catch (err) {
        if (err instanceof ProcessStartError && !existsSync("/run/systemd/system")) throw unavailable("systemctl is not installed");
        if (err instanceof ProcessStartError) throw new SkillError("tool_missing", `systemctl cannot be started: ${err.message}`, "Install systemd's systemctl, or set skills.restart_service.systemctl to its path.");
        throw err;
      }
    };

    const started = performance.now();
    const action = await systemctl([params.mode, "--no-ask-password", "--", unit]);
    if (action.cancelled || action.timedOut) {
      throw new SkillError("deadline_exceeded", `systemctl ${params.mode} ${unit} did not finish before the call's deadline`, `The job may still be running in systemd; check it with exec \`systemctl status ${unit}\` before retrying.`);
    }
    if (action.exitCode !== 0) {
      const stderr = action.stderr.trim();
      if (NO_SYSTEMD.test(stderr)) throw unavailable(stderr.split("\n")[0]);
      if (/not found|not loaded|No such file/i.test(stderr) || action.exitCode === 5) {
        throw new SkillError("unit_not_found", `unit ${unit} does not exist on this host: ${stderr}`, "Check the name with exec `systemctl list-units --type=service --all`; template units need an instance (name@instance).");
      }
      if (/Access denied|Interactive authentication required|Permission denied|not permitted/i.test(stderr)) {
        throw new SkillError("permission_denied", `not allowed to ${params.mode} ${unit}: ${stderr}`, "The edge must run as root, or a polkit rule must allow it to manage this unit.");
      }
      if (/not applicable|does not support reload|reload.*not supported/i.test(stderr)) {
        throw new SkillError("reload_unsupported", `${unit} cannot be reloaded: ${stderr}`, 'Use mode "restart" instead.');
      }
      throw new SkillError(
        "restart_failed",
        `systemctl ${params.mode} ${unit} failed (exit ${action.exitCode ?? action.signal}): ${stderr || action.stdout.trim()}`,
        `Read why with read_journal (unit ${unit}) or exec \`systemctl status ${unit}\`, fix the cause, then retry.`,
      );
    }
    const show = await systemctl(["show", "--property=ActiveState,SubState,MainPID", "--", unit]);
    const props = Object.fromEntries(
      show.stdout
        .split("\n")
        .map((l) => l.split("="))
        .filter((kv) => kv.length >= 2)
        .map(([k, ...v]) => [k.trim(), v.join("=").trim()]),
    );
    const mainPid = Number(props.MainPID);
    return {
      unit,
      mode: params.mode,
      active_state: props.ActiveState ?? "unknown",
      sub_state: props.SubState ?? "unknown",
      main_pid: Number.isInteger(mainPid) && mainPid > 0 ? mainPid : null,
      duration_ms: Math.round(performance.now() - started),
    };
  },
});
