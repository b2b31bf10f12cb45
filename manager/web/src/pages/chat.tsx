/**
 * /chat (L2): start a diagnosis session (AgentService/Diagnose, server streaming) for an alert
 * text, on an edge, in a permission mode; its events render in arrival order as a trace: the
 * route, the plan, each tool call and its result, skipped steps, the report (Markdown) and the
 * verifier's verdict, then done. A running session can be stopped (the stream is aborted).
 */
import { useCallback, useEffect, useRef, useState, type FormEvent, type ReactNode } from "react";
import { Code, ConnectError } from "@connectrpc/connect";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { PermissionMode } from "../../../../proto/gen/ongrid/v1/skill_pb.ts";
import type { Edge } from "../../../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { useSession } from "../session.tsx";
import { Link } from "../router.tsx";
import { Chip, ErrorNote, OutputView, isEnvelope, json } from "../components.tsx";
import { SafeMarkdown } from "./playbooks.tsx";

/** One event of the session as it arrived. */
interface TraceEvent {
  /** Arrival index (the list key). */
  n: number;
  type: string;
  sessionId: string;
  data: JsonObject;
}

const MODES: Array<[PermissionMode, string]> = [
  [PermissionMode.UNSPECIFIED, "Manager default (gate.default_mode)"],
  [PermissionMode.READ_ONLY, "Read only: only safe tools"],
  [PermissionMode.NORMAL, "Normal: non-safe calls need approval"],
  [PermissionMode.ASK_DESTRUCTIVE, "Ask destructive: high-risk tools go to approval"],
];

const str = (v: JsonValue | undefined): string => (typeof v === "string" ? v : v === undefined || v === null ? "" : String(v));
const num = (v: JsonValue | undefined): number => (typeof v === "number" ? v : Number(v ?? 0));
const obj = (v: JsonValue | undefined): JsonObject => (v && typeof v === "object" && !Array.isArray(v) ? v : {});
const strings = (v: JsonValue | undefined): string[] => (Array.isArray(v) ? v.map((x) => str(x)) : []);

/** The diagnose page: the request form and the live trace of the session. */
export function ChatPage() {
  const { api } = useSession();
  const [edges, setEdges] = useState<Edge[]>([]);
  const [edgesError, setEdgesError] = useState<unknown>(null);
  const [text, setText] = useState("");
  const [edgeId, setEdgeId] = useState("");
  const [mode, setMode] = useState<PermissionMode>(PermissionMode.UNSPECIFIED);
  const [wait, setWait] = useState(false);
  const [events, setEvents] = useState<TraceEvent[]>([]);
  const [running, setRunning] = useState(false);
  const [stopped, setStopped] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const abort = useRef<AbortController | null>(null);

  // The online edges in the caller's reach; with exactly one it is chosen, with several the user picks.
  const loadEdges = useCallback(async () => {
    try {
      const online = (await api.edges.listEdges({ onlineOnly: true })).edges.filter((e) => e.online);
      setEdgesError(null);
      setEdges(online);
      setEdgeId((cur) => (online.some((e) => e.id === cur) ? cur : online.length === 1 ? online[0].id : ""));
      return online;
    } catch (err) {
      setEdgesError(err);
      return null;
    }
  }, [api]);
  useEffect(() => {
    void loadEdges();
  }, [loadEdges]);

  // Leaving the page ends a running session's stream.
  useEffect(() => () => abort.current?.abort(), []);

  const start = async (e: FormEvent) => {
    e.preventDefault();
    if (running) return;
    if (!text.trim()) {
      setError(new Error("Describe the incident: paste the alert or write what is wrong."));
      return;
    }
    if (!edgeId && edges.length > 1) {
      setError(new Error(`Choose the edge to diagnose: ${edges.length} edges are online.`));
      return;
    }
    const ctrl = new AbortController();
    abort.current = ctrl;
    setEvents([]);
    setError(null);
    setStopped(false);
    setRunning(true);
    let n = 0;
    try {
      for await (const ev of api.agent.diagnose({ text, edgeId, permissionMode: mode, waitForApproval: wait }, { signal: ctrl.signal })) {
        const item: TraceEvent = { n: n++, type: ev.type, sessionId: ev.sessionId, data: ev.data ?? {} };
        setEvents((prev) => [...prev, item]);
      }
    } catch (err) {
      if (ctrl.signal.aborted) setStopped(true);
      else if (err instanceof ConnectError && err.code === Code.InvalidArgument && err.rawMessage.startsWith("edge_id:")) {
        // The edges changed since the list was read (one went offline, another came): read them again.
        const online = await loadEdges();
        setError(new Error(`The edge is not available any more: choose one of the ${online?.length ?? 0} online edges and start again.`));
      } else setError(err);
    } finally {
      if (abort.current === ctrl) abort.current = null;
      setRunning(false);
    }
  };

  const stop = () => abort.current?.abort();

  const done = events.find((e) => e.type === "done");
  const sessionId = events.find((e) => e.sessionId)?.sessionId ?? "";
  const calls = new Map<number, JsonObject>();
  for (const e of events) if (e.type === "tool_call") calls.set(num(e.data.step), e.data);

  let status = "";
  if (running) status = `Running${sessionId ? ` session ${sessionId}` : ""}: ${events.length} event${events.length === 1 ? "" : "s"} so far${events.length ? ` (last: ${events.at(-1)!.type})` : ""}.`;
  else if (stopped) status = `Stopped: you ended ${sessionId ? `session ${sessionId}` : "the session"} before it finished (the stream was closed; the manager stops the session).`;
  else if (done) status = `Finished (${str(done.data.status)}): ${str(done.data.message)}.`;

  return (
    <>
      <h1>Diagnose</h1>
      <p className="help">
        The agent routes the alert to a playbook, gathers evidence with gated, audited tools on the edge, writes a report and, with a model configured, has a separate verifier check the report against the evidence.
      </p>
      <form className="chat-form" onSubmit={start} aria-label="Start a diagnosis">
        <p>
          <label htmlFor="chat-text">Alert or question</label>
          <textarea id="chat-text" rows={4} maxLength={8000} value={text} onChange={(e) => setText(e.target.value)} placeholder="e.g. ProbeFailed: https://api.internal/health returns 503 on web-1" aria-describedby="chat-text-help" />
          <span id="chat-text-help" className="help">
            Paste the alert as it came; URLs, host:port pairs, units and paths in it fill the playbook's steps. Tokens and passwords are redacted before anything is stored or sent to a model.
          </span>
        </p>
        <div className="filters">
          <label htmlFor="chat-edge">
            Edge
            <select id="chat-edge" value={edgeId} onChange={(e) => setEdgeId(e.target.value)} aria-describedby="chat-edge-help">
              {edges.length === 0 ? <option value="">No edge online: manager tools only</option> : null}
              {edges.length > 1 ? (
                <option value="" disabled>
                  Choose an edge…
                </option>
              ) : null}
              {edges.map((e) => (
                <option key={e.id} value={e.id}>
                  {e.id}
                  {Object.keys(e.labels).length ? ` (${Object.entries(e.labels).map(([k, v]) => `${k}=${v}`).join(",")})` : ""}
                </option>
              ))}
            </select>
          </label>
          <label htmlFor="chat-mode">
            Permission mode
            <select id="chat-mode" value={mode} onChange={(e) => setMode(Number(e.target.value) as PermissionMode)}>
              {MODES.map(([m, label]) => (
                <option key={m} value={m}>
                  {label}
                </option>
              ))}
            </select>
          </label>
          <label className="check">
            <input type="checkbox" checked={wait} onChange={(e) => setWait(e.target.checked)} /> Wait for approvers when a call needs approval
          </label>
        </div>
        <p id="chat-edge-help" className="help">
          Host tools run on this edge. {edges.length === 0 ? "No edge is online: only manager tools can run." : `${edges.length} online in your reach.`}{" "}
          <button type="button" className="secondary" onClick={() => void loadEdges()}>
            Refresh edges
          </button>
        </p>
        <ErrorNote error={edgesError}>Could not list the edges: </ErrorNote>
        <div className="row">
          <button type="submit" disabled={running}>
            {running ? "Diagnosing…" : "Diagnose"}
          </button>
          <button type="button" className="danger" onClick={stop} disabled={!running}>
            Stop
          </button>
        </div>
      </form>
      <p role="status" className="muted" data-testid="chat-status">
        {status}
      </p>
      <ErrorNote error={error}>{error instanceof ConnectError ? "The diagnosis failed: " : null}</ErrorNote>
      {events.length ? (
        <ol className="trace" aria-label="Session trace" data-testid="trace">
          {events.map((e) => (
            <li key={e.n} data-kind={e.type}>
              <EventView ev={e} calls={calls} />
            </li>
          ))}
        </ol>
      ) : null}
    </>
  );
}

function Kind(props: { children: ReactNode }) {
  return <span className="kind">{props.children}</span>;
}

/** A tool's content: a result envelope as the console shows every result (OutputView), else as text or JSON. */
function ToolContent(props: { content: string }) {
  let parsed: unknown;
  try {
    parsed = JSON.parse(props.content);
  } catch {
    return <pre className="output">{props.content}</pre>;
  }
  if (!isEnvelope(parsed)) return <pre className="output">{json(parsed)}</pre>;
  const e = parsed.error;
  return (
    <>
      {e && (e.code || e.message) ? (
        <p className="result-error">
          <code>{e.code}</code> {e.message}
          {e.hint ? <span className="hint"> — {e.hint}</span> : null}
        </p>
      ) : null}
      <OutputView value={parsed.output} />
    </>
  );
}

const PATH_TEXT: Record<string, string> = {
  model: "by the model",
  model_unknown_name: "by the model, which named an unknown playbook: generic_oncall was used",
  rules: "by rules (trigger phrases and tags)",
  out_of_scope: "by the out-of-scope check, before any model call",
};

const PLAN_SOURCE: Record<string, string> = {
  planner: "the planner (model)",
  fallback_plan: "the playbook's fallback steps (the planner failed)",
  fallback_steps: "the playbook's fallback steps (no model)",
  replan: "revised by the executor",
};

function EventView(props: { ev: TraceEvent; calls: Map<number, JsonObject> }) {
  const { type, data } = props.ev;
  switch (type) {
    case "session":
      return (
        <>
          <Kind>session</Kind> started <code>{str(data.sessionId) || props.ev.sessionId}</code>
        </>
      );
    case "route": {
      const d = obj(data.decision);
      const path = str(d.path);
      const refused = d.isOncall === false;
      return (
        <>
          <Kind>route</Kind>{" "}
          {refused ? (
            <strong>Not an operations question: refused</strong>
          ) : (
            <>
              playbook <Link to={`/playbooks/${encodeURIComponent(str(d.skillName))}`}>{str(d.skillName)}</Link>
            </>
          )}{" "}
          <Chip kind={path === "model" ? "scope-manager" : "scope-edge"} title="Which stage decided">
            {path}
          </Chip>{" "}
          {typeof d.confidence === "number" ? <span className="muted">confidence {d.confidence.toFixed(2)}</span> : null}
          <div>
            Decided {PATH_TEXT[path] ?? path}
            {str(d.model) && path !== "rules" && path !== "out_of_scope" ? (
              <>
                {" "}
                (<code>{str(d.model)}</code>)
              </>
            ) : null}
            {str(d.fallbackCause) ? <span className="muted"> — the model did not decide: {str(d.fallbackCause)}</span> : null}
          </div>
          <div>
            <strong>Why:</strong> {str(d.reason)}
          </div>
          {strings(d.recalled).length ? (
            <details>
              <summary>Recalled past diagnoses ({strings(d.recalled).length})</summary>
              <ul>
                {strings(d.recalled).map((r, i) => (
                  <li key={i}>{r}</li>
                ))}
              </ul>
            </details>
          ) : null}
        </>
      );
    }
    case "plan": {
      const steps = strings(data.steps);
      return (
        <>
          <Kind>plan</Kind> from {PLAN_SOURCE[str(data.source)] ?? str(data.source)} <Chip>{str(data.source)}</Chip>
          {str(data.reason) ? <div className="muted">{str(data.reason)}</div> : null}
          <ol className="plan-steps">
            {steps.map((s, i) => (
              <li key={i}>{s}</li>
            ))}
          </ol>
        </>
      );
    }
    case "tool_call": {
      const args = data.args;
      const edge = str(obj(args).edge_id);
      return (
        <>
          <Kind>tool call</Kind> <span className="muted">step {num(data.step)}</span> <code className="tool">{str(data.tool)}</code>
          {edge ? (
            <>
              {" "}
              on <Chip>{edge}</Chip>
            </>
          ) : null}
          <pre className="output args" aria-label="Arguments">
            {typeof args === "string" ? args : json(args ?? {})}
          </pre>
        </>
      );
    }
    case "tool_result": {
      const step = num(data.step);
      const tool = str(data.tool);
      const content = str(data.content);
      const edge = str(obj(props.calls.get(step)?.args).edge_id);
      const pending = str(data.pendingApproval);
      const condensed = content.startsWith("[condensed by analyze_output]");
      const body = <ToolContent content={content} />;
      return (
        <>
          <Kind>tool result</Kind> <span className="muted">step {step}</span> <code className="tool">{tool}</code>
          {edge ? (
            <>
              {" "}
              on <Chip>{edge}</Chip>
            </>
          ) : null}{" "}
          {pending ? (
            <Chip kind="warn">waiting for approval</Chip>
          ) : data.success === true ? (
            <Chip kind="online">succeeded</Chip>
          ) : (
            <Chip kind="class-dangerous">failed</Chip>
          )}{" "}
          {data.deduped === true ? (
            <Chip kind="warn" title="An identical call earlier in this session answered it; it did not run again">
              answered from cache
            </Chip>
          ) : null}{" "}
          {condensed ? (
            <Chip kind="warn" title="The output was long; the model read this digest made by analyze_output">
              condensed
            </Chip>
          ) : null}{" "}
          {num(data.auditSeq) ? <span className="muted">audit #{num(data.auditSeq)}</span> : null}
          {pending ? (
            <div>
              Request <code>{pending}</code> waits for an approver; the call has not run. <Link to="/approvals">Open approvals</Link>
            </div>
          ) : null}
          {body}
        </>
      );
    }
    case "guidance": {
      const content = str(data.content);
      return (
        <>
          <Kind>guidance</Kind> <code className="tool">{str(data.tool)}</code> <code>{str(obj(data.args).skill_name)}</code>{" "}
          {data.success === true ? <Chip kind="online">read</Chip> : <Chip kind="class-dangerous">failed</Chip>}{" "}
          <Chip title="A playbook tells the agent what to check; it is not evidence, has no step number and is never cited">not evidence</Chip>{" "}
          {num(data.auditSeq) ? <span className="muted">audit #{num(data.auditSeq)}</span> : null}
          <details>
            <summary>The playbook as the model read it ({content.length} characters)</summary>
            <ToolContent content={content} />
          </details>
        </>
      );
    }
    case "skipped":
      return (
        <>
          <Kind>skipped</Kind> <code className="tool">{str(data.tool)}</code>: {str(data.reason)}
        </>
      );
    case "report": {
      const path = str(data.path);
      return (
        <>
          <Kind>report</Kind> <Chip>{path === "model" ? "written by the model" : "fallback: tool output as returned"}</Chip>
          {path === "fallback" ? <p className="help">No model is configured, so no verifier runs: the report lists each step's result as returned and interprets nothing.</p> : null}
          <SafeMarkdown text={str(data.markdown)} label="Report" />
        </>
      );
    }
    case "verdict": {
      const verdict = str(data.verdict);
      const claims = strings(data.unsupported);
      return (
        <>
          <Kind>verdict</Kind>{" "}
          <Chip kind={verdict === "supported" ? "online" : verdict === "unsupported_claims" ? "class-dangerous" : "warn"}>{verdict.replace(/_/g, " ")}</Chip>
          {claims.length ? (
            <>
              <div>
                <strong>Claims no evidence supports:</strong>
              </div>
              <ul className="claims" data-testid="unsupported-claims">
                {claims.map((c, i) => (
                  <li key={i}>{c}</li>
                ))}
              </ul>
            </>
          ) : verdict === "supported" ? (
            <div>The verifier found every claim supported by the evidence.</div>
          ) : null}
          {str(data.notes) ? <div className="muted">{str(data.notes)}</div> : null}
        </>
      );
    }
    case "done": {
      const st = str(data.status);
      const usage = obj(data.usage);
      return (
        <>
          <Kind>done</Kind> <Chip kind={st === "done" ? "online" : st === "refused" ? "warn" : "class-dangerous"}>{st}</Chip> {str(data.message)}
          {num(usage.totalTokens) ? (
            <div className="muted">
              Tokens: {num(usage.promptTokens)} prompt + {num(usage.completionTokens)} completion = {num(usage.totalTokens)}
            </div>
          ) : null}
        </>
      );
    }
    default:
      return (
        <>
          <Kind>{type}</Kind>
          <pre className="output">{json(data)}</pre>
        </>
      );
  }
}
