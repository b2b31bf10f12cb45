import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { lintSkill } from "../../skill/lint.ts";
import { buildSkill } from "../../skill/registry.ts";
import { runSkill } from "../../skill/run.ts";
import { validateParams } from "../../skill/validate.ts";
import hostLoad from "./host-load.ts";

const skill = buildSkill(hostLoad);
const log = pino({ level: "silent" });
const dir = mkdtempSync(path.join(os.tmpdir(), "ongrid-load-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(settings: Record<string, unknown> = {}) {
  return runSkill(skill, validateParams(skill, {}), { callId: "t", timeoutMs: 10_000, outputCapBytes: 65536, log, settings });
}

describe("host_load", () => {
  it("passes the new-tool checklist with no finding", () => {
    expect(lintSkill(skill)).toEqual([]);
  });

  it("reads this host's /proc", async () => {
    const r = await run();
    expect(r.success).toBe(true);
    const out = r.output as any;
    const memTotalKb = Number(/MemTotal:\s+(\d+)/.exec(readFileSync("/proc/meminfo", "utf8"))![1]);
    expect(out).toMatchObject({ hostname: os.hostname(), cpus: os.cpus().length, source: "proc" });
    expect(out.memory.total_bytes).toBe(memTotalKb * 1024);
    expect(out.memory.available_bytes).toBeGreaterThan(0);
    expect(out.memory.available_bytes).toBeLessThanOrEqual(out.memory.total_bytes);
    expect(out.loadavg).toHaveLength(3);
    expect(out.uptime_s).toBeGreaterThan(0);
    expect(out.tasks.total).toBeGreaterThan(0);
    expect(out.swap).toEqual(expect.objectContaining({ total_bytes: expect.any(Number) }));
  });

  it("computes from a proc root's loadavg, meminfo and uptime (skills.host_load.proc_root, e.g. a host /proc mounted in a container)", async () => {
    const proc = path.join(dir, "proc");
    mkdirSync(proc);
    writeFileSync(path.join(proc, "loadavg"), "3.50 2.25 1.00 4/512 99999\n");
    writeFileSync(path.join(proc, "uptime"), "123456.78 200000.00\n");
    writeFileSync(
      path.join(proc, "meminfo"),
      "MemTotal:        8000000 kB\nMemFree:          500000 kB\nMemAvailable:    2000000 kB\nBuffers:           10000 kB\nSwapTotal:       1000000 kB\nSwapFree:         250000 kB\nHugePages_Total:       0\n",
    );
    const r = await run({ proc_root: proc });
    expect(r.output).toMatchObject({
      uptime_s: 123456,
      loadavg: [3.5, 2.25, 1],
      tasks: { running: 4, total: 512 },
      load_per_cpu: Math.round((3.5 / os.cpus().length) * 100) / 100,
      memory: { total_bytes: 8_192_000_000, available_bytes: 2_048_000_000, used_bytes: 6_144_000_000, used_pct: 75 },
      swap: { total_bytes: 1_024_000_000, free_bytes: 256_000_000, used_bytes: 768_000_000, used_pct: 75 },
      source: "proc",
    });
  });

  it("falls back to the os module where /proc is unreadable", async () => {
    const r = await run({ proc_root: path.join(dir, "missing") });
    const out = r.output as any;
    expect(out.source).toBe("os");
    expect(out.memory.total_bytes).toBe(os.totalmem());
    expect(out.swap).toBeNull();
    expect(out.tasks).toBeNull();
    expect(out.loadavg).toHaveLength(3);
  });
});
