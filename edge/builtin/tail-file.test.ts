import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSkill } from "../../skill/registry.ts";
import { validateParams } from "../../skill/validate.ts";
import { runSkill } from "../../skill/run.ts";
import { lintSkill } from "../../skill/lint.ts";
import tailFile, { compileGrep } from "./tail-file.ts";

const skill = buildSkill(tailFile);
const log = pino({ level: "silent" });

let base: string;
let root: string;
let outside: string;
const BIG_LINES = 130_000; // 64 bytes each: about 8 MiB

function run(params: Record<string, unknown>, settings: Record<string, unknown> = { allowed_roots: [root] }) {
  return runSkill(skill, validateParams(skill, params), { callId: "t", timeoutMs: 10_000, outputCapBytes: 1024 * 1024, log, settings });
}

type Out = { lines: string[]; returned: number; truncated_from_start: boolean; size_bytes: number; bytes_scanned: number; scan_limit_reached: boolean };

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), "ongrid-tail-"));
  root = join(base, "logs");
  outside = join(base, "outside");
  mkdirSync(join(root, "sub"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(root, "app.log"), Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join("\n") + "\n");
  writeFileSync(join(root, "crlf.log"), "first\r\nsecond\r\nlast without newline");
  writeFileSync(join(outside, "secret.txt"), "root:x:0:0\n");
  symlinkSync(join(root, "app.log"), join(root, "sub", "inner-link.log"));
  symlinkSync(join(outside, "secret.txt"), join(root, "escape.log"));
  symlinkSync(outside, join(root, "dirlink"));
  execFileSync("mkfifo", [join(root, "pipe")]);
  const big = Buffer.alloc(BIG_LINES * 64);
  for (let i = 0; i < BIG_LINES; i++) big.write(`${i === 0 ? "MARKER" : "entry "}${String(i).padStart(8, "0")} ${"x".repeat(48)}\n`, i * 64, "latin1");
  writeFileSync(join(root, "big.log"), big);
});

afterAll(() => rmSync(base, { recursive: true, force: true }));

describe("tail_file", () => {
  it("returns the last N lines of a file inside an allowed root, with its size and mtime", async () => {
    const r = await run({ path: join(root, "app.log"), lines: 3 });
    expect(r.success).toBe(true);
    expect(r.output).toMatchObject({
      path: join(root, "app.log"),
      lines: ["line 8", "line 9", "line 10"],
      returned: 3,
      truncated_from_start: true,
      size_bytes: 71,
      scan_limit_reached: false,
    });
    expect(Date.parse((r.output as { modified_at: string }).modified_at)).not.toBeNaN();
  });

  it("returns the whole file when it has fewer lines than asked, and handles CRLF and a missing final newline", async () => {
    const all = await run({ path: join(root, "app.log") });
    expect(all.output).toMatchObject({ returned: 10, truncated_from_start: false });
    expect((all.output as Out).lines[0]).toBe("line 1");
    const crlf = await run({ path: join(root, "crlf.log") });
    expect((crlf.output as Out).lines).toEqual(["first", "second", "last without newline"]);
  });

  it("filters with grep before taking the last lines (smart case)", async () => {
    const r = await run({ path: join(root, "app.log"), grep: "line [2468]$", lines: 2 });
    expect(r.output).toMatchObject({ lines: ["line 6", "line 8"], returned: 2, truncated_from_start: true });
    const insensitive = await run({ path: join(root, "app.log"), grep: "^line 1\\d?$" });
    expect((insensitive.output as Out).lines).toEqual(["line 1", "line 10"]);
    const upper = await run({ path: join(root, "app.log"), grep: "LINE" });
    expect(upper.output).toMatchObject({ lines: [], returned: 0 });
    const lower = await run({ path: join(root, "app.log"), grep: "LINE 10".toLowerCase() });
    expect((lower.output as Out).lines).toEqual(["line 10"]);
  });

  it("refuses an invalid or catastrophic regular expression, naming the param", async () => {
    const bad = await run({ path: join(root, "app.log"), grep: "(unclosed" });
    expect(bad.error).toMatchObject({ code: "invalid_argument" });
    expect(bad.error!.message).toMatch(/param "grep"/);
    const nested = await run({ path: join(root, "app.log"), grep: "(a+)+$" });
    expect(nested.error).toMatchObject({ code: "invalid_argument" });
    expect(nested.error!.message).toMatch(/param "grep"/);
  });

  it("reads only the tail of a large file", async () => {
    const r = await run({ path: join(root, "big.log"), lines: 5 });
    const out = r.output as Out;
    expect(out.size_bytes).toBe(BIG_LINES * 64);
    expect(out.lines).toHaveLength(5);
    expect(out.lines[4]).toMatch(new RegExp(`^entry ${String(BIG_LINES - 1).padStart(8, "0")} x+$`));
    expect(out.bytes_scanned).toBe(64 * 1024); // one chunk of an 8 MiB file
    expect(out.truncated_from_start).toBe(true);
  });

  it("keeps lines intact across chunk boundaries", async () => {
    const r = await run({ path: join(root, "big.log"), lines: 5000 });
    const out = r.output as Out;
    expect(out.returned).toBe(5000);
    out.lines.forEach((line, i) => expect(line).toBe(`entry ${String(BIG_LINES - 5000 + i).padStart(8, "0")} ${"x".repeat(48)}`));
  });

  it("stops at the scan cap and says so when grep finds too few lines near the end", async () => {
    const r = await run({ path: join(root, "big.log"), grep: "MARKER" }, { allowed_roots: [root], max_scan_bytes: 1024 * 1024 });
    expect(r.output).toMatchObject({ lines: [], returned: 0, bytes_scanned: 1024 * 1024, scan_limit_reached: true, truncated_from_start: true });
  });

  it("follows a symlink that stays inside the root", async () => {
    const r = await run({ path: join(root, "sub", "inner-link.log"), lines: 1 });
    expect(r.output).toMatchObject({ lines: ["line 10"], real_path: join(root, "app.log") });
  });

  it("refuses paths outside the roots: a ../ escape, a symlink out, a symlinked directory out", async () => {
    for (const path of [`${root}/../outside/secret.txt`, join(root, "escape.log"), join(root, "dirlink", "secret.txt"), "/etc/passwd"]) {
      const r = await run({ path });
      expect(r.error, path).toMatchObject({ code: "path_not_allowed" });
      expect(r.error!.hint).toContain(root);
      expect(JSON.stringify(r)).not.toContain("root:x:0:0");
    }
  });

  it("does not reveal whether a file outside the roots exists", async () => {
    const exists = await run({ path: join(outside, "secret.txt") });
    const missing = await run({ path: join(outside, "nope.txt") });
    expect(exists.error!.code).toBe("path_not_allowed");
    expect(missing.error!.code).toBe("path_not_allowed");
  });

  it("fails with not_found, is_directory and not_regular_file", async () => {
    expect((await run({ path: join(root, "missing.log") })).error).toMatchObject({ code: "not_found" });
    expect((await run({ path: join(root, "sub") })).error).toMatchObject({ code: "is_directory" });
    expect((await run({ path: root })).error).toMatchObject({ code: "is_directory" });
    const fifo = await run({ path: join(root, "pipe") });
    expect(fifo.error).toMatchObject({ code: "not_regular_file" });
  });

  it("refuses every path until allowed roots are configured, naming the config key", async () => {
    const r = await run({ path: join(root, "app.log") }, {});
    expect(r.error).toMatchObject({ code: "not_configured" });
    expect(r.error!.hint).toContain("skills.tail_file.allowed_roots");
    const bad = await run({ path: join(root, "app.log") }, { allowed_roots: "relative/dir" });
    expect(bad.error).toMatchObject({ code: "not_configured" });
  });

  it("refuses relative paths at validation", () => {
    expect(() => validateParams(skill, { path: "var/log/syslog" })).toThrow(/param "path"/);
  });

  it("passes the new-tool checklist with no error", () => {
    expect(lintSkill(tailFile).filter((f) => f.severity === "error")).toEqual([]);
  });
});

describe("compileGrep", () => {
  it("is case-insensitive only for patterns without uppercase letters outside escapes", () => {
    expect(compileGrep("error").test("ERROR here")).toBe(true);
    expect(compileGrep("Error").test("ERROR here")).toBe(false);
    expect(compileGrep("\\d+ error").test("42 ERROR")).toBe(true);
    expect(compileGrep("\\S+ error").test("x ERROR")).toBe(true);
  });
});
