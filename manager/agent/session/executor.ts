/**
 * The Executor of a session (J2): reads the router's playbook with read_skill (a real, audited
 * call), then calls only the offered tools, bounded in steps and time, and writes the report. It
 * may revise the remaining plan (update_plan) and, with agent.tool_list on_demand, load tool
 * definitions from a catalogue (load_tools); both are the agent's own, not skills.
 */
import { redact } from "../../../skill/redact.ts";
import type { Logger } from "pino";
import { guidanceEvent, toolResultEvent, failureOf, type AgentEvent, type AgentLimits } from "./events.ts";
import { evidenceText, type createEvidence } from "./evidence.ts";
import type { ChatMessage, ModelClient } from "../llm.ts";
import { executorTools, LOAD_TOOLS, MAX_LOAD, toolsNamedIn, type BridgedTool, type FunctionTool } from "../bridge/tools.ts";

/** What the executor is given. */
export interface ExecutorInput {
  model: ModelClient;
  /** The router's playbook, by name: the executor reads its body with read_skill. */
  playbook: string;
  /** The incident text, redacted. */
  text: string;
  /** The plan to start from (the planner's, or the fallback steps). */
  steps: string[];
  edgeId?: string;
  offered: ReadonlyMap<string, BridgedTool>;
  evidence: Pick<ReturnType<typeof createEvidence>, "call" | "items" | "isGuidance">;
  limits: AgentLimits;
  deadline: number;
  signal?: AbortSignal;
  log: Logger;
}

/** The executor's own tool for revising the remaining plan (not a skill, not audited: it changes nothing outside the session). */
export const UPDATE_PLAN = "update_plan";
const MAX_REPLANS = 3;
/** Most turns spent loading tools that the executor's turn bound leaves out. */
const MAX_LOAD_TURNS = 5;
const UPDATE_PLAN_TOOL = {
  type: "function" as const,
  function: {
    name: UPDATE_PLAN,
    description: `Replace the remaining plan after what a step showed (at most ${MAX_REPLANS} times a session). Use when the evidence points elsewhere than the plan.`,
    parameters: { type: "object", additionalProperties: false, required: ["steps", "reason"], properties: { steps: { type: "array", minItems: 1, maxItems: 10, items: { type: "string", maxLength: 300 } }, reason: { type: "string", maxLength: 300 } } },
  },
};

/**
 * A load_tools call: the named offered tools join `loaded`. Names outside the session's tools are
 * refused by name (the rest still load); a call without a names list is refused naming the rule.
 */
export function loadTools(argumentsJson: string, offered: ReadonlyMap<string, BridgedTool>, loaded: Set<string>): { success: boolean; output?: unknown; error?: { code: string; message: string } } {
  let names: unknown;
  try {
    names = (JSON.parse(argumentsJson) as { names?: unknown })?.names;
  } catch {
    // Refused below.
  }
  if (!Array.isArray(names) || names.length === 0 || names.length > MAX_LOAD || !names.every((n) => typeof n === "string")) {
    return { success: false, error: { code: "invalid_argument", message: `names: 1 to ${MAX_LOAD} tool names from ${LOAD_TOOLS}'s list (rule: ${LOAD_TOOLS})` } };
  }
  const out = { loaded: [] as string[], already_loaded: [] as string[], not_offered: [] as string[] };
  for (const n of new Set(names as string[])) {
    if (!offered.has(n)) out.not_offered.push(n.slice(0, 64));
    else if (loaded.has(n)) out.already_loaded.push(n);
    else {
      loaded.add(n);
      out.loaded.push(n);
    }
  }
  if (!out.loaded.length && !out.already_loaded.length) {
    return { success: false, error: { code: "not_offered", message: `not tools of this session: ${out.not_offered.join(", ")}; load names from ${LOAD_TOOLS}'s list` } };
  }
  return { success: true, output: out };
}

/** Runs the executor, yielding its tool calls and results, any replans, and last the report. */
export async function* runExecutor(o: ExecutorInput): AsyncGenerator<AgentEvent> {
  let steps = o.steps;
  // update_plan is the agent's own (not a skill): revising the remaining plan, bounded. With
  // agent.tool_list on_demand the tools come as a catalogue in load_tools (also the agent's own),
  // and a tool's full definition joins the list once loaded (or named by the plan); a catalogued
  // tool called without loading runs all the same: the gate, not the list, decides.
  const configuredOnDemand = (o.limits.toolList ?? "full") === "on_demand";
  const onDemand = configuredOnDemand && !o.offered.has(LOAD_TOOLS);
  const loaded = onDemand ? toolsNamedIn(steps.join("\n"), o.offered) : new Set<string>();
  const toolsNow = (): FunctionTool[] => [...executorTools(o.offered, onDemand ? "on_demand" : "full", loaded), ...(o.offered.has(UPDATE_PLAN) ? [] : [UPDATE_PLAN_TOOL])];
  let replans = 0;
  /** Turns in which load_tools loaded something new. */
  const loadTurns = new Set<number>();
  if (configuredOnDemand && !onDemand) o.log.warn({ playbook: o.playbook }, `agent.tool_list on_demand: a skill named ${LOAD_TOOLS} is offered, so this session lists every tool in full`);
  const messages: ChatMessage[] = [
    {
      role: "system",
      content: [
        "You are the executor of an SRE diagnosis agent. Collect evidence with the tools, then write the report.",
        `Playbook: ${o.playbook}. Follow its recommended tool order and stop conditions.`,
        o.edgeId ? `Host tools run on edge_id "${o.edgeId}" unless the incident names another edge.` : "No edge is selected: use manager tools, or host tools on an edge the tool lists.",
        ...(onDemand ? [`Tools not loaded yet are listed in ${LOAD_TOOLS}: load the ones you will call (several at once), then call them with the parameters their definitions give.`] : []),
        `At most ${o.limits.maxSteps} tool calls. Never invent output: cite only what a tool returned, by step number [n] (your first evidence call is [1]). A playbook (read_skill) is guidance, not evidence: never cite it. If a tool fails, say so. Long outputs reach you condensed.`,
        "When done, answer without tool calls with the report in Markdown: Summary, Evidence (with [n]), Root cause and confidence, Next actions, Not checked.",
        `Plan:\n${steps.map((s, i) => `${i + 1}. ${s}`).join("\n")}`,
      ].join("\n"),
    },
    { role: "user", content: `Incident:\n<<<\n${o.text}\n>>>` },
  ];
  // The playbook first: a real, audited read_skill call whose body reaches the model whole. It is
  // guidance, not evidence: no step number, not counted against agent.max_steps, never cited.
  const read = await o.evidence.call("read_skill", JSON.stringify({ skill_name: o.playbook }));
  yield guidanceEvent(read);
  messages.push({ role: "assistant", content: null, tool_calls: [{ id: "call_read_skill", name: "read_skill", arguments: JSON.stringify({ skill_name: o.playbook }) }] }, { role: "tool", tool_call_id: "call_read_skill", content: read.content });

  let report = "";
  let calls = 0;
  let graceTurns = 0;
  let stopped = "";
  for (let turn = 0; ; turn++) {
    const remaining = o.deadline - Date.now();
    if (remaining <= 0) {
      stopped = "the time bound (agent.max_duration) was reached";
      break;
    }
    let res;
    try {
      res = await o.model.chat({ messages, tools: toolsNow(), toolChoice: "auto", signal: o.signal });
    } catch (err) {
      stopped = Date.now() >= o.deadline ? "the time bound (agent.max_duration) was reached" : `the model failed (${failureOf(err)})`;
      break;
    }
    if (!res.toolCalls.length) {
      report = res.content ?? "";
      break;
    }
    messages.push({ role: "assistant", content: res.content, tool_calls: res.toolCalls });
    for (const tc of res.toolCalls) {
      if (calls >= o.limits.maxSteps) {
        messages.push({ role: "tool", tool_call_id: tc.id, content: JSON.stringify({ success: false, error: { code: "step_limit", message: `the session's ${o.limits.maxSteps} tool calls are used up; write the report now` } }) });
        continue;
      }
      if (onDemand && tc.name === LOAD_TOOLS) {
        const before = loaded.size;
        messages.push({ role: "tool", tool_call_id: tc.id, content: JSON.stringify(loadTools(tc.arguments, o.offered, loaded)) });
        if (loaded.size > before) loadTurns.add(turn);
        continue;
      }
      if (tc.name === UPDATE_PLAN && !o.offered.has(UPDATE_PLAN)) {
        let next: { steps?: unknown; reason?: unknown } = {};
        try {
          next = JSON.parse(tc.arguments);
        } catch {
          // Refused below.
        }
        const ok = Array.isArray(next.steps) && next.steps.length > 0 && next.steps.length <= 10 && next.steps.every((x) => typeof x === "string" && x.length <= 300);
        if (replans >= MAX_REPLANS || !ok) {
          messages.push({ role: "tool", tool_call_id: tc.id, content: JSON.stringify({ success: false, error: { code: replans >= MAX_REPLANS ? "replan_limit" : "invalid_argument", message: replans >= MAX_REPLANS ? `the plan may be revised ${MAX_REPLANS} times; continue with it` : "steps: 1 to 10 strings of at most 300 characters (rule: update_plan)" } }) });
          continue;
        }
        replans++;
        steps = next.steps as string[];
        if (onDemand) for (const k of toolsNamedIn(steps.join("\n"), o.offered)) loaded.add(k);
        yield { type: "plan", source: "replan", steps, reason: typeof next.reason === "string" ? next.reason.slice(0, 300) : "" };
        messages.push({ role: "tool", tool_call_id: tc.id, content: JSON.stringify({ success: true, output: { plan: steps } }) });
        continue;
      }
      if (o.evidence.isGuidance(tc.name)) {
        // Guidance the model asked for (another playbook): audited, given whole, not a step.
        const item = await o.evidence.call(tc.name, tc.arguments);
        yield guidanceEvent(item);
        messages.push({ role: "tool", tool_call_id: tc.id, content: item.content });
        continue;
      }
      calls++;
      let args: unknown = tc.arguments;
      try {
        args = JSON.parse(tc.arguments);
      } catch {
        // Shown as the raw text; the call path refuses it naming the rule.
      }
      // Shown as the model wrote them, with secrets masked (S6): the call itself gets them whole.
      yield { type: "tool_call", step: o.evidence.items().length + 1, tool: tc.name, args: redact(args) };
      const item = await o.evidence.call(tc.name, tc.arguments);
      yield toolResultEvent(item);
      messages.push({ role: "tool", tool_call_id: tc.id, content: item.content });
    }
    // Once the budget is spent the model gets one turn to write the report, then the loop ends.
    if (calls >= o.limits.maxSteps && graceTurns++ >= 1) {
      stopped = `the step bound (${o.limits.maxSteps} tool calls, agent.max_steps) was reached`;
      break;
    }
    // Turns spent loading tools (at most MAX_LOAD_TURNS count) and replanning are not held against the bound.
    if (turn >= 2 * o.limits.maxSteps + 2 + Math.min(loadTurns.size, MAX_LOAD_TURNS) + replans) {
      stopped = "too many model turns without a report";
      break;
    }
  }
  if (!report) {
    // Bounded out: one last turn without tools for the report, else a report of the evidence alone.
    try {
      if (Date.now() < o.deadline) {
        const res = await o.model.chat({ messages: [...messages, { role: "user", content: `Stop collecting: ${stopped}. Write the report now from the evidence above.` }], signal: o.signal });
        report = res.content ?? "";
      }
    } catch {
      // Falls through to the evidence-only report.
    }
    if (!report) report = `# Diagnosis report\n\nThe session stopped before a report: ${stopped}.\n\n## Evidence\n\n${evidenceText(o.evidence.items())}`;
    else report = `${report}\n\n_Stopped early: ${stopped}._`;
  }
  yield { type: "report", path: "model", markdown: report };
}
