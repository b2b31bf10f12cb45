/** The rules of mcp.upstreams that its JSON Schema cannot state: across fields and entries. */
import { parseDuration } from "../../skill/duration.ts";
import type { McpUpstreamConfig } from "./schema.ts";
import { urlProblem } from "./url.ts";

/** Longest timeout an upstream may be given (a call's own deadline is at most skills.max_timeout anyway). */
const MAX_TIMEOUT_MS = 24 * 3_600_000;

/**
 * Each problem of the (schema-valid) entries as a line "mcp.upstreams[i].field: what (rule: r)";
 * a line names fields and rules, never a value (an env or header value, or a URL, may be a secret).
 */
export function upstreamProblems(list: readonly McpUpstreamConfig[]): string[] {
  const out: string[] = [];
  const names = new Map<string, number>();
  list.forEach((u, i) => {
    const at = (field?: string) => `mcp.upstreams[${i}]${field ? `.${field}` : ""}`;
    const first = names.get(u.name);
    if (first !== undefined) out.push(`${at("name")}: "${u.name}" is already the name of mcp.upstreams[${first}] (rule: unique)`);
    else names.set(u.name, i);
    // The name is a segment of skill keys (mcp_<name>_<tool>), which join single underscores.
    if (/__|_$/.test(u.name)) out.push(`${at("name")}: must not end with '_' or hold '__': it becomes part of skill keys mcp_<name>_<tool> (rule: key)`);
    const stdio = u.command !== undefined;
    const http = u.url !== undefined;
    if (stdio && http) out.push(`${at()}: has both command (a stdio server) and url (a streamable HTTP server); give one (rule: transport)`);
    if (!stdio && !http) out.push(`${at()}: needs command (a stdio server) or url (a streamable HTTP server) (rule: transport)`);
    if (stdio && !http) {
      for (const f of ["headers", "credential"] as const) {
        if (u[f] !== undefined) out.push(`${at(f)}: applies to a streamable HTTP server (url); a stdio server takes env and cwd (rule: transport)`);
      }
    }
    if (http && !stdio) {
      for (const f of ["env", "cwd"] as const) {
        if (u[f] !== undefined) out.push(`${at(f)}: applies to a stdio server (command); a streamable HTTP server takes headers and credential (rule: transport)`);
      }
      const bad = urlProblem(u.url!);
      if (bad) out.push(`${at("url")}: ${bad.what} (rule: ${bad.rule})`);
    }
    const headerNames = new Map<string, string>();
    for (const name of Object.keys(u.headers ?? {})) {
      const lower = name.toLowerCase();
      const other = headerNames.get(lower);
      if (other !== undefined) out.push(`${at(`headers.${name}`)}: names the same header as headers.${other} (rule: unique)`);
      else headerNames.set(lower, name);
      if (["content-type", "accept", "mcp-session-id", "mcp-protocol-version", "last-event-id", "host", "content-length"].includes(lower)) {
        out.push(`${at(`headers.${name}`)}: is set by the MCP transport itself (rule: reserved_header)`);
      }
    }
    if (u.credential !== undefined && headerNames.has("authorization")) {
      out.push(`${at("credential")}: sends the Authorization header, which headers.${headerNames.get("authorization")} sets too; keep one (rule: conflict)`);
    }
    if (u.timeout !== undefined) {
      let ms: number | undefined;
      try {
        ms = parseDuration(u.timeout);
      } catch (err) {
        out.push(`${at("timeout")}: ${(err as Error).message} (rule: duration)`);
      }
      if (ms !== undefined && ms < 1) out.push(`${at("timeout")}: must be at least 1ms (rule: minimum)`);
      if (ms !== undefined && ms > MAX_TIMEOUT_MS) out.push(`${at("timeout")}: must be at most 24h (rule: maximum)`);
    }
  });
  return out;
}
