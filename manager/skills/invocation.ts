/** Reads who made a base tool's call (set by the dispatcher), so the tool's own calls run as that caller. */
import { SkillError } from "../../skill/errors.ts";
import type { SkillContext } from "../../skill/types.ts";
import type { Invocation } from "../calls/types.ts";

/** The caller and session of this call; a base tool run outside the dispatcher has none and fails clearly. */
export function invocationOf(ctx: SkillContext): Invocation {
  const inv = ctx.invocation;
  if (!inv?.caller) throw new SkillError("internal", "this tool runs only through the manager's dispatcher (no caller in its context)", "Call it with ExecuteSkill, the CLI or the agent.");
  return inv;
}
