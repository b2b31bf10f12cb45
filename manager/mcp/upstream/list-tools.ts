/**
 * tools/list on an upstream, page by page, each tool checked on its own: the SDK's listTools
 * refuses the whole list for one malformed tool, and a hostile server must cost only its bad tools.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ResultSchema, ToolSchema } from "@modelcontextprotocol/sdk/types.js";
import { quoteToolName } from "./tool-key.ts";
import type { UpstreamTool } from "./tool-skill.ts";

/** Most tools taken from one upstream. */
export const MAX_TOOLS = 512;
/** Most tools/list pages read. */
const MAX_PAGES = 32;

/** The tools an upstream lists that ongrid can call, and one line per tool (or page) it cannot. */
export async function listTools(client: Client, timeoutMs: number): Promise<{ tools: UpstreamTool[]; problems: string[] }> {
  const tools: UpstreamTool[] = [];
  const problems: string[] = [];
  if (!client.getServerCapabilities()?.tools) return { tools, problems: ["the server declares no tools capability: it offers no tools"] };
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const res = (await client.request({ method: "tools/list", params: cursor !== undefined ? { cursor } : {} }, ResultSchema, { timeout: timeoutMs })) as { tools?: unknown; nextCursor?: unknown };
    if (!Array.isArray(res.tools)) {
      problems.push("tools/list answered without a tools array");
      return { tools, problems };
    }
    for (const raw of res.tools as unknown[]) {
      const name = (raw as { name?: unknown } | null)?.name;
      if (tools.length >= MAX_TOOLS) {
        problems.push(`tool ${quoteToolName(name)} and any after it: skipped: more than ${MAX_TOOLS} tools`);
        return { tools, problems };
      }
      const parsed = ToolSchema.safeParse(raw);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        problems.push(`tool ${quoteToolName(name)}: skipped: not a valid tool definition (${issue ? `${issue.path.join(".") || "(tool)"}: ${issue.message}` : "invalid"})`);
        continue;
      }
      if (parsed.data.execution?.taskSupport === "required") {
        problems.push(`tool ${quoteToolName(name)}: skipped: it runs only as an MCP task, which ongrid does not use`);
        continue;
      }
      tools.push(parsed.data as UpstreamTool);
    }
    if (typeof res.nextCursor !== "string" || res.nextCursor === "" || res.nextCursor === cursor) return { tools, problems };
    cursor = res.nextCursor;
  }
  problems.push(`tools/list: more than ${MAX_PAGES} pages; the rest are skipped`);
  return { tools, problems };
}
