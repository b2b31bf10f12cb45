#!/usr/bin/env node
// Builds the web console (manager/web) with Vite into dist/console, unless the build is newer than
// every source it comes from. `--force` always builds. `npm start` runs this first.
import { existsSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const web = join(root, "manager", "web");
const dir = join(root, "dist", "console");
const out = join(dir, "index.html");
const force = process.argv.includes("--force");

/** Newest modification time under the given paths (files or directories). */
function newest(paths) {
  let t = 0;
  for (const p of paths) {
    if (!existsSync(p)) continue;
    const st = statSync(p);
    if (st.isDirectory()) t = Math.max(t, newest(readdirSync(p).map((n) => join(p, n))));
    else t = Math.max(t, st.mtimeMs);
  }
  return t;
}

const sources = [join(web, "src"), join(web, "index.html"), join(web, "vite.config.ts"), join(root, "proto", "gen"), join(root, "package-lock.json")];
if (!force && existsSync(out) && statSync(out).mtimeMs >= newest(sources)) {
  console.log("web console is up to date (dist/console)");
  process.exit(0);
}
let vite;
try {
  vite = await import("vite");
} catch {
  console.error("cannot build the web console: the `vite` package is missing (run `npm install`, which installs dev dependencies)");
  process.exit(1);
}
const started = Date.now();
// Build beside the served directory and swap it in, so a manager serving dist/console (another
// test run, a running `npm start`) never sees a half-written build.
const tmp = `${dir}.tmp-${process.pid}`;
const old = `${dir}.old-${process.pid}`;
await vite.build({ configFile: join(web, "vite.config.ts"), logLevel: "warn", build: { outDir: tmp, emptyOutDir: true } });
if (existsSync(dir)) renameSync(dir, old);
renameSync(tmp, dir);
rmSync(old, { recursive: true, force: true });
console.log(`built the web console into dist/console in ${((Date.now() - started) / 1000).toFixed(1)} s`);
