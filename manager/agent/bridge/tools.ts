/**
 * The bridge (J1): skills become OpenAI function tools from their metadata alone. Host skills get
 * a required `edge_id` first; raw schemas go through verbatim; only the tools the gate would let
 * this session use are listed — a denied tool is never shown to the model.
 */
import type { Skill } from "../../../skill/types.ts";
import type { Dispatcher } from "../../calls/execute.ts";
import type { Caller } from "../../identity/caller.ts";
import type { PermissionMode } from "../../calls/gate.ts";
import { reaches } from "../../identity/reach.ts";
import { listInventory } from "../../fleet/inventory.ts";
import type { SkillRegistry } from "../../../skill/registry.ts";
import type { Hub } from "../../fleet/hub.ts";

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

/** How the executor shows its tools (agent.tool_list). */
export type ToolListMode = "full" | "on_demand";

/** The executor's function for loading tool definitions on demand (agent.tool_list on_demand; not a skill, not audited). */
export const LOAD_TOOLS = "load_tools";
/** Most tools one load_tools call loads. */
export const MAX_LOAD = 10;
const CATALOGUE_DESCRIPTION_CHARS = 100;

/** A tool's catalogue line: its name, the first sentence of its description (at most 100 characters), class and scope. */
export function catalogueLine(t: BridgedTool): string {
  const m = t.skill.meta;
  const first = /^[\s\S]*?[.!?](?=\s|$)/.exec(m.description.trim())?.[0] ?? m.description.trim();
  const short = first.length > CATALOGUE_DESCRIPTION_CHARS ? `${first.slice(0, CATALOGUE_DESCRIPTION_CHARS - 1).trimEnd()}…` : first;
  return `${m.key}: ${short.replace(/\s+/g, " ")} [${m.dynamicRisk ? `${m.class} at most` : m.class}, ${m.scope}]`;
}

/**
 * load_tools over the tools not loaded yet: the catalogue (one line each) in its description and
 * their names as the enum of its one parameter.
 */
export function loadToolsTool(notLoaded: readonly BridgedTool[]): FunctionTool {
  return {
    type: "function",
    function: {
      name: LOAD_TOOLS,
      description: `Load the definitions (parameters) of tools you will call; loaded tools stay available for the rest of the session. Tools you may load:\n${notLoaded.map((t) => `- ${catalogueLine(t)}`).join("\n")}`,
      parameters: {
        type: "object",
        additionalProperties: false,
        required: ["names"],
        properties: { names: { type: "array", minItems: 1, maxItems: MAX_LOAD, uniqueItems: true, items: { type: "string", enum: notLoaded.map((t) => t.skill.meta.key) } } },
      },
    },
  };
}

/**
 * The skill tools of an executor request: every offered tool in full ("full"), or ("on_demand")
 * the loaded ones in full plus load_tools cataloguing the rest, in the order offered.
 */
export function executorTools(offered: ReadonlyMap<string, BridgedTool>, mode: ToolListMode, loaded: ReadonlySet<string>): FunctionTool[] {
  if (mode === "full") return [...offered.values()].map((t) => t.tool);
  const full: FunctionTool[] = [];
  const rest: BridgedTool[] = [];
  for (const t of offered.values()) (loaded.has(t.skill.meta.key) ? full.push(t.tool) : rest.push(t));
  if (rest.length) full.push(loadToolsTool(rest));
  return full;
}

/** The tools a plan's text names (whole words), to load before the first turn. */
export function toolsNamedIn(text: string, offered: ReadonlyMap<string, BridgedTool>): Set<string> {
  const words = new Set(text.match(/[A-Za-z0-9_-]+/g) ?? []);
  return new Set([...offered.keys()].filter((k) => words.has(k)));
}
