/**
 * Refusals nobody authenticated for are counted, not written one row each (B1): a flood of
 * anonymous or undecodable requests must not fill the audit chain (6 connections of abandoned
 * streams wrote 160,000 rows). Per key (what was refused, and from where), the first `burst`
 * refusals of a window write their rows; the ones after them in the window are counted, and the
 * next row written for the key says how many were left out since the last one.
 */
import type { OngridError } from "../../skill/errors.ts";
import { auditRecord, type AuditLog } from "./types.ts";

/** The throttle's answer for one refusal. */
export interface ThrottleVerdict {
  write: boolean;
  /** Refusals of this key left out since its last row (shown in the next row). */
  suppressed: number;
}

/** Creates a throttle of `burst` rows per key and window; at most `maxKeys` keys are tracked (the oldest is dropped). */
export function createRefusalThrottle(opts: { windowMs?: number; burst?: number; maxKeys?: number; now?: () => number } = {}) {
  const { windowMs = 10_000, burst = 20, maxKeys = 10_000, now = Date.now } = opts;
  const keys = new Map<string, { since: number; written: number; suppressed: number }>();
  let total = 0;
  return {
    admit(key: string): ThrottleVerdict {
      const t = now();
      let k = keys.get(key);
      if (!k || t - k.since >= windowMs) {
        const carried = k?.suppressed ?? 0;
        keys.delete(key);
        k = { since: t, written: 0, suppressed: carried };
        keys.set(key, k);
        if (keys.size > maxKeys) keys.delete(keys.keys().next().value as string);
      }
      if (k.written >= burst) {
        k.suppressed++;
        total++;
        return { write: false, suppressed: k.suppressed };
      }
      k.written++;
      const suppressed = k.suppressed;
      k.suppressed = 0;
      return { write: true, suppressed };
    },
    /** Refusals left out since start, for the metrics page. */
    suppressedTotal(): number {
      return total;
    },
  };
}

/** What a refusal's audit row names: the tool (an RPC's method or skill, a plain-HTTP route), its args and edge. */
export interface RefusedRequest {
  toolName: string;
  args: Record<string, unknown>;
  deviceId?: string;
}

/**
 * The one writer of refusal rows (decision deny), shared by the RPC interceptor and the plain-HTTP
 * guard: a refusal of an authenticated caller always writes its row; a refusal of nobody (no or a
 * bad token) goes through a throttle keyed by `key` (the caller passes what was refused and from
 * where), so a flood of them writes `burst` rows per window and counts the rest into the next row
 * (args.suppressed_since_last_row). Resolves true when a row was written, false when it was counted.
 */
export function createRefusalAudit(audit: AuditLog, opts: Parameters<typeof createRefusalThrottle>[0] = {}) {
  const anonymous = createRefusalThrottle(opts);
  return async function refused(what: RefusedRequest, err: OngridError, who: { userId: string; role: string }, key: string): Promise<boolean> {
    const verdict = who.userId ? { write: true, suppressed: 0 } : anonymous.admit(key);
    if (!verdict.write) return false;
    await audit.append(
      auditRecord({
        toolName: what.toolName,
        args: verdict.suppressed ? { ...what.args, suppressed_since_last_row: verdict.suppressed } : what.args,
        deviceId: what.deviceId ?? "",
        error: `${err.code}: ${err.message}`,
        callerUserId: who.userId,
        callerRole: who.role,
        decision: "deny",
        decisionReason: `${err.code}: ${err.message}`,
      }),
    );
    return true;
  };
}

/** A refusal writer (createRefusalAudit). */
export type RefusalAudit = ReturnType<typeof createRefusalAudit>;
