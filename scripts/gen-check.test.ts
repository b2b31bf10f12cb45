/** The committed generated code (proto/gen, migrations) must be what the generators produce. */
import { execFile } from "node:child_process";
import { appendFileSync, cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, "..");
const SCRIPT = join(ROOT, "scripts", "gen-check.mjs");

describe("gen:check", () => {
  it("passes on the committed tree", async () => {
    const { stdout } = await run(process.execPath, [SCRIPT], { cwd: ROOT });
    expect(stdout).toMatch(/up to date/);
  });

  it("fails and names the file when committed generated code differs from buf generate", async () => {
    const copy = mkdtempSync(join(tmpdir(), "ongrid-gencheck-"));
    try {
      for (const p of ["proto", "buf.yaml", "buf.gen.yaml", "package.json", "manager/db"]) cpSync(join(ROOT, p), join(copy, p), { recursive: true });
      appendFileSync(join(copy, "proto/gen/ongrid/v1/skill_pb.ts"), "\n// hand edit\n");
      const err = await run(process.execPath, [SCRIPT], { cwd: copy, env: { ...process.env, ONGRID_GEN_ROOT: copy } }).catch((e) => e);
      expect(err.code).toBe(1);
      expect(err.stderr).toMatch(/proto\/gen: ongrid\/v1\/skill_pb\.ts would change/);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});
