/**
 * Dynamic risk of shell command lines (A6): the shell-style skills (exec, pod_execute) ask
 * classifyCommand for the class the gate must use, e.g. `df -h` safe, `systemctl restart nginx`
 * mutating, `mkfs.ext4 /dev/sda` dangerous.
 *
 * The line is tokenised like a POSIX shell would (quotes, escapes, `|` `;` `&&` `||` `&`,
 * subshells, `$( )`, backticks, `<( )`, here-documents, redirections) and every simple command
 * in it is classified; the line's class is the worst of them. Rules for what cannot be seen through:
 *
 * - A command not on the lists below is **mutating** (a person must approve it), never safe.
 * - Command substitution `$( )`, backticks and `<( )` / `>( )`: the inner command is classified
 *   like any other, and the line is at least **mutating**, because the substituted output becomes
 *   part of the outer command at run time.
 * - Code whose text is only known at run time is **dangerous**: `sh -c "$X"`, `eval "$X"`,
 *   `python -c "$X"`, a command name that is an expansion (`$CMD args`), code piped into a shell
 *   (`curl … | sh`) or run from `<( )`. An approver cannot judge text that does not exist yet.
 *   Static `sh -c '…'`, `eval '…'`, here-documents fed to a shell and `echo '…' | sh` are parsed
 *   and classified recursively (at most 8 levels deep, deeper is dangerous).
 * - Scripts and programs in other languages (`bash deploy.sh`, `python3 -c '…'`, `perl -e '…'`)
 *   are **mutating**: their effect is not analysed. sed and awk are analysed for their writing
 *   and command-running forms; a sed/awk script built at run time is mutating.
 * - Reading credentials (`/etc/shadow`, private keys, `.kube/config`, `/proc/PID/environ`,
 *   `kubectl get secret -o yaml`) and dumping the environment (`env`, `printenv`, `export -p`,
 *   `set`) are **mutating**: nothing changes, but secrets must not reach the model unapproved.
 * - Writing redirections are mutating; to a block device, `/dev/mem` or `/proc/sysrq-trigger`,
 *   or truncating a system file (`> /etc/passwd`), dangerous. `/dev/null` and fd duplication are safe.
 * - Any recursive `rm` is dangerous; so is deleting, moving, overwriting or `chmod`/`chown`-ing
 *   a system path (`/`, `/etc`, `~`, `/etc/passwd`, `/boot/…`).
 * - Wrappers are transparent (`sudo`, `env`, `nice`, `ionice`, `timeout`, `nohup`, `stdbuf`,
 *   `time`, `command`, `exec`, `xargs`, `watch`, `chroot`, `nsenter`, `ip netns exec`,
 *   `docker exec`, `kubectl exec`, `ssh host cmd`): the wrapped command is classified.
 *   `setsid`, `systemd-run` and `ssh` add mutating (a process outlives the call / another host).
 * - A line that cannot be parsed (an unterminated quote) is mutating.
 */
import type { SkillClass } from "./types.ts";

/** The seeds' risk level of a class: safe → low, mutating → high, dangerous → critical. */
export type RiskLevel = "low" | "high" | "critical";

/** The verdict on a command line: the worst class over every command in it, and why. */
export interface CommandRisk {
  class: SkillClass;
  level: RiskLevel;
  reason: string;
}

/** Maps a class to the ACI seed's level, for audit rows and approval requests that show "high"/"critical". */
export function riskLevelOf(cls: SkillClass): RiskLevel {
  return cls === "safe" ? "low" : cls === "mutating" ? "high" : "critical";
}

/** Classifies one shell command line (A6); never throws, and anything it cannot read is not safe. */
export function classifyCommand(command: string): CommandRisk {
  if (typeof command !== "string") return verdict("dangerous", "the command is not a string");
  if (command.length > MAX_INPUT) return verdict("dangerous", `the command is longer than ${MAX_INPUT} characters and is not analysed`);
  const out: Finding[] = [];
  try {
    analyseLine(command, 0, out);
  } catch (err) {
    return verdict("dangerous", `the command could not be analysed: ${(err as Error).message}`);
  }
  return combine(out);
}

// ---------------------------------------------------------------------------------------------
// Findings

interface Finding {
  cls: SkillClass;
  /** Why; for safe findings the command name. */
  reason: string;
}

const RANK: Readonly<Record<SkillClass, number>> = { safe: 0, mutating: 1, dangerous: 2 };
const MAX_INPUT = 64 * 1024;
const MAX_DEPTH = 8;

function verdict(cls: SkillClass, reason: string): CommandRisk {
  return { class: cls, level: riskLevelOf(cls), reason };
}

function combine(out: Finding[]): CommandRisk {
  if (out.length === 0) return verdict("safe", "nothing to run");
  let worst = out[0];
  for (const f of out) if (RANK[f.cls] > RANK[worst.cls]) worst = f;
  if (worst.cls !== "safe") return verdict(worst.cls, worst.reason);
  const names = [...new Set(out.map((f) => f.reason))];
  return verdict("safe", `read-only: ${names.join(", ")}`);
}

// ---------------------------------------------------------------------------------------------
// Lexer

/** A word after quote removal; dynamic when part of it is only known at run time ($X, $( ), `…`). */
interface Word {
  text: string;
  dynamic: boolean;
}
interface Redir {
  op: string;
  target?: Word;
  heredoc?: { text: string; dynamic: boolean };
}
/** One simple command: words, redirections and the command feeding its stdin through a pipe. */
interface Simple {
  words: Word[];
  redirs: Redir[];
  pipedFrom?: Simple;
}
interface Sub {
  open: "$(" | "`" | "<(" | ">(";
  body: string;
}
type Token = { kind: "word"; word: Word } | { kind: "op"; op: string } | { kind: "redir"; redir: Redir; needsTarget: boolean };

const REDIR_OPS = ["<<<", "<<-", "<<", "<>", "<&", "<", "&>>", "&>", ">>", ">|", ">&", ">"];
const CONTROL_OPS = [";;&", ";;", ";&", ";", "||", "|&", "|", "&&", "&", "(", ")"];
const WORD_END = new Set([" ", "\t", "\r", "\n", ";", "&", "|", "(", ")", "<", ">"]);

class Lexer {
  private readonly n: number;
  private readonly pending: { delim: string; strip: boolean; quoted: boolean; redir: Redir }[] = [];
  constructor(
    private readonly src: string,
    /** Command and process substitutions found anywhere (open syntax and body), to classify too. */
    readonly subs: Sub[],
    readonly problems: string[],
  ) {
    this.n = src.length;
  }

  tokens(): Token[] {
    const { src, n } = this;
    const out: Token[] = [];
    let i = 0;
    while (i < n) {
      const c = src[i];
      if (c === " " || c === "\t" || c === "\r") {
        i++;
        continue;
      }
      if (c === "\\" && src[i + 1] === "\n") {
        i += 2;
        continue;
      }
      if (c === "\n") {
        out.push({ kind: "op", op: "\n" });
        i = this.heredocs(i + 1);
        continue;
      }
      if (c === "#") {
        while (i < n && src[i] !== "\n") i++;
        continue;
      }
      if ((c === "<" || c === ">") && src[i + 1] === "(") {
        const end = this.closeParen(i + 2);
        if (end < 0) {
          this.problems.push("unterminated process substitution");
          break;
        }
        this.subs.push({ open: `${c}(`, body: src.slice(i + 2, end) });
        out.push({ kind: "word", word: { text: src.slice(i, end + 1), dynamic: true } });
        i = end + 1;
        continue;
      }
      const fd = /^\d+(?=[<>])/.exec(src.slice(i, i + 12));
      const at = fd ? i + fd[0].length : i;
      const rop = REDIR_OPS.find((o) => src.startsWith(o, at));
      if (rop) {
        i = at + rop.length;
        const redir: Redir = { op: rop };
        if (rop === "<<" || rop === "<<-") {
          while (src[i] === " " || src[i] === "\t") i++;
          const start = i;
          const { word, end } = this.word(i);
          i = end;
          this.pending.push({ delim: word.text, strip: rop === "<<-", quoted: /['"\\]/.test(src.slice(start, end)), redir });
          out.push({ kind: "redir", redir, needsTarget: false });
        } else {
          out.push({ kind: "redir", redir, needsTarget: true });
        }
        continue;
      }
      const cop = CONTROL_OPS.find((o) => src.startsWith(o, i));
      if (cop) {
        out.push({ kind: "op", op: cop });
        i += cop.length;
        continue;
      }
      const { word, end } = this.word(i);
      out.push({ kind: "word", word });
      i = Math.max(end, i + 1);
    }
    this.heredocs(n);
    return out;
  }

  /** Scans text where only expansions matter (here-document bodies, ${…}, $((…))); true when it has any. */
  expansionsOnly(): boolean {
    const w: Word = { text: "", dynamic: false };
    for (let j = 0; j < this.n; ) {
      const c = this.src[j];
      if (c === "\\") j += 2;
      else if (c === "$") j = this.dollar(j, w);
      else if (c === "`") j = this.backtick(j, w);
      else j++;
    }
    return w.dynamic;
  }

  private heredocs(from: number): number {
    const { src, n } = this;
    let i = from;
    for (const h of this.pending) {
      let body = "";
      let found = false;
      while (i < n) {
        const eol = src.indexOf("\n", i) < 0 ? n : src.indexOf("\n", i);
        const line = src.slice(i, eol);
        i = eol < n ? eol + 1 : n;
        if ((h.strip ? line.replace(/^\t+/, "") : line) === h.delim) {
          found = true;
          break;
        }
        body += line + "\n";
      }
      if (!found && from >= n) body = "";
      h.redir.heredoc = { text: body, dynamic: !h.quoted && new Lexer(body, this.subs, this.problems).expansionsOnly() };
    }
    this.pending.length = 0;
    return i;
  }

  private word(from: number): { word: Word; end: number } {
    const { src, n } = this;
    const w: Word = { text: "", dynamic: false };
    let j = from;
    while (j < n) {
      const c = src[j];
      if (WORD_END.has(c)) break;
      if (c === "\\") {
        if (src[j + 1] !== "\n" && j + 1 < n) w.text += src[j + 1];
        j += 2;
      } else if (c === "'") {
        const end = src.indexOf("'", j + 1);
        if (end < 0) {
          this.problems.push("unterminated single quote");
          w.text += src.slice(j + 1);
          return { word: w, end: n };
        }
        w.text += src.slice(j + 1, end);
        j = end + 1;
      } else if (c === '"') {
        j = this.dquote(j + 1, w);
      } else if (c === "$") {
        j = this.dollar(j, w);
      } else if (c === "`") {
        j = this.backtick(j, w);
      } else {
        w.text += c;
        j++;
      }
    }
    return { word: w, end: j };
  }

  /** Reads a double-quoted string starting after its opening quote; returns the index after the closing one. */
  private dquote(from: number, w: Word): number {
    const { src, n } = this;
    let j = from;
    while (j < n) {
      const c = src[j];
      if (c === '"') return j + 1;
      if (c === "\\") {
        const next = src[j + 1];
        if (next === "\n") j += 2;
        else if (next === "$" || next === "`" || next === '"' || next === "\\") {
          w.text += next;
          j += 2;
        } else {
          w.text += c;
          j++;
        }
      } else if (c === "$") j = this.dollar(j, w);
      else if (c === "`") j = this.backtick(j, w);
      else {
        w.text += c;
        j++;
      }
    }
    this.problems.push("unterminated double quote");
    return n;
  }

  private dollar(j: number, w: Word): number {
    const { src, n } = this;
    const next = src[j + 1];
    if (next === "(") {
      const end = this.closeParen(j + 2);
      if (end < 0) {
        this.problems.push("unterminated $(");
        w.text += src.slice(j);
        w.dynamic = true;
        return n;
      }
      const body = src.slice(j + 2, end);
      if (src[j + 2] === "(") new Lexer(body, this.subs, this.problems).expansionsOnly();
      else this.subs.push({ open: "$(", body });
      w.text += src.slice(j, end + 1);
      w.dynamic = true;
      return end + 1;
    }
    if (next === "{") {
      const end = this.closeBrace(j + 2);
      if (end < 0) {
        this.problems.push("unterminated ${");
        w.dynamic = true;
        return n;
      }
      new Lexer(src.slice(j + 2, end), this.subs, this.problems).expansionsOnly();
      w.text += src.slice(j, end + 1);
      w.dynamic = true;
      return end + 1;
    }
    if (next === "'") {
      let k = j + 2;
      while (k < n && src[k] !== "'") {
        if (src[k] === "\\" && k + 1 < n) {
          const e = src[k + 1];
          const hex = e === "x" ? /^[0-9a-fA-F]{1,2}/.exec(src.slice(k + 2, k + 4)) : null;
          if (hex) {
            w.text += String.fromCharCode(parseInt(hex[0], 16));
            k += 2 + hex[0].length;
            continue;
          }
          w.text += ({ n: "\n", t: "\t", r: "\r", "'": "'", "\\": "\\", '"': '"' } as Record<string, string>)[e] ?? "\\" + e;
          k += 2;
        } else w.text += src[k++];
      }
      if (k >= n) this.problems.push("unterminated $'");
      return k + 1;
    }
    if (next === '"') return this.dquote(j + 2, w);
    const m = /^(?:[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])/.exec(src.slice(j + 1, j + 129));
    if (m) {
      w.text += "$" + m[0];
      w.dynamic = true;
      return j + 1 + m[0].length;
    }
    w.text += "$";
    return j + 1;
  }

  private backtick(j: number, w: Word): number {
    const end = this.closeBacktick(j + 1);
    if (end < 0) {
      this.problems.push("unterminated backquote");
      w.dynamic = true;
      return this.n;
    }
    this.subs.push({ open: "`", body: this.src.slice(j + 1, end).replace(/\\([`\\$])/g, "$1") });
    w.text += this.src.slice(j, end + 1);
    w.dynamic = true;
    return end + 1;
  }

  /** Index of the ")" that closes a "(" opened just before `from`, or -1. */
  private closeParen(from: number): number {
    const { src, n } = this;
    let depth = 1;
    for (let j = from; j < n; j++) {
      const c = src[j];
      if (c === "\\") j++;
      else if (c === "'") {
        j = src.indexOf("'", j + 1);
        if (j < 0) return -1;
      } else if (c === '"') {
        j = this.closeDquote(j + 1);
        if (j < 0) return -1;
      } else if (c === "`") {
        j = this.closeBacktick(j + 1);
        if (j < 0) return -1;
      } else if (c === "(") depth++;
      else if (c === ")" && --depth === 0) return j;
    }
    return -1;
  }

  private closeDquote(from: number): number {
    const { src, n } = this;
    for (let j = from; j < n; j++) {
      const c = src[j];
      if (c === "\\") j++;
      else if (c === '"') return j;
      else if (c === "$" && src[j + 1] === "(") {
        j = this.closeParen(j + 2);
        if (j < 0) return -1;
      } else if (c === "`") {
        j = this.closeBacktick(j + 1);
        if (j < 0) return -1;
      }
    }
    return -1;
  }

  private closeBacktick(from: number): number {
    for (let j = from; j < this.n; j++) {
      if (this.src[j] === "\\") j++;
      else if (this.src[j] === "`") return j;
    }
    return -1;
  }

  private closeBrace(from: number): number {
    const { src, n } = this;
    let depth = 1;
    for (let j = from; j < n; j++) {
      const c = src[j];
      if (c === "\\") j++;
      else if (c === "'") {
        j = src.indexOf("'", j + 1);
        if (j < 0) return -1;
      } else if (c === '"') {
        j = this.closeDquote(j + 1);
        if (j < 0) return -1;
      } else if (c === "$" && src[j + 1] === "(") {
        j = this.closeParen(j + 2);
        if (j < 0) return -1;
      } else if (c === "{") depth++;
      else if (c === "}" && --depth === 0) return j;
    }
    return -1;
  }
}

/** Splits tokens into simple commands, linking each pipeline stage to the one feeding it. */
function group(tokens: Token[], problems: string[]): Simple[] {
  const out: Simple[] = [];
  let cur: Simple = { words: [], redirs: [] };
  let awaiting: Redir | undefined;
  const finish = (): Simple | undefined => {
    if (awaiting) problems.push(`redirection ${awaiting.op} has no target`);
    awaiting = undefined;
    const done = cur.words.length > 0 || cur.redirs.length > 0 ? cur : undefined;
    if (done) out.push(done);
    cur = { words: [], redirs: [] };
    return done;
  };
  for (const t of tokens) {
    if (t.kind === "word") {
      if (awaiting) {
        awaiting.target = t.word;
        awaiting = undefined;
      } else cur.words.push(t.word);
    } else if (t.kind === "redir") {
      if (awaiting) problems.push(`redirection ${awaiting.op} has no target`);
      cur.redirs.push(t.redir);
      awaiting = t.needsTarget ? t.redir : undefined;
    } else {
      const done = finish();
      if ((t.op === "|" || t.op === "|&") && done) cur.pipedFrom = done;
    }
  }
  finish();
  return out;
}

// ---------------------------------------------------------------------------------------------
// Analysis

/** A function that pipes into itself in the background; quantifiers are bounded so long input stays linear. */
const FORK_BOMB = /([^\s(){};|&]{1,64})\s{0,8}\(\s{0,8}\)\s{0,8}\{[^}]{0,256}?\1\s{0,8}\|\s{0,8}\1\s{0,8}&/;

function analyseLine(src: string, depth: number, out: Finding[]): void {
  if (depth > MAX_DEPTH) {
    out.push({ cls: "dangerous", reason: `nested shells or substitutions deeper than ${MAX_DEPTH} levels are not analysed` });
    return;
  }
  if (FORK_BOMB.test(src)) out.push({ cls: "dangerous", reason: "a function that pipes into itself in the background (fork bomb)" });
  const subs: Sub[] = [];
  const problems: string[] = [];
  const tokens = new Lexer(src, subs, problems).tokens();
  const commands = group(tokens, problems);
  for (const p of problems) out.push({ cls: "mutating", reason: `the command cannot be parsed (${p}), so it is not analysed as safe` });
  for (const { open, body } of subs) {
    const shown = open === "`" ? `\`${clip(body)}\`` : `${open}${clip(body)})`;
    const what = open === "<(" || open === ">(" ? "process substitution" : "command substitution";
    out.push({ cls: "mutating", reason: `${what} ${shown} puts a command's output into the line at run time` });
    analyseLine(body, depth + 1, out);
  }
  for (const c of commands) analyseSimple(c, depth, out);
}

const KEYWORDS = new Set(["!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "esac", "in"]);
const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\])?\+?=/;
/** Variables that change which program runs or what the shell executes. */
const LOADER_VARS = new Set(["PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "IFS", "PS4", "SHELLOPTS", "BASHOPTS", "PROMPT_COMMAND", "PYTHONPATH", "PYTHONSTARTUP", "PERL5OPT", "PERL5LIB", "NODE_OPTIONS", "GCONV_PATH"]);

function analyseSimple(c: Simple, depth: number, out: Finding[]): void {
  for (const r of c.redirs) redirection(r, out);
  let i = 0;
  const w = c.words;
  while (i < w.length) {
    const t = w[i].dynamic ? "" : w[i].text;
    if (KEYWORDS.has(t)) i++;
    else if (t === "time") i += w[i + 1]?.text === "-p" ? 2 : 1;
    else if (t === "for" || t === "select" || t === "function") return;
    else if (t === "case") {
      out.push({ cls: "mutating", reason: "case statements are not analysed" });
      return;
    } else {
      const m = ASSIGNMENT.exec(w[i].text);
      if (!m) break;
      if (LOADER_VARS.has(m[1])) out.push({ cls: "mutating", reason: `sets ${m[1]}, which changes what the following commands run` });
      i++;
    }
  }
  if (i < w.length) analyseArgv(w.slice(i), c, depth, out);
}

const DEV_OK = /^\/dev\/(?:null|zero|stdout|stderr|stdin|tty|fd\/\d+)$/;
const BLOCK_DEVICE = /^\/dev\/(?:[sv]d[a-z]+\d*|xvd[a-z]+\d*|hd[a-z]+\d*|nvme\d+n\d+(?:p\d+)?|mmcblk\d+(?:p\d+)?|dm-\d+|md\d+|mapper\/.+|disk\/.+|loop\d+|sr\d+|mem|kmem|port)$/;

function redirection(r: Redir, out: Finding[]): void {
  const op = r.op;
  if (op === "<<" || op === "<<-" || op === "<<<") return;
  const target = r.target;
  if (!target) return;
  const text = target.text;
  if ((op === ">&" || op === "<&") && /^(?:\d+-?|-)$/.test(text)) return;
  if (op === "<" || op === "<&") {
    if (!target.dynamic && SECRET_PATH.test(text)) out.push({ cls: "mutating", reason: `reads credentials from ${text}` });
    return;
  }
  if (target.dynamic) {
    out.push({ cls: "mutating", reason: `writes to a file chosen at run time (${clip(text)})` });
    return;
  }
  if (DEV_OK.test(text)) return;
  const p = normalisePath(text);
  if (BLOCK_DEVICE.test(p)) out.push({ cls: "dangerous", reason: `writes straight to the device ${p}` });
  else if (p === "/proc/sysrq-trigger") out.push({ cls: "dangerous", reason: "writes to /proc/sysrq-trigger (can crash or reboot the host)" });
  else if (op !== ">>" && op !== "&>>" && isCriticalPath(p)) out.push({ cls: "dangerous", reason: `overwrites the system file ${p}` });
  else if (p.startsWith("/proc/sys/") || p.startsWith("/sys/")) out.push({ cls: "mutating", reason: `changes a kernel setting through ${p}` });
  else out.push({ cls: "mutating", reason: `writes to the file ${p}` });
}

/** Context of one command being classified. */
interface Cx {
  name: string;
  args: Word[];
  a: string[];
  cmd: Simple;
  depth: number;
  out: Finding[];
}
type Rule = (x: Cx) => void;
const RULES = new Map<string, Rule>();

function analyseArgv(argv: Word[], cmd: Simple, depth: number, out: Finding[]): void {
  if (argv.length === 0) return;
  if (depth > MAX_DEPTH) {
    out.push({ cls: "dangerous", reason: `wrappers nested deeper than ${MAX_DEPTH} levels are not analysed` });
    return;
  }
  const head = argv[0];
  if (head.dynamic) {
    out.push({ cls: "dangerous", reason: `the command name ${clip(head.text)} is only known at run time` });
    return;
  }
  const args = argv.slice(1);
  const initScript = /^\/etc\/(?:rc\.d\/)?init\.d\/([^/]+)$/.exec(head.text);
  const name = initScript ? "service" : head.text.slice(head.text.lastIndexOf("/") + 1);
  const x: Cx = {
    name,
    args: initScript ? [{ text: initScript[1], dynamic: false }, ...args] : args,
    a: [],
    cmd,
    depth,
    out,
  };
  x.a = x.args.map((w) => w.text);
  const rule = RULES.get(name) ?? prefixRule(name);
  if (rule) rule(x);
  else if (head.text.includes("/")) mut(x, `runs the program ${head.text}, whose effect is not known`);
  else mut(x, `"${name}" is not a known read-only command`);
}

function prefixRule(name: string): Rule | undefined {
  if (/^mkfs(?:\.|$)|^mke2fs$|^mkswap$|^mkdosfs$|^mkntfs$|^mkfs\w*$/.test(name)) return (x) => danger(x, `${name} creates a filesystem, destroying what the device holds`);
  if (/^fsck(?:\.|$)/.test(name)) return fsckRule;
  if (/^(?:python|pypy)[\d.]*$|^perl[\d.]*$|^ruby[\d.]*$|^php[\d.]*$|^lua[\d.]*$/.test(name)) return interpreter;
  return undefined;
}

function safe(x: Cx): void {
  x.out.push({ cls: "safe", reason: x.name });
}
function mut(x: Cx, reason: string): void {
  x.out.push({ cls: "mutating", reason });
}
function danger(x: Cx, reason: string): void {
  x.out.push({ cls: "dangerous", reason });
}
/** Classifies a wrapped command (sudo, timeout, xargs, …). */
function inner(x: Cx, argv: Word[]): void {
  analyseArgv(argv, x.cmd, x.depth + 1, x.out);
}
/** Classifies shell text run by a wrapper (sh -c, eval, su -c, watch); text built at run time is dangerous. */
function shellText(x: Cx, text: string, dynamic: boolean, what: string): void {
  if (dynamic) danger(x, `${what} runs shell code that is only known at run time`);
  else analyseLine(text, x.depth + 1, x.out);
}
function joinWords(ws: Word[]): { text: string; dynamic: boolean } {
  return { text: ws.map((w) => w.text).join(" "), dynamic: ws.some((w) => w.dynamic) };
}
function clip(s: string, max = 60): string {
  const one = s.replace(/\s+/g, " ").trim();
  return one.length > max ? one.slice(0, max - 1) + "…" : one;
}

/**
 * What a command reads as code on stdin: a here-document or here-string, or the static text of
 * an `echo`/`printf` feeding it; "pipe" for any other producer, "file" for `< file`, undefined for none.
 */
function stdinCode(x: Cx): { text: string; dynamic: boolean } | "pipe" | "file" | undefined {
  for (const r of x.cmd.redirs) {
    if (r.heredoc) return r.heredoc;
    if (r.op === "<<<" && r.target) return { text: r.target.text, dynamic: r.target.dynamic };
    if (r.op === "<" && r.target) return "file";
  }
  const p = x.cmd.pipedFrom;
  if (!p) return undefined;
  const [head, ...rest] = p.words;
  if (head && !head.dynamic && (head.text === "echo" || head.text === "printf") && !rest.some((w) => w.dynamic)) {
    const args = rest.filter((w, k) => !(head.text === "echo" && k === 0 && /^-[neE]+$/.test(w.text)));
    const text = args.map((w) => w.text).join(" ");
    if (head.text === "printf" && /%/.test(args[0]?.text ?? "")) return "pipe";
    return { text: text.replace(/\\n/g, "\n"), dynamic: false };
  }
  return "pipe";
}
function producerName(x: Cx): string {
  return x.cmd.pipedFrom?.words[0]?.text ?? "another command";
}

// ---------------------------------------------------------------------------------------------
// Option parsing

interface Opts {
  flags: { name: string; value?: Word }[];
  pos: Word[];
  /** With stop: the words from the first positional on (a wrapped command). */
  rest: Word[];
}

/**
 * getopt-like parsing: `short` lists the letters taking a value, `long` the long options taking
 * one; `stop` ends option parsing at the first positional (wrappers).
 */
function opts(args: Word[], short = "", long: readonly string[] = [], stop = false): Opts {
  const flags: Opts["flags"] = [];
  const pos: Word[] = [];
  for (let i = 0; i < args.length; i++) {
    const w = args[i];
    const t = w.text;
    if (t === "--") {
      const after = args.slice(i + 1);
      return stop ? { flags, pos, rest: after } : { flags, pos: pos.concat(after), rest: [] };
    }
    if (t.startsWith("--") && !w.dynamic) {
      const eq = t.indexOf("=");
      const name = eq < 0 ? t.slice(2) : t.slice(2, eq);
      if (eq >= 0) flags.push({ name, value: { text: t.slice(eq + 1), dynamic: w.dynamic } });
      else if (long.includes(name) && i + 1 < args.length) flags.push({ name, value: args[++i] });
      else flags.push({ name });
      continue;
    }
    if (t.length > 1 && t.startsWith("-") && !w.dynamic) {
      for (let k = 1; k < t.length; k++) {
        const ch = t[k];
        if (short.includes(ch)) {
          const v = t.slice(k + 1);
          if (v) flags.push({ name: ch, value: { text: v, dynamic: w.dynamic } });
          else if (i + 1 < args.length) flags.push({ name: ch, value: args[++i] });
          else flags.push({ name: ch });
          break;
        }
        flags.push({ name: ch });
      }
      continue;
    }
    if (stop) return { flags, pos, rest: args.slice(i) };
    pos.push(w);
  }
  return { flags, pos, rest: [] };
}
function has(o: Opts, ...names: string[]): boolean {
  return o.flags.some((f) => names.includes(f.name));
}
function vals(o: Opts, ...names: string[]): Word[] {
  return o.flags.filter((f) => names.includes(f.name) && f.value).map((f) => f.value!);
}

function rule(names: string, fn: Rule): void {
  for (const n of names.split(/\s+/)) if (n) RULES.set(n, fn);
}

// ---------------------------------------------------------------------------------------------
// Paths

/** Files whose content is a credential. */
const SECRET_PATH =
  /^\/etc\/(?:shadow|gshadow|security\/opasswd)-?$|(?:^|\/)\.ssh\/(?!known_hosts|authorized_keys|config$)[^/]+$|ssh_host_[^/]*_key$|\.(?:key|p12|pfx|keystore|jks)$|(?:^|\/)\.aws\/credentials$|(?:^|\/)\.kube\/config$|(?:^|\/)\.docker\/config\.json$|(?:^|\/)\.(?:netrc|pgpass|my\.cnf|git-credentials|vault-token)$|^\/proc\/[^/]+\/environ$|(?:^|\/)\.env$|^\/etc\/kubernetes\/(?:admin|kubelet|controller-manager|scheduler|super-admin)\.conf$|^\/etc\/ssl\/private\/|^\/var\/lib\/kubelet\/pki\//;

function normalisePath(p: string): string {
  let s = p.replace(/\/{2,}/g, "/").replace(/\/\.(?=\/|$)/g, "");
  while (s.length > 1 && s.endsWith("/")) s = s.slice(0, -1);
  return s === "" && p.startsWith("/") ? "/" : s;
}

const CRITICAL_DIR =
  /^(?:\/|~|~[a-z_][a-z0-9_-]*|\$HOME|\$\{HOME\}|\/\*|\/(?:bin|sbin|lib|lib32|lib64|libx32|usr|etc|boot|dev|proc|sys|root|home|var|opt|srv|run|snap|mnt|media|usr\/(?:bin|sbin|lib|lib32|lib64|libexec|local|share|include)|var\/(?:lib|log|spool|mail|www|backups)|etc\/[\w.-]+\.d))(?:\/\*)?$|^~\/\*$/;
const CRITICAL_FILE =
  /^\/(?:etc\/(?:passwd|shadow|group|gshadow|sudoers|fstab|crypttab|hosts|hostname|resolv\.conf|inittab|ld\.so\.(?:conf|preload|cache)|pam\.d\/[^/]+|sudoers\.d\/[^/]+|ssh\/sshd_config|default\/grub)|boot\/.+|(?:usr\/)?s?bin\/[^/]+|(?:usr\/)?lib(?:32|64|x32)?\/[^/]+)$/;

/** True for the root, home and system directories (and their globs) and for the files a host cannot boot or log in without. */
function isCriticalPath(text: string): boolean {
  const p = normalisePath(text);
  return CRITICAL_DIR.test(p) || CRITICAL_FILE.test(p);
}

// ---------------------------------------------------------------------------------------------
// Rules: read-only tools

/** A tool that only reads, whatever its arguments; reading a credential file is still mutating. */
const readOnly: Rule = (x) => {
  const secret = x.args.find((w) => !w.dynamic && SECRET_PATH.test(w.text));
  if (secret) mut(x, `reads credentials from ${secret.text}`);
  else safe(x);
};
rule(
  `df du free uptime ps pstree pgrep pidof w who last lastb lastlog users groups netstat lsof uname whoami id lsblk blkid
   findmnt lscpu lsmem lspci lsusb lsmod modinfo nproc vmstat iostat mpstat pidstat cat tac head tail less more grep egrep
   fgrep zgrep rg zcat bzcat xzcat zless wc cut tr column nl fold paste join comm diff cmp md5sum sha1sum sha256sum sha512sum
   cksum b2sum base64 od hexdump strings file stat readlink realpath basename dirname ls tree echo printf true false test [
   sleep seq cal which type whereis getent jq top htop iotop pwd cd : nslookup host dig drill traceroute traceroute6 tracepath mtr
   whois ping ping6 fping arping yes expr numfmt getconf locale tty ulimit umask wait shift exit return unset read hash getopts
   jobs lsattr getfacl namei sensors ipcs lsns lslocks lsipc nstat nfsstat showmount systemd-analyze systemd-cgls
   systemd-cgtop getenforce sestatus aa-status ausearch aureport ntpq ntpstat man help apropos lsinitramfs
   dpkg-query apt-cache sync vnstat iftop nload bmon dstat glances [[ ]]`,
  readOnly,
);

rule("ss", (x) => (has(opts(x.args, "AfFs", ["query", "family", "filter"]), "K", "kill") ? mut(x, "ss -K kills sockets") : safe(x)));
rule("dmesg", (x) => {
  const o = opts(x.args, "fFlns", ["facility", "file", "level", "console-level"]);
  if (has(o, "c", "C", "clear", "read-clear", "n", "console-level", "D", "console-off", "E", "console-on")) mut(x, "dmesg clears the ring buffer or changes the console level");
  else safe(x);
});
rule("date", (x) => {
  const o = opts(x.args, "dfrI", ["date", "file", "reference", "set"]);
  if (has(o, "s", "set") || o.pos.some((w) => !w.text.startsWith("+"))) mut(x, "date sets the system clock");
  else safe(x);
});
rule("hostname", (x) => {
  const o = opts(x.args, "F", ["file"]);
  if (o.pos.length > 0 || has(o, "F", "file", "b", "boot")) mut(x, "hostname sets the host name");
  else safe(x);
});
rule("uniq", (x) => (opts(x.args, "fsw", ["skip-fields", "skip-chars", "check-chars", "group", "all-repeated"]).pos.length > 1 ? mut(x, "uniq writes its output file") : readOnly(x)));
rule("sort", (x) => {
  const o = opts(x.args, "ktoST", ["key", "field-separator", "output", "buffer-size", "temporary-directory", "parallel", "files0-from", "random-source", "compress-program"]);
  if (has(o, "o", "output", "compress-program")) mut(x, "sort writes an output file");
  else readOnly(x);
});
rule("xxd", (x) => (opts(x.args, "cgloOsn", []).pos.length > 1 ? mut(x, "xxd writes its output file") : readOnly(x)));
rule("tcpdump", (x) => {
  const o = opts(x.args, "BcCDEFGiMmrsTVwWyzZQ", []);
  if (has(o, "w", "z", "C", "G", "W")) mut(x, "tcpdump writes capture files or runs a post-rotate command");
  else safe(x);
});
rule("nc ncat netcat", (x) => {
  const o = opts(x.args, "iIOpqsTwXxec");
  if (has(o, "z") && !has(o, "e", "c", "l", "exec", "sh-exec", "listen")) safe(x);
  else mut(x, `${x.name} can send data to or listen for other hosts`);
});
rule("socat telnet ftp sftp lftp", (x) => mut(x, `${x.name} opens an interactive connection that can change remote state`));

rule("curl", (x) => {
  const o = opts(
    x.args,
    "AbcCdDeEFHKmoPQrtTuUwxXyYz",
    ["data", "data-raw", "data-binary", "data-urlencode", "data-ascii", "form", "form-string", "upload-file", "config", "cookie-jar", "output",
      "dump-header", "json", "request", "quote", "trace", "trace-ascii", "libcurl", "stderr", "etag-save", "hsts", "alt-svc", "output-dir",
      "header", "user", "user-agent", "referer", "cookie", "max-time", "connect-timeout", "proxy", "resolve", "connect-to", "cacert", "cert", "key",
      "write-out", "retry", "range", "url", "interface"],
  );
  const toFile = (w: Word | undefined) => !!w && w.text !== "-" && w.text !== "/dev/null";
  const method = vals(o, "X", "request")[0]?.text.toUpperCase();
  const file = o.pos.find((w) => /^file:/i.test(w.text));
  if (has(o, "d", "data", "data-raw", "data-binary", "data-urlencode", "data-ascii", "F", "form", "form-string", "T", "upload-file", "json", "Q", "quote")) mut(x, "curl sends data (POST/PUT/upload)");
  else if (method && method !== "GET" && method !== "HEAD") mut(x, `curl sends an HTTP ${method}`);
  else if (has(o, "K", "config")) mut(x, "curl reads its options from a file");
  else if (has(o, "O", "remote-name", "remote-name-all", "output-dir", "create-dirs") || vals(o, "o", "output", "c", "cookie-jar", "D", "dump-header", "trace", "trace-ascii", "stderr", "libcurl", "etag-save", "hsts", "alt-svc").some(toFile)) mut(x, "curl writes a file");
  else if (file) mut(x, `curl reads a local file (${file.text})`);
  else safe(x);
});
rule("wget", (x) => {
  const o = opts(x.args, "OoaAeiPtTUwYlQDRXIdnWBh", ["output-document", "output-file", "append-output", "execute", "input-file", "directory-prefix", "tries", "timeout", "user-agent", "wait", "quota", "level", "post-data", "post-file", "method", "body-data", "body-file", "header", "user", "http-user", "password", "http-password"]);
  const doc = vals(o, "O", "output-document")[0]?.text;
  const method = vals(o, "method")[0]?.text.toUpperCase();
  if (has(o, "post-data", "post-file", "body-data", "body-file") || (method && method !== "GET" && method !== "HEAD")) mut(x, "wget sends data");
  else if (has(o, "spider") || doc === "-" || doc === "/dev/null") safe(x);
  else mut(x, "wget saves a file");
});
rule("openssl", (x) => {
  const sub = x.a[0] ?? "";
  const o = opts(x.args.slice(1), "", []);
  if (has(o, "out", "keyout")) mut(x, "openssl writes a file");
  else if (["s_client", "x509", "verify", "version", "ciphers", "crl", "asn1parse", "errstr", "list", "help", "s_time"].includes(sub)) safe(x);
  else if (["rsa", "pkey", "ec", "dsa", "pkcs12"].includes(sub)) mut(x, `openssl ${sub} prints private key material`);
  else mut(x, `openssl ${sub} is not a known read-only operation`);
});

// ---------------------------------------------------------------------------------------------
// Rules: shells, interpreters, wrappers

const SHELLS = "sh bash dash zsh ksh mksh ash fish";
rule(SHELLS, (x) => {
  const o = opts(x.args, "oO", ["rcfile", "init-file"], true);
  if (has(o, "version", "help")) return safe(x);
  if (has(o, "c")) {
    const code = o.rest[0];
    if (!code) return mut(x, `${x.name} -c without a command`);
    return shellText(x, code.text, code.dynamic, `${x.name} -c`);
  }
  const script = o.rest[0];
  if (script) {
    if (script.dynamic) return danger(x, `${x.name} runs a script produced at run time (${clip(script.text)})`);
    return mut(x, `${x.name} runs the script ${script.text}, whose effect is not analysed`);
  }
  runStdin(x);
});
/** A shell reading its program from stdin. */
function runStdin(x: Cx): void {
  const code = stdinCode(x);
  if (code === undefined) mut(x, `${x.name} without arguments starts an interactive shell`);
  else if (code === "file") mut(x, `${x.name} runs a script file, whose effect is not analysed`);
  else if (code === "pipe") danger(x, `${x.name} runs code piped in from ${producerName(x)}, which cannot be checked`);
  else shellText(x, code.text, code.dynamic, `${x.name} reading a here-document`);
}
rule("eval", (x) => {
  const j = joinWords(x.args);
  shellText(x, j.text, j.dynamic, "eval");
});
rule("source .", (x) => {
  const f = x.args[0];
  if (f?.dynamic) danger(x, `${x.name} runs a script produced at run time`);
  else mut(x, `${x.name} runs the script ${f?.text ?? ""}, whose effect is not analysed`);
});
function interpreter(x: Cx): void {
  const o = opts(x.args, "cemrWXIMOE", ["eval", "command"], true);
  if (has(o, "version", "V", "v", "help", "h") && o.rest.length === 0 && x.args.length === 1) return safe(x);
  const code = vals(o, "c", "e", "E", "r", "eval", "command")[0];
  if (code?.dynamic) return danger(x, `${x.name} runs code that is only known at run time`);
  if (code) return mut(x, `${x.name} runs an inline program, whose effect is not analysed`);
  if (o.rest[0]?.dynamic) return danger(x, `${x.name} runs a script produced at run time`);
  if (o.rest.length === 0 && x.cmd.pipedFrom) return danger(x, `${x.name} runs code piped in from ${producerName(x)}`);
  mut(x, `${x.name} runs a program, whose effect is not analysed`);
}
rule("node nodejs deno bun Rscript pwsh osascript tclsh expect", interpreter);

rule("sudo", (x) => {
  const o = opts(x.args, "ugCDhprtUT", ["user", "group", "close-from", "chdir", "host", "prompt", "role", "type", "other-user", "command-timeout"], true);
  if (has(o, "e", "edit")) return mut(x, "sudo -e edits a file as root");
  if (o.rest.length === 0) {
    if (has(o, "l", "list", "v", "validate", "k", "K", "reset-timestamp", "remove-timestamp", "V", "version")) return safe(x);
    return mut(x, "sudo without a command starts a root shell");
  }
  if (has(o, "i", "login", "s", "shell")) {
    const j = joinWords(o.rest);
    return shellText(x, j.text, j.dynamic, "sudo -s/-i");
  }
  inner(x, o.rest);
});
rule("doas", (x) => {
  const o = opts(x.args, "uC", [], true);
  if (o.rest.length === 0) return mut(x, "doas without a command starts a root shell");
  inner(x, o.rest);
});
rule("su", (x) => {
  const o = opts(x.args, "cgGsw", ["command", "group", "supp-group", "shell", "whitelist-environment", "session-command"]);
  const code = vals(o, "c", "command", "session-command")[0];
  if (code) shellText(x, code.text, code.dynamic, "su -c");
  else mut(x, "su without -c starts a shell as another user");
});
rule("runuser", (x) => {
  const o = opts(x.args, "cgGsuw", ["command", "group", "supp-group", "shell", "user", "whitelist-environment", "session-command"]);
  const code = vals(o, "c", "command", "session-command")[0];
  if (code) return shellText(x, code.text, code.dynamic, "runuser -c");
  const args = has(o, "u", "user") ? o.pos : o.pos.slice(1);
  if (args.length === 0) return mut(x, "runuser without a command starts a shell");
  inner(x, args);
});
rule("env", (x) => {
  const o = opts(x.args, "uCS", ["unset", "chdir", "split-string", "ignore-signal", "default-signal", "block-signal"], true);
  const split = vals(o, "S", "split-string")[0];
  if (split) return shellText(x, split.text, split.dynamic, "env -S");
  let i = 0;
  const rest = o.rest.filter((w) => w.text !== "-");
  while (i < rest.length && ASSIGNMENT.test(rest[i].text)) {
    const m = ASSIGNMENT.exec(rest[i].text)!;
    if (LOADER_VARS.has(m[1])) mut(x, `sets ${m[1]}, which changes what the command runs`);
    i++;
  }
  if (i >= rest.length) return mut(x, "env without a command prints the environment, which may hold credentials");
  inner(x, rest.slice(i));
});
rule("printenv", (x) => mut(x, "printenv prints the environment, which may hold credentials"));
rule("export declare typeset local readonly", (x) => {
  const o = opts(x.args, "", []);
  if (o.pos.length === 0) return mut(x, `${x.name} without names prints variables, which may hold credentials`);
  for (const w of o.pos) {
    const m = ASSIGNMENT.exec(w.text);
    if (m && LOADER_VARS.has(m[1])) return mut(x, `sets ${m[1]}, which changes what the following commands run`);
  }
  safe(x);
});
rule("set", (x) => (x.args.length === 0 ? mut(x, "set without arguments prints variables, which may hold credentials") : safe(x)));
rule("alias", (x) => {
  const defs = x.args.filter((w) => w.text.includes("="));
  if (defs.length === 0) return safe(x);
  mut(x, "alias redefines a command name");
  for (const d of defs) shellText(x, d.text.slice(d.text.indexOf("=") + 1), d.dynamic, "alias");
});
rule("unalias history disown", (x) => (x.name === "disown" ? mut(x, "disown lets a job outlive the call") : safe(x)));
rule("trap", (x) => {
  const o = opts(x.args, "", []);
  if (has(o, "l", "p") || o.pos.length < 2) return safe(x);
  shellText(x, o.pos[0].text, o.pos[0].dynamic, "trap");
});
rule("nice", (x) => {
  const args = x.args.filter((w) => !/^-\d+$/.test(w.text));
  const o = opts(args, "n", ["adjustment"], true);
  if (o.rest.length === 0) return safe(x);
  inner(x, o.rest);
});
rule("ionice", (x) => {
  const o = opts(x.args, "cnpPu", ["class", "classdata", "pid", "pgid", "uid"], true);
  if (has(o, "p", "P", "u", "pid", "pgid", "uid")) return o.flags.length === 1 ? safe(x) : mut(x, "ionice changes the priority of running processes");
  if (o.rest.length === 0) return safe(x);
  inner(x, o.rest);
});
rule("renice", (x) => mut(x, "renice changes the priority of running processes"));
rule("timeout", (x) => {
  const o = opts(x.args, "sk", ["signal", "kill-after"], true);
  if (o.rest.length < 2) return safe(x);
  inner(x, o.rest.slice(1));
});
rule("nohup builtin", (x) => (x.args.length === 0 ? safe(x) : inner(x, x.args)));
rule("exec", (x) => {
  const o = opts(x.args, "a", [], true);
  if (o.rest.length === 0) return safe(x);
  inner(x, o.rest);
});
rule("command", (x) => {
  const o = opts(x.args, "", [], true);
  if (has(o, "v", "V") || o.rest.length === 0) return safe(x);
  inner(x, o.rest);
});
rule("stdbuf", (x) => inner(x, opts(x.args, "ioe", ["input", "output", "error"], true).rest));
rule("time", (x) => {
  const o = opts(x.args, "fo", ["format", "output"], true);
  if (has(o, "o", "output")) mut(x, "time writes its report to a file");
  if (o.rest.length === 0) return safe(x);
  inner(x, o.rest);
});
rule("chroot", (x) => {
  const o = opts(x.args, "", ["userspec", "groups"], true);
  if (o.rest.length <= 1) return mut(x, "chroot without a command starts a shell");
  inner(x, o.rest.slice(1));
});
rule("nsenter unshare", (x) => {
  const o = opts(x.args, "tSGrwF", ["target", "setuid", "setgid", "root", "wd"], true);
  if (o.rest.length === 0) return mut(x, `${x.name} without a command starts a shell`);
  inner(x, o.rest);
});
rule("setsid", (x) => {
  mut(x, "setsid starts a process that outlives the call");
  inner(x, opts(x.args, "", [], true).rest);
});
rule("systemd-run", (x) => {
  mut(x, "systemd-run starts a transient unit");
  inner(x, opts(x.args, "upEMHs", ["unit", "property", "setenv", "machine", "host", "slice", "description", "uid", "gid", "nice", "working-directory", "on-active", "on-boot", "on-calendar", "on-unit-active", "timer-property", "path-property", "socket-property", "service-type"], true).rest);
});
rule("flock", (x) => {
  const o = opts(x.args, "wEc", ["timeout", "conflict-exit-code", "command"], true);
  mut(x, "flock creates and locks a file");
  const code = vals(o, "c", "command")[0];
  if (code) shellText(x, code.text, code.dynamic, "flock -c");
  else inner(x, o.rest.slice(1));
});
rule("taskset", (x) => {
  const o = opts(x.args, "", [], true);
  if (has(o, "p", "pid")) return o.rest.length > 1 ? mut(x, "taskset -p changes a running process's CPU affinity") : safe(x);
  inner(x, o.rest.slice(1));
});
rule("chrt", (x) => {
  const o = opts(x.args, "TPD", ["sched-runtime", "sched-period", "sched-deadline"], true);
  if (has(o, "p", "pid")) return o.rest.length > 1 ? mut(x, "chrt -p changes a running process's scheduling") : safe(x);
  if (has(o, "m", "max")) return safe(x);
  inner(x, o.rest.slice(1));
});
rule("numactl", (x) => {
  const o = opts(x.args, "NmCpiP", ["cpunodebind", "membind", "physcpubind", "preferred", "interleave", "localalloc"], true);
  if (o.rest.length === 0) return safe(x);
  inner(x, o.rest);
});
rule("xargs", (x) => {
  const o = opts(x.args, "aEdILnPs", ["arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"], true);
  if (o.rest.length === 0) return safe(x);
  inner(x, [...o.rest, { text: "$ARGS", dynamic: true }]);
});
rule("watch", (x) => {
  const o = opts(x.args, "nq", ["interval", "equexit"], true);
  if (has(o, "x", "exec")) return inner(x, o.rest);
  const j = joinWords(o.rest);
  shellText(x, j.text, j.dynamic, "watch");
});
rule("busybox", (x) => (x.args.length === 0 ? safe(x) : inner(x, x.args)));
rule("strace ltrace", (x) => {
  const o = opts(x.args, "eoOpPsSuEIXab", ["output", "attach", "signal", "trace"], true);
  if (has(o, "p", "attach")) return mut(x, `${x.name} attaches to a running process`);
  if (has(o, "o", "output")) mut(x, `${x.name} writes a trace file`);
  if (o.rest.length === 0) return safe(x);
  inner(x, o.rest);
});
rule("gdb perf bpftrace", (x) => mut(x, `${x.name} can attach to processes or load kernel programs`));
rule("ssh", (x) => {
  const o = opts(x.args, "BbcDEeFIiJLlmOoPpQRSWw", [], true);
  mut(x, "ssh runs commands on another host");
  const remote = o.rest.slice(1);
  if (remote.length > 0) {
    const j = joinWords(remote);
    shellText(x, j.text, j.dynamic, "ssh");
  } else {
    const code = stdinCode(x);
    if (code === "pipe") danger(x, `ssh runs code piped in from ${producerName(x)} on another host`);
    else if (code && code !== "file") shellText(x, code.text, code.dynamic, "ssh reading a here-document");
  }
});
rule("scp rsync", (x) => {
  const o = opts(x.args, "eiPFcoJlS", ["rsh", "exclude", "include", "filter", "files-from", "rsync-path", "port"]);
  const dest = o.pos[o.pos.length - 1];
  if (x.name === "rsync" && o.flags.some((f) => f.name.startsWith("delete")) && dest && isCriticalPath(dest.text)) danger(x, `rsync --delete into the system path ${dest.text}`);
  else if (dest && isCriticalPath(dest.text) && !dest.text.includes(":")) danger(x, `${x.name} overwrites the system path ${dest.text}`);
  else mut(x, `${x.name} copies files`);
});

// ---------------------------------------------------------------------------------------------
// Rules: files

rule("find", (x) => {
  const a = x.args;
  let i = 0;
  while (i < a.length && !/^[-(!]/.test(a[i].text)) i++;
  const roots = a.slice(0, i).map((w) => w.text);
  for (; i < a.length; i++) {
    const t = a[i].text;
    if (t === "-exec" || t === "-execdir" || t === "-ok" || t === "-okdir") {
      let j = i + 1;
      while (j < a.length && a[j].text !== ";" && a[j].text !== "+") j++;
      inner(x, a.slice(i + 1, j).map((w) => (w.text.includes("{}") ? { text: w.text, dynamic: true } : w)));
      i = j;
    } else if (t === "-delete") {
      if (roots.length === 0 || roots.some((r) => isCriticalPath(r))) danger(x, `find -delete under the system path ${roots[0] ?? "."}`);
      else mut(x, "find -delete deletes files");
    } else if (/^-f(?:print0?|printf|ls)$/.test(t)) mut(x, `find ${t} writes a file`);
  }
  safe(x);
});
rule("awk gawk mawk nawk busybox-awk", (x) => {
  const o = opts(x.args, "fvFEi", ["file", "assign", "field-separator", "include", "load", "source", "exec"]);
  const inplace = vals(o, "i", "include").some((w) => w.text === "inplace");
  if (inplace) return mut(x, `${x.name} -i inplace edits files`);
  if (has(o, "f", "file", "E", "exec")) return mut(x, `${x.name} runs a program from a file, which is not analysed`);
  const src = vals(o, "source")[0] ?? o.pos[0];
  if (!src) return safe(x);
  if (src.dynamic) return mut(x, `${x.name} program is only known at run time`);
  const prog = src.text.replace(/\|\|/g, " ");
  if (/\bsystem\s*\(|\|\s*&?\s*getline|\|&|\|\s*"|\bprintf?\b[^;{}\n>]{0,200}>/.test(prog) || /"[^"]*"\s*\|/.test(prog)) {
    return mut(x, `${x.name} program runs commands or writes files`);
  }
  const files = (vals(o, "source")[0] ? o.pos : o.pos.slice(1)).find((w) => !w.dynamic && SECRET_PATH.test(w.text));
  if (files) return mut(x, `reads credentials from ${files.text}`);
  safe(x);
});
rule("sed", (x) => {
  const o = opts(x.args, "efl", ["expression", "file", "line-length"]);
  const target = (o.pos.slice(vals(o, "e", "expression").length > 0 || has(o, "f", "file") ? 0 : 1)).map((w) => w.text);
  if (has(o, "i", "in-place") || o.flags.some((f) => f.name.startsWith("in-place"))) {
    const crit = target.find((t) => isCriticalPath(t));
    return crit ? danger(x, `sed -i edits the system file ${crit}`) : mut(x, "sed -i edits files in place");
  }
  if (has(o, "f", "file")) return mut(x, "sed runs a script from a file, which is not analysed");
  if (has(o, "sandbox")) return readOnly(x);
  const scripts = vals(o, "e", "expression");
  if (scripts.length === 0 && o.pos[0]) scripts.push(o.pos[0]);
  if (scripts.some((w) => w.dynamic)) return mut(x, "sed script is only known at run time");
  for (const s of scripts.map((w) => w.text)) {
    if (/(?:^|[;\n{}]|[\d$\/]!?)\s*[wWe](?:\s|$)/.test(s) || /s(.)(?:\\.|(?!\1)[^\\])*\1(?:\\.|(?!\1)[^\\])*\1[gpiImM0-9]*[we]/.test(s)) {
      return mut(x, "sed script writes a file or runs a command (w/e)");
    }
  }
  const secret = target.find((t) => SECRET_PATH.test(t));
  if (secret) return mut(x, `reads credentials from ${secret}`);
  safe(x);
});
rule("tee", (x) => {
  const o = opts(x.args, "", ["output-error"]);
  const files = o.pos.filter((w) => w.dynamic || !DEV_OK.test(w.text));
  if (files.length === 0) return safe(x);
  for (const f of files) {
    const p = normalisePath(f.text);
    if (f.dynamic) mut(x, "tee writes to a file chosen at run time");
    else if (BLOCK_DEVICE.test(p)) danger(x, `tee writes straight to the device ${p}`);
    else if (!has(o, "a", "append") && isCriticalPath(p)) danger(x, `tee overwrites the system file ${p}`);
    else mut(x, `tee writes to the file ${p}`);
  }
});
rule("rm", (x) => {
  const o = opts(x.args, "", ["interactive"]);
  const targets = o.pos.map((w) => w.text);
  const crit = targets.find((t) => isCriticalPath(t));
  if (has(o, "no-preserve-root")) danger(x, "rm --no-preserve-root");
  else if (has(o, "r", "R", "recursive")) danger(x, crit ? `rm -r deletes the system path ${crit}` : `rm -r deletes directory trees (${clip(targets.join(" "), 40)})`);
  else if (crit) danger(x, `rm deletes the system path ${crit}`);
  else mut(x, "rm deletes files");
});
rule("unlink rmdir", (x) => {
  const crit = x.a.find((t) => isCriticalPath(t));
  if (crit) danger(x, `${x.name} deletes the system path ${crit}`);
  else mut(x, `${x.name} deletes ${x.name === "rmdir" ? "directories" : "files"}`);
});
rule("shred srm wipe", (x) => danger(x, `${x.name} irrecoverably destroys file contents`));
rule("mv", (x) => {
  const o = opts(x.args, "tS", ["target-directory", "suffix"]);
  const all = [...o.pos, ...vals(o, "t", "target-directory")].map((w) => w.text);
  const crit = all.find((t) => isCriticalPath(t));
  const dev = all.find((t) => BLOCK_DEVICE.test(normalisePath(t)));
  if (dev) danger(x, `mv writes to the device ${dev}`);
  else if (crit) danger(x, `mv moves or replaces the system path ${crit}`);
  else mut(x, "mv moves files");
});
rule("cp install ln", (x) => {
  const o = opts(x.args, "tSmogb", ["target-directory", "suffix", "mode", "owner", "group", "backup", "reply", "sparse", "preserve", "no-preserve"]);
  const dest = vals(o, "t", "target-directory")[0] ?? o.pos[o.pos.length - 1];
  const p = dest ? normalisePath(dest.text) : "";
  if (dest && BLOCK_DEVICE.test(p)) danger(x, `${x.name} writes straight to the device ${p}`);
  else if (dest && CRITICAL_FILE.test(p)) danger(x, `${x.name} replaces the system file ${p}`);
  else if (dest && /^\/(?:(?:usr\/)?(?:s?bin|lib(?:32|64|x32)?)|boot)?$/.test(p)) danger(x, `${x.name} writes into the system directory ${p}`);
  else mut(x, `${x.name} creates or replaces files`);
});
rule("truncate fallocate", (x) => {
  const crit = opts(x.args, "sro", ["size", "reference", "offset", "length"]).pos.find((w) => isCriticalPath(w.text));
  if (crit) danger(x, `${x.name} changes the size of the system file ${crit.text}`);
  else mut(x, `${x.name} changes file sizes`);
});
rule("touch mkdir mktemp mkfifo mknod patch split csplit", (x) => mut(x, `${x.name} creates or changes files`));
const ownership: Rule = (x) => {
  const o = opts(x.args, "", ["reference", "from"]);
  const targets = x.name === "chattr" || x.name === "setfacl" ? o.pos : has(o, "reference") ? o.pos : o.pos.slice(1);
  const crit = targets.find((w) => isCriticalPath(w.text));
  const recursive = has(o, "R", "recursive");
  if (crit) danger(x, `${x.name}${recursive ? " -R" : ""} changes permissions or ownership of the system path ${crit.text}`);
  else mut(x, `${x.name} changes permissions or ownership`);
};
rule("chmod chown chgrp setfacl", ownership);
rule("chattr", (x) => {
  const targets = x.args.filter((w) => !/^[-+=][aAcCdDeFijmPsStTux]+$/.test(w.text) && !/^-[RVf]+$/.test(w.text));
  const crit = targets.find((w) => isCriticalPath(w.text));
  if (crit) danger(x, `chattr changes attributes of the system path ${crit.text}`);
  else mut(x, "chattr changes file attributes");
});
rule("dd", (x) => {
  const of = x.args.find((w) => w.text.startsWith("of="));
  if (!of) return safe(x);
  const p = normalisePath(of.text.slice(3));
  if (of.dynamic) mut(x, "dd writes to a file chosen at run time");
  else if (DEV_OK.test(p)) safe(x);
  else if (p.startsWith("/dev/")) danger(x, `dd writes raw data to the device ${p}`);
  else if (isCriticalPath(p)) danger(x, `dd overwrites the system file ${p}`);
  else mut(x, `dd writes the file ${p}`);
});
rule("tar bsdtar", (x) => {
  const first = x.a[0] ?? "";
  const letters = first.startsWith("-") ? "" : first;
  const o = opts(x.args, "fCbHIKLNTVXg", ["file", "directory", "to-command", "use-compress-program", "checkpoint-action", "transform"]);
  const mode = (l: string) => letters.includes(l) || has(o, l);
  const dir = vals(o, "C", "directory")[0]?.text;
  if (has(o, "to-command", "use-compress-program", "checkpoint-action", "I")) return mut(x, "tar runs a helper command");
  if (mode("t") || has(o, "list")) return safe(x);
  if ((mode("x") || has(o, "extract", "get")) && dir && isCriticalPath(dir)) return danger(x, `tar extracts over the system path ${dir}`);
  mut(x, "tar creates or extracts files");
});
rule("gzip gunzip bzip2 bunzip2 xz unxz zstd unzstd lz4 pigz lzma", (x) => {
  const o = opts(x.args, "S", ["suffix"]);
  if (has(o, "c", "stdout", "to-stdout", "l", "list", "t", "test", "h", "help", "V", "version")) safe(x);
  else mut(x, `${x.name} replaces files with their (de)compressed form`);
});
rule("zip", (x) => mut(x, "zip writes an archive"));
rule("unzip", (x) => (has(opts(x.args, "d", []), "l", "t", "p", "v", "Z") ? safe(x) : mut(x, "unzip extracts files")));
rule("vi vim nvim nano emacs ed ex pico joe mcedit visudo-edit", (x) => mut(x, `${x.name} edits files`));
rule("logger", (x) => mut(x, "logger writes to the system log"));
rule("git", (x) => {
  const o = opts(x.args, "Cc", ["git-dir", "work-tree", "namespace", "exec-path"], true);
  const verb = o.rest[0]?.text ?? "";
  const sub = opts(o.rest.slice(1), "", []);
  const SAFE_GIT = ["status", "log", "show", "diff", "rev-parse", "describe", "ls-files", "ls-tree", "ls-remote", "blame", "grep", "shortlog", "cat-file", "for-each-ref", "rev-list", "name-rev", "whatchanged", "version", "help", "reflog", "count-objects", "fsck", "show-ref", "var", "check-ignore"];
  if (SAFE_GIT.includes(verb)) return safe(x);
  if (verb === "branch" || verb === "tag") return sub.pos.length === 0 || has(sub, "l", "list", "a", "r", "v", "vv", "contains") ? safe(x) : mut(x, `git ${verb} changes refs`);
  if (verb === "remote") return sub.pos.length === 0 || ["show", "get-url"].includes(sub.pos[0].text) ? safe(x) : mut(x, "git remote changes remotes");
  if (verb === "config") return has(sub, "get", "get-all", "get-regexp", "list", "l") ? safe(x) : mut(x, "git config changes configuration");
  if (verb === "clean" && has(sub, "f", "force")) return danger(x, "git clean -f deletes untracked files");
  if (verb === "reset" && has(sub, "hard")) return danger(x, "git reset --hard discards uncommitted work");
  if (verb === "push" && has(sub, "f", "force", "force-with-lease", "mirror", "delete", "d")) return danger(x, "git push rewrites or deletes remote history");
  mut(x, `git ${verb} changes the repository`);
});

// ---------------------------------------------------------------------------------------------
// Rules: services, processes, power

const POWER_TARGET = /^(?:poweroff|reboot|halt|kexec|rescue|emergency|shutdown|soft-reboot|sleep|suspend|hibernate)\.target$/;
const CRITICAL_UNIT = /^(?:sshd?|dbus|dbus-broker|systemd-journald|systemd-logind|systemd-networkd|systemd-resolved|NetworkManager|networking|network|wicked|ongrid|ongrid-edge|\*)(?:\.service|\.socket)?$/;

rule("systemctl", (x) => {
  const o = opts(x.args, "tpsHMnoP", ["type", "property", "signal", "host", "machine", "lines", "output", "state", "kill-whom", "kill-who", "job-mode", "root", "what", "timestamp", "message"]);
  const verb = o.pos[0]?.text ?? "list-units";
  const units = o.pos.slice(1).map((w) => w.text);
  const SAFE_VERBS = ["status", "is-active", "is-enabled", "is-failed", "is-system-running", "list-units", "list-unit-files", "list-timers", "list-sockets", "list-dependencies", "list-jobs", "list-machines", "list-paths", "list-automounts", "show", "cat", "help", "get-default", "show-environment", "--version"];
  if (has(o, "version", "help", "h")) return safe(x);
  if (SAFE_VERBS.includes(verb)) return safe(x);
  if (["poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "hybrid-sleep", "suspend-then-hibernate", "soft-reboot", "rescue", "emergency", "isolate", "switch-root", "default", "exit"].includes(verb)) {
    return danger(x, `systemctl ${verb} takes the host down or out of its normal state`);
  }
  const power = units.find((u) => POWER_TARGET.test(u));
  if (power && ["start", "restart", "reload-or-restart", "try-restart", "enable"].includes(verb)) return danger(x, `systemctl ${verb} ${power} takes the host down`);
  const crit = units.find((u) => CRITICAL_UNIT.test(u));
  if (crit && ["stop", "kill", "mask", "disable", "freeze"].includes(verb)) return danger(x, `systemctl ${verb} ${crit} can cut off access to the host`);
  mut(x, `systemctl ${verb} changes service state`);
});
rule("service", (x) => {
  if (x.a.includes("--status-all") || x.a.includes("--version") || x.a.includes("--help")) return safe(x);
  const [unit = "", action = ""] = x.a;
  if (action === "status") return safe(x);
  if (CRITICAL_UNIT.test(unit) && action === "stop") return danger(x, `service ${unit} stop can cut off access to the host`);
  mut(x, `service ${unit} ${action} changes service state`.replace(/\s+/g, " "));
});
/** A tool whose first positional is a verb: the listed verbs (and no verb) are read-only, any other changes something. */
const subVerb = (safeVerbs: string, short = "", long: readonly string[] = []): Rule => {
  const ok = new Set(safeVerbs.split(/\s+/));
  return (x) => {
    const o = opts(x.args, short, long);
    const verb = o.pos[0];
    if (verb === undefined || (!verb.dynamic && ok.has(verb.text))) safe(x);
    else mut(x, `${x.name} ${clip(verb.text, 30)} is not a known read-only action`);
  };
};
rule("timedatectl hostnamectl localectl", subVerb("status show list-timezones timesync-status show-timesync list-keymaps list-locales list-x11-keymap-models"));
rule("loginctl", subVerb("list-sessions list-users list-seats show-session show-user show-seat session-status user-status seat-status"));
rule("resolvectl", subVerb("status statistics query service openpgp tlsa monitor show-cache show-server-state log-level"));
rule("networkctl", subVerb("list status lldp label"));
rule("coredumpctl", (x) => (has(opts(x.args, "o", ["output"]), "o", "output") ? mut(x, "coredumpctl writes a file") : safe(x)));
rule("chronyc", subVerb("tracking sources sourcestats activity clients ntpdata serverstats rtcdata manual-list"));
rule("journalctl", (x) => {
  if (x.a.some((t) => /^--(?:vacuum-|rotate|flush|sync|relinquish-var|smart-relinquish-var|setup-keys|update-catalog)/.test(t))) mut(x, "journalctl rotates, deletes or moves journal files");
  else safe(x);
});

rule("kill", (x) => {
  if (x.a.some((t) => t === "-l" || t === "-L" || t === "--list" || t === "--table")) return safe(x);
  let i = 0;
  let sig = "TERM";
  if (x.a[0] === "-s" || x.a[0] === "-n" || x.a[0] === "--signal") {
    sig = x.a[1] ?? "";
    i = 2;
  } else if (x.a[0]?.startsWith("-") && x.a[0] !== "--" && x.a[0].length > 1) {
    sig = x.a[0].slice(1);
    i = 1;
  }
  if (x.a[i] === "--") i++;
  const pids = x.args.slice(i);
  if (sig === "0") return safe(x);
  if (pids.some((w) => w.text === "1" || w.text === "-1")) return danger(x, "kill targets PID 1 or every process (-1)");
  mut(x, `kill sends SIG${sig.replace(/^SIG/i, "").toUpperCase()} to processes`);
});
rule("pkill killall skill", (x) => {
  const o = opts(x.args, "sugtUPGFnoacJ", ["signal", "user", "group", "terminal", "euid", "parent", "pgroup", "session", "pidfile", "older-than", "younger-than"]);
  if (o.flags.some((f) => f.name === "0") || vals(o, "s", "signal").some((w) => w.text === "0")) return safe(x);
  const crit = o.pos.find((w) => /^(?:init|systemd|sshd?|dbus-daemon|ongrid(?:-edge)?|-1|\.|\.\*)$/.test(w.text));
  if (crit) return danger(x, `${x.name} ${crit.text} kills processes the host or its access depends on`);
  mut(x, `${x.name} kills processes`);
});
rule("killall5", (x) => danger(x, "killall5 signals every process"));
rule("reboot poweroff halt", (x) => (x.a.some((t) => t === "--help" || t === "--version") ? safe(x) : danger(x, `${x.name} takes the host down`)));
rule("shutdown", (x) => (x.a.includes("-c") || x.a.includes("--show") ? mut(x, "shutdown -c cancels a scheduled shutdown") : danger(x, "shutdown takes the host down")));
rule("init telinit", (x) => danger(x, `${x.name} changes the runlevel (0 halts, 6 reboots)`));
rule("kexec", (x) => danger(x, "kexec boots another kernel"));

// ---------------------------------------------------------------------------------------------
// Rules: network

rule("ip", (x) => {
  const a = x.a;
  let i = 0;
  let batch = false;
  while (i < a.length && a[i].startsWith("-")) {
    if (/^-(?:n|netns|f|family|rc|rcvbuf|l|loops)$/.test(a[i])) i += 2;
    else {
      if (/^-(?:b|batch|force)$/.test(a[i])) batch = true;
      i++;
    }
  }
  if (batch) return mut(x, "ip -batch runs commands from a file");
  const obj = a[i] ?? "";
  const verb = a[i + 1] ?? "show";
  if (/^(?:netns)$/.test(obj) && verb === "exec") {
    if (i + 3 >= a.length) return mut(x, "ip netns exec without a command");
    return inner(x, x.args.slice(i + 3));
  }
  if (obj === "" || /^(?:mo|mon|moni|monit|monito|monitor|help)$/.test(obj)) return safe(x);
  if (/^(?:s|sh|sho|show|l|li|lis|list|lst|g|ge|get|help|identify|pids|monitor)$/.test(verb) || (verb.startsWith("-") && !/^-(?:force)$/.test(verb))) return safe(x);
  if (verb === "flush" || verb === "f") {
    return /^(?:r|ro|rou|rout|route|a|ad|add|addr|addre|addres|address)$/.test(obj) ? danger(x, `ip ${obj} flush removes addresses or routes the host may be reached through`) : mut(x, `ip ${obj} flush`);
  }
  mut(x, `ip ${obj} ${verb} changes network configuration`);
});
rule("ifconfig", (x) => (x.args.filter((w) => !w.text.startsWith("-")).length <= 1 ? safe(x) : mut(x, "ifconfig changes an interface")));
rule("ifdown ifup ifreload", (x) => mut(x, `${x.name} changes an interface's state`));
rule("route", (x) => (x.a.some((t) => ["add", "del", "delete", "flush"].includes(t)) ? mut(x, "route changes the routing table") : safe(x)));
rule("arp", (x) => (x.a.some((t) => /^-[a-zA-Z]*[dsf]/.test(t) || t === "--delete" || t === "--set") ? mut(x, "arp changes the ARP cache") : safe(x)));
rule("iptables ip6tables iptables-legacy iptables-nft ip6tables-legacy ip6tables-nft ebtables arptables", (x) => {
  const acts = new Set<string>();
  for (const t of x.a) {
    if (t.startsWith("--")) acts.add(t.slice(2));
    else if (/^-[A-Za-z]+$/.test(t)) for (const ch of t.slice(1)) acts.add(ch);
  }
  const pol = x.a.findIndex((t) => t === "-P" || t === "--policy");
  if (acts.has("F") || acts.has("flush")) return danger(x, `${x.name} -F flushes firewall rules`);
  if (pol >= 0 && /^(?:DROP|REJECT)$/i.test(x.a[pol + 2] ?? "")) return danger(x, `${x.name} -P sets a default DROP policy (can lock the host out)`);
  if (["A", "I", "D", "R", "N", "X", "E", "Z", "P", "append", "insert", "delete", "replace", "new-chain", "delete-chain", "rename-chain", "zero", "policy"].some((k) => acts.has(k))) {
    return mut(x, `${x.name} changes firewall rules`);
  }
  if (["L", "S", "C", "list", "list-rules", "check", "h", "help", "V", "version"].some((k) => acts.has(k))) return safe(x);
  mut(x, `${x.name} without a listing action`);
});
rule("iptables-save ip6tables-save nft-list", (x) => (x.a.some((t) => t === "-f" || t === "--file") ? mut(x, "writes the rules to a file") : safe(x)));
rule("iptables-restore ip6tables-restore", (x) => {
  if (x.a.some((t) => t === "-t" || t === "--test")) return safe(x);
  if (x.a.some((t) => t === "-n" || t === "--noflush")) return mut(x, `${x.name} adds firewall rules`);
  danger(x, `${x.name} replaces every firewall rule`);
});
rule("nft", (x) => {
  const o = opts(x.args, "fIDo", ["file", "includepath", "define"]);
  if (has(o, "f", "file")) return has(o, "c", "check") ? safe(x) : mut(x, "nft applies rules from a file");
  if (has(o, "i", "interactive")) return mut(x, "nft -i reads commands interactively");
  const text = o.pos.map((w) => w.text).join(" ");
  if (o.pos.some((w) => w.dynamic)) return mut(x, "nft commands are only known at run time");
  for (const stmt of text.split(/[;\n]/)) {
    const words = stmt.trim().split(/\s+/).filter(Boolean);
    const verb = words[0] ?? "";
    if (verb === "" || ["list", "describe", "monitor", "export"].includes(verb)) continue;
    if (verb === "flush" && words[1] === "ruleset") return danger(x, "nft flush ruleset removes every firewall rule");
    if (verb === "delete" && words[1] === "table") return danger(x, "nft delete table removes a whole rule table");
    return mut(x, `nft ${verb} changes firewall rules`);
  }
  safe(x);
});
rule("ufw", (x) => (["status", "show", "version", "--version", "help"].includes(x.a[0] ?? "status") || (x.a[0] === "app" && x.a[1] === "list") ? safe(x) : mut(x, `ufw ${x.a[0]} changes the firewall`)));
rule("firewall-cmd", (x) => {
  if (x.a.some((t) => t.startsWith("--panic-on"))) return danger(x, "firewall-cmd --panic-on drops all traffic");
  const acts = x.a.filter((t) => t.startsWith("--") && !/^--(?:zone|permanent|policy)(?:=|$)/.test(t));
  if (acts.length > 0 && acts.every((t) => /^--(?:list-|get-|query-|state|check-config|info-|version|help)/.test(t))) return safe(x);
  mut(x, "firewall-cmd changes the firewall");
});
rule("conntrack", (x) => (x.a.some((t) => /^-(?:[DFIU])$|^--(?:delete|flush|create|update)$/.test(t)) ? mut(x, "conntrack changes connection tracking entries") : safe(x)));
rule("sysctl", (x) => {
  const o = opts(x.args, "", []);
  if (has(o, "w", "write", "p", "load", "system") || o.pos.some((w) => w.text.includes("="))) mut(x, "sysctl changes kernel settings");
  else safe(x);
});
rule("tc", (x) => (x.a.some((t) => ["add", "del", "delete", "change", "replace", "link", "flush", "exec"].includes(t)) || x.a.includes("-b") || x.a.includes("-batch") ? mut(x, "tc changes traffic control") : safe(x)));
rule("bridge", (x) => (x.a.some((t) => ["add", "del", "delete", "replace", "set", "append", "flush"].includes(t)) ? mut(x, "bridge changes bridge configuration") : safe(x)));
rule("brctl", subVerb("show showmacs showstp"));
rule("ethtool", (x) => {
  const o = opts(x.args, "", []);
  if (has(o, "f", "flash", "E", "change-eeprom", "reset")) return danger(x, "ethtool flashes firmware, writes the EEPROM or resets the device");
  const writes = ["s", "K", "G", "A", "C", "L", "N", "U", "W", "X", "t", "change", "features", "offload", "set-ring", "set-channels", "set-coalesce", "pause", "config-nfc", "config-ntuple", "set-rxfh-indir", "set-priv-flags", "set-eee", "set-fec", "identify", "p", "test", "set-dump", "set-phy-tunable", "set-tunable"];
  if (writes.some((k) => has(o, k))) return mut(x, "ethtool changes device settings");
  safe(x);
});
rule("ovs-vsctl", (x) => {
  const o = opts(x.args, "", ["db", "timeout"]);
  const verb = o.pos[0]?.text ?? "show";
  if (verb === "emer-reset") return danger(x, "ovs-vsctl emer-reset wipes the switch configuration");
  if (/^(?:show|list|find|get|list-br|list-ports|list-ifaces|br-exists|port-to-br|iface-to-br|br-to-vlan|br-to-parent|get-controller|get-manager|get-fail-mode|get-ssl|list-zone-ct-limits)$/.test(verb)) return safe(x);
  mut(x, `ovs-vsctl ${verb} changes the switch`);
});
rule("ovs-ofctl", (x) => {
  const o = opts(x.args, "OF", ["protocols", "flow-format"]);
  const verb = o.pos[0]?.text ?? "";
  if (/^(?:show|dump-\S+|queue-stats|queue-get-config|snoop|monitor|probe|ping|benchmark|get-frags)$/.test(verb)) return safe(x);
  if (verb === "del-flows" && o.pos.length <= 2) return danger(x, "ovs-ofctl del-flows removes every flow of the bridge");
  mut(x, `ovs-ofctl ${verb} changes flows`);
});
rule("ovs-appctl", (x) => (x.a.some((t) => /\/(?:show|dump\S*|list)$|^(?:version|list-commands)$/.test(t)) ? safe(x) : mut(x, "ovs-appctl command is not a known read-only one")));
rule("bpftool", (x) => {
  const pos = x.a.filter((t) => !t.startsWith("-"));
  if (pos[0] === "feature" || pos[0] === "version" || ["show", "list", "dump", "help", "probe", "tree", "lookup", "getnext", "peek"].includes(pos[1] ?? "show")) return safe(x);
  mut(x, `bpftool ${pos.slice(0, 2).join(" ")} loads, attaches or changes BPF objects`);
});
rule("nmcli", (x) => {
  const pos = x.a.filter((t) => !t.startsWith("-"));
  if (pos[0]?.startsWith("n") && pos[1] === "off") return danger(x, "nmcli networking off disconnects the host");
  if (pos.some((t) => /^(?:up|down|delete|modify|add|reload|connect|disconnect|edit|set|on|off|clone|import|export|reapply|load)$/.test(t))) return mut(x, "nmcli changes network configuration");
  safe(x);
});

// ---------------------------------------------------------------------------------------------
// Rules: storage

rule("wipefs", (x) => (x.a.some((t) => /^-[a-zA-Z]*[aob]|^--(?:all|offset|backup|force)/.test(t)) ? danger(x, "wipefs erases filesystem signatures") : safe(x)));
rule("fdisk", (x) => (x.a.some((t) => t === "-l" || t === "--list" || t === "-V" || t === "--version") ? safe(x) : danger(x, "fdisk edits a partition table")));
rule("sfdisk", (x) => (x.a.some((t) => /^-(?:l|d|s|V|J|r)$|^--(?:list|dump|show-size|verify|json|list-free|version)$/.test(t)) && !x.a.some((t) => /^--(?:delete|move-data|part-type|part-label|part-uuid|part-attrs|relocate)/.test(t)) ? safe(x) : danger(x, "sfdisk writes a partition table")));
rule("parted", (x) => {
  const o = opts(x.args, "a", ["align"]);
  if (has(o, "l", "list", "v", "version", "h", "help")) return safe(x);
  const cmds = o.pos.slice(1).map((w) => w.text);
  if (cmds.length > 0 && cmds.every((c) => c === "print" || c === "p" || c === "unit" || /^(?:s|B|kB|MB|GB|TB|MiB|GiB|%|cyl|chs|compact)$/.test(c) || c === "free")) return safe(x);
  danger(x, "parted changes partitions");
});
rule("sgdisk gdisk cgdisk", (x) => (x.name === "sgdisk" && x.a.length > 0 && x.a.every((t) => /^-(?:p|i\S*|v|O|P)$|^--(?:print|info\S*|verify|print-mbr|pretend|version)$|^\//.test(t)) ? safe(x) : x.a.includes("-l") && x.name === "gdisk" ? safe(x) : danger(x, `${x.name} writes a GPT partition table`)));
rule("cfdisk blkdiscard", (x) => danger(x, `${x.name} changes or discards disk contents`));
rule("badblocks", (x) => (x.a.some((t) => /^-[a-zA-Z]*w/.test(t)) ? danger(x, "badblocks -w overwrites the device") : x.a.some((t) => /^-[a-zA-Z]*n/.test(t)) ? mut(x, "badblocks -n rewrites blocks") : safe(x)));
rule("hdparm", (x) => {
  if (x.a.some((t) => /^--(?:security-erase|security-erase-enhanced|trim-sector-ranges|write-sector|yes-i-know-what-i-am-doing|fwdownload|dco-restore|make-bad-sector)/.test(t))) return danger(x, "hdparm erases, writes or reflashes the drive");
  if (x.a.every((t) => /^-(?:[iIgCtTrvH]+)$|^--(?:direct|Istdout)$|^\//.test(t))) return safe(x);
  mut(x, "hdparm changes drive settings");
});
rule("nvme", (x) => {
  const v = x.a[0] ?? "";
  if (/^(?:format|sanitize|delete-ns|detach-ns|fw-download|fw-commit|write|write-zeroes|dsm)$/.test(v)) return danger(x, `nvme ${v} erases or rewrites the drive`);
  if (/^(?:list|list-subsys|id-ctrl|id-ns|smart-log|error-log|fw-log|get-log|show-regs|get-feature|version|help|list-ctrl|list-ns)$/.test(v)) return safe(x);
  mut(x, `nvme ${v} changes the drive`);
});
rule("smartctl", (x) => (x.a.some((t) => /^-(?:t|X|s|o|S)$|^--(?:test|abort|smart|offlineauto|saveauto|set)/.test(t)) ? mut(x, "smartctl starts a self-test or changes SMART settings") : safe(x)));
rule("lvs vgs pvs lvdisplay vgdisplay pvdisplay lvscan vgscan pvscan", readOnly);
rule("lvremove vgremove pvremove lvreduce vgreduce pvmove", (x) => danger(x, `${x.name} removes or shrinks storage volumes`));
rule("lvcreate lvextend lvresize lvchange vgcreate vgextend vgchange pvcreate pvresize lvrename vgrename", (x) =>
  x.name === "lvresize" && x.a.some((t) => /^-L-|^--size=?-/.test(t)) ? danger(x, "lvresize shrinks a volume") : mut(x, `${x.name} changes storage volumes`),
);
rule("mdadm", (x) => {
  if (x.a.some((t) => /^--(?:zero-superblock|create|remove|fail|stop|grow)$|^-(?:C|r|f|S|G)$/.test(t))) return danger(x, "mdadm creates, stops or breaks a RAID array");
  if (x.a.some((t) => /^--(?:detail|examine|query|misc)$|^-(?:D|E|Q)$/.test(t)) || x.a.length === 0) return safe(x);
  mut(x, "mdadm changes a RAID array");
});
rule("cryptsetup", (x) => {
  const v = x.a.find((t) => !t.startsWith("-")) ?? "";
  if (/^(?:luksFormat|erase|luksErase|luksKillSlot|luksRemoveKey|reencrypt|convert)$/.test(v)) return danger(x, `cryptsetup ${v} can make the volume unreadable`);
  if (/^(?:status|luksDump|isLuks|luksUUID|benchmark|tcryptDump|bitlkDump)$/.test(v)) return safe(x);
  mut(x, `cryptsetup ${v} changes an encrypted volume`);
});
rule("zpool zfs", (x) => {
  const v = x.a.find((t) => !t.startsWith("-")) ?? "list";
  if (/^(?:destroy|labelclear|rollback)$/.test(v)) return danger(x, `${x.name} ${v} destroys data`);
  if (/^(?:status|list|iostat|get|history|events|version|help|diff|holds|userspace|groupspace)$/.test(v)) return safe(x);
  mut(x, `${x.name} ${v} changes storage pools`);
});
rule("btrfs", (x) => {
  const pos = x.a.filter((t) => !t.startsWith("-"));
  const [group = "", verb = ""] = pos;
  if (/^(?:d|de|del|dele|delet|delete)$/.test(verb) && /^su/.test(group)) return danger(x, "btrfs subvolume delete destroys data");
  if (/^(?:show|df|usage|list|stats|status|du|get|find-new|version|help|dump-super|dump-tree|tree-stats)$/.test(verb) || group === "version" || group === "--version") return safe(x);
  mut(x, `btrfs ${group} ${verb} changes a filesystem`);
});
rule("tune2fs xfs_admin", (x) => (x.a.length > 0 && x.a.every((t) => t === "-l" || t.startsWith("/")) ? safe(x) : mut(x, `${x.name} changes filesystem parameters`)));
function fsckRule(x: Cx): void {
  if (x.a.some((t) => /^-[a-zA-Z]*n/.test(t) || t === "-N")) safe(x);
  else danger(x, `${x.name} repairs a filesystem in place (data loss on a mounted or damaged filesystem)`);
}
rule("e2fsck xfs_repair", fsckRule);
rule("debugfs", (x) => (x.a.some((t) => /^-[a-zA-Z]*w/.test(t)) ? danger(x, "debugfs -w writes filesystem structures") : mut(x, "debugfs runs filesystem commands")));
rule("resize2fs xfs_growfs e4defrag xfs_fsr fstrim", (x) => mut(x, `${x.name} changes a filesystem`));
rule("losetup", (x) => (x.a.every((t) => /^-(?:a|l|j|J|n|O\S*)$|^--(?:all|list|json|noheadings|output\S*)$/.test(t)) ? safe(x) : mut(x, "losetup attaches or detaches loop devices")));
rule("mount", (x) => {
  const o = opts(x.args, "tO", ["types", "test-opts"]);
  if (o.pos.length === 0 && o.flags.every((f) => /^(?:l|t|types|show-labels|v|verbose|h|help|V|version|O|test-opts)$/.test(f.name))) safe(x);
  else mut(x, "mount mounts or remounts a filesystem");
});
rule("umount", (x) => (x.a.some((t) => /^-[a-zA-Z]*a/.test(t) || t === "--all") || x.a.some((t) => normalisePath(t) === "/") ? danger(x, "umount of every filesystem or of /") : mut(x, "umount unmounts a filesystem")));
rule("swapon swapoff", (x) => (x.name === "swapon" && (x.a.length === 0 || x.a.every((t) => /^-(?:s|-show\S*|-summary|-noheadings|-raw|-bytes)$/.test(t) || t === "--show")) ? safe(x) : mut(x, `${x.name} changes swap`)));
rule("modprobe insmod rmmod depmod", (x) => (x.name === "modprobe" && x.a.some((t) => /^-(?:n|c|D)$|^--(?:dry-run|show-depends|showconfig|show-config|version)$/.test(t)) ? safe(x) : mut(x, `${x.name} loads or unloads kernel modules`)));
rule("hwclock", (x) => (x.a.every((t) => /^-(?:r|-show|-get|-verbose|-test|-debug|-utc|-localtime|u|l)$/.test(t)) ? safe(x) : mut(x, "hwclock sets a clock")));
rule("setenforce ntpdate auditctl exportfs swaplabel", (x) => {
  if (x.name === "auditctl" && x.a.length > 0 && x.a.every((t) => t === "-l" || t === "-s")) return safe(x);
  if (x.name === "exportfs" && x.a.every((t) => t === "-v" || t === "-s")) return safe(x);
  mut(x, `${x.name} changes system settings`);
});

// ---------------------------------------------------------------------------------------------
// Rules: users, scheduling, packages

rule("useradd usermod groupadd groupmod gpasswd newusers chsh chfn adduser addgroup", (x) => mut(x, `${x.name} changes user accounts`));
rule("userdel groupdel deluser delgroup chpasswd", (x) => danger(x, `${x.name} deletes accounts or changes passwords`));
rule("passwd", (x) => (x.a.some((t) => t === "-S" || t === "--status") ? safe(x) : danger(x, "passwd changes or locks an account's password")));
rule("chage", (x) => (x.a.some((t) => t === "-l" || t === "--list") ? safe(x) : mut(x, "chage changes password ageing")));
rule("visudo", (x) => (x.a.some((t) => t === "-c" || t === "--check") ? safe(x) : mut(x, "visudo edits sudo rules")));
rule("crontab", (x) => {
  const o = opts(x.args, "u", ["user"]);
  if (has(o, "r", "remove")) return danger(x, "crontab -r deletes the whole crontab");
  if (has(o, "l", "list", "V", "version")) return safe(x);
  mut(x, "crontab replaces or edits a crontab");
});
rule("at batch", (x) => {
  const o = opts(x.args, "fqMt", ["file", "queue"]);
  if (has(o, "l", "list", "V")) return safe(x);
  mut(x, `${x.name} schedules a job`);
  if (has(o, "f", "file")) return;
  const code = stdinCode(x);
  if (code === "pipe") danger(x, `${x.name} schedules code piped in from ${producerName(x)}`);
  else if (code && code !== "file") shellText(x, code.text, code.dynamic, x.name);
});
rule("atq", safe);
rule("atrm", (x) => mut(x, "atrm removes scheduled jobs"));

const PKG_OPTS = ["option", "config", "root", "installroot", "repo", "enablerepo", "disablerepo", "prefix"];
rule("apt apt-get aptitude", subVerb("list search show policy showsrc depends rdepends madison changelog help moo", "oct", PKG_OPTS));
rule("yum dnf microdnf", subVerb("list info search provides whatprovides repolist history check-update deplist repoquery help updateinfo", "ocR", PKG_OPTS));
rule("zypper", subVerb("search se info if list-updates lu repos lr packages pa patches products pd services ls help", "R", PKG_OPTS));
rule("apk", subVerb("info search list policy version stats dot", "pX", PKG_OPTS));
rule("snap", subVerb("list info find version services changes connections logs warnings"));
rule("flatpak", subVerb("list info search remotes remote-ls history"));
rule("pip pip3", subVerb("list show freeze check search config help debug inspect"));
rule("npm", subVerb("ls list view info outdated config root prefix bin help explain why doctor", "", PKG_OPTS));
rule("gem", subVerb("list search info env contents dependency help specification"));
rule("helm", (x) => {
  const o = opts(x.args, "n", ["namespace", "kube-context", "kubeconfig"]);
  const verb = o.pos[0]?.text ?? "";
  if (/^(?:uninstall|delete|del|un)$/.test(verb)) return danger(x, `helm ${verb} removes a release and its resources`);
  subVerb("list ls status history get show inspect search version env template lint help verify", "n", ["namespace", "kube-context", "kubeconfig"])(x);
});
rule("dpkg", (x) => {
  const o = opts(x.args, "", ["admindir", "root", "instdir"]);
  if (has(o, "l", "list", "L", "listfiles", "s", "status", "S", "search", "p", "print-avail", "V", "verify", "C", "audit", "get-selections", "print-architecture", "print-foreign-architectures", "version", "c", "contents", "I", "info", "help", "compare-versions")) return safe(x);
  mut(x, "dpkg changes installed packages");
});
rule("rpm", (x) => {
  const first = x.a.find((t) => t.startsWith("-")) ?? "";
  if (/^-[a-zA-Z]*[ieUF]|^--(?:install|erase|upgrade|freshen|import|rebuilddb|initdb|setperms|setugids|restore|delete)/.test(first) || x.a.some((t) => /^--(?:erase|install|upgrade|import)$/.test(t))) return mut(x, "rpm changes installed packages");
  safe(x);
});
rule("pacman", (x) => {
  const first = x.a.find((t) => t.startsWith("-")) ?? "";
  if (/^-Q|^-T|^-F[sxlo]*$|^-S[silg]+$|^--(?:query|version|help)/.test(first)) return safe(x);
  mut(x, "pacman changes installed packages");
});

// ---------------------------------------------------------------------------------------------
// Rules: containers and clusters

const DOCKER_GLOBAL = ["context", "host", "log-level", "config", "tlscacert", "tlscert", "tlskey"];
const DOCKER_SAFE = new Set(["ps", "ls", "list", "logs", "inspect", "images", "version", "info", "stats", "top", "port", "diff", "events", "history", "df", "search", "help"]);
const DOCKER_GROUPS = new Set(["container", "image", "network", "volume", "system", "node", "service", "stack", "swarm", "secret", "config", "plugin", "context", "builder", "buildx", "manifest", "trust"]);

rule("docker podman nerdctl", (x) => {
  const g = opts(x.args, "cHl", DOCKER_GLOBAL, true);
  let rest = g.rest;
  let group = "";
  if (rest[0] && DOCKER_GROUPS.has(rest[0].text)) {
    group = rest[0].text;
    rest = rest.slice(1);
  }
  if (rest[0]?.text === "compose" || group === "compose") return compose(x, rest.slice(1));
  const verb = rest[0]?.text ?? "";
  const tail = rest.slice(1);
  const o = opts(tail, "eluwvpm", ["env", "env-file", "user", "workdir", "volume", "mount", "publish", "name", "network", "detach-keys", "filter", "format", "since", "until", "tail", "signal", "time"]);
  if (verb === "" || has(g, "version", "help", "v")) return safe(x);
  if (verb === "exec") {
    const e = opts(tail, "euw", ["env", "env-file", "user", "workdir", "detach-keys"], true);
    if (e.rest.length < 2) return mut(x, `${x.name} exec without a command starts a shell in the container`);
    return inner(x, e.rest.slice(1));
  }
  if (group === "system" && verb === "prune") return danger(x, `${x.name} system prune deletes containers, images and possibly volumes`);
  if (group === "volume" && (verb === "rm" || verb === "prune" || verb === "remove")) return danger(x, `${x.name} volume ${verb} deletes persistent data`);
  if ((verb === "rm" || verb === "remove") && has(o, "v", "volumes")) return danger(x, `${x.name} rm -v deletes containers with their volumes`);
  if ((verb === "run" || verb === "create") && (has(o, "privileged") || vals(o, "v", "volume", "mount").some((w) => /^\/(?::|$)|source=\/(?:,|$)/.test(w.text)) || vals(o, "pid").some((w) => w.text === "host"))) {
    return danger(x, `${x.name} ${verb} gives a container root access to the host`);
  }
  if (DOCKER_SAFE.has(verb) || (group === "context" && verb === "show")) return safe(x);
  if (group === "secret" || group === "config") return verb === "inspect" ? safe(x) : mut(x, `${x.name} ${group} ${verb}`);
  mut(x, `${x.name} ${group ? group + " " : ""}${verb} changes containers`);
});
function compose(x: Cx, args: Word[]): void {
  const o = opts(args, "fp", ["file", "project-name", "profile", "env-file", "project-directory", "ansi", "parallel", "progress"], true);
  const verb = o.rest[0]?.text ?? "";
  const sub = opts(o.rest.slice(1), "euw", ["env", "user", "workdir", "index", "timeout", "tail", "since"]);
  if (verb === "" || /^(?:ps|ls|logs|config|images|top|port|version|events|convert|help)$/.test(verb)) return safe(x);
  if (verb === "down" && has(sub, "v", "volumes")) return danger(x, "compose down -v deletes volumes");
  if (verb === "exec") {
    const e = opts(o.rest.slice(1), "euw", ["env", "user", "workdir", "index"], true);
    if (e.rest.length < 2) return mut(x, "compose exec without a command");
    return inner(x, e.rest.slice(1));
  }
  mut(x, `compose ${verb} changes containers`);
}
rule("docker-compose podman-compose", (x) => compose(x, x.args));
rule("crictl", subVerb("ps pods images img inspect inspecti inspectp logs stats statsp info version imagefsinfo help"));
rule("ctr", (x) => (x.a.some((t) => /^(?:ls|list|info|version)$/.test(t)) && !x.a.some((t) => /^(?:rm|delete|del|remove|kill|run|start|create|pull|import|export|prune)$/.test(t)) ? safe(x) : mut(x, "ctr changes containers")));
rule("virsh", (x) => {
  const v = x.a.find((t) => !t.startsWith("-")) ?? "list";
  if (/^(?:destroy|undefine|vol-delete|vol-wipe|pool-delete|pool-destroy|snapshot-delete)$/.test(v)) return danger(x, `virsh ${v} powers off or deletes a VM or its storage`);
  if (/^(?:list|dominfo|domstate|domblklist|domiflist|dumpxml|nodeinfo|capabilities|version|pool-list|vol-list|net-list|domstats|dommemstat|vcpuinfo|snapshot-list|help)$/.test(v)) return safe(x);
  mut(x, `virsh ${v} changes a VM`);
});

const KUBECTL_VALUES = ["namespace", "context", "cluster", "user", "server", "kubeconfig", "token", "selector", "output", "filename", "container", "field-selector", "sort-by", "since", "tail", "as", "as-group", "request-timeout", "label-columns", "template", "timeout", "grace-period", "replicas", "type", "image", "port", "cascade", "patch", "limit-bytes", "since-time", "max-log-requests", "pod-running-timeout", "chunk-size", "subresource"];
rule("kubectl oc k3s-kubectl", (x) => {
  const o = opts(x.args, "nslofcpL", KUBECTL_VALUES);
  const verb = o.pos[0]?.text ?? "";
  const res = o.pos[1]?.text ?? "";
  const all = has(o, "all", "A", "all-namespaces");
  if (verb === "" || /^(?:logs|top|explain|api-resources|api-versions|version|cluster-info|events|diff|wait|completion|plugin|help|options)$/.test(verb)) return safe(x);
  if (verb === "get" || verb === "describe") {
    const secrets = o.pos.slice(1).some((w) => /(?:^|,)(?:secrets?)(?:[/,.]|$)/.test(w.text));
    const out = vals(o, "o", "output")[0]?.text ?? "";
    if (secrets && verb === "get" && /^(?:yaml|json|jsonpath|go-template|template|custom-columns)/.test(out)) return mut(x, "kubectl get secret -o … reveals secret values");
    return safe(x);
  }
  if (verb === "auth") return res === "can-i" || res === "whoami" ? safe(x) : mut(x, "kubectl auth reconcile changes RBAC");
  if (verb === "config") return /^(?:view|get-contexts|current-context|get-clusters|get-users)$/.test(res) ? safe(x) : mut(x, `kubectl config ${res} changes the kubeconfig`);
  if (verb === "rollout") return /^(?:status|history)$/.test(res) ? safe(x) : mut(x, `kubectl rollout ${res} changes a workload`);
  if (verb === "exec") {
    const dash = x.args.findIndex((w) => w.text === "--");
    const argv = dash >= 0 ? x.args.slice(dash + 1) : o.pos.slice(2);
    if (argv.length === 0) return mut(x, "kubectl exec without a command");
    return inner(x, argv);
  }
  if (verb === "delete") {
    if (all) return danger(x, "kubectl delete --all removes every matching resource");
    if (has(o, "f", "filename", "k", "kustomize")) return danger(x, "kubectl delete -f removes the resources of a manifest");
    if (/^(?:pods?|po|events?|ev)(?:\/|$)/.test(res)) return mut(x, "kubectl delete pod restarts pods");
    return danger(x, `kubectl delete ${res} removes cluster resources`);
  }
  mut(x, `kubectl ${verb} changes the cluster`);
});

// ---------------------------------------------------------------------------------------------
// Rules: databases

/** Classifies SQL text: reads are safe, writes mutating, DROP/TRUNCATE and unqualified DELETE/UPDATE dangerous. */
function sqlClass(text: string): Finding {
  const clean = text.replace(/--[^\n]*/g, " ").replace(/\/\*[\s\S]*?\*\//g, " ");
  let worst: Finding = { cls: "safe", reason: "sql" };
  for (const raw of clean.split(";")) {
    const s = raw.trim().toLowerCase().replace(/\s+/g, " ");
    if (s === "") continue;
    let f: Finding;
    if (/^\\/.test(s)) f = /^\\(?:[dlcx?]|conninfo|timing|pset|echo|encoding)/.test(s) ? { cls: "safe", reason: "sql" } : { cls: "mutating", reason: `psql meta-command ${s.split(" ")[0]}` };
    else if (/^drop\b|^truncate\b|\bdrop\s+(?:column|constraint|partition)\b|^flush\s+(?:all|db)\b|^shutdown\b/.test(s)) f = { cls: "dangerous", reason: `SQL "${clip(s, 40)}" destroys data` };
    else if (/^delete\b/.test(s) && !/\bwhere\b/.test(s)) f = { cls: "dangerous", reason: `SQL "${clip(s, 40)}" deletes every row` };
    else if (/^update\b/.test(s) && !/\bwhere\b/.test(s)) f = { cls: "dangerous", reason: `SQL "${clip(s, 40)}" rewrites every row` };
    else if (/^(?:select|show|describe|desc|explain(?!\s+analy[sz]e)|values|table\s|with\b(?![\s\S]*\b(?:insert|update|delete|merge)\b))/.test(s) && !/\b(?:into|for\s+update|pg_terminate_backend|pg_cancel_backend|pg_reload_conf|set_config|lo_\w+|pg_read\w*|pg_write\w*|pg_ls_\w+|dblink\w*|nextval|setval|pg_advisory\w*|load_file|sleep)\b/.test(s)) f = { cls: "safe", reason: "sql" };
    else f = { cls: "mutating", reason: `SQL "${clip(s, 40)}" changes the database` };
    if (RANK[f.cls] > RANK[worst.cls]) worst = f;
  }
  return worst;
}
function sqlRule(x: Cx, code: Word | undefined, what: string): void {
  if (code) {
    if (code.dynamic) return mut(x, `${what} runs SQL that is only known at run time`);
    const f = sqlClass(code.text);
    if (f.cls === "safe") return safe(x);
    return void x.out.push(f);
  }
  const stdin = stdinCode(x);
  if (stdin && stdin !== "pipe" && stdin !== "file" && !stdin.dynamic) {
    const f = sqlClass(stdin.text);
    return f.cls === "safe" ? safe(x) : void x.out.push(f);
  }
  mut(x, `${what} runs SQL that is not on the command line`);
}
rule("psql", (x) => {
  const o = opts(x.args, "cdfhpUvoLTFRP", ["command", "dbname", "file", "host", "port", "username", "variable", "set", "output", "log-file", "field-separator", "record-separator", "pset"]);
  if (has(o, "l", "list", "V", "version", "help")) return safe(x);
  if (has(o, "f", "file")) return mut(x, "psql runs SQL from a file");
  if (has(o, "o", "output", "L", "log-file")) mut(x, "psql writes an output file");
  const cmds = vals(o, "c", "command");
  if (cmds.length > 1) return sqlRule(x, joinWords(cmds), "psql");
  sqlRule(x, cmds[0], "psql");
});
rule("mysql mariadb", (x) => {
  const o = opts(x.args, "eDhuPS", ["execute", "database", "host", "user", "port", "socket", "defaults-file", "defaults-extra-file", "init-command"]);
  if (has(o, "V", "version", "help")) return safe(x);
  sqlRule(x, vals(o, "e", "execute")[0], x.name);
});
rule("sqlite3", (x) => {
  const o = opts(x.args, "", ["cmd", "init", "separator", "newline", "nullvalue"]);
  if (has(o, "version", "help")) return safe(x);
  const sql = o.pos.slice(1);
  sqlRule(x, sql.length > 0 ? joinWords(sql) : undefined, "sqlite3");
});
rule("clickhouse-client", (x) => {
  const o = opts(x.args, "qhudP", ["query", "host", "user", "database", "port", "password"]);
  sqlRule(x, vals(o, "q", "query")[0], "clickhouse-client");
});
rule("mongo mongosh", (x) => {
  const o = opts(x.args, "uph", ["eval", "username", "password", "host", "port", "file"]);
  const js = vals(o, "eval")[0];
  if (!js) return has(o, "version", "help") ? safe(x) : mut(x, `${x.name} runs commands that are not on the command line`);
  if (js.dynamic) return mut(x, `${x.name} --eval is only known at run time`);
  if (/dropDatabase|\.drop\(|deleteMany\(\s*\{\s*\}\s*\)|remove\(\s*\{\s*\}\s*\)|shutdownServer/.test(js.text)) return danger(x, `${x.name} --eval drops or empties data`);
  if (/\b(?:insert\w*|update\w*|delete\w*|remove|drop\w*|create\w*|rename\w*|replace\w*|bulkWrite|findAndModify|findOneAnd\w+|shutdown\w*|runCommand|adminCommand|eval|load)\s*\(/.test(js.text)) return mut(x, `${x.name} --eval changes data`);
  safe(x);
});
rule("redis-cli", (x) => {
  const o = opts(x.args, "hpanudsriDc", ["user", "pass", "askpass", "tls", "cacert", "sni", "rdb", "pipe-timeout", "pattern", "count", "functions-rdb", "memkeys-samples", "eval"]);
  if (has(o, "rdb", "pipe", "functions-rdb", "eval")) return mut(x, "redis-cli writes dumps, pipes raw commands or runs scripts");
  if (has(o, "scan", "bigkeys", "memkeys", "hotkeys", "stat", "latency", "latency-history", "latency-dist", "intrinsic-latency", "version", "help")) return safe(x);
  const cmd = (o.pos[0]?.text ?? "").toLowerCase();
  const sub = (o.pos[1]?.text ?? "").toLowerCase();
  if (cmd === "") return mut(x, "redis-cli without a command reads commands from stdin");
  if (o.pos[0].dynamic) return mut(x, "redis-cli command is only known at run time");
  if (/^(?:flushall|flushdb|shutdown|debug|swapdb|slaveof|replicaof|failover)$/.test(cmd) || (cmd === "script" && sub === "flush") || (cmd === "function" && sub === "flush") || (cmd === "cluster" && /^(?:reset|forget|flushslots)$/.test(sub))) {
    return danger(x, `redis-cli ${[cmd, sub].filter(Boolean).join(" ")} erases data or takes the server down`);
  }
  const READ = /^(?:get|mget|exists|ttl|pttl|type|strlen|llen|lrange|lindex|scard|smembers|sismember|srandmember|hget|hmget|hgetall|hkeys|hvals|hlen|hexists|zcard|zrange|zrangebyscore|zrevrange|zscore|zrank|zcount|scan|sscan|hscan|zscan|keys|dbsize|info|ping|echo|time|role|lastsave|xlen|xrange|xrevrange|xinfo|xpending|pfcount|getrange|bitcount|getbit|object|randomkey|dump|lpos|geopos|geodist|memory|latency|slowlog|pubsub|command|client|config|cluster|module)$/;
  if (READ.test(cmd)) {
    if (/^(?:client|config|slowlog|memory|latency|cluster|module)$/.test(cmd) && !/^(?:list|info|get|getname|id|len|usage|stats|doctor|latest|history|nodes|slots|shards|myid|keyslot|countkeysinslot|help)$/.test(sub)) {
      return mut(x, `redis-cli ${cmd} ${sub} changes server state`);
    }
    return safe(x);
  }
  mut(x, `redis-cli ${cmd} changes data`);
});
