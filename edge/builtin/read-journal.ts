/** read_journal (D2): recent systemd journal entries by unit, time and priority, read with journalctl and no shell. */
import { execFile } from "node:child_process";
import type { Dirent } from "node:fs";
import { readdir } from "node:fs/promises";
import path from "node:path";
import { defineSkill } from "../../skill/define.ts";
import { READ_JOURNAL, PRIORITIES, SINCE_PATTERN, UNIT_PATTERN } from "../../skill/catalog/read-journal.ts";
import { SkillError } from "../../skill/errors.ts";
import { compileGrep } from "./tail-file.ts";

type Priority = (typeof PRIORITIES)[number];

const UNIT_RE = new RegExp(UNIT_PATTERN, "u");

const SINCE_RE = new RegExp(SINCE_PATTERN, "u");

const RELATIVE_UNITS: Readonly<Record<string, number>> = {
  s: 1e3, sec: 1e3, secs: 1e3, second: 1e3, seconds: 1e3,
  m: 6e4, min: 6e4, mins: 6e4, minute: 6e4, minutes: 6e4,
  h: 36e5, hr: 36e5, hrs: 36e5, hour: 36e5, hours: 36e5,
  d: 864e5, day: 864e5, days: 864e5,
  w: 6048e5, week: 6048e5, weeks: 6048e5,
};
const MAX_RANGE_MS = 10 * 365 * 864e5;
const MAX_MESSAGE_CHARS = 8192;
const MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

const timeHint = (param: string) => `Write ${param} as "1h ago", "30min ago", "2 days ago", "today", "yesterday" or an ISO time such as 2025-01-31T14:00:00Z.`;
const SINCE_HINT = timeHint("since");
const UNAVAILABLE_HINT =
  "This host keeps no systemd journal (no systemd, or journald is not persisting logs). Read the service's log files with tail_file (e.g. under /var/log) instead.";

/** Turns the since param into an absolute time, so journalctl only ever receives "@<epoch seconds>". */
export function parseSince(text: string, now: Date = new Date()): Date {
  return parseJournalTime(text, "since", now);
}

/** Turns a time param (since, until) into an absolute time; a refusal names the param. */
export function parseJournalTime(text: string, param: "since" | "until", now: Date = new Date()): Date {
  const bad = (why: string) => new SkillError("invalid_argument", `param "${param}": ${JSON.stringify(text.slice(0, 64))} ${why}`, timeHint(param));
  if (!SINCE_RE.test(text)) throw bad("is not a time journalctl can be asked for");
  if (text === "now") return new Date(now);
  if (text === "today" || text === "yesterday") {
    const d = new Date(now.getFullYear(), now.getMonth(), now.getDate());
    if (text === "yesterday") d.setDate(d.getDate() - 1);
    return d;
  }
  const iso = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?(Z|[+-]\d{2}:?\d{2})?$/.exec(text);
  if (iso) {
    const [y, mo, d, h = 0, mi = 0, s = 0] = iso.slice(1, 7).map((v) => (v === undefined ? 0 : Number(v)));
    const ms = iso[7] ? Math.floor(Number(`0.${iso[7]}`) * 1000) : 0;
    const zone = iso[8];
    if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59 || new Date(Date.UTC(y, mo - 1, d)).getUTCDate() !== d) throw bad("is not a valid date and time");
    if (zone === undefined) return new Date(y, mo - 1, d, h, mi, s, ms); // local time, as journalctl reads it
    const offset = zone === "Z" ? 0 : (zone[0] === "-" ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(-2)));
    const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s, ms) - offset * 60_000);
    return date;
  }
  const body = text.replace(/^-/, "").replace(/ ?ago$/, "");
  let total = 0;
  let matched = "";
  for (const [whole, amount, unit] of body.matchAll(/(\d+) ?([a-z]+) ?/g)) {
    const size = RELATIVE_UNITS[unit];
    if (size === undefined) throw bad(`uses the unknown unit "${unit}"`);
    total += Number(amount) * size;
    matched += whole;
  }
  if (matched !== body || total === 0) throw bad("is not a time journalctl can be asked for");
  if (total > MAX_RANGE_MS) throw bad("reaches back more than 10 years");
  return new Date(now.getTime() - total);
}

/** The validated params read_journal turns into journalctl arguments. */
export interface JournalQuery {
  unit?: string;
  since?: Date;
  /** Only entries up to this time: with --reverse -n N, the newest N of the window rather than of now. */
  until?: Date;
  priority?: string;
  lines: number;
  grep?: string;
  /** Journal directory to read instead of the system journal (skills.read_journal.directory). */
  directory?: string;
}

/**
 * The journalctl argument list, built only from checked values (each `--name=value` is one argv
 * element, and nothing runs through a shell). --reverse makes -n take the newest N even with --since.
 */
export function buildJournalArgs(q: JournalQuery): string[] {
  if (!Number.isInteger(q.lines) || q.lines < 1 || q.lines > 2000) throw new SkillError("invalid_argument", 'param "lines": must be an integer from 1 to 2000', "Ask for between 1 and 2000 lines.");
  const args = ["-o", "json", "--no-pager", "--reverse", "-n", String(q.lines)];
  if (q.directory !== undefined) args.push(`--directory=${q.directory}`);
  if (q.unit !== undefined) {
    if (!UNIT_RE.test(q.unit)) {
      throw new SkillError("invalid_argument", `param "unit": ${JSON.stringify(q.unit.slice(0, 80))} is not a systemd unit name`, "Pass a unit name such as nginx, nginx.service or getty@tty1.service (letters, digits and : _ . @ - only).");
    }
    args.push(`--unit=${q.unit}`);
  }
  if (q.since !== undefined) {
    if (Number.isNaN(q.since.getTime())) throw new SkillError("invalid_argument", 'param "since": not a valid time', SINCE_HINT);
    args.push(`--since=@${Math.floor(q.since.getTime() / 1000)}`);
  }
  if (q.until !== undefined) {
    if (Number.isNaN(q.until.getTime())) throw new SkillError("invalid_argument", 'param "until": not a valid time', timeHint("until"));
    if (q.since !== undefined && q.until.getTime() < q.since.getTime()) {
      throw new SkillError("invalid_argument", `param "until": ${q.until.toISOString()} is before since (${q.since.toISOString()})`, "Give until after since, or leave it out to read up to now.");
    }
    // Rounded up, so entries within the last second of the window are kept.
    args.push(`--until=@${Math.ceil(q.until.getTime() / 1000)}`);
  }
  if (q.priority !== undefined) {
    if (!(PRIORITIES as readonly string[]).includes(q.priority)) throw new SkillError("invalid_argument", `param "priority": must be one of ${PRIORITIES.join(", ")}`, "Pick a syslog priority name, e.g. err or warning.");
    args.push(`--priority=${q.priority}`);
  }
  if (q.grep !== undefined) {
    compileGrep(q.grep);
    args.push(`--grep=${q.grep}`);
  }
  return args;
}

/** One journal entry as the skill returns it. */
export interface JournalEntry {
  time: string | null;
  unit: string | null;
  identifier: string | null;
  priority: Priority | null;
  pid: number | null;
  message: string;
}

/** A journal field as text: journalctl -o json gives a string, an array of bytes (binary data), null (too large) or an array of those (repeated field). */
function fieldText(v: unknown): string | null {
  if (typeof v === "string") return v;
  if (Array.isArray(v)) {
    if (v.length > 0 && v.every((b) => typeof b === "number")) return Buffer.from(v as number[]).toString("utf8");
    for (const item of v) {
      const t = fieldText(item);
      if (t !== null) return t;
    }
  }
  return null;
}

/** Parses journalctl -o json output (one object per line) into entries; lines that are not JSON objects are counted, not fatal. */
export function parseJournalJson(text: string): { entries: JournalEntry[]; skipped: number } {
  const entries: JournalEntry[] = [];
  let skipped = 0;
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    let o: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(line);
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("not an object");
      o = parsed as Record<string, unknown>;
    } catch {
      skipped++;
      continue;
    }
    const num = (v: string | null) => (v === null || v.trim() === "" ? NaN : Number(v));
    const usec = num(fieldText(o.__REALTIME_TIMESTAMP));
    const prio = num(fieldText(o.PRIORITY));
    const pid = num(fieldText(o._PID) ?? fieldText(o.SYSLOG_PID));
    const message = fieldText(o.MESSAGE) ?? (o.MESSAGE === null ? "[message too large for journalctl to print]" : "");
    entries.push({
      time: Number.isFinite(usec) && usec > 0 ? new Date(Math.floor(usec / 1000)).toISOString() : null,
      // UNIT/USER_UNIT name the unit systemd itself reports about (start, stop, failure); _SYSTEMD_UNIT is the sender's unit.
      unit: fieldText(o.UNIT) ?? fieldText(o.USER_UNIT) ?? fieldText(o._SYSTEMD_UNIT) ?? fieldText(o._SYSTEMD_USER_UNIT),
      identifier: fieldText(o.SYSLOG_IDENTIFIER) ?? fieldText(o._COMM),
      priority: Number.isInteger(prio) && prio >= 0 && prio <= 7 ? PRIORITIES[prio] : null,
      pid: Number.isInteger(pid) && pid > 0 ? pid : null,
      message: message.length > MAX_MESSAGE_CHARS ? `${message.slice(0, MAX_MESSAGE_CHARS)}…[cut at ${MAX_MESSAGE_CHARS} characters]` : message,
    });
  }
  return { entries, skipped };
}

/** Whether any journal file exists under the directories journalctl would read (and one level down: <dir>/<machine-id>/*.journal). */
async function hasJournalFiles(dirs: string[]): Promise<boolean> {
  const look = async (dir: string, depth: number): Promise<boolean> => {
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return !(code === "ENOENT" || code === "ENOTDIR"); // cannot look (permissions): do not claim there is no journal
    }
    for (const entry of entries) {
      if (entry.isFile() && /\.journal~?$/.test(entry.name)) return true;
      if (entry.isDirectory() && depth === 0 && (await look(path.join(dir, entry.name), 1))) return true;
    }
    return false;
  };
  for (const dir of dirs) if (await look(dir, 0)) return true;
  return false;
}

interface Run {
  exitCode: number;
  stdout: string;
  stderr: string;
}

function runJournalctl(bin: string, args: string[], signal: AbortSignal): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(
      bin,
      args,
      { signal, maxBuffer: MAX_OUTPUT_BYTES, encoding: "utf8", env: { ...process.env, SYSTEMD_COLORS: "0", SYSTEMD_PAGER: "cat" } },
      (err, stdout, stderr) => {
        if (!err) return resolve({ exitCode: 0, stdout, stderr });
        const e = err as NodeJS.ErrnoException & { code?: string | number };
        if (typeof e.code === "number") return resolve({ exitCode: e.code, stdout, stderr });
        reject(err);
      },
    );
  });
}

export default defineSkill({
  ...READ_JOURNAL,
  async execute(ctx, params) {
    const settings = ctx.settings as { journalctl?: unknown; directory?: unknown };
    for (const key of ["journalctl", "directory"] as const) {
      const v = settings[key];
      if (v !== undefined && (typeof v !== "string" || v === "")) {
        throw new SkillError("not_configured", `skills.read_journal.${key} must be a non-empty string`, `Fix skills.read_journal.${key} in the edge config.`);
      }
    }
    const bin = (settings.journalctl as string | undefined) ?? "journalctl";
    const directory = settings.directory as string | undefined;
    const now = new Date();
    const since = params.since !== undefined ? parseJournalTime(params.since, "since", now) : undefined;
    const until = params.until !== undefined ? parseJournalTime(params.until, "until", now) : undefined;
    const args = buildJournalArgs({ unit: params.unit, since, until, priority: params.priority, lines: params.lines, grep: params.grep, directory });

    let run: Run;
    try {
      run = await runJournalctl(bin, args, ctx.signal);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      const e = err as NodeJS.ErrnoException;
      if (e.code === "ENOENT") throw new SkillError("journal_unavailable", `journalctl is not installed on this host (${bin} not found)`, UNAVAILABLE_HINT);
      if (e.code === "EACCES") throw new SkillError("journal_unavailable", `journalctl (${bin}) cannot be executed by the edge`, UNAVAILABLE_HINT);
      if (e.code === "ERR_CHILD_PROCESS_STDIO_MAXBUFFER") {
        throw new SkillError("output_too_large", `journalctl printed more than ${MAX_OUTPUT_BYTES} bytes`, "Ask for fewer lines, or narrow with unit, priority or grep.");
      }
      throw new SkillError("journal_failed", `journalctl could not run: ${e.code ?? e.message}`, "Retry once; if it persists, report it to an operator.");
    }
    const stderr = run.stderr.trim();
    if (/No journal files were (found|opened)/i.test(stderr) && !/insufficient permissions/i.test(stderr)) {
      throw new SkillError("journal_unavailable", `there is no systemd journal on this host: ${stderr.split("\n")[0]}`, UNAVAILABLE_HINT);
    }
    if (/insufficient permissions/i.test(stderr)) {
      throw new SkillError("permission_denied", `the edge may not read the journal: ${stderr.split("\n")[0]}`, "Ask an operator to add the edge's user to the systemd-journal (or adm) group.");
    }
    if (params.grep !== undefined && /pattern matching|pcre/i.test(stderr)) {
      throw new SkillError("grep_unsupported", `this host's journalctl cannot filter by pattern: ${stderr.split("\n")[0]}`, "Call read_journal again without grep, filtering by unit, priority and since instead.");
    }
    // journalctl --grep exits 1 when nothing matched, without a word on stderr.
    const noMatch = params.grep !== undefined && run.exitCode === 1 && run.stdout.trim() === "" && stderr === "";
    if (run.exitCode !== 0 && !noMatch) {
      throw new SkillError("journal_failed", `journalctl failed (exit ${run.exitCode}): ${stderr.split("\n")[0] || "no message"}`, "Check the unit name and the other filters; journalctl's message above says what it refused.");
    }
    const { entries, skipped } = parseJournalJson(run.stdout);
    if (entries.length === 0 && !(await hasJournalFiles(directory ? [directory] : ["/run/log/journal", "/var/log/journal"]))) {
      throw new SkillError("journal_unavailable", `there is no systemd journal on this host (no journal files under ${directory ?? "/run/log/journal or /var/log/journal"})`, UNAVAILABLE_HINT);
    }
    entries.reverse(); // --reverse gave newest first; report in time order
    const notes = stderr ? stderr.split("\n").filter((l) => l.trim() !== "").slice(0, 5) : [];
    return {
      ...(params.unit !== undefined ? { unit: params.unit } : {}),
      ...(since ? { since: since.toISOString() } : {}),
      ...(until ? { until: until.toISOString() } : {}),
      ...(params.priority !== undefined ? { priority: params.priority } : {}),
      ...(params.grep !== undefined ? { grep: params.grep } : {}),
      entries,
      returned: entries.length,
      ...(skipped > 0 ? { unparsed_lines: skipped } : {}),
      ...(notes.length > 0 ? { notes } : {}),
    };
  },
});
