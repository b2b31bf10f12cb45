/**
 * Smoke test of the soak run (scripts/soak.ts): a short run as a child process, on the test
 * PostgreSQL server when it answers (else PGlite), must exit 0 and write a report with samples,
 * every call accounted for and the chain intact. No timing is asserted.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { pgUnavailableReason, realPostgresUrl } from "../test/support/pg.ts";

const ROOT = resolve(import.meta.dirname, "..");

function run(args: string[], timeoutMs: number): Promise<{ code: number | null; out: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "scripts", "soak.ts"), ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    // SIGINT lets the script clean up (simulators, manager, database) before it goes.
    const timer = setTimeout(() => child.kill("SIGINT"), timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      res({ code, out });
    });
  });
}

describe("npm run soak", () => {
  it("runs a short soak: exit 0, samples, zero unaccounted calls, chain ok", { timeout: 300_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "ongrid-soak-test-"));
    try {
      const out = join(dir, "soak.json");
      const db = (await pgUnavailableReason()) === null ? ["--database-url", realPostgresUrl()] : ["--pglite"];
      const r = await run(["--edges", "20", "--duration", "15s", "--sample-every", "3s", "--concurrency", "8", "--out", out, ...db], 240_000);
      expect(r.code, r.out.slice(-6000)).toBe(0);
      const json = JSON.parse(readFileSync(out, "utf8"));
      expect(json.samples.length).toBeGreaterThanOrEqual(3);
      expect(json.samples[0].rss_kib).toBeGreaterThan(0);
      expect(json.samples[0].fds).toBeGreaterThan(0);
      expect(json.accounting.answered_calls).toBeGreaterThan(0);
      expect(json.accounting.unaccounted, JSON.stringify(json.accounting.examples)).toBe(0);
      expect(json.accounting.rows_found).toBe(json.accounting.expected_rows);
      expect(json.chain.ok).toBe(true);
      expect(r.out).toMatch(/unaccounted calls or rows/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a bad flag with exit code 2, naming the flag", { timeout: 60_000 }, async () => {
    const r = await run(["--duration", "soon"], 50_000);
    expect(r.code).toBe(2);
    expect(r.out).toMatch(/--duration/);
  });
});
