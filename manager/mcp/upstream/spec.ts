/** One mcp.upstreams entry as the supervisor uses it: the transport spelled out, durations in ms, overrides by tool. */
import { basename } from "node:path";
import { parseDuration } from "../../../skill/duration.ts";
import type { SkillClass } from "../../../skill/types.ts";
import type { McpSecretValue, McpUpstreamConfig } from "../../config/schema.ts";

/** How to reach an upstream: a process spoken to over stdio, or a streamable HTTP endpoint. */
export type UpstreamTransportSpec =
  | { kind: "stdio"; command: string; args: string[]; env: Readonly<Record<string, McpSecretValue>>; cwd?: string }
  | { kind: "http"; url: URL; headers: Readonly<Record<string, McpSecretValue>> };

/** An enabled upstream, ready to be connected. */
export interface UpstreamSpec {
  name: string;
  transport: UpstreamTransportSpec;
  /** Whether a tool's readOnlyHint may make it safe (docs/mcp-upstreams.md, "Classes"). */
  trustAnnotations: boolean;
  /** Per upstream tool name (as the server spells it): the class the operator set. */
  classes: ReadonlyMap<string, SkillClass>;
  /** The longest one call may take on this upstream; undefined: the call's own deadline. */
  timeoutMs?: number;
  /** What logs may say of the target: the program's base name, or the URL without query and credentials. */
  target: string;
}

/** The enabled entries of mcp.upstreams (already validated by the config loader), in order. */
export function upstreamSpecs(entries: readonly McpUpstreamConfig[]): UpstreamSpec[] {
  return entries.filter((e) => e.enabled !== false).map(upstreamSpec);
}

/** One entry as a spec; the top-level `credential` becomes an Authorization header. */
export function upstreamSpec(e: McpUpstreamConfig): UpstreamSpec {
  const base = {
    name: e.name,
    trustAnnotations: e.trust_annotations === true,
    classes: new Map(Object.entries(e.classes ?? {})),
    ...(e.timeout !== undefined ? { timeoutMs: parseDuration(e.timeout) } : {}),
  };
  if (e.command !== undefined) {
    const [command, ...args] = e.command;
    return {
      ...base,
      transport: { kind: "stdio", command: command!, args, env: { ...(e.env ?? {}) }, ...(e.cwd !== undefined ? { cwd: e.cwd } : {}) },
      target: basename(command!),
    };
  }
  const url = new URL(e.url!);
  const headers: Record<string, McpSecretValue> = { ...(e.headers ?? {}) };
  if (e.credential !== undefined) headers.Authorization = { credential: e.credential, prefix: "Bearer " };
  return { ...base, transport: { kind: "http", url, headers }, target: `${url.origin}${url.pathname}` };
}
