/**
 * L2 recall (I3/J2): the pages the router recalls reach the planner whole (bounded), and the report
 * names them — on the model path and on the fallback path — through a real manager.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { AgentEvent } from "../manager/agent/session/events.ts";
import { RECALLED_PAGE_CHARS } from "../manager/agent/session/planner.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startScriptedModel, type Reply, type ScriptedModel } from "./support/openai-server.ts";

const OPERATOR = { userId: "recall-op", role: "operator" } as never;
let dir: string;
let model: ScriptedModel;
let withModel: TestManager;
let withoutModel: TestManager;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ongrid-recall-e2e-"));
  writeFileSync(
    join(dir, "2024-03-redis.md"),
    "---\ntitle: Redis timeouts on cache hosts\nsummary: conntrack table full dropped new connections\nplaybook: network_diagnosis\n---\n# Redis timeouts\n\nOn cache-1 the conntrack table was full (nf_conntrack: table full, dropping packet); raised nf_conntrack_max to 262144. PAGE-BODY-MARKER\n",
  );
  writeFileSync(join(dir, "2024-05-disk.md"), `# Disk full on db-2\n\nWAL files filled /var on db-2. ${"filler ".repeat(2000)}TAIL-BEYOND-BOUND\n`);
  writeFileSync(join(dir, "unrelated.md"), "# Printer jam\n\nThe office printer jammed again.\n");
  model = await startScriptedModel(
    Array.from({ length: 100 }, () => (body: any): Reply => {
      const schema = body.response_format?.json_schema?.name;
      if (schema === "route_choice") return { json: { is_oncall: true, skill_name: "network_diagnosis", confidence: 0.9, reason: "redis timeouts" } };
      if (schema === "diagnosis_plan") return { json: { reason: "as last time", plan: ["check conntrack"] } };
      if (schema === "verdict") return { json: { verdict: "supported", unsupported_claims: [], notes: "" } };
      return { content: "# Report\n\nNo evidence gathered." };
    }),
  );
  withModel = await bootManager({ "router.recall_dir": dir, "model.base_url": model.url, "model.model": "recall-test", "model.max_retries": 0 });
  withoutModel = await bootManager({ "router.recall_dir": dir });
}, 60_000);
afterAll(async () => {
  await withModel?.stop();
  await withoutModel?.stop();
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function run(m: TestManager, text: string): Promise<AgentEvent[]> {
  const out: AgentEvent[] = [];
  for await (const ev of m.agent.diagnose({ text, user: OPERATOR })) out.push(ev);
  return out;
}

describe("recalled past diagnoses", () => {
  test("reach the planner whole and bounded, and the report names them, and they are no evidence", async () => {
    const before = model.requests.length;
    const events = await run(withModel, "redis connection timeouts from app-3 to cache-1, new connections dropped");
    const route = events.find((e) => e.type === "route") as Extract<AgentEvent, { type: "route" }>;
    expect(route.decision.recalled.join("\n")).toContain("2024-03-redis.md");
    expect(route.decision.recalled.join("\n")).not.toContain("unrelated.md");
    const planner = model.requests.slice(before).find((r) => r.body.response_format?.json_schema?.name === "diagnosis_plan")!;
    const sent = JSON.stringify(planner.body.messages);
    expect(sent).toContain("PAGE-BODY-MARKER");
    expect(sent).toContain("not facts about this incident");
    // The route event stays small: the pages are not in the decision.
    expect(JSON.stringify(route)).not.toContain("PAGE-BODY-MARKER");
    const report = (events.find((e) => e.type === "report") as Extract<AgentEvent, { type: "report" }>).markdown;
    expect(report).toMatch(/## Past diagnoses\n\nThe planner was given these past diagnoses/);
    expect(report).toContain("Redis timeouts on cache hosts — conntrack table full dropped new connections (playbook network_diagnosis): `2024-03-redis.md`");
    // A past diagnosis is no evidence: with no tool call in this session, the report fails verification.
    expect(events.find((e) => e.type === "verdict")).toMatchObject({ verdict: "unsupported_claims" });
  });

  test("a long page is cut at the bound", async () => {
    const before = model.requests.length;
    await run(withModel, "disk full on db-2: WAL files filled /var");
    const planner = model.requests.slice(before).find((r) => r.body.response_format?.json_schema?.name === "diagnosis_plan")!;
    const sent = planner.body.messages.map((m: any) => m.content).join("\n");
    expect(sent).toContain("WAL files filled /var");
    expect(sent).not.toContain("TAIL-BEYOND-BOUND");
    expect(sent).toContain("…[cut]");
    expect(RECALLED_PAGE_CHARS).toBeLessThan(16_000);
  });

  test("the fallback report lists them too", async () => {
    const events = await run(withoutModel, "redis connection timeouts from app-3 to cache-1, new connections dropped");
    const report = (events.find((e) => e.type === "report") as Extract<AgentEvent, { type: "report" }>).markdown;
    expect(report).toContain("## Past diagnoses");
    expect(report).toContain("`2024-03-redis.md`");
    expect(report).not.toContain("unrelated.md");
  });
});
