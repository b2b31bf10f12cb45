/**
 * The agent benchmark (J1, J2): what the tool list of a session costs in the prompt, and what the
 * manager itself adds to each agent step. A real manager runs in this process (PGlite in a temp dir)
 * with one compiled edge that also loads the shipped skill packs (--pack-dir skill-packs), so the
 * fleet offers every shipped tool. Prints a table and writes JSON (scripts/bench/results/agent.json).
 *
 *   npx tsx scripts/bench/agent.ts [--sessions 30] [--warmup 3] [--edge-bin FILE] [--out FILE]
 *
 * 1. Tool list: for an operator's agent (systemCaller), each loaded playbook and each mode, the JSON
 *    of what the executor's chat request carries in `tools` with agent.tool_list on_demand at its
 *    first turn (a catalogue in load_tools) against every tool in the inventory (listInventory,
 *    toFunctionTool each, ungated). Target: ≤ 30 % of it. Also shown: the list once the playbook's
 *    allowed_tools are loaded, with tool_list full (every allowed tool in full), and only the
 *    playbook's allowed_tools (no read-only exemption). Tokens are estimated as ⌈characters / 4⌉.
 * 2. Overhead per step: --sessions sessions through manager.agent.diagnose against a scripted model
 *    that answers at once (route, plan and verdict by schema name; the executor calls host_load in
 *    4 turns, then reports). A step is one model round trip and the manager work leading to it
 *    (the tool calls a turn asks for land in the next step; the last step includes finishing the
 *    session). Overhead = the step's wall time − the model HTTP round trip (timed around fetch,
 *    body read included) − the time inside dispatcher.execute (wrapped). The baseline, measured in
 *    the same run and interleaved session by session, sends the same request bodies to the same
 *    server and makes the same dispatcher.execute calls directly, without the agent loop.
 *
 * The edge binary is built into a temp dir (scripts/build-edge.mjs, under a second) unless
 * --edge-bin names one, so dist/ (which the tests rebuild) is never run or touched.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { pino } from "pino";
import { systemCaller } from "../../manager/agent/bridge/call.ts";
import type { AgentEvent } from "../../manager/agent/session/events.ts";
import { bridgeTools, executorTools, toFunctionTool, type FunctionTool } from "../../manager/agent/bridge/tools.ts";
import { loadConfig } from "../../manager/config/load.ts";
import type { ExecuteInput, ExecuteOutput } from "../../manager/calls/types.ts";
import type { Caller } from "../../manager/identity/caller.ts";
import type { PermissionMode } from "../../manager/calls/gate.ts";
import { startManager, type Manager } from "../../manager/main.ts";
import { BUNDLED_PACK_DIR } from "../../manager/playbooks/catalog.ts";
import { listInventory } from "../../manager/fleet/inventory.ts";
import { readManifest } from "../../skill/pack/manifest.ts";
import { startScriptedModel, type Reply, type ScriptedModel } from "../../test/support/openai-server.ts";
import { buildEdge } from "./lib/edge-binary.ts";
import { alive, sleep, start, stopAll } from "./lib/proc.ts";
import { infoRow, ratioRow, table, writeJson, type Row, machineInfo } from "./lib/report.ts";
import { quantile } from "./lib/stats.ts";
import { intFlag } from "./lib/flags.ts";

const ROOT = resolve(import.meta.dirname, "..", "..");
const HERE = import.meta.dirname;
const TARGET_RATIO = 0.3;
const CHARS_PER_TOKEN = 4;
const MODES: readonly PermissionMode[] = ["NORMAL", "READ_ONLY", "ASK_DESTRUCTIVE"];
const EDGE_ID = "bench-edge";
const PLAYBOOK = "host_resource_diagnosis";
const EXECUTOR_TOOL_TURNS = 4;
/** route + plan + (tool turns + the report turn) + verdict. */
const MODEL_CALLS = 2 + EXECUTOR_TOOL_TURNS + 1 + 1;
const OPERATOR: Caller = { userId: "bench-operator", role: "operator" };
const INCIDENT = `host ${EDGE_ID}: load average is high and the app is slow`;

function flags() {
  const { values } = parseArgs({
    options: {
      sessions: { type: "string", default: "30" },
      warmup: { type: "string", default: "3" },
      "edge-bin": { type: "string" },
      out: { type: "string" },
    },
  });
  return {
    sessions: intFlag("sessions", values.sessions!, 5),
    warmup: intFlag("warmup", values.warmup!, 0),
    edgeBin: values["edge-bin"] ? resolve(values["edge-bin"]) : undefined,
    out: resolve(values.out ?? join(HERE, "results", "agent.json")),
  };
}

const tokens = (chars: number) => Math.ceil(chars / CHARS_PER_TOKEN);
const size = (tools: readonly FunctionTool[]) => {
  const chars = JSON.stringify(tools).length;
  return { tools: tools.length, chars, tokens: tokens(chars) };
};

/**
 * Part 1: the `tools` JSON of every playbook × mode against the whole inventory, ungated: as the
 * executor sends it with agent.tool_list on_demand at its first turn (no tool loaded: the bench's
 * plan names none), once the playbook's allowed_tools are all loaded, and with tool_list full
 * (every allowed tool's definition, as before on_demand). The agent's update_plan (≈ 130 tokens,
 * the same in every list) is left out of all of them.
 */
function measureToolLists(m: Manager) {
  const caller = systemCaller(OPERATOR);
  const inventory = listInventory(m.registry, m.hub);
  const all = size(inventory.map((e) => toFunctionTool(e.skill, e.edgeIds)));
  const lists = [];
  for (const p of m.playbooks.current().playbooks.values()) {
    for (const mode of MODES) {
      const bridged = bridgeTools(m, { caller, mode, playbook: p.name });
      const offered = new Map(bridged.map((t) => [t.skill.meta.key, t]));
      const first = size(executorTools(offered, "on_demand", new Set()));
      const allowedLoaded = size(executorTools(offered, "on_demand", new Set(p.allowedTools.filter((k) => offered.has(k)))));
      const full = size(executorTools(offered, "full", new Set()));
      const declared = bridged.filter((t) => p.allowedTools.includes(t.skill.meta.key));
      const allowedOnly = size(declared.map((t) => t.tool));
      lists.push({
        playbook: p.name,
        mode,
        ...first,
        ratio: first.chars / all.chars,
        allowed_loaded: { ...allowedLoaded, ratio: allowedLoaded.chars / all.chars },
        full: { ...full, ratio: full.chars / all.chars },
        ask: bridged.filter((t) => t.behavior === "ask").map((t) => t.skill.meta.key),
        names: bridged.map((t) => t.skill.meta.key),
        exempted: bridged.filter((t) => !p.allowedTools.includes(t.skill.meta.key)).map((t) => t.skill.meta.key),
        allowed_only: { ...allowedOnly, ratio: allowedOnly.chars / all.chars },
        allowed_tools_not_offered: p.allowedTools.filter((k) => !bridged.some((t) => t.skill.meta.key === k)),
      });
    }
  }
  const perTool = Object.fromEntries(inventory.map((e) => [e.skill.meta.key, JSON.stringify(toFunctionTool(e.skill, e.edgeIds)).length]));
  return { baseline: { ...all, names: inventory.map((e) => e.skill.meta.key), chars_per_tool: perTool }, lists };
}

/** The scripted model: router, planner and verifier by schema name; the executor calls host_load until it has done so EXECUTOR_TOOL_TURNS times. */
function respond(body: any): Reply {
  const schema = body?.response_format?.json_schema?.name;
  if (schema === "route_choice") return { json: { is_oncall: true, skill_name: PLAYBOOK, confidence: 0.9, reason: "load" } };
  if (schema === "diagnosis_plan") return { json: { reason: "load first", plan: ["check load", "check it again"] } };
  if (schema === "verdict") return { json: { verdict: "supported", unsupported_claims: [], notes: "" } };
  const executorCalls = (body?.messages ?? []).filter((m: any) => m.role === "tool" && m.tool_call_id !== "call_read_skill").length;
  if (executorCalls < EXECUTOR_TOOL_TURNS) return { toolCalls: [{ name: "host_load", arguments: { edge_id: EDGE_ID } }] };
  return { content: "# Report\n\nLoad checked [2]." };
}

interface Span {
  start: number;
  end: number;
}
interface ToolSpan extends Span {
  /** The envelope's duration_ms: the skill's own run time (on the edge for host skills). */
  runMs: number;
}
/** What one session (or its bare replay) spent where. */
interface Trace {
  model: Span[];
  tools: ToolSpan[];
  inputs: ExecuteInput[];
}
/** One step: (previous model answer, this model answer]; the last one runs to the end of the session. */
interface Step {
  kind: string;
  wallMs: number;
  modelMs: number;
  toolMs: number;
  runMs: number;
  /** wall − model − dispatcher.execute. */
  overheadMs: number;
  /** wall − model − the tools' own run time (dispatch, gate, audit and tunnel counted as overhead). */
  overheadInclDispatchMs: number;
}

function splitSteps(tr: Trace, t0: number, t1: number, kinds: readonly string[]): Step[] {
  return tr.model.map((call, k) => {
    const from = k ? tr.model[k - 1].end : t0;
    const to = k === tr.model.length - 1 ? t1 : call.end;
    const inside = tr.tools.filter((t) => t.start >= from && t.end <= to);
    const wallMs = to - from;
    const modelMs = call.end - call.start;
    const toolMs = inside.reduce((n, t) => n + t.end - t.start, 0);
    const runMs = inside.reduce((n, t) => n + t.runMs, 0);
    return { kind: kinds[k], wallMs, modelMs, toolMs, runMs, overheadMs: wallMs - modelMs - toolMs, overheadInclDispatchMs: wallMs - modelMs - runMs };
  });
}

const kindOf = (body: any, k: number, n: number) => {
  const schema = body?.response_format?.json_schema?.name;
  if (schema === "route_choice") return "route";
  if (schema === "diagnosis_plan") return "plan";
  if (schema === "verdict" && k === n - 1) return "verify + finish";
  if (schema === "verdict") return "verify";
  return k === 2 ? "executor turn (after read_skill)" : "executor turn";
};

/** summary of a sample, for the JSON. */
function summary(ms: readonly number[]) {
  return { n: ms.length, p50: quantile(ms, 0.5), p95: quantile(ms, 0.95), max: Math.max(...ms), mean: ms.reduce((a, b) => a + b, 0) / ms.length };
}

const began = performance.now();
const log = (msg: string) => console.log(`[${((performance.now() - began) / 1000).toFixed(1).padStart(6)} s] ${msg}`);
const tmpDirs: string[] = [];
let manager: Manager | undefined;
let model: ScriptedModel | undefined;
let cleaning: Promise<void> | undefined;
/** Closes the manager, the edge and the model server and removes the temp dirs; safe to call twice. */
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await stopAll();
    await manager?.close().catch((err: Error) => console.error(`bench: closing the manager failed: ${err.message}`));
    await model?.close();
    for (const d of tmpDirs) rmSync(d, { recursive: true, force: true });
  })();
  return cleaning;
}

async function main(): Promise<number> {
  const opt = flags();
  const loadBefore = loadavg();
  log(`load average ${loadBefore.map((l) => l.toFixed(2)).join(" ")} on ${cpus().length} CPUs`);
  if (loadBefore[0] > 0.5) log("warning: the machine is busy; other processes will skew the timings (the tool-list sizes are exact)");
  const work = mkdtempSync(join(tmpdir(), "ongrid-bench-agent-"));
  tmpDirs.push(work);

  let bin = opt.edgeBin;
  if (!bin) {
    bin = join(work, "ongrid-edge");
    const mib = buildEdge(ROOT, bin);
    log(`built the edge binary (${mib.toFixed(1)} MiB) in ${work}`);
  }

  model = await startScriptedModel();
  const config = loadConfig({
    env: {},
    overrides: {
      "server.port": 0,
      data_dir: join(work, "data"),
      log_level: "silent",
      "model.base_url": model.url,
      "model.model": "bench-scripted",
      "model.max_retries": 0,
      "model.timeout": "10s",
      "packs.watch": false,
      "playbooks.watch": false,
    },
  });
  const m = (manager = await startManager(config, pino({ level: "silent" })));
  log(`manager on ${m.url} (PGlite in ${join(work, "data")}), scripted model on ${model.url}`);

  const packKeys = readdirSync(BUNDLED_PACK_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) => readManifest(join(BUNDLED_PACK_DIR, d.name), "host").skills.map((s) => s.key));
  const { token } = await m.edges.enroll(EDGE_ID);
  const edge = start("edge", bin, ["--manager", m.url, "--token", token, "--id", EDGE_ID, "--pack-dir", BUNDLED_PACK_DIR, "--no-watch-packs", "--log-level", "warn"], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp" },
  });
  for (const t0 = performance.now(); ; await sleep(25)) {
    const s = m.hub.session(EDGE_ID);
    if (s && packKeys.every((k) => s.skills.has(k))) break;
    if (!alive(edge)) throw new Error(`the edge exited before connecting; output:\n${edge.stdout()}${edge.stderr()}`);
    if (performance.now() - t0 > 30_000) {
      const missing = packKeys.filter((k) => !s?.skills.has(k));
      throw new Error(`the edge did not offer every shipped pack skill within 30 s (missing: ${missing.join(", ") || "the session"}); output:\n${edge.stdout()}${edge.stderr()}`);
    }
  }
  log(`edge ${EDGE_ID} connected with ${m.hub.session(EDGE_ID)!.skills.size} skills (${packKeys.length} from the shipped packs)`);

  // 1. Tool-list size.
  const toolLists = measureToolLists(m);
  log(`inventory: ${toolLists.baseline.tools} tools, ${toolLists.baseline.chars} chars; ${toolLists.lists.length} playbook × mode lists`);

  // 2. Overhead per step. Timers: fetch to the model server, and dispatcher.execute.
  let trace: Trace | undefined;
  const realFetch = globalThis.fetch;
  const modelUrl = model.url;
  globalThis.fetch = async (input, init) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const tr = trace;
    if (!tr || !url.startsWith(modelUrl)) return realFetch(input, init);
    const t0 = performance.now();
    const res = await realFetch(input, init);
    const body = await res.arrayBuffer();
    tr.model.push({ start: t0, end: performance.now() });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
  const realExecute = m.dispatcher.execute;
  const timedExecute = async (tr: Trace | undefined, input: ExecuteInput): Promise<ExecuteOutput> => {
    const t0 = performance.now();
    let runMs = 0;
    try {
      const out = await realExecute(input);
      runMs = out.result?.duration_ms ?? 0;
      return out;
    } finally {
      tr?.tools.push({ start: t0, end: performance.now(), runMs });
      tr?.inputs.push(input);
    }
  };
  m.dispatcher.execute = (input) => timedExecute(trace, input);

  const newTrace = (): Trace => ({ model: [], tools: [], inputs: [] });
  let sessionNo = 0;
  async function agentSession() {
    model!.push(...Array.from({ length: MODEL_CALLS * 2 }, () => respond));
    const before = model!.requests.length;
    const tr = (trace = newTrace());
    const events: AgentEvent[] = [];
    const t0 = performance.now();
    for await (const ev of m.agent.diagnose({ text: INCIDENT, user: OPERATOR, edgeId: EDGE_ID, mode: "NORMAL" })) events.push(ev);
    const t1 = performance.now();
    trace = undefined;
    sessionNo++;
    const done = events.at(-1);
    const results = events.flatMap((e) => (e.type === "tool_result" ? [`${e.tool}:${e.success}${e.deduped ? ":deduped" : ""}`] : []));
    const verdict = events.find((e) => e.type === "verdict");
    if (done?.type !== "done" || done.status !== "done" || verdict?.type !== "verdict" || verdict.verdict !== "supported" || tr.model.length !== MODEL_CALLS || !results.every((r) => r.includes(":true"))) {
      throw new Error(`session ${sessionNo} did not run as scripted: ${tr.model.length} model calls (expected ${MODEL_CALLS}), results ${results.join(", ")}, ${JSON.stringify(done)}`);
    }
    const bodies = model!.requests.slice(before).map((r) => r.body);
    const kinds = bodies.map((b, k) => kindOf(b, k, bodies.length));
    return { tr, t0, t1, bodies, kinds, results, steps: splitSteps(tr, t0, t1, kinds) };
  }

  /** The same model round trips (same bodies, same server) and the same dispatcher.execute calls, with no agent loop. */
  async function bareReplay(s: Awaited<ReturnType<typeof agentSession>>) {
    model!.push(...Array.from({ length: MODEL_CALLS * 2 }, () => respond));
    const texts = s.bodies.map((b) => JSON.stringify(b));
    // The calls each step made, in order: those that started before that step's model call.
    const perStep = s.tr.model.map((call, k) => s.tr.inputs.filter((_, j) => s.tr.tools[j].start >= (k ? s.tr.model[k - 1].end : s.t0) && s.tr.tools[j].end <= call.start));
    const sessionId = `bare_${sessionNo}`;
    const tr = newTrace();
    const t0 = performance.now();
    for (let k = 0; k < texts.length; k++) {
      for (const input of perStep[k]) {
        const out = await timedExecute(tr, { ...input, sessionId, signal: undefined });
        if (!out.result?.success) throw new Error(`bare ${input.key} failed: ${JSON.stringify(out.result?.error)}`);
      }
      const c0 = performance.now();
      const res = await realFetch(`${modelUrl}/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer bench" }, body: texts[k] });
      await res.arrayBuffer();
      tr.model.push({ start: c0, end: performance.now() });
      if (!res.ok) throw new Error(`bare model call ${k} answered HTTP ${res.status}`);
    }
    const t1 = performance.now();
    return { tr, t0, t1, steps: splitSteps(tr, t0, t1, s.kinds) };
  }

  log(`${opt.warmup} warm-up sessions, then ${opt.sessions} sessions, each followed by its bare replay`);
  for (let i = 0; i < opt.warmup; i++) await bareReplay(await agentSession());
  const agentRuns = [];
  const bareRuns = [];
  for (let i = 0; i < opt.sessions; i++) {
    const a = await agentSession();
    agentRuns.push(a);
    bareRuns.push(await bareReplay(a));
  }
  globalThis.fetch = realFetch;
  m.dispatcher.execute = realExecute;
  const sample = agentRuns[0];
  const dispatched = sample.tr.tools.length;
  log(`per session: ${MODEL_CALLS} model calls, ${sample.results.length} tool results (${sample.results.join(", ")}), ${dispatched} reached dispatcher.execute`);

  const steps = agentRuns.flatMap((r) => r.steps);
  const bareSteps = bareRuns.flatMap((r) => r.steps);
  const pick = (xs: Step[], f: keyof Step) => xs.map((s) => s[f] as number);
  const kinds = [...new Set(sample.kinds)];
  const byKind = (xs: Step[], kind: string) => xs.filter((s) => s.kind === kind);
  const sessionWall = agentRuns.map((r) => r.t1 - r.t0);
  const bareWall = bareRuns.map((r) => r.t1 - r.t0);
  const sessionOverhead = agentRuns.map((r) => r.steps.reduce((n, s) => n + s.overheadMs, 0));
  const bareOverhead = bareRuns.map((r) => r.steps.reduce((n, s) => n + s.overheadMs, 0));

  const rows: Row[] = [
    infoRow(`tool list, every tool in the inventory (${toolLists.baseline.tools} tools, ungated)`, "tokens", toolLists.baseline.tokens),
    ...toolLists.lists.map((l) => ratioRow(`tool list ${l.playbook} ${l.mode}, on_demand first turn (${l.names.length} tools)`, "tokens", l.tokens, toolLists.baseline.tokens, TARGET_RATIO)),
    ...toolLists.lists.map((l) => infoRow(`  on_demand, allowed_tools loaded, ${l.playbook} ${l.mode}`, "tokens", l.allowed_loaded.tokens, toolLists.baseline.tokens)),
    ...toolLists.lists.map((l) => infoRow(`  full (tool_list: full), ${l.playbook} ${l.mode}`, "tokens", l.full.tokens, toolLists.baseline.tokens)),
    infoRow(`session wall time p50 (${MODEL_CALLS} model calls, ${dispatched} dispatched tool calls)`, "ms", quantile(sessionWall, 0.5), quantile(bareWall, 0.5)),
    infoRow("overhead per session p50 (wall - model HTTP - dispatcher.execute)", "ms", quantile(sessionOverhead, 0.5), quantile(bareOverhead, 0.5)),
    infoRow(`overhead per step p50 (n=${steps.length})`, "ms", quantile(pick(steps, "overheadMs"), 0.5), quantile(pick(bareSteps, "overheadMs"), 0.5)),
    infoRow(`overhead per step p95 (n=${steps.length})`, "ms", quantile(pick(steps, "overheadMs"), 0.95), quantile(pick(bareSteps, "overheadMs"), 0.95)),
    ...kinds.map((k) => infoRow(`  overhead p50, ${k} steps`, "ms", quantile(pick(byKind(steps, k), "overheadMs"), 0.5), quantile(pick(byKind(bareSteps, k), "overheadMs"), 0.5))),
    infoRow("overhead per step p50, counting dispatch (wall - model HTTP - tool run time)", "ms", quantile(pick(steps, "overheadInclDispatchMs"), 0.5), quantile(pick(bareSteps, "overheadInclDispatchMs"), 0.5)),
    infoRow("overhead per step p95, counting dispatch (wall - model HTTP - tool run time)", "ms", quantile(pick(steps, "overheadInclDispatchMs"), 0.95), quantile(pick(bareSteps, "overheadInclDispatchMs"), 0.95)),
    infoRow("model HTTP round trip p50 (excluded above)", "ms", quantile(agentRuns.flatMap((r) => r.tr.model.map((c) => c.end - c.start)), 0.5), quantile(bareRuns.flatMap((r) => r.tr.model.map((c) => c.end - c.start)), 0.5)),
    infoRow("dispatcher.execute p50 (excluded above)", "ms", quantile(agentRuns.flatMap((r) => r.tr.tools.map((t) => t.end - t.start)), 0.5), quantile(bareRuns.flatMap((r) => r.tr.tools.map((t) => t.end - t.start)), 0.5)),
  ];

  const totalS = (performance.now() - began) / 1000;
  const loadAfter = loadavg();
  const busy = loadBefore[0] > 0.5 || loadAfter[0] > 0.5;
  const passed = toolLists.lists.filter((l) => l.ratio <= TARGET_RATIO).length;
  console.log(`\nongrid agent benchmark — ${toolLists.lists.length} tool lists (${toolLists.lists.length / MODES.length} playbooks × ${MODES.length} modes) against ${toolLists.baseline.tools} inventory tools; ${opt.sessions} sessions; ${cpus().length} CPUs, node ${process.version}, load ${loadBefore[0].toFixed(2)} → ${loadAfter[0].toFixed(2)}`);
  console.log(`tool-list baseline: every inventory tool, ungated; tokens ≈ chars/${CHARS_PER_TOKEN}. Overhead baseline: the same model bodies and dispatcher.execute calls replayed with no agent loop, after each session.\n`);
  console.log(table(rows));
  console.log(`\ntool lists meeting <= ${TARGET_RATIO * 100}%: ${passed} of ${toolLists.lists.length}`);
  console.log("\nplaybook × mode: tools offered; share of the inventory on_demand at the first turn / with allowed_tools loaded / full; allowed_tools only; added by the read-only exemption");
  for (const l of toolLists.lists) {
    const pct = (r: number) => `${(100 * r).toFixed(1).padStart(5)}%`;
    console.log(`  ${`${l.playbook} ${l.mode}`.padEnd(42)} ${String(l.names.length).padStart(3)} tools  ${pct(l.ratio)} / ${pct(l.allowed_loaded.ratio)} / ${pct(l.full.ratio)}   allowed only ${String(l.allowed_only.tools).padStart(3)} tools ${pct(l.allowed_only.ratio)}   exempted: ${l.exempted.join(", ") || "-"}`);
  }
  if (busy) console.log(`\nnote: the machine was busy (load ${loadBefore[0].toFixed(2)} → ${loadAfter[0].toFixed(2)} on ${cpus().length} CPUs); the timing rows include scheduling noise, the tool-list rows do not.`);

  writeJson(opt.out, {
    benchmark: "agent",
    date: new Date().toISOString(),
    duration_s: totalS,
    machine: machineInfo(loadBefore, loadAfter, { busy }),
    params: { sessions: opt.sessions, warmup: opt.warmup, edge_bin: opt.edgeBin ?? "built into a temp dir", target_ratio: TARGET_RATIO, chars_per_token: CHARS_PER_TOKEN, modes: MODES, caller: systemCaller(OPERATOR), incident: INCIDENT, executor_tool_turns: EXECUTOR_TOOL_TURNS, model_calls_per_session: MODEL_CALLS },
    variants: {
      tool_list: "JSON.stringify(executorTools(offered, 'on_demand', new Set())): the chat request's `tools` at the executor's first turn with agent.tool_list on_demand (the default), offered = bridgeTools({registry, hub, dispatcher}, {caller: systemCaller(operator), mode, playbook}); update_plan left out",
      tool_list_allowed_loaded: "the same once every offered tool of the playbook's allowed_tools is loaded",
      tool_list_full: "JSON.stringify(executorTools(offered, 'full', ...)): every offered tool's definition (agent.tool_list full; the only list before on_demand)",
      tool_list_allowed_only: "the same list restricted to the playbook's allowed_tools (the read-only exemption removed)",
      tool_list_baseline: "JSON.stringify(listInventory(registry, hub).map(e => toFunctionTool(e.skill, e.edgeIds))): every tool, ungated",
      overhead: "per step (one model round trip and the manager work before it; the last step includes finishing the session): wall - model HTTP round trip (around fetch, body read) - time inside dispatcher.execute",
      overhead_incl_dispatch: "wall - model HTTP round trip - the tools' own run time (envelope duration_ms): dispatch, gate, audit and the tunnel count as overhead",
      baseline: "after each session: the same request bodies POSTed to the same scripted server with fetch, and the same dispatcher.execute inputs called directly, step by step, no agent loop",
    },
    metrics: rows,
    details: {
      tool_lists: toolLists,
      per_session: { tool_results: sample.results, dispatched_tool_calls: dispatched, step_kinds: sample.kinds },
      overhead_ms: {
        agent: { per_step: summary(pick(steps, "overheadMs")), per_session: summary(sessionOverhead), by_kind: Object.fromEntries(kinds.map((k) => [k, summary(pick(byKind(steps, k), "overheadMs"))])) },
        bare: { per_step: summary(pick(bareSteps, "overheadMs")), per_session: summary(bareOverhead), by_kind: Object.fromEntries(kinds.map((k) => [k, summary(pick(byKind(bareSteps, k), "overheadMs"))])) },
      },
      overhead_incl_dispatch_ms: { agent: summary(pick(steps, "overheadInclDispatchMs")), bare: summary(pick(bareSteps, "overheadInclDispatchMs")) },
      wall_ms: { agent_session: summary(sessionWall), bare_session: summary(bareWall), agent_step: summary(pick(steps, "wallMs")), bare_step: summary(pick(bareSteps, "wallMs")) },
      model_http_ms: { agent: summary(agentRuns.flatMap((r) => r.tr.model.map((c) => c.end - c.start))), bare: summary(bareRuns.flatMap((r) => r.tr.model.map((c) => c.end - c.start))) },
      dispatcher_execute_ms: { agent: summary(agentRuns.flatMap((r) => r.tr.tools.map((t) => t.end - t.start))), bare: summary(bareRuns.flatMap((r) => r.tr.tools.map((t) => t.end - t.start))) },
      steps_ms: { agent: steps, bare: bareSteps },
    },
  });
  console.log(`\nJSON: ${opt.out}\ntotal time: ${totalS.toFixed(1)} s`);
  return 0;
}

for (const [sig, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
  process.on(sig, () => {
    console.error(`bench: ${sig}, stopping the edge and the manager`);
    void cleanup().then(() => process.exit(code));
  });
}

main()
  .catch((err: Error) => {
    console.error(`bench failed: ${err.stack ?? err}`);
    return 1;
  })
  .then(async (code) => {
    await cleanup();
    process.exit(code);
  });
