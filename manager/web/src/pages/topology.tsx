/**
 * /topology (K5): the service topology as an SVG graph, through the same gated, audited call an
 * agent makes (get_topology by ExecuteSkill), so the manager answers with the caller's reach
 * applied. A label selector is sent to the manager; the name filter narrows what was answered to
 * the matching nodes and their neighbours. "Refresh now" asks the edges (get_topology refresh).
 */
import { useEffect, useMemo, useState, type FormEvent, type KeyboardEvent } from "react";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { useSession } from "../session.tsx";
import { Chip, ErrorNote } from "../components.tsx";
import { Link } from "../router.tsx";
import { BOX, layoutTopology } from "../topology-layout.ts";

/** Most nodes asked for: what an SVG stays readable with; the answer says when there are more. */
const LIMIT = 300;

interface TopoNode {
  id: string;
  kind: string;
  name: string;
  source: "observed" | "static";
  edge_id?: string;
  port?: number;
  addresses?: string[];
  process?: { pid: number | null; name: string | null };
  labels?: Record<string, string>;
  observed_by?: string[];
  inferred?: boolean;
  ambiguous?: boolean;
  description?: string;
}
interface TopoLink {
  from: string;
  to: string;
  port: number | null;
  connections: number;
  source: "observed" | "static";
  description?: string;
}
interface TopoAnswer {
  built_at: string | null;
  age_s: number | null;
  matched: number;
  returned: number;
  truncated: boolean;
  nodes: TopoNode[];
  links: TopoLink[];
  edges_observed: number;
  edges_failing?: Array<{ edge_id: string; error: string; last_good: string | null }>;
  hidden_nodes: number;
  problems?: string[];
  problems_count?: number;
  hint?: string;
  refresh?: { asked: number; succeeded: number; failed: Array<{ edge_id: string; error: string }> };
}
type Failure = { code: string; message: string; hint: string };

/** Whether a node matches the name filter: its id, name, process, edge or an address contains the text. */
function matchesName(n: TopoNode, text: string): boolean {
  const q = text.trim().toLowerCase();
  return [n.id, n.name, n.process?.name ?? "", n.edge_id ?? "", ...(n.addresses ?? [])].some((s) => s.toLowerCase().includes(q));
}

/** The node's second line: where it is. */
function where(n: TopoNode): string {
  if (n.kind === "external") return "outside the fleet";
  if (n.source === "static") return `static · ${n.kind}`;
  return [n.edge_id, n.port !== undefined ? `:${n.port}` : ""].join("");
}

/** /topology. */
export function TopologyPage() {
  const { api } = useSession();
  const [selectorDraft, setSelectorDraft] = useState("");
  const [selector, setSelector] = useState("");
  const [name, setName] = useState("");
  const [answer, setAnswer] = useState<TopoAnswer | null>(null);
  const [failure, setFailure] = useState<Failure | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState<"" | "loading" | "refreshing">("loading");
  const [selected, setSelected] = useState<string>("");
  const [ask, setAsk] = useState({ n: 0, refresh: false });

  useEffect(() => {
    const abort = new AbortController();
    setBusy(ask.refresh ? "refreshing" : "loading");
    const params = { selector, limit: LIMIT, neighbours: true, ...(ask.refresh ? { refresh: true } : {}) };
    api.skills
      .executeSkill({ key: "get_topology", input: { case: "params", value: params }, edgeId: "" }, { signal: abort.signal })
      .then(
        (res) => {
          if (abort.signal.aborted) return;
          const r = res.result;
          setError(null);
          if (r?.success) {
            setAnswer((r.output ? toJson(ValueSchema, r.output) : null) as unknown as TopoAnswer);
            setFailure(null);
          } else {
            setAnswer(null);
            setFailure({ code: r?.error?.code ?? "internal", message: r?.error?.message ?? "no result", hint: r?.error?.hint ?? "" });
          }
        },
        (err) => !abort.signal.aborted && setError(err),
      )
      .finally(() => !abort.signal.aborted && setBusy(""));
    return () => abort.abort();
  }, [api, selector, ask]);

  const shown = useMemo(() => {
    if (!answer) return { nodes: [] as TopoNode[], links: [] as TopoLink[] };
    if (!name.trim()) return answer;
    const matched = new Set(answer.nodes.filter((n) => matchesName(n, name)).map((n) => n.id));
    // The matching nodes and their neighbours, one link away (not the neighbours' neighbours).
    const keep = new Set(matched);
    for (const l of answer.links) if (matched.has(l.from) || matched.has(l.to)) (keep.add(l.from), keep.add(l.to));
    return { nodes: answer.nodes.filter((n) => keep.has(n.id)), links: answer.links.filter((l) => keep.has(l.from) && keep.has(l.to)) };
  }, [answer, name]);
  const layout = useMemo(() => layoutTopology(shown.nodes.map((n) => n.id), shown.links), [shown]);
  const byId = useMemo(() => new Map(shown.nodes.map((n) => [n.id, n])), [shown]);
  const current = byId.get(selected);

  const apply = (e: FormEvent) => {
    e.preventDefault();
    setSelector(selectorDraft.trim());
  };
  const onKey = (id: string) => (e: KeyboardEvent) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      setSelected(id);
    }
  };

  return (
    <section aria-labelledby="topology-title">
      <h1 id="topology-title">Topology</h1>
      <p className="help">
        Services on the edges you may reach and who connects to whom, built from each edge's sockets (host_sockets) and the static file. Every fetch is a get_topology call, gated and audited.
      </p>
      <form className="filters" onSubmit={apply} role="search" aria-label="Filter the topology">
        <label>
          Label selector
          <input value={selectorDraft} onChange={(e) => setSelectorDraft(e.target.value)} placeholder="team=payments" aria-describedby="topology-selector-help" />
        </label>
        <button type="submit">Apply</button>
        <label>
          Name, address or port
          <input value={name} onChange={(e) => setName(e.target.value)} placeholder="nginx, 10.0.0.9, 5432" />
        </label>
        <button type="button" className="secondary" disabled={busy !== ""} onClick={() => setAsk((a) => ({ n: a.n + 1, refresh: true }))}>
          {busy === "refreshing" ? "Refreshing…" : "Refresh now"}
        </button>
      </form>
      <p id="topology-selector-help" className="help">
        The selector picks nodes by their labels (an observed node has its edge's) and shows their neighbours too.
      </p>
      <ErrorNote error={error}>Cannot load the topology: </ErrorNote>
      {failure && (
        <div className="result failed" role="alert" data-testid="topology-failure">
          <p>
            <strong>{failure.code}</strong>: {failure.message}
          </p>
          {failure.hint && <p className="hint">{failure.hint}</p>}
        </div>
      )}
      {busy === "loading" && !answer && <p role="status">Loading…</p>}
      {answer && (
        <>
          <p className="row" data-testid="topology-summary">
            <span>
              {shown.nodes.length} nodes, {shown.links.length} links
            </span>
            {answer.built_at && <span className="muted">built {answer.age_s ?? 0} s ago from {answer.edges_observed} edges</span>}
            {answer.truncated && <Chip kind="warn">{`showing ${answer.returned} of more; narrow the selector`}</Chip>}
            {answer.hidden_nodes > 0 && <Chip title="nodes on edges outside your reach">{`${answer.hidden_nodes} outside your reach`}</Chip>}
            {answer.refresh && <Chip kind={answer.refresh.failed.length ? "warn" : "online"}>{`refreshed: ${answer.refresh.succeeded} of ${answer.refresh.asked} edges answered`}</Chip>}
          </p>
          {answer.hint && <p className="hint">{answer.hint}</p>}
          {(answer.edges_failing?.length ?? 0) > 0 && (
            <details>
              <summary>{answer.edges_failing!.length} edges could not be read at the last refresh</summary>
              <ul>
                {answer.edges_failing!.map((f) => (
                  <li key={f.edge_id}>
                    <code>{f.edge_id}</code>: {f.error}
                  </li>
                ))}
              </ul>
            </details>
          )}
          {(answer.problems?.length ?? 0) > 0 && (
            <details>
              <summary>{answer.problems!.length} problems in the static file or the build</summary>
              <ul>
                {answer.problems!.map((p) => (
                  <li key={p}>{p}</li>
                ))}
              </ul>
            </details>
          )}
          <div className="topology">
            <div className="topology-canvas">
              <svg role="img" aria-label={`Service topology: ${shown.nodes.length} nodes, ${shown.links.length} links`} width={layout.width} height={layout.height} viewBox={`0 0 ${layout.width} ${layout.height}`} data-testid="topology-svg">
                <defs>
                  <marker id="topology-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
                    <path d="M0,0 L10,5 L0,10 z" />
                  </marker>
                </defs>
                {layout.links.map((l) => {
                  const link = shown.links.find((x) => x.from === l.from && x.to === l.to)!;
                  const on = selected && (l.from === selected || l.to === selected);
                  return (
                    <g key={`${l.from}->${l.to}`} className={`topo-link ${link.source}${on ? " on" : ""}`} data-link={`${l.from}->${l.to}`}>
                      <path d={l.path} markerEnd="url(#topology-arrow)" />
                      {link.port !== null && (
                        <text x={l.mid.x} y={l.mid.y - 4} textAnchor="middle">
                          {`:${link.port}${link.connections > 1 ? ` ×${link.connections}` : ""}`}
                        </text>
                      )}
                    </g>
                  );
                })}
                {[...layout.nodes.values()].map((p) => {
                  const n = byId.get(p.id)!;
                  return (
                    <g
                      key={p.id}
                      className={`topo-node kind-${n.source === "static" ? "static" : n.kind}${selected === p.id ? " selected" : ""}${n.inferred ? " inferred" : ""}`}
                      transform={`translate(${p.x},${p.y})`}
                      data-node={p.id}
                      role="button"
                      tabIndex={0}
                      aria-label={`${n.name} (${n.kind}) ${where(n)}`}
                      aria-pressed={selected === p.id}
                      onClick={() => setSelected(p.id)}
                      onKeyDown={onKey(p.id)}
                    >
                      <rect width={BOX.w} height={BOX.h} rx={5} />
                      <text x={8} y={18} className="topo-name">
                        {n.name.length > 26 ? `${n.name.slice(0, 25)}…` : n.name}
                      </text>
                      <text x={8} y={36} className="topo-where">
                        {where(n).slice(0, 32)}
                      </text>
                    </g>
                  );
                })}
              </svg>
            </div>
            <aside className="topology-detail" aria-live="polite">
              {current ? <NodeDetail node={current} links={shown.links} byId={byId} select={setSelected} /> : <p className="muted">Select a node to see its details and links.</p>}
            </aside>
          </div>
          <details>
            <summary>Links as a table</summary>
            <div className="table-wrap">
              <table data-testid="topology-links">
                <thead>
                  <tr>
                    <th>From</th>
                    <th>To</th>
                    <th>Port</th>
                    <th>Connections</th>
                    <th>Source</th>
                  </tr>
                </thead>
                <tbody>
                  {shown.links.map((l) => (
                    <tr key={`${l.from}->${l.to}`}>
                      <td className="mono">{l.from}</td>
                      <td className="mono">{l.to}</td>
                      <td>{l.port ?? ""}</td>
                      <td>{l.connections}</td>
                      <td>{l.source}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </details>
        </>
      )}
    </section>
  );
}

/** One node's fields and its links in and out. */
function NodeDetail(props: { node: TopoNode; links: TopoLink[]; byId: Map<string, TopoNode>; select: (id: string) => void }) {
  const n = props.node;
  const out = props.links.filter((l) => l.from === n.id);
  const inn = props.links.filter((l) => l.to === n.id);
  const item = (id: string, l: TopoLink) => (
    <li key={id}>
      <button type="button" className="secondary" onClick={() => props.select(id)}>
        {props.byId.get(id)?.name ?? id}
      </button>{" "}
      <span className="muted">{`${l.port !== null ? `:${l.port}` : ""}${l.connections ? ` · ${l.connections} conn.` : ""}${l.source === "static" ? " · static" : ""}`}</span>
    </li>
  );
  return (
    <div data-testid="topology-detail">
      <h2>{n.name}</h2>
      <dl>
        <dt>Node</dt>
        <dd className="mono">{n.id}</dd>
        <dt>Kind</dt>
        <dd>
          {n.kind} <Chip>{n.source}</Chip>
          {n.inferred && <Chip kind="warn" title="seen only as the target of connections">inferred</Chip>}
          {n.ambiguous && <Chip kind="warn" title="more than one edge reports this address">ambiguous</Chip>}
        </dd>
        {n.edge_id && (
          <>
            <dt>Edge</dt>
            <dd>
              <Link to={`/edges/${encodeURIComponent(n.edge_id)}`}>{n.edge_id}</Link>
            </dd>
          </>
        )}
        {n.port !== undefined && (
          <>
            <dt>Port</dt>
            <dd>{n.port}</dd>
          </>
        )}
        {n.process && (
          <>
            <dt>Process</dt>
            <dd>{`${n.process.name ?? "?"}${n.process.pid !== null ? ` (pid ${n.process.pid})` : ""}`}</dd>
          </>
        )}
        {(n.addresses?.length ?? 0) > 0 && (
          <>
            <dt>Addresses</dt>
            <dd className="mono">{n.addresses!.join(", ")}</dd>
          </>
        )}
        {n.labels && Object.keys(n.labels).length > 0 && (
          <>
            <dt>Labels</dt>
            <dd>
              <span className="chips">
                {Object.entries(n.labels).map(([k, v]) => (
                  <Chip key={k}>{`${k}=${v}`}</Chip>
                ))}
              </span>
            </dd>
          </>
        )}
        {n.description && (
          <>
            <dt>About</dt>
            <dd>{n.description}</dd>
          </>
        )}
      </dl>
      <h3>Depends on ({out.length})</h3>
      <ul className="plain">{out.map((l) => item(l.to, l))}</ul>
      <h3>Used by ({inn.length})</h3>
      <ul className="plain">{inn.map((l) => item(l.from, l))}</ul>
    </div>
  );
}
