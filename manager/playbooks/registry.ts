/**
 * The playbook registry (I2): scans the built-in directory and the configured ones for
 * `<dir>/<name>/SKILL.md`, checks platform and the disabled list, refuses to run without
 * generic_oncall, and reloads on demand or on file change. A bad file is reported with its path
 * and error and never takes the others down; readers always see one whole, consistent set.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Logger } from "pino";
import { OngridError } from "../../skill/errors.ts";
import type { Skill } from "../../skill/types.ts";
import { validateParams } from "../../skill/validate.ts";
import { watchDirs } from "../../skill/watch-dirs.ts";
import { formatPlaybookProblem, PLAYBOOK_FILE, readPlaybook, type Playbook, type PlaybookProblem } from "./parse.ts";
import { fillPlaceholders } from "./placeholders.ts";

/** The fallback playbook the router answers with when nothing else fits; it must exist. */
export const GENERIC_PLAYBOOK = "generic_oncall";
/** The playbooks shipped with ongrid. */
export const BUILTIN_PLAYBOOK_DIR = dirname(fileURLToPath(import.meta.url));

/** Tools a playbook may name: key → the skill when its metadata is known here, null when only the key is. */
export type ToolCatalog = ReadonlyMap<string, Skill | null>;

/** A playbook not loaded on purpose. */
export interface SkippedPlaybook {
  name: string;
  file: string;
  reason: string;
}

/** One consistent generation of the registry: what a route or a read sees from start to end. */
export interface PlaybookSet {
  playbooks: ReadonlyMap<string, Playbook>;
  /** Errors (the file was refused) and warnings (loaded, but doubtful), per file. */
  problems: PlaybookProblem[];
  skipped: SkippedPlaybook[];
  generation: number;
  loadedAt: Date;
}

/** What a reload changed. */
export interface PlaybookReloadReport {
  added: string[];
  changed: string[];
  removed: string[];
  loaded: string[];
  problems: PlaybookProblem[];
  skipped: SkippedPlaybook[];
  generation: number;
}

/** Options of createPlaybookRegistry. */
export interface PlaybookRegistryOptions {
  /** The built-in directory; BUILTIN_PLAYBOOK_DIR by default, null for none. */
  builtinDir?: string | null;
  /** External directories, each holding `<name>/SKILL.md` (a directory that is itself a playbook works too). */
  dirs: readonly string[];
  /** Names not to load. */
  disabled: readonly string[];
  /** The manager's platform (process.platform by default); "win32" counts as windows. */
  platform?: string;
  /** Known tools, read at every load, for the unknown-tool and fallback-args warnings; no check without it. */
  tools?: () => ToolCatalog;
  log: Logger;
}

/** The registry's interface. */
export interface PlaybookRegistry {
  /** The current generation. */
  current(): PlaybookSet;
  get(name: string): Playbook | undefined;
  /** Reads every directory again and swaps in the new set; refuses (keeping the old set) when generic_oncall would be missing. */
  reload(): PlaybookReloadReport;
  /** Reloads (debounced) whenever a file under the directories changes; returns a stop function. */
  watch(debounceMs?: number): () => void;
  /** The directories scanned, built-in first. */
  readonly dirs: readonly string[];
}

/** Sample placeholder values used to check fallback arguments against a tool's parameters. */
const SAMPLE_VALUES = { url: "http://service.invalid/healthz", host: "service.invalid", port: 443, unit: "example.service", path: "/var/log/example.log" };

/** Loads the playbooks; throws failed_precondition when generic_oncall is not among them. */
export function createPlaybookRegistry(o: PlaybookRegistryOptions): PlaybookRegistry {
  const builtin = o.builtinDir === undefined ? BUILTIN_PLAYBOOK_DIR : o.builtinDir;
  const dirs = [...(builtin ? [resolve(builtin)] : []), ...o.dirs.map((d) => resolve(d))];
  const platform = o.platform ?? process.platform;
  let generation = 0;
  let current: PlaybookSet = load();
  requireGeneric(current);
  logProblems(current.problems);

  function load(): PlaybookSet {
    const playbooks = new Map<string, Playbook>();
    const problems: PlaybookProblem[] = [];
    const skipped: SkippedPlaybook[] = [];
    const disabled = new Set(o.disabled);
    for (const dir of dirs) {
      const source = builtin && dir === resolve(builtin) ? "builtin" : "external";
      for (const file of playbookFiles(dir, problems)) {
        const { playbook, problems: found } = readPlaybook(file, source);
        problems.push(...found);
        if (!playbook) continue;
        const earlier = playbooks.get(playbook.name);
        if (earlier) {
          problems.push({ file, field: "name", rule: "unique", message: `"${playbook.name}" is already loaded from ${earlier.file}; this file is skipped`, severity: "error" });
          continue;
        }
        if (disabled.has(playbook.name)) {
          skipped.push({ name: playbook.name, file, reason: "disabled (playbooks.disabled)" });
          continue;
        }
        const os = platform === "win32" ? "windows" : platform;
        if (!playbook.platforms.includes("any") && !playbook.platforms.includes(os)) {
          skipped.push({ name: playbook.name, file, reason: `platforms [${playbook.platforms.join(", ")}] do not include ${os}` });
          continue;
        }
        playbooks.set(playbook.name, playbook);
      }
    }
    if (o.tools) problems.push(...checkTools([...playbooks.values()], o.tools()));
    return { playbooks, problems, skipped, generation: ++generation, loadedAt: new Date() };
  }

  function requireGeneric(set: PlaybookSet): void {
    if (set.playbooks.has(GENERIC_PLAYBOOK)) return;
    const why = set.skipped.find((s) => s.name === GENERIC_PLAYBOOK)?.reason ?? set.problems.filter((p) => p.severity === "error" && /generic_oncall/.test(p.file)).map(formatPlaybookProblem)[0];
    throw new OngridError(
      "failed_precondition",
      `no playbook "${GENERIC_PLAYBOOK}" is loaded${why ? ` (${why})` : ""}: it is the router's fallback and must exist`,
      `Keep ${join(builtin || "<a playbook dir>", GENERIC_PLAYBOOK, PLAYBOOK_FILE)} (or one in playbooks.dirs), and do not list it in playbooks.disabled.`,
    );
  }

  function logProblems(problems: PlaybookProblem[]): void {
    for (const p of problems) {
      const fields = { file: p.file, field: p.field, rule: p.rule };
      if (p.severity === "error") o.log.warn(fields, `playbook refused: ${formatPlaybookProblem(p)}`);
      else o.log.warn(fields, `playbook warning: ${formatPlaybookProblem(p)}`);
    }
  }

  function reload(): PlaybookReloadReport {
    const next = load();
    requireGeneric(next);
    const before = current.playbooks;
    const report: PlaybookReloadReport = {
      added: [...next.playbooks.keys()].filter((n) => !before.has(n)).sort(),
      changed: [...next.playbooks.values()].filter((p) => before.has(p.name) && before.get(p.name)!.fingerprint !== p.fingerprint).map((p) => p.name).sort(),
      removed: [...before.keys()].filter((n) => !next.playbooks.has(n)).sort(),
      loaded: [...next.playbooks.keys()].sort(),
      problems: next.problems,
      skipped: next.skipped,
      generation: next.generation,
    };
    current = next;
    logProblems(next.problems);
    if (report.added.length || report.changed.length || report.removed.length) {
      o.log.info({ added: report.added, changed: report.changed, removed: report.removed, loaded: report.loaded.length }, "playbooks reloaded");
    }
    return report;
  }

  return {
    current: () => current,
    get: (name) => current.playbooks.get(name),
    reload,
    watch: (debounceMs = 250) => watchDirs(dirs, reload, { log: o.log, what: "playbook", debounceMs }),
    dirs,
  };
}

/** `<dir>/SKILL.md` (the dir is one playbook) or every `<dir>/<name>/SKILL.md`. */
function playbookFiles(dir: string, problems: PlaybookProblem[]): string[] {
  if (!existsSync(dir)) {
    problems.push({ file: dir, field: "", rule: "exists", message: "playbook directory does not exist", severity: "error" });
    return [];
  }
  if (existsSync(join(dir, PLAYBOOK_FILE))) return [join(dir, PLAYBOOK_FILE)];
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch (err) {
    problems.push({ file: dir, field: "", rule: "readable", message: `cannot be listed: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, severity: "error" });
    return [];
  }
  const files: string[] = [];
  for (const name of names) {
    const file = join(dir, name, PLAYBOOK_FILE);
    try {
      if (statSync(join(dir, name)).isDirectory() && existsSync(file)) files.push(file);
    } catch {
      // Removed while listing: the next reload sees the finished state.
    }
  }
  return files;
}

/** Warnings for tools nobody offers, fallback steps that need approval, and fallback arguments a tool would refuse. */
function checkTools(playbooks: Playbook[], tools: ToolCatalog): PlaybookProblem[] {
  const problems: PlaybookProblem[] = [];
  for (const p of playbooks) {
    const warn = (field: string, rule: string, message: string) => problems.push({ file: p.file, field, rule, message, severity: "warning" });
    p.allowedTools.forEach((t, i) => {
      if (!tools.has(t)) warn(`allowed_tools[${i}]`, "known_tool", `"${t}" is not a skill of this manager, its packs or any edge known to it`);
    });
    p.fallbackSteps.forEach((step, i) => {
      const field = `fallback_steps[${i}]`;
      if (!tools.has(step.tool)) return warn(`${field}.tool`, "known_tool", `"${step.tool}" is not a skill of this manager, its packs or any edge known to it`);
      const skill = tools.get(step.tool);
      if (!skill) return;
      if (skill.meta.class !== "safe" && !skill.meta.dynamicRisk) warn(`${field}.tool`, "fallback_safe", `"${step.tool}" is ${skill.meta.class}: a fallback step runs without a model and would wait for approval`);
      const filled = fillPlaceholders(step.args, SAMPLE_VALUES);
      if (!("args" in filled)) return;
      try {
        validateParams(skill, filled.args);
      } catch (err) {
        warn(`${field}.args`, "params", (err as Error).message);
      }
    });
  }
  return problems;
}
