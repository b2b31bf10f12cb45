/**
 * A CPU share for one process of a benchmark, by a Linux control group of its own: the process
 * may use `cpus` CPUs' worth of time (cgroup v2 cpu.max, or v1 cpu.cfs_quota_us), however many the
 * machine has. It stands in for "this process on a machine of its own of that size" where the
 * machine is too small to give each process its own cores: the processes under a limit are then
 * measured at equal shares and do not take each other's time. Needs root (or a delegated
 * subtree); `cpuLimitSupport` says why not when it cannot.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The scheduler's accounting period for the quota: short, so a throttled process waits at most this long. */
const PERIOD_US = 20_000;

interface Layout {
  /** The directory new groups are made in, and the group a process goes back to before its group is removed. */
  base: string;
  /** Writes the limit into a group. */
  limit(dir: string, cpus: number): void;
}

function layout(): Layout | string {
  if (process.platform !== "linux") return `CPU limits need Linux control groups (this is ${process.platform})`;
  const v2 = "/sys/fs/cgroup";
  if (existsSync(join(v2, "cgroup.controllers")) && !existsSync(join(v2, "cpu"))) {
    if (!readFileSync(join(v2, "cgroup.controllers"), "utf8").split(/\s+/).includes("cpu")) return "the cgroup v2 hierarchy has no cpu controller";
    const subtree = join(v2, "cgroup.subtree_control");
    if (!readFileSync(subtree, "utf8").split(/\s+/).includes("cpu")) {
      try {
        writeFileSync(subtree, "+cpu");
      } catch (err) {
        return `cannot enable the cpu controller in ${subtree}: ${(err as Error).message}`;
      }
    }
    return { base: v2, limit: (dir, cpus) => writeFileSync(join(dir, "cpu.max"), `${Math.round(cpus * PERIOD_US)} ${PERIOD_US}`) };
  }
  const v1 = join(v2, "cpu");
  if (existsSync(join(v1, "cpu.cfs_quota_us"))) {
    return {
      base: v1,
      limit: (dir, cpus) => {
        writeFileSync(join(dir, "cpu.cfs_period_us"), String(PERIOD_US));
        writeFileSync(join(dir, "cpu.cfs_quota_us"), String(Math.round(cpus * PERIOD_US)));
      },
    };
  }
  return "no cgroup cpu controller is mounted under /sys/fs/cgroup";
}

/** undefined when limits can be set here, else why not. */
export function cpuLimitSupport(): string | undefined {
  const l = layout();
  if (typeof l === "string") return l;
  const probe = join(l.base, `ongrid-bench-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    l.limit(probe, 1);
  } catch (err) {
    return `cannot create a control group under ${l.base}: ${(err as Error).message} (run as root)`;
  } finally {
    try {
      rmdirSync(probe);
    } catch {
      // not made
    }
  }
  return undefined;
}

/**
 * Puts process `pid` (all its threads) into a new group `name` limited to `cpus` CPUs. Returns the
 * function that takes the process out again (if it still runs) and removes the group.
 */
export function limitCpu(pid: number, cpus: number, name: string): () => void {
  if (!(cpus > 0)) throw new Error(`CPU limit for ${name}: ${cpus} is not a positive number of CPUs`);
  const l = layout();
  if (typeof l === "string") throw new Error(`CPU limit for ${name}: ${l}`);
  const dir = join(l.base, `ongrid-bench-${name}-${process.pid}`);
  mkdirSync(dir);
  l.limit(dir, cpus);
  writeFileSync(join(dir, "cgroup.procs"), String(pid));
  return () => {
    try {
      for (const p of readFileSync(join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean)) writeFileSync(join(l.base, "cgroup.procs"), p);
      rmdirSync(dir);
    } catch {
      // already gone with its process
    }
  };
}
