/**
 * /edges (L2): every enrolled edge the user may reach — online state, host, OS, version, labels,
 * the skills it offers, last seen, revoked — kept live. EdgeService has no watch RPC, so the page
 * polls ListEdges every POLL_MS while it is mounted: one request at a time (the next is scheduled
 * only after the previous one answered), cancelled on unmount or when the filters change.
 */
import { useEffect, useState, type FormEvent } from "react";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Edge } from "../../../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { useSession } from "../session.tsx";
import { Chip, ClassBadge, ErrorNote, Time } from "../components.tsx";
import { Link, segment, usePath } from "../router.tsx";
import { can } from "../session.tsx";
import { EdgePage } from "./edge.tsx";
import { EnrolEdge } from "./edge-admin.tsx";

/** How often the list is refreshed. */
const POLL_MS = 2000;

/** What the list is filtered by (what ListEdges is asked). */
interface Filters {
  selector: string;
  onlineOnly: boolean;
}

/** /edges, or one edge's page at /edges/:id. */
export function EdgesPage() {
  const id = segment(usePath(), 1);
  return id ? <EdgePage key={id} id={id} /> : <EdgeList />;
}

function EdgeList() {
  const { api, user } = useSession();
  const [enrolled, setEnrolled] = useState(0);
  const [draft, setDraft] = useState("");
  const [filters, setFilters] = useState<Filters>({ selector: "", onlineOnly: false });
  const [edges, setEdges] = useState<Edge[] | null>(null);
  const [refreshed, setRefreshed] = useState<Date | null>(null);
  /** The manager refused the selector: polling stops until it changes. */
  const [selectorError, setSelectorError] = useState<unknown>(null);
  /** A refresh failed for another reason (the manager is down, …): polling goes on. */
  const [pollError, setPollError] = useState<unknown>(null);

  useEffect(() => {
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      try {
        const res = await api.edges.listEdges({ selector: filters.selector, onlineOnly: filters.onlineOnly }, { signal: abort.signal });
        if (abort.signal.aborted) return;
        setEdges(res.edges);
        setRefreshed(new Date());
        setPollError(null);
        setSelectorError(null);
      } catch (err) {
        if (abort.signal.aborted) return;
        if (err instanceof ConnectError && err.code === Code.InvalidArgument) {
          // The same selector would be refused again: wait for the user to change it.
          setSelectorError(err);
          setEdges([]);
          return;
        }
        setPollError(err);
      }
      if (!abort.signal.aborted) timer = setTimeout(tick, POLL_MS);
    };
    void tick();
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, [api, filters, enrolled]);

  const apply = (e: FormEvent) => {
    e.preventDefault();
    setFilters((f) => ({ ...f, selector: draft.trim() }));
  };
  const clear = () => {
    setDraft("");
    setFilters((f) => ({ ...f, selector: "" }));
  };

  const online = edges?.filter((e) => e.online).length ?? 0;
  const filtered = filters.selector !== "" || filters.onlineOnly;

  return (
    <>
      <h1>Edges</h1>
      {can(user).admin ? <EnrolEdge known={edges?.map((e) => e.id) ?? []} onEnrolled={() => setEnrolled((n) => n + 1)} /> : null}
      <form className="filters" onSubmit={apply} aria-label="Filter edges" role="search">
        <label htmlFor="edge-selector">
          Label selector
          <input
            id="edge-selector"
            value={draft}
            onChange={(e) => setDraft(e.target.value)}
            placeholder="env=prod,team!=db"
            aria-describedby="edge-selector-help"
            aria-invalid={selectorError ? true : undefined}
            aria-errormessage={selectorError ? "edge-selector-error" : undefined}
          />
        </label>
        <button type="submit">Apply</button>
        <button type="button" className="secondary" onClick={clear} disabled={!draft && !filters.selector}>
          Clear
        </button>
        <label className="check">
          <input type="checkbox" checked={filters.onlineOnly} onChange={(e) => setFilters((f) => ({ ...f, onlineOnly: e.target.checked }))} /> Online only
        </label>
      </form>
      <p id="edge-selector-help" className="help">
        Comma-separated <code>key=value</code>, <code>key!=value</code>, <code>key</code> or <code>!key</code>; all must match. Press Enter to apply.
      </p>
      {selectorError ? (
        <div id="edge-selector-error">
          <ErrorNote error={selectorError}>The manager refused the selector: </ErrorNote>
        </div>
      ) : null}
      <ErrorNote error={pollError}>Refreshing failed (showing the last list; retrying): </ErrorNote>
      <div className="row edges-status">
        <p role="status" data-testid="edge-count">
          {edges === null ? "Loading…" : `${edges.length} edge${edges.length === 1 ? "" : "s"}${filtered ? " match" : ""}, ${online} online`}
        </p>
        <p className="muted" data-testid="refreshed">
          {refreshed ? (
            <>
              Refreshed <time dateTime={refreshed.toISOString()}>{refreshed.toLocaleTimeString()}</time>; updates every {POLL_MS / 1000} s.
            </>
          ) : null}
        </p>
      </div>
      {edges && edges.length > 0 ? <EdgeTable edges={edges} /> : null}
      {edges && edges.length === 0 && !selectorError ? (
        <p className="muted">{filtered ? "No edge matches these filters." : "No edge is enrolled yet (an admin enrols one here or with `ongrid edge enroll ID`, then starts the agent with its token)."}</p>
      ) : null}
    </>
  );
}

function EdgeTable(props: { edges: Edge[] }) {
  return (
    <div className="table-wrap">
      <table className="edges">
        <caption className="sr-only">Enrolled edges</caption>
        <thead>
          <tr>
            <th scope="col">Edge</th>
            <th scope="col">State</th>
            <th scope="col">Hostname</th>
            <th scope="col">OS</th>
            <th scope="col">Version</th>
            <th scope="col">Labels</th>
            <th scope="col">Skills</th>
            <th scope="col">Last seen</th>
          </tr>
        </thead>
        <tbody>
          {props.edges.map((e) => (
            <EdgeRow key={e.id} edge={e} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function EdgeRow(props: { edge: Edge }) {
  const e = props.edge;
  const labels = Object.entries(e.labels).sort(([a], [b]) => a.localeCompare(b));
  return (
    <tr data-edge={e.id} data-online={e.online ? "true" : "false"}>
      <th scope="row">
        <Link to={`/edges/${encodeURIComponent(e.id)}`}>
          <code>{e.id}</code>
        </Link>
      </th>
      <td>
        <span className="chips" data-testid="edge-state">
          {e.online ? <Chip kind="online">online</Chip> : <Chip kind="offline">offline</Chip>}
          {e.revoked ? (
            <Chip kind="class-dangerous" title="Its token is revoked; it cannot connect until re-enrolled">
              revoked
            </Chip>
          ) : null}
        </span>
      </td>
      <td>{e.hostname || <span className="muted">—</span>}</td>
      <td>{e.os || <span className="muted">—</span>}</td>
      <td>{e.version || <span className="muted">—</span>}</td>
      <td>
        {labels.length ? (
          <ul className="chips" aria-label={`Labels of ${e.id}`} data-testid="edge-labels">
            {labels.map(([k, v]) => (
              <li key={k}>
                <Chip>
                  {k}={v}
                </Chip>
              </li>
            ))}
          </ul>
        ) : (
          <span className="muted">none</span>
        )}
      </td>
      <td>
        {e.skills.length ? (
          <details>
            <summary>
              {e.skills.length} skill{e.skills.length === 1 ? "" : "s"}
            </summary>
            <ul className="edge-skills">
              {e.skills.map((s) => (
                <li key={s.key}>
                  <code>{s.key}</code> <ClassBadge value={s.class} />
                </li>
              ))}
            </ul>
          </details>
        ) : (
          <span className="muted">none</span>
        )}
      </td>
      <td>
        <Time value={e.lastSeen} />
      </td>
    </tr>
  );
}
