/** Child processes for the benchmark: open-file limits, spawning, RSS from /proc, and cleanup of everything started. */
import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/** The open-file limit of this process (children inherit it). */
export interface FdLimit {
  soft: number;
  hard: number;
}

/** Reads "Max open files" from /proc/self/limits; Infinity stands for "unlimited". */
export function fdLimit(): FdLimit {
  const line = readFileSync("/proc/self/limits", "utf8").split("\n").find((l) => l.startsWith("Max open files"));
  const parts = line?.trim().split(/\s+/) ?? [];
  const num = (s: string | undefined) => (s === "unlimited" ? Infinity : Number(s));
  return { soft: num(parts[3]), hard: num(parts[4]) };
}

/** CPU time (user + system) a process has used so far, in ms (/proc/PID/stat, clock ticks of 10 ms), or NaN when it is gone. */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** The pids of every running process whose command name is `name` (e.g. the PostgreSQL server and its backends). */
export function pidsNamed(name: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, "utf8").trim() === name) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/**
 * CPU used by groups of processes from this call to the returned function's call, in ms per
 * group, plus "bench process" (this process, from process.cpuUsage). Processes that started or
 * ended in between are not counted.
 */
export function cpuMeter(groups: Record<string, () => number[]>): () => Record<string, number> {
  const read = () => Object.fromEntries(Object.entries(groups).map(([k, pids]) => [k, new Map(pids().map((p) => [p, cpuMs(p)]))])) as Record<string, Map<number, number>>;
  const before = read();
  const self = process.cpuUsage();
  return () => {
    const after = read();
    const used: Record<string, number> = {};
    for (const [k, m] of Object.entries(after)) {
      let sum = 0;
      for (const [pid, ms] of m) {
        const b = before[k]!.get(pid);
        if (b !== undefined && Number.isFinite(ms) && Number.isFinite(b)) sum += ms - b;
      }
      used[k] = sum;
    }
    const d = process.cpuUsage(self);
    used["bench process"] = Math.round((d.user + d.system) / 1000);
    return used;
  };
}

/** Resident set size of a process in KiB (VmRSS), or NaN when it is gone. */
export function rssKb(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** A started child with its captured output (last 64 KiB of each stream). */
export interface Child {
  name: string;
  proc: ChildProcess;
  pid: number;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const children = new Set<Child>();
const CAP = 64 * 1024;

/**
 * Spawns `cmd args`; when the soft open-file limit is below `needFds`, runs it through
 * `sh -c "ulimit -n …; exec …"` so the limit is raised for that process only.
 */
export function start(name: string, cmd: string, args: string[], opts: SpawnOptions & { needFds?: number } = {}): Child {
  const { needFds = 0, ...spawnOpts } = opts;
  const lim = fdLimit();
  let file = cmd;
  let argv = args;
  if (needFds > lim.soft) {
    const target = Math.min(65536, lim.hard);
    if (target < needFds) console.warn(`warning: ${name} needs ~${needFds} open files but the hard limit is ${lim.hard}; it may fail`);
    file = "sh";
    argv = ["-c", `ulimit -n ${target}; exec "$0" "$@"`, cmd, ...args];
  }
  const proc = spawn(file, argv, { stdio: ["ignore", "pipe", "pipe"], ...spawnOpts });
  let out = "";
  let err = "";
  proc.stdout?.on("data", (d: Buffer) => (out = (out + d.toString()).slice(-CAP)));
  proc.stderr?.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-CAP)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.once("exit", (code, signal) => resolve({ code, signal }));
    proc.once("error", () => resolve({ code: -1, signal: null }));
  });
  if (proc.pid === undefined) throw new Error(`could not start ${name} (${cmd})`);
  const child: Child = { name, proc, pid: proc.pid, stdout: () => out, stderr: () => err, exited };
  children.add(child);
  void exited.then(() => children.delete(child));
  return child;
}

/** Whether the child is still running. */
export function alive(c: Child): boolean {
  return c.proc.exitCode === null && c.proc.signalCode === null;
}

/** Stops one child: SIGTERM, then SIGKILL after `graceMs`; resolves when it has exited. */
export async function stop(c: Child, graceMs = 5000): Promise<void> {
  if (!alive(c)) return;
  c.proc.kill("SIGTERM");
  const t = setTimeout(() => alive(c) && c.proc.kill("SIGKILL"), graceMs);
  await c.exited;
  clearTimeout(t);
}

/** Stops every child this process started that is still running. */
export async function stopAll(): Promise<void> {
  await Promise.all([...children].map((c) => stop(c)));
}

/** Resolves with the first output line (stdout, or stderr) matching `re`; rejects when the child exits or `timeoutMs` passes. */
export function waitForLine(c: Child, re: RegExp, timeoutMs: number, from: "stdout" | "stderr" = "stdout"): Promise<RegExpExecArray> {
  const stream = from === "stdout" ? c.proc.stdout : c.proc.stderr;
  return new Promise((resolve, reject) => {
    const check = () => {
      const m = re.exec(from === "stdout" ? c.stdout() : c.stderr());
      if (m) {
        done();
        resolve(m);
      }
    };
    const onExit = () => {
      done();
      reject(new Error(`${c.name} exited before printing ${re}; stderr:\n${c.stderr().slice(-4000)}`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`${c.name} did not print ${re} within ${timeoutMs} ms; stderr:\n${c.stderr().slice(-4000)}`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      stream?.off("data", check);
      c.proc.off("exit", onExit);
    };
    stream?.on("data", check);
    c.proc.once("exit", onExit);
    check();
  });
}

/** Sleeps. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Waits `settleMs`, then takes `count` VmRSS samples `everyMs` apart and returns them (KiB). */
export async function sampleRss(pid: number, settleMs = 3000, count = 5, everyMs = 500): Promise<number[]> {
  await sleep(settleMs);
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    if (i) await sleep(everyMs);
    out.push(rssKb(pid));
  }
  return out;
}

/** A settled RSS reading: the median of the last samples, and every sample taken. */
export interface SettledRss {
  medianKb: number;
  /** (max − min) / median of the samples the median is taken from. */
  spread: number;
  waitedMs: number;
  samplesKb: number[];
}

/**
 * Waits 3 s, then samples VmRSS every 500 ms until the last 5 samples lie within 1 % of each
 * other (the garbage collector has stopped returning memory) or `maxMs` has passed; the
 * reading is the median of those last 5.
 */
export async function settledRss(pid: number, maxMs = 20_000): Promise<SettledRss> {
  const t0 = performance.now();
  await sleep(3000);
  const samples: number[] = [];
  for (;;) {
    samples.push(rssKb(pid));
    const last = samples.slice(-5);
    const sorted = [...last].sort((a, b) => a - b);
    const mid = sorted[Math.floor(sorted.length / 2)];
    const spread = (sorted[sorted.length - 1] - sorted[0]) / mid;
    if ((last.length === 5 && spread <= 0.01) || performance.now() - t0 > maxMs) {
      return { medianKb: mid, spread, waitedMs: performance.now() - t0, samplesKb: samples };
    }
    await sleep(500);
  }
}
