/**
 * Evaluation cases (J6): each playbook's eval anchor, `eval.yaml` beside its SKILL.md — incidents
 * with the recorded outputs of the skills a diagnosis may call, the playbook they belong to, the
 * evidence a correct diagnosis gathers, the findings its report states and the claims it must not
 * make. Read and checked here; a bad file is refused naming the file, the field and the rule.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import { parseDocument } from "yaml";
import { OngridError } from "../../skill/errors.ts";
import { ajvProblems } from "../../skill/validate.ts";
import type { Playbook } from "../playbooks/parse.ts";

/** The file name of a playbook's eval anchor. */
export const EVAL_FILE = "eval.yaml";
const MAX_FILE_BYTES = 1024 * 1024;
const KEY = "^[a-z][a-z0-9_]{1,63}$";

/** One recorded answer of a skill: its output, or the error it failed with. */
export type Answer = { output: unknown } | { error: { code: string; message: string; hint?: string } };

/**
 * A skill's recorded answers: one answer for every call, or `answers`, each for the calls whose
 * params include its `when` (equal values; the first that matches wins; one without `when` is the
 * default), so kubernetes_get of pods and of events can answer differently.
 */
export type Fixture = Answer | { answers: Array<Answer & { when?: Record<string, unknown> }> };

/** The answer a fixture gives to a call with these params, or undefined when none matches. */
export function answerFor(f: Fixture, params: Record<string, unknown>): Answer | undefined {
  if (!("answers" in f)) return f;
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  return f.answers.find((a) => !a.when || Object.entries(a.when).every(([k, v]) => same(params[k], v)));
}

/** One evaluation case. */
export interface EvalCase {
  id: string;
  /** The playbook whose eval.yaml holds it. */
  anchor: string;
  file: string;
  lang: string;
  kind: "clear" | "ambiguous" | "out_of_scope";
  incident: string;
  /** The playbook a correct router picks; null: not an operations question, to be refused. */
  expectedPlaybook: string | null;
  fixtures: Record<string, Fixture>;
  evidence: string[];
  findings: string[];
  mustNot: string[];
}

/** A refused file or field. */
export interface EvalProblem {
  file: string;
  field: string;
  rule: string;
  message: string;
}

const SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["cases"],
  properties: {
    cases: {
      type: "array",
      minItems: 1,
      maxItems: 500,
      items: {
        type: "object",
        additionalProperties: false,
        required: ["id", "lang", "kind", "incident", "expected_playbook"],
        properties: {
          id: { type: "string", pattern: "^[a-z0-9][a-z0-9-]{0,79}$" },
          lang: { type: "string", pattern: "^[a-z]{2}(-[A-Za-z]{2,4})?$" },
          kind: { enum: ["clear", "ambiguous", "out_of_scope"] },
          incident: { type: "string", minLength: 1, maxLength: 8000 },
          expected_playbook: { anyOf: [{ type: "string", pattern: "^[a-z0-9][a-z0-9_-]{0,63}$" }, { type: "null" }] },
          fixtures: {
            type: "object",
            propertyNames: { pattern: KEY },
            maxProperties: 50,
            additionalProperties: {
              type: "object",
              additionalProperties: false,
              oneOf: [{ required: ["output"] }, { required: ["error"] }, { required: ["answers"] }],
              properties: {
                output: {},
                error: { $ref: "#/$defs/error" },
                answers: {
                  type: "array",
                  minItems: 1,
                  maxItems: 20,
                  items: {
                    type: "object",
                    additionalProperties: false,
                    oneOf: [{ required: ["output"] }, { required: ["error"] }],
                    properties: { when: { type: "object", minProperties: 1, maxProperties: 20 }, output: {}, error: { $ref: "#/$defs/error" } },
                  },
                },
              },
            },
          },
          evidence: { type: "array", uniqueItems: true, maxItems: 30, items: { type: "string", pattern: KEY } },
          findings: { type: "array", maxItems: 30, items: { type: "string", minLength: 1, maxLength: 300 } },
          must_not: { type: "array", maxItems: 30, items: { type: "string", minLength: 1, maxLength: 300 } },
        },
      },
    },
  },
  $defs: {
    error: {
      type: "object",
      additionalProperties: false,
      required: ["code", "message"],
      properties: { code: { type: "string", pattern: "^[a-z][a-z0-9_]{0,63}$" }, message: { type: "string", maxLength: 2000 }, hint: { type: "string", maxLength: 2000 } },
    },
  },
} as const;

let validator: ReturnType<Ajv2020["compile"]> | undefined;

/** Parses one eval.yaml; the problems name the field and the rule. */
export function parseEvalFile(text: string, file: string, anchor: string, playbookNames: ReadonlySet<string>): { cases: EvalCase[]; problems: EvalProblem[] } {
  const problems: EvalProblem[] = [];
  const refuse = (field: string, rule: string, message: string) => problems.push({ file, field, rule, message });
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length) {
    refuse("", "yaml", `not valid YAML: ${doc.errors[0].message.split("\n")[0]}`);
    return { cases: [], problems };
  }
  const data = doc.toJS() as unknown;
  validator ??= new Ajv2020({ allErrors: true, strict: false }).compile(SCHEMA);
  if (!validator(data)) {
    for (const p of ajvProblems(validator.errors ?? [])) refuse(p.field, p.rule, p.what);
    return { cases: [], problems };
  }
  const cases: EvalCase[] = [];
  (data as { cases: any[] }).cases.forEach((c, i) => {
    const at = `cases[${i}]`;
    if (c.expected_playbook !== null && !playbookNames.has(c.expected_playbook)) refuse(`${at}.expected_playbook`, "known_playbook", `"${c.expected_playbook}" is not a loaded playbook`);
    if ((c.expected_playbook === null) !== (c.kind === "out_of_scope")) refuse(`${at}.kind`, "out_of_scope", "kind out_of_scope goes with expected_playbook null, and only with it");
    for (const e of c.evidence ?? []) if (!(e in (c.fixtures ?? {}))) refuse(`${at}.evidence`, "fixture", `"${e}" is evidence but has no fixture: a correct diagnosis could not gather it`);
    cases.push({
      id: c.id,
      anchor,
      file,
      lang: c.lang,
      kind: c.kind,
      incident: c.incident,
      expectedPlaybook: c.expected_playbook,
      fixtures: c.fixtures ?? {},
      evidence: c.evidence ?? [],
      findings: c.findings ?? [],
      mustNot: c.must_not ?? [],
    });
  });
  return { cases, problems };
}

/** Every loaded playbook's eval anchor (eval.yaml beside its SKILL.md); ids must be unique across them. */
export function loadEvalCases(playbooks: Iterable<Playbook>): { cases: EvalCase[]; problems: EvalProblem[] } {
  const list = [...playbooks];
  const names = new Set(list.map((p) => p.name));
  const cases: EvalCase[] = [];
  const problems: EvalProblem[] = [];
  const seen = new Map<string, string>();
  for (const p of list.sort((a, b) => a.name.localeCompare(b.name))) {
    const file = join(dirname(p.file), EVAL_FILE);
    if (!existsSync(file)) continue;
    if (statSync(file).size > MAX_FILE_BYTES) {
      problems.push({ file, field: "", rule: "size", message: `larger than ${MAX_FILE_BYTES} bytes` });
      continue;
    }
    const r = parseEvalFile(readFileSync(file, "utf8"), file, p.name, names);
    problems.push(...r.problems);
    for (const c of r.cases) {
      const other = seen.get(c.id);
      if (other) problems.push({ file, field: `id ${c.id}`, rule: "unique", message: `case id "${c.id}" is also used in ${other}` });
      else seen.set(c.id, file);
      cases.push(c);
    }
  }
  return { cases, problems };
}

/** Throws one error listing every problem (at most 20 shown). */
export function requireNoProblems(problems: readonly EvalProblem[]): void {
  if (!problems.length) return;
  const lines = problems.slice(0, 20).map((p) => `${p.file}: ${p.field || "(file)"}: ${p.message} (rule: ${p.rule})`);
  throw new OngridError("invalid_argument", `${problems.length} problem${problems.length === 1 ? "" : "s"} in the eval cases:\n${lines.join("\n")}${problems.length > 20 ? `\n… ${problems.length - 20} more` : ""}`, "fix the eval.yaml files named; docs/eval.md describes the format");
}
