/** An upstream tool's skill key: mcp_<upstream>_<tool in lower_snake>, or why its name cannot be one. */
import { SKILL_KEY_PATTERN } from "../../../skill/registry.ts";

/** Longest upstream tool name taken (the MCP spec asks for at most 128 characters). */
const MAX_TOOL_NAME = 128;
/** Longest tool part of a key. */
const MAX_TOOL_PART = 64;
/** What a mappable tool name is made of: the MCP spec's A-Z a-z 0-9 _ - . plus '/' and space, which some servers use. */
const MAPPABLE = /^[A-Za-z0-9_.\-/ ]+$/;

/** A tool name as a short, printable quote for a report. */
export function quoteToolName(name: unknown): string {
  if (typeof name !== "string") return typeof name;
  const printable = name.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/gu, "\uFFFD");
  return JSON.stringify(printable.length > 80 ? `${printable.slice(0, 80)}…` : printable);
}

/** The skill key of `tool` on upstream `upstream`, or the reason there is none (camelCase, '-', '.', '/' and spaces become '_'). */
export function toolKey(upstream: string, tool: unknown): { key: string } | { problem: string } {
  if (typeof tool !== "string" || tool === "") return { problem: "it has no name" };
  if (tool.length > MAX_TOOL_NAME) return { problem: `its name is ${tool.length} characters long (at most ${MAX_TOOL_NAME})` };
  if (!MAPPABLE.test(tool)) return { problem: `its name has characters other than A-Z, a-z, 0-9, '_', '-', '.', '/' and space` };
  const snake = tool
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "");
  if (!snake) return { problem: "its name has no letter or digit" };
  if (snake.length > MAX_TOOL_PART) return { problem: `its name makes a key part of ${snake.length} characters (at most ${MAX_TOOL_PART})` };
  const key = `mcp_${upstream}_${snake}`;
  if (!SKILL_KEY_PATTERN.test(key)) return { problem: `its name does not make a lower_snake key ("${key}")` };
  return { key };
}
