/** Runs the real `ongrid` CLI (bin/ongrid.mjs) as a child process. */
import { spawn, type ChildProcess } from "node:child_process";
import { resolve } from "node:path";

/** Repository root. */
export const ROOT = resolve(import.meta.dirname, "../..");
const BIN = resolve(ROOT, "bin/ongrid.mjs");

/** Output of one CLI run. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `ongrid ...args` to completion; `input`, when given, is written to its stdin (otherwise stdin is closed). */
export function runOngrid(args: string[], env: NodeJS.ProcessEnv = {}, cwd = ROOT, input?: string): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, ...env }, stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    if (input !== undefined) {
      child.stdin!.on("error", () => {}); // the command may exit without reading it
      child.stdin!.end(input);
    }
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d) => (stdout += d));
    child.stderr!.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolvePromise({ code, stdout, stderr }));
  });
}

/** Starts a long-running command and resolves once a line of its stdout matches. */
export function startAndWaitFor(cmd: string, args: string[], pattern: RegExp, opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {}): Promise<{ child: ChildProcess; match: RegExpMatchArray; output: () => string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd ?? ROOT, env: { ...process.env, ...opts.env }, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let out = "";
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${pattern}; output so far:\n${out}`)), opts.timeoutMs ?? 60_000);
    const onData = (d: Buffer) => {
      out += d;
      const match = out.match(pattern);
      if (match) {
        clearTimeout(timer);
        resolvePromise({ child, match, output: () => out });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", (d) => (out += d));
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${cmd} exited with ${code} before printing ${pattern}:\n${out}`));
    });
  });
}

/** Stops a process group started by startAndWaitFor and waits for it to exit. */
export async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  try {
    process.kill(-child.pid!, "SIGTERM");
  } catch {
    return;
  }
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      /* gone */
    }
  }, 10_000);
  await exited;
  clearTimeout(timer);
}
