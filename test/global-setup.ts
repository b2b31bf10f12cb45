/** Builds the compiled edge binary once for every test file that starts real edges. */
import { execFileSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");

/** Path of the binary the tests run. */
export const EDGE_BIN = join(ROOT, "dist", "ongrid-edge-test");

export default function setup(): void {
  execFileSync(process.execPath, [join(ROOT, "scripts", "build-edge.mjs"), EDGE_BIN], { cwd: ROOT, stdio: "pipe" });
  if (!existsSync(EDGE_BIN) || statSync(EDGE_BIN).size < 1_000_000) throw new Error(`edge build did not produce ${EDGE_BIN}`);
}
