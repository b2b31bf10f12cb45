import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { lintSkill } from "../../skill/lint.ts";
import { buildSkill, effectiveClass } from "../../skill/registry.ts";
import { runSkill } from "../../skill/run.ts";
import { processAlive } from "../../skill/subprocess.ts";
import type { SkillContext } from "../../skill/types.ts";
import { validateParams } from "../../skill/validate.ts";
import exec from "./exec.ts";

const skill = buildSkill(exec);
const log = pino({ level: "silent" });
const dir = mkdtempSync(path.join(tmpdir(), "ongrid-exec-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(params: Record<string, unknown>, settings: Record<string, unknown> = {}, signal?: AbortSignal) {
  return runSkill(skill, validateParams(skill, params), { callId: "t", timeoutMs: 60_000, outputCapBytes: 4 * 1024 * 1024, log, settings, signal });
}

function ctx(signal: AbortSignal, settings: Record<string, unknown> = {}): SkillContext {
  return { signal, deadline: Date.now() + 60_000, callId: "t", log, settings, edgeId: "e1" };
}

async function waitForFile(file: string): Promise<string> {
  while (!existsSync(file) || readFileSync(file, "utf8").trim().split(" ").length < 2) await new Promise((r) => setTimeout(r, 20));
  return readFileSync(file, "utf8").trim();
}

describe("exec", () => {
  it("passes the new-tool checklist: the key-format finding is waived with the spec's reason, nothing else", () => {
    const findings = lintSkill(skill);
    expect(findings.filter((f) => f.severity === "error")).toEqual([]);
    expect(findings).toEqual([expect.objectContaining({ rule: "key-format", severity: "warning", message: expect.stringContaining("SPEC D5") })]);
  });

  it("classifies each call by its command (A6) while the static class stays dangerous", () => {
    expect(skill.meta.class).toBe("dangerous");
    expect(skill.meta.dynamicRisk).toBe(true);
    expect(effectiveClass(skill, { command: "df -h" })).toBe("safe");
    expect(effectiveClass(skill, { command: "systemctl restart nginx" })).toBe("mutating");
    expect(effectiveClass(skill, { command: "mkfs.ext4 /dev/sda" })).toBe("dangerous");
    expect(effectiveClass(skill, {})).toBe("dangerous");
  });

  it("runs `df -h` through /bin/sh and returns structured output with the risk", async () => {
    const r = await run({ command: "df -h /" });
    expect(r.success).toBe(true);
    const out = r.output as Record<string, unknown>;
    expect(out).toMatchObject({ command: "df -h /", exit_code: 0, stderr: "", stdout_truncated: false, risk: { class: "safe", level: "low" } });
    expect(out.stdout).toMatch(/Filesystem/);
    expect(out.stdout).toMatch(/ \/\n/);
  });

  it("reports a non-zero exit as a result with exit_code, and shell syntax works", async () => {
    const r = await run({ command: "echo one | tr a-z A-Z; echo oops >&2; exit 3" });
    expect(r.success).toBe(true);
    expect(r.output).toMatchObject({ exit_code: 3, stdout: "ONE\n", stderr: "oops\n" });
  });

  it("runs with a minimal environment in the given cwd", async () => {
    process.env.ONGRID_EXEC_TEST_SECRET = "s3cr3t";
    try {
      const r = await run({ command: 'echo "$ONGRID_EXEC_TEST_SECRET|$LANG|$PATH"; pwd', cwd: dir });
      expect((r.output as { stdout: string }).stdout).toBe(`|C.UTF-8|/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n${dir}\n`);
    } finally {
      delete process.env.ONGRID_EXEC_TEST_SECRET;
    }
    const bad = await run({ command: "pwd", cwd: path.join(dir, "missing") });
    expect(bad.error).toMatchObject({ code: "cwd_not_found" });
  });

  it("caps stdout at skills.exec.max_output_bytes", async () => {
    const r = await run({ command: "head -c 5000 /dev/zero | tr '\\0' x" }, { max_output_bytes: 1000 });
    expect(r.output).toMatchObject({ stdout: "x".repeat(1000), stdout_truncated: true, exit_code: 0 });
  });

  it("kills `sleep 60` and its shell when the call is cancelled, leaving no process", async () => {
    const pidFile = path.join(dir, "cancel.pids");
    const ac = new AbortController();
    const params = validateParams(skill, { command: `sleep 60 & echo "$$ $!" > ${pidFile}; wait` });
    const running = skill.execute(ctx(ac.signal), params);
    try {
      const [shell, sleeper] = (await waitForFile(pidFile)).split(" ").map(Number);
      expect(processAlive(shell)).toBe(true);
      expect(processAlive(sleeper)).toBe(true);
      ac.abort();
      await expect(running).rejects.toMatchObject({ code: "cancelled" });
      expect(processAlive(shell)).toBe(false);
      expect(processAlive(sleeper)).toBe(false);
    } finally {
      ac.abort();
      await running.catch(() => undefined);
    }
  });

  it("fails with command_timeout at the timeout param and leaves no process", async () => {
    const pidFile = path.join(dir, "timeout.pids");
    const r = await run({ command: `echo started; sleep 60 & echo "$$ $!" > ${pidFile}; wait`, timeout: "300ms" });
    expect(r.success).toBe(false);
    expect(r.error).toMatchObject({ code: "command_timeout" });
    expect(r.error!.message).toContain("last output: started");
    const [shell, sleeper] = (await waitForFile(pidFile)).split(" ").map(Number);
    expect(processAlive(shell)).toBe(false);
    expect(processAlive(sleeper)).toBe(false);
  });

  it("refuses bad params before running anything", () => {
    expect(() => validateParams(skill, {})).toThrow(/command/);
    expect(() => validateParams(skill, { command: "x".repeat(4097) })).toThrow(/command/);
    expect(() => validateParams(skill, { command: "ls", cwd: "relative/dir" })).toThrow(/cwd/);
    expect(() => validateParams(skill, { command: "ls", timeout: "2h" })).toThrow(/timeout/);
  });
});
