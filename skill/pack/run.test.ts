import { accessSync, chmodSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { SkillError } from "../errors.ts";
import { createRegistry } from "../registry.ts";
import { runSkill, type RunOptions } from "../run.ts";
import { SYSTEM_PATH } from "../subprocess.ts";
import type { SkillContext } from "../types.ts";
import { validateParams } from "../validate.ts";
import { createPackSet } from "./loader.ts";
import { readManifest, type PackSkillSpec } from "./manifest.ts";
import { packEnv, runPack } from "./run.ts";

const root = realpathSync(mkdtempSync(path.join(tmpdir(), "ongrid-packrun-")));
const log = pino({ level: "silent" });
const registry = createRegistry({ log });

/** The interpreter as a pack sees it: looked up on the pack's PATH (SYSTEM_PATH), not the test runner's. */
function onPackPath(name: string): string | undefined {
  for (const d of SYSTEM_PATH.split(":")) {
    const p = path.join(d, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      /* next */
    }
  }
  return undefined;
}
// `#!/usr/bin/env node` only works when node is on the pack's PATH; otherwise use this very node.
const NODE_SHEBANG = onPackPath("node") ? "#!/usr/bin/env node" : `#!${process.execPath}`;
const PYTHON = onPackPath("python3");

beforeAll(() => {
  expect(PYTHON, `python3 must be on the pack PATH (${SYSTEM_PATH}) for the Python pack tests`).toBeDefined();
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

let seq = 0;
const BASE = { name: "Test pack", description: "A pack used by the tests. Use it when testing.", class: "safe", executable: "run" };

/** Writes a pack directory (files are made executable), reads its manifest (which must be clean) and returns the spec. */
function writePack(manifest: Record<string, unknown>, files: Record<string, string>): PackSkillSpec {
  const key = (manifest.key as string | undefined) ?? `test_pack_${++seq}`;
  const dir = path.join(root, key);
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text, { mode: 0o755 });
  }
  writeFileSync(path.join(dir, "skill.json"), JSON.stringify({ ...BASE, key, ...manifest }));
  const r = readManifest(dir, "host");
  expect(r.problems).toEqual([]);
  return r.skills[0];
}

/** A pack whose executable is this one script. */
function script(text: string, manifest: Record<string, unknown> = {}): PackSkillSpec {
  return writePack(manifest, { run: text });
}

/** Registers the pack the way the edge does (through a pack set) and returns its key. */
function load(spec: PackSkillSpec): string {
  const set = createPackSet({ dirs: [spec.dir], scope: "host", registry, log });
  const report = set.rescan();
  expect(report.problems).toEqual([]);
  expect(report.added).toEqual([spec.key]);
  return spec.key;
}

/** Runs a registered pack skill end to end: validation (defaults applied), then runSkill. */
function call(key: string, params: Record<string, unknown> = {}, opts: Partial<RunOptions> = {}) {
  const skill = registry.getOrThrow(key);
  return runSkill(skill, validateParams(skill, params), { callId: "call-42", timeoutMs: 20_000, outputCapBytes: 1_000_000, log, edgeId: "edge-7", ...opts });
}

function ctx(over: Partial<SkillContext> = {}): SkillContext {
  return { signal: new AbortController().signal, deadline: Date.now() + 20_000, callId: "call-1", log, settings: {}, edgeId: "edge-1", ...over };
}

/** runPack's rejection, which must be a SkillError. */
async function failure(spec: PackSkillSpec, params: Record<string, unknown> = {}, c: SkillContext = ctx()): Promise<SkillError> {
  const err = await runPack(spec, c, params).then(
    (v) => {
      throw new Error(`expected the pack to fail, got ${JSON.stringify(v)}`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SkillError);
  return err as SkillError;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The content of a file a pack writes, once complete: `echo $$ > f` creates the file before it
 * writes the line, so an empty or unterminated read is not an answer yet (an empty pid read as
 * Number("") = 0 would make the cleanup's kill(0, SIGKILL) kill the test runner's process group).
 */
async function waitForFile(file: string, ms = 10_000): Promise<string> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const text = existsSync(file) ? readFileSync(file, "utf8") : "";
    if (text.endsWith("\n") && text.trim()) return text.trim();
    await sleep(20);
  }
  throw new Error(`${file} did not appear within ${ms} ms`);
}

/**
 * True when the pid no longer runs: kill(pid, 0) fails with ESRCH, or the process is a zombie.
 * A grandchild orphaned by the kill is re-parented to pid 1, and an init that does not reap (as in
 * some containers) leaves it as a zombie, which kill(pid, 0) still finds although it runs nothing.
 */
function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ESRCH") return true;
    throw err;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
    return state === "Z" || state === "X";
  } catch {
    return true;
  }
}

async function expectAllGone(pids: number[], ms = 6_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until && !pids.every(gone)) await sleep(50);
  expect(pids.filter((p) => !gone(p)), "processes left running").toEqual([]);
}

/** True when the process ignores SIGTERM (bit 15 of SigIgn in /proc/PID/status). */
function ignoresTerm(pid: number): boolean {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("SigIgn:"))!;
  return (BigInt(`0x${line.split(/\s+/)[1]}`) & (1n << 14n)) !== 0n;
}

/** Pids we must not leave behind if an assertion fails half way. */
const started: number[] = [];
/** Records pids for cleanup; refuses anything but real pids (0 or -1 would signal whole groups). */
function track(...pids: number[]): void {
  for (const pid of pids) if (!Number.isInteger(pid) || pid <= 1) throw new Error(`not a pid to clean up: ${pid}`);
  started.push(...pids);
}
afterEach(() => {
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* gone */
    }
  }
});

/**
 * A bash pack whose leader, child and grandchild (a sleep) all ignore SIGTERM; it writes
 * "leader child grandchild" to the pid file named by its first argument, then waits forever.
 */
function stubbornPack(manifest: Record<string, unknown> = {}): { spec: PackSkillSpec; pidFile: string } {
  const pidFile = path.join(root, `pids-${++seq}`);
  const spec = script(
    [
      "#!/bin/bash",
      "trap '' TERM",
      'pidfile="$1"',
      `bash -c 'trap "" TERM; sleep 600 & echo $! > "$1.grandchild"; wait' _ "$pidfile" &`,
      "child=$!",
      'until [ -s "$pidfile.grandchild" ]; do sleep 0.02; done',
      'echo "$$ $child $(cat "$pidfile.grandchild")" > "$pidfile.tmp"',
      'mv "$pidfile.tmp" "$pidfile"',
      "echo 'stubborn pack waiting' >&2",
      "wait",
      "",
    ].join("\n"),
    { args: [pidFile], ...manifest },
  );
  return { spec, pidFile };
}

async function stubbornPids(pidFile: string): Promise<number[]> {
  const pids = (await waitForFile(pidFile)).split(" ").map(Number);
  expect(pids).toHaveLength(3);
  track(...pids);
  for (const pid of pids) expect(gone(pid)).toBe(false);
  // Only SIGKILL can end them: the test proves the escalation, not just a polite SIGTERM.
  expect(ignoresTerm(pids[0])).toBe(true);
  expect(ignoresTerm(pids[2])).toBe(true);
  return pids;
}

const ECHO_PARAMS = {
  target: { type: "string", description: "What to look at.", required: true },
  count: { type: "integer", description: "How many.", default: 3, min: 1 },
  tags: { type: "string_list", description: "Labels." },
};

const ECHO_PACKS: Record<string, string> = {
  bash: [
    "#!/bin/bash",
    "params=$(cat)",
    `printf '{"output": {"lang": "bash", "params": %s, "cwd": "%s", "args": ["%s", "%s"]}}\\n' "$params" "$PWD" "$1" "$2"`,
    "",
  ].join("\n"),
  python: [
    "#!/usr/bin/env python3",
    "import json, os, sys",
    "params = json.load(sys.stdin)",
    'print(json.dumps({"output": {"lang": "python", "params": params, "cwd": os.getcwd(), "args": sys.argv[1:]}}))',
    "",
  ].join("\n"),
  node: [
    NODE_SHEBANG,
    'let input = "";',
    'process.stdin.setEncoding("utf8");',
    "process.stdin.on('data', (d) => (input += d));",
    "process.stdin.on('end', () => {",
    "  const output = { lang: 'node', params: JSON.parse(input), cwd: process.cwd(), args: process.argv.slice(2) };",
    "  process.stdout.write(JSON.stringify({ output }) + '\\n');",
    "});",
    "",
  ].join("\n"),
};

describe("runPack: the result of a real pack", () => {
  test.each(Object.keys(ECHO_PACKS))("a %s pack gets the validated params on stdin and its output comes back in the envelope", async (lang) => {
    const spec = script(ECHO_PACKS[lang], { params: ECHO_PARAMS, args: ["--mode", "a b;$(id)"] });
    const key = load(spec);
    const env = await call(key, { target: "/var/log", tags: ["x", "ü ñ"] });
    expect(env.error).toBeUndefined();
    expect(env).toMatchObject({ success: true, truncated: false, edge_id: "edge-7" });
    expect(env.output).toEqual({
      lang,
      // The default was applied by validation before the pack ran.
      params: { target: "/var/log", count: 3, tags: ["x", "ü ñ"] },
      cwd: spec.dir,
      // Fixed args arrive verbatim, no shell in between.
      args: ["--mode", "a b;$(id)"],
    });
  });

  test("any JSON value is a valid output, including null, arrays and strings", async () => {
    for (const out of ["null", "[1, 2, 3]", '"done"', '{"nested": {"deep": [true]}}']) {
      const spec = script(`#!/bin/sh\ncat > /dev/null\necho '{"output": ${out}}'\n`);
      expect(await runPack(spec, ctx(), {})).toEqual(JSON.parse(out));
    }
  });

  test("stderr of a successful pack is not part of the result", async () => {
    const spec = script('#!/bin/sh\necho "progress: 50%" >&2\necho \'{"output": "ok"}\'\n');
    expect(await runPack(spec, ctx(), {})).toBe("ok");
  });

  test("a pack that never reads stdin still gets its result back, even with large params", async () => {
    const spec = script('#!/bin/sh\necho \'{"output": "ignored stdin"}\'\n', { params: { blob: { type: "string", description: "Big." } } });
    const key = load(spec);
    const env = await call(key, { blob: "x".repeat(2_000_000) });
    expect(env).toMatchObject({ success: true, output: "ignored stdin" });
  });

  test("a background job left by the pack is killed, and the result still comes back", async () => {
    const pidFile = path.join(root, `bg-${++seq}`);
    const spec = script(`#!/bin/bash\ntrap '' TERM\nsleep 600 &\necho $! > ${pidFile}\necho '{"output": "left a job"}'\n`);
    expect(await runPack(spec, ctx(), {})).toBe("left a job");
    const pid = Number(await waitForFile(pidFile));
    track(pid);
    await expectAllGone([pid]);
  });

  test("the working directory is the pack directory, also when the executable sits in a subdirectory", async () => {
    const spec = writePack({ executable: "bin/run" }, { "bin/run": '#!/bin/sh\nprintf \'{"output": {"cwd": "%s", "data": "%s"}}\' "$(pwd -P)" "$(cat data.txt)"\n', "data.txt": "from the pack dir" });
    expect(await runPack(spec, ctx(), {})).toEqual({ cwd: spec.dir, data: "from the pack dir" });
  });
});

describe("runPack: errors reported by the pack", () => {
  test("a pack's {error} keeps its code, message and hint", async () => {
    const spec = script(`#!/bin/sh\necho '{"error": {"code": "disk_not_found", "message": "no disk /dev/sdz", "hint": "list the disks first"}}'\n`);
    const key = load(spec);
    const env = await call(key);
    expect(env).toMatchObject({ success: false, output: null });
    expect(env.error).toEqual({ code: "disk_not_found", message: "no disk /dev/sdz", hint: "list the disks first" });
  });

  test("a pack's {error, output} fails the call and keeps what it has to show as the output, redacted", async () => {
    const spec = script(`#!/bin/sh\necho '{"error": {"code": "exit_status", "message": "the command exited with status 2"}, "output": {"exit_code": 2, "stderr": "token=ghp_abcdefghijklmnopqrstuvwxyz0123456789"}}'\nexit 1\n`);
    const env = await call(load(spec));
    expect(env.success).toBe(false);
    expect(env.error?.code).toBe("exit_status");
    expect(env.output).toMatchObject({ exit_code: 2 });
    expect(JSON.stringify(env.output)).not.toContain("ghp_abcdefghijklmnopqrstuvwxyz0123456789");
  });

  test.each(["cancelled", "internal", "pack_output_too_large", "pack_exit_nonzero"])("a pack cannot pass its error off as the platform's %s: it becomes pack_error", async (code) => {
    const spec = script(`#!/bin/sh\necho '{"error": {"code": "${code}", "message": "pretend", "hint": ""}}'\n`);
    const err = await failure(spec);
    expect({ code: err.code, message: err.message }).toEqual({ code: "pack_error", message: "pretend" });
  });

  test("a pack's {error} wins over its non-zero exit status", async () => {
    const spec = script(`#!/bin/sh\necho '{"error": {"code": "permission_needed", "message": "cannot read /etc/shadow", "hint": "run as root"}}'\necho oops >&2\nexit 4\n`);
    const err = await failure(spec);
    expect({ code: err.code, message: err.message, hint: err.hint }).toEqual({ code: "permission_needed", message: "cannot read /etc/shadow", hint: "run as root" });
  });

  test("an error code that is not lower_snake becomes pack_error; a missing message and hint get defaults", async () => {
    const spec = script(`#!/bin/sh\necho '{"error": {"code": "Bad Code!", "hint": 7}}'\n`);
    const err = await failure(spec);
    expect(err.code).toBe("pack_error");
    expect(err.message).toBe(`pack "${spec.key}" reported an error without a message`);
    expect(err.hint).toBe("");
  });
});

describe("runPack: failures of the pack", () => {
  test("a non-zero exit is pack_exit_nonzero with the exit code and stderr", async () => {
    const spec = script('#!/bin/bash\ncat > /dev/null\necho "collect: cannot open /proc/mdstat" >&2\nexit 3\n');
    const key = load(spec);
    const env = await call(key);
    expect(env.success).toBe(false);
    expect(env.error?.code).toBe("pack_exit_nonzero");
    expect(env.error?.message).toBe(`pack "${key}" exited with code 3; stderr: collect: cannot open /proc/mdstat`);
    expect(env.error?.hint).toMatch(/README/);
  });

  test("a non-zero exit with {output} on stdout is still a failure", async () => {
    const spec = script('#!/bin/sh\necho \'{"output": "looks fine"}\'\nexit 1\n');
    const err = await failure(spec);
    expect(err.code).toBe("pack_exit_nonzero");
    expect(err.message).toBe(`pack "${spec.key}" exited with code 1 with no stderr`);
  });

  test("only the tail of a long stderr is kept in the message", async () => {
    const spec = script(`#!/bin/bash\nhead -c 10000 /dev/zero | tr '\\0' a >&2\necho "LAST LINE" >&2\nexit 2\n`);
    const err = await failure(spec);
    expect(err.code).toBe("pack_exit_nonzero");
    expect(err.message).toMatch(/exited with code 2; stderr: …a+LAST LINE$/);
    const stderrPart = err.message.slice(err.message.indexOf("stderr: ") + "stderr: ".length);
    expect(stderrPart.length).toBe(2001);
  });

  test("a pack killed by a signal says which", async () => {
    const spec = script("#!/bin/sh\necho dying >&2\nkill -KILL $$\n");
    const err = await failure(spec);
    expect(err.code).toBe("pack_exit_nonzero");
    expect(err.message).toBe(`pack "${spec.key}" was killed by SIGKILL; stderr: dying`);
  });

  test("stdout that is not JSON is pack_bad_output, quoting its start and the stderr", async () => {
    const spec = script('#!/bin/sh\necho "Filesystem Size Used"\necho "warning: old df" >&2\n');
    const key = load(spec);
    const env = await call(key);
    expect(env.error?.code).toBe("pack_bad_output");
    expect(env.error?.message).toMatch(new RegExp(`^pack "${key}" did not write one JSON document to stdout: .*\\(stdout began "Filesystem Size Used\\\\n"\\); stderr: warning: old df$`));
    expect(env.error?.hint).toMatch(/\{"output": \.\.\.\}/);
  });

  test("empty stdout and two JSON documents are pack_bad_output", async () => {
    const empty = await failure(script("#!/bin/sh\nexit 0\n"));
    expect(empty.code).toBe("pack_bad_output");
    expect(empty.message).toMatch(/stdout was empty/);
    const two = await failure(script('#!/bin/sh\necho \'{"output": 1}\'\necho \'{"output": 2}\'\n'));
    expect(two.code).toBe("pack_bad_output");
    expect(two.message).toMatch(/did not write one JSON document/);
  });

  test.each([
    ['{"result": 42}', 'got an object with "result"'],
    ['{"output": 1, "logs": []}', 'got an object with "output", "logs"'],
    ['{"error": "boom"}', 'got an object with "error"'],
    ["[1, 2]", "got an array"],
    ["42", "got a number"],
    ["null", "got null"],
  ])("JSON without the result shape (%s) is pack_bad_output", async (doc, got) => {
    const err = await failure(script(`#!/bin/sh\necho '${doc}'\n`));
    expect(err.code).toBe("pack_bad_output");
    expect(err.message).toMatch(/wrote JSON without the result shape: expected \{"output": \.\.\.\} or \{"error": \{\.\.\.\}\}/);
    expect(err.message).toContain(got);
    expect(err.hint).toMatch(/wrap the result/);
  });

  test("stdout over output_cap_bytes is pack_output_too_large; exactly the cap is fine", async () => {
    // {"output": "<n x a>"}\n is n + 15 bytes.
    const over = script(`#!/bin/sh\nprintf '{"output": "%s"}\\n' "$(head -c 300 /dev/zero | tr '\\0' a)"\n`, { output_cap_bytes: 256 });
    const key = load(over);
    const env = await call(key);
    expect(env.error?.code).toBe("pack_output_too_large");
    expect(env.error?.message).toBe(`pack "${key}" wrote more than 256 bytes to stdout`);
    expect(env.error?.hint).toMatch(/output_cap_bytes/);

    const exact = script(`#!/bin/sh\nprintf '{"output": "%s"}\\n' "$(head -c 241 /dev/zero | tr '\\0' a)"\n`, { output_cap_bytes: 256 });
    expect(await runPack(exact, ctx(), {})).toBe("a".repeat(241));
    const oneMore = script(`#!/bin/sh\nprintf '{"output": "%s"}\\n' "$(head -c 242 /dev/zero | tr '\\0' a)"\n`, { output_cap_bytes: 256 });
    expect((await failure(oneMore)).code).toBe("pack_output_too_large");
  });

  test("a pack that keeps writing past the cap is stopped at once and reported as too large, not as a timeout", async () => {
    const pidFile = path.join(root, `flood-${++seq}`);
    const spec = script(`#!/bin/sh\necho $$ > ${pidFile}\nexec yes\n`, { output_cap_bytes: 1024, timeout: "20s" });
    const t0 = Date.now();
    const err = await failure(spec);
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(err.code).toBe("pack_output_too_large");
    expect(err.message).toBe(`pack "${spec.key}" wrote more than 1024 bytes to stdout`);
    expect(err.hint).not.toMatch(/timeout/);
    const pid = Number(await waitForFile(pidFile));
    track(pid);
    await expectAllGone([pid], 500);
  });

  test("the manifest timeout ends the pack with deadline_exceeded naming skill.json", async () => {
    const spec = script("#!/bin/sh\nsleep 30\n", { timeout: "300ms" });
    const key = load(spec);
    const t0 = Date.now();
    const env = await call(key, {}, { timeoutMs: 20_000 });
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(env.error?.code).toBe("deadline_exceeded");
    expect(env.error?.message).toBe(`pack "${key}" did not finish within 300 ms (its skill.json timeout); its process group was killed`);
    expect(env.error?.hint).toMatch(/raise timeout in skill\.json/);
  });

  test("a call deadline shorter than the manifest timeout ends the pack with deadline_exceeded naming the deadline", async () => {
    const spec = script("#!/bin/sh\necho 'started' >&2\nsleep 30\n");
    expect(spec.timeoutMs).toBe(30_000);
    const t0 = Date.now();
    const err = await failure(spec, {}, ctx({ deadline: Date.now() + 400 }));
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(err.code).toBe("deadline_exceeded");
    expect(err.message).toMatch(new RegExp(`^pack "${spec.key}" did not finish within \\d+ ms; its process group was killed; stderr: started$`));
    expect(err.message).not.toMatch(/skill\.json/);
    expect(Number(err.message.match(/within (\d+) ms/)![1])).toBeLessThanOrEqual(400);
    expect(err.hint).toMatch(/longer deadline/);
  });

  test("through runSkill, the call deadline ends the pack with deadline_exceeded", async () => {
    const key = load(script("#!/bin/sh\nsleep 30\n"));
    const t0 = Date.now();
    const env = await call(key, {}, { timeoutMs: 400 });
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(env).toMatchObject({ success: false, output: null });
    expect(env.error?.code).toBe("deadline_exceeded");
    expect(env.error?.message).toMatch(/did not finish within 400 ms/);
  });

  test("cancelling through the AbortSignal ends the pack with cancelled", async () => {
    const pidFile = path.join(root, `cancel-${++seq}`);
    const spec = script(`#!/bin/sh\necho $$ > ${pidFile}\nsleep 30\n`);
    const ac = new AbortController();
    const t0 = Date.now();
    const running = failure(spec, {}, ctx({ signal: ac.signal }));
    const pid = Number(await waitForFile(pidFile));
    track(pid);
    ac.abort();
    const err = await running;
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(err.code).toBe("cancelled");
    expect(err.message).toBe(`pack "${spec.key}" was cancelled; its process group was killed`);
    expect(gone(pid)).toBe(true);
  });

  test("an already aborted signal does not start the pack", async () => {
    const marker = path.join(root, `never-${++seq}`);
    const spec = script(`#!/bin/sh\ntouch ${marker}\necho '{"output": 1}'\n`);
    const err = await failure(spec, {}, ctx({ signal: AbortSignal.abort() }));
    expect(err.code).toBe("cancelled");
    expect(existsSync(marker)).toBe(false);
  });

  test("an executable deleted after load is pack_start_failed (ENOENT)", async () => {
    const spec = script('#!/bin/sh\necho \'{"output": 1}\'\n');
    const key = load(spec);
    expect((await call(key)).success).toBe(true);
    unlinkSync(spec.executable);
    const env = await call(key);
    expect(env.error?.code).toBe("pack_start_failed");
    expect(env.error?.message).toBe(`pack "${key}": cannot start ${spec.executable}: ENOENT`);
    expect(env.error?.hint).toMatch(/missing; reinstall the pack and rescan/);
  });

  test("an executable that lost its execute bit after load is pack_start_failed (EACCES)", async () => {
    const spec = script('#!/bin/sh\necho \'{"output": 1}\'\n');
    chmodSync(spec.executable, 0o644);
    const err = await failure(spec);
    expect(err.code).toBe("pack_start_failed");
    expect(err.message).toBe(`pack "${spec.key}": cannot start ${spec.executable}: EACCES`);
    expect(err.hint).toMatch(/permissions/);
  });

  test("a missing interpreter is pack_start_failed", async () => {
    const err = await failure(script("#!/nonexistent/bin/python9\nprint(1)\n"));
    expect(err.code).toBe("pack_start_failed");
    expect(err.message).toMatch(/ENOENT$/);
    expect(err.hint).toMatch(/or its interpreter/);
  });

  test("a deleted pack directory is pack_start_failed", async () => {
    const spec = script('#!/bin/sh\necho \'{"output": 1}\'\n');
    rmSync(spec.dir, { recursive: true });
    const err = await failure(spec);
    expect(err.code).toBe("pack_start_failed");
    expect(err.message).toMatch(/cannot start .*: ENOENT/);
  });
});

describe("runPack: the environment", () => {
  const SECRET = "PACKTEST_SECRET_TOKEN";
  const ALLOWED = "PACKTEST_ALLOWED";
  const UNSET = "PACKTEST_UNSET";
  beforeAll(() => {
    process.env[SECRET] = "s3cr3t-value";
    process.env[ALLOWED] = "allowed-value";
    delete process.env[UNSET];
  });
  afterAll(() => {
    delete process.env[SECRET];
    delete process.env[ALLOWED];
  });

  test("only the fixed variables and the allow-listed ones reach the pack", async () => {
    expect(process.env.HOME).toBeDefined();
    const spec = script(`${NODE_SHEBANG}\nprocess.stdout.write(JSON.stringify({ output: process.env }));\n`, { env: [ALLOWED, UNSET] });
    const key = load(spec);
    const before = Date.now();
    const env = await call(key, {}, { timeoutMs: 15_000, callId: "call-env-1", edgeId: "edge-env" });
    expect(env.error).toBeUndefined();
    const seen = env.output as Record<string, string>;
    expect(Object.keys(seen).sort()).toEqual(["LANG", "ONGRID_CALL_ID", "ONGRID_DEADLINE_UNIX_MS", "ONGRID_EDGE_ID", "ONGRID_SKILL_KEY", "PATH", ALLOWED].sort());
    expect(seen).toMatchObject({
      PATH: SYSTEM_PATH,
      LANG: "C.UTF-8",
      ONGRID_SKILL_KEY: key,
      ONGRID_CALL_ID: "call-env-1",
      ONGRID_EDGE_ID: "edge-env",
      [ALLOWED]: "allowed-value",
    });
    const deadline = Number(seen.ONGRID_DEADLINE_UNIX_MS);
    expect(deadline).toBeGreaterThanOrEqual(before + 15_000);
    expect(deadline).toBeLessThanOrEqual(Date.now() + 15_000);
    expect(seen[SECRET]).toBeUndefined();
    expect(seen.HOME).toBeUndefined();
  });

  test("ONGRID_DEADLINE_UNIX_MS is the skill.json timeout when that ends before the call's deadline", async () => {
    const spec = script(`#!/bin/sh\nprintf '{"output": "%s"}' "$ONGRID_DEADLINE_UNIX_MS"\n`, { timeout: "2s" });
    const before = Date.now();
    const told = Number(await runPack(spec, ctx({ deadline: Date.now() + 60_000 }), {}));
    expect(told).toBeGreaterThanOrEqual(before + 2000);
    expect(told).toBeLessThanOrEqual(Date.now() + 2000);
  });

  test("bash and python packs do not see a variable that is not allow-listed either", async () => {
    const bash = script(`#!/bin/bash\nif [ -n "\${${SECRET}+set}" ]; then v=leaked; else v=absent; fi\nprintf '{"output": {"secret": "%s", "allowed": "%s"}}' "$v" "$${ALLOWED}"\n`, { env: [ALLOWED] });
    expect(await runPack(bash, ctx(), {})).toEqual({ secret: "absent", allowed: "allowed-value" });
    const py = script(`#!/usr/bin/env python3\nimport json, os\nprint(json.dumps({"output": {"secret": os.environ.get("${SECRET}", "absent"), "allowed": os.environ.get("${ALLOWED}")}}))\n`, { env: [ALLOWED] });
    expect(await runPack(py, ctx(), {})).toEqual({ secret: "absent", allowed: "allowed-value" });
  });

  test("packEnv: only listed variables are taken from the agent's environment; PATH is the system PATH unless listed", () => {
    const spec = script("#!/bin/sh\n", { env: ["PATH_EXTRA"] });
    const e = packEnv(spec, ctx({ callId: "c-9", deadline: 1234, edgeId: "e-9" }), { PATH: "/evil", PATH_EXTRA: "x", LD_PRELOAD: "/tmp/x.so" });
    expect(e).toEqual({ PATH: SYSTEM_PATH, LANG: "C.UTF-8", ONGRID_SKILL_KEY: spec.key, ONGRID_CALL_ID: "c-9", ONGRID_DEADLINE_UNIX_MS: "1234", ONGRID_EDGE_ID: "e-9", PATH_EXTRA: "x" });
  });

  test("packEnv: a manifest cannot pass through ONGRID_ variables, neither the agent's secrets nor a fake call identity", () => {
    // The manifest schema refuses ONGRID_* names (manifest.test.ts); packEnv drops them as well.
    const spec = { ...script("#!/bin/sh\n", { env: ["TZ"] }), env: ["ONGRID_EDGE_TOKEN", "ONGRID_CALL_ID", "ONGRID_EDGE_ID", "ONGRID_DEADLINE_UNIX_MS", "TZ"] };
    const e = packEnv(spec, ctx({ callId: "real-call", deadline: 99, edgeId: "real-edge" }), {
      ONGRID_EDGE_TOKEN: "edge-secret",
      ONGRID_CALL_ID: "spoofed",
      ONGRID_EDGE_ID: "spoofed",
      ONGRID_DEADLINE_UNIX_MS: "0",
      TZ: "UTC",
    });
    expect(e).toEqual({ PATH: SYSTEM_PATH, LANG: "C.UTF-8", ONGRID_SKILL_KEY: spec.key, ONGRID_CALL_ID: "real-call", ONGRID_DEADLINE_UNIX_MS: "99", ONGRID_EDGE_ID: "real-edge", TZ: "UTC" });
  });

  test("the edge token does not reach a pack that lists it", async () => {
    process.env.ONGRID_EDGE_TOKEN = "edge-token-secret";
    try {
      const spec = { ...script(`#!/bin/sh\nprintf '{"output": "%s"}' "\${ONGRID_EDGE_TOKEN:-absent}"\n`), env: ["ONGRID_EDGE_TOKEN"] };
      expect(await runPack(spec, ctx(), {})).toBe("absent");
    } finally {
      delete process.env.ONGRID_EDGE_TOKEN;
    }
  });
});

describe("runPack: the whole process tree is killed", () => {
  test("on the manifest timeout, a grandchild that ignores SIGTERM is killed with its group", async () => {
    const { spec, pidFile } = stubbornPack({ timeout: "1s" });
    const key = load(spec);
    const running = call(key, {}, { timeoutMs: 30_000 });
    const pids = await stubbornPids(pidFile);
    const env = await running;
    expect(env.error?.code).toBe("deadline_exceeded");
    expect(env.error?.message).toMatch(/did not finish within 1000 ms \(its skill\.json timeout\); its process group was killed; stderr: stubborn pack waiting$/);
    await expectAllGone(pids);
  });

  test("on cancel through runSkill, a grandchild that ignores SIGTERM is killed with its group", async () => {
    const { spec, pidFile } = stubbornPack();
    const key = load(spec);
    const ac = new AbortController();
    const running = call(key, {}, { timeoutMs: 30_000, signal: ac.signal });
    const pids = await stubbornPids(pidFile);
    ac.abort();
    const env = await running;
    expect(env.error?.code).toBe("cancelled");
    expect(env.error?.message).toMatch(/was cancelled/);
    await expectAllGone(pids);
  });

  test("on cancel through runPack, the group is gone by the time it rejects", async () => {
    const { spec, pidFile } = stubbornPack();
    const ac = new AbortController();
    const running = failure(spec, {}, ctx({ signal: ac.signal }));
    const pids = await stubbornPids(pidFile);
    ac.abort();
    const err = await running;
    expect(err.code).toBe("cancelled");
    // runProcess waits (bounded) for the SIGKILLed group before it resolves.
    await expectAllGone(pids, 500);
  });

  test("on the call deadline through runSkill, a grandchild that ignores SIGTERM is killed with its group", async () => {
    const { spec, pidFile } = stubbornPack();
    const key = load(spec);
    const running = call(key, {}, { timeoutMs: 1_500 });
    const pids = await stubbornPids(pidFile);
    const env = await running;
    expect(env.error?.code).toBe("deadline_exceeded");
    await expectAllGone(pids);
  });
});
