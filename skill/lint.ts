import { isSecretName } from "./redact.ts";
import type { ParamSchema, Skill, SkillMetadataInput } from "./types.ts";

/** One problem `ongrid skills lint` reports; an error fails the lint, a warning does not. */
export interface LintFinding {
  key: string;
  rule: LintRule;
  severity: "error" | "warning";
  message: string;
}

/** What lint can read: a definition, a registered skill, or a manifest's metadata (skill.json). */
export type LintTarget =
  | Skill
  | (SkillMetadataInput & { riskForArgs?: unknown; dynamicRisk?: boolean; classDefaulted?: boolean });

/** The rules, each one item of the ACI seed's new-tool checklist as it applies to static metadata (A7). */
export const LINT_RULES = {
  "class-explicit": "class is set explicitly (the checklist's risk level); an omitted class silently becomes safe",
  "description-usage": "the description tells the model when to use the skill: at least 40 characters and a usage cue",
  "params-minimal": "at most 6 params; every param has a description",
  "structured-output": "resultPreview is present and is JSON of an object or array (structured success output)",
  "key-format": "the key is an audit-worthy <domain>_<verb>[_<noun>] name, not a generic one",
  "no-backend-shell": "no manager skill takes a command, cmd, script or shell param (a shell on the manager host)",
  "no-arbitrary-http": "no manager skill takes a url, uri or endpoint param (SSRF); endpoints are settings",
  "no-arbitrary-file": "no manager skill takes a path or file param (file access outside the audited edges)",
  "no-plaintext-credentials": "no skill takes a password, token, secret, api_key or other secret-named param (isSecretName); the platform injects credentials",
  "command-needs-risk": "a host skill that takes a command classifies it (riskForArgs) or is statically dangerous",
} as const;

/** Identifier of a lint rule. */
export type LintRule = keyof typeof LINT_RULES;

const MIN_DESCRIPTION = 40;
const MAX_PARAMS = 6;
/**
 * A usage cue: "use/call/run [it|this [skill|tool]] when|to|for|if|before|after|during|instead",
 * "when(ever) you|the|a|an …", or "for <word>ing" (e.g. "for diagnosing"). Matched case-insensitively.
 */
const USAGE_CUE =
  /\b(?:(?:use|call|run)\s+(?:it\s+|this\s+(?:skill\s+|tool\s+)?)?(?:when|to|for|if|before|after|during|instead)|when(?:ever)?\s+(?:you|the|a|an)|for\s+[a-z]+ing)\b/i;
const KEY_FORMAT = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$/;
const GENERIC_SEGMENTS: ReadonlySet<string> = new Set([
  "do", "it", "run", "tool", "tools", "skill", "thing", "stuff", "misc", "test", "my", "new", "generic", "exec",
  "execute", "action", "call", "command", "cmd", "helper", "util", "utils", "task", "a", "the", "x", "foo", "bar", "tmp",
]);
const SHELL_PARAM = /(?:^|_)(?:command|cmd|script|shell)$/;
const HTTP_PARAM = /(?:^|_)(?:url|uri|endpoint)$/;
const FILE_PARAM = /(?:^|_)(?:path|file|filepath|filename)$/;

/** Checks one skill against the new-tool checklist; returns every finding, errors and warnings. */
export function lintSkill(target: LintTarget): LintFinding[] {
  const s = normalise(target);
  const out: LintFinding[] = [];
  const waivers = (target as { lintWaivers?: Record<string, string>; meta?: { lintWaivers?: Record<string, string> } }).lintWaivers ??
    (target as { meta?: { lintWaivers?: Record<string, string> } }).meta?.lintWaivers ?? {};
  const add = (rule: LintRule, severity: LintFinding["severity"], message: string) => {
    const reason = waivers[rule];
    if (reason && severity === "error") out.push({ key: s.key, rule, severity: "warning", message: `${message} (waived: ${reason})` });
    else out.push({ key: s.key, rule, severity, message });
  };

  if (s.classOmitted) add("class-explicit", "error", 'class is not set; declare "safe", "mutating" or "dangerous" explicitly');

  const description = (s.description ?? "").trim();
  if (description.length < MIN_DESCRIPTION) {
    add("description-usage", "error", `description is ${description.length} characters; say what the skill does and when to use it (at least ${MIN_DESCRIPTION})`);
  } else if (!USAGE_CUE.test(description)) {
    add("description-usage", "error", 'description does not say when to use the skill; add a cue such as "Use when …", "Use to …" or "for diagnosing …"');
  }

  const names = Object.keys(s.paramDescriptions);
  if (names.length > MAX_PARAMS) {
    add("params-minimal", "warning", `${names.length} params (more than ${MAX_PARAMS}); keep only what the model must choose, move the rest to settings`);
  }
  for (const name of names) {
    if (!s.paramDescriptions[name]) add("params-minimal", "error", `param "${name}" has no description`);
  }

  const preview = s.resultPreview?.trim();
  if (!preview) {
    add("structured-output", "error", "resultPreview is missing; give a short JSON example of a successful output");
  } else {
    let parsed: unknown;
    let valid = true;
    try {
      parsed = JSON.parse(preview);
    } catch {
      valid = false;
    }
    if (!valid) add("structured-output", "error", "resultPreview is not valid JSON; outputs must be structured");
    else if (typeof parsed !== "object" || parsed === null) add("structured-output", "warning", "resultPreview is a JSON scalar; prefer an object with named fields");
  }

  if (!KEY_FORMAT.test(s.key)) {
    add("key-format", "error", `key "${s.key}" is not <domain>_<verb>[_<noun>] in lower_snake with at least two segments`);
  } else if (s.key.split("_").every((seg) => GENERIC_SEGMENTS.has(seg))) {
    add("key-format", "error", `key "${s.key}" is generic; name the domain and the action (e.g. "probe_http", "service_restart")`);
  }

  for (const name of names) {
    const lower = name.toLowerCase();
    if (s.scope === "manager") {
      if (SHELL_PARAM.test(lower)) add("no-backend-shell", "error", `manager skill takes param "${name}": that is a shell on the manager host; run commands on edges through a gated host skill`);
      if (HTTP_PARAM.test(lower)) add("no-arbitrary-http", "error", `manager skill takes param "${name}": arbitrary HTTP from the manager is SSRF; make the endpoint a setting`);
      if (FILE_PARAM.test(lower)) add("no-arbitrary-file", "error", `manager skill takes param "${name}": arbitrary file access on the manager bypasses asset permissions and audit`);
    } else if (SHELL_PARAM.test(lower) && !s.dynamicRisk && s.class !== "dangerous") {
      add("command-needs-risk", "error", `host skill takes param "${name}" but neither classifies it (riskForArgs) nor is class dangerous`);
    }
    // The secret-name list redaction uses (SECRET_NAME_WORDS), so lint refuses exactly the params redaction would hide.
    // A param of type credential is how the platform injects a secret: it carries a name, never a value.
    if (isSecretName(name) && !s.credentialParams.has(name)) {
      add("no-plaintext-credentials", "error", `param "${name}" carries a credential through the model; declare it with type "credential" (the model then passes a stored credential's name) or inject it from configuration`);
    }
  }
  return out;
}

/** Lints every skill and adds an error for duplicate keys; findings are sorted by key, errors first. */
export function lintRegistry(skills: Iterable<LintTarget>): LintFinding[] {
  const out: LintFinding[] = [];
  const seen = new Set<string>();
  for (const target of skills) {
    const findings = lintSkill(target);
    const key = normalise(target).key;
    if (seen.has(key)) findings.push({ key, rule: "key-format", severity: "error", message: `key "${key}" is declared more than once` });
    seen.add(key);
    out.push(...findings);
  }
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.severity === b.severity ? 0 : a.severity === "error" ? -1 : 1));
}

/** Human output for `ongrid skills lint`: one line per finding and a summary line. */
export function formatFindings(findings: readonly LintFinding[]): string {
  const errors = findings.filter((f) => f.severity === "error").length;
  const warnings = findings.length - errors;
  const lines = findings.map((f) => `${f.severity === "error" ? "error  " : "warning"} ${f.key}: ${f.message} [${f.rule}]`);
  lines.push(`${errors} error${errors === 1 ? "" : "s"}, ${warnings} warning${warnings === 1 ? "" : "s"}`);
  return lines.join("\n");
}

interface Normalised {
  key: string;
  description?: string;
  class?: string;
  classOmitted: boolean;
  scope: string;
  resultPreview?: string;
  dynamicRisk: boolean;
  /** param name → its description ("" when missing). */
  paramDescriptions: Record<string, string>;
  /** Params declared with type credential (the model passes a stored credential's name). */
  credentialParams: ReadonlySet<string>;
}

function normalise(target: LintTarget): Normalised {
  const isSkill = "meta" in target && typeof target.meta === "object" && target.meta !== null;
  const m = (isSkill ? (target as Skill).meta : target) as SkillMetadataInput & { dynamicRisk?: boolean; classDefaulted?: boolean };
  const key = typeof m.key === "string" ? m.key : String(m.key);
  return {
    key,
    description: typeof m.description === "string" ? m.description : undefined,
    class: m.class,
    classOmitted: m.class === undefined || m.classDefaulted === true,
    scope: m.scope ?? "host",
    resultPreview: typeof m.resultPreview === "string" ? m.resultPreview : undefined,
    dynamicRisk: Boolean((target as { riskForArgs?: unknown }).riskForArgs) || m.dynamicRisk === true,
    paramDescriptions: paramDescriptions(m.params, m.rawSchema),
    credentialParams: new Set(
      m.rawSchema === undefined ? Object.entries(m.params ?? {}).flatMap(([name, spec]) => (spec?.type === "credential" ? [name] : [])) : [],
    ),
  };
}

function paramDescriptions(params: ParamSchema | undefined, rawSchema: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (params && Object.keys(params).length > 0) {
    for (const [name, spec] of Object.entries(params)) out[name] = typeof spec?.description === "string" ? spec.description.trim() : "";
    return out;
  }
  if (typeof rawSchema !== "string") return out;
  try {
    const props = (JSON.parse(rawSchema) as { properties?: Record<string, { description?: unknown }> }).properties ?? {};
    for (const [name, prop] of Object.entries(props)) out[name] = typeof prop?.description === "string" ? prop.description.trim() : "";
  } catch {
    /* an unparsable raw schema is refused at registration */
  }
  return out;
}
