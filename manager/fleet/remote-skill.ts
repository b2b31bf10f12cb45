/** Turns the skill metadata an edge reported in its hello into a Skill the manager can list, validate and gate. */
import { OngridError, SkillError } from "../../skill/errors.ts";
import { buildSkill } from "../../skill/registry.ts";
import { riskFromClassifier } from "../../skill/risk-classifier.ts";
import type { ParamSchema, ParamSpec, Skill } from "../../skill/types.ts";
import { ParamType, type Metadata } from "../../proto/gen/ongrid/v1/skill_pb.ts";
import { createHash } from "node:crypto";
import { toBinary } from "@bufbuild/protobuf";
import { classFromProto } from "../../skill/proto.ts";
import { MetadataSchema } from "../../proto/gen/ongrid/v1/skill_pb.ts";
import { hostSkillDefinitions } from "../../skill/catalog/index.ts";

const TYPES: Partial<Record<ParamType, ParamSpec["type"]>> = {
  [ParamType.STRING]: "string",
  [ParamType.INTEGER]: "integer",
  [ParamType.NUMBER]: "number",
  [ParamType.BOOLEAN]: "boolean",
  [ParamType.ENUM]: "enum",
  [ParamType.DURATION]: "duration",
  [ParamType.STRING_LIST]: "string_list",
  [ParamType.CREDENTIAL]: "credential",
};

/**
 * The builtins every edge binary ships, built from the manager's own copy: for these keys the
 * manager never takes an edge's word for class, risk, schema or description (one edge cannot
 * rewrite the tool text the fleet's LLM sees, nor declare `restart_service` safe).
 */
const KNOWN = new Map(hostSkillDefinitions().map((def) => [def.key, buildSkill({ ...def, scope: "host" })]));

/** Skills built from edge metadata, by a hash of the metadata bytes: a thousand identical hellos compile once. */
const cache = new Map<string, Skill>();
const CACHE_LIMIT = 4096;

/** The manager-side Skill for a key an edge offers: the manager's own builtin, or one built (once) from the metadata. */
export function skillFromMetadata(m: Metadata): Skill {
  const known = KNOWN.get(m.key);
  if (known) return known;
  const id = createHash("sha256").update(toBinary(MetadataSchema, m)).digest("base64url");
  const hit = cache.get(id);
  if (hit) {
    cache.delete(id);
    cache.set(id, hit);
    return hit;
  }
  const skill = buildFromMetadata(m);
  cache.set(id, skill);
  if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value!);
  return skill;
}

function buildFromMetadata(m: Metadata): Skill {
  const params: Record<string, ParamSpec> = {};
  for (const f of m.params?.fields ?? []) {
    const type = TYPES[f.type];
    if (!type) throw new OngridError("invalid_argument", `skill "${m.key}", param "${f.name}": unknown type ${f.type}`);
    let def: unknown;
    if (f.defaultJson !== undefined) {
      try {
        def = JSON.parse(f.defaultJson);
      } catch {
        throw new OngridError("invalid_argument", `skill "${m.key}", param "${f.name}": default_json is not JSON`);
      }
    }
    params[f.name] = {
      type,
      description: f.description,
      ...(f.required ? { required: true } : {}),
      ...(def !== undefined ? { default: def } : {}),
      ...(f.minimum !== undefined ? { min: f.minimum } : {}),
      ...(f.maximum !== undefined ? { max: f.maximum } : {}),
      ...(f.pattern ? { pattern: f.pattern } : {}),
      ...(f.enumValues.length ? { values: [...f.enumValues] } : {}),
    };
  }
  const cls = classFromProto(m.class);
  const risk = riskFromClassifier(m.riskClassifier, m.key);
  return buildSkill({
    key: m.key,
    name: m.name,
    description: m.description,
    class: cls ?? "dangerous",
    scope: "host",
    category: m.category,
    ...(m.rawJsonSchema ? { rawSchema: m.rawJsonSchema } : { params: params as ParamSchema }),
    resultPreview: m.resultPreview,
    ...(m.riskClassifier ? { riskClassifier: m.riskClassifier } : {}),
    // A dynamic-risk skill the manager cannot classify is gated as dangerous.
    ...(risk ? { riskForArgs: risk } : m.dynamicRisk ? { riskForArgs: () => "dangerous" as const } : {}),
    execute: async () => {
      throw new SkillError("internal", `skill "${m.key}" runs on an edge; call it through the hub`);
    },
  });
}
