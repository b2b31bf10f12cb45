/** read_skill (I4): the full SKILL.md body of a playbook, for the agent's executor. Guidance, not evidence. */
import { defineSkill } from "../../../skill/define.ts";
import { SkillError } from "../../../skill/errors.ts";
import type { SkillDefinition } from "../../../skill/types.ts";
import type { PlaybookRegistry } from "../../playbooks/registry.ts";

/** Category of tools that guide the agent and are not counted as evidence calls. */
export const GUIDANCE_CATEGORY = "guidance";

/** True for tools whose results are facts about the fleet (every tool but guidance ones). */
export function isEvidenceTool(meta: { category: string }): boolean {
  return meta.category !== GUIDANCE_CATEGORY;
}

/** read_skill bound to the manager's playbook registry (reads the current generation at each call). */
export function createReadSkill(playbooks: Pick<PlaybookRegistry, "current">): SkillDefinition {
  return defineSkill({
    key: "read_skill",
    name: "Read playbook",
    description:
      "Read the full playbook (SKILL.md body) for a class of incident: trigger conditions, the evidence to collect, the tool order, when to stop and the report format. Use when a playbook was selected, before collecting evidence; it returns guidance, not facts about any host.",
    class: "safe",
    scope: "manager",
    category: GUIDANCE_CATEGORY,
    params: {
      skill_name: { type: "string", description: "Playbook name, e.g. network_diagnosis.", required: true, min: 1, max: 64, pattern: "^[a-z0-9][a-z0-9_-]*$" },
    },
    resultPreview: JSON.stringify({ skill_name: "network_diagnosis", display_name: "Network diagnosis", allowed_tools: ["probe_dns", "probe_tcp"], body: "## Trigger conditions\n…" }),
    async execute(_ctx, params) {
      const set = playbooks.current();
      const p = set.playbooks.get(params.skill_name);
      if (!p) {
        throw new SkillError(
          "unknown_playbook",
          `no playbook named "${params.skill_name}"`,
          `Known playbooks: ${[...set.playbooks.keys()].sort().join(", ")}. Do not invent playbook content: continue with the general approach.`,
        );
      }
      return { skill_name: p.name, display_name: p.displayName, description: p.description, risk_level: p.riskLevel, allowed_tools: p.allowedTools, body: p.body };
    },
  });
}
