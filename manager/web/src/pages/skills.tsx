/**
 * /skills (L1): every skill with its scope chip, class badge and category; a form generated from
 * its param schema (react-jsonschema-form); run on one edge, or on several by label with the
 * results streaming in; the result envelope rendered.
 */
import { useEffect, useMemo, useRef, useState } from "react";
import Form from "@rjsf/core";
import type { IChangeEvent } from "@rjsf/core";
import type { RJSFSchema, UiSchema } from "@rjsf/utils";
import { SkillClass, SkillScope, type Metadata, type SkillError } from "../../../../proto/gen/ongrid/v1/skill_pb.ts";
import type { Edge } from "../../../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { ApprovalState, type Approval } from "../../../../proto/gen/ongrid/v1/approval_service_pb.ts";
import type { FanOutEdgeResult, FanOutSummary, ExecuteSkillResponse } from "../../../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { useSession, can } from "../session.tsx";
import { Link, navigate, segment, usePath } from "../router.tsx";
import { ClassBadge, ErrorNote, ResultView, ScopeChip, Chip, outputText } from "../components.tsx";
import { formValidator } from "../validator.ts";
import { formButtons } from "../form-buttons.tsx";

/** The skills page: the list, and the selected skill's form. */
export function SkillsPage() {
  const { api } = useSession();
  const path = usePath();
  const selected = segment(path, 1);
  const [skills, setSkills] = useState<Metadata[] | null>(null);
  const [edges, setEdges] = useState<Edge[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [filter, setFilter] = useState("");

  useEffect(() => {
    let live = true;
    Promise.all([api.skills.listSkills({}), api.edges.listEdges({})]).then(
      ([s, e]) => {
        if (!live) return;
        setSkills(s.skills);
        setEdges(e.edges);
      },
      (err) => live && setError(err),
    );
    return () => {
      live = false;
    };
  }, [api]);

  const shown = useMemo(() => {
    const f = filter.trim().toLowerCase();
    return (skills ?? []).filter((s) => !f || `${s.key} ${s.name} ${s.category} ${s.description}`.toLowerCase().includes(f));
  }, [skills, filter]);
  const skill = skills?.find((s) => s.key === selected);

  return (
    <>
      <h1>Skills</h1>
      <ErrorNote error={error} />
      <div className="split">
        <section aria-label="Skill list">
          <label htmlFor="skill-filter">Filter</label>
          <input id="skill-filter" type="search" value={filter} onChange={(e) => setFilter(e.target.value)} placeholder="key, category, words…" />
          <p className="muted" role="status">
            {skills === null ? "Loading…" : `${shown.length} of ${skills.length} skills`}
          </p>
          <ul className="list">
            {shown.map((s) => (
              <li key={s.key}>
                <button type="button" className="item" aria-pressed={s.key === selected} onClick={() => navigate(`/skills/${encodeURIComponent(s.key)}`)} data-skill={s.key}>
                  <span className="name">{s.name || s.key}</span> <code>{s.key}</code>
                  <span className="chips">
                    <ScopeChip value={s.scope} />
                    <ClassBadge value={s.class} />
                    {s.category ? <Chip>{s.category}</Chip> : null}
                  </span>
                  <span className="muted">{s.description}</span>
                </button>
              </li>
            ))}
          </ul>
        </section>
        <section aria-label="Run a skill">
          {skill ? <SkillRunner key={skill.key} skill={skill} edges={edges} /> : <p className="muted">{selected && skills ? `No skill "${selected}".` : "Choose a skill to see its form."}</p>}
        </section>
      </div>
    </>
  );
}

function parseSchema(text: string): RJSFSchema {
  try {
    const s = JSON.parse(text) as RJSFSchema;
    return s && typeof s === "object" ? s : { type: "object" };
  } catch {
    return { type: "object" };
  }
}

type Outcome = { kind: "result"; res: ExecuteSkillResponse } | { kind: "fanout"; rows: FanOutEdgeResult[]; summary?: FanOutSummary };

/** The run form of one skill (also on an edge's page). */
export function SkillRunner(props: { skill: Metadata; edges: Edge[] }) {
  const { api, user } = useSession();
  const { skill } = props;
  const host = skill.scope !== SkillScope.MANAGER;
  const schema = useMemo(() => parseSchema(skill.jsonSchema), [skill.jsonSchema]);
  const offering = props.edges.filter((e) => e.online && (skill.edgeIds.length === 0 || skill.edgeIds.includes(e.id)));
  const [target, setTarget] = useState<"one" | "many">("one");
  const [edgeId, setEdgeId] = useState(offering[0]?.id ?? "");
  const [selector, setSelector] = useState("");
  const [sop, setSop] = useState("");
  const [formData, setFormData] = useState<unknown>(undefined);
  const [running, setRunning] = useState(false);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const [error, setError] = useState<unknown>(null);
  const allowed = can(user);
  const mayRun = skill.class === SkillClass.SAFE || skill.class === SkillClass.UNSPECIFIED || allowed.operate;
  const fanOut = host && target === "many";
  const results = useRef<HTMLDivElement>(null);
  // A run still streaming when the page goes away (another skill, another page) is ended.
  const inFlight = useRef<AbortController | null>(null);
  useEffect(() => () => inFlight.current?.abort(), []);
  const hasOutcome = outcome !== null || error !== null;
  useEffect(() => {
    // The form can be long: bring the answer into view when it starts to arrive.
    if (hasOutcome) results.current?.scrollIntoView({ block: "nearest" });
  }, [hasOutcome]);

  const run = async (e: IChangeEvent) => {
    setError(null);
    setOutcome(null);
    if (host && !fanOut && !edgeId) {
      setError(new Error("Choose an edge to run this host skill on."));
      return;
    }
    if (fanOut && !selector.trim()) {
      setError(new Error("Give a label selector (e.g. env=prod) to choose the edges."));
      return;
    }
    setRunning(true);
    const params = (e.formData ?? {}) as Record<string, never>;
    inFlight.current?.abort();
    const ac = new AbortController();
    inFlight.current = ac;
    try {
      if (fanOut) {
        const rows: FanOutEdgeResult[] = [];
        setOutcome({ kind: "fanout", rows: [] });
        // Results come in batches (whatever had arrived when the manager wrote), one render each.
        for await (const ev of api.skills.fanOutSkill({ key: skill.key, input: { case: "params", value: params }, selector: selector.trim(), batchResults: true }, { signal: ac.signal })) {
          if (ev.event.case === "edgeResults") {
            rows.push(...ev.event.value.results);
            setOutcome({ kind: "fanout", rows: [...rows] });
          } else if (ev.event.case === "summary") {
            setOutcome({ kind: "fanout", rows: [...rows], summary: ev.event.value });
          }
        }
      } else {
        const res = await api.skills.executeSkill({ key: skill.key, input: { case: "params", value: params }, edgeId: host ? edgeId : "", sop: sop.trim(), waitForApproval: false }, { signal: ac.signal });
        setOutcome({ kind: "result", res });
      }
    } catch (err) {
      if (!ac.signal.aborted) setError(err);
    } finally {
      if (!ac.signal.aborted) setRunning(false);
    }
  };

  const uiSchema: UiSchema = { "ui:submitButtonOptions": { submitText: running ? "Running…" : fanOut ? "Run on matching edges" : "Run", props: { disabled: running || !mayRun } } };

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
              <input type="radio" name="target" value="many" checked={target === "many"} onChange={() => setTarget("many")} disabled={skill.class !== SkillClass.SAFE} /> Edges by label (fan-out)
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
          ) : (
            <p>
              <label htmlFor="selector">Label selector</label>{" "}
              <input id="selector" value={selector} onChange={(e) => setSelector(e.target.value)} placeholder="env=prod,team!=db" aria-describedby="selector-help" />
              <span id="selector-help" className="help">
                {" "}
                Online edges whose labels match; results appear as each edge answers.
              </span>
            </p>
          )}
        </fieldset>
      ) : null}
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
        onSubmit={run}
        onError={() => {
          // a refused form sent nothing: an earlier run's answer must not look like this one's
          setOutcome(null);
          setError(null);
        }}
        showErrorList="top"
        noHtml5Validate
        focusOnFirstError
        idPrefix="param"
      />
      <div aria-live="polite" ref={results}>
        <ErrorNote error={error}>Refused: </ErrorNote>
        {outcome?.kind === "result" ? <ExecuteOutcome res={outcome.res} audit={allowed.approve ? auditLink(skill.key, host ? edgeId : "", user.id) : ""} /> : null}
        {outcome?.kind === "fanout" ? <FanOutTable rows={outcome.rows} summary={outcome.summary} running={running} /> : null}
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
    <>
      <code>{e.code}</code> {e.message}
      {e.hint ? <span className="hint"> — {e.hint}</span> : null}
    </>
  );
}

function FanOutTable(props: { rows: FanOutEdgeResult[]; summary?: FanOutSummary; running: boolean }) {
  return (
    <section aria-label="Fan-out results" data-testid="fanout">
      <p role="status">
        {props.summary
          ? `${props.summary.targeted} edges: ${props.summary.succeeded} succeeded, ${props.summary.failed} failed${props.summary.timedOut ? ` (${props.summary.timedOut} timed out)` : ""}${props.summary.leftOut ? `, ${props.summary.leftOut} outside your reach left out` : ""} in ${props.summary.durationMs} ms`
          : props.running
            ? `${props.rows.length} edge${props.rows.length === 1 ? "" : "s"} answered so far…`
            : ""}
      </p>
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
              return (
                <tr key={r.edgeId} data-edge={r.edgeId}>
                  <td>{r.edgeId}</td>
                  <td>{ok ? <Chip kind="online">ok</Chip> : <Chip kind="class-dangerous">{r.error ? "refused" : "failed"}</Chip>}</td>
                  <td>{r.result ? `${r.result.durationMs} ms` : "—"}</td>
                  <td>
                    {r.error ? errorLine(r.error) : null}
                    {r.result?.error ? errorLine(r.result.error) : null}
                    {r.result?.output !== undefined ? (
                      <details>
                        <summary>output{r.result.truncated ? " (truncated)" : ""}</summary>
                        <pre className="output">{outputText(r.result.output)}</pre>
                      </details>
                    ) : null}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}
