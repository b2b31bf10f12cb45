/**
 * The admin's edge actions (EdgeService, admin only; the manager refuses anyone else): enrol an
 * edge or rotate its token — the token shown once with the command that starts the agent — replace
 * its labels, revoke it after a confirmation.
 */
import { useEffect, useRef, useState, type FormEvent } from "react";
import type { Edge, EnrollEdgeResponse } from "../../../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { useSession } from "../session.tsx";
import { ConfirmButton, RefusedNote, ShownOnce } from "../admin-kit.tsx";
import { labelsText, parseLabels } from "../labels.ts";

/** The command that starts the agent with a new token (edge/main.ts's flags; docs/edge.md). */
export function edgeCommand(id: string, token: string): string {
  return `ongrid-edge --manager ${window.location.origin} --id ${id} --token ${token}`;
}

/** A new edge token, shown once with the command that uses it. */
export function EnrolledToken(props: { res: EnrollEdgeResponse; onDismiss(): void }) {
  const { res } = props;
  return (
    <ShownOnce title={`${res.rotated ? "New token" : "Token"} for edge ${res.id}`} secret={res.token} onDismiss={props.onDismiss}>
      {res.rotated ? <p className="warn-text">The edge's old token no longer works; its open tunnel was closed.</p> : null}
      <p>Start the agent on the host with it:</p>
      <pre className="output mono" data-testid="edge-command">
        {edgeCommand(res.id, res.token)}
      </pre>
      <p className="help">
        <code>ongrid-edge</code> is <code>dist/ongrid-edge</code> from <code>npm run build:edge</code>. <code>ONGRID_EDGE_TOKEN</code> or <code>--token-file</code> keeps the token out of the process list.
      </p>
    </ShownOnce>
  );
}

/** /edges' form: enrol a new edge id with its labels (an existing id gets a new token instead). */
export function EnrolEdge(props: { known: string[]; onEnrolled(): void }) {
  const { api } = useSession();
  const [id, setId] = useState("");
  const [labels, setLabels] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [res, setRes] = useState<EnrollEdgeResponse | null>(null);
  const exists = props.known.includes(id.trim());
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      const r = await api.edges.enrollEdge({ id: id.trim(), labels: parseLabels(labels) });
      setRes(r);
      setId("");
      setLabels("");
      props.onEnrolled();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <section aria-labelledby="enrol-title" className="edge-enrol">
      <h2 id="enrol-title">Enrol an edge</h2>
      <form className="filters" onSubmit={submit} aria-label="Enrol an edge">
        <label htmlFor="enrol-id">
          New edge id
          <input id="enrol-id" value={id} onChange={(e) => setId(e.target.value)} placeholder="web-01" aria-describedby="enrol-help" />
        </label>
        <label htmlFor="enrol-labels">
          Labels
          <input id="enrol-labels" value={labels} onChange={(e) => setLabels(e.target.value)} placeholder="env=prod, team=web" />
        </label>
        <button type="submit" disabled={!id.trim()}>
          {exists ? "Rotate its token" : "Enrol"}
        </button>
      </form>
      <p id="enrol-help" className="help">
        {exists ? (
          <strong className="warn-text">"{id.trim()}" is already enrolled: this issues a new token, the old one stops working and its tunnel closes{labels.trim() ? "" : "; its labels stay"}.</strong>
        ) : (
          <>Lower-case letters, digits, dots and dashes. The token is shown once, with the command that starts the agent.</>
        )}
      </p>
      <RefusedNote error={error} what="the enrolment" />
      {res ? <EnrolledToken res={res} onDismiss={() => setRes(null)} /> : null}
    </section>
  );
}

/** The per-edge page's admin box: labels, a new token, revocation. */
export function EdgeAdmin(props: { edge: Edge; onChanged(): void }) {
  const { api } = useSession();
  const e = props.edge;
  const [error, setError] = useState<unknown>(null);
  const [note, setNote] = useState("");
  const [res, setRes] = useState<EnrollEdgeResponse | null>(null);
  const current = labelsText(e.labels);
  const [labels, setLabels] = useState(current);
  /** Whether the field holds the admin's unsaved typing. */
  const edited = useRef(false);
  // Labels changed elsewhere (another admin, the CLI) replace the field unless it is being edited.
  useEffect(() => {
    if (!edited.current) setLabels(current);
  }, [current]);
  const act = async (what: () => Promise<string>) => {
    setError(null);
    setNote("");
    try {
      setNote(await what());
      props.onChanged();
    } catch (err) {
      setError(err);
    }
  };
  const saveLabels = (ev: FormEvent) => {
    ev.preventDefault();
    void act(async () => {
      const r = await api.edges.setEdgeLabels({ id: e.id, labels: parseLabels(labels) });
      const now = r.edge ? labelsText(r.edge.labels) : "";
      setLabels(now);
      edited.current = false;
      return now ? `Saved labels: ${now}.` : "Saved: the edge has no labels.";
    });
  };
  return (
    <section aria-labelledby="edge-admin-title" className="edge-admin">
      <h2 id="edge-admin-title">Manage</h2>
      <form className="filters" onSubmit={saveLabels} aria-label="Edit labels">
        <label htmlFor="edge-labels-edit">
          Labels (reach and selectors use these)
          <input id="edge-labels-edit" value={labels} onChange={(ev) => {
              edited.current = true;
              setLabels(ev.target.value);
            }} placeholder="env=prod, team=web" size={40} />
        </label>
        <button type="submit" disabled={labels === current}>
          Save labels
        </button>
      </form>
      <div className="row">
        <button type="button" className="secondary" onClick={() => void act(async () => (setRes(await api.edges.enrollEdge({ id: e.id, labels: {} })), ""))}>
          {e.revoked ? "Enrol again (new token)" : "Rotate token"}
        </button>
        {e.revoked ? null : (
          <ConfirmButton
            label="Revoke edge"
            question={<>Revoke {e.id}? Its token stops working and its tunnel closes; enrolling it again issues a new token.</>}
            confirmLabel="Revoke it"
            onConfirm={() => act(async () => ((await api.edges.revokeEdge({ id: e.id })).disconnected ? "Revoked; its tunnel was closed." : "Revoked (it was not connected)."))}
          />
        )}
      </div>
      <RefusedNote error={error} />
      {note ? (
        <p role="status" className="muted" data-testid="edge-admin-note">
          {note}
        </p>
      ) : null}
      {res ? <EnrolledToken res={res} onDismiss={() => setRes(null)} /> : null}
    </section>
  );
}
