/**
 * The one interceptor that authenticates every RPC (bearer API token) and authorises it by role
 * (manager/identity/rules.ts) before any service code runs. Refusals are audited.
 */
import type { Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";
import { OngridError } from "../../skill/errors.ts";
import { errorText } from "../db/error-text.ts";
import { auditRecord, type AuditLog } from "../audit/types.ts";
import type { IdentityStore } from "../identity/store.ts";
import { roleAtLeast } from "../identity/store.ts";
import { RPC_RULES } from "../identity/rules.ts";
import { kCaller } from "./caller.ts";

/** The bearer token of an authorization header value, or undefined. */
export function bearerToken(header: string | null): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1] : "\u0000malformed";
}

/** What an audit row names for a refused RPC: the skill key for executions, else the method. */
function describe(path: string, message: unknown): { toolName: string; args: Record<string, unknown>; deviceId: string } {
  const m = (message ?? {}) as { key?: unknown; edgeId?: unknown; id?: unknown };
  if (path.endsWith("/ExecuteSkill") || path.endsWith("/FanOutSkill")) {
    return { toolName: typeof m.key === "string" ? m.key : path, args: { rpc: path }, deviceId: typeof m.edgeId === "string" ? m.edgeId : "" };
  }
  return { toolName: path, args: { rpc: path, ...(typeof m.id === "string" && m.id ? { id: m.id } : {}) }, deviceId: "" };
}

/** Builds the interceptor. */
export function authInterceptor(deps: { identity: IdentityStore; audit: AuditLog; log: Logger }): Interceptor {
  const { identity, audit, log } = deps;
  return (next) => async (req) => {
    const path = `${req.method.parent.typeName}/${req.method.name}`;
    const refuse = async (err: OngridError, who: { userId: string; role: string }): Promise<never> => {
      await audit.append(
        auditRecord({
          ...describe(path, (req as { message?: unknown }).message),
          error: `${err.code}: ${err.message}`,
          callerUserId: who.userId,
          callerRole: who.role,
          decision: "deny",
          decisionReason: `${err.code}: ${err.message}`,
        }),
      );
      throw err;
    };
    const raw = bearerToken(req.header.get("authorization"));
    let who;
    try {
      who = await identity.authenticate(raw === "\u0000malformed" ? "malformed" : raw);
    } catch (err) {
      if (!(err instanceof OngridError)) {
        // The token could not be checked (the database did not answer): not the caller's fault,
        // and not auditable either — the audit log is in the same database.
        log.error({ rpc: path, err: errorText(err) }, "RPC refused: the API token could not be checked");
        throw new OngridError("unavailable", "cannot check the API token: the database did not answer", "retry shortly; if it persists, check that the manager's database is reachable");
      }
      log.info({ rpc: path, reason: err.message }, "RPC refused: not authenticated");
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
    return next(req);
  };
}
