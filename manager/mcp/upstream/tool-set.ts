/**
 * Keeps one upstream's tools in the skill registry in step with what it lists (like a pack rescan,
 * E2): new tools are registered, changed ones re-registered, gone ones removed. A tool whose name
 * cannot be a key, that collides with another, or whose schema does not compile is reported and
 * skipped; the others are registered all the same.
 */
import type { Logger } from "pino";
import type { SkillRegistry } from "../../../skill/registry.ts";
import { syncRegistered } from "../../../skill/registry-sync.ts";
import type { SkillClass } from "../../../skill/types.ts";
import type { UpstreamSpec } from "./spec.ts";
import { quoteToolName, toolKey } from "./tool-key.ts";
import { toolSkill, type ToolSkill, type UpstreamCall, type UpstreamTool } from "./tool-skill.ts";

/** What one sync changed, and what it refused. */
export interface ToolSyncReport {
  added: string[];
  changed: string[];
  removed: string[];
  /** Keys registered for this upstream after the sync. */
  loaded: string[];
  /** One line per tool skipped (or override that names no tool), naming the tool. */
  problems: string[];
}

/** One upstream's registered tools. */
export interface ToolSet {
  /** Brings the registry in line with `tools` (the upstream's whole list). */
  sync(tools: readonly UpstreamTool[]): ToolSyncReport;
  /** Removes every tool of this upstream from the registry. */
  clear(): string[];
  /** The registered keys with the upstream's tool name and class. */
  entries(): Array<{ key: string; tool: string; cls: SkillClass }>;
}

/** Creates the tool set of one upstream; `call` runs a tool (the supervisor's). */
export function createToolSet(o: { spec: Pick<UpstreamSpec, "name" | "classes" | "trustAnnotations">; registry: SkillRegistry; log: Logger; call: UpstreamCall }): ToolSet {
  const current = new Map<string, { tool: string; fingerprint: string; cls: SkillClass }>();

  function sync(tools: readonly UpstreamTool[]): ToolSyncReport {
    const problems: string[] = [];
    const byKey = new Map<string, UpstreamTool[]>();
    for (const tool of tools) {
      const k = toolKey(o.spec.name, tool.name);
      if ("problem" in k) {
        problems.push(`tool ${quoteToolName(tool.name)}: skipped: ${k.problem}`);
        continue;
      }
      byKey.set(k.key, [...(byKey.get(k.key) ?? []), tool]);
    }
    const next = new Map<string, { tool: string; fingerprint: string; cls: SkillClass; def: ToolSkill }>();
    for (const [key, same] of byKey) {
      if (same.length > 1) {
        // Neither wins: which of them a caller meant could not be told from the key.
        problems.push(`tools ${same.map((t) => quoteToolName(t.name)).join(", ")}: skipped: they all map to the key "${key}"`);
        continue;
      }
      const tool = same[0]!;
      const built = toolSkill(o.spec, tool, key, o.call);
      if ("problem" in built) {
        problems.push(`tool ${quoteToolName(tool.name)}: skipped: ${built.problem}`);
        continue;
      }
      if (o.registry.has(key) && !current.has(key)) {
        problems.push(`tool ${quoteToolName(tool.name)}: skipped: the key "${key}" is already another skill's`);
        continue;
      }
      next.set(key, { tool: tool.name, fingerprint: built.fingerprint, cls: built.cls, def: built });
    }
    for (const name of o.spec.classes.keys()) {
      if (!tools.some((t) => t.name === name)) problems.push(`classes.${name}: the upstream lists no tool by that name`);
    }
    const report: ToolSyncReport = {
      ...syncRegistered({
        registry: o.registry,
        current,
        next,
        register: (_key, n) => {
          o.registry.register(n.def.def);
          return { tool: n.tool, fingerprint: n.fingerprint, cls: n.cls };
        },
        refused: (_key, n, err) => problems.push(`tool ${quoteToolName(n.tool)}: skipped: ${err.message}`),
      }),
      problems,
    };
    // A registration error may quote the upstream's schema at length.
    report.problems = problems.map((p) => (p.length > 500 ? `${p.slice(0, 500)}…` : p));
    for (const p of report.problems) o.log.warn(`upstream MCP tool refused: ${p}`);
    if (report.added.length || report.changed.length || report.removed.length) {
      o.log.info({ added: report.added, changed: report.changed, removed: report.removed, loaded: report.loaded.length }, "upstream MCP tools registered");
    }
    return report;
  }

  return {
    sync,
    clear() {
      const keys = [...current.keys()];
      for (const key of keys) o.registry.unregister(key);
      current.clear();
      return keys;
    },
    entries: () => [...current].map(([key, v]) => ({ key, tool: v.tool, cls: v.cls })),
  };
}
