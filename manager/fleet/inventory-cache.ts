/**
 * The edge inventories the hub was sent, by digest (C1): an edge whose hello names a digest the
 * manager holds is admitted without sending its skills again, and edges offering the same
 * inventory share one skill map.
 */
import { toJson, type JsonValue } from "@bufbuild/protobuf";
import { OngridError } from "../../skill/errors.ts";
import type { Skill } from "../../skill/types.ts";
import { inventoryDigest } from "../../skill/proto.ts";
import { MetadataSchema, type Metadata } from "../../proto/gen/ongrid/v1/skill_pb.ts";
import { skillFromMetadata } from "./remote-skill.ts";

/** Skills one edge may offer. */
export const MAX_SKILLS_PER_EDGE = 1000;
/** Distinct edge inventories remembered by digest (a fleet runs a handful: one per edge version and pack set). */
const INVENTORY_CACHE = 256;

/** An edge inventory the manager was sent: its digest, the skills built from it, and its JSON for the edges table. */
export interface Inventory {
  digest: string;
  skills: ReadonlyMap<string, Skill>;
  json: JsonValue[];
}

/** The manager-side skills for an edge's metadata list; throws invalid_argument on a defect. */
function skillsFrom(list: Metadata[]): Map<string, Skill> {
  if (list.length > MAX_SKILLS_PER_EDGE) throw new OngridError("invalid_argument", `at most ${MAX_SKILLS_PER_EDGE} skills per edge, got ${list.length}`);
  const skills = new Map<string, Skill>();
  for (const m of list) {
    if (skills.has(m.key)) throw new OngridError("invalid_argument", `skill "${m.key}" is offered twice`);
    skills.set(m.key, skillFromMetadata(m));
  }
  return skills;
}

/**
 * Inventories the manager was sent, by the digest it computed over each (never by an edge's
 * word: an edge naming a digest gets exactly what another edge's metadata of that digest
 * made); most recently used last, at most INVENTORY_CACHE of them.
 */
export function createInventoryCache() {
  const inventories = new Map<string, Inventory>();

  /** The inventory held under `digest`, now the most recently used; undefined when none is. */
  function known(digest: string): Inventory | undefined {
    const inv = inventories.get(digest);
    if (inv) {
      inventories.delete(digest);
      inventories.set(digest, inv);
    }
    return inv;
  }

  /** An inventory from an edge's metadata list, remembered under its digest; throws invalid_argument on a defect. */
  function of(list: Metadata[]): Inventory {
    const digest = inventoryDigest(list);
    const cached = known(digest);
    if (cached) return cached;
    const inv: Inventory = { digest, skills: skillsFrom(list), json: list.map((m) => toJson(MetadataSchema, m)) };
    inventories.set(digest, inv);
    if (inventories.size > INVENTORY_CACHE) inventories.delete(inventories.keys().next().value!);
    return inv;
  }

  return { known, of };
}

/** The hub's inventory cache. */
export type InventoryCache = ReturnType<typeof createInventoryCache>;
