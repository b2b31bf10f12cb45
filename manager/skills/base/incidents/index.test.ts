import pino from "pino";
import { describe, expect, it } from "vitest";
import { lintSkill } from "../../../../skill/lint.ts";
import { createRegistry } from "../../../../skill/registry.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { createIncidentTools } from "./index.ts";
import { createHelpersTools } from "../helpers/index.ts";

const deps = { database: { db: {} } } as unknown as BaseToolDeps;

describe("the incident tools (K3) and the agent helpers (K4)", () => {
  const incidents = createIncidentTools(deps);
  const helpers = createHelpersTools(deps);

  it("are the K3 incident set and the K4 set, all safe manager skills with tight schemas that compile", () => {
    const registry = createRegistry({ log: pino({ level: "silent" }) });
    for (const t of [...incidents, ...helpers]) registry.register(t);
    expect(incidents.map((t) => t.key)).toEqual(["query_incidents", "get_incident_detail", "query_change_events", "correlate_incident"]);
    expect(helpers.map((t) => t.key)).toEqual(["send_message", "task_stop", "agent_tool"]);
    for (const t of incidents) expect(registry.get(t.key)!.meta).toMatchObject({ class: "safe", scope: "manager", category: "observability" });
    expect(helpers.map((t) => registry.get(t.key)!.meta.category)).toEqual(["notification", "agent", "agent"]);
    for (const t of [...incidents, ...helpers]) {
      const s = registry.get(t.key)!;
      expect(s.meta).toMatchObject({ class: "safe", scope: "manager" });
      expect(s.jsonSchema).toMatchObject({ type: "object", additionalProperties: false });
    }
  });

  it("pass the new-tool checklist without a finding", () => {
    expect([...incidents, ...helpers].flatMap((t) => lintSkill(t))).toEqual([]);
  });
});
