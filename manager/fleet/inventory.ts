/** The inventory (B2): manager skills from the registry plus the host skills every connected edge offers. */
import type { SkillRegistry } from "../../skill/registry.ts";
import type { Skill, SkillClass, SkillScope } from "../../skill/types.ts";
import type { Hub } from "./hub.ts";

/** One key in the inventory and the edges that offer it (empty for manager skills). */
export interface InventoryEntry {
  skill: Skill;
  edgeIds: string[];
}

/** Filters for listing. */
export interface InventoryFilter {
  scope?: SkillScope;
  class?: SkillClass;
  category?: string;
  edgeId?: string;
  /** Only edges whose labels pass (the caller's reach); an edge that does not is left out entirely. */
  visible?: (labels: Readonly<Record<string, string>>) => boolean;
}

/** Lists skills, sorted by key; a host key's metadata is taken from the most recently connected edge offering it. */
export function listInventory(registry: SkillRegistry, hub: Hub, filter: InventoryFilter = {}): InventoryEntry[] {
  const byKey = new Map<string, InventoryEntry & { at: number }>();
  if (!filter.edgeId) for (const skill of registry.list()) byKey.set(skill.meta.key, { skill, edgeIds: [], at: 0 });
  for (const s of hub.sessions()) {
    if (filter.edgeId && s.edgeId !== filter.edgeId) continue;
    if (filter.visible && !filter.visible(s.hello.labels)) continue;
    for (const [key, skill] of s.skills) {
      if (registry.has(key)) continue; // a manager skill's key is never shadowed by an edge
      const e = byKey.get(key);
      if (!e) byKey.set(key, { skill, edgeIds: [s.edgeId], at: s.connectedAt.getTime() });
      else {
        e.edgeIds.push(s.edgeId);
        if (s.connectedAt.getTime() > e.at) Object.assign(e, { skill, at: s.connectedAt.getTime() });
      }
    }
  }
  return [...byKey.values()]
    .filter(
      ({ skill: { meta } }) =>
        (!filter.scope || meta.scope === filter.scope) && (!filter.class || meta.class === filter.class) && (!filter.category || meta.category === filter.category),
    )
    .sort((a, b) => a.skill.meta.key.localeCompare(b.skill.meta.key))
    .map(({ skill, edgeIds }) => ({ skill, edgeIds: edgeIds.sort() }));
}
