/** The manager's base tools (K1–K5): fleet, knowledge, observability, incidents, topology and agent helpers, listed here once. */
import type { SkillDefinition } from "../../skill/types.ts";
import type { BaseToolDeps } from "./deps.ts";
import { createFleetTools } from "./base/fleet/index.ts";
import { createKnowledgeTools } from "./base/knowledge/index.ts";
import { createObservabilityTools } from "./base/observability/index.ts";
import { createHelpersTools } from "./base/helpers/index.ts";
import { createIncidentTools } from "./base/incidents/index.ts";
import { createTopologyTools } from "./base/topology/index.ts";
import { pino } from "pino";
import { loadConfig } from "../config/load.ts";
import type { ManagerConfig } from "../config/schema.ts";

/** Every base tool, bound to the manager's parts. */
export function createBaseTools(deps: BaseToolDeps): SkillDefinition<any>[] {
  return [...createFleetTools(deps), ...createKnowledgeTools(deps), ...createObservabilityTools(deps), ...createIncidentTools(deps), ...createTopologyTools(deps), ...createHelpersTools(deps)];
}

/**
 * The base tools' declarations alone, for `ongrid skills lint`: bound to the default configuration
 * and to parts that refuse any use (linting reads metadata; it never runs a tool or opens a database).
 */
export function baseToolDeclarations(config: ManagerConfig = loadConfig({ env: {} })): SkillDefinition<any>[] {
  // Reading a part's property is allowed (factories keep references, e.g. database.db); calling anything throws.
  const inert = (part: string): any =>
    new Proxy(function () {}, {
      get: (_t, prop) => (prop === "then" ? undefined : inert(`${part}.${String(prop)}`)),
      apply() {
        throw new Error(`base tool declarations: ${part}() called while only declaring the tools`);
      },
      construct() {
        throw new Error(`base tool declarations: new ${part}() while only declaring the tools`);
      },
    });
  const deps = {
    hub: inert("hub"),
    edges: inert("edges"),
    dispatcher: inert("dispatcher"),
    database: inert("database"),
    audit: inert("audit"),
    approvals: inert("approvals"),
    config,
    log: pino({ level: "silent" }),
    agent: () => undefined,
  } as unknown as BaseToolDeps;
  return createBaseTools(deps);
}
