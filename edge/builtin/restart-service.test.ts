import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { lintSkill } from "../../skill/lint.ts";
import { buildSkill } from "../../skill/registry.ts";
import { runSkill } from "../../skill/run.ts";
import { validateParams } from "../../skill/validate.ts";
import restartService from "./restart-service.ts";

const skill = buildSkill(restartService);
const log = pino({ level: "silent" });
const dir = mkdtempSync(path.join(tmpdir(), "ongrid-restart-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const hasSystemd = existsSync("/run/systemd/system");

function run(params: Record<string, unknown>, settings: Record<string, unknown> = {}) {
  return runSkill(skill, validateParams(skill, params), { callId: "t", timeoutMs: 30_000, outputCapBytes: 65536, log, settings });
}

/** A stand-in systemctl that logs its argv and answers like systemd for a few units. */
function fakeSystemctl(): { bin: string; calls: () => string[] } {
  const bin = path.join(dir, "systemctl");
  const calls = path.join(dir, "calls.log");
  writeFileSync(
    bin,
    `#!/bin/sh
echo "$*" >> ${calls}
unit="$(eval echo \\\${$#})"
case "$1:$unit" in
  show:good.service) printf 'MainPID=4242\\nActiveState=active\\nSubState=running\\n' ;;
  show:flappy.service) printf 'MainPID=0\\nActiveState=failed\\nSubState=failed\\n' ;;
  *:good.service|*:flappy.service) exit 0 ;;
  *:missing.service) echo "Failed to restart missing.service: Unit missing.service not found." >&2; exit 5 ;;
  *:broken.service) echo 'Job for broken.service failed because the control process exited with error code.' >&2; exit 1 ;;
  reload:noreload.service) echo 'Failed to reload noreload.service: Job type reload is not applicable for unit noreload.service.' >&2; exit 1 ;;
  *:locked.service) echo 'Failed to restart locked.service: Access denied' >&2; exit 4 ;;
esac
`,
  );
  chmodSync(bin, 0o755);
  return { bin, calls: () => (existsSync(calls) ? readFileSync(calls, "utf8").trim().split("\n") : []) };
}

describe("restart_service", () => {
  it("passes the new-tool checklist with no finding", () => {
    expect(lintSkill(skill)).toEqual([]);
    expect(skill.meta.class).toBe("mutating");
  });

  it("refuses unit names that are options, paths or shell text before running anything", () => {
    for (const unit of ["-H evil", "--root=/", "nginx; reboot", "../x", "a b", "$(reboot)", "", ".hidden", "x".repeat(257)]) {
      expect(() => validateParams(skill, { unit }), unit).toThrow(/unit/);
    }
    expect(() => validateParams(skill, { unit: "nginx", mode: "stop" })).toThrow(/mode/);
    expect(validateParams(skill, { unit: "getty@tty1.service" })).toEqual({ unit: "getty@tty1.service", mode: "restart" });
  });

  it("refuses units that are not services (restarting reboot.target would reboot)", async () => {
    const fake = fakeSystemctl();
    for (const unit of ["reboot.target", "poweroff.target", "sshd.socket", "logrotate.timer", "home.mount"]) {
      const r = await run({ unit }, { systemctl: fake.bin });
      expect(r.error, unit).toMatchObject({ code: "invalid_argument" });
    }
    expect(fake.calls()).toEqual([]);
  });

  it.skipIf(hasSystemd)("reports systemd_unavailable with a hint on this host, whose PID 1 is not systemd (real systemctl)", async () => {
    const r = await run({ unit: "nginx" });
    expect(r.success).toBe(false);
    expect(r.error!.code).toBe("systemd_unavailable");
    expect(r.error!.message).toMatch(/PID 1 is/);
    expect(r.error!.hint).toMatch(/service NAME restart/);
  });

  it("runs systemctl without a shell, then reports the unit's state", async () => {
    const fake = fakeSystemctl();
    const r = await run({ unit: "good", mode: "reload" }, { systemctl: fake.bin });
    expect(r.success).toBe(true);
    expect(r.output).toMatchObject({ unit: "good.service", mode: "reload", active_state: "active", sub_state: "running", main_pid: 4242 });
    expect(fake.calls().slice(-2)).toEqual(["reload --no-ask-password -- good.service", "show --property=ActiveState,SubState,MainPID -- good.service"]);
    const flappy = await run({ unit: "flappy.service" }, { systemctl: fake.bin });
    expect(flappy.output).toMatchObject({ active_state: "failed", main_pid: null });
  });

  it("maps systemctl failures to codes with hints", async () => {
    const fake = fakeSystemctl();
    const cases: [string, string, string, RegExp][] = [
      ["missing", "restart", "unit_not_found", /list-units/],
      ["broken", "restart", "restart_failed", /read_journal/],
      ["noreload", "reload", "reload_unsupported", /restart/],
      ["locked", "restart", "permission_denied", /root|polkit/],
    ];
    for (const [unit, mode, code, hint] of cases) {
      const r = await run({ unit, mode }, { systemctl: fake.bin });
      expect(r.error, unit).toMatchObject({ code });
      expect(r.error!.hint).toMatch(hint);
    }
  });

  it.skipIf(hasSystemd)("without systemctl and without systemd says systemd_unavailable", async () => {
    const r = await run({ unit: "nginx" }, { systemctl: path.join(dir, "no-such-systemctl") });
    expect(r.error).toMatchObject({ code: "systemd_unavailable" });
  });
});
