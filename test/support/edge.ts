/** Starts real compiled edge agents (dist/ongrid-edge-test, built by test/global-setup.ts) against a test manager. */
import { spawn, type ChildProcess } from "node:child_process";
import { EDGE_BIN } from "../global-setup.ts";
import type { TestManager } from "./manager.ts";

/** A running edge process. */
export interface TestEdge {
  id: string;
  token: string;
  child: ChildProcess;
  output: () => string;
  stop(): Promise<void>;
}

/** Polls `cond` every 25 ms until it holds or `timeoutMs` passes; resolves with whether it held. */
export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Spawns the edge binary with the given arguments (no enrolment, no waiting). */
export function spawnEdge(args: string[], env: NodeJS.ProcessEnv = {}): { child: ChildProcess; output: () => string } {
  const child = spawn(EDGE_BIN, args, { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  return { child, output: () => out };
}

/** Stops a child process and waits for it to exit. */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill(signal);
  const t = setTimeout(() => child.kill("SIGKILL"), 5000);
  await exited;
  clearTimeout(t);
}

/** Enrolls `id` on the manager, starts the binary and waits until the manager holds its session. */
export async function startEdge(m: TestManager, id: string, opts: { labels?: Record<string, string>; roots?: string[]; args?: string[]; url?: string } = {}): Promise<TestEdge> {
  // The labels reach and selectors use are the manager's, given at enrolment; the edge reports the same.
  const { token } = await m.edges.enroll(id, { labels: opts.labels ?? {} });
  const args = ["--manager", opts.url ?? m.url, "--token", token, "--id", id, "--log-level", "debug", ...(opts.args ?? [])];
  for (const [k, v] of Object.entries(opts.labels ?? {})) args.push("--label", `${k}=${v}`);
  for (const r of opts.roots ?? []) args.push("--allowed-root", r);
  const { child, output } = spawnEdge(args);
  const ok = await waitFor(() => Boolean(m.hub.session(id)) || child.exitCode !== null, 20_000);
  if (!ok || !m.hub.session(id)) {
    await stopChild(child);
    throw new Error(`edge ${id} did not connect; its output:\n${output()}`);
  }
  return { id, token, child, output, stop: () => stopChild(child) };
}
