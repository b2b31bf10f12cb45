#!/usr/bin/env node
// Fails when `buf generate` would change the committed proto/gen, or when the drizzle schema
// has changes that no committed migration covers. Run by `npm run gen:check` and by the test suite.
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, existsSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";

const root = resolve(process.env.ONGRID_GEN_ROOT ?? resolve(import.meta.dirname, ".."));
const bin = join(resolve(import.meta.dirname, ".."), "node_modules", ".bin");
const env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };

function files(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => relative(dir, join(d.parentPath ?? d.path, d.name)))
    .sort();
}

function compareTrees(label, expectedDir, actualDir) {
  const problems = [];
  const a = files(expectedDir);
  const b = files(actualDir);
  for (const f of new Set([...a, ...b])) {
    if (!a.includes(f)) problems.push(`${label}: ${f} is committed but would not be generated`);
    else if (!b.includes(f)) problems.push(`${label}: ${f} would be created`);
    else if (!readFileSync(join(expectedDir, f)).equals(readFileSync(join(actualDir, f)))) problems.push(`${label}: ${f} would change`);
  }
  return problems;
}

const tmp = mkdtempSync(join(tmpdir(), "ongrid-gen-"));
function run(cmd, args) {
  try {
    execFileSync(cmd, args, { cwd: tmp, env, stdio: "pipe" });
  } catch (err) {
    throw new Error(`${cmd} ${args.join(" ")} failed:\n${err.stdout ?? ""}${err.stderr ?? ""}`);
  }
}
const problems = [];
try {
  // protobuf: generate from a copy of the contract and compare with the committed output.
  cpSync(join(root, "proto", "ongrid"), join(tmp, "proto", "ongrid"), { recursive: true });
  cpSync(join(root, "buf.yaml"), join(tmp, "buf.yaml"));
  cpSync(join(root, "buf.gen.yaml"), join(tmp, "buf.gen.yaml"));
  run("buf", ["generate"]);
  problems.push(...compareTrees("proto/gen", join(tmp, "proto", "gen"), join(root, "proto", "gen")));

  // drizzle: generating from the schema must not produce a new migration.
  const migrations = join(root, "manager", "db", "migrations");
  if (existsSync(join(root, "manager", "db", "drizzle.config.ts"))) {
    cpSync(join(root, "manager", "db"), join(tmp, "manager", "db"), { recursive: true });
    cpSync(join(root, "package.json"), join(tmp, "package.json"));
    symlinkSync(resolve(import.meta.dirname, "..", "node_modules"), join(tmp, "node_modules"));
    run("drizzle-kit", ["generate", "--config", "manager/db/drizzle.config.ts"]);
    problems.push(...compareTrees("manager/db/migrations", join(tmp, "manager", "db", "migrations"), migrations));
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
if (problems.length) {
  console.error(`generated code is stale; run \`npm run gen\` and commit:\n  ${problems.join("\n  ")}`);
  process.exit(1);
}
console.log("generated code is up to date (proto/gen, manager/db/migrations)");
