/**
 * Reads one SKILL.md (I1): YAML frontmatter checked against playbook.schema.json, then the rules a
 * schema cannot say (placeholders, the body). Every problem names the file, the field and the rule.
 */
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import { parseDocument } from "yaml";
import { ajvProblems } from "../../skill/validate.ts";
import PLAYBOOK_SCHEMA from "./playbook.schema.json" with { type: "json" };

/** The file every playbook directory holds. */
export const PLAYBOOK_FILE = "SKILL.md";
/** Largest SKILL.md read. */
const MAX_FILE_BYTES = 256 * 1024;
/** The placeholders fallback step arguments may hold, filled from the alert text by the executor. */
export const PLACEHOLDERS = ["url", "host", "port", "unit", "path"] as const;
/** The body headings a playbook is expected to have (a missing one is a warning). */
export const BODY_SECTIONS = ["Trigger conditions", "Required evidence", "Recommended tool order", "Stop conditions", "Report format"] as const;

/** One tool call that runs without a model (J3). */
export interface FallbackStep {
  tool: string;
  args: Record<string, unknown>;
  note?: string;
  /** Run only when each named placeholder's value is of this kind (a host name, or an IP literal). */
  when?: Partial<Record<(typeof PLACEHOLDERS)[number], "name" | "ip">>;
}

/** One line per fallback step, as plans show them: `tool {args} — note`. */
export function describeSteps(steps: readonly FallbackStep[]): string[] {
  return steps.map((s) => `${s.tool} ${JSON.stringify(s.args)}${s.when ? ` (when ${Object.entries(s.when).map(([k, v]) => `{{${k}}} is ${v === "ip" ? "an IP literal" : "a name"}`).join(", ")})` : ""}${s.note ? ` — ${s.note}` : ""}`);
}

/** A loaded playbook. */
export interface Playbook {
  name: string;
  displayName: string;
  description: string;
  category: string;
  platforms: string[];
  tags: string[];
  triggers: string[];
  /** Incident texts this playbook is for (the router's ranking reads them). */
  examples: string[];
  /** allowed_tools and Agent-Skills allowed-tools, merged. */
  allowedTools: string[];
  riskLevel: "low" | "medium" | "high";
  fallbackSteps: FallbackStep[];
  license?: string;
  metadata?: Record<string, string | number | boolean>;
  /** The Markdown after the frontmatter, trimmed. */
  body: string;
  /** Absolute path of the SKILL.md. */
  file: string;
  /** "builtin" for manager/playbooks, else "external". */
  source: "builtin" | "external";
  /** sha256 of the file's bytes: a changed value means the playbook changed. */
  fingerprint: string;
}

/** Why a playbook was refused (error) or what is doubtful about it (warning). */
export interface PlaybookProblem {
  file: string;
  /** Dotted field, e.g. "fallback_steps[1].tool"; "" for the file as a whole. */
  field: string;
  rule: string;
  message: string;
  severity: "error" | "warning";
}

/** "<file>: <field>: <message> (rule: <rule>)", the one-line form logs and CLIs print. */
export function formatPlaybookProblem(p: Pick<PlaybookProblem, "file" | "field" | "rule" | "message">): string {
  return `${p.file}: ${p.field ? `${p.field}: ` : ""}${p.message} (rule: ${p.rule})`;
}

let compiledFrontmatter: ReturnType<Ajv2020["compile"]> | undefined;
/** The frontmatter validator, compiled on first use rather than at import (the CLI imports this module for commands that read no playbook). */
function frontmatterValidator(): ReturnType<Ajv2020["compile"]> {
  compiledFrontmatter ??= new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true, logger: false }).compile(PLAYBOOK_SCHEMA);
  return compiledFrontmatter;
}
const KNOWN_KEYS = new Set(Object.keys(PLAYBOOK_SCHEMA.properties));
const PLACEHOLDER = /\{\{\s*([^}]*?)\s*\}\}/g;

/** The schema, for docs and `ongrid playbooks schema`. */
export { PLAYBOOK_SCHEMA };

/** Reads and checks one SKILL.md file. */
export function readPlaybook(file: string, source: Playbook["source"]): { playbook?: Playbook; problems: PlaybookProblem[] } {
  let text: string;
  try {
    const st = statSync(file);
    if (!st.isFile()) return refused(file, "", "file", "is not a regular file");
    if (st.size > MAX_FILE_BYTES) return refused(file, "", "maxBytes", `is ${st.size} bytes; at most ${MAX_FILE_BYTES}`);
    text = readFileSync(file, "utf8");
  } catch (err) {
    return refused(file, "", "readable", `cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return parsePlaybook(text, file, source);
}

/** Checks the text of a SKILL.md; `file` is only used in problems and the result. */
export function parsePlaybook(text: string, file: string, source: Playbook["source"]): { playbook?: Playbook; problems: PlaybookProblem[] } {
  const fingerprint = createHash("sha256").update(text).digest("hex");
  const src = text.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
  const open = /^---[ \t]*\n/.exec(src);
  if (!open) return refused(file, "", "frontmatter", "must start with a YAML frontmatter block between two '---' lines");
  const close = /^---[ \t]*$/m.exec(src.slice(open[0].length));
  if (!close) return refused(file, "", "frontmatter", "the frontmatter block is not closed by a '---' line");
  const yamlText = src.slice(open[0].length, open[0].length + close.index);
  const body = src.slice(open[0].length + close.index + close[0].length).trim();

  const doc = parseDocument(yamlText, { uniqueKeys: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0];
    // +1: the frontmatter starts on the file's second line.
    const line = e.linePos?.[0] ? ` at line ${e.linePos[0].line + 1} of the file` : "";
    const what = e.message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "");
    return refused(file, "", "yaml", `frontmatter is not valid YAML${line}: ${what}`);
  }
  let fm: unknown;
  try {
    fm = doc.toJS();
  } catch (err) {
    // Aliases are resolved here, not by the parser: an unresolved one or an alias bomb throws.
    return refused(file, "", "yaml", `frontmatter is not valid YAML: ${(err as Error).message.split("\n")[0]}`);
  }
  if (typeof fm !== "object" || fm === null || Array.isArray(fm)) return refused(file, "", "frontmatter", "frontmatter must be a YAML mapping (key: value lines)");

  const problems: PlaybookProblem[] = [];
  const error = (field: string, rule: string, message: string) => problems.push({ file, field, rule, message, severity: "error" });
  const warn = (field: string, rule: string, message: string) => problems.push({ file, field, rule, message, severity: "warning" });
  const validateFrontmatter = frontmatterValidator();
  if (!validateFrontmatter(fm)) {
    // Structured, not parsed back out of `param "x": …` lines: a key may hold quotes or newlines.
    for (const p of ajvProblems(validateFrontmatter.errors ?? [])) error(p.field, p.rule, p.what);
  }
  const m = fm as Record<string, any>;
  for (const key of Object.keys(m)) if (!KNOWN_KEYS.has(key)) warn(key === "" ? '[""]' : key, "known_key", "is not a known frontmatter key; ignored");
  if (!body) error("body", "required", "the Markdown body after the frontmatter is empty; it is the playbook");
  else {
    const headings = new Set([...body.matchAll(/^##\s+(.+?)\s*#*\s*$/gm)].map((h) => h[1].toLowerCase()));
    const missing = BODY_SECTIONS.filter((s) => !headings.has(s.toLowerCase()));
    if (missing.length) warn("body", "sections", `has no "## ${missing.join('", "## ')}" section${missing.length > 1 ? "s" : ""}`);
  }
  (Array.isArray(m.fallback_steps) ? m.fallback_steps : []).forEach((step: any, i: number) => {
    if (step && typeof step === "object" && step.args !== undefined) {
      for (const [path, value] of stringsIn(step.args, `fallback_steps[${i}].args`)) {
        for (const ph of value.matchAll(PLACEHOLDER)) {
          if (!(PLACEHOLDERS as readonly string[]).includes(ph[1])) error(path, "placeholder", `{{${ph[1]}}} is not a placeholder; use one of {{${PLACEHOLDERS.join("}}, {{")}}}`);
        }
      }
    }
  });
  if (problems.some((p) => p.severity === "error")) return { problems };

  const allowed = new Set<string>(m.allowed_tools ?? []);
  const agentSkills = m["allowed-tools"];
  for (const t of typeof agentSkills === "string" ? agentSkills.split(/[\s,]+/).filter(Boolean) : (agentSkills ?? [])) {
    // Agent Skills tools may carry an argument pattern, e.g. "Bash(git:*)": not an ongrid key.
    if (!/^[a-z][a-z0-9_]{1,63}$/.test(t)) warn("allowed-tools", "pattern", `"${t}" is not an ongrid skill key; ignored`);
    else allowed.add(t);
  }
  const playbook: Playbook = {
    name: m.name,
    displayName: m.display_name ?? m.name,
    description: m.description.trim(),
    category: m.category ?? "oncall",
    platforms: m.platforms ?? ["any"],
    tags: m.tags ?? [],
    triggers: m.triggers ?? [],
    examples: m.examples ?? [],
    allowedTools: [...allowed],
    riskLevel: m.risk_level ?? "low",
    fallbackSteps: (m.fallback_steps ?? []).map((s: any) => ({ tool: s.tool, args: s.args ?? {}, ...(s.note ? { note: s.note } : {}), ...(s.when ? { when: s.when } : {}) })),
    ...(m.license ? { license: m.license } : {}),
    ...(m.metadata ? { metadata: m.metadata } : {}),
    body,
    file,
    source,
    fingerprint,
  };
  return { playbook, problems };
}

/** Every string inside a JSON value, with its dotted path. */
function* stringsIn(value: unknown, path: string): Generator<[string, string]> {
  if (typeof value === "string") yield [path, value];
  else if (Array.isArray(value)) for (let i = 0; i < value.length; i++) yield* stringsIn(value[i], `${path}[${i}]`);
  else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) yield* stringsIn(v, `${path}.${k}`);
}

function refused(file: string, field: string, rule: string, message: string): { problems: PlaybookProblem[] } {
  return { problems: [{ file, field, rule, message, severity: "error" }] };
}
