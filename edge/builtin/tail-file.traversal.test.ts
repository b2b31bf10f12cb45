/** S4: tail_file's confinement to its allowed roots against path traversal, symlink and /proc tricks. */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, openSync, closeSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSkill } from "../../skill/registry.ts";
import { validateParams } from "../../skill/validate.ts";
import { runSkill } from "../../skill/run.ts";
import tailFile from "./tail-file.ts";

const skill = buildSkill(tailFile);
const log = pino({ level: "silent" });
const SECRET = "TOP-SECRET-OUTSIDE-CONTENT";

let base: string;
let root: string;
let outside: string;

const opts = () => ({ callId: "t", timeoutMs: 10_000, outputCapBytes: 1024 * 1024, log, settings: { allowed_roots: [root] } });
/** Through param validation, as a caller's request goes. */
const run = (params: Record<string, unknown>) => runSkill(skill, validateParams(skill, params), opts());
/** Straight to the skill, skipping param validation (defence in depth). */
const runRaw = (path: string) => runSkill(skill, { path, lines: 10 }, opts());

type Env = Awaited<ReturnType<typeof run>>;

/** A refusal that names the rule, points at the roots, and says nothing about the outside. */
function expectRefused(r: Env, label: string) {
  expect(r.success, label).toBe(false);
  expect(r.error, label).toMatchObject({ code: "path_not_allowed" });
  expect(r.error!.message, label).toMatch(/outside the allowed roots|symlink loop/);
  expect(r.error!.hint, label).toContain(root);
  const text = JSON.stringify(r);
  expect(text, label).not.toContain(SECRET);
  expect(text, label).not.toContain("secret.txt\\\" (");
  expect(text, label).not.toMatch(/resolves to|really|does not exist|ENOENT/);
}

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), "ongrid-tail-trav-"));
  root = join(base, "logs");
  outside = join(base, "outside");
  mkdirSync(join(root, "a", "b"), { recursive: true });
  mkdirSync(join(outside, "deep"), { recursive: true });
  writeFileSync(join(root, "app.log"), "inside 1\ninside 2\n");
  writeFileSync(join(outside, "secret.txt"), `${SECRET}\n`);
  writeFileSync(join(outside, "deep", "secret.txt"), `${SECRET}\n`);
  // Symlinks out: a file, a directory, a chain, a dangling one, a loop, a relative one, into /proc.
  symlinkSync(join(outside, "secret.txt"), join(root, "file-out.log"));
  symlinkSync(join(outside, "nope.txt"), join(root, "dangling-out.log"));
  symlinkSync(outside, join(root, "dir-out"));
  symlinkSync(join(root, "chain2.log"), join(root, "chain1.log"));
  symlinkSync(join(root, "a", "chain3.log"), join(root, "chain2.log"));
  symlinkSync("../../outside/secret.txt", join(root, "a", "chain3.log")); // relative, from logs/a/
  symlinkSync(join(root, "loop2.log"), join(root, "loop1.log"));
  symlinkSync(join(root, "loop1.log"), join(root, "loop2.log"));
  symlinkSync("..", join(root, "a", "up")); // logs/a/up -> logs: inside
  symlinkSync("../..", join(root, "a", "b", "upup")); // logs/a/b/upup -> logs: inside
  symlinkSync("../../..", join(root, "a", "b", "up3")); // -> base: outside
  symlinkSync("/proc/self/root/etc/passwd", join(root, "proc-root.log"));
  symlinkSync("/proc/self/cwd", join(root, "proc-cwd"));
  // Inside: a symlink, a relative one, and weird but legal names (taken literally, never decoded).
  symlinkSync(join(root, "app.log"), join(root, "a", "inner.log"));
  symlinkSync("../app.log", join(root, "a", "rel-inner.log"));
  for (const name of ["..foo", "%2e%2e%2fetc%2fpasswd", "..%c0%afetc", "%00.log", "sp ace \\ 'q\" ü 日本 .log", "-rf", "…..log"]) {
    writeFileSync(join(root, name), `weird ${name}\n`);
  }
});

afterAll(() => rmSync(base, { recursive: true, force: true }));

describe("tail_file traversal (S4)", () => {
  it("refuses .. in its many forms", async () => {
    const forms = [
      `${root}/a/../../outside/secret.txt`,
      `${root}/a/b/../../../outside/secret.txt`,
      `${root}/..`,
      `${root}/a/../..`,
      `${root}//../outside/secret.txt`,
      `${root}/./../outside/secret.txt`,
      `${root}/a/./../.././../../../../etc/passwd`,
      `${root}/../logs/../outside/secret.txt`,
      `${root}/../logs-sibling/x.log`,
      `${root}////..//..//..//etc/passwd`,
    ];
    for (const p of forms) expectRefused(await run({ path: p }), p);
  });

  it("refuses absolute paths outside, existing or not, with the same answer", async () => {
    const a = await run({ path: join(outside, "secret.txt") });
    const b = await run({ path: join(outside, "does-not-exist.txt") });
    for (const [r, p] of [[a, "exists"], [b, "missing"]] as const) expectRefused(r, p);
    expect(a.error!.code).toBe(b.error!.code);
    expect(a.error!.message.replace("secret.txt", "X")).toBe(b.error!.message.replace("does-not-exist.txt", "X"));
    for (const p of ["/etc/passwd", "/etc/shadow", "/.", "/root/.ssh/id_rsa", `${base}/logsX/app.log`]) expectRefused(await run({ path: p }), p);
  });

  it("refuses symlinks out: a file, a directory, a chain, a relative link, a loop", async () => {
    for (const p of [
      join(root, "file-out.log"),
      join(root, "dir-out", "secret.txt"),
      join(root, "dir-out", "deep", "secret.txt"),
      join(root, "chain1.log"),
      join(root, "a", "chain3.log"),
      join(root, "a", "b", "up3", "outside", "secret.txt"),
      join(root, "loop1.log"),
    ]) {
      expectRefused(await run({ path: p }), p);
    }
    expect((await run({ path: join(root, "loop1.log") })).error!.message).toMatch(/symlink loop/);
  });

  it("does not reveal through a symlink whether its outside target exists", async () => {
    const cases = [join(root, "file-out.log"), join(root, "dangling-out.log"), join(root, "dir-out", "secret.txt"), join(root, "dir-out", "nope.txt"), join(root, "dir-out", "nodir", "x")];
    const answers = await Promise.all(cases.map((p) => run({ path: p })));
    answers.forEach((r, i) => expectRefused(r, cases[i]!));
    const shapes = answers.map((r, i) => r.error!.message.replace(JSON.stringify(cases[i]), "P"));
    expect(new Set(shapes).size).toBe(1);
  });

  it("refuses /proc paths: self/root, self/cwd, <pid>/fd/N pointing outside, self/environ, and symlinks into /proc", async () => {
    const fd = openSync(join(outside, "secret.txt"), "r");
    let child: ChildProcess | undefined;
    try {
      child = spawn("sleep", ["30"], { cwd: outside, stdio: "ignore" });
      for (const p of [
        "/proc/self/root/etc/passwd",
        `/proc/self/root${join(outside, "secret.txt")}`,
        "/proc/self/cwd/package.json",
        `/proc/self/fd/${fd}`,
        `/proc/${process.pid}/fd/${fd}`,
        `/proc/${child.pid}/cwd/secret.txt`,
        "/proc/self/environ",
        "/proc/1/environ",
        join(root, "proc-root.log"),
        join(root, "proc-cwd", "package.json"),
      ]) {
        expectRefused(await run({ path: p }), p);
      }
    } finally {
      closeSync(fd);
      child?.kill();
    }
  });

  it("takes URL-encoded tricks literally as file names and never decodes them", async () => {
    for (const name of ["%2e%2e%2fetc%2fpasswd", "..%c0%afetc", "%00.log"]) {
      const r = await run({ path: join(root, name) });
      expect(r.output, name).toMatchObject({ lines: [`weird ${name}`] });
    }
    // Missing literal names are just missing inside the root, never a file elsewhere.
    for (const p of [`${root}/%2e%2e%2f%2e%2e%2fetc%2fpasswd`, `${root}/..%c0%af..%c0%afetc/passwd`, `${root}/%2e%2e/outside/secret.txt`, `${root}/app.log%00.png`]) {
      const r = await run({ path: p });
      expect(r.error, p).toMatchObject({ code: "not_found" });
      expect(JSON.stringify(r)).not.toContain(SECRET);
    }
    // Encoded forms of an absolute path outside are not decoded into one.
    expectRefused(await run({ path: "/%2e%2e/etc/passwd" }), "/%2e%2e/etc/passwd");
  });

  it("refuses a NUL byte inside the path, through validation and straight at the skill", async () => {
    const p = `${root}/app.log\0/../../outside/secret.txt`;
    expect(() => validateParams(skill, { path: p })).toThrow(/path/);
    const r = await runRaw(p);
    expect(r.success).toBe(false);
    expect(r.error).toMatchObject({ code: "invalid_argument" });
    expect(r.error!.message).toMatch(/absolute path/);
    expect(JSON.stringify(r)).not.toContain(SECRET);
    const r2 = await runRaw(`${root}/app.log\0`);
    expect(r2.error).toMatchObject({ code: "invalid_argument" });
  });

  it("refuses very long paths with a clear error, and long .. chains are still confined", async () => {
    const long = `${root}/${"a/".repeat(3000)}x.log`;
    expect(() => validateParams(skill, { path: long })).toThrow(/path/);
    const r = await runRaw(long);
    expect(r.error).toMatchObject({ code: "invalid_argument" });
    expect(r.error!.message).toMatch(/too long/);
    const longName = await run({ path: `${root}/${"n".repeat(300)}.log` });
    expect(longName.error).toMatchObject({ code: "invalid_argument" });
    expect(longName.error!.message).toMatch(/too long/);
    const dots = `${root}/${"../".repeat(1000)}etc/passwd`;
    expectRefused(await run({ path: dots }), "1000 x ../");
    const inThenOut = `${root}/${"a/b/../../".repeat(300)}../outside/secret.txt`;
    expectRefused(await run({ path: inThenOut }), "a/b/../../ x 300 then out");
  });

  it("refuses a symlink swapped to point outside between two calls", async () => {
    const link = join(root, "swap.log");
    symlinkSync(join(root, "app.log"), link);
    const first = await run({ path: link });
    expect(first.output).toMatchObject({ lines: ["inside 1", "inside 2"] });
    unlinkSync(link);
    symlinkSync(join(outside, "secret.txt"), link);
    expectRefused(await run({ path: link }), "swapped file link");
    // The same with a directory link.
    const dir = join(root, "swapdir");
    symlinkSync(join(root, "a"), dir);
    expect((await run({ path: join(dir, "inner.log") })).output).toMatchObject({ lines: ["inside 1", "inside 2"] });
    unlinkSync(dir);
    symlinkSync(join(outside, "deep"), dir);
    expectRefused(await run({ path: join(dir, "secret.txt") }), "swapped dir link");
  });

  it("allows what stays inside: symlinks inside (absolute, relative, via ..), and weird but legal names", async () => {
    for (const p of [
      join(root, "a", "inner.log"),
      join(root, "a", "rel-inner.log"),
      join(root, "a", "up", "app.log"),
      join(root, "a", "b", "upup", "a", "up", "app.log"),
      `${root}/a/../app.log`,
      `${root}//a/.//b/../../app.log`,
    ]) {
      const r = await run({ path: p });
      expect(r.output, p).toMatchObject({ lines: ["inside 1", "inside 2"] });
    }
    for (const name of ["..foo", "sp ace \\ 'q\" ü 日本 .log", "-rf", "…..log"]) {
      const r = await run({ path: join(root, name) });
      expect(r.output, name).toMatchObject({ lines: [`weird ${name}`] });
    }
  });

  it("allows a root that is itself reached through a symlink, and still confines it", async () => {
    const alias = join(base, "alias");
    symlinkSync(root, alias);
    try {
      const r = await runSkill(skill, validateParams(skill, { path: join(alias, "app.log") }), { ...opts(), settings: { allowed_roots: [alias] } });
      expect(r.output).toMatchObject({ lines: ["inside 1", "inside 2"] });
      const out = await runSkill(skill, validateParams(skill, { path: join(alias, "file-out.log") }), { ...opts(), settings: { allowed_roots: [alias] } });
      expect(out.error).toMatchObject({ code: "path_not_allowed" });
      expect(JSON.stringify(out)).not.toContain(SECRET);
    } finally {
      rmSync(alias);
    }
  });
});
