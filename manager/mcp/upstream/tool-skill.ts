/**
 * One upstream tool as a manager skill (M3): key mcp_<upstream>_<tool>, category mcp, the tool's
 * inputSchema kept as the skill's raw JSON Schema (the dispatcher validates params against it as
 * for any skill), its description bounded, its class from tool-class.ts.
 */
import type { SkillClass, SkillContext, SkillDefinition } from "../../../skill/types.ts";
import type { UpstreamSpec } from "./spec.ts";
import { toolClass } from "./tool-class.ts";
import { quoteToolName } from "./tool-key.ts";

/** A tool as the upstream lists it (the fields ongrid reads). */
export interface UpstreamTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: { title?: string; readOnlyHint?: boolean; destructiveHint?: boolean };
}

/** Longest upstream description kept (the model reads it on every turn it sees the tool). */
export const MAX_DESCRIPTION = 1024;
/** Longest display name kept. */
const MAX_NAME = 120;
/** Largest inputSchema taken, as JSON. */
export const MAX_SCHEMA_BYTES = 64 * 1024;

/** Runs a call of the upstream's tool `tool` with validated params. */
export type UpstreamCall = (tool: string, params: Record<string, unknown>, ctx: SkillContext) => Promise<unknown>;

/** A tool ready to register: its definition, a fingerprint of what it declares (to see a change), and its class. */
export interface ToolSkill {
  def: SkillDefinition;
  fingerprint: string;
  cls: SkillClass;
}

/** Builds the skill for `tool` under `key`, or says why it cannot be one. */
export function toolSkill(spec: Pick<UpstreamSpec, "name" | "classes" | "trustAnnotations">, tool: UpstreamTool, key: string, call: UpstreamCall): ToolSkill | { problem: string } {
  const schema = JSON.stringify(tool.inputSchema);
  if (Buffer.byteLength(schema) > MAX_SCHEMA_BYTES) return { problem: `its inputSchema is ${Buffer.byteLength(schema)} bytes as JSON (at most ${MAX_SCHEMA_BYTES})` };
  const { cls } = toolClass(tool, spec);
  const own = plainText(tool.description ?? "").trim();
  const said = own.length > MAX_DESCRIPTION ? `${own.slice(0, MAX_DESCRIPTION)}…` : own;
  const where = `MCP tool ${quoteToolName(tool.name)} of the upstream server "${spec.name}"`;
  const description = said ? `${said} (${where}.)` : `${where}; it gives no description of its own.`;
  const title = plainText(tool.title ?? tool.annotations?.title ?? tool.name).trim() || tool.name;
  const def: SkillDefinition = {
    key,
    name: title.length > MAX_NAME ? `${title.slice(0, MAX_NAME)}…` : title,
    description,
    class: cls,
    scope: "manager",
    category: "mcp",
    rawSchema: schema,
    lintWaivers: { "description-usage": "the upstream MCP server writes this description, not ongrid" },
    execute: (ctx, params) => call(tool.name, params, ctx),
  };
  return { def, fingerprint: JSON.stringify([def.name, description, schema, cls]), cls };
}

/** Text without control characters (newlines and tabs kept) or lone surrogates. */
function plainText(s: string): string {
  return s
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, "")
    .replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
}
