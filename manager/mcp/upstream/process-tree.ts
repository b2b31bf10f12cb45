/**
 * The processes a stdio upstream started (Linux /proc): the SDK's transport stops the server
 * process it spawned, but not what that process spawned in turn (an `npx` wrapper's node, a
 * helper); taken before the server is stopped, and what is left of it is killed after.
 */
import { readdirSync, readFileSync } from "node:fs";

/** A process as /proc names it: its pid and start time (so a reused pid is never mistaken for it). */
export interface ProcessRef {
  pid: number;
  start: string;
}

/** pid, parent pid, state and start time of a process, or undefined when it is gone (or not on Linux). */
function stat(pid: number): { ppid: number; state: string; start: string } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces and ')': fields follow the last ')'.
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { state: rest[0]!, ppid: Number(rest[1]), start: rest[19]! };
}

/** Every live descendant of `pid` (children, their children, …); empty where /proc is not there. */
export function descendants(pid: number): ProcessRef[] {
  let pids: number[];
  try {
    pids = readdirSync("/proc").filter((n) => /^\d+$/.test(n)).map(Number);
  } catch {
    return [];
  }
  const children = new Map<number, Array<{ pid: number; start: string }>>();
  for (const p of pids) {
    const s = stat(p);
    if (!s || s.state === "Z") continue;
    children.set(s.ppid, [...(children.get(s.ppid) ?? []), { pid: p, start: s.start }]);
  }
  const out: ProcessRef[] = [];
  const walk = (parent: number) => {
    for (const c of children.get(parent) ?? []) {
      out.push(c);
      walk(c.pid);
    }
  };
  walk(pid);
  return out;
}

/** The process `pid` as a ref, while it runs. */
export function processRef(pid: number): ProcessRef | undefined {
  const s = stat(pid);
  return s && s.state !== "Z" ? { pid, start: s.start } : undefined;
}

/** Whether the process is still running (a zombie, which only waits to be reaped, is not; nor is another process that got its pid). */
export function isRunning(ref: ProcessRef): boolean {
  const s = stat(ref.pid);
  return Boolean(s && s.state !== "Z" && s.start === ref.start);
}

/** Sends `signal` to each process of `refs` that still runs; returns those it signalled. */
export function signalAll(refs: readonly ProcessRef[], signal: NodeJS.Signals): ProcessRef[] {
  const hit: ProcessRef[] = [];
  for (const ref of refs) {
    if (!isRunning(ref)) continue;
    try {
      process.kill(ref.pid, signal);
      hit.push(ref);
    } catch {
      /* gone meanwhile */
    }
  }
  return hit;
}
