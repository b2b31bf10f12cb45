/** The Verifier (J2): what the model is sent (the report and the evidence, no tools, no conversation) and the verdict it yields. */
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startScriptedModel, type ScriptedModel } from "../../../test/support/openai-server.ts";
import { createModelClient, type ModelClient } from "../llm.ts";
import { evidenceText, type EvidenceItem } from "./evidence.ts";
import { runVerifier, VERDICT_SCHEMA } from "./verifier.ts";

const log = pino({ level: "silent" });
const REPORT = "# Report\n\nWorker 3 ran out of memory [2]. The database is down.";
const EVIDENCE: EvidenceItem[] = [
  { step: 1, tool: "read_skill", edgeId: "", args: { skill_name: "host_resource_diagnosis" }, success: true, content: "## Recommended tool order\n…", auditSeq: 11, deduped: false },
  { step: 2, tool: "tail_file", edgeId: "e1", args: { edge_id: "e1", path: "/var/log/app.log" }, success: true, content: "ERROR worker 3 ran out of memory", auditSeq: 12, deduped: false },
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

  it("a failing verifier: not_verified, saying why, never supported", async () => {
    server.push({ status: 500, error: { message: "verifier down" } });
    const ev = await runVerifier({ model: modelClient(), report: REPORT, evidence: EVIDENCE });
    expect(ev).toEqual({ type: "verdict", verdict: "not_verified", unsupported: [], notes: "the verifier failed (http_error); read the report against the evidence yourself" });
  });
});
