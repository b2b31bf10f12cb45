/**
 * A call's audit row (B3, H1): written on every outcome, by one function, and the one
 * run-and-record path every call ends in — direct, approved and fanned out alike.
 */
import type { Logger } from "pino";
import { OngridError } from "../../skill/errors.ts";
import { redactString } from "../../skill/redact.ts";
import type { ResultEnvelope } from "../../skill/types.ts";
import { PreparedJson } from "../audit/record.ts";
import { auditRecord, type AuditLog } from "../audit/types.ts";
import type { Caller } from "../identity/caller.ts";
import { AuditedError, type CallObservation, type ExecuteInput, type ExecuteOutput } from "./types.ts";

/** Whom a row is about: the skill, where it ran, the session and the caller. */
export interface Who {
  key: string;
  edgeId: string;
  sessionId: string;
  caller: Caller;
  /** The client program that made the call (an MCP client's "name/version"); absent when unknown. */
  client?: string;
}

/** Whom a request's row is about; `edgeId` for one edge of a fan-out's (the input names none). */
export function whoOf(input: Pick<ExecuteInput, "key" | "edgeId" | "sessionId" | "caller" | "client">, edgeId = input.edgeId ?? ""): Who {
  return { key: input.key, edgeId, sessionId: input.sessionId ?? "", caller: input.caller, ...(input.client ? { client: input.client } : {}) };
}

/** What is known of a call while it is being decided, for its audit row. */
export interface Trail {
  args: unknown;
  decision: string;
  decisionReason: string;
  approvalId: string;
  sopHash: string;
  approvedBy: string;
}

/** A trail that knows only the call's arguments. */
export function newTrail(args: unknown): Trail {
  return { args, decision: "", decisionReason: "", approvalId: "", sopHash: "", approvedBy: "" };
}

/** What a call's work ended in: an envelope (from an edge's hub, already redacted, or run here), or a request parked for approval (which wrote its own row). */
export type Settled = { result: ResultEnvelope; fromEdge: boolean } | { parked: ExecuteOutput };

/**
 * What a call ended in, for its row: the envelope (null when it gave none) and the row's error.
 * `fromEdge`: the envelope was redacted by the hub. `stored`: the result as the log stores it,
 * made already (a forwarded call's, checked and made canonical by readEncodedResult).
 */
export interface Outcome {
  result: ResultEnvelope | null;
  error: string;
  fromEdge?: boolean;
  stored?: PreparedJson;
}

/** What the recorder needs. */
export interface RecorderDeps {
  audit: AuditLog;
  log: Logger;
  /** Told of every call as its audit row is written (the manager's /metrics counts them); must not throw. */
  onCall?: (call: CallObservation) => void;
}

/** Creates the recorder: record writes one row, settle runs a call's work and records whatever it ends in. */
export function createRecorder({ audit, log, onCall }: RecorderDeps) {
  /** An error as the OngridError a caller is shown; anything else is logged (redacted) and shown as internal. */
  function asOngrid(err: unknown): OngridError {
    if (err instanceof OngridError) return err;
    log.error({ err: { message: redactString(String((err as Error)?.message ?? err)), stack: redactString(String((err as Error)?.stack ?? "")) } }, "unexpected error while dispatching a call");
    return new OngridError("internal", "internal error while dispatching the call; see the manager log");
  }

  /** Tells the observer of a call as its row is written; an observer that throws is logged, never the call's failure. */
  function observe(who: Who, trail: Trail, startedAt: Date, outcome: Outcome, now = Date.now()): void {
    try {
      onCall?.({ key: who.key, edgeId: who.edgeId, decision: trail.decision, error: outcome.error, result: outcome.result, durationMs: now - startedAt.getTime() });
    } catch (err) {
      log.warn({ err: (err as Error)?.message }, "a call observer failed");
    }
  }

  /** Writes the row of a call and returns its seq. */
  async function record(who: Who, trail: Trail, startedAt: Date, outcome: Outcome): Promise<number> {
    observe(who, trail, startedAt, outcome);
    const row = await audit.append(rowOf(who, trail, startedAt, outcome));
    return row.seq;
  }

  /** The audit record of a call. */
  function rowOf(who: Who, trail: Trail, startedAt: Date, outcome: Outcome) {
    return auditRecord({
      sessionId: who.sessionId,
      toolName: who.key,
      args: trail.args,
      // An edge's envelope was redacted by the hub: the log checks it but does not redact it again.
      result: outcome.stored ?? (outcome.fromEdge && outcome.result ? PreparedJson.ofRedacted(outcome.result) : outcome.result),
      error: outcome.error,
      deviceId: who.edgeId,
      startedAt,
      callerUserId: who.caller.userId,
      callerRole: who.caller.role,
      decision: trail.decision,
      decisionReason: trail.decisionReason,
      approvalId: trail.approvalId,
      sopHash: trail.sopHash,
      approvedBy: trail.approvedBy,
      onBehalfOf: who.caller.onBehalfOf ?? "",
      client: who.client ?? "",
    });
  }

  /**
   * Writes the rows of several calls at once (a forwarded share's outcomes that arrived together)
   * and resolves with each one's seq, or the error its row failed with, in order.
   */
  async function recordMany(calls: ReadonlyArray<{ who: Who; trail: Trail; startedAt: Date; outcome: Outcome }>): Promise<Array<number | OngridError>> {
    const now = Date.now();
    const records = calls.map(({ who, trail, startedAt, outcome }) => {
      observe(who, trail, startedAt, outcome, now);
      return rowOf(who, trail, startedAt, outcome);
    });
    const rows = await audit.appendMany(records);
    return rows.map((r) => (r instanceof Error ? asOngrid(r) : r.seq));
  }

  /**
   * The one run-and-record path: runs a call's work and writes its row, whatever it ends in. A
   * refusal or failure is recorded and thrown as AuditedError carrying the row (`onError` may
   * amend the trail first); an envelope is recorded with the result; a parked request already has
   * its row.
   */
  async function settle(who: Who, trail: Trail, startedAt: Date, work: () => Promise<Settled>, onError?: (e: OngridError, trail: Trail) => void): Promise<ExecuteOutput> {
    let done: Settled;
    try {
      done = await work();
    } catch (err) {
      const e = asOngrid(err);
      onError?.(e, trail);
      const seq = await record(who, trail, startedAt, { result: null, error: `${e.code}: ${e.message}` });
      throw new AuditedError(e, seq);
    }
    if ("parked" in done) return done.parked;
    const { result, fromEdge } = done;
    const seq = await record(who, trail, startedAt, { result, error: result.success ? "" : `${result.error?.code}: ${result.error?.message}`, fromEdge });
    return { result, auditSeq: seq };
  }

  return { asOngrid, record, recordMany, settle };
}

/** The recorder's interface. */
export type Recorder = ReturnType<typeof createRecorder>;
