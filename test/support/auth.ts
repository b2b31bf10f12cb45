/** Tests' side of authentication: a Connect interceptor sending an API token, and users made for a test. */
import type { Interceptor } from "@connectrpc/connect";
import type { Manager } from "../../manager/main.ts";

/** Sends `authorization: Bearer <token>` on every call. */
export function bearer(token: string): Interceptor {
  return (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
}

/** Creates a user with a token in a running manager's database (what `ongrid users add` + `ongrid tokens create` do). */
export async function makeUser(m: Pick<Manager, "identity">, id: string, role: string, opts: { reach?: string; tokenReach?: string; ttlMs?: number } = {}): Promise<string> {
  if (!(await m.identity.getUser(id))) await m.identity.createUser(id, role, opts.reach ?? "");
  return (await m.identity.createToken(id, { description: "test", reach: opts.tokenReach, ttlMs: opts.ttlMs })).token;
}
