/**
 * An upstream's tools/call result as the output of an ongrid call (A5): its structured content when
 * it has some, else its text; images, audio and resources are named and sized, never dumped. A
 * result the upstream marks isError is a failure the caller can read: upstream_error with its text.
 */
import { scrubSecrets, type InjectedSecret } from "../../../skill/credential.ts";
import { SkillError } from "../../../skill/errors.ts";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { cleanText } from "./secrets.ts";

type Block = CallToolResult["content"][number];

/** The output for a successful result; throws SkillError("upstream_error") for one marked isError. Secrets the upstream was given are scrubbed. */
export function toolOutput(upstream: string, tool: string, result: CallToolResult, secrets: readonly InjectedSecret[]): unknown {
  const text = (result.content ?? []).map(describeBlock).join("\n");
  if (result.isError) {
    throw new SkillError(
      "upstream_error",
      `the upstream MCP server "${upstream}" reported a failure of its tool "${tool}": ${cleanText(text || "(no message)", secrets)}`,
      "read the upstream's message: fix the params it names, or retry if it says the failure is temporary",
      result.structuredContent !== undefined ? scrubSecrets(result.structuredContent, secrets) : undefined,
    );
  }
  if (result.structuredContent !== undefined) return scrubSecrets(result.structuredContent, secrets);
  return scrubSecrets(text, secrets);
}

/** One content block as text: text as it is, anything else as a one-line summary. */
function describeBlock(b: Block): string {
  switch (b.type) {
    case "text":
      return b.text;
    case "image":
    case "audio":
      return `[${b.type} ${b.mimeType}, ${base64Bytes(b.data)} bytes, not shown]`;
    case "resource_link":
      return `[resource link ${b.uri}${b.name ? ` "${b.name}"` : ""}${b.mimeType ? ` (${b.mimeType})` : ""}]`;
    case "resource": {
      const r = b.resource;
      const size = "text" in r && typeof r.text === "string" ? `${Buffer.byteLength(r.text)} bytes of text` : "blob" in r && typeof r.blob === "string" ? `${base64Bytes(r.blob)} bytes` : "empty";
      return `[resource ${r.uri}${r.mimeType ? ` (${r.mimeType})` : ""}, ${size}, not shown]`;
    }
    default:
      return `[${String((b as { type?: unknown }).type)} content, not shown]`;
  }
}

/** Decoded size of base64 text. */
function base64Bytes(data: string): number {
  const pad = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - pad);
}
