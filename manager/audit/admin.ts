/**
 * Audit rows of administrative actions (G6): users, roles, reach, tokens, edge enrolment, labels
 * and revocation, credentials, pack and playbook reloads, over RPC or from the CLI on the host.
 * The row holds what was asked (never a credential's value or a token) and whether it worked.
 */
import { redact } from "../../skill/redact.ts";
import { auditRecord, type AuditLog } from "./types.ts";

/** Fields never written to an admin row: credential values and tokens. */
const SECRET_FIELDS = new Set(["value", "token"]);

/** Who did it. */
export interface AdminActor {
  userId: string;
  role: string;
}

/** Appends the row of one administrative action; `error` is "" when it worked. */
export async function appendAdminRow(audit: AuditLog, actor: AdminActor, action: string, args: Record<string, unknown>, error = "", deviceId = ""): Promise<number> {
  const kept = Object.fromEntries(Object.entries(args).filter(([k, v]) => !SECRET_FIELDS.has(k) && v !== undefined));
  const r = await audit.append(
    auditRecord({
      toolName: action,
      args: redact(kept),
      error,
      deviceId,
      callerUserId: actor.userId,
      callerRole: actor.role,
      decision: error ? "deny" : "allow",
      decisionReason: error ? `admin_failed: ${error}` : `admin: ${action}`,
    }),
  );
  return r.seq;
}

/** The actor of an administrative action made from the CLI on the manager's host (no token: the database itself). */
export function localActor(): AdminActor {
  return { userId: `local:${process.env.SUDO_USER || process.env.USER || "root"}`, role: "admin" };
}
