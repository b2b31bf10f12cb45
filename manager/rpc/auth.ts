/**
 * The one interceptor that authenticates every RPC (bearer API token) and authorises it by role
 * (manager/identity/rules.ts) before any service code runs. Refusals are audited, and so is every
 * administrative action (ADMIN_ACTIONS), whether it worked or not.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { toJson, type Message } from "@bufbuild/protobuf";
import type { Logger } from "pino";
import { OngridError } from "../../skill/errors.ts";
import { errorText } from "../db/error-text.ts";
import type { AuditLog } from "../audit/types.ts";
import type { IdentityStore } from "../identity/store.ts";
import { roleAtLeast } from "../identity/store.ts";
import { ADMIN_ACTIONS, RPC_RULES } from "../identity/rules.ts";
import { appendAdminRow } from "../audit/admin.ts";
import { createRefusalAudit } from "../audit/throttle.ts";
import { kCaller, kPeerAddress } from "../identity/caller.ts";

/** The bearer token of an authorization header value, or undefined. */
export function bearerToken(header: string | null): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1] : "\u0000malformed";
}

/**
 * The one token check of a request, RPC or plain HTTP (/metrics, the webhooks): the bearer of an
 * authorization header value, checked by the identity store (and its token cache). Rejects with an
 * OngridError (unauthenticated) saying why; any other rejection means the token could not be checked.
 */
export function authenticateBearer(identity: Pick<IdentityStore, "authenticate">, header: string | null | undefined): ReturnType<IdentityStore["authenticate"]> {
  const raw = bearerToken(header ?? null);
  return identity.authenticate(raw === "\u0000malformed" ? "malformed" : raw);
}

/** What an audit row names for a refused RPC: the skill key for executions, else the method. */
function describe(path: string, message: unknown): { toolName: string; args: Record<string, unknown>; deviceId: string } {
  const m = (message ?? {}) as { key?: unknown; edgeId?: unknown; id?: unknown };
  if (path.endsWith("/ExecuteSkill") || path.endsWith("/FanOutSkill")) {
    return { toolName: typeof m.key === "string" ? m.key : path, args: { rpc: path }, deviceId: typeof m.edgeId === "string" ? m.edgeId : "" };
  }
  return { toolName: path, args: { rpc: path, ...(typeof m.id === "string" && m.id ? { id: m.id } : {}) }, deviceId: "" };
}

/** Defaults of server.auth_failures_per_minute, server.auth_failure_window and the tracked-address cap. */
export const DEFAULT_AUTH_FAILURES = 20;
export const DEFAULT_AUTH_FAILURE_WINDOW_MS = 60_000;
export const DEFAULT_MAX_TRACKED_ADDRESSES = 10_000;

/**
 * Counts failed authentications per peer address in a sliding window (S2): once `limit` failures
 * fall within `windowMs`, the address is blocked until the oldest of them leaves the window.
 * Only failures are recorded (a blocked request is not one, so refusals never extend the block);
 * at most `limit` timestamps are kept per address and at most `maxAddresses` addresses are
 * tracked, the least recently failing dropped first.
 */
export class AuthFailureLimiter {
  readonly limit: number;
  readonly windowMs: number;
  private readonly maxAddresses: number;
  private readonly now: () => number;
  /** Address → failure times, oldest first; Map order is least recently failing first. */
  private readonly failures = new Map<string, number[]>();

  constructor(opts: { limit?: number; windowMs?: number; maxAddresses?: number; now?: () => number } = {}) {
    this.limit = Math.max(1, Math.floor(opts.limit ?? DEFAULT_AUTH_FAILURES));
    this.windowMs = Math.max(1, opts.windowMs ?? DEFAULT_AUTH_FAILURE_WINDOW_MS);
    this.maxAddresses = Math.max(1, Math.floor(opts.maxAddresses ?? DEFAULT_MAX_TRACKED_ADDRESSES));
    this.now = opts.now ?? Date.now;
  }

  /** Failure times of `address` still inside the window (forgetting the address once none are). */
  private recent(address: string, now: number): number[] {
    const list = this.failures.get(address);
    if (!list) return [];
    while (list.length > 0 && list[0]! <= now - this.windowMs) list.shift();
    if (list.length === 0) this.failures.delete(address);
    return list;
  }

  /** Milliseconds until `address` may try again; 0 when it is not blocked. */
  blockedForMs(address: string): number {
    const now = this.now();
    const list = this.recent(address, now);
    return list.length >= this.limit ? list[list.length - this.limit]! + this.windowMs - now : 0;
  }

  /** Records one failed authentication from `address`. */
  recordFailure(address: string): void {
    const now = this.now();
    const list = this.recent(address, now);
    list.push(now);
    if (list.length > this.limit) list.splice(0, list.length - this.limit);
    this.failures.delete(address); // re-inserted: now the most recently failing
    this.failures.set(address, list);
    while (this.failures.size > this.maxAddresses) this.failures.delete(this.failures.keys().next().value!);
  }

  /** How many addresses are tracked (for tests and metrics). */
  get size(): number {
    return this.failures.size;
  }
}

/** An IPv4 peer seen on a dual-stack socket ("::ffff:127.0.0.1") counts as its IPv4 address. */
export function peerKey(address: string): string {
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}

/** Builds the interceptor. */
export function authInterceptor(deps: {
  identity: IdentityStore;
  audit: AuditLog;
  log: Logger;
  /** server.auth_failures_per_minute and server.auth_failure_window (ms); defaults 20 per 1 min. */
  authFailures?: { limit?: number; windowMs?: number; maxAddresses?: number; now?: () => number };
}): Interceptor {
  const { identity, audit, log } = deps;
  const limiter = new AuthFailureLimiter(deps.authFailures);
  const refused = createRefusalAudit(audit);
  return (next) => async (req) => {
    const path = `${req.method.parent.typeName}/${req.method.name}`;
    const refuse = async (err: OngridError, who: { userId: string; role: string }): Promise<never> => {
      // Refusals of nobody (no or a bad token) are counted per address and reason, one row per window.
      await refused(describe(path, (req as { message?: unknown }).message), err, who, `${peerKey(req.contextValues.get(kPeerAddress))}|${path}|${err.code}`);
      throw err;
    };
    // Before the token is looked at: an address that failed too often is refused whatever it sends now.
    // Without a peer address (not a network caller) there is nothing to count against.
    const peer = peerKey(req.contextValues.get(kPeerAddress));
    const waitMs = peer ? limiter.blockedForMs(peer) : 0;
    if (waitMs > 0) {
      log.warn({ rpc: path, peer }, "RPC refused: too many failed authentications from this address");
      return refuse(
        new OngridError(
          "resource_exhausted",
          `too many failed authentications from this address; retry in ${Math.ceil(waitMs / 1000)} s`,
          `${limiter.limit} requests from this address failed authentication within ${limiter.windowMs / 1000} s (server.auth_failures_per_minute, server.auth_failure_window); every request from it is refused until then, even with a valid token: check the API token the client sends, then retry after the wait`,
        ),
        { userId: "", role: "" },
      );
    }
    let who;
    try {
      who = await authenticateBearer(identity, req.header.get("authorization"));
    } catch (err) {
      if (!(err instanceof OngridError)) {
        // The token could not be checked (the database did not answer): not the caller's fault,
        // and not auditable either — the audit log is in the same database.
        log.error({ rpc: path, err: errorText(err) }, "RPC refused: the API token could not be checked");
        throw new OngridError("unavailable", "cannot check the API token: the database did not answer", "retry shortly; if it persists, check that the manager's database is reachable");
      }
      if (peer) limiter.recordFailure(peer);
      log.info({ rpc: path, reason: err.message, peer }, "RPC refused: not authenticated");
      return refuse(err, { userId: "", role: "" });
    }
    const min = RPC_RULES[path];
    if (!min) return refuse(new OngridError("permission_denied", `${path} has no authorisation rule`, "this is a bug in the manager"), who.caller);
    if (!roleAtLeast(who.caller.role, min)) {
      return refuse(
        new OngridError("permission_denied", `${path} needs role ${min} or above; "${who.caller.userId}" is ${who.caller.role}`, "ask an admin for the role"),
        who.caller,
      );
    }
    req.contextValues.set(kCaller, who.caller);
    if (!ADMIN_ACTIONS.has(path)) return next(req);
    // An administrative action (G6): its row, whether it worked or not.
    const message = (req as { message?: Message }).message;
    const args: Record<string, unknown> = { rpc: path, ...(message ? (toJson(req.method.input as never, message as never, { alwaysEmitImplicit: false }) as Record<string, unknown>) : {}) };
    const device = typeof args.id === "string" && path.startsWith("ongrid.v1.EdgeService/") ? args.id : "";
    try {
      const res = await next(req);
      await appendAdminRow(audit, who.caller, path, args, "", device);
      return res;
    } catch (err) {
      const failure = err instanceof OngridError ? `${err.code}: ${err.message}` : `${Code[ConnectError.from(err).code]?.toLowerCase() ?? "unknown"}: ${ConnectError.from(err).rawMessage}`;
      await appendAdminRow(audit, who.caller, path, args, failure, device).catch((auditErr) =>
        log.error({ rpc: path, err: errorText(auditErr) }, "could not write the audit row of a failed administrative action"),
      );
      throw err;
    }
  };
}
