/** Named risk classifiers (A6): a dynamic-risk skill names one in its metadata ("<classifier>:<param>[:<cwd param>]"), so either side can gate its calls. */
import { OngridError } from "./errors.ts";
import { classifyCommand } from "./risk/index.ts";
import { SKILL_CLASSES, type SkillClass } from "./types.ts";

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

/** The forms of a classifier reference, for messages and docs. */
const REFERENCE_FORMS = [...RISK_CLASSIFIER_NAMES.map((n) => `${n}:<param>[:<cwd param>]`), "param_class:<param>:<value>=<class>,…"];

const VALUE = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * "param_class:<param>:<value>=<class>,…": the call's class is looked up by the value of one
 * param (an enum such as kubernetes_action's `action`); any other value, or a value that is not
 * a string, is dangerous. Each value and class is checked when the manifest is read.
 */
function paramClass(ref: string, key: string, param: string | undefined, table: string | undefined, rest: string[]): (p: Record<string, unknown>) => SkillClass {
  const bad = (why: string) => new OngridError("invalid_argument", `skill "${key}": risk_classifier "${ref}": ${why} (form: param_class:<param>:<value>=<class>,…)`);
  if (!param || !table || rest.length) throw bad("needs a param and a table of values");
  const classes = new Map<string, SkillClass>();
  for (const entry of table.split(",")) {
    const [value, cls, ...extra] = entry.split("=");
    if (!value || !VALUE.test(value) || extra.length) throw bad(`"${entry}" is not <value>=<class> with a value of [A-Za-z0-9_.-]`);
    if (cls === undefined || !SKILL_CLASSES.has(cls)) throw bad(`class "${cls ?? ""}" for "${value}" is not one of safe, mutating, dangerous`);
    if (classes.has(value)) throw bad(`"${value}" is listed twice`);
    classes.set(value, cls as SkillClass);
  }
  return (p) => {
    const v = p[param];
    return (typeof v === "string" && classes.get(v)) || "dangerous";
  };
}

/** The risk function for a classifier reference ("" → none); an unknown reference is refused. */
export function riskFromClassifier(ref: string, key: string): ((p: Record<string, unknown>) => SkillClass) | undefined {
  if (!ref) return undefined;
  const [name, param, cwdParam, ...rest] = ref.split(":");
  if (name === "param_class") return paramClass(ref, key, param, cwdParam, rest);
  const classify = Object.hasOwn(RISK_CLASSIFIERS, name) ? RISK_CLASSIFIERS[name] : undefined;
  if (!classify || !param || cwdParam === "" || rest.length) {
    throw new OngridError("invalid_argument", `skill "${key}": risk_classifier "${ref}" is not one of ${REFERENCE_FORMS.join(", ")}`);
  }
  return (p) => classify(p[param], cwdParam ? p[cwdParam] : undefined);
}
