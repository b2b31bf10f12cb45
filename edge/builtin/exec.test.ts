import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { lintSkill } from "../../skill/lint.ts";
import { buildSkill, effectiveClass } from "../../skill/registry.ts";
import { runSkill } from "../../skill/run.ts";
import { setShellPolicy } from "../../skill/risk/index.ts";
import { DEFAULT_READ_ROOTS } from "../../skill/risk/paths.ts";
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

  it("runs `df -h` without a shell and returns structured output with the risk and what ran", async () => {
    const r = await run({ command: "df -h /" });
    expect(r.success).toBe(true);
    const out = r.output as Record<string, unknown>;
    expect(out).toMatchObject({ command: "df -h /", exit_code: 0, stderr: "", stdout_truncated: false, risk: { class: "safe", level: "low" }, ran: { via: "argv", stages: 1 } });
    expect(out.stdout).toMatch(/Filesystem/);
    expect(out.stdout).toMatch(/ \/\n/);
  });

  it("fails a call whose command exits non-zero (exit_status), keeping exit_code, stdout and stderr; shell syntax works", async () => {
    const r = await run({ command: "echo one | tr a-z A-Z; echo oops >&2; exit 3" });
    expect(r.success).toBe(false);
    expect(r.error).toMatchObject({ code: "exit_status", message: "the command exited with status 3: oops" });
    expect(r.error?.hint).toMatch(/stderr and stdout/);
    expect(r.output).toMatchObject({ exit_code: 3, stdout: "ONE\n", stderr: "oops\n" });
    const killed = await run({ command: "kill -TERM $$" });
    expect(killed.success).toBe(false);
    expect(killed.error?.message).toMatch(/was killed by SIGTERM/);
    expect(killed.output).toMatchObject({ signal: "SIGTERM" });
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

  describe("a safe command runs exactly what was classified (A6)", () => {
    const isRoot = process.getuid?.() === 0;
    let roots: string;
    const setRoots = () => {
      roots = mkdtempSync(path.join(tmpdir(), "ongrid-exec-roots-"));
      chmodSync(roots, 0o755);
      setShellPolicy({ readRoots: [roots] });
    };
    afterAll(() => setShellPolicy({ readRoots: DEFAULT_READ_ROOTS }));

    it("spawns the parsed argv itself: the command's parent is the edge, not a shell", async () => {
      const r = await run({ command: "cat /proc/self/stat" });
      const stat = (r.output as { stdout: string }).stdout;
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      expect(ppid).toBe(process.pid);
      expect(r.output).toMatchObject({ ran: { via: "argv", stages: 1 } });
    });

    it("wires a pipeline stdout to stdin and passes quoted shell syntax as plain words", async () => {
      const r = await run({ command: "echo 'a;b $(id) `id` * ~' | wc -c" });
      expect(r.output).toMatchObject({ exit_code: 0, stdout: "19\n", ran: { via: "argv", stages: 2 } });
      const three = await run({ command: "echo one two three | cut -d' ' -f2 | wc -c" });
      expect((three.output as { stdout: string }).stdout).toBe("4\n");
    });

    it("reports the last stage's exit status, like sh", async () => {
      setRoots();
      const r = await run({ command: `cat ${roots}/missing | wc -l` });
      expect(r.output).toMatchObject({ exit_code: 0, stdout: "0\n" });
      const last = await run({ command: `cat ${roots}/missing` });
      expect(last.success).toBe(false);
      expect(last.error?.code).toBe("exit_status");
      expect(last.output).toMatchObject({ exit_code: 1 });
      expect((last.output as { stderr: string }).stderr).toMatch(/No such file/);
    });

    it("kills every stage of a pipeline at the timeout", async () => {
      const mark = `${Date.now() % 100000}`;
      const r = await run({ command: `sleep 61.${mark} | sleep 62.${mark}`, timeout: "300ms" });
      expect(r.error).toMatchObject({ code: "command_timeout" });
      const alive = readdirSync("/proc").filter((p) => /^\d+$/.test(p)).filter((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, "utf8").includes(`.${mark}`);
        } catch {
          return false;
        }
      });
      expect(alive).toEqual([]);
    });

    it("refuses a read operand that resolves outside the read roots through a symlink", async () => {
      setRoots();
      writeFileSync(path.join(roots, "app.log"), "line\n");
      chmodSync(path.join(roots, "app.log"), 0o644);
      symlinkSync("/etc/shadow", path.join(roots, "shadow-link.log"));
      symlinkSync("/etc", path.join(roots, "etc-dir"));
      const ok = await run({ command: `cat ${roots}/app.log` });
      expect(ok.output).toMatchObject({ stdout: "line\n" });
      for (const p of ["shadow-link.log", "etc-dir/ssh/sshd_config", "etc-dir/ssl/certs"]) {
        const r = await run({ command: `cat ${roots}/${p}` });
        expect(r.error, p).toMatchObject({ code: "permission_denied" });
        expect(r.error!.message).toMatch(/resolves to \/etc/);
      }
    });

    it.runIf(isRoot)("runs as the unprivileged safe_run_as user when the edge is root, so a classifier mistake is not root", async () => {
      setRoots();
      writeFileSync(path.join(roots, "root-only.log"), "secret\n", { mode: 0o600 });
      const r = await run({ command: "id -u" });
      expect(r.output).toMatchObject({ stdout: "65534\n", ran: { as: "nobody" } });
      const denied = await run({ command: `cat ${roots}/root-only.log` });
      expect(denied.success).toBe(false);
      expect(denied.output).toMatchObject({ exit_code: 1, stdout: "" });
      expect((denied.output as { stderr: string }).stderr).toMatch(/Permission denied/);
      const self = await run({ command: "id -u" }, { safe_run_as: "" });
      expect((self.output as { stdout: string }).stdout).toBe("0\n");
      const missing = await run({ command: "id -u" }, { safe_run_as: "no-such-user-xyz" });
      expect(missing.error).toMatchObject({ code: "not_configured" });
      // An approved (non-safe) command runs as approved, through sh, as the edge's user.
      const approved = await run({ command: "id -u; true" });
      expect(approved.output).toMatchObject({ stdout: "0\n", ran: { via: "sh" } });
    });
  });
});
