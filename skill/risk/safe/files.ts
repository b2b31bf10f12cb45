/** The safe file readers and listers (A6): cat, head, tail, grep, wc, sort, uniq, cut, awk, ls, du, df, stat. */
import { given, listsOperands, numericValues, readsOperands, type CommandSpec } from "../options.ts";
import { awkProblem } from "./awk.ts";

const COUNTS = ["-n", "-c", "--lines", "--bytes"];

/** The file commands, by name. */
export const FILE_COMMANDS: Record<string, CommandSpec> = {
  cat: {
    options: { flags: "AbeEnstTuv", long: { "show-all": "flag", "number-nonblank": "flag", number: "flag", "squeeze-blank": "flag", "show-ends": "flag", "show-tabs": "flag", "show-nonprinting": "flag" } },
    check: (a, ctx) => readsOperands(a.operands, ctx),
  },
  head: {
    options: { flags: "qvz", valued: "nc", numeric: true, long: { lines: "value", bytes: "value", quiet: "flag", silent: "flag", verbose: "flag" } },
    check: (a, ctx) => numericValues(a, COUNTS) ?? readsOperands(a.operands, ctx),
  },
  tail: {
    // Without -f/-F: a safe call ends by itself.
    options: { flags: "qvz", valued: "nc", numeric: true, long: { lines: "value", bytes: "value", quiet: "flag", silent: "flag", verbose: "flag" }, never: ["-f", "-F", "--follow", "--retry", "--pid", "-s", "--sleep-interval"] },
    check: (a, ctx) => numericValues(a, COUNTS) ?? readsOperands(a.operands, ctx),
  },
  grep: {
    options: {
      flags: "iyvnclLhHwxEFGPosqaIrUzZbT",
      valued: "emABC",
      long: {
        "ignore-case": "flag", "no-ignore-case": "flag", "invert-match": "flag", "line-number": "flag", count: "flag", "files-with-matches": "flag",
        "files-without-match": "flag", "no-filename": "flag", "with-filename": "flag", "word-regexp": "flag", "line-regexp": "flag",
        "extended-regexp": "flag", "fixed-strings": "flag", "basic-regexp": "flag", "perl-regexp": "flag", "only-matching": "flag",
        "no-messages": "flag", quiet: "flag", silent: "flag", text: "flag", recursive: "flag", null: "flag", "null-data": "flag",
        "byte-offset": "flag", "initial-tab": "flag", "line-buffered": "flag",
        regexp: "value", "max-count": "value", "after-context": "value", "before-context": "value", context: "value",
        color: "optional", colour: "optional", include: "value", exclude: "value", "exclude-dir": "value", label: "value", "binary-files": "value",
      },
    },
    check: (a, ctx) => {
      const bad = numericValues(a, ["-m", "-A", "-B", "-C", "--max-count", "--after-context", "--before-context", "--context"]);
      if (bad) return bad;
      const files = given(a, "-e", "--regexp") ? a.operands : a.operands.slice(1);
      if (!given(a, "-e", "--regexp") && a.operands.length === 0) return "grep needs a pattern";
      if (given(a, "-r", "--recursive") && files.length === 0) return "grep -r needs the directories to search (it would search the working directory)";
      return readsOperands(files, ctx);
    },
  },
  wc: {
    options: { flags: "clmwL", long: { bytes: "flag", chars: "flag", lines: "flag", words: "flag", "max-line-length": "flag" } },
    check: (a, ctx) => readsOperands(a.operands, ctx),
  },
  sort: {
    // No -o/--output (writes a file), -T (temporary directory), --compress-program (runs a program), --files0-from.
    options: {
      flags: "bdfgiMhnRrVsucz",
      valued: "ktS",
      long: {
        "ignore-leading-blanks": "flag", "dictionary-order": "flag", "ignore-case": "flag", "general-numeric-sort": "flag", "ignore-nonprinting": "flag",
        "month-sort": "flag", "human-numeric-sort": "flag", "numeric-sort": "flag", "random-sort": "flag", reverse: "flag", "version-sort": "flag",
        stable: "flag", unique: "flag", check: "optional", "zero-terminated": "flag", key: "value", "field-separator": "value", "buffer-size": "value", sort: "value",
      },
      never: ["-o", "--output", "-T", "--temporary-directory", "--compress-program", "--files0-from"],
    },
    check: (a, ctx) => readsOperands(a.operands, ctx),
  },
  uniq: {
    // A second operand is uniq's output file: at most one (the input).
    options: { flags: "cdDiuz", valued: "fsw", long: { count: "flag", repeated: "flag", "all-repeated": "optional", "ignore-case": "flag", unique: "flag", "zero-terminated": "flag", "skip-fields": "value", "skip-chars": "value", "check-chars": "value", group: "optional" } },
    check: (a, ctx) => (a.operands.length > 1 ? "uniq's second operand is an output file" : (numericValues(a, ["-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars"]) ?? readsOperands(a.operands, ctx))),
  },
  cut: {
    options: { flags: "nsz", valued: "bcdf", long: { bytes: "value", characters: "value", delimiter: "value", fields: "value", complement: "flag", "only-delimited": "flag", "output-delimiter": "value", "zero-terminated": "flag" } },
    check: (a, ctx) => readsOperands(a.operands, ctx),
  },
  awk: {
    // No -f (program from a file), -i/-l (includes, extensions), -e, --sandbox-less gawk options.
    options: { valued: "Fv", stopAtOperand: true, never: ["-f", "--file", "-i", "--include", "-l", "--load", "-e", "--source", "-E", "--exec", "-o", "--pretty-print", "-p", "--profile", "-d", "--dump-variables", "-D", "--debug", "-S", "--sandbox"] },
    check: (a, ctx) => {
      if (a.operands.length === 0) return "awk needs a program";
      const problem = awkProblem(a.operands[0]);
      if (problem) return problem;
      // Operands after the program: files, or var=value assignments.
      const files = a.operands.slice(1).filter((o) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(o));
      return readsOperands(files, ctx);
    },
  },
  ls: {
    options: {
      flags: "aAbBcCdfFgGhHiklLmnNopqQrRsStuUvxXZ1",
      valued: "IwT",
      long: {
        all: "flag", "almost-all": "flag", escape: "flag", "ignore-backups": "flag", directory: "flag", classify: "optional", "file-type": "flag",
        "no-group": "flag", "human-readable": "flag", si: "flag", inode: "flag", "numeric-uid-gid": "flag", literal: "flag", "hide-control-chars": "flag",
        "show-control-chars": "flag", "quote-name": "flag", reverse: "flag", recursive: "flag", size: "flag", "full-time": "flag", "group-directories-first": "flag",
        dereference: "flag", "dereference-command-line": "flag", author: "flag", context: "flag",
        color: "optional", colour: "optional", sort: "value", time: "value", "time-style": "value", format: "value", "block-size": "value",
        ignore: "value", hide: "value", "indicator-style": "value", "quoting-style": "value", width: "value", tabsize: "value", hyperlink: "optional",
      },
    },
    check: (a, ctx) => listsOperands(a.operands, ctx),
  },
  du: {
    // No --files0-from (reads a list of names from a file).
    options: {
      flags: "0abcDhHklLmPsSx",
      valued: "dBt",
      long: {
        null: "flag", all: "flag", "apparent-size": "flag", bytes: "flag", total: "flag", "dereference-args": "flag", "human-readable": "flag", inodes: "flag",
        dereference: "flag", "count-links": "flag", "no-dereference": "flag", "separate-dirs": "flag", si: "flag", summarize: "flag", "one-file-system": "flag",
        "max-depth": "value", "block-size": "value", threshold: "value", exclude: "value", time: "optional", "time-style": "value",
      },
      never: ["--files0-from", "-X", "--exclude-from"],
    },
    check: (a, ctx) => listsOperands(a.operands, ctx),
  },
  df: {
    options: {
      flags: "ahHiklPTv",
      valued: "Btx",
      long: { all: "flag", "human-readable": "flag", si: "flag", inodes: "flag", local: "flag", portability: "flag", "print-type": "flag", total: "flag", "no-sync": "flag", sync: "flag", output: "optional", type: "value", "exclude-type": "value", "block-size": "value" },
    },
    check: (a, ctx) => listsOperands(a.operands, ctx),
  },
  stat: {
    options: { flags: "Lft", valued: "c", long: { dereference: "flag", "file-system": "flag", terse: "flag", format: "value", printf: "value", cached: "value" } },
    check: (a, ctx) => (a.operands.length === 0 ? "stat needs a path" : listsOperands(a.operands, ctx)),
  },
};
