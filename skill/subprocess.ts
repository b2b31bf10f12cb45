/**
 * Runs one child process for a skill (C3, E1): no shell, its own process group, a deadline and
 * cancellation that kill the whole group (grandchildren included), and capped output.
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";

/** What runProcess runs and under which limits. */
export interface RunProcessOptions {
  /** The executable: a path, or a name looked up in env.PATH (process PATH when env is omitted). */
  file: string;
  args?: readonly string[];
  cwd?: string;
  /** The child's whole environment (nothing is inherited when given). */
  env?: Readonly<Record<string, string>>;
  /** Written to stdin, which is then closed; without it stdin is /dev/null. */
  input?: string | Uint8Array;
  /** Aborting it kills the process group (cancellation, the call's deadline). */
  signal?: AbortSignal;
  /** Kills the process group after this long. */
  timeoutMs: number;
  /** Bytes kept of each of stdout and stderr; the rest is counted and dropped. */
  maxOutputBytes: number;
  /** Time between SIGTERM and SIGKILL to the group; 2000 ms by default. */
  killGraceMs?: number;
  /**
   * Kill the process group as soon as stdout passes maxOutputBytes, for callers that refuse a
   * truncated stdout anyway (skill packs): otherwise a process that keeps writing runs until timeoutMs.
   */
  killOnStdoutOverflow?: boolean;
}

/** How the process ended; a non-zero exit is a normal result, not an exception. */
export interface ProcessResult {
  /** Exit code, or null when the process was ended by a signal. */
  exitCode: number | null;
  /** The signal that ended the process, if any. */
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  durationMs: number;
  /** The group was killed because timeoutMs passed. */
  timedOut: boolean;
  /** The group was killed because `signal` was aborted. */
  cancelled: boolean;
  /** Pid of the process (and id of its process group); undefined when it never started. */
  pid?: number;
}

/** The process could not be started at all (missing executable, bad cwd, no permission). */
export class ProcessStartError extends Error {
  /** errno code: ENOENT, EACCES, ENOTDIR, … */
  readonly code: string;
  /** Which input was wrong: the executable or the working directory. */
  readonly subject: "file" | "cwd";
  constructor(code: string, subject: "file" | "cwd", message: string) {
    super(message);
    this.name = "ProcessStartError";
    this.code = code;
    this.subject = subject;
  }
}

/** A PATH with the system binary directories, for skills that run host tools with a minimal environment. */
export const SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

const DEFAULT_GRACE_MS = 2000;
/** How long stdout/stderr may stay open after the group was killed (held by a process that left the group). */
const DRAIN_MS = 1000;
const POLL_MS = 50;
/** Upper bound on waiting for SIGKILLed processes to disappear. */
const KILL_WAIT_MS = 1000;

/** One command of a pipeline: run without a shell, its stdout wired to the next one's stdin. */
export interface Stage {
  file: string;
  args?: readonly string[];
}

/** Runs the stages of a pipeline under the same user, environment and limits. */
export interface RunPipelineOptions extends Omit<RunProcessOptions, "file" | "args"> {
  /** Run each stage as this user and group (the caller must be root); none: as the caller. */
  runAs?: { uid: number; gid: number };
}

/**
 * Runs `file args` without a shell as the leader of a new process group. On timeout, abort, or
 * when the leader exits while others in its group live on (background jobs), the group gets
 * SIGTERM, then SIGKILL after the grace period, so nothing the call started outlives it (a process
 * that makes its own session with setsid escapes; only a cgroup would catch it). Resolves once the
 * group is gone; throws ProcessStartError only when the process could not start.
 */
export async function runProcess(opts: RunProcessOptions): Promise<ProcessResult> {
  return runPipeline([{ file: opts.file, args: opts.args }], opts);
}

/**
 * Runs a pipeline without a shell: each stage is the leader of its own process group, stage i's
 * stdout is stage i+1's stdin, stdout is the last stage's, stderr every stage's, the exit status the
 * last stage's (as sh reports a pipeline). Deadline, cancellation and background jobs are handled
 * as runProcess says, for every stage's group.
 */
export async function runPipeline(stages: readonly Stage[], opts: RunPipelineOptions): Promise<ProcessResult> {
  const started = performance.now();
  const cap = Math.max(0, Math.floor(opts.maxOutputBytes));
  const grace = opts.killGraceMs ?? DEFAULT_GRACE_MS;
  const result = (partial: Partial<ProcessResult>): ProcessResult => ({
    exitCode: null,
    signal: null,
    stdout: "",
    stderr: "",
    stdoutTruncated: false,
    stderrTruncated: false,
    durationMs: Math.round(performance.now() - started),
    timedOut: false,
    cancelled: false,
    ...partial,
  });
  if (stages.length === 0) throw new ProcessStartError("EINVAL", "file", "an empty pipeline");
  if (opts.signal?.aborted) return result({ cancelled: true });
  if (opts.cwd !== undefined) {
    let isDir = false;
    try {
      isDir = statSync(opts.cwd).isDirectory();
    } catch (err) {
      throw new ProcessStartError((err as NodeJS.ErrnoException).code ?? "ENOENT", "cwd", `working directory ${opts.cwd} does not exist or cannot be read`);
    }
    if (!isDir) throw new ProcessStartError("ENOTDIR", "cwd", `working directory ${opts.cwd} is not a directory`);
  }

  const startError = (file: string, e: NodeJS.ErrnoException): ProcessStartError => {
    const code = e.code ?? "EUNKNOWN";
    const what = code === "ENOENT" ? "not found" : code === "EACCES" ? "permission denied" : `cannot start (${code})`;
    return new ProcessStartError(code, "file", `${file}: ${what}`);
  };
  const children: ReturnType<typeof spawn>[] = [];
  const pids: number[] = [];
  const out = new Capture(cap);
  const err = new Capture(cap);
  const killAll = () => pids.forEach((p) => signalGroup(p, "SIGKILL"));
  for (const [i, stage] of stages.entries()) {
    const last = i === stages.length - 1;
    // Stage i+1's stdin is fed from stage i's stdout through this process (Bun cannot hand a child's pipe to another child).
    const stdin = i > 0 || opts.input !== undefined ? "pipe" : "ignore";
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(stage.file, [...(stage.args ?? [])], {
        cwd: opts.cwd,
        env: opts.env ? { ...opts.env } : undefined,
        detached: true,
        shell: false,
        windowsHide: true,
        stdio: [stdin, "pipe", "pipe"],
        ...(opts.runAs ? { uid: opts.runAs.uid, gid: opts.runAs.gid } : {}),
      });
    } catch (e) {
      killAll();
      throw startError(stage.file, e as NodeJS.ErrnoException);
    }
    const failed = new Promise<NodeJS.ErrnoException>((resolve) => child.once("error", resolve));
    if (child.pid === undefined) {
      killAll();
      throw startError(stage.file, await failed);
    }
    child.on("error", () => {
      /* after a successful start only a failed kill can error; the group is signalled directly */
    });
    if (i > 0) {
      const from = children[i - 1].stdout!;
      const to = child.stdin!;
      // When this stage stops reading (head -n 1 exits), the previous one must not block on a full pipe:
      // closing its stdout's read end makes its next write fail (SIGPIPE), as in a shell pipeline.
      to.on("error", () => from.destroy());
      to.on("close", () => from.destroy());
      from.pipe(to);
    }
    children.push(child);
    pids.push(child.pid);
    if (last) child.stdout?.on("data", (b: Buffer) => out.push(b));
    child.stderr?.on("data", (b: Buffer) => err.push(b));
  }
  const first = children[0];
  if (first.stdin && opts.input !== undefined) {
    first.stdin.on("error", () => {
      /* EPIPE: the child stopped reading; its exit status tells the rest */
    });
    first.stdin.end(opts.input);
  }
  const exits = children.map(
    (child) => new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal }))),
  );
  const exited = Promise.all(exits);

  // Registered before any await, so an abort right after the start is never missed.
  let timedOut = false;
  let cancelled = false;
  let killing: Promise<void> | undefined;
  let leadersDone = false;
  void exited.then(() => {
    leadersDone = true;
  });
  const anyAlive = () => pids.some((p) => groupAlive(p));
  const killGroups = (): Promise<void> => {
    killing ??= (async () => {
      for (const p of pids) signalGroup(p, "SIGTERM");
      const until = performance.now() + grace;
      while (performance.now() < until && (anyAlive() || !leadersDone)) await sleep(POLL_MS);
      if (!anyAlive() && leadersDone) return;
      for (const p of pids) signalGroup(p, "SIGKILL");
      // SIGKILL is delivered asynchronously: wait (bounded) until the kernel has ended them.
      const killed = performance.now() + KILL_WAIT_MS;
      while (performance.now() < killed && anyAlive()) await sleep(10);
    })();
    return killing;
  };
  const timer = setTimeout(() => {
    timedOut = true;
    void killGroups();
  }, Math.max(1, Math.min(opts.timeoutMs, 2_147_483_647)));
  const onAbort = () => {
    cancelled = true;
    void killGroups();
  };
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  const lastChild = children[children.length - 1];
  if (opts.killOnStdoutOverflow) {
    // Registered after the capturing listener, so `truncated` is already up to date.
    lastChild.stdout?.on("data", () => {
      if (out.truncated) void killGroups();
    });
  }

  try {
    const all = await exited;
    const exit = all[all.length - 1];
    // Background jobs of a leader (still in its group) would keep the pipes open: end them too.
    if (anyAlive()) await killGroups();
    else if (killing) await killing;
    await Promise.all(children.map((c) => drain(c, DRAIN_MS)));
    return result({
      exitCode: exit.code,
      signal: exit.signal,
      stdout: out.text(),
      stderr: err.text(),
      stdoutTruncated: out.truncated,
      stderrTruncated: err.truncated,
      timedOut,
      cancelled: cancelled && !timedOut,
      pid: pids[0],
    });
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", onAbort);
  }
}

/** Keeps the first `cap` bytes of a stream. */
class Capture {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  truncated = false;
  constructor(private readonly cap: number) {}
  push(b: Buffer): void {
    const room = this.cap - this.size;
    if (room <= 0) {
      if (b.length > 0) this.truncated = true;
      return;
    }
    const keep = b.length > room ? b.subarray(0, room) : b;
    if (keep.length < b.length) this.truncated = true;
    this.chunks.push(keep);
    this.size += keep.length;
  }
  text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }
}

function signalGroup(pgid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pgid, sig);
  } catch {
    /* ESRCH: the group is already gone */
  }
}

/**
 * True while a process of the group is alive. kill(-pgid, 0) also succeeds for zombies (which an
 * init that does not reap leaves behind), so on Linux the group's members are checked in /proc.
 */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return true;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readStat(name);
    if (stat && stat.pgrp === pgid && stat.state !== "Z" && stat.state !== "X") return true;
  }
  return false;
}

/** True when the process exists and is not a zombie; for tests and callers that track a pid. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = readStat(String(pid));
  return stat === undefined ? true : stat.state !== "Z" && stat.state !== "X";
}

function readStat(pid: string): { state: string; pgrp: number } | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return { state: f[0], pgrp: Number(f[2]) };
  } catch {
    return undefined;
  }
}

async function drain(child: ReturnType<typeof spawn>, ms: number): Promise<void> {
  const streams = [child.stdout, child.stderr].filter((s) => s && !s.closed && !s.destroyed);
  if (streams.length === 0) return;
  const closed = Promise.all(streams.map((s) => new Promise<void>((resolve) => s!.once("close", () => resolve()))));
  let t: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    t = setTimeout(resolve, ms);
  });
  await Promise.race([closed, timeout]);
  clearTimeout(t);
  for (const s of streams) s!.destroy();
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
