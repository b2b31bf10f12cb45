/** Asset permissions (G4): a caller reaches an edge when the edge's labels match every selector of its reach. */
import { parseSelector, type Selector } from "../fleet/selector.ts";
import type { Caller } from "./caller.ts";
import { roleAtLeast } from "./store.ts";

const parsed = new Map<string, Selector>();

function selector(text: string): Selector {
  let s = parsed.get(text);
  if (!s) {
    s = parseSelector(text, "reach");
    if (parsed.size > 1000) parsed.clear();
    parsed.set(text, s);
  }
  return s;
}

/** Whether the caller may see and call an edge with these labels. */
export function reaches(caller: Caller, labels: Readonly<Record<string, string>>): boolean {
  if (!caller.reach?.length) return true;
  return caller.reach.every((r) => selector(r).matches(labels));
}

/**
 * How many matching edges lay outside the caller's reach, as the caller may be told: the count says
 * that they exist, so only an admin (who may see the whole fleet) is told; anyone else gets 0.
 */
export function leftOutShown(caller: Caller, leftOut: number): number {
  return roleAtLeast(caller.onBehalfRole ?? caller.role, "admin") ? leftOut : 0;
}

/** Whether the caller's reach is limited at all. */
export function isLimited(caller: Caller): boolean {
  return Boolean(caller.reach?.length);
}
