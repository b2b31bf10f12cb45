#!/usr/bin/env node
// The ongrid CLI. It runs the prebuilt JavaScript in dist/cli/ (scripts/build-cli.mjs; `prepare`
// and `prestart` build it) when that is there and not older than any of its sources; otherwise, and
// with ONGRID_FROM_SOURCE=1, the TypeScript sources through tsx's loader, as in development.
import { readFileSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../", import.meta.url));
const built = `${root}dist/cli/main.mjs`;

/** Whether dist/cli holds a build at least as new as every source it was built from. */
function buildCurrent() {
  let stamp;
  let inputs;
  try {
    const list = `${root}dist/cli/inputs.json`;
    stamp = statSync(list).mtimeMs;
    inputs = JSON.parse(readFileSync(list, "utf8"));
    statSync(built);
  } catch {
    return false;
  }
  // Plain path strings: a stat of each of the ≈ 270 sources costs a few milliseconds in all.
  for (const file of inputs) {
    const st = statSync(root + file, { throwIfNoEntry: false });
    if (!st || st.mtimeMs > stamp) return stale(file);
  }
  return true;
}

function stale(file) {
  process.stderr.write(`ongrid: dist/cli is older than ${file}; running from source (npm run build:cli rebuilds it)\n`);
  return false;
}

if (process.env.ONGRID_FROM_SOURCE !== "1" && buildCurrent()) {
  await import(new URL("../dist/cli/main.mjs", import.meta.url).href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("../manager/cli/main.ts");
}
