/**
 * Who is logged in: the API token (kept in sessionStorage, so it dies with the tab), the user
 * WhoAmI returned and what the role allows. Pages read it through useSession().
 */
import { createContext, useContext } from "react";
import { Role, type User } from "../../../proto/gen/ongrid/v1/identity_service_pb.ts";
import type { Api } from "./client.ts";

/** A logged-in console session. */
export interface Session {
  api: Api;
  user: User;
  logout(): void;
}

export const SessionContext = createContext<Session | null>(null);

/** The current session; pages render only inside a logged-in shell. */
export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error("useSession outside a logged-in console");
  return s;
}

/** What a role may do, mirroring the manager's gate (the manager still decides every call). */
export function can(user: User) {
  return {
    /** Request mutating and dangerous calls (they wait for approval). */
    operate: user.role >= Role.OPERATOR,
    /** Approve or deny other people's requests, and read the audit log. */
    approve: user.role >= Role.APPROVER,
    /** Reload playbooks, manage edges and users. */
    admin: user.role === Role.ADMIN,
  };
}

/** "viewer", "operator", … for display. */
export function roleName(role: Role): string {
  return (Role[role] ?? "unspecified").toLowerCase();
}

const KEY = "ongrid.token";

/** The token of this tab, if one was entered. */
export function storedToken(): string | null {
  return window.sessionStorage.getItem(KEY);
}

/** Keeps (or with null forgets) the token for this tab. */
export function storeToken(token: string | null): void {
  if (token === null) window.sessionStorage.removeItem(KEY);
  else window.sessionStorage.setItem(KEY, token);
}
