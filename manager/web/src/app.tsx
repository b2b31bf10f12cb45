/** The console shell: login, navigation by role, and the page for the current path. */
import { useCallback, useEffect, useMemo, useState, type ReactNode } from "react";
import { Code, ConnectError } from "@connectrpc/connect";
import { createApi, errorText } from "./client.ts";
import { ErrorNote } from "./components.tsx";
import { SessionContext, can, roleName, storeToken, storedToken, useSession, type Session } from "./session.tsx";
import { Link, navigate, usePath } from "./router.tsx";
import { LoginPage } from "./pages/login.tsx";
import { SkillsPage } from "./pages/skills.tsx";
import { EdgesPage } from "./pages/edges.tsx";
import { TopologyPage } from "./pages/topology.tsx";
import { ApprovalsPage } from "./pages/approvals.tsx";
import { PlaybooksPage } from "./pages/playbooks.tsx";
import { ChatPage } from "./pages/chat.tsx";
import { AuditPage } from "./pages/audit.tsx";
import { UsersPage } from "./pages/users.tsx";
import type { User } from "../../../proto/gen/ongrid/v1/identity_service_pb.ts";

interface PageDef {
  path: string;
  title: string;
  render: () => ReactNode;
  /** Shown only when the role allows it. */
  visible?: (c: ReturnType<typeof can>) => boolean;
  /** The role the page needs, said to someone whose role does not allow it, e.g. "the approver (or admin) role". */
  needs?: string;
}

const PAGES: PageDef[] = [
  { path: "/skills", title: "Skills", render: () => <SkillsPage /> },
  { path: "/edges", title: "Edges", render: () => <EdgesPage /> },
  { path: "/topology", title: "Topology", render: () => <TopologyPage /> },
  { path: "/approvals", title: "Approvals", render: () => <ApprovalsPage /> },
  { path: "/playbooks", title: "Playbooks", render: () => <PlaybooksPage /> },
  { path: "/chat", title: "Diagnose", render: () => <ChatPage /> },
  { path: "/admin/audit", title: "Audit", render: () => <AuditPage />, visible: (c) => c.approve, needs: "the approver (or admin) role" },
  { path: "/admin/users", title: "Users", render: () => <UsersPage />, visible: (c) => c.admin, needs: "the admin role" },
];

/** The whole console. */
export function App() {
  const [token, setToken] = useState<string | null>(storedToken);
  const [user, setUser] = useState<User | null>(null);
  const [problem, setProblem] = useState<string>("");
  const logout = useCallback((why = "") => {
    storeToken(null);
    setToken(null);
    setUser(null);
    setProblem(why);
  }, []);
  // A late refusal of an earlier token (a call still in flight after a new login) must not log the new one out.
  const api = useMemo(() => (token ? createApi(token, () => storedToken() === token && logout("The manager no longer accepts this token; log in again.")) : null), [token, logout]);
  const [unreachable, setUnreachable] = useState<unknown>(null);
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    if (!api) return;
    let live = true;
    setUnreachable(null);
    api.identity.whoAmI({}).then(
      (res) => live && setUser(res.user ?? null),
      (err) => {
        if (!live) return;
        // Only the manager's refusal of the token ends the login; a restart or a network error does not.
        if (err instanceof ConnectError && err.code === Code.Unauthenticated) logout(errorText(err));
        else setUnreachable(err);
      },
    );
    return () => {
      live = false;
    };
  }, [api, logout, attempt]);

  const login = (t: string) => {
    storeToken(t);
    setProblem("");
    setToken(t);
  };

  if (!token || !api) return <LoginPage onLogin={login} problem={problem} />;
  if (!user && unreachable)
    return (
      <main id="main" className="login">
        <ErrorNote error={unreachable}>Cannot check the token with the manager: </ErrorNote>
        <p className="row">
          <button type="button" onClick={() => setAttempt((n) => n + 1)}>
            Try again
          </button>
          <button type="button" className="secondary" onClick={() => logout()}>
            Log out
          </button>
        </p>
      </main>
    );
  if (!user) return <p className="loading" role="status">Checking the token…</p>;
  const session: Session = { api, user, logout: () => logout() };
  return (
    <SessionContext.Provider value={session}>
      <Shell />
    </SessionContext.Provider>
  );
}

function Shell() {
  const path = usePath();
  const s = useSession();
  const allowed = can(s.user);
  const pages = PAGES.filter((p) => !p.visible || p.visible(allowed));
  // The longest matching path wins (a page under another's path, e.g. /admin/x beside /admin).
  const matched = PAGES.filter((p) => path === p.path || path.startsWith(p.path + "/")).sort((a, b) => b.path.length - a.path.length)[0];
  const page = matched && pages.includes(matched) ? matched : undefined;
  // A page the role may not open is not silently swapped for another: it says why.
  const denied = matched && !page ? matched : undefined;
  useEffect(() => {
    // "/" and unknown paths land on the first page.
    if (denied) document.title = `${denied.title} (not available) · ongrid`;
    else if (!page) navigate(pages[0].path);
    else document.title = `${page.title} · ongrid`;
  }, [page, pages, denied]);
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">ongrid</span>
        <nav aria-label="Console">
          <ul>
            {pages.map((p) => (
              <li key={p.path}>
                <Link to={p.path} current={p === page}>
                  {p.title}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <span className="whoami" data-testid="whoami">
          {s.user.id} <span className="chip">{roleName(s.user.role)}</span>
        </span>
        <button type="button" className="secondary" onClick={s.logout}>
          Log out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {page ? page.render() : denied ? <NotAllowed page={denied} role={roleName(s.user.role)} home={pages[0].path} /> : null}
      </main>
    </>
  );
}

/** What a person sees at a page their role does not allow: which role it needs, which they have. */
function NotAllowed(props: { page: PageDef; role: string; home: string }) {
  return (
    <section className="denied-page" data-testid="not-allowed">
      <h1>{props.page.title}: not available to you</h1>
      <p>
        This page needs {props.page.needs ?? "a role other than yours"}; you are logged in as <strong>{props.role}</strong>. Ask an admin to change your role, or log in with a token of a user who has it.
      </p>
      <p>
        <Link to={props.home}>Go to {PAGES.find((p) => p.path === props.home)?.title ?? props.home}</Link>
      </p>
    </section>
  );
}
