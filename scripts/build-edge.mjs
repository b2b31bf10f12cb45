#!/usr/bin/env node
// Builds the self-contained edge binary dist/ongrid-edge with `bun build --compile` (bun from npm).
import { execFileSync } from "node:child_process";
import { mkdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const out = process.argv[2] ?? join(root, "dist", "ongrid-edge");
mkdirSync(join(out, ".."), { recursive: true });
const bun = join(root, "node_modules", ".bin", "bun");
// --smol: a smaller JavaScriptCore heap, collected more often (≈ 1.4 MB less idle RSS once the
// agent runs without the JIT, see edge/jit.ts; docs/performance.md "Edge idle RSS").
// --bytecode (with --format=esm, which the top-level await in edge/cli.ts needs): the bundle ships
// as JavaScriptCore bytecode, so neither start of the agent (it re-executes itself once, edge/jit.ts)
// parses ≈ 4 MB of JavaScript: `ongrid-edge --version` 180 → 60 ms, start to connected ≈ 180 → 85 ms.
execFileSync(bun, ["build", "--compile", "--minify", "--bytecode", "--format=esm", "--sourcemap=none", "--compile-exec-argv=--smol", join(root, "edge", "cli.ts"), "--outfile", out], { cwd: root, stdio: "inherit" });
console.log(`built ${out} (${(statSync(out).size / 1048576).toFixed(1)} MiB)`);
