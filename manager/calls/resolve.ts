/**
 * What a call is before it runs (B3): its params parsed, its deadline bounded, where it goes (in
 * process or down an edge's tunnel, within the caller's reach) and what the gate says of it.
 */
import { OngridError } from "../../skill/errors.ts";
import { parseDuration } from "../../skill/duration.ts";
import type { Skill, SkillClass } from "../../skill/types.ts";
import { reaches } from "../identity/reach.ts";
import { decide, policyFromConfig, type PermissionDecision } from "./gate.ts";
import type { DispatcherDeps, ExecuteInput } from "./types.ts";

/** Where a call goes: in process, or down one edge's tunnel. */
export type Target = { skill: Skill; edgeId: string; labels: Readonly<Record<string, string>> };

/** What the gate is asked with besides the skill: who, in which mode, under which playbook. */
export type GateInput = Pick<ExecuteInput, "caller" | "mode" | "whitelist" | "playbook">;

/** Creates the resolver over the registry, the hub and the edge store. */
export function createResolver({ registry, hub, edges, config, playbooks }: Pick<DispatcherDeps, "registry" | "hub" | "edges" | "config" | "playbooks">) {
  const defaultTimeout = parseDuration(config.skills.default_timeout);
  const maxTimeout = parseDuration(config.skills.max_timeout);
  const policy = policyFromConfig(config.gate);

  /** The call's deadline: the default when none is asked for, refused above skills.max_timeout. */
  function resolveTimeout(requested: number | undefined): number {
    if (!requested) return defaultTimeout;
    if (requested > maxTimeout) {
      throw new OngridError(
        "invalid_argument",
        `timeout_ms: must be <= ${maxTimeout} (rule: maximum; skills.max_timeout is ${config.skills.max_timeout})`,
        "ask for a shorter deadline or raise skills.max_timeout",
      );
    }
    return requested;
  }

  /** The params as a JSON value (params_json parsed here, so a malformed document is refused and audited). */
  function parseParams(input: Pick<ExecuteInput, "params" | "paramsJson">): unknown {
    if (input.paramsJson === undefined) return input.params ?? {};
    if (input.paramsJson.trim() === "") return {};
    try {
      return JSON.parse(input.paramsJson);
    } catch (err) {
      // The parser's message quotes the text around the fault, which may be part of a secret:
      // report only where it failed.
      const at = /position (\d+)/.exec((err as Error).message)?.[1];
      throw new OngridError(
        "invalid_argument",
        `params_json: is not valid JSON (rule: json)${at ? ` at position ${at}` : ""}`,
        "send the params as a JSON object, e.g. {\"query\": \"nginx 502\"}",
      );
    }
  }

  const unknownEdge = (edgeId: string) => new OngridError("not_found", `unknown edge "${edgeId}"`, "ListEdges shows the enrolled edges");

  /**
   * Resolves where a call goes — at once for a manager skill or an online edge, after a lookup of
   * the edge's row otherwise (to say why it cannot run). An edge outside the caller's reach is
   * answered exactly like an unknown one.
   */
  function resolveTarget(input: Pick<ExecuteInput, "key" | "edgeId" | "caller">): Target | Promise<Target> {
    if (!input.key) throw new OngridError("invalid_argument", "key: is required (rule: required)", "name a skill; ListSkills shows the keys");
    const local = registry.get(input.key);
    if (local) {
      if (input.edgeId) {
        throw new OngridError(
          "invalid_argument",
          `edge_id: must be empty for the manager-scope skill "${local.meta.key}" (rule: scope)`,
          "leave edge_id out; this skill runs inside the manager",
        );
      }
      return { skill: local, edgeId: "", labels: {} };
    }
    // Every online edge in the caller's reach: only for the error paths (O(edges); a call to a
    // named edge must not scan the fleet, or a fan-out to N edges costs N²).
    const visible = () => hub.sessions().filter((s) => reaches(input.caller, s.hello.labels));
    if (!input.edgeId) {
      const offeredBy = visible().filter((s) => s.skills.has(input.key)).map((s) => s.edgeId);
      if (!offeredBy.length) return { skill: registry.getOrThrow(input.key), edgeId: "", labels: {} };
      throw new OngridError(
        "invalid_argument",
        `edge_id: is required for the host skill "${input.key}" (rule: required)`,
        `online edges offering it: ${offeredBy.slice(0, 10).join(", ")}${offeredBy.length > 10 ? ", …" : ""}`,
      );
    }
    const edgeId = input.edgeId;
    const session = hub.session(edgeId);
    if (!session) {
      return edges.get(edgeId).then((row) => {
        if (!row || row.revokedAt || !reaches(input.caller, row.labels)) throw unknownEdge(edgeId);
        const seen = row.lastSeenAt ? `last seen ${row.lastSeenAt.toISOString()}` : "never connected";
        throw new OngridError("unavailable", `edge "${edgeId}" is offline (${seen})`, "retry when the edge is back online, or pick another edge");
      });
    }
    if (!reaches(input.caller, session.hello.labels)) throw unknownEdge(input.edgeId);
    const skill = session.skills.get(input.key);
    if (!skill) {
      if (!visible().some((s) => s.skills.has(input.key))) registry.getOrThrow(input.key);
      throw new OngridError(
        "failed_precondition",
        `edge "${input.edgeId}" does not offer skill "${input.key}"`,
        "GetEdge lists the skills an edge offers; ListSkills shows which edges offer a key",
      );
    }
    return { skill, edgeId: input.edgeId, labels: session.hello.labels };
  }

  /** The gate's decision on a skill of class `cls` for this caller, mode and playbook (an unknown playbook is refused). */
  function gateOf(input: GateInput, skill: Skill, cls: SkillClass): PermissionDecision {
    let whitelist = input.whitelist;
    if (input.playbook) {
      const playbook = playbooks?.get(input.playbook);
      if (!playbook) throw new OngridError("invalid_argument", `playbook: "${input.playbook.slice(0, 64)}" is not a loaded playbook (rule: known)`, "ListPlaybooks shows the loaded playbooks");
      // Both given: only what both allow.
      whitelist = whitelist ? whitelist.filter((k) => playbook.allowedTools.includes(k)) : playbook.allowedTools;
    }
    const { caller } = input;
    const role = caller.role === "system" && caller.onBehalfRole === "viewer" ? "viewer" : caller.role;
    return decide({ key: skill.meta.key, cls, mode: input.mode ?? config.gate.default_mode, role, whitelist, policy });
  }

  return { resolveTimeout, parseParams, resolveTarget, gateOf };
}

/** The resolver's interface. */
export type Resolver = ReturnType<typeof createResolver>;
