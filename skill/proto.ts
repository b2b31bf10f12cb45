/** Conversions between the framework's plain objects and the contract's messages, used by manager and edge alike. */
import { createHash } from "node:crypto";
import { create, fromJson, toBinary, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import {
  MetadataSchema,
  ParamFieldSchema,
  ParamType,
  SkillClass,
  SkillResultSchema,
  SkillScope,
  type Metadata,
  type SkillResult,
} from "../proto/gen/ongrid/v1/skill_pb.ts";
import { SkillInventorySchema } from "../proto/gen/ongrid/v1/tunnel_pb.ts";
import type { ResultEnvelope, Skill, SkillClass as Cls, SkillScope as Scp, ParamType as PT } from "./types.ts";

const CLASS_TO_PROTO: Record<Cls, SkillClass> = {
  safe: SkillClass.SAFE,
  mutating: SkillClass.MUTATING,
  dangerous: SkillClass.DANGEROUS,
};
const SCOPE_TO_PROTO: Record<Scp, SkillScope> = { host: SkillScope.HOST, manager: SkillScope.MANAGER };
const TYPE_TO_PROTO: Record<PT, ParamType> = {
  string: ParamType.STRING,
  integer: ParamType.INTEGER,
  number: ParamType.NUMBER,
  boolean: ParamType.BOOLEAN,
  enum: ParamType.ENUM,
  duration: ParamType.DURATION,
  string_list: ParamType.STRING_LIST,
  credential: ParamType.CREDENTIAL,
};

/** Proto class → framework class (undefined for UNSPECIFIED). */
export function classFromProto(c: SkillClass): Cls | undefined {
  return (Object.keys(CLASS_TO_PROTO) as Cls[]).find((k) => CLASS_TO_PROTO[k] === c);
}
/** Proto scope → framework scope (undefined for UNSPECIFIED). */
export function scopeFromProto(s: SkillScope): Scp | undefined {
  return (Object.keys(SCOPE_TO_PROTO) as Scp[]).find((k) => SCOPE_TO_PROTO[k] === s);
}

/** Proto param type → framework param type (undefined for UNSPECIFIED and unknown values). */
export function paramTypeFromProto(t: ParamType): PT | undefined {
  return (Object.keys(TYPE_TO_PROTO) as PT[]).find((k) => TYPE_TO_PROTO[k] === t);
}
/** Framework param type → proto param type. */
export function paramTypeToProto(t: PT): ParamType {
  return TYPE_TO_PROTO[t];
}

/** Framework class → proto class. */
export function classToProto(c: Cls): SkillClass {
  return CLASS_TO_PROTO[c];
}
/** Framework scope → proto scope. */
export function scopeToProto(s: Scp): SkillScope {
  return SCOPE_TO_PROTO[s];
}

/** A registered skill as the contract's Metadata. */
export function metadataToProto(skill: Skill, edgeIds: string[] = []): Metadata {
  const m = skill.meta;
  return create(MetadataSchema, {
    key: m.key,
    name: m.name,
    description: m.description,
    class: CLASS_TO_PROTO[m.class],
    scope: SCOPE_TO_PROTO[m.scope],
    category: m.category,
    params: {
      fields: Object.entries(m.params).map(([name, p]) =>
        create(ParamFieldSchema, {
          name,
          type: TYPE_TO_PROTO[p.type],
          description: p.description,
          required: Boolean(p.required),
          defaultJson: p.default === undefined ? undefined : JSON.stringify(p.default),
          minimum: p.min,
          maximum: p.max,
          pattern: p.pattern ?? "",
          enumValues: [...(p.values ?? [])],
        }),
      ),
    },
    rawJsonSchema: m.rawSchema ?? "",
    resultPreview: m.resultPreview ?? "",
    jsonSchema: m.rawSchema ?? JSON.stringify(skill.jsonSchema),
    edgeIds,
    dynamicRisk: m.dynamicRisk,
    riskClassifier: m.riskClassifier ?? "",
  });
}

/** Any JSON-able value as google.protobuf.Value (undefined becomes null). */
export function toValue(v: unknown) {
  return fromJson(ValueSchema, capDepth(v === undefined ? null : JSON.parse(JSON.stringify(v))) as JsonValue);
}

/**
 * JSON nesting a Value may carry: each level is three protobuf messages deep (Value, Struct, map
 * entry), and protobuf decoders stop at 100, so a deeper stored row (a refused request's params)
 * would make every listing of it fail. Deeper parts are shown as a marker; the stored row is unchanged.
 */
export const MAX_VALUE_DEPTH = 30;

function capDepth(v: unknown, depth = 0): unknown {
  if (v === null || typeof v !== "object") return v;
  if (depth >= MAX_VALUE_DEPTH) return "[nested too deep to show]";
  if (Array.isArray(v)) return v.map((x) => capDepth(x, depth + 1));
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, capDepth(x, depth + 1)]));
}

/** The result envelope as the contract's SkillResult. */
export function resultToProto(r: ResultEnvelope): SkillResult {
  return create(SkillResultSchema, {
    success: r.success,
    output: toValue(r.output),
    error: r.error,
    durationMs: r.duration_ms,
    truncated: r.truncated,
    edgeId: r.edge_id,
  });
}

/**
 * The digest of an edge's skill inventory (hello's inventory_digest): lowercase hex SHA-256 of
 * the binary encoding of a SkillInventory holding `skills`, in order. The edge computes it over
 * what it offers; the manager computes it over inventories it was sent, and remembers those.
 */
export function inventoryDigest(skills: Metadata[]): string {
  return createHash("sha256").update(toBinary(SkillInventorySchema, create(SkillInventorySchema, { skills }))).digest("hex");
}
