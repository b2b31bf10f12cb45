/** The manager's builtin skills (scope manager): one file each, listed here once. */
import type { Logger } from "pino";
import { createRegistry, type SkillRegistry } from "../../../skill/registry.ts";
import type { SkillDefinition } from "../../../skill/types.ts";
import webSearch from "./web-search.ts";
import analyzeOutput from "./analyze-output.ts";

/** Every manager builtin, registered at start. */
export const MANAGER_BUILTINS: SkillDefinition<any>[] = [webSearch, analyzeOutput];

/** A registry holding every manager builtin: what the manager serves and what the CLI lists and lints. */
export function createManagerRegistry(log?: Logger): SkillRegistry {
  const registry = createRegistry({ log });
  for (const def of MANAGER_BUILTINS) registry.register(def);
  return registry;
}
