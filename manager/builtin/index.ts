/** The manager's builtin skills (scope manager): one file each, listed here once. */
import type { SkillDefinition } from "../../skill/types.ts";
import webSearch from "./web-search.ts";

/** Every manager builtin, registered at start. */
export const MANAGER_BUILTINS: SkillDefinition<any>[] = [webSearch];
