/** Runs a base tool the way the dispatcher does (schema validation with defaults, runSkill's envelope), without a manager. */
import pino from "pino";
import { loadConfig } from "../../manager/config/load.ts";
import type { ManagerConfig } from "../../manager/config/schema.ts";
import { buildSkill } from "../../skill/registry.ts";
import { runSkill } from "../../skill/run.ts";
import type { ResultEnvelope, SkillDefinition } from "../../skill/types.ts";
import { validateParams } from "../../skill/validate.ts";

/** A manager config with these dotted overrides (e.g. "observability.loki_url"), nothing from the environment. */
export function configWith(overrides: Record<string, unknown>): ManagerConfig {
  return loadConfig({ env: {}, overrides: { data_dir: "/nonexistent", ...overrides } });
}

/** The tool's envelope for these params; invalid params throw like ExecuteSkill refuses them. */
export async function runTool(def: SkillDefinition<any>, params: Record<string, unknown>, timeoutMs = 10_000): Promise<ResultEnvelope> {
  const skill = buildSkill(def as SkillDefinition);
  return runSkill(skill, validateParams(skill, params), { callId: "test", timeoutMs, outputCapBytes: 1 << 20, log: pino({ level: "silent" }) });
}
