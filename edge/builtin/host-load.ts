/** host_load (D4): one snapshot of the host's load, memory and swap, read from /proc. */
import { readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { defineSkill } from "../../skill/define.ts";
import { HOST_LOAD } from "../../skill/catalog/host-load.ts";

function pct(part: number, whole: number): number | null {
  return whole > 0 ? Math.round((part / whole) * 1000) / 10 : null;
}

/** Parses /proc/meminfo into bytes per key. */
export function parseMeminfo(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split("\n")) {
    const m = /^([\w()]+):\s+(\d+)(?:\s+kB)?/.exec(line);
    if (m) out[m[1]] = Number(m[2]) * (line.includes("kB") ? 1024 : 1);
  }
  return out;
}

async function readText(file: string, signal: AbortSignal): Promise<string | undefined> {
  try {
    return await readFile(file, { encoding: "utf8", signal });
  } catch {
    signal.throwIfAborted();
    return undefined;
  }
}

export default defineSkill({
  ...HOST_LOAD,
  async execute(ctx) {
    const proc = typeof ctx.settings.proc_root === "string" && ctx.settings.proc_root ? ctx.settings.proc_root : "/proc";
    const [loadText, memText, upText] = await Promise.all(["loadavg", "meminfo", "uptime"].map((f) => readText(path.join(proc, f), ctx.signal)));
    const fallbacks: string[] = [];

    let loadavg: number[] = [];
    let tasks: { running: number; total: number } | null = null;
    const lm = /^([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\/(\d+)/.exec(loadText ?? "");
    if (lm) {
      loadavg = [Number(lm[1]), Number(lm[2]), Number(lm[3])];
      tasks = { running: Number(lm[4]), total: Number(lm[5]) };
    } else {
      loadavg = os.loadavg().map((v) => Math.round(v * 100) / 100);
      fallbacks.push("loadavg");
    }

    const mem = memText ? parseMeminfo(memText) : {};
    let memory: { total_bytes: number; available_bytes: number; used_bytes: number; used_pct: number | null };
    let swap: { total_bytes: number; free_bytes: number; used_bytes: number; used_pct: number | null } | null = null;
    if (mem.MemTotal !== undefined) {
      const available = mem.MemAvailable ?? (mem.MemFree ?? 0) + (mem.Buffers ?? 0) + (mem.Cached ?? 0);
      memory = { total_bytes: mem.MemTotal, available_bytes: available, used_bytes: mem.MemTotal - available, used_pct: pct(mem.MemTotal - available, mem.MemTotal) };
      if (mem.SwapTotal !== undefined) {
        const free = mem.SwapFree ?? 0;
        swap = { total_bytes: mem.SwapTotal, free_bytes: free, used_bytes: mem.SwapTotal - free, used_pct: pct(mem.SwapTotal - free, mem.SwapTotal) };
      }
    } else {
      const total = os.totalmem();
      const free = os.freemem();
      memory = { total_bytes: total, available_bytes: free, used_bytes: total - free, used_pct: pct(total - free, total) };
      fallbacks.push("memory");
    }

    const um = /^([\d.]+)/.exec(upText ?? "");
    const uptime = um ? Number(um[1]) : os.uptime();
    if (!um) fallbacks.push("uptime");

    const cpus = os.cpus().length || 1;
    return {
      hostname: os.hostname(),
      uptime_s: Math.floor(uptime),
      loadavg,
      cpus,
      load_per_cpu: Math.round((loadavg[0] / cpus) * 100) / 100,
      tasks,
      memory,
      swap,
      source: fallbacks.length === 0 ? "proc" : fallbacks.length === 3 ? "os" : `proc (os for ${fallbacks.join(", ")})`,
    };
  },
});
