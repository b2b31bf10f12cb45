/**
 * The caller's gated tool list as MCP tools (M1): the same bridge as AgentService.ListTools (a tool
 * the gate would deny is never listed), each skill shaped as an MCP Tool with its schema, the
 * result envelope as outputSchema and annotations derived from its class and metadata.
 */
import { createHash } from "node:crypto";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { Skill } from "../../../skill/types.ts";
import { bridgeTools, type BridgedTool, type ToolScope } from "../../agent/bridge/tools.ts";
import type { SkillRegistry } from "../../../skill/registry.ts";
import type { Dispatcher } from "../../calls/execute.ts";
import type { Hub } from "../../fleet/hub.ts";

/** Edges named in a host tool's edge_id enum at most; more and the enum is left out (the description says how to find them). */
export const MAX_EDGE_ENUM = 50;

/** The tool that looks up a parked call (not a skill; answered by the MCP layer, not audited as a call). */
export const APPROVAL_STATUS_TOOL = "approval_status";

/** Categories whose skills reach systems outside the fleet and the manager (the open world). */
const OPEN_WORLD_CATEGORIES = new Set(["search", "notification"]);

/** The result envelope (A5) as JSON Schema: every structuredContent of a skill tool conforms to it. */
export const ENVELOPE_SCHEMA = {
  type: "object" as const,
  properties: {
    success: { type: "boolean", description: "Whether the skill did what was asked (a command that exits non-zero is false)." },
    output: { description: "The skill's output (its shape is the skill's own); absent or null on failure." },
    error: {
      type: "object",
      properties: { code: { type: "string" }, message: { type: "string" }, hint: { type: "string" } },
      required: ["code", "message"],
    },
    duration_ms: { type: "number" },
    truncated: { type: "boolean", description: "The output was cut to skills.output_cap_bytes." },
    edge_id: { type: "string" },
    audit_seq: { type: "number", description: "The audit row of this call." },
    deduplicated: { type: "boolean", description: "Answered from an identical earlier call of this session (safe skills only)." },
    pending_approval: {
      type: "object",
      description: "Present when the call parked for human approval and has not run.",
      properties: { id: { type: "string" }, state: { type: "string" }, required_approvals: { type: "number" }, expires_at: { type: "string" }, approve_with: { type: "string" } },
    },
  },
  required: ["success"],
};

/** One listed tool: the MCP shape and the bridge entry it maps to. */
export interface McpTool {
  tool: Tool;
  bridged?: BridgedTool;
}

/** MCP annotations from a skill's class and metadata (hints for the client; the gate decides regardless). */
export function annotationsOf(skill: Skill): NonNullable<Tool["annotations"]> {
  const m = skill.meta;
  const readOnly = m.class === "safe" && !m.dynamicRisk;
  return {
    title: m.name,
    readOnlyHint: readOnly,
    // A dynamic-risk skill's class is its most dangerous one: it may destroy, depending on the arguments.
    destructiveHint: m.class !== "safe",
    idempotentHint: readOnly,
    openWorldHint: OPEN_WORLD_CATEGORIES.has(m.category),
  };
}

/** The input schema: the skill's JSON Schema, with a required edge_id first for host skills. */
/** The argument that carries a signed SOP for a dangerous call (not a skill param: the MCP layer takes it off). */
export const SOP_ARG = "sop";

/** Whether a call of the skill may be dangerous (static class, or the most dangerous class of a dynamic-risk skill). */
export const mayBeDangerous = (skill: Skill): boolean => skill.meta.class === "dangerous";

export function inputSchemaOf(skill: Skill, edgeIds: readonly string[]): Tool["inputSchema"] {
  const base = skill.jsonSchema as Tool["inputSchema"];
  const schema: Tool["inputSchema"] = mayBeDangerous(skill)
    ? { ...base, properties: { ...(base.properties ?? {}), [SOP_ARG]: { type: "string", description: "A signed SOP covering this call (`ongrid sop sign`), as its whole text; a dangerous call is refused without one. Never write one yourself: ask the operator for it." } } }
    : base;
  if (skill.meta.scope !== "host") return { ...schema, type: "object" };
  const props = (schema.properties ?? {}) as Record<string, object>;
  const named = edgeIds.length <= MAX_EDGE_ENUM;
  const edgeId = named && edgeIds.length
    ? { type: "string", enum: [...edgeIds], description: "Edge to run on (an online edge in your reach that offers this tool)." }
    : { type: "string", minLength: 1, description: `Edge to run on: one of ${edgeIds.length} online edges in your reach offering this tool (the query_edges tool lists them).` };
  return {
    ...schema,
    type: "object",
    properties: { edge_id: edgeId, ...props },
    required: ["edge_id", ...((schema.required as string[] | undefined) ?? []).filter((r) => r !== "edge_id")],
  };
}

/** One skill as an MCP tool. */
export function toMcpTool(t: BridgedTool): Tool {
  const m = t.skill.meta;
  const cls = m.dynamicRisk ? `${m.class} at most; the class depends on the arguments` : m.class;
  const gate = t.behavior === "ask" ? " Calls park for human approval before they run." : "";
  return {
    name: m.key,
    title: m.name,
    description: `${m.description} [class: ${cls}; scope: ${m.scope}]${gate}`,
    inputSchema: inputSchemaOf(t.skill, t.edgeIds),
    outputSchema: ENVELOPE_SCHEMA,
    annotations: annotationsOf(t.skill),
    // Any call may run as an MCP task; one that parks for approval then ends when its approval does.
    execution: { taskSupport: "optional" },
  };
}

/** The approval_status tool: what became of a call that parked (the caller's own requests, or any for approvers). */
export const APPROVAL_STATUS: Tool = {
  name: APPROVAL_STATUS_TOOL,
  title: "Approval status",
  description: "Look up an approval request that a tool call of yours parked on (its id is in the call's pending_approval): its state, who approved, and once it ran, its result envelope.",
  inputSchema: { type: "object", properties: { approval_id: { type: "string", pattern: "^apr_[0-9a-f]{16}$", description: "The id from pending_approval.id." } }, required: ["approval_id"], additionalProperties: false },
  annotations: { title: "Approval status", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
};

/** What the view needs. */
export interface ToolViewDeps {
  registry: SkillRegistry;
  hub: Hub;
  dispatcher: Pick<Dispatcher, "preview">;
}

/** The caller's tool list, sorted by name, with approval_status last. */
export function mcpToolView(deps: ToolViewDeps, scope: ToolScope): { tools: McpTool[]; byName: Map<string, BridgedTool> } {
  const bridged = bridgeTools(deps, scope).filter((t) => t.skill.meta.key !== APPROVAL_STATUS_TOOL);
  const tools: McpTool[] = bridged.map((b) => ({ tool: toMcpTool(b), bridged: b }));
  tools.push({ tool: APPROVAL_STATUS });
  return { tools, byName: new Map(bridged.map((b) => [b.skill.meta.key, b])) };
}

/** A digest of a view, to tell whether it changed (notifications/tools/list_changed). */
export function viewDigest(tools: readonly McpTool[]): string {
  const h = createHash("sha256");
  for (const t of tools) h.update(`${t.tool.name}\u0000${t.bridged?.behavior ?? ""}\u0000${t.bridged?.edgeIds.join(",") ?? ""}\u0000${t.tool.description ?? ""}\n`);
  return h.digest("hex");
}
