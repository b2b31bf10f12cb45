/**
 * /admin/users (admins): users with their role, reach and state; add a user; change a user's role,
 * reach or disabled flag; a user's API tokens, a new one shown once, revocation after a
 * confirmation. Everything is an IdentityService call the manager authorises (admin only) and
 * audits; its refusals are shown with their message.
 */
import { useCallback, useEffect, useState, type FormEvent } from "react";
import { Role, type TokenInfo, type User } from "../../../../proto/gen/ongrid/v1/identity_service_pb.ts";
import { useSession, roleName } from "../session.tsx";
import { Link, navigate, segment, usePath } from "../router.tsx";
import { Chip, ErrorNote, Time } from "../components.tsx";
import { ConfirmButton, RefusedNote, ShownOnce } from "../admin-kit.tsx";

const PATH = "/admin/users";
const ROLES = [Role.VIEWER, Role.OPERATOR, Role.APPROVER, Role.ADMIN];

/** Token lifetimes offered by the form (seconds; 0 never expires). */
const TTLS: { value: number; label: string }[] = [
  { value: 0, label: "never expires" },
  { value: 3600, label: "1 hour" },
  { value: 86_400, label: "1 day" },
  { value: 30 * 86_400, label: "30 days" },
  { value: 90 * 86_400, label: "90 days" },
];

/** The users page: the list and the form to add one; the selected user below. */
export function UsersPage() {
  const { api } = useSession();
  const selected = segment(usePath(), 2);
  const [users, setUsers] = useState<User[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const reload = useCallback(async () => {
    try {
      setUsers((await api.identity.listUsers({})).users);
      setError(null);
    } catch (err) {
      setError(err);
    }
  }, [api]);
  useEffect(() => {
    void reload();
  }, [reload]);
  const user = users?.find((u) => u.id === selected);

  return (
    <>
      <h1>Users</h1>
      <ErrorNote error={error}>Cannot list users: </ErrorNote>
      <AddUser onAdded={async (id) => (await reload(), navigate(`${PATH}/${encodeURIComponent(id)}`))} />
      <div className="table-wrap">
        <table className="users">
          <caption className="sr-only">Users</caption>
          <thead>
            <tr>
              <th scope="col">User</th>
              <th scope="col">Role</th>
              <th scope="col">Reach</th>
              <th scope="col">State</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {(users ?? []).map((u) => (
              <tr key={u.id} data-user={u.id} aria-selected={u.id === selected}>
                <th scope="row">
                  <Link to={`${PATH}/${encodeURIComponent(u.id)}`} current={u.id === selected}>
                    {u.id}
                  </Link>
                </th>
                <td data-testid="user-role">{roleName(u.role)}</td>
                <td data-testid="user-reach">{u.reach ? <code>{u.reach}</code> : <span className="muted">all edges</span>}</td>
                <td data-testid="user-state">{u.disabled ? <Chip kind="offline">disabled</Chip> : <Chip kind="online">active</Chip>}</td>
                <td>
                  <Time value={u.createdAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {users === null && !error ? <p role="status">Loading…</p> : null}
      {selected && users && !user ? <p className="muted">No user "{selected}".</p> : null}
      {user ? <UserDetail key={user.id} user={user} onChanged={reload} /> : null}
    </>
  );
}

function RoleSelect(props: { id: string; value: Role; onChange(r: Role): void; disabled?: boolean }) {
  return (
    <select id={props.id} value={props.value} disabled={props.disabled} onChange={(e) => props.onChange(Number(e.target.value) as Role)}>
      {ROLES.map((r) => (
        <option key={r} value={r}>
          {roleName(r)}
        </option>
      ))}
    </select>
  );
}

function AddUser(props: { onAdded(id: string): Promise<void> }) {
  const { api } = useSession();
  const [id, setId] = useState("");
  const [role, setRole] = useState<Role>(Role.VIEWER);
  const [reach, setReach] = useState("");
  const [error, setError] = useState<unknown>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      const res = await api.identity.createUser({ id: id.trim(), role, reach: reach.trim() });
      setId("");
      setReach("");
      await props.onAdded(res.user?.id ?? id.trim());
    } catch (err) {
      setError(err);
    }
  };
  return (
    <form className="filters" onSubmit={submit} aria-label="Add a user">
      <label htmlFor="new-user-id">
        New user
        <input id="new-user-id" value={id} onChange={(e) => setId(e.target.value)} placeholder="alice" required />
      </label>
      <label htmlFor="new-user-role">
        Role
        <RoleSelect id="new-user-role" value={role} onChange={setRole} />
      </label>
      <label htmlFor="new-user-reach">
        Reach (label selector)
        <input id="new-user-reach" value={reach} onChange={(e) => setReach(e.target.value)} placeholder="empty: all edges" />
      </label>
      <button type="submit" disabled={!id.trim()}>
        Add user
      </button>
      <RefusedNote error={error} what="the user" />
    </form>
  );
}

function UserDetail(props: { user: User; onChanged(): Promise<void> }) {
  const { api, user: me } = useSession();
  const u = props.user;
  const self = u.id === me.id;
  const [role, setRole] = useState(u.role);
  const [reach, setReach] = useState(u.reach);
  const [disabled, setDisabled] = useState(u.disabled);
  const [error, setError] = useState<unknown>(null);
  const [saved, setSaved] = useState("");
  const changed = role !== u.role || reach.trim() !== u.reach || disabled !== u.disabled;
  const save = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    setSaved("");
    try {
      await api.identity.updateUser({ id: u.id, role: role !== u.role ? role : Role.UNSPECIFIED, reach: reach.trim() !== u.reach ? reach.trim() : undefined, disabled: disabled !== u.disabled ? disabled : undefined });
      setSaved(`Saved${disabled && !u.disabled ? ": the user's tokens stop working from the next call" : ""}.`);
      await props.onChanged();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <section aria-labelledby="user-title" className="user-detail" data-testid="user-detail">
      <h2 id="user-title">
        User <code>{u.id}</code>
      </h2>
      <form onSubmit={save} aria-label={`Change ${u.id}`} className="filters">
        <label htmlFor="user-role">
          Role
          <RoleSelect id="user-role" value={role} onChange={setRole} disabled={self} />
        </label>
        <label htmlFor="user-reach">
          Reach (label selector)
          <input id="user-reach" value={reach} onChange={(e) => setReach(e.target.value)} placeholder="empty: all edges" />
        </label>
        <label className="check">
          <input type="checkbox" checked={disabled} disabled={self} onChange={(e) => setDisabled(e.target.checked)} /> Disabled
        </label>
        <button type="submit" disabled={!changed}>
          Save
        </button>
      </form>
      {self ? <p className="help">You cannot demote or disable yourself (separation of duties): another admin must do it.</p> : null}
      <RefusedNote error={error} what="the change" />
      {saved ? (
        <p role="status" className="muted" data-testid="user-saved">
          {saved}
        </p>
      ) : null}
      <Tokens user={u} />
    </section>
  );
}

function Tokens(props: { user: User }) {
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
