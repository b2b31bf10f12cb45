/**
 * The class of an upstream tool. Annotations are the upstream's claims, not facts: without
 * trust_annotations every tool is mutating (a human approves each call); with it, a tool that
 * says readOnlyHint and does not say destructiveHint is safe. The operator's per-tool class wins.
 */
import type { SkillClass } from "../../../skill/types.ts";
import type { UpstreamSpec } from "./spec.ts";

/** The class and why, for a tool as the upstream lists it. */
export function toolClass(tool: { name: string; annotations?: { readOnlyHint?: unknown; destructiveHint?: unknown } }, spec: Pick<UpstreamSpec, "classes" | "trustAnnotations">): { cls: SkillClass; why: string } {
  const set = spec.classes.get(tool.name);
  if (set) return { cls: set, why: "set in mcp.upstreams classes" };
  if (!spec.trustAnnotations) return { cls: "mutating", why: "default for an upstream whose annotations are not trusted" };
  const a = tool.annotations ?? {};
  if (a.readOnlyHint === true && a.destructiveHint !== true) return { cls: "safe", why: "readOnlyHint from a trusted upstream" };
  return { cls: "mutating", why: a.readOnlyHint === true ? "readOnlyHint with destructiveHint" : "not marked read-only" };
}
