/**
 * /edges/:id: one edge — its state (online, last seen, version, host), the labels reach and
 * selectors use beside the ones the edge reports (shown, never used), the skills it offers with
 * the run form of /skills, its recent calls from the audit log (approvers and admins; each row
 * links to the audit page), and for admins the labels editor, a new token and revocation.
 * GetEdge and the audit rows are polled every POLL_MS while the page is open (no watch RPC).
 */
import { useCallback, useEffect, useState } from "react";
import { Code, ConnectError } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Edge } from "../../../../proto/gen/ongrid/v1/edge_service_pb.ts";
import type { Metadata } from "../../../../proto/gen/ongrid/v1/skill_pb.ts";
import type { ToolCall } from "../../../../proto/gen/ongrid/v1/audit_service_pb.ts";
import { useSession, can, roleName } from "../session.tsx";
import { Link } from "../router.tsx";
import { Chip, ClassBadge, ErrorNote, Time } from "../components.tsx";
import { SkillRunner } from "./skill-runner.tsx";
import { EdgeAdmin } from "./edge-admin.tsx";

const POLL_MS = 2000;
/** Audit rows shown. */
const RECENT = 20;

/** One edge's page. */
export function EdgePage(props: { id: string }) {
  const { api, user } = useSession();
  const allowed = can(user);
  const [edge, setEdge] = useState<Edge | null>(null);
  const [missing, setMissing] = useState<unknown>(null);
  const [pollError, setPollError] = useState<unknown>(null);
  const [calls, setCalls] = useState<ToolCall[] | null>(null);
  const [registry, setRegistry] = useState<Metadata[]>([]);
  const [chosen, setChosen] = useState("");
  const [tick, setTick] = useState(0);
  const refresh = useCallback(() => setTick((n) => n + 1), []);


  useEffect(() => {
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const [e, c] = await Promise.all([
          api.edges.getEdge({ id: props.id }, { signal: abort.signal }),
          allowed.approve ? api.audit.listToolCalls({ edgeId: props.id, newestFirst: true, limit: RECENT }, { signal: abort.signal }) : null,
        ]);
        if (abort.signal.aborted) return;
        setEdge(e.edge ?? null);
        if (c) setCalls(c.toolCalls);
        setPollError(null);
      } catch (err) {
        if (abort.signal.aborted) return;
        // Not found (or outside the caller's reach, answered the same): stop asking.
        if (err instanceof ConnectError && err.code === Code.NotFound) return setMissing(err);
        setPollError(err);
      }
      if (!abort.signal.aborted) timer = setTimeout(poll, POLL_MS);
    };
    void poll();
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, [api, props.id, allowed.approve, tick]);

  // The manager's view of the skills (its classes, which edges offer each), again when the edge comes or goes.
  const online = edge?.online ?? false;
  useEffect(() => {
    let live = true;
    api.skills.listSkills({}).then(
      (r) => live && setRegistry(r.skills),
      () => undefined, // the run form falls back to the edge's own metadata
    );
    return () => {
      live = false;
    };
  }, [api, online]);

  if (missing)
    return (
      <>
        <h1>Edge {props.id}</h1>
        <ErrorNote error={missing} />
        <p>
          <Link to="/edges">All edges</Link>
        </p>
      </>
    );
  if (!edge) return <p role="status">{pollError ? <ErrorNote error={pollError} /> : "Loading…"}</p>;
  const runnable = edge.skills.map((s) => registry.find((r) => r.key === s.key) ?? s);
  const skill = runnable.find((s) => s.key === chosen);

  return (
    <>
      <p className="crumbs">
        <Link to="/edges">Edges</Link> /
      </p>
      <h1>
        Edge <code>{edge.id}</code>
      </h1>
      <ErrorNote error={pollError}>Refreshing failed (showing the last state; retrying): </ErrorNote>
      <dl className="facts" data-testid="edge-facts">
        <dt>State</dt>
        <dd data-testid="edge-state">
          {edge.online ? <Chip kind="online">online</Chip> : <Chip kind="offline">offline</Chip>}
          {edge.revoked ? (
            <>
              {" "}
              <Chip kind="class-dangerous">revoked</Chip>
            </>
          ) : null}
        </dd>
        <dt>Last seen</dt>
        <dd>
          <Time value={edge.lastSeen} />
        </dd>
        <dt>Version</dt>
        <dd data-testid="edge-version">{edge.version || <span className="muted">—</span>}</dd>
        <dt>Host</dt>
        <dd>
          {edge.hostname || <span className="muted">—</span>} {edge.os ? <span className="muted">({edge.os})</span> : null}
        </dd>
        <dt>Enrolled</dt>
        <dd>
          <Time value={edge.enrolledAt} />
        </dd>
        <dt>Labels</dt>
        <dd>
          <Labels labels={edge.labels} testId="edge-labels" none="none" />
        </dd>
        <dt>Reported</dt>
        <dd>
          <Labels labels={edge.reportedLabels} testId="edge-reported" none="none reported" />
          <span className="help"> reported by the edge in its hello — shown, not used for reach or selectors</span>
        </dd>
      </dl>
      {allowed.admin ? <EdgeAdmin edge={edge} onChanged={refresh} /> : null}

      <h2>Skills</h2>
      {runnable.length === 0 ? <p className="muted">It has offered no skills yet (it lists them when it connects).</p> : null}
      {runnable.length ? (
        <ul className="edge-skill-list" aria-label={`Skills of ${edge.id}`}>
          {runnable.map((s) => (
            <li key={s.key}>
              <button type="button" className="secondary" aria-pressed={s.key === chosen} data-skill={s.key} onClick={() => setChosen(s.key === chosen ? "" : s.key)}>
                {s.key}
              </button>{" "}
              <ClassBadge value={s.class} />
            </li>
          ))}
        </ul>
      ) : null}
      {skill ? (
        <section aria-label="Run a skill on this edge" className="edge-run">
          {edge.online ? null : <p className="error">The edge is offline: a call cannot reach it.</p>}
          <SkillRunner key={skill.key} skill={skill} edges={[edge]} />
        </section>
      ) : runnable.length ? (
        <p className="muted">Choose a skill to run it on this edge.</p>
      ) : null}

      <h2>Recent calls</h2>
      {allowed.approve ? <RecentCalls edgeId={edge.id} calls={calls} /> : <p className="muted">The audit log is for approvers and admins; your role ({roleName(user.role)}) cannot read it.</p>}
    </>
  );
}

function Labels(props: { labels: Record<string, string>; testId: string; none: string }) {
  const entries = Object.entries(props.labels).sort(([a], [b]) => a.localeCompare(b));
  if (!entries.length)
    return (
      <span className="muted" data-testid={props.testId}>
        {props.none}
      </span>
    );
  return (
    <ul className="chips" data-testid={props.testId}>
      {entries.map(([k, v]) => (
        <li key={k}>
          <Chip>
            {k}={v}
          </Chip>
        </li>
      ))}
    </ul>
  );
}

/** The audit page filtered down to one row: its edge and tool, and its start's millisecond. */
function auditRowLink(edgeId: string, c: ToolCall): string {
  const q = new URLSearchParams({ edge: edgeId, tool: c.toolName });
  if (c.startedAt) {
    const ms = timestampDate(c.startedAt).getTime();
    q.set("since", new Date(ms).toISOString());
    q.set("until", new Date(ms + 1).toISOString());
  }
  return `/admin/audit?${q}`;
}

function outcome(c: ToolCall): { text: string; kind: string } {
  if (c.decision === "deny") return { text: "refused", kind: "class-dangerous" };
  if (c.decision === "ask" && !c.approvalId) return { text: "parked for approval", kind: "warn" };
  if (c.error) return { text: "failed", kind: "class-dangerous" };
  return { text: "ok", kind: "online" };
}

function RecentCalls(props: { edgeId: string; calls: ToolCall[] | null }) {
  const { calls } = props;
  if (calls === null) return <p role="status">Loading…</p>;
  return (
    <>
      <p className="muted">
        The {RECENT} newest audit rows that targeted this edge. <Link to={`/admin/audit?edge=${encodeURIComponent(props.edgeId)}`}>All of them in the audit log</Link>
      </p>
      {calls.length === 0 ? (
        <p className="muted">No call has targeted this edge yet.</p>
      ) : (
        <div className="table-wrap">
          <table className="recent-calls">
            <caption className="sr-only">Recent calls on {props.edgeId}</caption>
            <thead>
              <tr>
                <th scope="col">Row</th>
                <th scope="col">Started</th>
                <th scope="col">Skill</th>
                <th scope="col">Caller</th>
                <th scope="col">Decision</th>
                <th scope="col">Outcome</th>
              </tr>
            </thead>
            <tbody>
              {calls.map((c) => {
                const o = outcome(c);
                return (
                  <tr key={String(c.seq)} data-testid="recent-call" data-seq={String(c.seq)}>
                    <th scope="row">
                      <Link to={auditRowLink(props.edgeId, c)}>#{String(c.seq)}</Link>
                    </th>
                    <td>
                      <Time value={c.startedAt} />
                    </td>
                    <td>
                      <code>{c.toolName}</code>
                    </td>
                    <td>{c.callerUserId === "0" ? "system" : c.callerUserId}</td>
                    <td>{c.decision}</td>
                    <td>
                      <Chip kind={o.kind}>{o.text}</Chip> {c.error ? <span className="audit-error">{c.error}</span> : null}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
