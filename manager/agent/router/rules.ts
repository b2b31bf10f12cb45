/**
 * The router's rule fallback (I3 step 4, J3): with no model, or when the model fails, playbooks are
 * scored by the triggers (weight 3) and tags (weight 1) found in the input; nothing found means
 * generic_oncall. Deterministic: the same input and playbooks always give the same answer.
 */
import type { Playbook } from "../../playbooks/parse.ts";
import { GENERIC_PLAYBOOK } from "../../playbooks/registry.ts";
import { containsPhrase } from "./scope.ts";

/** What the rules picked and why. */
export interface RuleChoice {
  skillName: string;
  confidence: number;
  reason: string;
  /** The triggers and tags that matched, for the chosen playbook. */
  matched: string[];
}

/** Scores every playbook but generic_oncall and picks the best; ties go to the longer matched text, then to the name. */
export function routeByRules(text: string, playbooks: Iterable<Playbook>): RuleChoice {
  const t = text.toLowerCase();
  const scored = [...playbooks]
    .filter((p) => p.name !== GENERIC_PLAYBOOK)
    .map((p) => {
      const triggers = p.triggers.filter((w) => containsPhrase(t, w));
      const tags = p.tags.filter((w) => !triggers.includes(w) && containsPhrase(t, w));
      const matched = [...triggers, ...tags];
      return { p, score: triggers.length * 3 + tags.length, length: matched.join("").length, matched };
    })
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score || b.length - a.length || a.p.name.localeCompare(b.p.name));
  const best = scored[0];
  if (!best) {
    return { skillName: GENERIC_PLAYBOOK, confidence: 0.2, reason: "rules: no playbook trigger or tag found in the input; the general read-only playbook applies", matched: [] };
  }
  const runnerUp = scored[1];
  const margin = runnerUp ? (best.score - runnerUp.score) / best.score : 1;
  const confidence = Math.round(Math.min(0.85, 0.35 + 0.1 * best.score) * (0.6 + 0.4 * margin) * 100) / 100;
  const also = runnerUp ? `; also matched ${runnerUp.p.name} (${runnerUp.matched.map((m) => `"${m}"`).join(", ")})` : "";
  return {
    skillName: best.p.name,
    confidence,
    reason: `rules: matched ${best.matched.map((m) => `"${m}"`).join(", ")} of ${best.p.name}${also}`,
    matched: best.matched,
  };
}
