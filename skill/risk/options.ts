/**
 * The allowlist's vocabulary (A6): a command's options as getopt reads them, matched exactly. An
 * unknown option, or an abbreviation of a known long one (GNU getopt would accept `--in-pl` for
 * `--in-place`), is not on the list and makes the call not safe.
 */
import { absolute, listProblem, readProblem, type PathContext } from "./paths.ts";

/** The options one command accepts in a safe call. */
export interface OptionSpec {
  /** Short options without a value, as a string of letters. */
  flags?: string;
  /** Short options that take a value, attached (`-n5`) or as the next word (`-n 5`). */
  valued?: string;
  /** Long options by exact name: flag, value (`--x=V` or `--x V`), optional (`--x` or `--x=V`). */
  long?: Readonly<Record<string, "flag" | "value" | "optional">>;
  /** `-NUM` is a count (head -5, tail -20). */
  numeric?: boolean;
  /** Options end at the first operand (awk's program, echo's words). */
  stopAtOperand?: boolean;
  /**
   * Options this command has that write, run programs, follow forever or read another system's
   * data (`sort -o`, `tail -f`, `journalctl --vacuum-size`): never on the list, and an exec
   * allowlist file (allow.ts) may not add them.
   */
  never?: readonly string[];
}

/** One option as given: `-n`, `--lines`, with its value when it has one. */
export interface GivenOption {
  name: string;
  value?: string;
}

/** A command's words after option parsing. */
export interface ParsedArgs {
  opts: GivenOption[];
  operands: string[];
}

/** The files a safe call reads and the paths it lists, absolute and normalised (the edge checks them again after realpath). */
export interface Access {
  reads: string[];
  lists: string[];
}

/** A command on the allowlist: its options and the check of the rest, or a check of its raw words for a grammar of its own (ip). */
export type CommandSpec =
  | {
      options: OptionSpec;
      /** The files it reads and lists, or why the call is not safe. */
      check(args: ParsedArgs, ctx: PathContext): Access | string;
    }
  | { raw(args: readonly string[], ctx: PathContext): Access | string };

/** Parses `args` (the words after the command name) against `spec`, or says which word is not allowed. */
export function parseOptions(args: readonly string[], spec: OptionSpec): ParsedArgs | string {
  const opts: GivenOption[] = [];
  const operands: string[] = [];
  let i = 0;
  let ended = false;
  while (i < args.length) {
    const a = args[i++];
    if (ended || a === "-" || !a.startsWith("-")) {
      operands.push(a);
      if (spec.stopAtOperand) ended = true;
      continue;
    }
    if (a === "--") {
      ended = true;
      continue;
    }
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      const name = eq < 0 ? a.slice(2) : a.slice(2, eq);
      const kind = spec.long && Object.hasOwn(spec.long, name) ? spec.long[name] : undefined;
      if (!kind) return `option --${name} is not on the allowlist (long options match exactly)`;
      if (kind === "flag") {
        if (eq >= 0) return `option --${name} takes no value`;
        opts.push({ name: `--${name}` });
      } else if (eq >= 0) {
        opts.push({ name: `--${name}`, value: a.slice(eq + 1) });
      } else if (kind === "value") {
        if (i >= args.length) return `option --${name} needs a value`;
        opts.push({ name: `--${name}`, value: args[i++] });
      } else {
        opts.push({ name: `--${name}` });
      }
      continue;
    }
    if (spec.numeric && /^-\d+$/.test(a)) {
      opts.push({ name: "-n", value: a.slice(1) });
      continue;
    }
    for (let j = 1; j < a.length; j++) {
      const c = a[j];
      if (spec.valued?.includes(c)) {
        const rest = a.slice(j + 1);
        if (rest) opts.push({ name: `-${c}`, value: rest });
        else if (i < args.length) opts.push({ name: `-${c}`, value: args[i++] });
        else return `option -${c} needs a value`;
        break;
      }
      if (!spec.flags?.includes(c)) return `option -${c} (in ${a}) is not on the allowlist`;
      opts.push({ name: `-${c}` });
    }
  }
  return { opts, operands };
}

/** Whether any of `names` was given. */
export function given(args: ParsedArgs, ...names: string[]): boolean {
  return args.opts.some((o) => names.includes(o.name));
}

/** The access of a command that reads each operand (stdin when there is none). */
export function readsOperands(operands: readonly string[], ctx: PathContext): Access | string {
  const reads: string[] = [];
  for (const op of operands) {
    if (op === "-") continue;
    const abs = absolute(op, ctx);
    if (typeof abs !== "string") return abs.problem;
    const problem = readProblem(abs, ctx.readRoots);
    if (problem) return problem;
    reads.push(abs);
  }
  return { reads, lists: [] };
}

/** The access of a command that lists or measures each operand (none: it lists the working directory, which is not checked). */
export function listsOperands(operands: readonly string[], ctx: PathContext): Access | string {
  const lists: string[] = [];
  for (const op of operands) {
    const abs = absolute(op, ctx);
    if (typeof abs !== "string") return abs.problem;
    const problem = listProblem(abs);
    if (problem) return problem;
    lists.push(abs);
  }
  return { reads: [], lists };
}

/** The access of a command that takes no operands. */
export function noOperands(args: ParsedArgs): Access | string {
  return args.operands.length ? `takes no operands here (got "${args.operands[0]}")` : { reads: [], lists: [] };
}

/** The access of a command whose every operand matches `pattern` (a name, a number). */
export function operandsMatch(args: ParsedArgs, pattern: RegExp, what: string, max = Infinity): Access | string {
  if (args.operands.length > max) return `takes at most ${max} operand${max === 1 ? "" : "s"} here`;
  const bad = args.operands.find((o) => !pattern.test(o));
  return bad === undefined ? { reads: [], lists: [] } : `operand "${bad}" is not ${what}`;
}

/** The access of an option value that names a number. */
export function numericValues(args: ParsedArgs, names: readonly string[], pattern = /^[+-]?\d{1,12}[a-zA-Z]{0,3}$/): string | undefined {
  const bad = args.opts.find((o) => names.includes(o.name) && o.value !== undefined && !pattern.test(o.value));
  return bad ? `option ${bad.name} needs a number, got "${bad.value}"` : undefined;
}
