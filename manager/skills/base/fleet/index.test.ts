import pino from "pino";
import { describe, expect, it } from "vitest";
import { lintSkill } from "../../../../skill/lint.ts";
import { createRegistry } from "../../../../skill/registry.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { createFleetTools } from "./index.ts";

const tools = createFleetTools({} as BaseToolDeps);

describe("the fleet tools", () => {
  it("are the K1 set, safe, scope manager, category fleet, and register with schemas that compile", () => {
    const registry = createRegistry({ log: pino({ level: "silent" }) });
    for (const t of tools) registry.register(t);
    expect(tools.map((t) => t.key)).toEqual(["query_edges", "get_edge_summary", "fleet_host_load", "fleet_host_processes", "fleet_host_files", "find_outlier_edges", "rank_edges"]);
    for (const t of tools) {
      const s = registry.get(t.key)!;
      expect(s.meta).toMatchObject({ class: "safe", scope: "manager", category: "fleet" });
      // Tight schemas: an unknown param is refused, never silently dropped.
      expect(s.jsonSchema).toMatchObject({ type: "object", additionalProperties: false });
    }
  });

  it("pass the new-tool checklist: no errors, and only fleet_host_files' path waived, with its reason", () => {
    const findings = tools.flatMap((t) => lintSkill(t));
    expect(findings.filter((f) => f.severity === "error")).toEqual([]);
    expect(findings).toEqual([
      { key: "fleet_host_files", rule: "no-arbitrary-file", severity: "warning", message: expect.stringMatching(/param "path".*\(waived: path is read on the edges by host_files, inside each edge's allowed roots/) },
    ]);
  });
});
