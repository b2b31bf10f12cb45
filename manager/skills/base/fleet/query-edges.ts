/** query_edges (K1): the enrolled edges the caller may reach, filtered by labels, state and offered skill. */
import { SKILL_KEY_PATTERN } from "../../../../skill/registry.ts";
import { reaches } from "../../../identity/reach.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { defineBaseTool } from "../../define.ts";
import { invocationOf } from "../../invocation.ts";
import { SELECTOR_SCHEMA, selectorParam } from "./targets.ts";

interface Params {
  selector?: string;
  state: "online" | "offline" | "any";
  skill?: string;
  limit: number;
}

/** The skill keys in an edge row's last hello (the contract's Metadata as JSON). */
function storedKeys(skills: unknown[]): string[] {
  return skills.flatMap((s) => (typeof (s as { key?: unknown })?.key === "string" ? [(s as { key: string }).key] : []));
}

/** Creates query_edges over the edge store and the hub. */
export function createQueryEdges(deps: Pick<BaseToolDeps, "hub" | "edges">) {
  return defineBaseTool<Params>({
    key: "query_edges",
    name: "Query edges",
    description:
      "List the edges (fleet hosts) you may reach with their id, online state, labels, hostname, OS, agent version, last seen time and number of skills, filtered by label selector, state (online, offline, any) and a skill they offer. Use to find which hosts exist, which are down or which offer a given skill, first, before calling host skills or other fleet tools on them. Revoked edges are not listed.",
    class: "safe",
    category: "fleet",
    schema: {
      type: "object",
      properties: {
        selector: SELECTOR_SCHEMA,
        state: { type: "string", enum: ["online", "offline", "any"], default: "any", description: "online: connected now; offline: enrolled but not connected; any: both." },
        skill: { type: "string", pattern: SKILL_KEY_PATTERN.source, maxLength: 128, description: "Only edges that offer this skill key, e.g. host_load (for an offline edge: as of its last connection)." },
        limit: { type: "integer", minimum: 1, maximum: 1000, default: 100, description: "Most edges to return, by id; matched says how many there are in all." },
      },
      additionalProperties: false,
    },
    resultPreview: {
      edges: [
        { id: "web-1", online: true, labels: { team: "payments", env: "prod" }, hostname: "web-1.internal", os: "linux/x64", version: "0.1.0", last_seen: "2025-01-31T14:02:11.000Z", skill_count: 17 },
        { id: "web-2", online: false, labels: { team: "payments", env: "prod" }, hostname: "web-2.internal", os: "linux/x64", version: "0.1.0", last_seen: "2025-01-30T22:41:05.000Z", skill_count: 17 },
      ],
      matched: 2,
      returned: 2,
      online: 1,
      offline: 1,
    },
    async execute(ctx, params) {
      const { caller } = invocationOf(ctx);
      const selector = selectorParam(params.selector);
      const rows = await deps.edges.list();
      const out = [];
      for (const row of rows) {
        if (row.revokedAt) continue;
        const live = deps.hub.session(row.id);
        const labels = live ? { ...live.hello.labels } : row.labels;
        if (!reaches(caller, labels) || !selector.matches(labels)) continue;
        if (params.state === "online" && !live) continue;
        if (params.state === "offline" && live) continue;
        const keys = live ? [...live.skills.keys()] : storedKeys(row.skills);
        if (params.skill && !keys.includes(params.skill)) continue;
        const lastSeen = live ? new Date(live.lastHeard) : row.lastSeenAt;
        out.push({
          id: row.id,
          online: Boolean(live),
          labels,
          hostname: live?.hello.hostname ?? row.hostname,
          os: live?.hello.os ?? row.os,
          version: live?.hello.version ?? row.version,
          last_seen: lastSeen ? lastSeen.toISOString() : null,
          skill_count: keys.length,
        });
      }
      const online = out.filter((e) => e.online).length;
      const edges = out.slice(0, params.limit);
      return { edges, matched: out.length, returned: edges.length, online, offline: out.length - online };
    },
  });
}
