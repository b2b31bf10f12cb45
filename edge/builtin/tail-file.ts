/** tail_file (D2): the last lines of a log file, confined to the directories the edge's config allows. */
import { constants } from "node:fs";
import { open, stat, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { defineSkill } from "../../skill/define.ts";
import { TAIL_FILE } from "../../skill/catalog/tail-file.ts";
import { SkillError } from "../../skill/errors.ts";
import { confine, insideAny, loadRoots as loadAllowedRoots, MAX_SYMLINK_HOPS, openedPath, shownRoots, type Roots } from "./confine.ts";

const SETTINGS_KEY = "skills.tail_file.allowed_roots";
const CHUNK_BYTES = 64 * 1024;
/** Default of skills.tail_file.max_scan_bytes: how far back from the end a call reads at most. */
const DEFAULT_SCAN_BYTES = 4 * 1024 * 1024;
const MAX_LINE_CHARS = 4096;

/**
 * Compiles a grep param as a JavaScript regular expression with smart case (like journalctl and
 * ripgrep: case-insensitive unless the pattern has an uppercase letter outside escapes), refusing
 * invalid syntax and nested quantifiers (catastrophic backtracking would block the edge's event
 * loop) with invalid_argument naming the param.
 */
export function compileGrep(pattern: string, param = "grep"): RegExp {
  if (/\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)[+*{]/.test(pattern)) {
    throw new SkillError(
      "invalid_argument",
      `param "${param}": ${JSON.stringify(pattern)} repeats a group that itself contains a repetition (e.g. (a+)+), which can take exponential time`,
      "Simplify the pattern: drop the outer repetition, or match a plain substring.",
    );
  }
  try {
    return new RegExp(pattern, /[A-Z]/.test(pattern.replace(/\\./g, "")) ? "u" : "iu");
  } catch (err) {
    throw new SkillError(
      "invalid_argument",
      `param "${param}": ${JSON.stringify(pattern)} is not a valid regular expression: ${(err as Error).message}`,
      "Pass a JavaScript regular expression, e.g. error|timeout or status=5\\d\\d; escape literal ( [ . * + ? with a backslash.",
    );
  }
}

/** The configured roots, as configured and as real paths (roots that do not exist are skipped). */
function loadRoots(settings: Readonly<Record<string, unknown>>): Promise<Roots> {
  return loadAllowedRoots(settings.allowed_roots, {
    invalid: () => new SkillError("not_configured", `${SETTINGS_KEY} must be a list of absolute directory paths`, `Fix ${SETTINGS_KEY} in the edge config, e.g. ["/var/log"].`),
    empty: () =>
      new SkillError(
        "not_configured",
        "tail_file has no allowed roots configured, so every path is refused",
        `Ask an operator to list the log directories this edge may read under ${SETTINGS_KEY} in the edge config, e.g. ["/var/log"]; meanwhile try read_journal.`,
      ),
  });
}

function notAllowed(requested: string, roots: string[], why: string): SkillError {
  return new SkillError("path_not_allowed", `${JSON.stringify(requested)} ${why}`, `tail_file only reads files under ${roots.join(", ")} (${SETTINGS_KEY}); pass a path inside one of them.`);
}

/** Lines collected from the end of a file. */
interface Tail {
  lines: string[];
  bytesScanned: number;
  /** Content before the returned lines was left unread or unexamined (enough lines, or the scan cap). */
  moreBefore: boolean;
  /** Reading stopped at the scan cap before enough lines were found. */
  scanLimitReached: boolean;
}

/**
 * Reads backwards from `size` in chunks until `want` lines (matching `grep`, if given) are found,
 * the start of the file is reached, or `maxScan` bytes have been read: a 10 GB file costs one chunk.
 */
export async function readTail(fh: FileHandle, size: number, want: number, grep: RegExp | undefined, maxScan: number): Promise<Tail> {
  const picked: string[] = []; // newest first
  let pos = size;
  let carry: Buffer = Buffer.alloc(0); // bytes before the earliest newline seen so far: a line not yet complete
  let scanned = 0;
  let trailing = true; // the empty text after a final newline is not a line
  const consider = (bytes: Buffer) => {
    let text = bytes.toString("utf8");
    if (text.endsWith("\r")) text = text.slice(0, -1);
    if (grep && !grep.test(text)) return;
    picked.push(text.length > MAX_LINE_CHARS ? `${text.slice(0, MAX_LINE_CHARS)}…[line cut at ${MAX_LINE_CHARS} characters]` : text);
  };
  while (pos > 0 && scanned < maxScan && picked.length < want) {
    const len = Math.min(CHUNK_BYTES, pos, maxScan - scanned);
    const chunk = Buffer.alloc(len);
    let got = 0;
    while (got < len) {
      const { bytesRead } = await fh.read(chunk, got, len - got, pos - len + got);
      if (bytesRead === 0) break; // the file shrank (truncated by a rotation): work with what was read
      got += bytesRead;
    }
    pos -= len;
    scanned += len;
    const data = carry.length > 0 ? Buffer.concat([chunk.subarray(0, got), carry]) : chunk.subarray(0, got);
    let end = data.length;
    for (let i = data.length - 1; i >= 0 && picked.length < want; i--) {
      if (data[i] !== 0x0a) continue;
      if (trailing && i === data.length - 1) {
        trailing = false;
        end = i;
        continue;
      }
      trailing = false;
      consider(data.subarray(i + 1, end));
      end = i;
    }
    carry = Buffer.from(data.subarray(0, end));
    if (carry.length > 0) trailing = false;
  }
  let moreBefore = pos > 0 || carry.length > 0;
  if (pos === 0 && carry.length > 0 && picked.length < want) {
    consider(carry); // the file's first line
    moreBefore = false;
  }
  return { lines: picked.reverse(), bytesScanned: scanned, moreBefore, scanLimitReached: pos > 0 && picked.length < want };
}

export default defineSkill({
  ...TAIL_FILE,
  async execute(ctx, params) {
    const grep = params.grep !== undefined ? compileGrep(params.grep) : undefined;
    const roots = await loadRoots(ctx.settings);
    const shown = shownRoots(roots);
    const requested = params.path;
    if (requested.includes("\0") || !path.isAbsolute(requested)) throw new SkillError("invalid_argument", 'param "path": must be an absolute path', "Pass an absolute path such as /var/log/syslog.");
    // Lexical check first, so nothing outside the roots is even looked at (no probing which files exist elsewhere).
    const resolved = await confine(requested, roots);
    if (resolved.kind === "outside") {
      throw notAllowed(requested, shown, resolved.how === "lexical" ? "is outside the allowed roots" : "leads outside the allowed roots (through .. or a symlink)");
    }
    if (resolved.kind === "too_long") {
      throw new SkillError("invalid_argument", 'param "path": too long (at most 4095 bytes, and 255 bytes per path component)', "Pass the real path of the log file.");
    }
    if (resolved.kind === "root_missing") throw notAllowed(requested, shown, "is under an allowed root that does not exist on this host");
    if (resolved.kind === "loop") throw notAllowed(requested, shown, `follows more than ${MAX_SYMLINK_HOPS} symlinks (a symlink loop)`);
    if (resolved.kind === "missing") throw new SkillError("not_found", `${JSON.stringify(requested)} does not exist`, "Check the file name; log files are often rotated (e.g. .1 or .gz suffixes) or live under another directory.");
    if (resolved.kind === "error") {
      if (resolved.code === "EACCES") throw new SkillError("permission_denied", `the edge may not access ${JSON.stringify(requested)}`, "The edge's user lacks permission on the file or a directory above it; ask an operator to grant read access (e.g. the adm group).");
      if (resolved.code === "ENAMETOOLONG") throw new SkillError("invalid_argument", 'param "path": too long', "Pass the real path of the log file.");
      throw new SkillError("read_failed", `cannot resolve ${JSON.stringify(requested)}: ${resolved.code}`, "Retry once; if it persists, report it to an operator.");
    }
    const real = resolved.real;

    const info = await stat(real);
    if (info.isDirectory()) throw new SkillError("is_directory", `${JSON.stringify(requested)} is a directory`, "Pass the path of a file inside it; host_files lists a directory's files.");
    if (!info.isFile()) throw new SkillError("not_regular_file", `${JSON.stringify(requested)} is not a regular file (a FIFO, socket or device)`, "tail_file only reads regular files; for a service's live output use read_journal.");

    let fh: FileHandle;
    try {
      // O_NOFOLLOW and O_NONBLOCK: a file swapped for a symlink or a FIFO after the checks above is not followed and cannot block.
      fh = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EACCES" || code === "EPERM") throw new SkillError("permission_denied", `the edge may not read ${JSON.stringify(requested)}`, "The edge's user lacks read permission on the file; ask an operator to grant it (e.g. the adm group).");
      if (code === "ELOOP") throw notAllowed(requested, shown, "changed into a symlink while being opened");
      throw new SkillError("read_failed", `cannot open ${JSON.stringify(requested)}: ${code ?? (err as Error).message}`, "Retry once; the file may be in the middle of a rotation.");
    }
    try {
      const opened = await fh.stat();
      if (!opened.isFile() || opened.ino !== info.ino || opened.dev !== info.dev) throw notAllowed(requested, shown, "changed while being opened");
      // A directory above the file swapped for a symlink between the checks and the open: ask the kernel what was opened.
      const where = await openedPath(fh.fd);
      if (where !== undefined && !insideAny(where, roots.real)) throw notAllowed(requested, shown, "changed while being opened");
      const maxScan = typeof ctx.settings.max_scan_bytes === "number" && ctx.settings.max_scan_bytes > 0 ? ctx.settings.max_scan_bytes : DEFAULT_SCAN_BYTES;
      const tail = await readTail(fh, opened.size, params.lines, grep, maxScan);
      if (ctx.signal.aborted) throw ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error("the call was cancelled");
      return {
        path: requested,
        ...(real !== requested ? { real_path: real } : {}),
        ...(params.grep !== undefined ? { grep: params.grep } : {}),
        lines: tail.lines,
        returned: tail.lines.length,
        truncated_from_start: tail.moreBefore,
        size_bytes: opened.size,
        modified_at: opened.mtime.toISOString(),
        bytes_scanned: tail.bytesScanned,
        scan_limit_reached: tail.scanLimitReached,
      };
    } finally {
      await fh.close();
    }
  },
});
