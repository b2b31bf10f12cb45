/** Login with an API token (the manager printed one for `admin` on its first start). */
import { useState, type FormEvent } from "react";

export function LoginPage(props: { onLogin: (token: string) => void; problem: string }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState("");
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const t = token.trim();
    if (!t) {
      setError("Paste an API token.");
      return;
    }
    props.onLogin(t);
  };
  const message = error || props.problem;
  return (
    <main id="main" className="login">
      <h1>ongrid console</h1>
      <form onSubmit={submit} noValidate>
        <label htmlFor="token">API token</label>
        <input id="token" name="token" type="password" autoComplete="off" autoFocus value={token} onChange={(e) => setToken(e.target.value)} aria-describedby="token-help token-error" aria-invalid={message ? true : undefined} />
        <p id="token-help" className="help">
          The manager prints the <code>admin</code> token once on its first start; <code>npx ongrid tokens create --user NAME</code> issues more.
        </p>
        {message ? (
          <p id="token-error" className="error" role="alert">
            {message}
          </p>
        ) : null}
        <button type="submit">Log in</button>
      </form>
    </main>
  );
}
