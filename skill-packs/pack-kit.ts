/** Test kit of the shipped packs: loads a pack through the real loader and calls it through the real runner. */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { accessSync, chmodSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { lintSkill, type LintFinding } from "../skill/lint.ts";
import { createPackSet, type RescanReport } from "../skill/pack/loader.ts";
import { readManifest, type ManifestProblem, type PackSkillSpec } from "../skill/pack/manifest.ts";
import { createRegistry, type SkillRegistry } from "../skill/registry.ts";
import { runSkill } from "../skill/run.ts";
import { SYSTEM_PATH } from "../skill/subprocess.ts";
import type { ResultEnvelope } from "../skill/types.ts";
import { validateParams } from "../skill/validate.ts";

const log = pino({ level: "silent" });

/** One pack, loaded as an edge loads it. */
export interface LoadedPack {
  /** What readManifest(dir, "host") returned. */
  manifest: { skills: PackSkillSpec[]; problems: ManifestProblem[] };
  /** The loader's first rescan into a fresh registry. */
  report: RescanReport;
  registry: SkillRegistry;
  /** Lint errors (not warnings) of every registered skill. */
  lintErrors: LintFinding[];
  /** validateParams then runSkill, as the edge runs a call; resolves to the result envelope. */
  call(key: string, params: Record<string, unknown>, timeoutMs?: number): Promise<ResultEnvelope>;
  /** runSkill without validateParams: shows the pack's own (defensive) checks. */
  callUnvalidated(key: string, params: Record<string, unknown>): Promise<ResultEnvelope>;
}

/** Reads the manifest, registers the pack with createPackSet into createRegistry() and returns a caller. */
export function loadPack(dir: string): LoadedPack {
  const manifest = readManifest(dir, "host");
  const registry = createRegistry({ log });
  const report = createPackSet({ dirs: [dir], scope: "host", registry, log }).rescan();
  const lintErrors = registry.list().flatMap((s) => lintSkill(s).filter((f) => f.severity === "error"));
  let n = 0;
  return {
    manifest,
    report,
    registry,
    lintErrors,
    async call(key, params, timeoutMs = 30_000) {
      const skill = registry.getOrThrow(key);
      return runSkill(skill, validateParams(skill, params), { callId: `t-${++n}`, timeoutMs, outputCapBytes: 4 * 1024 * 1024, log, edgeId: "edge-test" });
    },
    async callUnvalidated(key, params) {
      return runSkill(registry.getOrThrow(key), params, { callId: `t-${++n}`, timeoutMs: 30_000, outputCapBytes: 4 * 1024 * 1024, log, edgeId: "edge-test" });
    },
  };
}

/** The output of a successful envelope (fails the test with the envelope's error otherwise). */
export function outputOf<T = any>(env: ResultEnvelope): T {
  if (!env.success) throw new Error(`expected success, got ${JSON.stringify(env.error)}`);
  return env.output as T;
}

/** Runs fn with process.env changed (the runner passes allow-listed names from process.env), then restores it. */
export async function withEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(vars)) {
    saved[k] = process.env[k];
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** Absolute path of a command on the system PATH packs see, or undefined. */
export function systemCommand(name: string): string | undefined {
  for (const dir of SYSTEM_PATH.split(":")) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      /* next */
    }
  }
  return undefined;
}

/** Runs a command for test setup; throws with its stderr on failure. */
export function sh(file: string, ...args: string[]): string {
  return execFileSync(file, args, { stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
}

/** Like sh, but returns undefined instead of throwing (cleanup). */
export function trySh(file: string, ...args: string[]): string | undefined {
  try {
    return sh(file, ...args);
  } catch {
    return undefined;
  }
}

/** A short random suffix for names of test objects (namespaces, tables, maps). */
export function suffix(): string {
  return randomBytes(3).toString("hex");
}

/** A scratch directory for fake tools, removed by the returned cleanup. */
export function scratchDir(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `ongrid-${prefix}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Writes an executable Python stand-in for a tool: it appends its argv (one JSON line) to
 * `<file>.argv` and then runs body, which sees `argv` (sys.argv[1:]) and the imports json, os, sys.
 */
export function fakeTool(dir: string, name: string, body: string): { path: string; calls: () => string[][] } {
  const path = join(dir, name);
  const script = [
    "#!/usr/bin/env python3",
    "import json, os, sys",
    "argv = sys.argv[1:]",
    `with open(${JSON.stringify(`${path}.argv`)}, "a") as f:`,
    "    f.write(json.dumps(argv) + '\\n')",
    body,
    "",
  ].join("\n");
  writeFileSync(path, script);
  chmodSync(path, 0o755);
  return {
    path,
    calls: () => {
      try {
        return readFileSync(`${path}.argv`, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as string[]);
      } catch {
        return [];
      }
    },
  };
}

/**
 * A wrapper that runs the real tool as user nobody (setpriv), so the pack meets the tool's
 * real permission errors while the test itself runs as root; undefined without setpriv or root.
 */
export function asNobody(dir: string, tool: string): string | undefined {
  const setpriv = systemCommand("setpriv");
  if (!setpriv || process.getuid?.() !== 0) return undefined;
  const path = join(dir, `${tool.split("/").pop()}-as-nobody`);
  writeFileSync(
    path,
    ["#!/usr/bin/env python3", "import os, sys", `os.execv(${JSON.stringify(setpriv)}, ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", ${JSON.stringify(tool)}, *sys.argv[1:]])`, ""].join("\n"),
  );
  chmodSync(path, 0o755);
  return path;
}

/** Whether the test process runs as root (the real-tool tests create namespaces, tables and maps). */
export const isRoot = process.getuid?.() === 0;
