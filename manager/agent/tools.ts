/**
 * The bridge (J1): skills become OpenAI function tools from their metadata alone. Host skills get
 * a required `edge_id` first; raw schemas go through verbatim; only the tools the gate would let
 * this session use are listed — a denied tool is never shown to the model.
 */
import type { Skill } from "../../skill/types.ts";
import type { Caller, Dispatcher } from "../dispatch/dispatch.ts";
import type { PermissionMode } from "../gate/gate.ts";
import { reaches } from "../identity/reach.ts";
import { listInventory } from "../registry/inventory.ts";
import type { SkillRegistry } from "../../skill/registry.ts";
import type { Hub } from "../tunnel/hub.ts";

/** One tool in the OpenAI chat-completions shape. */
export interface FunctionTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** A listed tool and what it maps to. */
export interface BridgedTool {
  tool: FunctionTool;
  skill: Skill;
  /** Edges in the caller's reach offering it (empty for manager skills). */
  edgeIds: string[];
  /** allow: runs when called; ask: parks for approval when called. */
  behavior: "allow" | "ask";
}

/** What decides the list: who, in which mode, under which playbook. */
export interface ToolScope {
  caller: Caller;
  mode?: PermissionMode;
  playbook?: string;
  /** Layer 0 inherited from a parent session's playbook; intersected with `playbook`'s allowed_tools by the gate. */
  whitelist?: readonly string[];
}

/** OpenAI function names: letters, digits, _ and -, at most 64; skill keys always are. */
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_EDGES_NAMED = 20;

/** The function tool of one skill; host skills take edge_id first, offered by the edges named in its description. */
export function toFunctionTool(skill: Skill, edgeIds: readonly string[]): FunctionTool {
  const m = skill.meta;
  let parameters = skill.jsonSchema;
  if (m.scope === "host") {
    const props = (parameters.properties ?? {}) as Record<string, unknown>;
    const named = edgeIds.slice(0, MAX_EDGES_NAMED).join(", ") + (edgeIds.length > MAX_EDGES_NAMED ? ", …" : "");
    parameters = {
      ...parameters,
      type: "object",
      properties: { edge_id: { type: "string", description: `Edge to run on${named ? `: one of ${named}` : ""}.` }, ...props },
      required: ["edge_id", ...(((parameters.required as string[] | undefined) ?? []).filter((r) => r !== "edge_id"))],
    };
  }
  const cls = m.dynamicRisk ? `${m.class} at most; the class depends on the arguments` : m.class;
  return { type: "function", function: { name: m.key, description: `${m.description} [class: ${cls}; scope: ${m.scope}]`, parameters } };
}

/** The tools this session may see, sorted by name. */
export function bridgeTools(deps: { registry: SkillRegistry; hub: Hub; dispatcher: Pick<Dispatcher, "preview"> }, scope: ToolScope): BridgedTool[] {
  const out: BridgedTool[] = [];
  for (const { skill, edgeIds } of listInventory(deps.registry, deps.hub, { visible: (labels) => reaches(scope.caller, labels) })) {
    if (!NAME.test(skill.meta.key)) continue;
    const d = deps.dispatcher.preview(skill, scope);
    if (d.behavior === "deny") continue;
    out.push({ tool: toFunctionTool(skill, edgeIds), skill, edgeIds, behavior: d.behavior });
  }
  return out;
}
