/**
 * /admin/users (admins): users with their role, reach and state; add a user; change a user's role,
 * reach or disabled flag; a user's API tokens, a new one shown once, revocation after a
 * confirmation. Everything is an IdentityService call the manager authorises (admin only) and
 * audits; its refusals are shown with their message.
 */
import { useCallback, useEffect, useState, type FormEvent } from "react";
import { Role, type User } from "../../../../proto/gen/ongrid/v1/identity_service_pb.ts";
import { useSession, roleName } from "../session.tsx";
import { Link, navigate, segment, usePath } from "../router.tsx";
import { Chip, ErrorNote, Time } from "../components.tsx";
import { RefusedNote } from "../admin-kit.tsx";
import { Tokens } from "./user-tokens.tsx";

const PATH = "/admin/users";
const ROLES = [Role.VIEWER, Role.OPERATOR, Role.APPROVER, Role.ADMIN];

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
