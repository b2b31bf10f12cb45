import { randomBytes } from "node:crypto";
import { linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lintSkill } from "../../skill/lint.ts";
import { buildSkill } from "../../skill/registry.ts";
import { runSkill } from "../../skill/run.ts";
import { validateParams } from "../../skill/validate.ts";
import hostFiles, { parseMounts } from "./host-files.ts";

const skill = buildSkill(hostFiles);
const log = pino({ level: "silent" });
const base = mkdtempSync(path.join(tmpdir(), "ongrid-files-"));
const root = path.join(base, "root");
const outside = path.join(base, "outside");
const KiB = 1024;

beforeAll(() => {
  mkdirSync(path.join(root, "big", "deeper"), { recursive: true });
  mkdirSync(path.join(root, "small"));
  mkdirSync(path.join(root, "many"));
  mkdirSync(outside);
  writeFileSync(path.join(root, "big", "a.bin"), randomBytes(512 * KiB));
  writeFileSync(path.join(root, "big", "deeper", "b.bin"), randomBytes(256 * KiB));
  writeFileSync(path.join(root, "file.bin"), randomBytes(384 * KiB));
  writeFileSync(path.join(root, "small", "c.txt"), "hello");
  for (let i = 0; i < 50; i++) writeFileSync(path.join(root, "many", `f${i}`), "x");
  writeFileSync(path.join(outside, "secret.bin"), randomBytes(4096 * KiB));
  symlinkSync(outside, path.join(root, "escape"));
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

function run(params: Record<string, unknown>, settings: Record<string, unknown> = { allowed_roots: [root] }) {
  return runSkill(skill, validateParams(skill, params), { callId: "t", timeoutMs: 30_000, outputCapBytes: 4 * 1024 * 1024, log, settings });
}
type Fs = { mount: string; fs_type: string; size_bytes: number; used_bytes: number; avail_bytes: number; used_pct: number; inodes_used_pct: number | null };
type Walk = { total_bytes: number; files: number; entries: { path: string; type: string; size_bytes: number; files?: number }[]; complete: boolean; stopped_reason?: string; scanned_entries: number };

describe("host_files", () => {
  it("passes the new-tool checklist with no finding", () => {
    expect(lintSkill(skill)).toEqual([]);
  });

  it("lists real filesystems with usage, fullest first, and pseudo filesystems only when asked", async () => {
    const r = await run({}, {});
    expect(r.success, JSON.stringify(r.error)).toBe(true);
    const fs = (r.output as { filesystems: Fs[] }).filesystems;
    const rootFs = fs.find((f) => f.mount === "/")!;
    expect(rootFs).toBeDefined();
    expect(rootFs.size_bytes).toBeGreaterThan(0);
    expect(rootFs.used_bytes + rootFs.avail_bytes).toBeLessThanOrEqual(rootFs.size_bytes);
    expect(rootFs.used_pct).toBeGreaterThan(0);
    expect(fs.map((f) => f.fs_type)).not.toContain("proc");
    expect(fs.map((f) => f.fs_type)).not.toContain("sysfs");
    const pcts = fs.map((f) => f.used_pct);
    expect(pcts).toEqual([...pcts].sort((a, b) => b - a));

    const all = (await run({ all_filesystems: true, limit: 200 }, {})).output as { filesystems: Fs[] };
    expect(all.filesystems.map((f) => f.fs_type)).toEqual(expect.arrayContaining(["proc", "sysfs"]));
  });

  it("parses /proc/mounts escapes and lets a later mount hide an earlier one", () => {
    expect(parseMounts("/dev/sda1 /mnt/my\\040disk ext4 rw 0 0\n/dev/sdb1 /data xfs ro,relatime 0 0\n/dev/sdc1 /data ext4 rw 0 0\n")).toEqual([
      { device: "/dev/sda1", mount: "/mnt/my disk", fsType: "ext4", readOnly: false },
      { device: "/dev/sdc1", mount: "/data", fsType: "ext4", readOnly: false },
    ]);
  });

  it("lists the largest entries under a path, largest first, with totals like du", async () => {
    const r = await run({ path: root, depth: 1 });
    expect(r.success, JSON.stringify(r.error)).toBe(true);
    const out = r.output as Walk;
    expect(out.complete).toBe(true);
    expect(out.entries.map((e) => path.basename(e.path)).slice(0, 3)).toEqual(["big", "file.bin", "many"]);
    const big = out.entries[0];
    expect(big).toMatchObject({ type: "dir", files: 2 });
    expect(big.size_bytes).toBeGreaterThanOrEqual(768 * KiB);
    expect(out.total_bytes).toBeGreaterThanOrEqual(1152 * KiB);
    expect(out.files).toBe(55); // non-directory entries: a.bin, b.bin, file.bin, c.txt, 50 in many, the symlink
    // The symlink is listed as a link, never followed out of the root.
    expect(out.entries.find((e) => e.path.endsWith("escape"))).toMatchObject({ type: "symlink" });
    expect(out.total_bytes).toBeLessThan(4096 * KiB);

    const deep = (await run({ path: root, depth: 3, limit: 5 })).output as Walk;
    expect(deep.entries.map((e) => path.relative(root, e.path))).toEqual(["big", "big/a.bin", "file.bin", "big/deeper", "big/deeper/b.bin"]);
    const two = (await run({ path: root, depth: 2, limit: 200 })).output as Walk;
    expect(two.entries.map((e) => path.relative(root, e.path))).not.toContain("big/deeper/b.bin");
    const none = (await run({ path: root, depth: 0 })).output as Walk;
    expect(none.entries).toEqual([]);
    expect(none.total_bytes).toBe(out.total_bytes);
  });

  it("counts hard links once", async () => {
    const dir = path.join(root, "links");
    mkdirSync(dir);
    writeFileSync(path.join(dir, "one"), randomBytes(256 * KiB));
    linkSync(path.join(dir, "one"), path.join(dir, "two"));
    try {
      const out = (await run({ path: dir, depth: 1 })).output as Walk;
      expect(out.entries.map((e) => e.size_bytes).sort((a, b) => a - b)[0]).toBe(0);
      expect(out.total_bytes).toBeLessThan(2 * 256 * KiB);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it("stops at the entry budget and says so", async () => {
    const r = await run({ path: root }, { allowed_roots: [root], max_entries: 10 });
    const out = r.output as Walk;
    expect(out.complete).toBe(false);
    expect(out.scanned_entries).toBe(10);
    expect(out.stopped_reason).toMatch(/max_entries/);
  });

  it("confines paths to the allowed roots: no .., no symlink escapes, nothing without roots", async () => {
    expect((await run({ path: outside })).error).toMatchObject({ code: "path_not_allowed" });
    expect((await run({ path: `${root}/../outside` })).error).toMatchObject({ code: "path_not_allowed" });
    const viaLink = await run({ path: path.join(root, "escape") });
    expect(viaLink.error).toMatchObject({ code: "path_not_allowed" });
    // Refused without saying where the link leads (nothing outside the roots is resolved or named).
    expect(viaLink.error!.message).toBe(`${JSON.stringify(path.join(root, "escape"))} leads outside the allowed roots (through .. or a symlink)`);
    expect(viaLink.error!.hint).toContain(root);
    expect((await run({ path: path.join(root, "nope") })).error).toMatchObject({ code: "path_not_found" });
    const unconfigured = await run({ path: root }, {});
    expect(unconfigured.error).toMatchObject({ code: "not_configured" });
    expect(unconfigured.error!.hint).toMatch(/allowed_roots/);
    expect((await run({ path: root }, { allowed_roots: "/tmp" })).error).toMatchObject({ code: "not_configured" });
    expect(() => validateParams(skill, { path: "relative" })).toThrow(/path/);
    expect(() => validateParams(skill, { path: "/x", depth: 4 })).toThrow(/depth/);
  });
});
