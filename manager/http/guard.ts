/**
 * The one guard of the plain-HTTP routes on the manager's port (K3: /metrics, the webhooks). A
 * request's bearer API token is checked by the same identity store and token cache as every RPC
 * (rpc/auth.ts authenticateBearer), then the route's least role. A refusal is audited like a
 * refused RPC, by the same writer (audit/throttle.ts createRefusalAudit: a refusal of nobody is
 * counted per address, route and reason, not written one row each), and answered 401 (with
 * `www-authenticate: Bearer realm="ongrid"`) or 403 with a JSON {code, message, hint}.
 */
import type { Logger } from "pino";
import { OngridError } from "../../skill/errors.ts";
import { createRefusalAudit } from "../audit/throttle.ts";
import type { AuditLog } from "../audit/types.ts";
import type { Caller } from "../identity/caller.ts";
import { roleAtLeast, type IdentityStore, type Role } from "../identity/store.ts";
import { authenticateBearer, peerKey } from "../rpc/auth.ts";
import { errorBody, httpStatus, sendJson } from "./errors.ts";
import type { HttpRoute } from "./route.ts";

type Req = Parameters<HttpRoute>[0];
type Res = Parameters<HttpRoute>[1];

/** What a route asks of the guard. */
export interface GuardRule {
  /** The route in audit rows and logs: a refusal's row names it as its tool ("/metrics", "hooks.alertmanager"). */
  name: string;
  /** The least role the route serves; without one, any authenticated caller. */
  role?: Role;
  /** What a refusal's row records of the request. */
  args: (req: Req) => Record<string, unknown>;
  /** Hints for the route's senders, in place of the generic ones. */
  hints?: { unauthenticated?: string; permission_denied?: string };
  /** Headers every refusal of the route carries (the metrics page's no-store). */
  headers?: Record<string, string>;
}

/** What the guard needs; `throttle` sets the refusal throttle's window, burst and clock (tests). */
export interface GuardDeps {
  identity: Pick<IdentityStore, "authenticate">;
  audit: AuditLog;
  log: Logger;
  throttle?: Parameters<typeof createRefusalAudit>[1];
}

/** The answer a 401 carries, naming the scheme the manager wants (RFC 9110 §11.6.1). */
export const WWW_AUTHENTICATE = 'Bearer realm="ongrid"';

/** The guard over the manager's identity store and audit log. */
export function createGuard(deps: GuardDeps) {
  const { identity, log } = deps;
  const refused = createRefusalAudit(deps.audit, deps.throttle);

  /**
   * Audits a refused request and answers it: the guard's own refusals and a route's (a method it
   * does not serve, a body too large or not JSON). `who` is the caller once authenticated; before
   * that the refusal is nobody's, and throttled. A row that cannot be written is logged and the
   * request still refused: a broken audit log must not turn a refusal into a 500.
   */
  async function refuse(req: Req, res: Res, rule: GuardRule, err: OngridError, who?: Caller): Promise<void> {
    const status = httpStatus(err);
    // Drain what the client still sends, so it reads the answer rather than a reset connection.
    await drain(req);
    log[who ? "warn" : "info"]({ route: rule.name, user: who?.userId ?? "", status, reason: err.message }, "HTTP request refused");
    const peer = peerKey((req.socket as { remoteAddress?: string } | undefined)?.remoteAddress ?? "");
    // Audited before the answer, so a client that reads the refusal finds its row.
    await refused({ toolName: rule.name, args: rule.args(req) }, err, who ?? { userId: "", role: "" }, `${peer}|${rule.name}|${err.code}`).catch((auditErr: unknown) =>
      log.error({ route: rule.name, err: (auditErr as Error)?.message }, "could not audit a refused HTTP request"),
    );
    sendJson(res, status, errorBody(err), { ...rule.headers, ...(status === 401 ? { "www-authenticate": WWW_AUTHENTICATE } : {}) });
  }

  /**
   * Authenticates and authorises a request: its caller, or undefined when it was refused (audited
   * and answered here). A token that could not be checked (the database did not answer) is not
   * the caller's fault and not auditable either: that error is thrown for the route's 500.
   */
  async function admit(req: Req, res: Res, rule: GuardRule): Promise<Caller | undefined> {
    let who: Caller;
    try {
      who = (await authenticateBearer(identity, req.headers.authorization)).caller;
    } catch (err) {
      if (!(err instanceof OngridError)) throw err;
      const hint = rule.hints?.unauthenticated;
      await refuse(req, res, rule, hint ? new OngridError(err.code, err.message, hint) : err);
      return undefined;
    }
    if (rule.role && !roleAtLeast(who.role, rule.role)) {
      const err = new OngridError("permission_denied", `${rule.name} needs role ${rule.role} or above; "${who.userId}" is ${who.role}`, rule.hints?.permission_denied ?? "ask an admin for the role");
      await refuse(req, res, rule, err, who);
      return undefined;
    }
    return who;
  }

  return { admit, refuse };
}

/** The guard (createGuard). */
export type Guard = ReturnType<typeof createGuard>;

/** Reads and drops what is left of a request body, up to a hard limit past which it is cut. */
function drain(req: Req): Promise<void> {
  if (req.readableEnded || req.destroyed) return Promise.resolve();
  const hardLimit = 64 * 1024 * 1024;
  return new Promise((resolve) => {
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > hardLimit) {
        req.destroy();
        resolve();
      }
    });
    req.on("end", () => resolve());
    req.on("error", () => resolve());
    req.on("aborted", () => resolve());
    req.on("close", () => resolve());
  });
}
