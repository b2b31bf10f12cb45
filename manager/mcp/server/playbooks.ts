/**
 * Playbooks for MCP clients (M1): each SKILL.md as a prompt (prompts/get gives its body, the
 * incident and the tools it allows) and as a resource `ongrid://playbooks/<name>` (Markdown).
 * read_skill stays a tool for runtimes without prompts.
 */
import type { GetPromptResult, Prompt, ReadResourceResult, Resource } from "@modelcontextprotocol/sdk/types.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { Playbook } from "../../playbooks/parse.ts";
import type { PlaybookRegistry } from "../../playbooks/registry.ts";

/** The URI scheme and prefix of playbook resources. */
export const PLAYBOOK_URI = "ongrid://playbooks/";

/** The playbooks, sorted by name. */
function all(playbooks: Pick<PlaybookRegistry, "current">): Playbook[] {
  return [...playbooks.current().playbooks.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** prompts/list. */
export function listPrompts(playbooks: Pick<PlaybookRegistry, "current">): Prompt[] {
  return all(playbooks).map((p) => ({
    name: p.name,
    title: p.displayName,
    description: `${p.description} (risk: ${p.riskLevel}; tools: ${p.allowedTools.join(", ") || "none"})`,
    arguments: [
      { name: "incident", description: "What is wrong, in your words (an alert, a symptom).", required: false },
      { name: "edge_id", description: "The edge the incident is on, when known.", required: false },
    ],
  }));
}

/** The playbook as the Markdown a model reads: its body under a header naming the tools it allows. */
export function playbookText(p: Playbook): string {
  return `# ${p.displayName} (${p.name})\n\nAllowed tools: ${p.allowedTools.map((t) => `\`${t}\``).join(", ") || "none"}. Risk: ${p.riskLevel}.\n\n${p.body}\n`;
}

function find(playbooks: Pick<PlaybookRegistry, "get">, name: string): Playbook {
  const p = playbooks.get(name);
  if (!p) throw new McpError(ErrorCode.InvalidParams, `unknown playbook "${name.slice(0, 64)}" (prompts/list shows the playbooks)`);
  return p;
}

/** Bounds what a prompt argument may put into the text. */
const arg = (v: unknown, max: number): string => (typeof v === "string" ? v.slice(0, max) : "");

/** prompts/get. */
export function getPrompt(playbooks: Pick<PlaybookRegistry, "get">, name: string, args: Record<string, unknown> = {}): GetPromptResult {
  const p = find(playbooks, name);
  const incident = arg(args.incident, 4000);
  const edge = arg(args.edge_id, 128);
  const task = incident ? `Diagnose this incident${edge ? ` on edge ${edge}` : ""}: ${incident}\n\n` : edge ? `Diagnose edge ${edge}.\n\n` : "";
  return {
    description: p.description,
    messages: [
      {
        role: "user",
        content: {
          type: "text",
          text: `${task}Follow the playbook below. Call only the tools it allows; calls that change a host wait for a human approver, and every call is audited.\n\n${playbookText(p)}`,
        },
      },
    ],
  };
}

/** resources/list. */
export function listResources(playbooks: Pick<PlaybookRegistry, "current">): Resource[] {
  return all(playbooks).map((p) => ({ uri: `${PLAYBOOK_URI}${p.name}`, name: p.name, title: p.displayName, description: p.description, mimeType: "text/markdown" }));
}

/** resources/read. */
export function readResource(playbooks: Pick<PlaybookRegistry, "get">, uri: string): ReadResourceResult {
  if (!uri.startsWith(PLAYBOOK_URI)) throw new McpError(ErrorCode.InvalidParams, `unknown resource "${uri.slice(0, 128)}": resources are ${PLAYBOOK_URI}<name>`);
  const p = find(playbooks, uri.slice(PLAYBOOK_URI.length));
  return { contents: [{ uri, mimeType: "text/markdown", text: playbookText(p) }] };
}

/** A digest of the playbooks' names and fingerprints (prompts and resources list_changed). */
export function playbooksDigest(playbooks: Pick<PlaybookRegistry, "current">): string {
  return all(playbooks).map((p) => `${p.name}:${p.fingerprint}`).join("\n");
}
