/**
 * Deterministic condensing of a long tool output (J5, analyze_output's first stage): counts, the
 * time range, error and warning message shapes with counts and examples, and the tail, so a model
 * never receives a 5 MB log. Linear in the input; at most MAX_SHAPES shapes are tracked.
 */

import { fieldLevel, PINO_LEVELS, recordLevel, shapeLevel, type Level } from "./log-level.ts";

export { keywordText, recordLevel, shapeLevel } from "./log-level.ts";

/** Options of condense. */
export interface CondenseOptions {
  /** Upper bound of `summary`'s length in characters (default 4000). */
  maxChars?: number;
  /** Lines to keep whatever their level: a regular expression, or words of which any must occur. */
  focus?: string;
}

/** Severity of a line or a shape. */
export type { Level } from "./log-level.ts";

/** One message shape: lines equal once timestamps, ids, addresses, numbers and quoted values are replaced. */
export interface CondensedPattern {
  pattern: string;
  count: number;
  example: string;
  level: Level;
  /** First and last timestamp seen on lines of this shape. */
  first?: string;
  last?: string;
}

/** What was condensed. */
export interface CondenseStats {
  bytes: number;
  lines: number;
  errorLines: number;
  warningLines: number;
  /** Distinct shapes (lines beyond the shape cap count one each). */
  distinctLines: number;
  /** Lines whose shape occurs more than once, shown as one pattern with a count. */
  foldedLines: number;
  timeRange?: { first: string; last: string };
}

/** The result: a summary of at most maxChars characters, the stats and the top shapes. */
export interface Condensed {
  summary: string;
  stats: CondenseStats;
  patterns: CondensedPattern[];
}

export const DEFAULT_MAX_CHARS = 4000;
/** Shapes tracked at most; later lines with a new shape stay unfolded. */
export const MAX_SHAPES = 5000;
const MAX_INFO_SHAPES = 4000; // the rest stays free for error and warning shapes, which come late in an incident
const SHAPE_INPUT_CHARS = 1000;
const FOCUS_INPUT_CHARS = 4096;
const EXAMPLE_CHARS = 240;
const PATTERN_CHARS = 200;
const TAIL_LINES = 30;
const TAIL_WALK = 50_000;
const MAX_PATTERNS = 50;
const MAX_FOCUS_SHAPES = 2000;
const LINE_CACHE = 10_000;

const MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec";
const TIMESTAMP = new RegExp(
  [
    String.raw`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?\b)?`, // ISO 8601, journald short-iso
    String.raw`\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}`, // nginx error log
    String.raw`\d{2}/(?:${MONTHS})/\d{4}:\d{2}:\d{2}:\d{2}(?: [+-]\d{4})?`, // nginx / apache access log
    String.raw`\b(?:${MONTHS}) [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d{1,9})?`, // syslog
  ].join("|"),
  "g",
);
const UUID = /\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b/g;
const IPV4 = /\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?\b/g;
const IPV6 = /\b[0-9a-fA-F]{1,4}(?::{1,2}[0-9a-fA-F]{1,4}){3,7}\b/g;
const LONG_TOKEN = /[A-Za-z0-9_-]{12,}/g;
// Hex ids become <n> like numbers: an id that happens to be all digits must fold with the others.
const HEX = /\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-f]*\d)[0-9a-f]{6,}\b|\b[a-f]{8,}\b/g;
const QUOTED = /"([^"\s]{1,200})"|'([^'\s]{1,200})'/g;
const STATUS = /(HTTP\/\d(?:\.\d)?"?\s+|\b(?:status(?:[ _-]?code)?|http[ _-]?status|code|HTTP)["']?\s*[=:]?\s*["']?)([1-5])\d\d\b/gi;
const PINO_LEVEL = /"level":([1-6]0)\b/;
const NUMBER = /\d+(?:\.\d+)?(?!xx>)/g;
const FRAME = /^\s+(?:at \S|File ")/;

/** A line's shape and the first timestamp on it. Each pass runs only when the line has the characters it needs. */
export function lineShape(line: string): { shape: string; ts?: string } {
  let s = line.length > SHAPE_INPUT_CHARS ? line.slice(0, SHAPE_INPUT_CHARS) : line;
  if (FRAME.test(s)) return { shape: s.trimStart().startsWith("at ") ? "at <frame>" : "File <frame>" };
  let ts: string | undefined;
  const digits = /\d/.test(s);
  const colon = s.includes(":");
  if (digits) {
    if (colon) {
      s = s.replace(TIMESTAMP, (m) => {
        ts ??= m;
        return "<ts>";
      });
      if (s.includes('"level":')) s = s.replace(PINO_LEVEL, (_m, n: string) => `"level":"${PINO_LEVELS[n]}"`);
    }
    if (s.includes("-")) s = s.replace(UUID, "<uuid>");
    if (s.includes(".")) s = s.replace(IPV4, "<ip>");
    if (colon) s = s.replace(IPV6, "<ip>");
    if (s.length >= 12) s = s.replace(LONG_TOKEN, (m) => (/\d(?:\D*\d){2}/.test(m) && /[A-Za-z]/.test(m) ? "<id>" : m));
  }
  if (s.length >= 6) s = s.replace(HEX, "<n>");
  if (s.includes('"') || s.includes("'")) {
    s = s.replace(QUOTED, (m, d?: string, q?: string) => (/^[A-Za-z_][A-Za-z_.-]*$/.test(d ?? q ?? "") ? m : d !== undefined ? '"<s>"' : "'<s>'"));
  }
  if (digits) s = s.replace(STATUS, (_m, pre: string, cls: string) => `${pre}<${cls}xx>`).replace(NUMBER, "<n>");
  s = s.replace(/\s{2,}/g, " ").trim();
  return ts === undefined ? { shape: s } : { shape: s, ts };
}

interface Shape {
  key: string;
  level: Level;
  count: number;
  example: string;
  firstLine: number;
  first?: string;
  last?: string;
}

interface FocusHit {
  count: number;
  line: string;
  lastLine: number;
}

/** Condenses `text` (plain lines, or JSON whose log-like fields are condensed) to a summary of at most maxChars. */
export function condense(text: string, opts: CondenseOptions = {}): Condensed {
  const maxChars = Math.max(0, Math.floor(opts.maxChars ?? DEFAULT_MAX_CHARS));
  const bytes = Buffer.byteLength(text, "utf8");
  const plain = text.includes("\x1b") ? text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "") : text;
  const json = fromJson(plain);
  const lines = json ? json.lines : splitLines(plain);
  const levels = json?.levels;
  const focus = opts.focus?.trim() ? compileFocus(opts.focus.trim()) : undefined;

  const shapes: Shape[] = [];
  const index = new Map<string, number>();
  const ids = new Int32Array(lines.length).fill(-1);
  const focusHits = new Map<string, FocusHit>();
  let infoShapes = 0;
  let untracked = 0;
  let errorLines = 0;
  let warningLines = 0;
  let focusLines = 0;
  let firstTs: string | undefined;
  let lastTs: string | undefined;

  const seen = new Map<string, { shape: string; ts?: string }>(); // exact repeats skip the regex passes
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.length === 0 || !/\S/.test(line)) continue;
    let known = line.length <= 200 ? seen.get(line) : undefined;
    if (known === undefined) {
      known = lineShape(line);
      if (seen.size < LINE_CACHE && line.length <= 200) seen.set(line, known);
    }
    const { shape, ts } = known;
    if (ts !== undefined) {
      firstTs ??= ts;
      lastTs = ts;
    }
    // A record's level comes from its fields (recordLevel), not its text: such lines fold apart from text lines of the same shape.
    const forced = levels?.[i];
    const indexKey = forced === undefined ? shape : `${forced}\u0000${shape}`;
    let id = index.get(indexKey);
    let level: Level;
    if (id !== undefined) {
      level = shapes[id].level;
    } else {
      level = forced ?? shapeLevel(shape);
      if (shapes.length < MAX_SHAPES && (level !== "info" || infoShapes < MAX_INFO_SHAPES)) {
        id = shapes.push({ key: shape, level, count: 0, example: clip(line.trim(), EXAMPLE_CHARS), firstLine: i }) - 1;
        index.set(indexKey, id);
        if (level === "info") infoShapes++;
      } else {
        untracked++;
      }
    }
    if (id !== undefined) {
      const s = shapes[id];
      s.count++;
      ids[i] = id;
      if (ts !== undefined) {
        s.first ??= ts;
        s.last = ts;
      }
    }
    if (level === "error") errorLines++;
    else if (level === "warning") warningLines++;
    if (focus && focus.re.test(line.length > FOCUS_INPUT_CHARS ? line.slice(0, FOCUS_INPUT_CHARS) : line)) {
      focusLines++;
      const hit = focusHits.get(shape);
      if (hit) {
        hit.count++;
        hit.line = line;
        hit.lastLine = i;
      } else if (focusHits.size < MAX_FOCUS_SHAPES) {
        focusHits.set(shape, { count: 1, line, lastLine: i });
      }
    }
  }

  const byCount = (a: Shape, b: Shape) => b.count - a.count || a.firstLine - b.firstLine;
  const errors = shapes.filter((s) => s.level === "error").sort(byCount);
  const warnings = shapes.filter((s) => s.level === "warning").sort(byCount);
  const repeated = shapes.filter((s) => s.level === "info" && s.count > 1).sort(byCount);
  const foldedLines = shapes.reduce((n, s) => (s.count > 1 ? n + s.count : n), 0);
  const stats: CondenseStats = {
    bytes,
    lines: lines.length,
    errorLines,
    warningLines,
    distinctLines: shapes.length + untracked,
    foldedLines,
    ...(firstTs !== undefined && lastTs !== undefined ? { timeRange: { first: firstTs, last: lastTs } } : {}),
  };

  // Header.
  const head: string[] = [
    `${bytes} bytes, ${lines.length} lines: ${errorLines} error, ${warningLines} warning; ${stats.distinctLines} distinct shapes, ${foldedLines} lines folded into ${shapes.filter((s) => s.count > 1).length} repeated shapes` +
      (untracked > 0 ? ` (shape cap of ${MAX_SHAPES} reached: ${untracked} lines not folded)` : ""),
  ];
  if (stats.timeRange) head.push(`time range: ${stats.timeRange.first} … ${stats.timeRange.last}`);
  if (json) head.push(clip(`JSON input: lines from ${json.sources.join(", ")}${json.fields.length ? `; fields: ${json.fields.join(" ")}` : ""}`, 400));
  if (focus) head.push(`focus ${focus.label}: ${focusLines} matching lines`);
  let summary = head.join("\n");

  if (plain.length + summary.length + 2 <= maxChars) {
    summary += `\n\n${plain.replace(/\s+$/, "")}`; // small enough: returned as is
  } else {
    summary += buildSections(maxChars - summary.length, { shapes, errors, warnings, repeated, lines, ids, focusHits, focus: focus?.label });
  }
  if (summary.length > maxChars) {
    const marker = `\n…[cut at ${maxChars} characters]`;
    summary = maxChars > marker.length ? summary.slice(0, maxChars - marker.length) + marker : summary.slice(0, maxChars);
  }
  return { summary, stats, patterns: topPatterns([...errors, ...warnings, ...repeated], maxChars) };
}

/** The body after the header: focus, errors, warnings, repeated info, then the tail, each within a share of the budget. */
function buildSections(
  budget: number,
  o: { shapes: Shape[]; errors: Shape[]; warnings: Shape[]; repeated: Shape[]; lines: string[]; ids: Int32Array; focusHits: Map<string, FocusHit>; focus?: string },
): string {
  const total = Math.max(0, budget);
  let remaining = total;
  let carry = 0;
  let out = "";
  const shown = new Set<string>();
  const add = (share: number, build: (allowance: number) => string) => {
    const allowance = Math.min(remaining, Math.floor(share * total) + carry);
    const text = build(allowance);
    out += text;
    remaining -= text.length;
    carry = allowance - text.length;
  };
  if (o.focus) {
    const hits = [...o.focusHits.entries()].sort((a, b) => b[1].lastLine - a[1].lastLine);
    add(0.4, (allowance) =>
      section(`\n\n== focus ${o.focus} (latest last) ==`, hits.map(([key, h]) => ({ key, text: `${countTag(h.count)}${clip(h.line.trim(), EXAMPLE_CHARS)}` })), allowance, shown, true),
    );
  }
  const patternItems = (list: Shape[]) => list.map((s) => ({ key: s.key, text: formatShape(s) }));
  add(0.35, (a) => section(`\n\n== errors: ${o.errors.length} patterns, ${sum(o.errors)} lines ==`, patternItems(o.errors), a, shown));
  add(0.15, (a) => section(`\n\n== warnings: ${o.warnings.length} patterns, ${sum(o.warnings)} lines ==`, patternItems(o.warnings), a, shown));
  add(0.1, (a) => section(`\n\n== repeated info: ${o.repeated.length} patterns ==`, patternItems(o.repeated), a, shown));

  // The tail: the newest line of each shape not listed above, newest first, shown oldest first.
  const tail: { key: string; text: string }[] = [];
  const inTail = new Set<string>();
  for (let i = o.lines.length - 1, walked = 0; i >= 0 && tail.length < TAIL_LINES && walked < TAIL_WALK; i--, walked++) {
    const line = o.lines[i];
    if (line.length === 0 || !/\S/.test(line)) continue;
    const id = o.ids[i];
    const key = id >= 0 ? o.shapes[id].key : lineShape(line).shape;
    if (shown.has(key) || inTail.has(key)) continue;
    inTail.add(key);
    const count = id >= 0 ? o.shapes[id].count : 1;
    tail.push({ key, text: `${countTag(count)}${clip(line.trim(), EXAMPLE_CHARS)}` });
  }
  add(1, (a) => section(`\n\n== last distinct lines (shapes listed above omitted) ==`, tail, a, shown, true));
  return out;
}

/** A titled list of items that fit the allowance; `newestFirst` items are picked from the start and printed reversed. */
function section(title: string, items: { key: string; text: string }[], allowance: number, shown: Set<string>, newestFirst = false): string {
  if (items.length === 0 || allowance < title.length + 20) return "";
  const picked: string[] = [];
  let used = title.length;
  for (const item of items) {
    const reserve = picked.length + 1 < items.length ? 32 : 0; // room for the "… N more" line
    if (used + 1 + item.text.length + reserve > allowance) break;
    picked.push(item.text);
    shown.add(item.key);
    used += 1 + item.text.length;
  }
  if (picked.length === 0) return "";
  const more = items.length - picked.length;
  const body = (newestFirst ? picked.reverse() : picked).join("\n");
  const note = more > 0 ? `\n  … ${more} ${newestFirst ? "earlier" : "more"} not shown` : "";
  return newestFirst ? `${title}${note}\n${body}` : `${title}\n${body}${note}`;
}

function formatShape(s: Shape): string {
  if (s.count === 1) return `${countTag(1)}${s.example}`;
  const when = s.first !== undefined && s.last !== undefined && s.first !== s.last ? `  [${s.first} … ${s.last}]` : "";
  const pattern = clip(s.key, PATTERN_CHARS);
  return pattern === s.example ? `${countTag(s.count)}${pattern}${when}` : `${countTag(s.count)}${pattern}${when}\n      e.g. ${s.example}`;
}

/** The structured pattern list, errors first, bounded in number and in total size. */
function topPatterns(list: Shape[], maxChars: number): CondensedPattern[] {
  const out: CondensedPattern[] = [];
  let size = 0;
  for (const s of list) {
    const p: CondensedPattern = { pattern: clip(s.key, PATTERN_CHARS), count: s.count, example: s.example, level: s.level };
    if (s.first !== undefined && s.last !== undefined) Object.assign(p, { first: s.first, last: s.last });
    size += p.pattern.length + p.example.length + 80;
    if (out.length >= MAX_PATTERNS || (size > maxChars && out.length > 0)) break;
    out.push(p);
  }
  return out;
}

const countTag = (n: number) => `  ${n}× `;
const sum = (list: Shape[]) => list.reduce((n, s) => n + s.count, 0);

function clip(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split(/\r?\n|\r/);
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/**
 * The focus matcher: any of its words, matched literally and case-insensitively. Never a regular
 * expression from the caller: the match runs synchronously in the manager, and a pattern like
 * (a|aa)*$ would stall every RPC and tunnel while it backtracks.
 */
function compileFocus(focus: string): { re: RegExp; label: string } {
  const literal = (s: string) => s.replace(/[\\^$.|?*+()[\]{}]/g, "\\$&");
  const words = focus.split(/[\s,]+/).filter(Boolean);
  return { re: new RegExp(words.map(literal).join("|"), "i"), label: `any of ${words.map((w) => JSON.stringify(w)).join(" ")}` };
}

// ---- JSON input ----

const MESSAGE_KEYS = ["message", "msg", "MESSAGE", "line", "log", "text"];
const TIME_KEYS = ["time", "timestamp", "ts", "@timestamp", "date"];
const LEVEL_KEYS = ["level", "priority", "severity", "lvl"];
const SOURCE_KEYS = ["identifier", "unit", "logger", "service", "source", "name"];
const LONG_STRING = 200;

interface JsonLines {
  lines: string[];
  /** The level of a line that came from a structured record or field (by its fields); undefined: read the line. */
  levels: (Level | undefined)[];
  sources: string[];
  /** Short scalar fields, for the header. */
  fields: string[];
  /** Every scalar field as `path=value`: the lines when there is no log-like content. */
  scalars: string[];
  scalarLevels: Level[];
}

function pushLine(out: JsonLines, line: string, level?: Level): void {
  out.lines.push(line);
  out.levels.push(level);
}

/** The log-like content of a JSON text (arrays of strings or of message objects, long strings); undefined when there is none. */
function fromJson(text: string): JsonLines | undefined {
  const start = text.trimStart()[0];
  if (start !== "{" && start !== "[") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const out: JsonLines = { lines: [], levels: [], sources: [], fields: [], scalars: [], scalarLevels: [] };
  walk(value, "", 0, out);
  if (out.lines.length === 0 && out.scalars.length === 0) return undefined;
  if (out.lines.length === 0) return { lines: out.scalars, levels: out.scalarLevels, sources: ["every field (path=value)"], fields: [], scalars: [], scalarLevels: [] };
  return out;
}

function walk(v: unknown, path: string, depth: number, out: JsonLines): void {
  const name = path || ".";
  if (typeof v === "string") {
    if (v.length <= LONG_STRING && !v.includes("\n")) {
      scalar(`${name}=${v}`, out, fieldLevel(name, v));
      return;
    }
    const t = v.trimStart()[0];
    if ((t === "{" || t === "[") && depth < 4) {
      let inner: unknown;
      try {
        inner = JSON.parse(v);
      } catch {
        // JSON text cut by an output cap: its string values are what is left to read.
        const lines = stringLiterals(v);
        for (const l of lines) pushLine(out, l);
        out.sources.push(`${name} (cut JSON, ${lines.length} strings)`);
        return;
      }
      walk(inner, path, depth + 1, out);
      return;
    }
    const lines = splitLines(v);
    for (const l of lines) pushLine(out, l);
    out.sources.push(`${name} (${lines.length} lines)`);
    return;
  }
  if (Array.isArray(v)) {
    if (v.length === 0) return;
    for (const item of v) {
      // A log message is read as a log line; any other record (a process row, a unit) by its fields only.
      const record = item !== null && typeof item === "object" && !Array.isArray(item) && !isMessage(item);
      const l = typeof item === "string" ? item : isMessage(item) ? messageLine(item) : clip(JSON.stringify(item) ?? "null", SHAPE_INPUT_CHARS);
      const level = record ? recordLevel(item as Record<string, unknown>) : Array.isArray(item) || typeof item !== "object" || item === null ? (typeof item === "string" ? undefined : "info") : undefined;
      for (const part of l.includes("\n") ? splitLines(l) : [l]) pushLine(out, part, level);
    }
    out.sources.push(`${name}[] (${v.length} items)`);
    return;
  }
  if (v !== null && typeof v === "object") {
    if (depth >= 4) {
      pushLine(out, clip(JSON.stringify(v), SHAPE_INPUT_CHARS), recordLevel(v as Record<string, unknown>));
      out.sources.push(name);
      return;
    }
    for (const [k, child] of Object.entries(v)) walk(child, `${path}.${k}`, depth + 1, out);
    return;
  }
  scalar(`${name}=${String(v)}`, out, fieldLevel(name, v));
}

function scalar(field: string, out: JsonLines, level: Level): void {
  if (out.fields.length < 12) out.fields.push(clip(field, 60));
  if (out.scalars.length < 100_000) {
    out.scalars.push(clip(field, SHAPE_INPUT_CHARS));
    out.scalarLevels.push(level);
  }
}

function isMessage(item: unknown): item is Record<string, unknown> {
  return item !== null && typeof item === "object" && !Array.isArray(item) && MESSAGE_KEYS.some((k) => typeof (item as Record<string, unknown>)[k] === "string");
}

/** A message object as a log line: `time source[pid] LEVEL: message`. */
function messageLine(o: Record<string, unknown>): string {
  const pick = (keys: string[]) => keys.map((k) => o[k]).find((x) => typeof x === "string" || typeof x === "number");
  const message = String(pick(MESSAGE_KEYS));
  const time = pick(TIME_KEYS);
  const rawLevel = pick(LEVEL_KEYS);
  const level = typeof rawLevel === "number" ? PINO_LEVELS[String(rawLevel)] : rawLevel;
  const source = pick(SOURCE_KEYS);
  const pid = o.pid;
  const parts = [
    time !== undefined ? String(time) : "",
    source !== undefined ? `${String(source)}${typeof pid === "number" ? `[${pid}]` : ""}` : "",
    level !== undefined ? `${String(level).toUpperCase()}:` : "",
    message,
  ];
  return parts.filter((p) => p !== "").join(" ");
}

/** The string values of a JSON text that no longer parses (keys skipped), each split into lines. */
function stringLiterals(s: string): string[] {
  const out: string[] = [];
  const literal = /"(?:[^"\\\n]|\\.)*"/g; // consumes each literal whole, so quotes stay paired
  for (let m = literal.exec(s); m !== null; m = literal.exec(s)) {
    if (/^\s*:/.test(s.slice(literal.lastIndex, literal.lastIndex + 8))) continue; // a key
    let value: string;
    try {
      value = JSON.parse(m[0]) as string;
    } catch {
      continue;
    }
    if (value.length >= 20 || /\s/.test(value)) out.push(...splitLines(value));
  }
  return out;
}
