/**
 * Loads subprocess packs from configured directories into a registry and keeps them in step
 * (E2): a rescan adds, changes and removes pack skills; a broken pack is reported and skipped,
 * never stopping the others; builtins and earlier packs keep their keys.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Logger } from "pino";
import type { SkillRegistry } from "../registry.ts";
import { riskFromClassifier } from "../risk-classifier.ts";
import type { SkillScope } from "../types.ts";
import { formatProblem, MANIFEST_FILE, readManifest, toMetadata, type ManifestProblem, type PackSkillSpec } from "./manifest.ts";
import { runPack } from "./run.ts";
import { watchDirs } from "../watch-dirs.ts";
import { syncRegistered } from "../registry-sync.ts";

/** What one rescan changed, and what it refused. */
export interface RescanReport {
  added: string[];
  changed: string[];
  removed: string[];
  /** Pack skills registered after the rescan, by key. */
  loaded: string[];
  problems: ManifestProblem[];
}

/** Options of createPackSet. */
export interface PackSetOptions {
  /** Directories holding pack directories (each `<dir>/<pack>/skill.json`); a dir that is itself a pack also works. */
  dirs: string[];
  scope: SkillScope;
  registry: SkillRegistry;
  log: Logger;
  /** Called after a rescan that changed the registry (the edge re-advertises its skills). */
  onChange?: (report: RescanReport) => void;
}

/** The packs of one process (an edge or the manager). */
export interface PackSet {
  /** Reads every pack directory again and brings the registry in line. */
  rescan(): RescanReport;
  /** Rescans (debounced) whenever a file under the directories changes; returns a stop function. */
  watch(debounceMs?: number): () => void;
  /** The specs currently registered, by key. */
  specs(): ReadonlyMap<string, PackSkillSpec>;
}

/** Creates the pack set; nothing is loaded until the first rescan(). */
export function createPackSet(o: PackSetOptions): PackSet {
  const dirs = o.dirs.map((d) => resolve(d));
  const current = new Map<string, PackSkillSpec>();

  function packDirs(): { packs: string[]; problems: ManifestProblem[] } {
    const packs: string[] = [];
    const problems: ManifestProblem[] = [];
    for (const dir of dirs) {
      if (!existsSync(dir)) {
        problems.push({ file: dir, field: "", rule: "exists", message: "pack directory does not exist" });
        continue;
      }
      if (existsSync(join(dir, MANIFEST_FILE))) {
        packs.push(dir);
        continue;
      }
      let names: string[];
      try {
        names = readdirSync(dir).sort();
      } catch (err) {
        problems.push({ file: dir, field: "", rule: "readable", message: `cannot list the pack directory: ${(err as NodeJS.ErrnoException).code}` });
        continue;
      }
      for (const name of names) {
        if (name.startsWith(".")) continue;
        const p = join(dir, name);
        try {
          if (statSync(p).isDirectory() && existsSync(join(p, MANIFEST_FILE))) packs.push(p);
        } catch {
          /* vanished while scanning */
        }
      }
    }
    return { packs, problems };
  }

  function rescan(): RescanReport {
    const { packs, problems } = packDirs();
    const next = new Map<string, PackSkillSpec>();
    for (const dir of packs) {
      const r = readManifest(dir, o.scope);
      problems.push(...r.problems);
      for (const spec of r.skills) {
        const other = next.get(spec.key);
        if (other) {
          problems.push({ file: spec.file, field: keyField(spec), rule: "unique", message: `"${spec.key}" is already declared by ${other.file}` });
          continue;
        }
        const existing = o.registry.get(spec.key);
        if (existing && !current.has(spec.key)) {
          problems.push({ file: spec.file, field: keyField(spec), rule: "unique", message: `"${spec.key}" is a builtin skill of this ${o.scope === "host" ? "edge" : "manager"}` });
          continue;
        }
        next.set(spec.key, spec);
      }
    }
    const report: RescanReport = {
      ...syncRegistered({
        registry: o.registry,
        current,
        next,
        register: (key, spec) => {
          const risk = riskFromClassifier(spec.riskClassifier ?? "", spec.key);
          o.registry.register({ ...toMetadata(spec), ...(risk ? { riskForArgs: risk } : {}), execute: (ctx, params) => runPack(spec, ctx, params) });
          return spec;
        },
        refused: (_key, spec, err) => problems.push({ file: spec.file, field: "", rule: "register", message: err.message }),
      }),
      problems,
    };
    for (const p of problems) o.log.warn({ file: p.file, field: p.field, rule: p.rule }, `skill pack refused: ${formatProblem(p)}`);
    if (report.added.length || report.changed.length || report.removed.length) {
      o.log.info({ added: report.added, changed: report.changed, removed: report.removed, loaded: report.loaded.length }, "skill packs rescanned");
      o.onChange?.(report);
    }
    return report;
  }

  return {
    rescan,
    watch: (debounceMs = 250) => watchDirs(dirs, rescan, { log: o.log, what: "skill pack", debounceMs }),
    specs: () => current,
  };
}

/** The key's field in its manifest: "key", or "skills[i].key" in a pack of several skills. */
function keyField(spec: PackSkillSpec): string {
  return spec.entry ? `${spec.entry}.key` : "key";
}
