/**
 * /approvals (L2): the inbox of parked calls. The list comes from ListApprovals and stays live
 * through ApprovalService.Watch (every request the user may see, each time its state changes);
 * while the stream is down the page re-lists every few seconds and reconnects with backoff.
 * Selecting a request (/approvals/<id>) shows everything about it — params, progress and votes,
 * the SOP, the result — and the Approve / Deny form, which asks for a reason.
 */
import { useCallback, useEffect, useMemo, useState } from "react";
import { Code, ConnectError } from "@connectrpc/connect";
import { ApprovalState, type Approval } from "../../../../proto/gen/ongrid/v1/approval_service_pb.ts";
import { SkillClass } from "../../../../proto/gen/ongrid/v1/skill_pb.ts";
import { can, roleName, useSession } from "../session.tsx";
import { navigate, segment, usePath } from "../router.tsx";
import { Chip, ClassBadge, ErrorNote, ResultView, Time, json } from "../components.tsx";

/** How many requests the list asks for. */
const LIMIT = 500;
/** Re-list period while the Watch stream is up (a safety net) and while it is down (polling). */
const SLOW_MS = 30_000;
const FAST_MS = 3_000;

type View = "pending" | "decided" | "all";

const STATE_TEXT: Record<ApprovalState, string> = {
  [ApprovalState.UNSPECIFIED]: "unknown",
  [ApprovalState.PENDING]: "pending",
  [ApprovalState.RUNNING]: "running",
  [ApprovalState.EXECUTED]: "executed",
  [ApprovalState.DENIED]: "denied",
  [ApprovalState.EXPIRED]: "expired",
  [ApprovalState.FAILED]: "failed",
};

const STATE_KIND: Record<ApprovalState, string> = {
  [ApprovalState.UNSPECIFIED]: "",
  [ApprovalState.PENDING]: "warn",
  [ApprovalState.RUNNING]: "scope-edge",
  [ApprovalState.EXECUTED]: "online",
  [ApprovalState.DENIED]: "class-dangerous",
  [ApprovalState.EXPIRED]: "offline",
  [ApprovalState.FAILED]: "class-dangerous",
};

/** The state as a chip. */
function StateChip(props: { state: ApprovalState }) {
  return <Chip kind={STATE_KIND[props.state]}>{STATE_TEXT[props.state] ?? "unknown"}</Chip>;
}

/** How far along a request is: a later state, or more votes, is newer. */
function progressOf(a: Approval): number {
  const rank = a.state === ApprovalState.PENDING ? 0 : a.state === ApprovalState.RUNNING ? 1 : a.state === ApprovalState.UNSPECIFIED ? -1 : 2;
  return rank * 100 + a.votes.length;
}

/** Merges requests into the map, keeping whichever copy of each is further along (list answers and stream events may arrive out of order). */
function merged(prev: Map<string, Approval> | null, incoming: Approval[]): Map<string, Approval> {
  const next = new Map(prev ?? []);
  for (const a of incoming) {
    const old = next.get(a.id);
    if (!old || progressOf(a) >= progressOf(old)) next.set(a.id, a);
  }
  return next;
}

function createdMs(a: Approval): number {
  return a.createdAt ? Number(a.createdAt.seconds) * 1000 + Math.floor(a.createdAt.nanos / 1e6) : 0;
}

function inView(a: Approval, view: View): boolean {
  if (view === "all") return true;
  return (a.state === ApprovalState.PENDING) === (view === "pending");
}

/** "1 of 2 approvals". */
function progressText(a: Approval): string {
  return `${a.votes.length} of ${a.requiredApprovals} approval${a.requiredApprovals === 1 ? "" : "s"}`;
}

/** The params on one line, for the list. */
function paramsPreview(a: Approval): string {
  const p = a.params ?? {};
  const entries = Object.entries(p);
  if (entries.length === 1 && typeof entries[0][1] === "string") return entries[0][1];
  const text = JSON.stringify(p);
  return text.length > 90 ? text.slice(0, 89) + "…" : text;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}

/** The approvals page: the inbox and the selected request. */
export function ApprovalsPage() {
  const { api } = useSession();
  const path = usePath();
  const selected = segment(path, 1);
  const [items, setItems] = useState<Map<string, Approval> | null>(null);
  const [view, setView] = useState<View>("pending");
  const [live, setLive] = useState(false);
  const [refreshed, setRefreshed] = useState<Date | null>(null);
  const [listError, setListError] = useState<unknown>(null);
  const [missing, setMissing] = useState<unknown>(null);

  const update = useCallback((list: Approval[]) => setItems((prev) => merged(prev, list)), []);

  useEffect(() => {
    const abort = new AbortController();
    const { signal } = abort;
    let streaming = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let listing = false;
    let again = false;

    // One ListApprovals at a time; a request for another while one runs runs it once more after.
    const list = async (): Promise<void> => {
      if (listing) {
        again = true;
        return;
      }
      listing = true;
      try {
        do {
          again = false;
          try {
            const res = await api.approvals.listApprovals({ limit: LIMIT }, { signal });
            if (signal.aborted) return;
            update(res.approvals);
            setRefreshed(new Date());
            setListError(null);
          } catch (err) {
            if (!signal.aborted) setListError(err);
          }
        } while (again && !signal.aborted);
      } finally {
        listing = false;
      }
    };
    const poll = async () => {
      await list();
      if (!signal.aborted) timer = setTimeout(poll, streaming ? SLOW_MS : FAST_MS);
    };
    void poll();

    const watch = async () => {
      let backoff = 1000;
      while (!signal.aborted) {
        try {
          const stream = api.approvals.watch(
            {},
            {
              signal,
              onHeader: () => {
                streaming = true;
                setLive(true);
                backoff = 1000;
                // Changes between the first list and the subscription would otherwise be missed.
                void list();
              },
            },
          );
          for await (const ev of stream) {
            if (ev.approval) update([ev.approval]);
            setRefreshed(new Date());
          }
        } catch {
          // Reconnect below; meanwhile the list is re-read every FAST_MS.
        }
        if (signal.aborted) return;
        streaming = false;
        setLive(false);
        await sleep(backoff, signal);
        backoff = Math.min(backoff * 2, 15_000);
      }
    };
    void watch();

    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, [api, update]);

  // A request outside the list (older than LIMIT, or a link) is fetched on its own.
  const current = selected ? items?.get(selected) : undefined;
  const loaded = items !== null;
  const known = Boolean(current);
  useEffect(() => {
    setMissing(null);
    if (!selected || !loaded || known) return;
    let on = true;
    api.approvals.getApproval({ id: selected }).then(
      (res) => on && res.approval && update([res.approval]),
      (err) => on && setMissing(err),
    );
    return () => {
      on = false;
    };
  }, [api, selected, loaded, known, update]);

  const all = useMemo(() => [...(items?.values() ?? [])].sort((a, b) => createdMs(b) - createdMs(a) || b.id.localeCompare(a.id)), [items]);
  const counts = useMemo(() => ({ pending: all.filter((a) => inView(a, "pending")).length, decided: all.filter((a) => inView(a, "decided")).length, all: all.length }), [all]);
  const shown = all.filter((a) => inView(a, view));

  return (
    <>
      <h1>Approvals</h1>
      <ErrorNote error={listError}>Could not read the requests: </ErrorNote>
      <div className="split">
        <section aria-label="Approval requests">
          <fieldset className="view-switch">
            <legend>Show</legend>
            {(["pending", "decided", "all"] as const).map((v) => (
              <label key={v}>
                <input type="radio" name="approval-view" value={v} checked={view === v} onChange={() => setView(v)} /> {v === "pending" ? "Pending" : v === "decided" ? "Decided" : "All"} ({counts[v]})
              </label>
            ))}
          </fieldset>
          <p className="muted" role="status" data-testid="inbox-status">
            {items === null ? "Loading…" : `${shown.length} ${view === "all" ? "" : view + " "}request${shown.length === 1 ? "" : "s"}`}
          </p>
          <p className="help" data-testid="live">
            {live ? "Live: changes appear as they happen." : "Not connected to live updates; re-reading every few seconds."}
            {refreshed ? (
              <>
                {" "}
                Last update <time dateTime={refreshed.toISOString()}>{refreshed.toLocaleTimeString()}</time>.
              </>
            ) : null}
          </p>
          {items !== null && shown.length === 0 ? <p className="muted">{view === "pending" ? "Nothing is waiting for a decision." : "No requests here."}</p> : null}
          {shown.length ? (
            <ul className="list approvals-list">
              {shown.map((a) => (
                <li key={a.id}>
                  <button type="button" className="item" aria-pressed={a.id === selected} onClick={() => navigate(`/approvals/${encodeURIComponent(a.id)}`)} data-approval={a.id}>
                    <span className="name">{a.key}</span> <span className="muted">on</span> <code>{a.edgeId || "manager"}</code>
                    <span className="chips">
                      <ClassBadge value={a.effectiveClass} />
                      <StateChip state={a.state} />
                      {a.state === ApprovalState.PENDING ? <Chip>{progressText(a)}</Chip> : null}
                    </span>
                    <span className="mono preview">{paramsPreview(a)}</span>
                    <span className="muted">
                      by {a.requesterUserId} · <Time value={a.createdAt} />
                    </span>
                  </button>
                </li>
              ))}
            </ul>
          ) : null}
        </section>
        <section aria-label="Selected request">
          {current ? (
            <ApprovalDetail key={current.id} approval={current} onUpdate={update} />
          ) : selected && missing ? (
            <ErrorNote error={missing}>{`Request ${selected}: `}</ErrorNote>
          ) : selected ? (
            <p className="muted">Loading {selected}…</p>
          ) : (
            <p className="muted">Choose a request to see its params and decide it.</p>
          )}
        </section>
      </div>
    </>
  );
}

function ApprovalDetail(props: { approval: Approval; onUpdate: (list: Approval[]) => void }) {
  const { api, user } = useSession();
  const a = props.approval;
  const allowed = can(user);
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState<"" | "approve" | "deny">("");
  const [error, setError] = useState<unknown>(null);
  const [note, setNote] = useState("");

  const pending = a.state === ApprovalState.PENDING;
  const mine = a.requesterUserId === user.id;
  const voted = a.votes.some((v) => v.userId === user.id);
  const needReason = "Give a reason first; it is kept with your decision and audited.";
  const approveBlock = !allowed.approve
    ? mine
      ? `You requested this call, and your role (${roleName(user.role)}) cannot approve; an approver must.`
      : `Your role (${roleName(user.role)}) cannot approve; an approver or admin decides.`
    : mine
      ? "You requested this call; someone else must approve it."
      : voted
        ? `You already approved it; it needs ${a.requiredApprovals - a.votes.length} more from another approver.`
        : !reason.trim()
          ? needReason
          : "";
  const denyBlock = !allowed.approve && !mine ? "Only approvers, or the requester withdrawing it, may deny it." : !reason.trim() ? needReason : "";

  const decide = async (kind: "approve" | "deny") => {
    setBusy(kind);
    setError(null);
    setNote("");
    try {
      const res = kind === "approve" ? await api.approvals.approve({ id: a.id, comment: reason.trim(), paramsHash: a.paramsHash }) : await api.approvals.deny({ id: a.id, reason: reason.trim() });
      const after = res.approval;
      if (after) props.onUpdate([after]);
      setReason("");
      if (kind === "deny") setNote(mine ? "Withdrawn; nothing ran." : "Denied; nothing ran.");
      else if (after?.state === ApprovalState.PENDING) setNote(`Approval recorded: ${progressText(after)}; it runs when the last one arrives.`);
      else setNote("Your approval was the last one needed; the call was started.");
    } catch (err) {
      setError(err);
      if (err instanceof ConnectError && err.code === Code.FailedPrecondition) {
        // Decided meanwhile by someone else: show what it is now.
        api.approvals.getApproval({ id: a.id }).then(
          (r) => r.approval && props.onUpdate([r.approval]),
          () => undefined,
        );
      }
    } finally {
      setBusy("");
    }
  };

  const why = `decision-why-${a.id}`;
  return (
    <article aria-labelledby="approval-title" data-testid="approval" data-state={STATE_TEXT[a.state]}>
      <h2 id="approval-title">
        {a.key} <code>{a.id}</code>
      </h2>
      <p className="row">
        <ClassBadge value={a.effectiveClass} />
        <span data-testid="approval-state">
          <StateChip state={a.state} />
        </span>
        {mine ? <Chip>your request</Chip> : null}
      </p>
      <dl className="facts">
        <dt>Edge</dt>
        <dd>{a.edgeId ? <code>{a.edgeId}</code> : "the manager"}</dd>
        <dt>Requested by</dt>
        <dd data-testid="requester">
          {a.requesterUserId} <span className="muted">({a.requesterRole})</span>
        </dd>
        <dt>Requested</dt>
        <dd>
          <Time value={a.createdAt} />
        </dd>
        {pending ? (
          <>
            <dt>Expires</dt>
            <dd>
              <Time value={a.expiresAt} />
            </dd>
          </>
        ) : null}
        {a.sessionId ? (
          <>
            <dt>Session</dt>
            <dd>
              <code>{a.sessionId}</code>
            </dd>
          </>
        ) : null}
        {a.timeoutMs ? (
          <>
            <dt>Timeout</dt>
            <dd>{a.timeoutMs} ms</dd>
          </>
        ) : null}
        <dt>Audit</dt>
        <dd>
          request row #{String(a.requestAuditSeq)}
          {a.executionAuditSeq ? `, execution row #${String(a.executionAuditSeq)}` : ""}
        </dd>
      </dl>

      <h3>Params</h3>
      <pre className="output" data-testid="params">
        {json(a.params ?? {})}
      </pre>

      <h3>Approvals</h3>
      <p data-testid="progress">
        <strong>{progressText(a)}</strong>
        {a.effectiveClass === SkillClass.DANGEROUS ? <span className="muted"> — a dangerous call needs a signed SOP and two approvers, neither the requester.</span> : null}
      </p>
      {a.votes.length ? (
        <ul className="votes" data-testid="votes">
          {a.votes.map((v) => (
            <li key={v.userId}>
              <strong>{v.userId}</strong> <Time value={v.at} />
              {v.comment ? <span> — “{v.comment}”</span> : null}
            </li>
          ))}
        </ul>
      ) : null}

      {a.sopId || a.sopHash ? (
        <section aria-label="SOP" data-testid="sop">
          <h3>SOP</h3>
          <dl className="facts">
            <dt>Id</dt>
            <dd>
              <code>{a.sopId}</code>
            </dd>
            <dt>Version</dt>
            <dd>
              <code>{a.sopVersion}</code>
            </dd>
            <dt>SHA-256</dt>
            <dd>
              <code className="hash">{a.sopHash}</code>
            </dd>
          </dl>
        </section>
      ) : null}

      <Outcome a={a} />

      {pending ? (
        <form className="decision" onSubmit={(e) => e.preventDefault()} aria-label="Decide">
          <h3>Decide</h3>
          <label htmlFor={`reason-${a.id}`}>Reason (required)</label>
          <textarea id={`reason-${a.id}`} rows={2} value={reason} onChange={(e) => setReason(e.target.value)} aria-required="true" aria-describedby={why} placeholder="why this may (or may not) run" />
          <div className="row">
            <button type="button" onClick={() => decide("approve")} disabled={Boolean(approveBlock) || busy !== ""} aria-describedby={why}>
              {busy === "approve" ? "Approving…" : "Approve"}
            </button>
            <button type="button" className="danger" onClick={() => decide("deny")} disabled={Boolean(denyBlock) || busy !== ""} aria-describedby={why}>
              {busy === "deny" ? (mine ? "Withdrawing…" : "Denying…") : mine ? "Withdraw" : "Deny"}
            </button>
          </div>
          <div id={why} className="help" data-testid="decision-why">
            {approveBlock ? <p>Approve: {approveBlock}</p> : null}
            {denyBlock && denyBlock !== approveBlock ? <p>{mine ? "Withdraw" : "Deny"}: {denyBlock}</p> : null}
          </div>
        </form>
      ) : null}
      <div aria-live="polite">
        <ErrorNote error={error}>Refused: </ErrorNote>
        {note ? (
          <p role="status" data-testid="decision-note">
            {note}
          </p>
        ) : null}
      </div>
    </article>
  );
}

/** What became of the request once it left PENDING. */
function Outcome(props: { a: Approval }) {
  const { a } = props;
  switch (a.state) {
    case ApprovalState.RUNNING:
      return (
        <p role="status" data-testid="outcome">
          Approved; the call is running{a.edgeId ? ` on ${a.edgeId}` : ""}…
        </p>
      );
    case ApprovalState.EXECUTED:
      return (
        <section aria-label="Outcome" data-testid="outcome">
          <h3>Result</h3>
          <p>
            Executed after {progressText(a)}{a.result && !a.result.success ? <strong>: the call ran and failed</strong> : null}.
          </p>
          {a.result ? <ResultView result={a.result} label="Result of the approved call" /> : <p className="muted">No result was kept.</p>}
        </section>
      );
    case ApprovalState.DENIED:
      return (
        <section aria-label="Outcome" data-testid="outcome">
          <h3>Denied</h3>
          <p>
            Denied by <strong>{a.deniedBy || "someone"}</strong>
            {a.reason ? (
              <>
                : <q data-testid="deny-reason">{a.reason}</q>
              </>
            ) : null}
            . Nothing ran.
          </p>
        </section>
      );
    case ApprovalState.EXPIRED:
      return (
        <section aria-label="Outcome" data-testid="outcome">
          <h3>Expired</h3>
          <p>Nobody decided before it expired{a.reason ? `: ${a.reason}` : ""}. Nothing ran.</p>
        </section>
      );
    case ApprovalState.FAILED:
      return (
        <section aria-label="Outcome" data-testid="outcome">
          <h3>Failed</h3>
          <p className="error">It was approved but could not run{a.reason ? `: ${a.reason}` : ""}.</p>
        </section>
      );
    default:
      return null;
  }
}
