/**
 * The compiled agent runs on JavaScriptCore's interpreter, without its JIT compilers: an idle,
 * connected edge then takes ≈ 15 MB less resident memory (docs/performance.md, "Edge idle RSS"),
 * and its work (framing, spawning commands, reading /proc) is not CPU-bound.
 *
 * JSC reads its options once, at start-up, from BUN_JSC_* variables, so the binary re-executes
 * itself (same pid, same arguments) with BUN_JSC_useJIT=0 before anything else is loaded. An
 * operator who sets BUN_JSC_useJIT themselves (e.g. =1 to keep the JIT) is left alone.
 */

/** Set (to "0") in the environment of the re-executed agent only; never passed on. */
const MARK = "ONGRID_EDGE_NO_JIT";

/** Re-executes the compiled binary without the JIT unless already so; returns when nothing is to be done. */
export function interpreterOnly(env: NodeJS.ProcessEnv = process.env): void {
  if (env[MARK] !== undefined) {
    // We are the re-executed agent: our children (commands run by skills) get the environment we were started with.
    delete env[MARK];
    delete env.BUN_JSC_useJIT;
    return;
  }
  const bun = (globalThis as { Bun?: { main: string } }).Bun;
  // Only the compiled binary (its entry is in Bun's embedded file system); `node`/`tsx` runs are left as they are.
  if (!bun || !bun.main.startsWith("/$bunfs/") || env.BUN_JSC_useJIT !== undefined) return;
  const execve = (process as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never }).execve;
  if (typeof execve !== "function") return;
  try {
    execve.call(process, process.execPath, [process.execPath, ...process.argv.slice(2)], { ...env, BUN_JSC_useJIT: "0", [MARK]: "0" });
  } catch {
    // The binary cannot be executed again (e.g. replaced or removed since it started): run with the JIT.
  }
}
