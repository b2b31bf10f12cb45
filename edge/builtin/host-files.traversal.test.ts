/** host_files' confinement of `path` to its allowed roots against traversal, symlink and /proc tricks (like tail_file's S4 suite). */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSkill } from "../../skill/registry.ts";
import { runSkill } from "../../skill/run.ts";
import { validateParams } from "../../skill/validate.ts";
import hostFiles from "./host-files.ts";

const skill = buildSkill(hostFiles);
const log = pino({ level: "silent" });
/** Name of the outside files: it must never show up in an answer. */
const SECRET = "secret-outside.bin";
const KiB = 1024;

let base: string;
let root: string;
let outside: string;

const opts = (roots: string[] = [root]) => ({ callId: "t", timeoutMs: 30_000, outputCapBytes: 4 * 1024 * 1024, log, settings: { allowed_roots: roots } });
/** Through param validation, as a caller's request goes. */
const run = (params: Record<string, unknown>, roots?: string[]) => runSkill(skill, validateParams(skill, params), opts(roots));
/** Straight to the skill, skipping param validation (defence in depth). */
const runRaw = (path: string) => runSkill(skill, { path, depth: 1, limit: 20, all_filesystems: false }, opts());

type Env = Awaited<ReturnType<typeof run>>;
type Walk = { path: string; type: string; total_bytes: number; files: number; entries: { path: string; type: string; size_bytes: number }[] };

/** A refusal of `requested` that names the rule, points at the roots, and says nothing about the outside (no resolved path, no existence). */
function expectRefused(r: Env, requested: string, label = requested) {
  expect(r.success, label).toBe(false);
  expect(r.output, label).toBeNull();
  expect(r.error, label).toMatchObject({ code: "path_not_allowed" });
  expect(r.error!.message, label).toMatch(/outside the allowed roots/);
  expect(r.error!.hint, label).toContain(root);
  // Apart from echoing the requested path, nothing: no outside name, no resolved path, no existence.
  const text = `${r.error!.message.replace(JSON.stringify(requested), "P")} ${r.error!.hint}`;
  expect(text, label).not.toContain(SECRET);
  expect(text, label).not.toContain(outside);
  expect(text, label).not.toMatch(/really|resolves to|does not exist|ENOENT|ENOTDIR/);
}

/** A successful measurement of `p`. */
function expectMeasured(r: Env, label: string): Walk {
  expect(r.success, `${label}: ${JSON.stringify(r.error)}`).toBe(true);
  expect(JSON.stringify(r), label).not.toContain(SECRET);
  return r.output as Walk;
}

/** The answer's shape with the requested path taken out: what a caller could compare between two calls. */
function shape(r: Env, requested: string) {
  return { code: r.error?.code, message: r.error?.message.replace(JSON.stringify(requested), "P"), hint: r.error?.hint };
}

const WEIRD = ["..foo", "...", "%2e%2e%2fetc%2fpasswd", "..%c0%afetc", "%00", "\uff0e\uff0e", "\u2025", "..\u2215..\u2215etc", "caf\u00e9", "sp ace \\ 'q\" 日本", "-rf"];

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), "ongrid-files-trav-"));
  root = join(base, "data");
  outside = join(base, "outside");
  mkdirSync(join(root, "a", "b"), { recursive: true });
  mkdirSync(join(outside, "deep"), { recursive: true });
  mkdirSync(`${root}..foo`); // a sibling whose name starts with the root's: outside
  writeFileSync(join(root, "a", "file.bin"), randomBytes(64 * KiB));
  writeFileSync(join(outside, SECRET), randomBytes(1024 * KiB));
  writeFileSync(join(outside, "deep", SECRET), randomBytes(1024 * KiB));
  // Symlinks out: a directory (used as a middle component too), a final one, a dangling one, a relative one, a loop, into /proc.
  symlinkSync(outside, join(root, "dir-out"));
  symlinkSync(join(outside, "deep"), join(root, "final-out"));
  symlinkSync(join(outside, "nope"), join(root, "dangling-out"));
  symlinkSync("../../..", join(root, "a", "b", "up3")); // data/a/b/up3 -> base: outside
  symlinkSync(join(root, "chain2"), join(root, "chain1"));
  symlinkSync("../outside/deep", join(root, "chain2")); // relative, from data/
  symlinkSync(join(root, "loop2"), join(root, "loop1"));
  symlinkSync(join(root, "loop1"), join(root, "loop2"));
  symlinkSync(`/proc/self/root${outside}`, join(root, "proc-root"));
  symlinkSync(`/proc/self/root${root}/a`, join(root, "proc-back-in"));
  symlinkSync("/proc/self/cwd", join(root, "proc-cwd"));
  // Inside: symlinks that stay in, and weird but legal names (taken literally, never decoded or normalised).
  symlinkSync("..", join(root, "a", "up")); // data/a/up -> data
  symlinkSync(join(root, "a"), join(root, "in-abs"));
  symlinkSync("a/b", join(root, "in-rel"));
  for (const name of WEIRD) {
    mkdirSync(join(root, name));
    writeFileSync(join(root, name, "inner.bin"), randomBytes(8 * KiB));
  }
  // A tree whose walk meets symlinks out of the root: they are listed as links, never entered or sized.
  mkdirSync(join(root, "tree", "sub"), { recursive: true });
  writeFileSync(join(root, "tree", "own.bin"), randomBytes(16 * KiB));
  symlinkSync(outside, join(root, "tree", "link-dir-out"));
  symlinkSync(join(outside, SECRET), join(root, "tree", "sub", "link-file-out"));
  symlinkSync("../../..", join(root, "tree", "sub", "link-up-out"));
});

afterAll(() => rmSync(base, { recursive: true, force: true }));

describe("host_files traversal", () => {
  it("refuses .. in its many forms, whether the target exists or not", async () => {
    const forms = [
      `${root}/..`,
      `${root}/a/../..`,
      `${root}/../outside`,
      `${root}/../outside/deep`,
      `${root}/../outside/nope`,
      `${root}/a/b/../../../outside/deep`,
      `${root}//../outside`,
      `${root}/./../outside/nope/deeper`,
      `${root}/a/./../.././../../../../etc`,
      `${root}/../data/../outside`,
      `${root}/../data-sibling`,
      `${root}..foo`,
      `${root}////..//..//..//etc`,
      `${root}/${"../".repeat(1000)}etc`,
      `${root}/${"../".repeat(1000)}no-such-dir-ongrid`,
      `${root}/${"a/b/../../".repeat(300)}../outside/nope`,
    ];
    for (const p of forms) expectRefused(await run({ path: p }), p);
  });

  it("refuses absolute paths outside, existing or not, with the same answer (no existence leak)", async () => {
    const pairs: [string, string][] = [
      [outside, join(base, "no-such-dir")],
      [join(outside, "deep"), join(outside, "nope")],
      [join(outside, SECRET), join(outside, "nope", "x")],
      ["/etc", "/no-such-dir-ongrid"],
      ["/root/.ssh", "/etc/no-such-file-ongrid"],
    ];
    for (const [exists, missing] of pairs) {
      const a = await run({ path: exists });
      const b = await run({ path: missing });
      expectRefused(a, exists);
      expectRefused(b, missing);
      expect(shape(a, exists), `${exists} vs ${missing}`).toEqual(shape(b, missing));
    }
    for (const p of ["/", "/.", `${base}/dataX`]) expectRefused(await run({ path: p }), p);
  });

  it("refuses symlinks out of the root, as the final or a middle component, and gives no clue whether the target exists", async () => {
    for (const p of [
      join(root, "dir-out"),
      join(root, "final-out"),
      join(root, "dangling-out"),
      join(root, "dir-out", "deep"),
      join(root, "dir-out", "nope"),
      join(root, "dir-out", "nope", "deeper"),
      join(root, "dir-out", SECRET),
      join(root, "chain1"),
      join(root, "chain2"),
      join(root, "a", "b", "up3"),
      join(root, "a", "b", "up3", "outside", "deep"),
      join(root, "a", "b", "up3", "data", "..", "outside"),
      join(root, "tree", "link-dir-out"),
      join(root, "tree", "sub", "link-up-out"),
    ]) {
      expectRefused(await run({ path: p }), p);
    }
    // Existing and missing targets behind links: one answer.
    const cases = [join(root, "final-out"), join(root, "dangling-out"), join(root, "dir-out", "deep"), join(root, "dir-out", "nope"), join(root, "dir-out", "nope", "x")];
    const shapes = await Promise.all(cases.map(async (p) => JSON.stringify(shape(await run({ path: p }), p))));
    expect(new Set(shapes).size).toBe(1);
    // A loop inside the root is refused too, without resolving anything outside.
    const loop = await run({ path: join(root, "loop1") });
    expect(loop.success).toBe(false);
    expect(loop.error!.message).toMatch(/symlink loop/);
  });

  it("refuses a directory swapped for a symlink out between two calls, whether its new target exists or not", async () => {
    const dir = join(root, "swap");
    mkdirSync(dir);
    try {
      expectMeasured(await run({ path: dir }), "before the swap");
      rmSync(dir, { recursive: true });
      symlinkSync(join(outside, "deep"), dir);
      const a = await run({ path: dir });
      expectRefused(a, dir, "swapped to an existing outside dir");
      unlinkSync(dir);
      symlinkSync(join(outside, "nope"), dir);
      const b = await run({ path: dir });
      expectRefused(b, dir, "swapped to a missing outside dir");
      expect(shape(a, dir)).toEqual(shape(b, dir));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses /proc paths: self/root, self/cwd, <pid>/fd/N and <pid>/cwd pointing outside, and symlinks into /proc", async () => {
    const fd = openSync(outside, "r");
    let child: ChildProcess | undefined;
    try {
      child = spawn("sleep", ["30"], { cwd: outside, stdio: "ignore" });
      for (const p of [
        "/proc/self/root/etc",
        "/proc/self/root/no-such-dir-ongrid",
        `/proc/self/root${outside}`,
        `/proc/self/root${root}/a`, // leads back inside, but only through /proc: refused like any path outside
        "/proc/self/cwd",
        `/proc/self/fd/${fd}`,
        `/proc/${process.pid}/fd/${fd}`,
        `/proc/${child.pid}/cwd`,
        `/proc/${child.pid}/root${outside}`,
        "/proc/self",
        join(root, "proc-root"),
        join(root, "proc-root", "deep"),
        join(root, "proc-back-in"),
        join(root, "proc-cwd"),
      ]) {
        expectRefused(await run({ path: p }), p);
      }
    } finally {
      closeSync(fd);
      child?.kill();
    }
  });

  it("takes percent-encoded and unicode look-alike names literally: never decoded, normalised or read as ..", async () => {
    for (const name of WEIRD.filter((n) => n !== "..foo" && n !== "...")) {
      const out = expectMeasured(await run({ path: join(root, name) }), name);
      expect(out.type, name).toBe("dir");
      expect(out.entries.map((e) => e.path), name).toEqual([join(root, name, "inner.bin")]);
    }
    // Missing literal names are just missing inside the root, never a directory elsewhere.
    for (const p of [
      `${root}/%2e%2e/outside`,
      `${root}/%2e%2e%2f%2e%2e%2fetc`,
      `${root}/..%c0%af..%c0%afetc`,
      `${root}/\uff0e\uff0e/outside`,
      `${root}/\u2025/outside`,
      `${root}/cafe\u0301`, // the decomposed form of an existing name is another name
    ]) {
      const r = await run({ path: p });
      expect(r.error, p).toMatchObject({ code: "path_not_found" });
      expect(JSON.stringify(r), p).not.toContain(SECRET);
    }
    // Encoded or look-alike forms of a path outside stay outside, whether or not such a name exists.
    for (const p of ["/%2e%2e/etc", "/\uff0e\uff0e/etc", `${root}/\u2025/../../outside`, `/${"%2e%2e/".repeat(3)}etc`]) expectRefused(await run({ path: p }), p);
  });

  it("measures legal names that merely start with .. (\"..foo\", \"...\"), and symlinks that stay inside", async () => {
    for (const name of ["..foo", "..."]) {
      const out = expectMeasured(await run({ path: join(root, name) }), name);
      expect(out).toMatchObject({ type: "dir", files: 1 });
      expect(out.entries.map((e) => e.path)).toEqual([join(root, name, "inner.bin")]);
      expect(out.total_bytes).toBeGreaterThanOrEqual(8 * KiB);
      // A file path keeps today's answer: the file's own size, no entries.
      const file = expectMeasured(await run({ path: join(root, name, "inner.bin") }), `${name}/inner.bin`);
      expect(file).toMatchObject({ type: "file", files: 1, entries: [] });
      expect(file.total_bytes).toBeGreaterThanOrEqual(8 * KiB);
    }
    expectMeasured(await run({ path: `${root}/a/../..foo` }), "a/../..foo");
    expectMeasured(await run({ path: `${root}/a/up/..foo` }), "a/up/..foo");
    for (const p of [join(root, "in-abs"), join(root, "in-rel"), join(root, "a", "up", "a"), `${root}/a/b/../../a`, `${root}//a/.//b/..`]) {
      expect(expectMeasured(await run({ path: p }), p).type, p).toBe("dir");
    }
  });

  it("allows a configured root that is itself a symlink to a real directory, and still confines it", async () => {
    const alias = join(base, "alias");
    symlinkSync(root, alias);
    try {
      const out = expectMeasured(await run({ path: join(alias, "a") }, [alias]), "alias/a");
      expect(out.entries.map((e) => e.path)).toContain(join(root, "a", "file.bin"));
      expectMeasured(await run({ path: alias }, [alias]), "alias");
      expectMeasured(await run({ path: join(root, "a") }, [alias]), "the real path under an aliased root");
      expectMeasured(await run({ path: join(alias, "..foo") }, [alias]), "alias/..foo");
      for (const p of [join(alias, "dir-out"), join(alias, "dangling-out"), join(alias, "dir-out", "nope"), `${alias}/../outside`, join(alias, "proc-root")]) {
        const r = await run({ path: p }, [alias]);
        expect(r.error, p).toMatchObject({ code: "path_not_allowed" });
        expect(r.error!.hint, p).toContain(alias);
        expect(JSON.stringify(r), p).not.toMatch(/really|does not exist|ENOENT/);
      }
    } finally {
      rmSync(alias);
    }
  });

  it("walks a tree without following symlinks out of it: links are listed as links, their targets neither entered nor sized", async () => {
    const out = expectMeasured(await run({ path: join(root, "tree"), depth: 3, limit: 200 }), "tree");
    const byName = new Map(out.entries.map((e) => [e.path.slice(root.length + 1), e]));
    expect([...byName.keys()].sort()).toEqual(["tree/link-dir-out", "tree/own.bin", "tree/sub", "tree/sub/link-file-out", "tree/sub/link-up-out"]);
    for (const link of ["tree/link-dir-out", "tree/sub/link-file-out", "tree/sub/link-up-out"]) expect(byName.get(link)!.type, link).toBe("symlink");
    expect(out.total_bytes).toBeLessThan(1024 * KiB); // the 1 MiB files outside are not counted
  });

  it("refuses relative paths and NUL bytes in the schema, and NUL bytes straight at the skill", async () => {
    for (const p of ["relative", "./x", "../outside", "..", "~/x", "", " /etc", `data/..`, `${root}/a\0/../../outside`, `${root}\0`]) {
      expect(() => validateParams(skill, { path: p }), JSON.stringify(p)).toThrow(/path/);
    }
    for (const p of [`${root}/a\0/../../outside`, `${root}\0`, "relative/../x"]) {
      const r = await runRaw(p);
      expect(r.success, p).toBe(false);
      expect(r.error, p).toMatchObject({ code: "invalid_argument" });
      expect(r.error!.message, p).toMatch(/absolute path/);
    }
  });
});
