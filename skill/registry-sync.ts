/**
 * Brings the part of a registry one source owns (a pack directory, an upstream MCP server) in line
 * with what that source now offers: unchanged entries (same fingerprint) stay, changed ones are
 * re-registered, gone ones removed, new ones added. A registration that throws is reported to the
 * caller and leaves the key out (a changed key then counts as removed).
 */
import type { SkillRegistry } from "./registry.ts";

/** What one reconcile did, by key; `loaded` is every key the source owns afterwards, sorted. */
export interface RegistrySync {
  added: string[];
  changed: string[];
  removed: string[];
  loaded: string[];
}

/**
 * Reconciles `current` (the keys the source registered, updated in place) with `next`.
 * `register` registers one entry and returns what `current` keeps for it; `refused` hears why one
 * could not be registered.
 */
export function syncRegistered<C extends { fingerprint: string }, N extends { fingerprint: string }>(o: {
  registry: Pick<SkillRegistry, "unregister">;
  current: Map<string, C>;
  next: ReadonlyMap<string, N>;
  register: (key: string, entry: N) => C;
  refused: (key: string, entry: N, err: Error) => void;
}): RegistrySync {
  const { current } = o;
  const out: RegistrySync = { added: [], changed: [], removed: [], loaded: [] };
  const changed = new Set<string>();
  for (const [key, old] of current) {
    const now = o.next.get(key);
    if (now && now.fingerprint === old.fingerprint) continue;
    o.registry.unregister(key);
    current.delete(key);
    if (now) changed.add(key);
    else out.removed.push(key);
  }
  for (const [key, entry] of o.next) {
    if (current.has(key)) continue;
    let kept: C;
    try {
      kept = o.register(key, entry);
    } catch (err) {
      o.refused(key, entry, err as Error);
      if (changed.has(key)) out.removed.push(key);
      continue;
    }
    current.set(key, kept);
    (changed.has(key) ? out.changed : out.added).push(key);
  }
  out.loaded = [...current.keys()].sort();
  return out;
}
