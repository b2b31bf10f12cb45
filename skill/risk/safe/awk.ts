/**
 * awk programs a safe call may run: no way out of awk. Refused anywhere in the program text
 * (strings and regexes included, so no lexing trick hides them): system, getline, close, fflush,
 * pipes `|`, ENVIRON, PROCINFO, gawk's `@` directives and indirect calls, backslash-newline. An
 * output redirection `print … > file` is a `>` at parenthesis depth 0 of a print/printf statement,
 * found by lexing the program as awk does (a `/` starts a regex only where an operand cannot end).
 */

const FORBIDDEN: [RegExp, string][] = [
  [/system/, "system()"],
  [/getline/, "getline"],
  [/close|fflush/, "close/fflush"],
  [/\|/, "a pipe `|`"],
  [/ENVIRON|PROCINFO/, "ENVIRON/PROCINFO"],
  [/@/, "a gawk @ directive or indirect call"],
  [/\\\n/, "a backslash-newline"],
];

/** Keywords after which a `/` starts a regex, as after an operator. */
const NOT_OPERANDS = new Set(["print", "printf", "return", "in", "if", "while", "for", "do", "else", "case", "delete", "exit"]);

/** Why an awk program is not safe, or undefined. */
export function awkProblem(program: string): string | undefined {
  for (const [re, what] of FORBIDDEN) if (re.test(program)) return `the awk program uses ${what}`;
  let statementIsPrint = false;
  let depth = 0;
  /** Whether the last token can end an operand (then `/` divides). */
  let operand = false;
  const n = program.length;
  let i = 0;
  while (i < n) {
    const c = program[i];
    if (c === " " || c === "\t" || c === "\r") {
      i++;
      continue;
    }
    if (c === "#") {
      while (i < n && program[i] !== "\n") i++;
      continue;
    }
    if (c === "\n" || c === ";" || c === "{" || c === "}") {
      statementIsPrint = false;
      depth = 0;
      operand = false;
      i++;
      continue;
    }
    if (c === '"') {
      i++;
      while (i < n && program[i] !== '"') {
        if (program[i] === "\n") return "the awk program has a new line inside a string";
        i += program[i] === "\\" ? 2 : 1;
      }
      if (i >= n) return "the awk program has an unterminated string";
      i++;
      operand = true;
      continue;
    }
    if (c === "/" && !operand) {
      i++;
      let inClass = false;
      while (i < n && (inClass || program[i] !== "/")) {
        if (program[i] === "\n") return "the awk program has a new line inside a regex";
        if (program[i] === "\\") i++;
        else if (program[i] === "[") inClass = true;
        else if (program[i] === "]") inClass = false;
        i++;
      }
      if (i >= n) return "the awk program has an unterminated regex";
      i++;
      operand = true;
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      let j = i;
      while (j < n && /[A-Za-z0-9_]/.test(program[j])) j++;
      const id = program.slice(i, j);
      if (id === "print" || id === "printf") statementIsPrint = true;
      operand = !NOT_OPERANDS.has(id);
      i = j;
      continue;
    }
    if (/[0-9.]/.test(c)) {
      while (i < n && /[0-9.eE]/.test(program[i])) i++;
      operand = true;
      continue;
    }
    if (c === "(") depth++;
    if (c === ")") depth = Math.max(0, depth - 1);
    if (c === ">" && depth === 0 && statementIsPrint) return "the awk program redirects print output (`print … > file`)";
    // `)` and `]` end operands; so may `++`/`--` (taken as postfix: then a `/` divides).
    if (c === ")" || c === "]") operand = true;
    else if ((c === "+" || c === "-") && program[i + 1] === c) {
      operand = true;
      i++;
    } else operand = false;
    i++;
  }
  return undefined;
}
