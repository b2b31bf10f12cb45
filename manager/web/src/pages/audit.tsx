/**
 * /admin/audit (L3, approvers and admins): the tamper-evident tool-call log as a timeline, with
 * filters (tool, edge, user, session, decision, time range) kept in the URL query string so a
 * link opens the same filtered view; paging by seq ("Load more"); an export of every row of the
 * filter as JSON Lines (the columns `ongrid audit export` writes) or CSV; and the hash chain's
 * state from VerifyChain, on load and on demand.
 */
import { useCallback, useEffect, useRef, useState, type FormEvent, type MouseEvent } from "react";
import { toJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema, timestampDate, timestampFromDate, type Value } from "@bufbuild/protobuf/wkt";
import type { ListToolCallsRequest, ToolCall, VerifyChainResponse } from "../../../../proto/gen/ongrid/v1/audit_service_pb.ts";
import { useSession } from "../session.tsx";
import { navigate, useSearch } from "../router.tsx";
import { Chip, ErrorNote, OutputView, Time, isEnvelope, json } from "../components.tsx";
import { errorText } from "../client.ts";

const PATH = "/admin/audit";
/** Rows per page of the timeline. */
const PAGE = 100;
/** Rows per request while exporting (the RPC's maximum). */
const EXPORT_PAGE = 1000;
/** The most rows one export collects in the browser. */
const EXPORT_CAP = 10_000;

/** The gate's decisions as the audit log records them (manager/calls/gate.ts `behavior`). */
const DECISIONS: { value: string; label: string }[] = [
  { value: "allow", label: "allow" },
  { value: "ask", label: "ask (parked for approval)" },
  { value: "deny", label: "deny (refused)" },
];

/** The applied filters, as in the URL: since and until are ISO instants, everything else as typed. */
interface Filters {
  tool: string;
  edge: string;
  user: string;
  session: string;
  decision: string;
  since: string;
  until: string;
  /** "" (newest first, the default) or "oldest". */
  order: string;
}

const EMPTY: Filters = { tool: "", edge: "", user: "", session: "", decision: "", since: "", until: "", order: "" };
const KEYS = Object.keys(EMPTY) as (keyof Filters)[];
/** The keys that narrow the rows (order only sorts them). */
const FILTER_KEYS = KEYS.filter((k) => k !== "order");

/** The filters a query string names; a since/until that is not a date is dropped and reported. */
function readFilters(search: string): { filters: Filters; ignored: string[] } {
  const q = new URLSearchParams(search);
  const filters = { ...EMPTY };
  const ignored: string[] = [];
  for (const k of KEYS) {
    const v = (q.get(k) ?? "").trim();
    if (!v) continue;
    if (k === "since" || k === "until") {
      const d = new Date(v);
      if (Number.isNaN(d.getTime())) {
        ignored.push(`${k}=${v}`);
        continue;
      }
      filters[k] = d.toISOString();
    } else if (k === "order") {
      if (v === "oldest") filters.order = v;
      else ignored.push(`${k}=${v}`);
    } else {
      filters[k] = v;
    }
  }
  return { filters, ignored };
}

/** The console URL of a filtered view. */
function filterUrl(f: Filters): string {
  const q = new URLSearchParams();
  for (const k of KEYS) if (f[k]) q.set(k, f[k]);
  const s = q.toString();
  return s ? `${PATH}?${s}` : PATH;
}

/** The RPC's filter fields for the applied filters. */
function request(f: Filters): Partial<ListToolCallsRequest> {
  return {
    toolName: f.tool,
    edgeId: f.edge,
    userId: f.user,
    sessionId: f.session,
    decision: f.decision,
    since: f.since ? timestampFromDate(new Date(f.since)) : undefined,
    until: f.until ? timestampFromDate(new Date(f.until)) : undefined,
  };
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** An ISO instant as a datetime-local value in the browser's zone (milliseconds kept when present). */
function toLocalInput(iso: string): string {
  if (!iso) return "";
  const d = new Date(iso);
  const base = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return d.getMilliseconds() ? `${base}.${pad(d.getMilliseconds(), 3)}` : base;
}

/** A datetime-local value (local time) as an ISO instant; "" when empty or not a time. */
function fromLocalInput(local: string): string {
  if (!local) return "";
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString();
}

/** The form's fields: like Filters, but since/until as datetime-local values. */
function draftOf(f: Filters): Filters {
  return { ...f, since: toLocalInput(f.since), until: toLocalInput(f.until) };
}

function jsonOf(v: Value | undefined): unknown {
  return v === undefined ? null : toJson(ValueSchema, v);
}

/** A row as `ongrid audit export` writes it (manager/audit/export.ts auditRowToJson): same keys, same order. */
function exportRow(t: ToolCall): Record<string, unknown> {
  const iso = (ts: ToolCall["startedAt"]) => (ts ? timestampDate(ts).toISOString() : "");
  return {
    seq: Number(t.seq),
    session_id: t.sessionId,
    tool_name: t.toolName,
    args_json: jsonOf(t.args),
    result_json: jsonOf(t.result),
    error: t.error,
    device_id: t.deviceId,
    started_at: iso(t.startedAt),
    finished_at: iso(t.finishedAt),
    duration_ms: t.durationMs,
    caller_user_id: t.callerUserId,
    caller_role: t.callerRole,
    decision: t.decision,
    decision_reason: t.decisionReason,
    approval_id: t.approvalId,
    sop_hash: t.sopHash,
    approved_by: t.approvedBy,
    on_behalf_of: t.onBehalfOf,
    client: t.client,
    prev_hash: t.prevHash,
    row_hash: t.rowHash,
  };
}

/** One CSV cell: JSON for structured values; quoted when needed; a leading =+-@ defused for spreadsheets. */
function csvCell(v: unknown): string {
  let s = v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

function toCsv(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return "";
  const head = Object.keys(rows[0]);
  return [head.join(","), ...rows.map((r) => head.map((k) => csvCell(r[k])).join(","))].join("\r\n") + "\r\n";
}

/** Hands a text to the browser as a file download (a Blob URL on an <a download>; allowed by the console's CSP). */
function download(name: string, type: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** "ongrid-audit-tool-probe_tcp-user-olga-20250101T120000Z" */
function exportName(f: Filters): string {
  const parts = KEYS.filter((k) => f[k] && k !== "since" && k !== "until").map((k) => `${k}-${f[k]}`);
  if (f.since || f.until) parts.push("range");
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  return ["ongrid-audit", ...parts, stamp].join("-").replace(/[^A-Za-z0-9._-]+/g, "_");
}

type Chain = { checking: boolean; res?: VerifyChainResponse; error?: unknown; at?: Date };

/** The audit page. */
export function AuditPage() {
  const { api } = useSession();
  const initial = useRef(readFilters(window.location.search));
  const [applied, setApplied] = useState<Filters>(initial.current.filters);
  const [ignored, setIgnored] = useState<string[]>(initial.current.ignored);
  const [draft, setDraft] = useState<Filters>(() => draftOf(initial.current.filters));
  const [rows, setRows] = useState<ToolCall[] | null>(null);
  const [more, setMore] = useState(false);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [chain, setChain] = useState<Chain>({ checking: true });
  const [exporting, setExporting] = useState(false);
  const [exported, setExported] = useState("");
  const [exportError, setExportError] = useState<unknown>(null);
  const [tools, setTools] = useState<string[]>([]);
  const [edges, setEdges] = useState<string[]>([]);
  const generation = useRef(0);
  const query = filterUrl(applied);

  /** Applies filters: the URL first (so the view is linkable and Back works), then the timeline. */
  const apply = useCallback((f: Filters) => {
    navigate(filterUrl(f));
    setApplied(f);
    setDraft(draftOf(f));
    setIgnored([]);
  }, []);

  // The address is the view: Back and Forward, and a link to /admin/audit (the nav's, or a
  // run's "Audit row #N") while this page is open, apply the filters the address names.
  const search = useSearch();
  const appliedUrl = useRef(query);
  appliedUrl.current = query;
  useEffect(() => {
    if (window.location.pathname !== PATH) return;
    const r = readFilters(search);
    if (filterUrl(r.filters) === appliedUrl.current) return;
    setApplied(r.filters);
    setDraft(draftOf(r.filters));
    setIgnored(r.ignored);
  }, [search]);

  /**
   * One page past `cursor` (the last seq shown; 0 for the first page) in the view's order: asks for
   * one row more than it shows, to know whether more follow.
   */
  const page = useCallback(
    async (f: Filters, cursor: bigint) => {
      const order = f.order === "oldest" ? { afterSeq: cursor } : { newestFirst: true, beforeSeq: cursor };
      const res = await api.audit.listToolCalls({ ...request(f), ...order, limit: PAGE + 1 });
      return { rows: res.toolCalls.slice(0, PAGE), more: res.toolCalls.length > PAGE };
    },
    [api],
  );

  useEffect(() => {
    const mine = ++generation.current;
    setRows(null);
    setMore(false);
    setError(null);
    setExported("");
    setExportError(null);
    setLoading(true);
    page(applied, 0n).then(
      (p) => {
        if (generation.current !== mine) return;
        setRows(p.rows);
        setMore(p.more);
        setLoading(false);
      },
      (err) => {
        if (generation.current !== mine) return;
        setRows([]);
        setError(err);
        setLoading(false);
      },
    );
    // `query` stands for `applied` (the same filters in a new object must not reload).
  }, [page, query]);

  const loadMore = async () => {
    if (!rows || rows.length === 0) return;
    const mine = generation.current;
    setLoading(true);
    setError(null);
    try {
      const p = await page(applied, rows[rows.length - 1].seq);
      if (generation.current !== mine) return;
      setRows([...rows, ...p.rows]);
      setMore(p.more);
    } catch (err) {
      if (generation.current === mine) setError(err);
    } finally {
      if (generation.current === mine) setLoading(false);
    }
  };

  const verify = useCallback(async () => {
    setChain((c) => ({ ...c, checking: true }));
    try {
      const res = await api.audit.verifyChain({});
      setChain({ checking: false, res, at: new Date() });
    } catch (err) {
      setChain({ checking: false, error: err, at: new Date() });
    }
  }, [api]);

  useEffect(() => {
    void verify();
  }, [verify]);

  // Suggestions for the tool and edge fields; the filters work without them.
  useEffect(() => {
    let live = true;
    api.skills.listSkills({}).then(
      (r) => live && setTools(r.skills.map((s) => s.key).sort()),
      () => undefined,
    );
    api.edges.listEdges({}).then(
      (r) => live && setEdges(r.edges.map((e) => e.id).sort()),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, [api]);

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const f: Filters = { ...EMPTY };
    for (const k of KEYS) f[k] = draft[k].trim();
    f.since = fromLocalInput(draft.since);
    f.until = fromLocalInput(draft.until);
    apply(f);
  };

  const exportAs = async (format: "jsonl" | "csv") => {
    const f = applied;
    setExporting(true);
    setExported("");
    setExportError(null);
    try {
      const out: Record<string, unknown>[] = [];
      let capped = false;
      let after = 0n;
      for (;;) {
        const res = await api.audit.listToolCalls({ ...request(f), afterSeq: after, limit: EXPORT_PAGE });
        for (const t of res.toolCalls) {
          if (out.length === EXPORT_CAP) {
            capped = true;
            break;
          }
          out.push(exportRow(t));
        }
        if (capped || res.toolCalls.length < EXPORT_PAGE) break;
        after = res.toolCalls[res.toolCalls.length - 1].seq;
      }
      const name = `${exportName(f)}.${format}`;
      if (format === "jsonl") download(name, "application/x-ndjson", out.map((r) => JSON.stringify(r) + "\n").join(""));
      else download(name, "text/csv", toCsv(out));
      setExported(
        capped
          ? `Exported the first ${out.length.toLocaleString()} matching rows to ${name} — the cap; more rows match. Narrow the filter (e.g. the time range) and export the rest, or use \`ongrid audit export\` on the manager's host.`
          : `Exported ${out.length.toLocaleString()} row${out.length === 1 ? "" : "s"} to ${name}.`,
      );
    } catch (err) {
      setExportError(err);
    } finally {
      setExporting(false);
    }
  };

  const brokenSeq = chain.res && !chain.res.ok ? chain.res.firstBrokenSeq : 0n;
  const filtered = FILTER_KEYS.some((k) => applied[k]);
  // Each caption names its control through aria-labelledby, so a select's chosen option or a
  // field's value never becomes part of the control's name.
  const field = (k: keyof Filters) => ({
    id: `audit-${k}`,
    "aria-labelledby": `audit-${k}-label`,
    name: k,
    value: draft[k],
    onChange: (e: { target: { value: string } }) => setDraft((d) => ({ ...d, [k]: e.target.value })),
  });
  const sessionLink = (session: string) => (e: MouseEvent<HTMLAnchorElement>) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    apply({ ...EMPTY, session });
  };

  return (
    <>
      <h1>Audit log</h1>
      <section aria-label="Hash chain" className="audit-chain">
        <ChainStatus chain={chain} />
        <button type="button" className="secondary" onClick={() => void verify()} disabled={chain.checking}>
          {chain.checking ? "Verifying…" : "Verify chain"}
        </button>
      </section>

      <form className="filters" onSubmit={submit} aria-label="Filter the audit log" noValidate>
        <label htmlFor="audit-tool">
          <span id="audit-tool-label">Tool</span>
          <input {...field("tool")} list="audit-tools" placeholder="skill key" autoComplete="off" />
        </label>
        <label htmlFor="audit-edge">
          <span id="audit-edge-label">Edge</span>
          <input {...field("edge")} list="audit-edges" placeholder="edge id" autoComplete="off" />
        </label>
        <label htmlFor="audit-user">
          <span id="audit-user-label">User</span>
          <input {...field("user")} placeholder="caller or on behalf of" autoComplete="off" />
        </label>
        <label htmlFor="audit-session">
          <span id="audit-session-label">Session</span>
          <input {...field("session")} placeholder="session id" autoComplete="off" />
        </label>
        <label htmlFor="audit-decision">
          <span id="audit-decision-label">Decision</span>
          <select {...field("decision")}>
            <option value="">any</option>
            {DECISIONS.map((d) => (
              <option key={d.value} value={d.value}>
                {d.label}
              </option>
            ))}
            {draft.decision && !DECISIONS.some((d) => d.value === draft.decision) ? <option value={draft.decision}>{draft.decision}</option> : null}
          </select>
        </label>
        <label htmlFor="audit-since">
          <span id="audit-since-label">Since</span>
          <input {...field("since")} type="datetime-local" step="1" />
        </label>
        <label htmlFor="audit-until">
          <span id="audit-until-label">Until (before)</span>
          <input {...field("until")} type="datetime-local" step="1" />
        </label>
        <label htmlFor="audit-order">
          <span id="audit-order-label">Order</span>
          <select {...field("order")}>
            <option value="">newest first</option>
            <option value="oldest">oldest first</option>
          </select>
        </label>
        <span className="row">
          <button type="submit">Apply filters</button>
          <button type="button" className="secondary" onClick={() => apply({ ...EMPTY })} disabled={!filtered && !KEYS.some((k) => draft[k])}>
            Clear
          </button>
        </span>
        <datalist id="audit-tools">
          {tools.map((t) => (
            <option key={t} value={t} />
          ))}
        </datalist>
        <datalist id="audit-edges">
          {edges.map((t) => (
            <option key={t} value={t} />
          ))}
        </datalist>
      </form>
      <p className="help">
        Times are in this browser's time zone; a user matches the caller or the person an agent call was made for. The filters are in this page's address: copy it to share the view.
      </p>
      {ignored.length ? (
        <p className="error" role="alert">
          Ignored in the address (not a date): {ignored.join(", ")}
        </p>
      ) : null}

      <div className="row audit-bar">
        <p role="status" className="muted" data-testid="audit-count">
          {rows === null ? "Loading…" : rows.length === 0 ? (error ? "" : filtered ? "No rows match these filters." : "The audit log is empty.") : `Showing ${rows.length} ${filtered ? "matching " : ""}row${rows.length === 1 ? "" : "s"}, ${applied.order === "oldest" ? "oldest" : "newest"} first${more ? "; more follow" : filtered ? " — all that match" : " — the whole log"}.`}
        </p>
        <span className="row audit-export">
          <button type="button" className="secondary" onClick={() => void exportAs("jsonl")} disabled={exporting || !rows?.length}>
            Export JSON Lines
          </button>
          <button type="button" className="secondary" onClick={() => void exportAs("csv")} disabled={exporting || !rows?.length}>
            Export CSV
          </button>
          <span className="help">every row of this filter, all pages, up to {EXPORT_CAP.toLocaleString()}</span>
        </span>
      </div>
      <div aria-live="polite">
        {exporting ? <p className="muted">Collecting rows for the export…</p> : null}
        {exported ? <p data-testid="audit-exported">{exported}</p> : null}
      </div>
      <ErrorNote error={exportError}>Export failed: </ErrorNote>
      <ErrorNote error={error}>Could not read the audit log: </ErrorNote>

      {rows && rows.length ? (
        <div className="table-wrap">
          <table className="audit">
            <caption className="muted">Tool calls (each row hashed into the chain after the row before it)</caption>
            <thead>
              <tr>
                <th scope="col">Seq</th>
                <th scope="col">Time</th>
                <th scope="col">User</th>
                <th scope="col">Tool</th>
                <th scope="col">Edge</th>
                <th scope="col">Decision</th>
                <th scope="col">Outcome</th>
                <th scope="col">Duration</th>
                <th scope="col">Details</th>
                <th scope="col">Hash</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((t) => (
                <AuditRow key={String(t.seq)} call={t} broken={t.seq === brokenSeq} onSession={sessionLink} />
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {more ? (
        <p>
          <button type="button" onClick={() => void loadMore()} disabled={loading}>
            {loading ? "Loading…" : `Load ${PAGE} more`}
          </button>
        </p>
      ) : null}
    </>
  );
}

function ChainStatus(props: { chain: Chain }) {
  const { res, error, checking, at } = props.chain;
  const when = at ? <span className="muted"> (checked {at.toLocaleTimeString()})</span> : null;
  if (error) {
    return (
      <p className="audit-chain-state broken" role="alert" data-testid="chain-status">
        Could not verify the chain: {errorText(error)}
        {when}
      </p>
    );
  }
  if (!res) {
    return (
      <p className="audit-chain-state" role="status" data-testid="chain-status">
        Verifying the hash chain…
      </p>
    );
  }
  if (!res.ok) {
    return (
      <p className="audit-chain-state broken" role="alert" data-testid="chain-status">
        <strong>Chain broken at seq {String(res.firstBrokenSeq)}</strong>: {res.reason.replace(/\.$/, "")}. The check stops at the first break: rows after it are not verified.
        {checking ? <span className="muted"> Verifying again…</span> : when}
      </p>
    );
  }
  return (
    <p className="audit-chain-state ok" role="status" data-testid="chain-status">
      {res.lastSeq === 0n ? (
        <strong>Chain intact: the log is empty</strong>
      ) : (
        <>
          <strong>Chain intact through seq {String(res.lastSeq)}</strong> — {String(res.rowsChecked)} rows checked; head hash <code title={res.lastRowHash}>{res.lastRowHash.slice(0, 16)}…</code>
        </>
      )}
      {checking ? <span className="muted"> Verifying again…</span> : when}
    </p>
  );
}

function who(t: ToolCall) {
  const caller = t.callerUserId === "0" ? "agent" : t.callerUserId || "—";
  return (
    <>
      {caller} {t.callerRole ? <Chip>{t.callerRole}</Chip> : null}
      {t.onBehalfOf ? <div className="muted">for {t.onBehalfOf}</div> : null}
      {t.client ? <div className="muted">via {t.client}</div> : null}
    </>
  );
}

function outcome(t: ToolCall) {
  if (t.error) {
    const i = t.error.indexOf(": ");
    const code = i > 0 ? t.error.slice(0, i) : t.error;
    const message = i > 0 ? t.error.slice(i + 2) : "";
    return (
      <>
        <Chip kind="class-dangerous">error</Chip> <code>{code}</code> {message}
      </>
    );
  }
  const result = jsonOf(t.result);
  if (result === null) return t.decision === "ask" ? <Chip kind="warn">parked</Chip> : <span className="muted">not run</span>;
  return <Chip kind="online">success</Chip>;
}

function decisionKind(d: string): string {
  return d === "allow" ? "class-safe" : d === "ask" ? "class-mutating" : d === "deny" ? "class-dangerous" : "";
}

function AuditRow(props: { call: ToolCall; broken: boolean; onSession: (s: string) => (e: MouseEvent<HTMLAnchorElement>) => void }) {
  const t = props.call;
  const seq = String(t.seq);
  const result = jsonOf(t.result);
  return (
    <tr data-testid="audit-row" data-seq={seq} className={props.broken ? "audit-broken" : undefined}>
      <td>
        <code>{seq}</code>
        {props.broken ? (
          <div>
            <Chip kind="class-dangerous">chain broken here</Chip>
          </div>
        ) : null}
      </td>
      <td>
        <Time value={t.startedAt} />
      </td>
      <td>{who(t)}</td>
      <td className="audit-nowrap">
        <code>{t.toolName || "(none)"}</code>
        {t.sessionId ? (
          <div className="muted">
            session{" "}
            <a href={filterUrl({ ...EMPTY, session: t.sessionId })} onClick={props.onSession(t.sessionId)} title="Show this session's calls">
              {t.sessionId}
            </a>
          </div>
        ) : null}
      </td>
      <td className="audit-nowrap">{t.deviceId || <span className="muted">—</span>}</td>
      <td>
        <Chip kind={decisionKind(t.decision)}>{t.decision || "—"}</Chip>
        {t.decisionReason ? <div className="help audit-reason">{t.decisionReason}</div> : null}
      </td>
      <td className="audit-outcome">{outcome(t)}</td>
      <td className="audit-nowrap">{t.durationMs} ms</td>
      <td>
        <details>
          <summary>args{result !== null ? " & result" : ""}</summary>
          <pre className="output">{json(jsonOf(t.args))}</pre>
          {isEnvelope(result) ? (
            <>
              <OutputView value={result.output} />
              <details>
                <summary>result envelope (JSON)</summary>
                <pre className="output">{json(result)}</pre>
              </details>
            </>
          ) : (
            <OutputView value={result as JsonValue} />
          )}
          <dl className="audit-meta">
            {t.approvalId ? (
              <>
                <dt>approval</dt>
                <dd>
                  <code>{t.approvalId}</code>
                </dd>
              </>
            ) : null}
            {t.approvedBy ? (
              <>
                <dt>approved by</dt>
                <dd>{t.approvedBy}</dd>
              </>
            ) : null}
            {t.sopHash ? (
              <>
                <dt>SOP</dt>
                <dd>
                  <code>{t.sopHash.slice(0, 16)}…</code>
                </dd>
              </>
            ) : null}
            <dt>finished</dt>
            <dd>
              <Time value={t.finishedAt} />
            </dd>
            <dt>prev hash</dt>
            <dd>
              <code>{t.prevHash}</code>
            </dd>
            <dt>row hash</dt>
            <dd>
              <code>{t.rowHash}</code>
            </dd>
          </dl>
        </details>
      </td>
      <td>
        <code title={t.rowHash}>{t.rowHash.slice(0, 10)}</code>
      </td>
    </tr>
  );
}
