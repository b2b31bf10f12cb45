/**
 * A skill's run form: the params form generated from its schema (react-jsonschema-form), where to
 * run it (one edge, edges by label, or every online edge in reach after a confirmation), the
 * permission mode the caller's role may choose, and the answer: the result envelope, the parked
 * approval, or the fan-out's rows as they arrive. /skills shows it for the selected skill.
 */
import { useEffect, useMemo, useRef, useState } from "react";
import Form from "@rjsf/core";
import type { IChangeEvent } from "@rjsf/core";
import type { RJSFSchema, UiSchema } from "@rjsf/utils";
import { PermissionMode, SkillClass, SkillScope, type Metadata, type SkillError } from "../../../../proto/gen/ongrid/v1/skill_pb.ts";
import type { Edge } from "../../../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { ApprovalState, type Approval } from "../../../../proto/gen/ongrid/v1/approval_service_pb.ts";
import type { FanOutEdgeResult, FanOutSummary, ExecuteSkillResponse } from "../../../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { useSession, can, roleName } from "../session.tsx";
import { Link } from "../router.tsx";
import { ClassBadge, ErrorNote, OutputView, ResultView, ScopeChip, Chip } from "../components.tsx";
import { formValidator } from "../validator.ts";
import { formButtons } from "../form-buttons.tsx";

/** "1 edge", "2 edges". */
export function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** The modes an operator (or above) may ask for; viewers run safe skills only and get no choice. */
const MODES: Array<[PermissionMode, string]> = [
  [PermissionMode.UNSPECIFIED, "Manager default (gate.default_mode)"],
  [PermissionMode.READ_ONLY, "Read only: safe calls only"],
  [PermissionMode.NORMAL, "Normal: non-safe calls wait for approval"],
  [PermissionMode.ASK_DESTRUCTIVE, "Ask destructive: high-risk calls go to approval too"],
  [PermissionMode.BYPASS, "Bypass: no approval (only if the manager sets gate.allow_bypass)"],
];

function parseSchema(text: string): RJSFSchema {
  try {
    const s = JSON.parse(text) as RJSFSchema;
    return s && typeof s === "object" ? s : { type: "object" };
  } catch {
    return { type: "object" };
  }
}

type Target = "one" | "many" | "all";
type Params = Record<string, never>;
type Outcome =
  | { kind: "result"; res: ExecuteSkillResponse }
  | { kind: "fanout"; rows: FanOutEdgeResult[]; summary?: FanOutSummary; selector: string }
  | { kind: "none"; text: string };

/** The run form of one skill, given the edges as ListEdges returned them. */
export function SkillRunner(props: { skill: Metadata; edges: Edge[] }) {
  const { api, user } = useSession();
  const { skill } = props;
  const host = skill.scope !== SkillScope.MANAGER;
  const schema = useMemo(() => parseSchema(skill.jsonSchema), [skill.jsonSchema]);
  const offering = props.edges.filter((e) => e.online && (skill.edgeIds.length === 0 || skill.edgeIds.includes(e.id)));
  const [target, setTarget] = useState<Target>("one");
  const [edgeId, setEdgeId] = useState(offering[0]?.id ?? "");
  const [selector, setSelector] = useState("");
  const [mode, setMode] = useState<PermissionMode>(PermissionMode.UNSPECIFIED);
  const [sop, setSop] = useState("");
  const [formData, setFormData] = useState<unknown>(undefined);
  const [running, setRunning] = useState(false);
  const [confirm, setConfirm] = useState<{ params: Params; edges: string[] } | null>(null);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const [error, setError] = useState<unknown>(null);
  const allowed = can(user);
  // A dynamic-risk skill (exec) is classed per call: the manager decides; the form does not guess.
  const mayRun = skill.class === SkillClass.SAFE || skill.class === SkillClass.UNSPECIFIED || skill.dynamicRisk || allowed.operate;
  const mayFanOut = skill.class === SkillClass.SAFE || skill.dynamicRisk;
  const fanOut = host && target !== "one";
  const results = useRef<HTMLDivElement>(null);
  // A run still streaming when the page goes away (another skill, another page) is ended.
  const inFlight = useRef<AbortController | null>(null);
  useEffect(() => () => inFlight.current?.abort(), []);
  const hasOutcome = outcome !== null || error !== null || confirm !== null;
  useEffect(() => {
    // The form can be long: bring the answer into view when it starts to arrive.
    if (hasOutcome) results.current?.scrollIntoView({ block: "nearest" });
  }, [hasOutcome]);

  const submit = async (e: IChangeEvent) => {
    setError(null);
    setOutcome(null);
    setConfirm(null);
    const params = (e.formData ?? {}) as Params;
    if (host && !fanOut && !edgeId) {
      setError(new Error("Choose an edge to run this host skill on."));
      return;
    }
    if (target === "many" && host && !selector.trim()) {
      setError(new Error("Give a label selector (e.g. env=prod) to choose the edges."));
      return;
    }
    if (target === "all" && host) {
      // The manager's fan-out needs edge ids or a selector: "all" is every online edge in the
      // caller's reach (what ListEdges returns) that offers the skill, counted now.
      try {
        const { edges } = await api.edges.listEdges({ onlineOnly: true });
        const ids = edges.filter((ed) => ed.online && ed.skills.some((s) => s.key === skill.key)).map((ed) => ed.id);
        if (ids.length === 0) setOutcome({ kind: "none", text: `No edge matched: no online edge in your reach offers ${skill.key}. Nothing ran.` });
        else setConfirm({ params, edges: ids });
      } catch (err) {
        setError(err);
      }
      return;
    }
    await run(params, []);
  };

  const run = async (params: Params, edgeIds: string[]) => {
    setConfirm(null);
    setRunning(true);
    inFlight.current?.abort();
    const ac = new AbortController();
    inFlight.current = ac;
    try {
      if (fanOut) {
        const sel = target === "many" ? selector.trim() : "";
        const rows: FanOutEdgeResult[] = [];
        setOutcome({ kind: "fanout", rows: [], selector: sel });
        // Results come in batches (whatever had arrived when the manager wrote), one render each.
        const stream = api.skills.fanOutSkill({ key: skill.key, input: { case: "params", value: params }, selector: sel, edgeIds, permissionMode: mode, batchResults: true }, { signal: ac.signal });
        for await (const ev of stream) {
          if (ev.event.case === "edgeResults") {
            rows.push(...ev.event.value.results);
            setOutcome({ kind: "fanout", rows: [...rows], selector: sel });
          } else if (ev.event.case === "summary") {
            setOutcome({ kind: "fanout", rows: [...rows], summary: ev.event.value, selector: sel });
          }
        }
      } else {
        const res = await api.skills.executeSkill({ key: skill.key, input: { case: "params", value: params }, edgeId: host ? edgeId : "", sop: sop.trim(), permissionMode: mode, waitForApproval: false }, { signal: ac.signal });
        setOutcome({ kind: "result", res });
      }
    } catch (err) {
      if (!ac.signal.aborted) setError(err);
    } finally {
      if (!ac.signal.aborted) setRunning(false);
    }
  };

  const submitText = running ? "Running…" : target === "all" && host ? "Run on all edges…" : fanOut ? "Run on matching edges" : "Run";
  const uiSchema: UiSchema = { "ui:submitButtonOptions": { submitText, props: { disabled: running || !mayRun || confirm !== null } } };

  return (
    <article aria-labelledby="skill-title">
      <h2 id="skill-title">
        {skill.name || skill.key} <code>{skill.key}</code>
      </h2>
      <p className="row">
        <ScopeChip value={skill.scope} />
        <ClassBadge value={skill.class} />
        {skill.category ? <Chip>{skill.category}</Chip> : null}
        {skill.dynamicRisk ? <Chip kind="warn" title="The class is decided per call from the params">risk from params</Chip> : null}
      </p>
      <p>{skill.description}</p>
      {skill.resultPreview ? (
        <details>
          <summary>What a result looks like</summary>
          <pre className="output">{skill.resultPreview}</pre>
        </details>
      ) : null}
      {!mayRun ? <p className="error">Your role may not run {skill.class === SkillClass.DANGEROUS ? "dangerous" : "mutating"} skills; an operator can request it.</p> : null}
      {host ? (
        <fieldset>
          <legend>Where</legend>
          <div className="row" role="radiogroup" aria-label="Target">
            <label>
              <input type="radio" name="target" value="one" checked={target === "one"} onChange={() => setTarget("one")} /> One edge
            </label>
            <label>
              <input type="radio" name="target" value="many" checked={target === "many"} onChange={() => setTarget("many")} disabled={!mayFanOut} /> Edges by label (fan-out)
            </label>
            <label>
              <input type="radio" name="target" value="all" checked={target === "all"} onChange={() => setTarget("all")} disabled={!mayFanOut} /> All edges in reach
            </label>
          </div>
          {target === "one" ? (
            <p>
              <label htmlFor="edge">Edge</label>{" "}
              <select id="edge" value={edgeId} onChange={(e) => setEdgeId(e.target.value)}>
                {offering.length === 0 ? <option value="">no online edge offers this skill</option> : null}
                {offering.map((e) => (
                  <option key={e.id} value={e.id}>
                    {e.id}
                    {Object.keys(e.labels).length ? ` (${Object.entries(e.labels).map(([k, v]) => `${k}=${v}`).join(",")})` : ""}
                  </option>
                ))}
              </select>
            </p>
          ) : target === "many" ? (
            <p>
              <label htmlFor="selector">Label selector</label>{" "}
              <input id="selector" value={selector} onChange={(e) => setSelector(e.target.value)} placeholder="env=prod,team!=db" aria-describedby="selector-help" />
              <span id="selector-help" className="help">
                {" "}
                Online edges whose labels match; results appear as each edge answers.
              </span>
            </p>
          ) : (
            <p className="help">Every online edge in your reach that offers this skill; you confirm the count before anything runs.</p>
          )}
          {!mayFanOut ? <p className="help">A fan-out runs only calls the gate allows outright: {skill.key} needs approval, so it runs on one edge at a time.</p> : null}
        </fieldset>
      ) : null}
      {allowed.operate ? (
        <p>
          <label htmlFor="mode">Permission mode</label>{" "}
          <select id="mode" value={mode} onChange={(e) => setMode(Number(e.target.value) as PermissionMode)} aria-describedby="mode-help">
            {MODES.map(([m, label]) => (
              <option key={m} value={m}>
                {label}
              </option>
            ))}
          </select>
          <span id="mode-help" className="help help-line">
            The manager's gate decides every call in this mode; a refusal says why.
          </span>
        </p>
      ) : (
        <p className="help" data-testid="mode-note">
          Your role ({roleName(user.role)}) runs safe calls only, in the manager's default mode: no mode to choose.
        </p>
      )}
      {skill.class === SkillClass.DANGEROUS ? (
        <p>
          <label htmlFor="sop">Signed SOP</label>
          <textarea id="sop" rows={4} value={sop} onChange={(e) => setSop(e.target.value)} placeholder="paste the output of `ongrid sop sign`" />
        </p>
      ) : null}
      <Form
        className="rjsf"
        schema={schema}
        uiSchema={uiSchema}
        validator={formValidator}
        templates={{ ButtonTemplates: formButtons }}
        formData={formData}
        onChange={(e) => setFormData(e.formData)}
        onSubmit={submit}
        onError={() => {
          // a refused form sent nothing: an earlier run's answer must not look like this one's
          setOutcome(null);
          setError(null);
          setConfirm(null);
        }}
        showErrorList="top"
        noHtml5Validate
        focusOnFirstError
        idPrefix="param"
      />
      <div aria-live="polite" ref={results}>
        {confirm ? (
          <section className="confirm" aria-label="Confirm the fan-out" data-testid="confirm">
            <p>
              Run <code>{skill.key}</code> on {plural(confirm.edges.length, "edge")} in your reach: {confirm.edges.slice(0, 10).join(", ")}
              {confirm.edges.length > 10 ? ` and ${confirm.edges.length - 10} more` : ""}?
            </p>
            <div className="row">
              <button type="button" autoFocus onClick={() => void run(confirm.params, confirm.edges)}>
                Run on {plural(confirm.edges.length, "edge")}
              </button>
              <button type="button" className="secondary" onClick={() => setConfirm(null)}>
                Cancel
              </button>
            </div>
          </section>
        ) : null}
        <ErrorNote error={error}>Refused: </ErrorNote>
        {outcome?.kind === "none" ? (
          <p role="status" data-testid="no-edge">
            {outcome.text}
          </p>
        ) : null}
        {outcome?.kind === "result" ? <ExecuteOutcome res={outcome.res} audit={allowed.approve ? auditLink(skill.key, host ? edgeId : "", user.id) : ""} /> : null}
        {outcome?.kind === "fanout" ? <FanOutTable rows={outcome.rows} summary={outcome.summary} selector={outcome.selector} running={running} /> : null}
      </div>
    </article>
  );
}

/** The audit timeline filtered to this caller's calls of this skill (on this edge). */
function auditLink(key: string, edge: string, userId: string): string {
  const q = new URLSearchParams({ tool: key, user: userId });
  if (edge) q.set("edge", edge);
  return `/admin/audit?${q}`;
}

/** "Audit row #N", linked to the timeline for those who may read it. */
function AuditRef(props: { seq: bigint; href: string }) {
  const text = `Audit row #${String(props.seq)}`;
  return <p className="muted">{props.href ? <Link to={props.href}>{text}</Link> : text}</p>;
}

function ExecuteOutcome(props: { res: ExecuteSkillResponse; audit: string }) {
  const { res } = props;
  const approval: Approval | undefined = res.approval;
  if (approval && approval.state === ApprovalState.PENDING) {
    return (
      <section className="result" data-testid="parked" aria-label="Waiting for approval">
        <p>
          <strong>Waiting for approval.</strong> Request <code>{approval.id}</code> needs {approval.requiredApprovals} approval{approval.requiredApprovals === 1 ? "" : "s"} from someone else; it runs when approved.{" "}
          <Link to="/approvals">Open approvals</Link>
        </p>
        <AuditRef seq={res.auditSeq} href={props.audit} />
      </section>
    );
  }
  return (
    <>
      {res.result ? <ResultView result={res.result} /> : null}
      <AuditRef seq={res.auditSeq} href={props.audit} />
    </>
  );
}

function errorLine(e: SkillError) {
  return (
    <p className="result-error">
      <code>{e.code}</code> {e.message}
      {e.hint ? <span className="hint"> — {e.hint}</span> : null}
    </p>
  );
}

/** The fan-out's one-line status: what matched and how it went. */
function summaryText(s: FanOutSummary, selector: string): string {
  const left = s.leftOut ? `; ${plural(s.leftOut, "matching edge")} outside your reach left out` : "";
  if (s.targeted === 0) return `No edge matched${selector ? ` the selector "${selector}"` : ""}${left}. Nothing ran.`;
  return `${plural(s.targeted, "edge")}: ${s.succeeded} succeeded, ${s.failed} failed${s.timedOut ? ` (${s.timedOut} timed out)` : ""}${left} in ${s.durationMs} ms`;
}

function FanOutTable(props: { rows: FanOutEdgeResult[]; summary?: FanOutSummary; selector: string; running: boolean }) {
  const none = props.summary?.targeted === 0;
  return (
    <section aria-label="Fan-out results" data-testid="fanout">
      <p role="status">{props.summary ? summaryText(props.summary, props.selector) : props.running ? `${plural(props.rows.length, "edge")} answered so far…` : ""}</p>
      {none ? null : (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Edge</th>
                <th scope="col">Outcome</th>
                <th scope="col">Time</th>
                <th scope="col">Output</th>
              </tr>
            </thead>
            <tbody>
              {props.rows.map((r) => {
                const ok = r.result?.success === true;
                const output = r.result?.output ? toJson(ValueSchema, r.result.output) : undefined;
                return (
                  <tr key={r.edgeId} data-edge={r.edgeId} data-success={String(ok)}>
                    <td>{r.edgeId}</td>
                    <td>{ok ? <Chip kind="online">ok</Chip> : <Chip kind="class-dangerous">{r.error ? "refused" : "failed"}</Chip>}</td>
                    <td>{r.result ? `${r.result.durationMs} ms` : "—"}</td>
                    <td>
                      {r.error ? errorLine(r.error) : null}
                      {r.result?.error ? errorLine(r.result.error) : null}
                      {output !== undefined && output !== null ? (
                        <details open={!ok}>
                          <summary>output{r.result?.truncated ? " (truncated)" : ""}</summary>
                          <OutputView value={output} />
                        </details>
                      ) : null}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
