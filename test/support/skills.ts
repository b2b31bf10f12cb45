/** Skills registered by tests: a mutating manager skill whose runs are counted, to show gating and approvals. */
import { defineSkill } from "../../skill/define.ts";
import type { SkillDefinition } from "../../skill/types.ts";

/** `cache_flush`: mutating, manager scope, no params; calls onRun each time it actually runs. */
export function cacheFlushSkill(onRun: () => void = () => {}): SkillDefinition {
  return defineSkill({
    key: "cache_flush",
    name: "Flush cache",
    description: "Flush the test cache. Use when a test says so.",
    class: "mutating",
    scope: "manager",
    params: {},
    async execute() {
      onRun();
      return { flushed: true };
    },
  });
}
