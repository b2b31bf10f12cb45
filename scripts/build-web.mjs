#!/usr/bin/env node
// Builds the web console (manager/web) with Vite into dist/console, unless the build is newer than
// every source it comes from. `--force` always builds. `npm start` runs this first; without Vite
// (an install without dev dependencies) it says so and lets the manager start without a console.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, statSync, unlinkSync, writeSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const web = join(root, "manager", "web");
const dir = join(root, "dist", "console");
const out = join(dir, "index.html");
const lock = join(root, "dist", "console.lock");
const force = process.argv.includes("--force");

/** Newest modification time under the given paths; directories count too (a deleted file changes its directory's). */
function newest(paths) {
  let t = 0;
  for (const p of paths) {
    if (!existsSync(p)) continue;
    const st = statSync(p);
    t = Math.max(t, st.mtimeMs);
    if (st.isDirectory()) t = Math.max(t, newest(readdirSync(p).map((n) => join(p, n))));
  }
  return t;
}

const sources = [join(web, "src"), join(web, "index.html"), join(web, "vite.config.ts"), join(root, "proto", "gen"), join(root, "package-lock.json")];
const upToDate = () => existsSync(out) && statSync(out).mtimeMs >= newest(sources);

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** One build at a time (two test runs, or a test run and `npm start`): an exclusive lock file holding the builder's pid. */
async function withLock(fn) {
  mkdirSync(join(root, "dist"), { recursive: true });
  const until = Date.now() + 180_000;
  for (;;) {
    try {
      const fd = openSync(lock, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if (err.code !== "EEXIST") throw err;
      const holder = Number(readFileSync(lock, "utf8").trim());
      // A lock left by a builder that died is taken over (pids <= 1 are never a builder's).
      if (!(holder > 1 && alive(holder))) rmSync(lock, { force: true });
      else if (Date.now() > until) throw new Error(`web console build: ${lock} is held by pid ${holder} for over 3 minutes`);
      else await new Promise((r) => setTimeout(r, 100));
    }
  }
  try {
    return await fn();
  } finally {
    try {
      unlinkSync(lock);
    } catch {
      /* already gone */
    }
  }
}

if (!force && upToDate()) {
  console.log("web console is up to date (dist/console)");
  process.exit(0);
}
let vite;
try {
  vite = await import("vite");
} catch {
  const why = "cannot build the web console: the `vite` package is missing (`npm install` installs it with the dev dependencies)";
  if (force) {
    console.error(why);
    process.exit(1);
  }
  console.warn(`${why}; the manager starts without it and its console paths answer 503 with this advice`);
  process.exit(0);
}
await withLock(async () => {
  // Another builder may have finished while this one waited.
  if (!force && upToDate()) {
    console.log("web console is up to date (dist/console)");
    return;
  }
  const started = Date.now();
  // Build beside the served directory and swap it in, so a manager serving dist/console (another
  // test run, a running `npm start`) never sees a half-written build.
  const tmp = `${dir}.tmp-${process.pid}`;
  const old = `${dir}.old-${process.pid}`;
  try {
    await vite.build({ configFile: join(web, "vite.config.ts"), logLevel: "warn", build: { outDir: tmp, emptyOutDir: true } });
    if (existsSync(dir)) renameSync(dir, old);
    renameSync(tmp, dir);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
    rmSync(old, { recursive: true, force: true });
  }
  console.log(`built the web console into dist/console in ${((Date.now() - started) / 1000).toFixed(1)} s`);
});
