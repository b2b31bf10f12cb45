/**
 * `ongrid skills classify KEY`: the effective class of a call without running it, offline, with
 * exactly the gate's code (A6): the builtin skills, and packs with --pack-dir. One call from
 * --param/--params, or a batch of params JSON objects, one per line, answered one JSON line each.
 * exec is judged with the read roots and the exec allowlist file given (--read-root, --exec-allow-file).
 */
import { readFileSync } from "node:fs";
import { pino } from "pino";
import { createManagerRegistry } from "../skills/builtin/index.ts";
import { hostSkillDefinitions } from "../../skill/catalog/index.ts";
import { createPackSet } from "../../skill/pack/loader.ts";
import { formatProblem } from "../../skill/pack/manifest.ts";
import { effectiveClass } from "../../skill/registry.ts";
import { ExecAllowError } from "../../skill/risk/allow.ts";
import { classifyCommand, configureShellPolicy } from "../../skill/risk/index.ts";
import { shellCommandOf } from "../../skill/risk-classifier.ts";
import { OngridError } from "../../skill/errors.ts";
import type { Skill } from "../../skill/types.ts";
import { validateParams } from "../../skill/validate.ts";
import { coerceParams } from "./params.ts";
import { flagError } from "./common.ts";

/** One answer of `skills classify`. */
export interface ClassifyAnswer {
  key: string;
  class?: string;
  read_only?: boolean;
  reasons?: string[];
  error?: string;
}

/** Classifies one call of `skill` with the gate's code; bad params are an answer with an error, not an exception. */
export function classifyCall(skill: Skill, raw: unknown): ClassifyAnswer {
  const key = skill.meta.key;
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return { key, error: "params must be a JSON object" };
  let params: Record<string, unknown>;
  try {
    params = validateParams(skill, raw as Record<string, unknown>);
  } catch (err) {
    return { key, error: (err as Error).message };
  }
  const cls = effectiveClass(skill, params);
  const shell = shellCommandOf(skill.meta.riskClassifier, params);
  let reasons: string[];
  if (shell) {
    reasons = classifyCommand(String(shell.command ?? ""), { cwd: shell.cwd }).reasons;
  } else {
    reasons = [skill.riskForArgs ? `the skill's own classifier answered ${cls}` : `the skill's static class is ${cls}`];
  }
  return { key, class: cls, read_only: cls === "safe", reasons };
}

/** The flags of `skills classify` (classify-command.ts defines them). */
export interface ClassifyFlags {
  param: string[];
  params?: string;
  batch?: string;
  packDir: string[];
  readRoot: string[];
  execAllowFile?: string;
  json?: boolean;
}

/** Runs `skills classify KEY` (loaded only for that command: it brings the whole shell classifier). */
export function runClassify(key: string, opts: ClassifyFlags): void {
  const bad = opts.readRoot.find((r) => !r.startsWith("/"));
  if (bad) flagError("--read-root", `"${bad}" must be an absolute directory path`);
  try {
    configureShellPolicy({ readRoots: opts.readRoot, allowFile: opts.execAllowFile || undefined });
  } catch (err) {
    if (err instanceof ExecAllowError) flagError("--exec-allow-file", err.message);
    throw err;
  }
  const silent = pino({ level: "silent" });
  const registry = createManagerRegistry();
  for (const def of hostSkillDefinitions()) if (!registry.get(def.key)) registry.register(def);
  if (opts.packDir.length) {
    const r = createPackSet({ dirs: opts.packDir, scope: "host", registry, log: silent }).rescan();
    for (const p of r.problems) console.error(`refused: ${formatProblem(p)}`);
  }
  const skill = registry.get(key);
  if (!skill) throw new OngridError("not_found", `no skill "${key}"`, "`ongrid skills list` shows the keys; pack skills need --pack-dir");
  if (opts.batch !== undefined) {
    if (opts.param.length || opts.params) flagError("--batch", "cannot be combined with --param or --params");
    const text = readFileSync(opts.batch === "-" ? 0 : opts.batch, "utf8");
    let failed = false;
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue;
      let raw: unknown;
      try {
        raw = JSON.parse(line);
      } catch (err) {
        const answer: ClassifyAnswer = { key, error: `not a JSON object: ${(err as Error).message}` };
        console.log(JSON.stringify(answer));
        failed = true;
        continue;
      }
      const answer = classifyCall(skill, raw);
      if (answer.error) failed = true;
      console.log(JSON.stringify(answer));
    }
    if (failed) process.exitCode = 1;
    return;
  }
  let raw: unknown;
  if (opts.params !== undefined) {
    try {
      raw = JSON.parse(opts.params);
    } catch (err) {
      flagError("--params", `is not JSON: ${(err as Error).message}`);
    }
  } else raw = coerceParams(opts.param, skill.jsonSchema as never);
  const answer = classifyCall(skill, raw);
  if (opts.json) console.log(JSON.stringify(answer));
  else if (answer.error) console.error(`error: ${answer.error}`);
  else console.log(`${answer.class}${answer.read_only ? " (read-only)" : ""}\n${answer.reasons!.map((r) => `  - ${r}`).join("\n")}`);
  if (answer.error) process.exitCode = 1;
}
