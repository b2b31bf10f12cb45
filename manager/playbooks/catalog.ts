/**
 * The tools a playbook may name, as far as this manager knows them: its own skills and packs, the
 * edge builtins, the skills of connected edges and the host packs it ships or is configured with.
 */
import { existsSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { hostSkillDefinitions } from "../../skill/catalog/index.ts";
import { readManifest, toMetadata } from "../../skill/pack/manifest.ts";
import { buildSkill } from "../../skill/registry.ts";
import type { SkillRegistry } from "../../skill/registry.ts";
import type { Skill } from "../../skill/types.ts";
import type { ToolCatalog } from "./registry.ts";

/** The skill packs shipped in the repository (skill-packs/). */
export const BUNDLED_PACK_DIR = resolve(fileURLToPath(import.meta.url), "../../../skill-packs");

const noRun = async () => {
  throw new Error("catalog entries are metadata only");
};

/** Host-pack skills found in dirs (each `<dir>/<pack>/skill.json`), metadata only; broken manifests are ignored here. */
function packSkills(dirs: readonly string[]): Skill[] {
  const out: Skill[] = [];
  for (const dir of dirs) {
    if (!existsSync(dir)) continue;
    const packDirs = existsSync(join(dir, "skill.json")) ? [dir] : readdirSync(dir).map((n) => join(dir, n)).filter((d) => existsSync(join(d, "skill.json")));
    for (const d of packDirs) {
      for (const spec of readManifest(d, "host").skills) {
        try {
          out.push(buildSkill({ ...toMetadata(spec), execute: noRun }));
        } catch {
          // A manifest the pack loader refuses is reported there.
        }
      }
    }
  }
  return out;
}

/** Builds the catalog function the playbook registry calls at each load. */
export function createToolCatalog(o: { registry: SkillRegistry; edgeSkills: () => Iterable<Skill>; hostPackDirs: readonly string[]; known?: () => Iterable<Skill> }): () => ToolCatalog {
  const builtins = hostSkillDefinitions().map((d) => buildSkill(d));
  return () => {
    const tools = new Map<string, Skill | null>();
    for (const s of [...builtins, ...(o.known?.() ?? []), ...packSkills([BUNDLED_PACK_DIR, ...o.hostPackDirs]), ...o.edgeSkills(), ...o.registry.list()]) tools.set(s.meta.key, s);
    return tools;
  };
}
