/** The edge agent's builtin host skills: one file each, listed here once. */
import type { SkillDefinition } from "../../skill/types.ts";
import probeTcp from "./probe-tcp.ts";

/** Every edge builtin, registered when the agent starts. */
export const EDGE_BUILTINS: SkillDefinition<any>[] = [probeTcp];
