/** Named risk classifiers (A6): a dynamic-risk skill names one in its metadata ("<classifier>:<param>[:<cwd param>]"), so either side can gate its calls. */
import { OngridError } from "./errors.ts";
import { classifyCommand } from "./risk/index.ts";
import type { SkillClass } from "./types.ts";

/** Classifiers known by name: each gets the named param's value and, when the reference names one, the working directory's. */
const RISK_CLASSIFIERS: Record<string, (value: unknown, cwd: unknown) => SkillClass> = {
  shell_command: (v, cwd) => (typeof v === "string" ? classifyCommand(v, { cwd: typeof cwd === "string" ? cwd : undefined }).class : "dangerous"),
};

/** Names of the known classifiers, for messages and docs. */
export const RISK_CLASSIFIER_NAMES: readonly string[] = Object.keys(RISK_CLASSIFIERS);

/**
 * The command line and working directory of a call whose skill is classified by `shell_command`
 * (exec, pod_execute, packs naming it), read as its classifier reference says; undefined for any
 * other skill. One reading of "<classifier>:<param>[:<cwd param>]" for the gate, the approval
 * display check and `ongrid skills classify`.
 */
export function shellCommandOf(ref: string | undefined, params: Record<string, unknown>): { command: unknown; cwd?: string } | undefined {
  if (!ref?.startsWith("shell_command:")) return undefined;
  const [, param, cwdParam] = ref.split(":");
  const cwd = cwdParam ? params[cwdParam] : undefined;
  return { command: params[param], cwd: typeof cwd === "string" ? cwd : undefined };
}

/** The risk function for a classifier reference ("" → none); an unknown reference is refused. */
export function riskFromClassifier(ref: string, key: string): ((p: Record<string, unknown>) => SkillClass) | undefined {
  if (!ref) return undefined;
  const [name, param, cwdParam, ...rest] = ref.split(":");
  const classify = Object.hasOwn(RISK_CLASSIFIERS, name) ? RISK_CLASSIFIERS[name] : undefined;
  if (!classify || !param || cwdParam === "" || rest.length) {
    throw new OngridError(
      "invalid_argument",
      `skill "${key}": risk_classifier "${ref}" is not one of ${RISK_CLASSIFIER_NAMES.map((n) => `${n}:<param>[:<cwd param>]`).join(", ")}`,
    );
  }
  return (p) => classify(p[param], cwdParam ? p[cwdParam] : undefined);
}
