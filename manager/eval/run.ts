/**
 * The evaluation harness (J6): runs every eval case through the real diagnosis path — a manager
 * in this process on a throwaway embedded database, the case's recorded outputs served by a
 * simulated edge over the real tunnel, the router, the playbook and (with a model) the planner,
 * executor and verifier — and scores what came out: the route, the evidence gathered, the findings
 * the report states, the claims it must not make, steps, tokens and time. Without a model it
 * measures the fallback path; with one, that model.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import { loadConfig } from "../config/load.ts";
import type { ManagerConfig } from "../config/schema.ts";
import { startManager, type Manager } from "../main.ts";
import type { AgentEvent } from "../agent/session/events.ts";
import type { Caller } from "../identity/caller.ts";
import { BUNDLED_PACK_DIR } from "../playbooks/catalog.ts";
import { splitDirs } from "../core.ts";
import type { EvalCase } from "./cases.ts";
import { EVAL_EDGE, startFixtureEdge } from "./fixture-edge.ts";

/** The caller evaluation sessions run as: an operator, in READ_ONLY mode (nothing can change anything). */
const EVAL_CALLER: Caller = { userId: "eval", role: "operator" } as Caller;

/** How one case went. */
export interface CaseResult {
  id: string;
  anchor: string;
  lang: string;
  kind: EvalCase["kind"];
  expected_playbook: string | null;
  routed: string | null;
  route_path: string;
  routing_ok: boolean;
  /** Path of the diagnosis: model, fallback, or refused. */
  path: string;
  evidence: { expected: string[]; gathered: string[]; missing: string[]; coverage: number | null };
  findings: { expected: string[]; stated: string[]; missing: string[]; share: number | null };
  /** must_not strings the report contains, and the verifier's unsupported claims (model path). */
  unsupported: { invented: string[]; verifier: string[]; count: number };
  steps: number;
  tokens: number;
  latency_ms: number;
  status: string;
  error?: string;
}

/** The totals over a run. */
export interface EvalSummary {
  cases: number;
  path: "fallback" | "model";
  model: string;
  routing_accuracy: number;
  /** Mean over cases with evidence to gather. */
  evidence_coverage: number;
  /** Mean over cases with findings to state. */
  findings_stated: number;
  unsupported_claims: number;
  steps_mean: number;
  tokens_total: number;
  latency_ms_mean: number;
  latency_ms_p50: number;
  by_anchor: Record<string, { cases: number; routing_accuracy: number; evidence_coverage: number; findings_stated: number; unsupported_claims: number }>;
  by_lang: Record<string, { cases: number; routing_accuracy: number }>;
  failed_cases: number;
}

/** Options of a run. */
export interface EvalOptions {
  cases: readonly EvalCase[];
  /** The user's configuration: its model section is used when `model` is set, its playbook and pack dirs always. */
  config: ManagerConfig;
  model: boolean;
  log: Logger;
  onCase?: (r: CaseResult) => void;
}

const lower = (s: string) => s.toLowerCase();

/** Scores one session's events against its case. */
export function scoreCase(c: EvalCase, events: readonly AgentEvent[], latencyMs: number): CaseResult {
  const route = events.find((e) => e.type === "route") as Extract<AgentEvent, { type: "route" }> | undefined;
  const done = events.find((e) => e.type === "done") as Extract<AgentEvent, { type: "done" }> | undefined;
  const report = (events.find((e) => e.type === "report") as Extract<AgentEvent, { type: "report" }> | undefined)?.markdown ?? "";
  const verdict = events.find((e) => e.type === "verdict") as Extract<AgentEvent, { type: "verdict" }> | undefined;
  const results = events.filter((e): e is Extract<AgentEvent, { type: "tool_result" }> => e.type === "tool_result");
  const routed = route ? (route.decision.isOncall ? route.decision.skillName : null) : null;
  const gathered = [...new Set(results.filter((r) => r.success && !r.pendingApproval).map((r) => r.tool))];
  const missingEvidence = c.evidence.filter((e) => !gathered.includes(e));
  const text = lower(report);
  const stated = c.findings.filter((f) => text.includes(lower(f)));
  const invented = c.mustNot.filter((m) => text.includes(lower(m)));
  const verifier = verdict?.verdict === "unsupported_claims" ? verdict.unsupported : [];
  return {
    id: c.id,
    anchor: c.anchor,
    lang: c.lang,
    kind: c.kind,
    expected_playbook: c.expectedPlaybook,
    routed,
    route_path: route?.decision.path ?? "",
    routing_ok: route !== undefined && routed === c.expectedPlaybook,
    path: done?.status === "refused" ? "refused" : ((events.find((e) => e.type === "report") as Extract<AgentEvent, { type: "report" }> | undefined)?.path ?? "none"),
    evidence: { expected: c.evidence, gathered, missing: missingEvidence, coverage: c.evidence.length ? (c.evidence.length - missingEvidence.length) / c.evidence.length : null },
    findings: { expected: c.findings, stated, missing: c.findings.filter((f) => !stated.includes(f)), share: c.findings.length ? stated.length / c.findings.length : null },
    unsupported: { invented, verifier, count: invented.length + verifier.length },
    steps: results.length,
    tokens: done?.usage.totalTokens ?? 0,
    latency_ms: Math.round(latencyMs),
    status: done?.status ?? "none",
    ...(done && done.status === "failed" ? { error: done.message } : {}),
  };
}

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d;

/** The summary of a run's results. */
export function summarise(results: readonly CaseResult[], path: EvalSummary["path"], model: string): EvalSummary {
  const group = <K extends string>(key: (r: CaseResult) => K) => {
    const m = new Map<K, CaseResult[]>();
    for (const r of results) m.set(key(r), [...(m.get(key(r)) ?? []), r]);
    return m;
  };
  const part = (rs: readonly CaseResult[]) => ({
    cases: rs.length,
    routing_accuracy: round(mean(rs.map((r) => (r.routing_ok ? 1 : 0)))),
    evidence_coverage: round(mean(rs.flatMap((r) => (r.evidence.coverage === null ? [] : [r.evidence.coverage])))),
    findings_stated: round(mean(rs.flatMap((r) => (r.findings.share === null ? [] : [r.findings.share])))),
    unsupported_claims: rs.reduce((n, r) => n + r.unsupported.count, 0),
  });
  const latencies = results.map((r) => r.latency_ms).sort((a, b) => a - b);
  return {
    ...part(results),
    path,
    model,
    steps_mean: round(mean(results.map((r) => r.steps)), 2),
    tokens_total: results.reduce((n, r) => n + r.tokens, 0),
    latency_ms_mean: Math.round(mean(latencies)),
    latency_ms_p50: latencies.length ? latencies[Math.floor((latencies.length - 1) / 2)] : 0,
    by_anchor: Object.fromEntries([...group((r) => r.anchor)].sort().map(([k, rs]) => [k, part(rs)])),
    by_lang: Object.fromEntries([...group((r) => r.lang)].sort().map(([k, rs]) => [k, { cases: rs.length, routing_accuracy: part(rs).routing_accuracy }])),
    failed_cases: results.filter((r) => r.status === "failed").length,
  };
}

/** Waits until the edge is online in the manager's hub. */
async function online(m: Manager, id: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!m.hub.session(id)) {
    if (Date.now() > until) throw new Error(`the evaluation edge did not connect within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Runs the cases; the manager, its database and the edge exist for this run only. */
export async function runEval(o: EvalOptions): Promise<{ cases: CaseResult[]; summary: EvalSummary }> {
  const dataDir = mkdtempSync(join(tmpdir(), "ongrid-eval-"));
  const model = o.model ? o.config.model : { ...o.config.model, base_url: "", model: "" };
  const config = loadConfig({
    env: {},
    overrides: {
      data_dir: dataDir,
      database_url: "",
      "server.host": "127.0.0.1",
      "server.port": 0,
      log_level: "silent",
      "playbooks.dirs": o.config.playbooks.dirs,
      "playbooks.disabled": o.config.playbooks.disabled,
      "playbooks.watch": false,
      "topology.refresh_interval": "0s",
      "agent.max_steps": o.config.agent.max_steps,
      "agent.max_duration": o.config.agent.max_duration,
      "agent.tool_list": o.config.agent.tool_list,
      "model.base_url": model.base_url,
      "model.model": model.model,
      "model.api_key": model.api_key,
      "model.api_key_file": model.api_key_file,
      "model.timeout": model.timeout,
      "model.max_retries": model.max_retries,
      "model.structured_output": model.structured_output,
    },
  });
  const m = await startManager(config, o.log);
  const packDirs = [BUNDLED_PACK_DIR, ...splitDirs(o.config.packs.local_edge_dirs)];
  let edge: ReturnType<typeof startFixtureEdge> | undefined;
  try {
    const { token } = await m.edges.enroll(EVAL_EDGE, { labels: { eval: "true" } });
    edge = startFixtureEdge({ url: m.url, token, packDirs, log: o.log });
    await online(m, EVAL_EDGE, 15_000);
    const results: CaseResult[] = [];
    for (const c of o.cases) {
      edge.setFixtures(c.fixtures);
      const events: AgentEvent[] = [];
      const t0 = performance.now();
      try {
        for await (const ev of m.agent.diagnose({ text: c.incident, user: EVAL_CALLER, edgeId: EVAL_EDGE, mode: "READ_ONLY" })) events.push(ev);
      } catch (err) {
        events.push({ type: "done", status: "failed", message: err instanceof Error ? err.message : String(err), usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } });
      }
      const r = scoreCase(c, events, performance.now() - t0);
      results.push(r);
      o.onCase?.(r);
    }
    return { cases: results, summary: summarise(results, o.model ? "model" : "fallback", o.model ? model.model : "") };
  } finally {
    edge?.stop();
    await m.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
