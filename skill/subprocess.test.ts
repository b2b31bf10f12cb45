import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ProcessStartError, processAlive, runPipeline, runProcess } from "./subprocess.ts";

const dir = mkdtempSync(path.join(tmpdir(), "ongrid-subprocess-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A script whose child ignores SIGTERM (and so does the sleep it execs), writing both pids to a file. */
function stubbornScript(name: string): { script: string; pidFile: string } {
  const pidFile = path.join(dir, `${name}.pids`);
  const script = path.join(dir, `${name}.sh`);
  writeFileSync(
    script,
    // The grandchild writes "leader grandchild" itself once its trap is set, then becomes sleep.
    [`sh -c 'trap "" TERM; echo "$PPID $$" > ${pidFile}.tmp && mv ${pidFile}.tmp ${pidFile}; exec sleep 1000' &`, "wait"].join("\n"),
  );
  return { script, pidFile };
}

async function waitForFile(file: string): Promise<string> {
  for (;;) {
    if (existsSync(file)) return readFileSync(file, "utf8").trim();
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** True when the process ignores SIGTERM (bit 15 of SigIgn in /proc/PID/status). */
function ignoresTerm(pid: number): boolean {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("SigIgn:"))!;
  return (BigInt("0x" + line.split(/\s+/)[1]) & (1n << 14n)) !== 0n;
}

describe("runProcess", () => {
  it("runs without a shell and returns exit code, stdout and stderr; a non-zero exit is a result", async () => {
    const r = await runProcess({ file: "/bin/sh", args: ["-c", 'echo out; echo err >&2; echo "$0 $1"; exit 3', "zero", "a b;c"], timeoutMs: 10_000, maxOutputBytes: 1024 });
    expect(r).toMatchObject({ exitCode: 3, signal: null, stdout: "out\nzero a b;c\n", stderr: "err\n", timedOut: false, cancelled: false, stdoutTruncated: false });
    // Arguments are passed verbatim, never through a shell.
    const lit = await runProcess({ file: "echo", args: ["$(id)", "; reboot"], timeoutMs: 10_000, maxOutputBytes: 1024 });
    expect(lit.stdout).toBe("$(id) ; reboot\n");
  });

  it("feeds input on stdin and gives /dev/null otherwise", async () => {
    const r = await runProcess({ file: "cat", input: "hello\n", timeoutMs: 10_000, maxOutputBytes: 1024 });
    expect(r.stdout).toBe("hello\n");
    const none = await runProcess({ file: "cat", timeoutMs: 10_000, maxOutputBytes: 1024 });
    expect(none).toMatchObject({ exitCode: 0, stdout: "", timedOut: false });
  });

  it("passes only the given environment and cwd", async () => {
    const r = await runProcess({ file: "/bin/sh", args: ["-c", "echo $FOO:$HOME:$(pwd)"], env: { FOO: "bar", PATH: "/usr/bin:/bin" }, cwd: dir, timeoutMs: 10_000, maxOutputBytes: 1024 });
    expect(r.stdout.trim()).toBe(`bar::${dir}`);
  });

  it("caps each stream and says so", async () => {
    const r = await runProcess({ file: "/bin/sh", args: ["-c", "head -c 100000 /dev/zero | tr '\\0' a; head -c 10 /dev/zero | tr '\\0' b >&2"], timeoutMs: 10_000, maxOutputBytes: 1000 });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe("a".repeat(1000));
    expect(r.stdoutTruncated).toBe(true);
    expect(r.stderr).toBe("b".repeat(10));
    expect(r.stderrTruncated).toBe(false);
  });

  it("throws ProcessStartError for a missing executable or working directory", async () => {
    await expect(runProcess({ file: "/nonexistent/tool", timeoutMs: 1000, maxOutputBytes: 10 })).rejects.toMatchObject({ name: "ProcessStartError", code: "ENOENT", subject: "file" });
    await expect(runProcess({ file: "true", cwd: path.join(dir, "missing"), timeoutMs: 1000, maxOutputBytes: 10 })).rejects.toBeInstanceOf(ProcessStartError);
    await expect(runProcess({ file: "true", cwd: path.join(dir, "missing"), timeoutMs: 1000, maxOutputBytes: 10 })).rejects.toMatchObject({ subject: "cwd" });
  });

  it("on abort kills the whole process group, including a grandchild that ignores SIGTERM", async () => {
    const { script, pidFile } = stubbornScript("abort");
    const ac = new AbortController();
    const running = runProcess({ file: "/bin/sh", args: [script], signal: ac.signal, timeoutMs: 120_000, maxOutputBytes: 1024, killGraceMs: 300 });
    try {
      const [leader, grandchild] = (await waitForFile(pidFile)).split(" ").map(Number);
      expect(processAlive(leader)).toBe(true);
      expect(processAlive(grandchild)).toBe(true);
      expect(ignoresTerm(grandchild)).toBe(true);
      ac.abort();
      const r = await running;
      expect(r).toMatchObject({ cancelled: true, timedOut: false, pid: leader });
      expect(processAlive(leader)).toBe(false);
      expect(processAlive(grandchild)).toBe(false);
    } finally {
      ac.abort();
      await running;
    }
  });

  it("on timeout kills the whole process group and reports timedOut", async () => {
    const { script, pidFile } = stubbornScript("timeout");
    const r = await runProcess({ file: "/bin/sh", args: [script], timeoutMs: 500, maxOutputBytes: 1024, killGraceMs: 300 });
    const [leader, grandchild] = (await waitForFile(pidFile)).split(" ").map(Number);
    expect(r).toMatchObject({ timedOut: true, cancelled: false });
    expect(processAlive(leader)).toBe(false);
    expect(processAlive(grandchild)).toBe(false);
  });

  it("ends background jobs left behind when the leader exits, instead of waiting for them", async () => {
    const r = await runProcess({ file: "/bin/sh", args: ["-c", "sleep 1000 & echo $!"], timeoutMs: 120_000, maxOutputBytes: 1024, killGraceMs: 300 });
    expect(r).toMatchObject({ exitCode: 0, timedOut: false, cancelled: false });
    expect(processAlive(Number(r.stdout.trim()))).toBe(false);
  });

  it("does not start when the signal is already aborted", async () => {
    const marker = path.join(dir, "should-not-exist");
    const r = await runProcess({ file: "touch", args: [marker], signal: AbortSignal.abort(), timeoutMs: 1000, maxOutputBytes: 10 });
    expect(r).toMatchObject({ cancelled: true, exitCode: null });
    expect(r.pid).toBeUndefined();
    expect(existsSync(marker)).toBe(false);
  });
});

describe("runPipeline", () => {
  const env = { PATH: "/usr/bin:/bin" };
  it("wires stage stdout to the next stage's stdin and reports the last stage's status, as sh does", async () => {
    const r = await runPipeline([{ file: "printf", args: ["b\\na\\nb\\n"] }, { file: "sort" }, { file: "uniq", args: ["-c"] }], { timeoutMs: 10_000, maxOutputBytes: 1000, env });
    expect(r.stdout.split("\n").map((l) => l.trim())).toEqual(["1 a", "2 b", ""]);
    expect(r.exitCode).toBe(0);
    const failedFirst = await runPipeline([{ file: "false" }, { file: "true" }], { timeoutMs: 10_000, maxOutputBytes: 1000, env });
    expect(failedFirst.exitCode).toBe(0);
    const failedLast = await runPipeline([{ file: "true" }, { file: "false" }], { timeoutMs: 10_000, maxOutputBytes: 1000, env });
    expect(failedLast.exitCode).toBe(1);
  });

  it("ends a writer whose reader stopped early (cat /dev/zero | head -c 5), instead of leaving it blocked until the timeout", async () => {
    const r = await runPipeline([{ file: "cat", args: ["/dev/zero"] }, { file: "head", args: ["-c", "5"] }, { file: "wc", args: ["-c"] }], { timeoutMs: 20_000, maxOutputBytes: 1000, env });
    expect(r).toMatchObject({ stdout: "5\n", exitCode: 0, timedOut: false });
  });

  it("refuses a stage that cannot start, naming it, and leaves the stages already started killed", async () => {
    await expect(runPipeline([{ file: "sleep", args: ["30"] }, { file: "/nonexistent/tool" }], { timeoutMs: 10_000, maxOutputBytes: 1000, env })).rejects.toThrow(/\/nonexistent\/tool: not found/);
  });
});
