/**
 * `ongrid eval` (J6): the offline harness over the shipped eval anchors, against the committed
 * baseline (a regression fails here), and the model path against the scripted OpenAI-compatible
 * server, which shows the harness measures what a model's session does (tokens, the verifier's
 * unsupported claims) through the real client, manager, tunnel and simulated edge.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadConfig } from "../manager/config/load.ts";
import type { EvalCase } from "../manager/eval/cases.ts";
import { runEval, type CaseResult, type EvalSummary } from "../manager/eval/run.ts";
import { ROOT, runOngrid } from "./support/cli.ts";
import { startScriptedModel, type Reply, type ScriptedModel } from "./support/openai-server.ts";

describe("ongrid eval without a model (the fallback path)", () => {
  let out: { cases: CaseResult[]; summary: EvalSummary };
  beforeAll(async () => {
    const r = await runOngrid(["eval", "--json"], { ONGRID_CONFIG: "", DATABASE_URL: "" });
    expect(r.code, r.stderr).toBe(0);
    out = JSON.parse(r.stdout);
  }, 300_000);

  test("runs every anchor's cases, English and Chinese, out-of-scope included, and prints cases and summary", () => {
    expect(out.cases.length).toBeGreaterThanOrEqual(30);
    expect(new Set(out.cases.map((c) => c.anchor))).toEqual(new Set(["container_diagnosis", "generic_oncall", "host_resource_diagnosis", "network_diagnosis", "service_diagnosis"]));
    expect(new Set(out.cases.map((c) => c.lang))).toEqual(new Set(["en", "zh"]));
    expect(out.cases.filter((c) => c.kind === "out_of_scope").length).toBeGreaterThanOrEqual(4);
    expect(out.cases.filter((c) => c.kind === "ambiguous").length).toBeGreaterThanOrEqual(5);
    expect(out.summary).toMatchObject({ cases: out.cases.length, path: "fallback", model: "", tokens_total: 0, failed_cases: 0 });
    for (const c of out.cases) expect(c.path, c.id).toBe(c.expected_playbook === null && c.routing_ok ? "refused" : c.routed === null ? "refused" : "fallback");
  });

  test("does no worse than the committed baseline (manager/eval/baseline.json)", () => {
    const base = JSON.parse(readFileSync(join(ROOT, "manager/eval/baseline.json"), "utf8")).fallback as EvalSummary;
    const s = out.summary;
    expect(s.cases).toBe(base.cases);
    expect(s.routing_accuracy).toBeGreaterThanOrEqual(base.routing_accuracy);
    expect(s.evidence_coverage).toBeGreaterThanOrEqual(base.evidence_coverage);
    expect(s.findings_stated).toBeGreaterThanOrEqual(base.findings_stated);
    expect(s.unsupported_claims).toBeLessThanOrEqual(base.unsupported_claims);
    // The fallback report interprets nothing, so it can make none of the tempting wrong claims.
    expect(s.unsupported_claims).toBe(0);
  });

  test("refuses bad filters naming the rule", async () => {
    const r = await runOngrid(["eval", "--playbook", "redis_diagnosis"], { ONGRID_CONFIG: "" });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('--playbook: "redis_diagnosis" is not a loaded playbook (rule: known_playbook)');
    const m = await runOngrid(["eval", "--model"], { ONGRID_CONFIG: "", ONGRID_MODEL_BASE_URL: "", ONGRID_MODEL: "" });
    expect(m.code).not.toBe(0);
    expect(m.stderr).toContain("--model: no model is configured");
  });
});

describe("the harness on the model path (scripted OpenAI-compatible server)", () => {
  let model: ScriptedModel;
  beforeAll(async () => {
    model = await startScriptedModel();
  });
  afterAll(async () => {
    await model.close();
  });

  const cases: EvalCase[] = [
    {
      id: "model-load",
      anchor: "host_resource_diagnosis",
      file: "test",
      lang: "en",
      kind: "clear",
      incident: "web-1 is crawling, load average 40 on 8 cores",
      expectedPlaybook: "host_resource_diagnosis",
      fixtures: { host_load: { output: { load1: 40.2, cpus: 8 } }, host_processes: { output: { processes: [{ pid: 4242, name: "ffmpeg", cpu_pct: 780 }] } } },
      evidence: ["host_load", "host_processes"],
      findings: ["40.2", "ffmpeg"],
      mustNot: ["disk full"],
    },
    {
      id: "model-journal",
      anchor: "service_diagnosis",
      file: "test",
      lang: "zh",
      kind: "clear",
      incident: "nginx.service 一直重启",
      expectedPlaybook: "service_diagnosis",
      fixtures: { read_journal: { output: { entries: [{ message: "nginx: [emerg] unknown directive \"lisen\" in /etc/nginx/conf.d/app.conf:3" }] } } },
      evidence: ["read_journal", "host_load"],
      findings: ["unknown directive", "app.conf:3"],
      mustNot: ["OOM"],
    },
  ];
  /** A model that routes right, calls the evidence tools, and writes a report: one made-up claim in the second case. */
  const responder = (body: any): Reply => {
    const text = JSON.stringify(body.messages);
    const schema = body.response_format?.json_schema?.name;
    const c = cases.find((x) => text.includes(x.incident)) ?? cases[0];
    if (schema === "route_choice") return { json: { is_oncall: true, skill_name: c.expectedPlaybook, confidence: 0.9, reason: "scripted" } };
    if (schema === "diagnosis_plan") return { json: { reason: "scripted", plan: c.evidence.map((e) => `call ${e}`) } };
    // The verifier sees the report and the evidence, not the incident.
    if (schema === "verdict") return { json: text.includes("changed by a deploy") ? { verdict: "unsupported_claims", unsupported_claims: ["the config was changed by a deploy"], notes: "" } : { verdict: "supported", unsupported_claims: [], notes: "" } };
    const called = (body.messages as any[]).filter((m) => m.role === "tool" && m.tool_call_id !== "call_read_skill").length;
    if (called === 0) {
      return { toolCalls: c.evidence.map((e) => ({ name: e, arguments: e === "read_journal" ? { edge_id: "eval-edge", unit: "nginx.service" } : { edge_id: "eval-edge" } })) };
    }
    return { content: `# Report\n\nFound ${c.findings.join(" and ")} [1].${c.id === "model-journal" ? " The config was changed by a deploy." : ""}` };
  };

  test("scores routing, evidence, findings, the verifier's unsupported claims and tokens of a model's sessions", async () => {
    for (let i = 0; i < 200; i++) model.push(responder);
    const config = loadConfig({ env: {}, overrides: { data_dir: "/nonexistent", "model.base_url": model.url, "model.model": "scripted-eval", "model.max_retries": 0 } });
    const out = await runEval({ cases, config, model: true, log: pino({ level: "silent" }) });
    expect(out.summary).toMatchObject({ cases: 2, path: "model", model: "scripted-eval", routing_accuracy: 1, failed_cases: 0 });
    const [load, journal] = out.cases;
    expect(load).toMatchObject({ routing_ok: true, path: "model", evidence: { coverage: 1, missing: [] }, findings: { share: 1 }, unsupported: { count: 0 } });
    // host_load had no recorded output in the second case: it was called and failed, so it is missing evidence.
    expect(journal).toMatchObject({ routing_ok: true, evidence: { gathered: ["read_journal"], missing: ["host_load"], coverage: 0.5 }, findings: { share: 1 }, unsupported: { verifier: ["the config was changed by a deploy"], count: 1 } });
    expect(load.tokens).toBeGreaterThan(0);
    expect(out.summary.tokens_total).toBe(load.tokens + journal.tokens);
    expect(out.summary.unsupported_claims).toBe(1);
    expect(load.steps).toBe(2);
  }, 120_000);
});
