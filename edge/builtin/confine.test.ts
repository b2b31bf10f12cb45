/** Unit tests of the shared path confinement (the skills' own suites cover it end to end). */
import { closeSync, mkdirSync, mkdtempSync, openSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { confine, inside, insideAny, loadRoots, MAX_SYMLINK_HOPS, openedPath, resolveConfined, shownRoots, type Roots } from "./confine.ts";

let base: string;
let root: string;
let other: string;
let outside: string;
const errors = { invalid: () => new Error("invalid"), empty: () => new Error("empty") };

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "ongrid-confine-")));
  root = join(base, "root");
  other = join(base, "other");
  outside = join(base, "outside");
  mkdirSync(join(root, "a", "b"), { recursive: true });
  mkdirSync(other);
  mkdirSync(outside);
  writeFileSync(join(root, "a", "f"), "x");
  writeFileSync(join(other, "g"), "y");
  writeFileSync(join(outside, "file"), "z");
  symlinkSync(join(root, "a", "b"), join(root, "to-b"));
  symlinkSync(join(other, "g"), join(root, "to-other"));
  // Targets outside that would give a distinct lstat error (ENAMETOOLONG, ENOTDIR) if they were ever looked at.
  symlinkSync(join(outside, "n".repeat(300)), join(root, "out-too-long"));
  symlinkSync(join(outside, "file", "x"), join(root, "out-notdir"));
  symlinkSync(join(root, "chain-0"), join(root, `chain-${MAX_SYMLINK_HOPS}`));
  for (let i = 0; i < MAX_SYMLINK_HOPS; i++) symlinkSync(join(root, `chain-${i + 1}`), join(root, `chain-${i}`));
  symlinkSync(join(root, "missing-root"), join(base, "alias-missing"));
});

afterAll(() => rmSync(base, { recursive: true, force: true }));

describe("inside", () => {
  it("takes .. only as a whole first component, and never a sibling sharing the root's name as a prefix", () => {
    expect(inside("/srv/root", "/srv/root")).toBe(true);
    expect(inside("/srv/root/x", "/srv/root")).toBe(true);
    expect(inside("/srv/root/..foo", "/srv/root")).toBe(true);
    expect(inside("/srv/root/...", "/srv/root")).toBe(true);
    expect(inside("/srv/root/..foo/..bar", "/srv/root")).toBe(true);
    expect(inside("/srv/root/", "/srv/root")).toBe(true);
    expect(inside("/srv/root/x", "/srv/root/")).toBe(true);
    expect(inside("/srv", "/srv/root")).toBe(false);
    expect(inside("/srv/other", "/srv/root")).toBe(false);
    expect(inside("/srv/root..foo", "/srv/root")).toBe(false);
    expect(inside("/srv/rootX/y", "/srv/root")).toBe(false);
    expect(inside("/srv/root/../other", "/srv/root")).toBe(false); // path.relative normalises
    expect(inside("/anything/at/all", "/")).toBe(true);
    expect(insideAny("/b/x", ["/a", "/b"])).toBe(true);
    expect(insideAny("/c/x", ["/a", "/b"])).toBe(false);
    expect(insideAny("/a", [])).toBe(false);
  });
});

describe("loadRoots", () => {
  it("refuses a malformed or empty setting with the caller's errors, resolves symlinked roots and skips missing ones", async () => {
    await expect(loadRoots("/tmp", errors)).rejects.toThrow("invalid");
    await expect(loadRoots(["relative"], errors)).rejects.toThrow("invalid");
    await expect(loadRoots([42], errors)).rejects.toThrow("invalid");
    await expect(loadRoots(undefined, errors)).rejects.toThrow("empty");
    await expect(loadRoots([], errors)).rejects.toThrow("empty");
    const alias = join(base, "alias");
    symlinkSync(root, alias);
    try {
      const roots = await loadRoots([`${alias}/`, join(base, "nope"), `${other}/./`], errors);
      expect(roots).toEqual({ configured: [alias, join(base, "nope"), other], real: [root, other] });
      expect(shownRoots(roots)).toEqual([alias, join(base, "nope"), other, root]);
    } finally {
      rmSync(alias);
    }
  });
});

describe("resolveConfined", () => {
  it("follows symlinks that stay inside, across roots, and applies .. after a symlink to the link's target", async () => {
    expect(await resolveConfined(join(root, "to-b"), [root])).toEqual({ kind: "ok", real: join(root, "a", "b") });
    expect(await resolveConfined(`${root}/to-b/../f`, [root])).toEqual({ kind: "ok", real: join(root, "a", "f") });
    expect(await resolveConfined(join(root, "to-other"), [root, other])).toEqual({ kind: "ok", real: join(other, "g") });
    expect(await resolveConfined(join(root, "to-other"), [root])).toEqual({ kind: "outside" });
    expect(await resolveConfined(join(root, "a", "f"), ["/"])).toEqual({ kind: "ok", real: join(root, "a", "f") });
  });

  it("tells missing inside from outside, and an in-root loop from both", async () => {
    expect(await resolveConfined(join(root, "nope"), [root])).toEqual({ kind: "missing" });
    expect(await resolveConfined(join(root, "a", "f", "x"), [root])).toEqual({ kind: "missing" }); // a file used as a directory
    expect(await resolveConfined(join(outside, "file"), [root])).toEqual({ kind: "outside" });
    expect(await resolveConfined(join(root, "chain-0"), [root])).toEqual({ kind: "loop" });
  });

  it("never looks at a symlink's target outside the roots: targets whose lstat would fail differently give the same answer", async () => {
    // Were these targets lstat'ed, one would fail with ENAMETOOLONG (kind "error") and one with ENOTDIR.
    expect(await resolveConfined(join(root, "out-too-long"), [root])).toEqual({ kind: "outside" });
    expect(await resolveConfined(join(root, "out-notdir"), [root])).toEqual({ kind: "outside" });
    expect(await resolveConfined(join(root, "out-too-long", "deeper"), [root])).toEqual({ kind: "outside" });
  });
});

describe("confine", () => {
  const roots = (configured: string[], real: string[]): Roots => ({ configured, real });

  it("says whether a refusal was lexical (nothing looked at) or found while resolving", async () => {
    expect(await confine(join(outside, "n".repeat(300)), roots([root], [root]))).toEqual({ kind: "outside", how: "lexical" });
    expect(await confine(`${root}/../outside/file`, roots([root], [root]))).toEqual({ kind: "outside", how: "lexical" });
    expect(await confine(join(root, "out-notdir"), roots([root], [root]))).toEqual({ kind: "outside", how: "resolved" });
  });

  it("refuses over-long paths inside the roots before touching the filesystem", async () => {
    expect(await confine(join(root, "n".repeat(256)), roots([root], [root]))).toEqual({ kind: "too_long" });
    expect(await confine(`${root}/${"d/".repeat(2100)}x`, roots([root], [root]))).toEqual({ kind: "too_long" });
    expect(await confine(join(root, "n".repeat(255)), roots([root], [root]))).toEqual({ kind: "missing" });
  });

  it("continues under a configured root that is a symlink from its real path, and reports one that does not exist", async () => {
    const alias = join(base, "alias2");
    symlinkSync(root, alias);
    try {
      expect(await confine(join(alias, "to-b"), roots([alias], [root]))).toEqual({ kind: "ok", real: join(root, "a", "b") });
      expect(await confine(join(alias, "out-notdir"), roots([alias], [root]))).toEqual({ kind: "outside", how: "resolved" });
    } finally {
      rmSync(alias);
    }
    // Configured as a symlink whose target is missing (so not among the real roots).
    expect(await confine(join(base, "alias-missing", "x"), roots([join(base, "alias-missing")], []))).toEqual({ kind: "root_missing" });
    expect(await confine(join(base, "never-there", "x"), roots([join(base, "never-there")], []))).toEqual({ kind: "root_missing" });
  });
});

describe("openedPath", () => {
  it("names what an open descriptor points at", async () => {
    const fd = openSync(join(root, "a", "f"), "r");
    try {
      expect(await openedPath(fd)).toBe(join(root, "a", "f"));
    } finally {
      closeSync(fd);
    }
    expect(await openedPath(2 ** 30)).toBeUndefined();
  });
});
