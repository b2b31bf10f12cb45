/** A user's API tokens on /admin/users: the list, a new one shown once, revocation after a confirmation. */
import { useCallback, useEffect, useState, type FormEvent } from "react";
import type { TokenInfo, User } from "../../../../proto/gen/ongrid/v1/identity_service_pb.ts";
import { useSession } from "../session.tsx";
import { Chip, Time } from "../components.tsx";
import { ConfirmButton, RefusedNote, ShownOnce } from "../admin-kit.tsx";

/** Token lifetimes offered by the form (seconds; 0 never expires). */
const TTLS: { value: number; label: string }[] = [
  { value: 0, label: "never expires" },
  { value: 3600, label: "1 hour" },
  { value: 86_400, label: "1 day" },
  { value: 30 * 86_400, label: "30 days" },
  { value: 90 * 86_400, label: "90 days" },
];

/** The tokens of one user. */
export function Tokens(props: { user: User }) {
  const { api } = useSession();
  const u = props.user;
  const [tokens, setTokens] = useState<TokenInfo[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [issued, setIssued] = useState<{ token: string; id: string } | null>(null);
  const reload = useCallback(async () => {
    try {
      setTokens((await api.identity.listTokens({ userId: u.id })).tokens);
    } catch (err) {
      setError(err);
    }
  }, [api, u.id]);
  useEffect(() => {
    void reload();
  }, [reload]);
  const revoke = async (id: string) => {
    setError(null);
    try {
      await api.identity.revokeToken({ id });
    } catch (err) {
      setError(err);
    }
    await reload();
  };

  return (
    <>
      <h3>API tokens</h3>
      <RefusedNote error={error} />
      {issued ? (
        <ShownOnce title={`New token ${issued.id} for ${u.id}`} secret={issued.token} onDismiss={() => setIssued(null)}>
          <p className="help">
            Log in to the console with it, or use it from the CLI: <code>ONGRID_TOKEN=… ongrid skills list --manager {window.location.origin}</code>
          </p>
        </ShownOnce>
      ) : null}
      <NewToken
        user={u}
        onIssued={async (t) => {
          setIssued(t);
          await reload();
        }}
      />
      {tokens && tokens.length === 0 ? <p className="muted">No tokens.</p> : null}
      {tokens && tokens.length > 0 ? (
        <div className="table-wrap">
          <table className="tokens">
            <caption className="sr-only">Tokens of {u.id}</caption>
            <thead>
              <tr>
                <th scope="col">Token id</th>
                <th scope="col">Description</th>
                <th scope="col">Reach</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">Last used</th>
                <th scope="col">State</th>
              </tr>
            </thead>
            <tbody>
              {tokens.map((t) => (
                <TokenRow key={t.id} token={t} onRevoke={() => revoke(t.id)} />
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </>
  );
}

function TokenRow(props: { token: TokenInfo; onRevoke(): Promise<void> }) {
  const t = props.token;
  const expired = t.expiresAt !== undefined && Number(t.expiresAt.seconds) * 1000 < Date.now();
  return (
    <tr data-token={t.id}>
      <th scope="row">
        <code>{t.id}</code>
      </th>
      <td>{t.description || <span className="muted">—</span>}</td>
      <td>{t.reach ? <code>{t.reach}</code> : <span className="muted">the user's</span>}</td>
      <td>
        <Time value={t.createdAt} />
      </td>
      <td>{t.expiresAt ? <Time value={t.expiresAt} /> : <span className="muted">never</span>}</td>
      <td>
        <Time value={t.lastUsedAt} />
      </td>
      <td data-testid="token-state">
        {t.revokedAt ? (
          <Chip kind="offline" title={`revoked`}>
            revoked
          </Chip>
        ) : expired ? (
          <Chip kind="offline">expired</Chip>
        ) : (
          <span className="row">
            <Chip kind="online">active</Chip>
            <ConfirmButton label="Revoke" question={<>Revoke {t.id}? It stops working from the next call; this cannot be undone.</>} confirmLabel="Revoke it" onConfirm={props.onRevoke} />
          </span>
        )}
      </td>
    </tr>
  );
}

function NewToken(props: { user: User; onIssued(t: { token: string; id: string }): Promise<void> }) {
  const { api } = useSession();
  const [description, setDescription] = useState("");
  const [reach, setReach] = useState("");
  const [ttl, setTtl] = useState(0);
  const [error, setError] = useState<unknown>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      const res = await api.identity.createToken({ userId: props.user.id, description: description.trim(), reach: reach.trim(), ttlSeconds: BigInt(ttl) });
      setDescription("");
      setReach("");
      await props.onIssued({ token: res.token, id: res.info?.id ?? "" });
    } catch (err) {
      setError(err);
    }
  };
  return (
    <form className="filters" onSubmit={submit} aria-label={`New token for ${props.user.id}`}>
      <label htmlFor="token-description">
        Description
        <input id="token-description" value={description} onChange={(e) => setDescription(e.target.value)} placeholder="laptop, CI, …" maxLength={200} />
      </label>
      <label htmlFor="token-reach">
        Reach (narrows the user's)
        <input id="token-reach" value={reach} onChange={(e) => setReach(e.target.value)} placeholder="empty: the user's reach" />
      </label>
      <label htmlFor="token-ttl">
        Lifetime
        <select id="token-ttl" value={ttl} onChange={(e) => setTtl(Number(e.target.value))}>
          {TTLS.map((t) => (
            <option key={t.value} value={t.value}>
              {t.label}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" disabled={props.user.disabled} title={props.user.disabled ? "enable the user first" : undefined}>
        Create token
      </button>
      <RefusedNote error={error} what="the token" />
    </form>
  );
}
