/** host_processes (D4): the top processes by CPU or memory, read from /proc (no dependency on ps). */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { defineSkill } from "../../skill/define.ts";
import { HOST_PROCESSES } from "../../skill/catalog/host-processes.ts";
import { SkillError } from "../../skill/errors.ts";

/** Time between the two CPU samples. */
const SAMPLE_MS = 200;
const MAX_COMMAND = 512;
const BATCH = 256;
/** Only ranks memory; exact rss_bytes comes from VmRSS. */
const PAGE_GUESS = 4096;

interface Stat {
  pid: number;
  name: string;
  state: string;
  ppid: number;
  ticks: number;
  threads: number;
  start: string;
  rssPages: number;
}

/** Parses /proc/PID/stat; the command name may contain spaces and parentheses, so fields start after the last ")". */
export function parseStat(text: string): Stat | undefined {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open) return undefined;
  const f = text.slice(close + 2).split(" ");
  if (f.length < 22) return undefined;
  return {
    pid: Number(text.slice(0, open).trim()),
    name: text.slice(open + 1, close),
    state: f[0],
    ppid: Number(f[1]),
    ticks: Number(f[11]) + Number(f[12]),
    threads: Number(f[17]),
    start: f[19],
    rssPages: Number(f[21]),
  };
}

async function snapshot(proc: string, signal: AbortSignal): Promise<Map<string, Stat>> {
  const pids = (await readdir(proc)).filter((n) => /^\d+$/.test(n));
  const out = new Map<string, Stat>();
  for (let i = 0; i < pids.length; i += BATCH) {
    signal.throwIfAborted();
    const stats = await Promise.all(
      pids.slice(i, i + BATCH).map(async (pid) => {
        try {
          return parseStat(await readFile(path.join(proc, pid, "stat"), "utf8"));
        } catch {
          return undefined; // the process ended meanwhile
        }
      }),
    );
    for (const s of stats) if (s) out.set(`${s.pid}:${s.start}`, s);
  }
  return out;
}

/** Total jiffies of all CPUs and the number of CPUs, from /proc/stat. */
async function cpuTotal(proc: string): Promise<{ total: number; cpus: number }> {
  const text = await readFile(path.join(proc, "stat"), "utf8");
  const lines = text.split("\n");
  const first = lines[0].split(/\s+/).slice(1, 9).map(Number);
  return { total: first.reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0), cpus: Math.max(1, lines.filter((l) => /^cpu\d+\s/.test(l)).length) };
}

async function users(): Promise<Map<number, string>> {
  const map = new Map<number, string>();
  try {
    for (const line of (await readFile("/etc/passwd", "utf8")).split("\n")) {
      const f = line.split(":");
      if (f.length >= 3 && /^\d+$/.test(f[2]) && !map.has(Number(f[2]))) map.set(Number(f[2]), f[0]);
    }
  } catch {
    /* uids are reported as numbers */
  }
  return map;
}

export default defineSkill({
  ...HOST_PROCESSES,
  async execute(ctx, params) {
    const proc = typeof ctx.settings.proc_root === "string" && ctx.settings.proc_root ? ctx.settings.proc_root : "/proc";
    let t0, s0;
    try {
      t0 = await cpuTotal(proc);
      s0 = await snapshot(proc, ctx.signal);
    } catch (err) {
      ctx.signal.throwIfAborted();
      throw new SkillError("proc_unavailable", `cannot read processes from ${proc}: ${(err as Error).message}`, "host_processes needs a Linux /proc; set skills.host_processes.proc_root when the host's /proc is mounted elsewhere.");
    }
    await sleep(SAMPLE_MS, undefined, { signal: ctx.signal });
    const t1 = await cpuTotal(proc);
    const s1 = await snapshot(proc, ctx.signal);
    const perCpu = (t1.total - t0.total) / t1.cpus;

    const ranked = [...s1.entries()].map(([key, s]) => {
      const before = s0.get(key);
      const delta = s.ticks - (before?.ticks ?? 0);
      return { s, cpu: perCpu > 0 ? Math.max(0, (delta / perCpu) * 100) : 0 };
    });
    ranked.sort((a, b) => (params.sort_by === "mem" ? b.s.rssPages - a.s.rssPages || b.cpu - a.cpu : b.cpu - a.cpu || b.s.rssPages - a.s.rssPages));

    const names = await users();
    const processes = [];
    for (const { s, cpu } of ranked) {
      if (processes.length >= params.limit) break;
      let status: string;
      let cmdline: string;
      try {
        [status, cmdline] = await Promise.all([readFile(path.join(proc, String(s.pid), "status"), "utf8"), readFile(path.join(proc, String(s.pid), "cmdline"), "utf8")]);
      } catch {
        continue; // ended since the sample
      }
      const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? -1);
      const rssKb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
      const command = cmdline.replace(/\0+$/, "").replace(/\0/g, " ").trim() || `[${s.name}]`;
      processes.push({
        pid: s.pid,
        ppid: s.ppid,
        user: names.get(uid) ?? String(uid),
        uid,
        name: s.name,
        state: s.state,
        threads: s.threads,
        rss_bytes: rssKb !== undefined ? Number(rssKb) * 1024 : s.rssPages * PAGE_GUESS,
        cpu_pct: Math.round(cpu * 10) / 10,
        command: command.length > MAX_COMMAND ? command.slice(0, MAX_COMMAND - 1) + "…" : command,
      });
    }
    return { sort_by: params.sort_by, sample_ms: SAMPLE_MS, total_processes: s1.size, processes };
  },
});
