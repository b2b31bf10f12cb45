/**
 * A command line as mvdan/sh's bash parser reads it (the mvdan-sh package), reduced to what the
 * risk classifier needs: the plain pipeline it is, if it is one, and otherwise every simple
 * command, redirection and function anywhere in it (function bodies, subshells, substitutions,
 * control flow included). Nothing here decides a class.
 */
import sh from "mvdan-sh";

const { syntax } = sh;

/** One word after quote removal; dynamic or glob when the shell would change it at run time. */
export interface ShWord {
  /** The text with quotes removed; parts known only at run time ($X, $( ), `…`) are "$…". */
  value: string;
  /** Holds a parameter, command, arithmetic or process substitution, or $'…' / $"…" quoting. */
  dynamic: boolean;
  /** Holds an unquoted glob, brace or tilde expansion (`*`, `?`, `[`, `{`, `}`, a leading `~`). */
  glob: boolean;
}

/** A simple command found anywhere in the line. */
export interface ShCommand {
  words: ShWord[];
  /** Variable assignments before the command (`A=1 cmd`) or in export/declare/local/readonly. */
  assigns: string[];
  /** The builtin that declared the assignments (export, declare, local, readonly, typeset), if any. */
  declare?: string;
}

/** A redirection found anywhere in the line. */
export interface ShRedirect {
  op: string;
  target?: ShWord;
}

/** The line, parsed. */
export interface ParsedLine {
  /** Set when the line is one command or a `|` pipeline of commands whose every word is static, with nothing else at all. */
  pipeline?: string[][];
  /** Why the line is not such a pipeline (the first construct found), when it is not. */
  syntax?: string;
  commands: ShCommand[];
  redirects: ShRedirect[];
  /** Functions defined in the line, with the names their bodies call. */
  functions: { name: string; calls: string[] }[];
  /** The parser's message for a line it cannot read; nothing else is set then. */
  error?: string;
}

const parser = syntax.NewParser(syntax.KeepComments(true), syntax.Variant(syntax.LangBash));

/**
 * The parser's tree is read through GopherJS's own objects (`__internal_object__`): the wrapper
 * mvdan-sh hands out converts a whole subtree on every field access (≈ 50 µs each), the objects
 * under it are plain (≈ 0.1 µs). Node kinds are their Go type names (`*syntax.CallExpr`), lists are
 * Go slices ({$array, $offset, $length}), a nil pointer is its type's `nil` object.
 */
type Raw = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const kind = (n: Raw): string => {
  const t: unknown = n?.constructor?.string;
  return typeof t === "string" && t.startsWith("*syntax.") ? t.slice(8) : "";
};
const isNil = (n: Raw): boolean => n === null || n === undefined || (typeof n === "object" && n.constructor?.nil === n);
const items = (slice: Raw): Raw[] => (slice && Array.isArray(slice.$array) ? slice.$array.slice(slice.$offset, slice.$offset + slice.$length) : []);

// Operator codes differ between mvdan/sh releases: read them off the parser once.
const rawOf = (src: string): Raw => (parser.Parse(src, "") as Raw).__internal_object__;
const firstStmt = (src: string): Raw => items(rawOf(src).Stmts)[0];
const BINARY_OPS = new Map<number, string>();
for (const op of ["|", "|&", "&&", "||"]) BINARY_OPS.set(firstStmt(`a ${op} b`).Cmd.Op as number, op);
const PIPE = firstStmt("a | b").Cmd.Op as number;
const REDIR_OPS = new Map<number, string>();
for (const op of [">", ">>", "<", "<>", ">&", "<&", ">|", "&>", "&>>", "<<<"]) REDIR_OPS.set(items(firstStmt(`a ${op} b`).Redirs)[0].Op as number, op);
for (const op of ["<<", "<<-"]) REDIR_OPS.set(items(firstStmt(`a ${op} E\nx\nE\n`).Redirs)[0].Op as number, op);

/** Parses a command line; never throws. */
export function parseLine(src: string): ParsedLine {
  let file: Raw;
  try {
    file = rawOf(src);
  } catch (err) {
    const e = err as { Error?: () => string; message?: string };
    return { commands: [], redirects: [], functions: [], error: typeof e?.Error === "function" ? e.Error() : String(e?.message ?? err) };
  }
  const out: ParsedLine = { commands: [], redirects: [], functions: [] };
  walk(file, (n, k) => visit(n, k, out));
  const plain = plainPipeline(file, src);
  if (typeof plain === "string") out.syntax = plain;
  else out.pipeline = plain;
  return out;
}

/** Visits every syntax node under `root`, whatever field holds it (so nothing nested is missed). */
function walk(root: Raw, fn: (node: Raw, kind: string) => void): void {
  const seen = new Set<Raw>();
  // Breadth first, in field order: commands come out in the order they are written.
  const stack: Raw[] = [root];
  for (let at = 0; at < stack.length; at++) {
    const n = stack[at];
    if (isNil(n) || typeof n !== "object" || seen.has(n)) continue;
    seen.add(n);
    if (Array.isArray(n.$array)) {
      for (const it of items(n)) stack.push(it);
      continue;
    }
    const k = kind(n);
    if (!k) continue;
    fn(n, k);
    for (const key of Object.keys(n)) {
      if (key === "$val") continue;
      const v = n[key];
      if (v && typeof v === "object") stack.push(v);
    }
  }
}

function visit(n: Raw, k: string, out: ParsedLine): void {
  switch (k) {
    case "CallExpr":
      out.commands.push({ words: items(n.Args).map(word), assigns: items(n.Assigns).map(assignName) });
      return;
    case "DeclClause":
      out.commands.push({ words: [], assigns: items(n.Args).map(assignName), declare: isNil(n.Variant) ? "declare" : n.Variant.Value });
      return;
    case "CoprocClause":
      // coproc runs its command in the background with pipes to the shell: a wrapper.
      out.commands.push({ words: [{ value: "coproc", dynamic: false, glob: false }], assigns: [] });
      return;
    case "Stmt":
      for (const r of items(n.Redirs)) out.redirects.push({ op: REDIR_OPS.get(r.Op) ?? "?", target: isNil(r.Word) ? undefined : word(r.Word) });
      return;
    case "FuncDecl": {
      const calls: string[] = [];
      walk(n.Body, (m, mk) => {
        if (mk === "CallExpr") {
          const args = items(m.Args);
          if (args.length) calls.push(word(args[0]).value);
        }
      });
      out.functions.push({ name: isNil(n.Name) ? "" : n.Name.Value, calls });
      return;
    }
  }
}

function assignName(a: Raw): string {
  return kind(a) === "Assign" ? (isNil(a.Name) ? "" : a.Name.Value) : word(a).value;
}

/** The line as argv lists when it is a plain pipeline, else why not. */
function plainPipeline(file: Raw, src: string): string[][] | string {
  if (items(file.Last).length) return "a comment";
  const stmts = items(file.Stmts);
  if (stmts.length === 0) return "an empty command";
  if (stmts.length > 1) return "more than one command (`;`, `&` or a new line)";
  if (/^[ \t]*\n|\n[ \t]*$/.test(src)) return "a new line around the command";
  const argvs: string[][] = [];
  const visitStmt = (stmt: Raw): string | undefined => {
    if (items(stmt.Comments).length) return "a comment";
    if (stmt.Negated) return "`!`";
    if (stmt.Background) return "`&`";
    if (stmt.Semicolon?.offs > 0) return "`;`";
    if (stmt.Coprocess) return "coproc";
    if (items(stmt.Redirs).length) return "a redirection";
    const cmd = stmt.Cmd;
    if (isNil(cmd)) return "an empty command";
    const type = kind(cmd);
    if (type === "BinaryCmd") {
      if (cmd.Op !== PIPE) return `\`${BINARY_OPS.get(cmd.Op) ?? "?"}\``;
      return visitStmt(cmd.X) ?? visitStmt(cmd.Y);
    }
    if (type !== "CallExpr") return describe(type);
    if (items(cmd.Assigns).length) return "a variable assignment";
    const argv: string[] = [];
    for (const a of items(cmd.Args)) {
      const w = word(a);
      if (w.dynamic) return `an expansion or substitution in \`${w.value}\``;
      if (w.glob) return `a glob, brace or tilde expansion in \`${w.value}\``;
      argv.push(w.value);
    }
    if (argv.length === 0) return "an empty command";
    argvs.push(argv);
    return undefined;
  };
  return visitStmt(stmts[0]) ?? argvs;
}

const DESCRIBED: Record<string, string> = {
  Subshell: "a subshell `( )`",
  Block: "a block `{ }`",
  IfClause: "if",
  WhileClause: "while/until",
  ForClause: "for/select",
  CaseClause: "case",
  FuncDecl: "a function definition",
  ArithmCmd: "arithmetic `(( ))`",
  TestClause: "a test `[[ ]]`",
  DeclClause: "a declaration (export, declare, local, readonly)",
  LetClause: "let",
  TimeClause: "time",
  CoprocClause: "coproc",
};

function describe(type: string): string {
  return DESCRIBED[type] ?? `shell syntax (${type})`;
}

/** Quote removal over a word's parts, noting what the shell would expand. */
function word(w: Raw): ShWord {
  const out: ShWord = { value: "", dynamic: false, glob: false };
  items(w.Parts).forEach((p, i) => part(p, out, i === 0));
  return out;
}

function part(p: Raw, out: ShWord, first: boolean): void {
  switch (kind(p)) {
    case "Lit": {
      const v: string = p.Value;
      if (/[*?[\]{}]/.test(unescapedSpecials(v)) || (first && v.startsWith("~"))) out.glob = true;
      out.value += unescapeBare(v);
      return;
    }
    case "SglQuoted":
      if (p.Dollar) out.dynamic = true;
      out.value += p.Value;
      return;
    case "DblQuoted":
      if (p.Dollar) out.dynamic = true;
      for (const q of items(p.Parts)) {
        if (kind(q) === "Lit") out.value += unescapeDouble(q.Value);
        else {
          out.dynamic = true;
          out.value += "$…";
        }
      }
      return;
    case "ExtGlob":
      out.glob = true;
      out.value += "…";
      return;
    default:
      out.dynamic = true;
      out.value += "$…";
  }
}

/** The characters of an unquoted literal that the shell treats as special (escaped ones removed). */
function unescapedSpecials(v: string): string {
  return v.replace(/\\[\s\S]/g, "");
}

function unescapeBare(v: string): string {
  return v.replace(/\\\n/g, "").replace(/\\([\s\S])/g, "$1");
}

function unescapeDouble(v: string): string {
  return v.replace(/\\\n/g, "").replace(/\\([$`"\\])/g, "$1");
}
