/** Builds the compiled edge binary, the web console and the CLI (dist/cli, what bin/ongrid.mjs runs) once for every test file that needs them. */
import { execFileSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");

/** Path of the binary the tests run. */
export const EDGE_BIN = join(ROOT, "dist", "ongrid-edge-test");

export default function setup(): void {
  execFileSync(process.execPath, [join(ROOT, "scripts", "build-edge.mjs"), EDGE_BIN], { cwd: ROOT, stdio: "pipe" });
  if (!existsSync(EDGE_BIN) || statSync(EDGE_BIN).size < 1_000_000) throw new Error(`edge build did not produce ${EDGE_BIN}`);
  // The manager serves dist/console; build it when a source is newer (scripts/build-web.mjs decides).
  execFileSync(process.execPath, [join(ROOT, "scripts", "build-web.mjs")], { cwd: ROOT, stdio: "pipe" });
  if (!existsSync(join(ROOT, "dist", "console", "index.html"))) throw new Error("web console build did not produce dist/console/index.html");
  // The CLI tests run bin/ongrid.mjs, which runs this build (as users do) while it is newer than its sources.
  execFileSync(process.execPath, [join(ROOT, "scripts", "build-cli.mjs"), "--quiet"], { cwd: ROOT, stdio: "pipe" });
  if (!existsSync(join(ROOT, "dist", "cli", "main.mjs"))) throw new Error("CLI build did not produce dist/cli/main.mjs");
}
