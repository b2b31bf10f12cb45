/**
 * Additions to the exec allowlist (A6): a file an operator writes (skills.exec.allow_file on the
 * manager, --exec-allow-file on an edge, both the same file) that adds commands, and options of
 * built-in commands, to what `safe` may run. It only ever adds, and never the reverse of what the
 * gate knows:
 *
 * - the destroyer rules (`danger/`) run before the allowlist, so no entry makes a dangerous line
 *   less than dangerous, nor lifts the syntax rule (a safe line is still one command or a `|`
 *   pipeline, nothing else);
 * - a command the gate treats as a wrapper, shell, interpreter or destroyer, or that changes the
 *   host whatever its options (WRITERS), cannot be added;
 * - an option a built-in command lists as `never` (sort -o, tail -f, journalctl --vacuum-size), or
 *   one the destroyer rules flag (tar --use-compress-program), cannot be added;
 * - a built-in command's operands stay the gate's: only options can be added to it.
 *
 * An added option that takes a value, and an added command's operands, say what the word is
 * (`file`, `path`, `name`, `number`, `word`), and file and path words are checked against the read
 * roots and the secret rules as the built-ins' are, on the manager and again on the edge after
 * realpath. The format is in docs/security.md ("Adding to the exec allowlist").
 */
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { ajvProblems, compileValidator } from "../validate.ts";
import { DANGER_RULES } from "./danger/index.ts";
import { listsOperands, readsOperands, type Access, type CommandSpec, type GivenOption, type OptionSpec, type ParsedArgs } from "./options.ts";
import type { PathContext } from "./paths.ts";

/** What a word given to an added option or operand is, and so how it is checked. */
export type WordKind = "file" | "path" | "name" | "number" | "word";
/** An added command's operands: none, or words of one kind. */
export type OperandKind = "none" | WordKind;

/** One command's additions, as written in the file. */
export interface AllowEntry {
  description?: string;
  /** Short options without a value, as a string of letters. */
  flags?: string;
  /** Long options without a value, by name without the dashes. */
  long?: string[];
  /** Options that take a value (`-c` or `--config`), with the kind of the value. */
  options?: Record<string, WordKind>;
  /** A new command's operands (default none); built-in commands keep theirs. */
  operands?: OperandKind;
  /** A new command's largest number of operands (default: no bound). */
  max_operands?: number;
}

/** The file's content. */
export interface ExecAllowFile {
  commands: Record<string, AllowEntry>;
}

/** The allowlist in force: the built-in commands with the additions merged in. */
export type CommandTable = Readonly<Record<string, CommandSpec>>;

const KINDS: readonly WordKind[] = ["file", "path", "name", "number", "word"];
const NAME = /^[A-Za-z0-9_@%+,.:=][A-Za-z0-9_@%+,.:=-]{0,255}$/;
const NUMBER = /^[+-]?\d{1,12}(\.\d{1,12})?[a-zA-Z%]{0,3}$/;

const SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["commands"],
  properties: {
    commands: {
      type: "object",
      propertyNames: { pattern: "^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$" },
      additionalProperties: {
        type: "object",
        additionalProperties: false,
        properties: {
          description: { type: "string", maxLength: 500 },
          flags: { type: "string", pattern: "^[A-Za-z0-9]*$", maxLength: 62 },
          long: { type: "array", maxItems: 200, items: { type: "string", pattern: "^[A-Za-z0-9][A-Za-z0-9-]{0,63}$" } },
          options: { type: "object", propertyNames: { pattern: "^(-[A-Za-z0-9]|--[A-Za-z0-9][A-Za-z0-9-]{0,63})$" }, additionalProperties: { enum: KINDS } },
          operands: { enum: ["none", ...KINDS] },
          max_operands: { type: "integer", minimum: 0, maximum: 1000 },
        },
      },
    },
  },
} as const;

let validator: ReturnType<typeof compileValidator> | undefined;

/**
 * Commands that change the host, send data or run what they are given whatever their options; the
 * allowlist never makes them safe (wrappers, shells, interpreters and formatters are refused by the
 * destroyer rules themselves).
 */
const WRITERS: ReadonlyMap<string, string> = new Map(
  [
    ["deletes, moves, copies or changes files", "rm unlink rmdir mv cp ln install rsync scp sftp tee sponge dd truncate touch mkdir mknod mkfifo chmod chown chgrp chattr setfacl chcon setfattr shred patch sed ed ex vi vim nvim nano emacs tar cpio zip unzip gzip gunzip bzip2 bunzip2 xz unxz zstd unzstd 7z ar split csplit"],
    ["signals or changes processes", "kill pkill killall skill snice xkill renice"],
    ["changes the system's configuration", "mount umount swapon sysctl modprobe insmod rmmod depmod hostnamectl timedatectl localectl loginctl systemd-tmpfiles update-alternatives ldconfig"],
    ["changes the firewall or the network", "iptables ip6tables iptables-restore ip6tables-restore nft ufw firewall-cmd ebtables arptables tc ifconfig route brctl ethtool iw nmcli"],
    ["changes users, groups or credentials", "useradd userdel usermod groupadd groupdel groupmod passwd chpasswd chage gpasswd newgrp crontab visudo ssh-keygen ssh-add gpg openssl certbot"],
    ["installs or removes software", "apt apt-get aptitude dpkg yum dnf rpm zypper apk pacman snap flatpak pip pip3 npm npx yarn pnpm gem cargo go make"],
    ["fetches or sends what a URL or address names (file:// included); use probe_http and the probe skills", "curl wget nc ncat netcat socat telnet ftp ssh mosh"],
    ["runs what it is given in another host, container or cluster; use the dedicated skills", "docker podman nerdctl crictl ctr kubectl helm virsh lxc incus"],
    ["runs a pager or a program the caller chooses", "less more most man info git"],
    ["runs commands or deletes with its expressions (-exec, -delete)", "find"],
  ].flatMap(([why, names]) => names.split(" ").map((n) => [n, why] as const)),
);

/** Why the destroyer rules flag a command with these words, if they do. */
function ruleVerdict(name: string, words: string[]): string | undefined {
  const call = { name, args: words.map((value) => ({ value, dynamic: false, glob: false })) };
  for (const rule of DANGER_RULES) {
    const why = rule(call as never);
    if (why) return why;
  }
  return undefined;
}

/** A refused allowlist file: every problem, each naming its field. */
export class ExecAllowError extends Error {
  constructor(
    readonly source: string,
    readonly problems: readonly string[],
  ) {
    super(`${source}: ${problems.length === 1 ? problems[0] : `${problems.length} problems:\n  ${problems.join("\n  ")}`}`);
    this.name = "ExecAllowError";
  }
}

/** Reads and checks an allowlist file (YAML or JSON); throws ExecAllowError naming the field and the rule. */
export function loadExecAllowFile(file: string, builtins: CommandTable): CommandTable {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new ExecAllowError(file, [`cannot read: ${(err as Error).message}`]);
  }
  return compileExecAllow(text, builtins, file);
}

/** Checks an allowlist document and merges it into the built-in commands. */
export function compileExecAllow(text: string, builtins: CommandTable, source = "exec allowlist"): CommandTable {
  let doc: unknown;
  try {
    doc = parseYaml(text, { uniqueKeys: true, maxAliasCount: 0 });
  } catch (err) {
    throw new ExecAllowError(source, [`not valid YAML or JSON: ${(err as Error).message.split("\n")[0]}`]);
  }
  validator ??= compileValidator(SCHEMA as unknown as Record<string, unknown>);
  if (!validator(doc)) {
    throw new ExecAllowError(
      source,
      ajvProblems(validator.errors ?? []).map((p) => `${p.named ? p.field : "the document"}: ${p.what} (rule: ${p.rule})`),
    );
  }
  const file = doc as ExecAllowFile;
  const problems: string[] = [];
  const out: Record<string, CommandSpec> = { ...builtins };
  for (const [name, entry] of Object.entries(file.commands)) {
    const at = `commands.${name}`;
    const base = Object.hasOwn(builtins, name) ? builtins[name] : undefined;
    const before = problems.length;
    if (!base) {
      const writer = WRITERS.get(name);
      if (writer) problems.push(`${at}: ${name} ${writer}; the allowlist never makes it safe`);
      const rule = ruleVerdict(name, []) ?? ruleVerdict(name, ["x"]);
      if (!writer && rule) problems.push(`${at}: the gate treats ${name} as dangerous (${rule}); the allowlist never makes it safe`);
    } else if ("raw" in base) {
      problems.push(`${at}: ${name} has a grammar of its own in the gate; nothing can be added to it`);
    } else if (entry.operands !== undefined || entry.max_operands !== undefined) {
      problems.push(`${at}.${entry.operands !== undefined ? "operands" : "max_operands"}: ${name} is built in and its operands are the gate's; only options can be added to it`);
    }
    const baseOptions = base && !("raw" in base) ? base.options : {};
    const added = addedOptions(name, at, entry, baseOptions, problems);
    if (problems.length > before) continue;
    out[name] = base && !("raw" in base) ? extend(base, added) : newCommand(entry, added);
  }
  if (problems.length) throw new ExecAllowError(source, problems);
  return out;
}

/** An entry's options, checked against the built-in's and the rules. */
interface Added {
  flags: string;
  long: Record<string, "flag" | "value">;
  valued: string;
  kinds: Map<string, WordKind>;
}

function addedOptions(name: string, at: string, entry: AllowEntry, base: OptionSpec, problems: string[]): Added {
  const added: Added = { flags: "", long: {}, valued: "", kinds: new Map() };
  const never = new Set(base.never ?? []);
  const check = (option: string, field: string, valued: boolean): boolean => {
    if (never.has(option)) {
      problems.push(`${field}: ${name} ${option} writes, runs a program, never ends or reads another system's data; the gate never allows it`);
      return false;
    }
    // GNU getopt reads an unambiguous prefix as the long option (`--comp` is --compress-program).
    const abbreviates = option.startsWith("--") ? [...never].find((n) => n.startsWith("--") && n.startsWith(option)) : undefined;
    if (abbreviates) {
      problems.push(`${field}: ${name} would read ${option} as an abbreviation of ${abbreviates}, which the gate never allows`);
      return false;
    }
    const rule = ruleVerdict(name, valued ? [option, "x", "x"] : [option, "x"]);
    if (rule) {
      problems.push(`${field}: the gate treats ${name} ${option} as dangerous (${rule})`);
      return false;
    }
    const short = /^-[^-]$/.test(option) ? option[1] : undefined;
    const existing = short
      ? base.flags?.includes(short) ? "flag" : base.valued?.includes(short) ? "value" : undefined
      : base.long && Object.hasOwn(base.long, option.slice(2)) ? base.long[option.slice(2)] : undefined;
    if (existing !== undefined && existing !== (valued ? "value" : "flag")) {
      problems.push(`${field}: ${name} ${option} is already on the allowlist ${existing === "flag" ? "without a value" : "with a value"}`);
      return false;
    }
    return existing === undefined;
  };
  const seen = new Set<string>();
  for (const c of entry.flags ?? "") {
    const option = `-${c}`;
    if (seen.has(option)) problems.push(`${at}.flags: -${c} is given twice`);
    seen.add(option);
    if (check(option, `${at}.flags`, false)) added.flags += c;
  }
  for (const l of entry.long ?? []) {
    const option = `--${l}`;
    if (seen.has(option)) problems.push(`${at}.long: --${l} is given twice`);
    seen.add(option);
    if (check(option, `${at}.long`, false)) added.long[l] = "flag";
  }
  for (const [option, kind] of Object.entries(entry.options ?? {})) {
    if (seen.has(option)) problems.push(`${at}.options.${option}: ${option} is also given without a value`);
    seen.add(option);
    if (!check(option, `${at}.options.${option}`, true)) continue;
    added.kinds.set(option, kind);
    if (option.startsWith("--")) added.long[option.slice(2)] = "value";
    else added.valued += option[1];
  }
  return added;
}

/** Why a word of a kind is not allowed, or what it reads or lists. */
function checkWord(word: string, kind: WordKind, what: string, ctx: PathContext): Access | string {
  switch (kind) {
    case "file":
      return readsOperands([word], ctx);
    case "path":
      return listsOperands([word], ctx);
    case "name":
      return NAME.test(word) ? { reads: [], lists: [] } : `${what} "${word}" is not a name (letters, digits and _@%+,.:=-, no "/", not starting with "-")`;
    case "number":
      return NUMBER.test(word) ? { reads: [], lists: [] } : `${what} "${word}" is not a number`;
    case "word":
      return { reads: [], lists: [] };
  }
}

function addAccess(into: Access, more: Access): void {
  into.reads.push(...more.reads);
  into.lists.push(...more.lists);
}

/** Checks the values of the added options among `opts`; returns the access or why not. */
function checkAddedValues(opts: readonly GivenOption[], kinds: ReadonlyMap<string, WordKind>, ctx: PathContext): Access | string {
  const access: Access = { reads: [], lists: [] };
  for (const o of opts) {
    const kind = kinds.get(o.name);
    if (!kind || o.value === undefined) continue;
    const r = checkWord(o.value, kind, `the value of ${o.name}`, ctx);
    if (typeof r === "string") return r;
    addAccess(access, r);
  }
  return access;
}

/** A built-in command with more options: the added ones are checked here, the rest as before. */
function extend(base: Extract<CommandSpec, { options: OptionSpec }>, added: Added): CommandSpec {
  const names = new Set([...[...added.flags].map((c) => `-${c}`), ...[...added.valued].map((c) => `-${c}`), ...Object.keys(added.long).map((l) => `--${l}`)]);
  return {
    options: {
      ...base.options,
      flags: (base.options.flags ?? "") + added.flags,
      valued: (base.options.valued ?? "") + added.valued,
      long: { ...base.options.long, ...added.long },
    },
    check(args: ParsedArgs, ctx: PathContext) {
      const mine = args.opts.filter((o) => names.has(o.name));
      const values = checkAddedValues(mine, added.kinds, ctx);
      if (typeof values === "string") return values;
      const rest = base.check({ opts: args.opts.filter((o) => !names.has(o.name)), operands: args.operands }, ctx);
      if (typeof rest === "string") return rest;
      const access: Access = { reads: [...rest.reads], lists: [...rest.lists] };
      addAccess(access, values);
      return access;
    },
  };
}

/** A command the file adds: its options and operands as declared. */
function newCommand(entry: AllowEntry, added: Added): CommandSpec {
  const operands = entry.operands ?? "none";
  const max = operands === "none" ? 0 : (entry.max_operands ?? Infinity);
  return {
    options: { flags: added.flags, valued: added.valued, long: added.long },
    check(args: ParsedArgs, ctx: PathContext) {
      const access = checkAddedValues(args.opts, added.kinds, ctx);
      if (typeof access === "string") return access;
      if (args.operands.length > max) return max === 0 ? `takes no operands (got "${args.operands[0]}")` : `takes at most ${max} operand${max === 1 ? "" : "s"}`;
      for (const op of args.operands) {
        const r = checkWord(op, operands as WordKind, "operand", ctx);
        if (typeof r === "string") return r;
        addAccess(access, r);
      }
      return access;
    },
  };
}
