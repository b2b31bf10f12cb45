/**
 * Dynamic risk of shell command lines (A6): the shell-style skills (exec, pod_execute) ask
 * classifyCommand for the class the gate uses.
 *
 * - **safe** is a positive, closed set: one command, or a `|` pipeline of commands, with no other
 *   shell syntax at all, each command and each of its options on the allowlist (`safe/`), matched
 *   exactly, and each file operand inside the read roots or a listed system file (`paths.ts`). A safe
 *   verdict carries the parsed argv lists: the edge runs exactly those, without a shell.
 * - Everything else is at least **mutating** (a person approves the exact text, which then runs
 *   through /bin/sh).
 * - **dangerous** are the destroyers (`danger/`), found anywhere in the line (function bodies,
 *   subshells, substitutions, control flow): raw devices, /proc/sysrq-trigger, filesystem and
 *   firewall wipes, recursive deletes, power and init, encryption formats, any command run under a
 *   wrapper (sudo, env, nice, timeout, unshare, xargs, find -exec, shells and interpreters), a command
 *   name or destroyer target only known at run time, a self-calling function (fork bomb), and
 *   assignments that change which code runs (PATH, LD_PRELOAD, BASH_ENV, …).
 *
 * The line is read by mvdan/sh's bash parser (`shell.ts`), not by hand-written lexing.
 */
import type { SkillClass } from "../types.ts";
import { loadExecAllowFile, type CommandTable } from "./allow.ts";
import { systemPath, type Call } from "./danger/common.ts";
import { DANGER_RULES } from "./danger/index.ts";
import { parseOptions, type Access } from "./options.ts";
import { DEFAULT_READ_ROOTS, type PathContext } from "./paths.ts";
import { FILE_COMMANDS } from "./safe/files.ts";
import { NETWORK_COMMANDS } from "./safe/network.ts";
import { SERVICE_COMMANDS } from "./safe/services.ts";
import { SYSTEM_COMMANDS } from "./safe/system.ts";
import { parseLine, type ParsedLine } from "./shell.ts";

/** The seeds' risk level of a class: safe → low, mutating → high, dangerous → critical. */
export type RiskLevel = "low" | "high" | "critical";

/** What a safe line runs: argv lists wired stdout→stdin, and the files they read and list. */
export interface SafePlan {
  argv: string[][];
  reads: string[];
  lists: string[];
}

/** The verdict on a command line: the worst class over everything in it, and why. */
export interface CommandRisk {
  class: SkillClass;
  level: RiskLevel;
  reason: string;
  /** Every reason found (dangerous and mutating findings; for safe, the commands). */
  reasons: string[];
  /** For a safe line only: exactly what runs. */
  plan?: SafePlan;
}

/** Where a line is judged: its working directory, the read roots and the allowlist (the policy's when omitted). */
export interface ClassifyOptions {
  cwd?: string;
  readRoots?: readonly string[];
  commands?: CommandTable;
}

/** The process's classification policy, set once from the manager's or the edge's config. */
export interface ShellPolicy {
  readRoots: readonly string[];
  /** The safe commands: SAFE_COMMANDS, with an exec allowlist file's additions (allow.ts). */
  commands: CommandTable;
}

/** The built-in safe commands by name. */
export const SAFE_COMMANDS: CommandTable = { ...FILE_COMMANDS, ...SYSTEM_COMMANDS, ...NETWORK_COMMANDS, ...SERVICE_COMMANDS };

let policy: ShellPolicy = { readRoots: DEFAULT_READ_ROOTS, commands: SAFE_COMMANDS };

/** Sets the read roots (skills.exec.read_roots, --exec-read-root) and the allowlist (skills.exec.allow_file, --exec-allow-file). */
export function setShellPolicy(p: Partial<ShellPolicy>): void {
  policy = { ...policy, ...p, readRoots: (p.readRoots ?? policy.readRoots).map((r) => r.replace(/\/+$/, "") || "/") };
}

/** The policy in force. */
export function shellPolicy(): ShellPolicy {
  return policy;
}

/**
 * Sets the policy from configuration: the read roots, and the allowlist with an exec allowlist
 * file's additions when one is named (a refused file throws ExecAllowError, naming each field).
 */
export function configureShellPolicy(o: { readRoots: readonly string[]; allowFile?: string }): void {
  const commands = o.allowFile ? loadExecAllowFile(o.allowFile, SAFE_COMMANDS) : SAFE_COMMANDS;
  setShellPolicy({ readRoots: o.readRoots.length ? o.readRoots : DEFAULT_READ_ROOTS, commands });
}
const MAX_INPUT = 64 * 1024;
/** Variables whose assignment changes which code runs or how the shell reads the rest. */
const CODE_VARIABLES = /^(PATH|LD_[A-Z_]+|BASH_ENV|ENV|IFS|PS4|PROMPT_COMMAND|SHELLOPTS|BASHOPTS|GLOBIGNORE|BASH_FUNC_.*|GCONV_PATH|PAGER|MANPAGER|MANOPT|LESSOPEN|LESSCLOSE|GIT_[A-Z_]+|PYTHON[A-Z_]*|PERL5?[A-Z_]*|RUBY[A-Z_]*|NODE_OPTIONS|EDITOR|VISUAL|SYSTEMD_PAGER|SYSTEMD_LESS)$/;

/** Maps a class to the ACI seed's level, for audit rows and approval requests that show "high"/"critical". */
export function riskLevelOf(cls: SkillClass): RiskLevel {
  return cls === "safe" ? "low" : cls === "mutating" ? "high" : "critical";
}

/** Classifies one shell command line (A6); never throws, and anything it cannot read is not safe. */
export function classifyCommand(command: string, opts: ClassifyOptions = {}): CommandRisk {
  if (typeof command !== "string") return verdict("dangerous", ["the command is not a string"]);
  if (command.length > MAX_INPUT) return verdict("dangerous", [`the command is longer than ${MAX_INPUT} characters and is not analysed`]);
  if (command.includes("\0")) return verdict("dangerous", ["the command holds a NUL byte (what runs would differ from what is shown)"]);
  const line = parseLine(command);
  if (line.error !== undefined) return verdict("mutating", [`the command cannot be parsed: ${line.error}`]);
  const dangers = dangerReasons(line);
  if (dangers.length) return verdict("dangerous", dangers);
  const ctx: PathContext = { cwd: opts.cwd, readRoots: opts.readRoots ?? policy.readRoots };
  const safe = line.pipeline ? safePlan(line.pipeline, ctx, opts.commands ?? policy.commands) : `not a plain command or pipeline: it has ${line.syntax}`;
  if (typeof safe === "string") return verdict("mutating", [safe]);
  const names = [...new Set(safe.argv.map((a) => a[0]))];
  return { ...verdict("safe", [`read-only: ${names.join(", ")}`]), plan: safe };
}

function verdict(cls: SkillClass, reasons: string[]): CommandRisk {
  return { class: cls, level: riskLevelOf(cls), reason: reasons[0] ?? "", reasons };
}

/** Checks each command of a plain pipeline against the allowlist. */
function safePlan(argvs: string[][], ctx: PathContext, commands: CommandTable): SafePlan | string {
  const plan: SafePlan = { argv: argvs, reads: [], lists: [] };
  for (const [name, ...args] of argvs) {
    const spec = Object.hasOwn(commands, name) ? commands[name] : undefined;
    if (!spec) return name.includes("/") ? `"${name}" is a path: safe commands are named, and found on the system PATH` : `${name} is not on the safe command list (an exec allowlist file, skills.exec.allow_file, can add it)`;
    let access: Access | string;
    if ("raw" in spec) access = spec.raw(args, ctx);
    else {
      const parsed = parseOptions(args, spec.options);
      access = typeof parsed === "string" ? parsed : spec.check(parsed, ctx);
    }
    if (typeof access === "string") return `${name}: ${access}`;
    plan.reads.push(...access.reads);
    plan.lists.push(...access.lists);
  }
  return plan;
}

const WRITE_REDIRECTS = new Set([">", ">>", ">|", "&>", "&>>", "<>"]);

/** Every destroyer in the line, wherever it is. */
function dangerReasons(line: ParsedLine): string[] {
  const out: string[] = [];
  for (const f of line.functions) {
    if (f.calls.includes(f.name)) out.push(`function ${f.name} calls itself (a fork bomb)`);
  }
  for (const cmd of line.commands) {
    const bad = cmd.assigns.find((a) => CODE_VARIABLES.test(a));
    if (bad) out.push(`assigning ${bad} changes which code runs`);
    if (cmd.words.length === 0) continue;
    const first = cmd.words[0];
    if (first.dynamic || first.glob) {
      out.push(`the command name "${first.value}" is only known at run time`);
      continue;
    }
    const call: Call = { name: first.value.slice(first.value.lastIndexOf("/") + 1), args: cmd.words.slice(1) };
    for (const rule of DANGER_RULES) {
      const why = rule(call);
      if (why) out.push(why);
    }
  }
  for (const r of line.redirects) {
    if (!WRITE_REDIRECTS.has(r.op) && !(r.op === ">&" && r.target && !/^\d+-?$|^-$/.test(r.target.value))) continue;
    if (!r.target) continue;
    const why = systemPath(r.target);
    if (why) out.push(`a redirection writes: ${why}`);
  }
  return out;
}
