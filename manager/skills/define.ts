/**
 * The inventory bridge (K1–K4): a base tool is declared once, with a hand-written JSON Schema kept
 * verbatim, and registered as a scope-manager skill, so ListSkills, the console's forms, the LLM
 * bridge, the gate and the audit log treat it like every other skill.
 */
import { defineSkill } from "../../skill/define.ts";
import type { SkillClass, SkillContext, SkillDefinition } from "../../skill/types.ts";

/** What a base tool's file declares. */
export interface BaseToolSpec<P> {
  key: string;
  name: string;
  /** What it does and when to use it (the model reads this). */
  description: string;
  class: SkillClass;
  category: string;
  /** The params' JSON Schema (draft 2020-12 subset the validator knows), as an object; serialised once and kept as is. */
  schema: Record<string, unknown>;
  resultPreview: unknown;
  execute(ctx: SkillContext, params: P): Promise<unknown>;
}

/** Builds the skill definition of a base tool. */
export function defineBaseTool<P = Record<string, unknown>>(spec: BaseToolSpec<P>): SkillDefinition<P> {
  return defineSkill({
    key: spec.key,
    name: spec.name,
    description: spec.description,
    class: spec.class,
    scope: "manager",
    category: spec.category,
    rawSchema: JSON.stringify(spec.schema),
    resultPreview: JSON.stringify(spec.resultPreview),
    execute: spec.execute as SkillDefinition<Record<string, unknown>>["execute"],
  }) as SkillDefinition<P>;
}
