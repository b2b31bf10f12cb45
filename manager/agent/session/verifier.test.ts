/** The Verifier (J2): what the model is sent (the report and the evidence, no tools, no conversation) and the verdict it yields. */
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startScriptedModel, type ScriptedModel } from "../../../test/support/openai-server.ts";
import { createModelClient, type ModelClient } from "../llm.ts";
import { citedSteps, evidenceText, type EvidenceItem } from "./evidence.ts";
import { runVerifier, VERDICT_SCHEMA } from "./verifier.ts";

const log = pino({ level: "silent" });
const REPORT = "# Report\n\nWorker 3 ran out of memory [1]. The database is down.";
const GUIDANCE: EvidenceItem = { step: 0, tool: "read_skill", edgeId: "", args: { skill_name: "host_resource_diagnosis" }, success: true, content: "## Recommended tool order\nThe database is down when the pool is exhausted.", auditSeq: 11, deduped: false, guidance: true };
const EVIDENCE: EvidenceItem[] = [
  { step: 1, tool: "tail_file", edgeId: "e1", args: { edge_id: "e1", path: "/var/log/app.log" }, success: true, content: "ERROR worker 3 ran out of memory", auditSeq: 12, deduped: false },
];

let server: ScriptedModel;
beforeEach(async () => {
  server = await startScriptedModel();
});
afterEach(async () => {
  await server.close();
});

function modelClient(): ModelClient {
  const c = createModelClient({ base_url: server.url, api_key: "", api_key_file: "", model: "test-verifier", timeout: "5s", max_retries: 0, structured_output: "json_schema" }, log);
  if (!c) throw new Error("expected a model client");
  return c;
}

describe("runVerifier", () => {
  it("sends only the report and the evidence, with no tools, and yields the verdict", async () => {
    server.push({ json: { verdict: "unsupported_claims", unsupported_claims: ["The database is down."], notes: "no evidence about a database" } });
    const ev = await runVerifier({ model: modelClient(), report: REPORT, evidence: EVIDENCE });
    expect(ev).toEqual({ type: "verdict", verdict: "unsupported_claims", unsupported: ["The database is down."], notes: "no evidence about a database" });

    expect(server.requests).toHaveLength(1);
    const body = server.requests[0].body;
    // Isolated: nothing to call, and no conversation of the executor's.
    expect(body).not.toHaveProperty("tools");
    expect(body).not.toHaveProperty("tool_choice");
    expect(body.messages.map((m: { role: string }) => m.role)).toEqual(["system", "user"]);
    expect(body.messages[1].content).toBe(`Report:\n<<<\n${REPORT}\n>>>\n\nEvidence:\n<<<\n${evidenceText(EVIDENCE)}\n>>>`);
    expect(body.response_format.json_schema).toMatchObject({ name: "verdict", schema: VERDICT_SCHEMA });
  });

  it("guidance is never given to the verifier as evidence, even when the caller passes it", async () => {
    server.push({ json: { verdict: "supported", unsupported_claims: [], notes: "" } });
    await runVerifier({ model: modelClient(), report: REPORT, evidence: [GUIDANCE, ...EVIDENCE] });
    const sent = server.requests[0].body.messages[1].content as string;
    expect(sent).toBe(`Report:\n<<<\n${REPORT}\n>>>\n\nEvidence:\n<<<\n${evidenceText(EVIDENCE)}\n>>>`);
    expect(sent).not.toContain("read_skill");
    expect(sent).not.toContain("pool is exhausted");
  });

  it("a report backed only by the playbook fails without asking the model: no evidence tool ran", async () => {
    const ev = await runVerifier({ model: modelClient(), report: "# Report\n\nThe database is down [1].", evidence: [GUIDANCE] });
    expect(ev.verdict).toBe("unsupported_claims");
    expect(ev.unsupported[0]).toMatch(/no evidence tool ran/);
    expect(server.requests).toHaveLength(0);
  });

  it("a report that cites no evidence step fails without asking the model, naming the steps it could cite", async () => {
    const ev = await runVerifier({ model: modelClient(), report: "# Report\n\nWorker 3 ran out of memory, as the playbook says [0]; see [7].", evidence: EVIDENCE });
    expect(ev).toMatchObject({ type: "verdict", verdict: "unsupported_claims" });
    expect(ev.unsupported).toEqual(["the report cites no evidence step: its claims must cite what a tool returned by step number [1]…[1]", "cites [0], [7], which is no evidence step of this session"]);
    expect(server.requests).toHaveLength(0);
  });

  it("a cited step that does not exist is unsupported even when the model calls the rest supported", async () => {
    server.push({ json: { verdict: "supported", unsupported_claims: [], notes: "fine" } });
    const ev = await runVerifier({ model: modelClient(), report: "Worker 3 ran out of memory [1]; the disk is full [4].", evidence: EVIDENCE });
    expect(ev).toEqual({ type: "verdict", verdict: "unsupported_claims", unsupported: ["cites [4], which is no evidence step of this session"], notes: "fine" });
  });

  it("citedSteps reads [n], lists and ranges, and nothing else", () => {
    expect([...citedSteps("a [1] b [2, 3] c [5-6] d [8][9] e [x] f [12–13]")].sort((a, b) => a - b)).toEqual([1, 2, 3, 5, 6, 8, 9, 12, 13]);
    expect(citedSteps("no citations (1) or {2} or [a1]").size).toBe(0);
    // A huge range is bounded, not expanded without end.
    expect(citedSteps("[1-9999]").size).toBe(100);
  });

  it("a failing verifier: not_verified, saying why, never supported", async () => {
    server.push({ status: 500, error: { message: "verifier down" } });
    const ev = await runVerifier({ model: modelClient(), report: REPORT, evidence: EVIDENCE });
    expect(ev).toEqual({ type: "verdict", verdict: "not_verified", unsupported: [], notes: "the verifier failed (http_error); read the report against the evidence yourself" });
  });
});
