/**
 * Approval requests in the database (G2, G3). Every state change is one conditional UPDATE, so a
 * request runs at most once however many approvers (or managers) race on it.
 */
import { EventEmitter } from "node:events";
import { createHash, randomBytes } from "node:crypto";
import { and, desc, eq, gt, lte, ne, sql } from "drizzle-orm";
import { OngridError } from "../../../skill/errors.ts";
import { canonicalJson } from "../../../skill/canonical.ts";
import type { Database } from "../../db/client.ts";
import { approvals, type ApprovalRow, type VoteJson } from "../../db/schema/index.ts";
import type { Caller } from "../../identity/caller.ts";

/** Where a request is in its life. */
export type ApprovalState = "pending" | "running" | "executed" | "denied" | "expired" | "failed";
/** States a request never leaves. */
export const FINAL_STATES: ReadonlySet<string> = new Set(["executed", "denied", "expired", "failed"]);

/** What a parked call records. */
export interface NewApproval {
  skillKey: string;
  edgeId: string;
  edgeLabels: Record<string, string>;
  params: Record<string, unknown>;
  effectiveClass: string;
  requester: Caller;
  sessionId: string;
  /** The client program that requested the call, carried to the execution's audit row. */
  client?: string;
  timeoutMs: number;
  requiredApprovals: number;
  ttlMs: number;
  sop?: { id: string; version: string; hash: string; document: string };
}

/** SHA-256 of the canonical params: fixed when the request is made. */
export function paramsHash(params: unknown): string {
  return createHash("sha256").update(canonicalJson(params)).digest("hex");
}

/** Channel on which managers sharing the database announce approval changes (payload: `<manager id> <request id>`). */
export const APPROVALS_CHANNEL = "ongrid_approvals";

/**
 * Creates the store; `changes` emits every row after a state change ("change", row), made by
 * this manager or, once `listen()` runs, by any other manager sharing the database (M2).
 * `managerId` is this manager's: the owner of the approved calls it runs.
 */
export function createApprovalStore(database: Database, opts: { managerId?: string; onAnnounceError?: (err: Error) => void } = {}) {
  const { db } = database;
  const self = opts.managerId ?? "";
  const changes = new EventEmitter();
  changes.setMaxListeners(0);
  const shared = database.kind === "postgres" && Boolean(self);
  const emit = (rows: ApprovalRow[]) => {
    for (const r of rows) {
      changes.emit("change", r);
      if (shared) database.notify(APPROVALS_CHANNEL, `${self} ${r.id}`).catch((err: Error) => opts.onAnnounceError?.(err));
    }
    return rows;
  };

  async function get(id: string): Promise<ApprovalRow | undefined> {
    return (await db.select().from(approvals).where(eq(approvals.id, id)))[0];
  }

  return {
    changes,
    get,

    /** Relays the other managers' changes to `changes` (each row read once as it is now); the returned function stops it. */
    async listen(): Promise<() => Promise<void>> {
      if (!shared) return async () => {};
      return database.listen(APPROVALS_CHANNEL, (payload) => {
        const [from, id] = payload.split(" ");
        if (from === self || !id) return;
        get(id).then(
          (row) => row && changes.emit("change", row),
          (err: Error) => opts.onAnnounceError?.(err),
        );
      });
    },

    async create(n: NewApproval): Promise<ApprovalRow> {
      const now = new Date();
      const row = (
        await db
          .insert(approvals)
          .values({
            id: `apr_${randomBytes(8).toString("hex")}`,
            skillKey: n.skillKey,
            edgeId: n.edgeId,
            edgeLabels: n.edgeLabels,
            params: n.params,
            paramsHash: paramsHash(n.params),
            effectiveClass: n.effectiveClass,
            requesterUserId: n.requester.userId,
            requesterRole: n.requester.role,
            onBehalfOf: n.requester.onBehalfOf ?? "",
            requesterReach: n.requester.reach ?? [],
            sessionId: n.sessionId,
            client: n.client ?? "",
            timeoutMs: n.timeoutMs,
            createdAt: now,
            expiresAt: new Date(now.getTime() + n.ttlMs),
            state: "pending",
            requiredApprovals: n.requiredApprovals,
            sopId: n.sop?.id ?? "",
            sopVersion: n.sop?.version ?? "",
            sopHash: n.sop?.hash ?? "",
            sopDocument: n.sop?.document ?? "",
            updatedAt: now,
          })
          .returning()
      )[0];
      emit([row]);
      return row;
    },

    async setRequestSeq(id: string, seq: number): Promise<void> {
      emit(await db.update(approvals).set({ requestAuditSeq: seq }).where(eq(approvals.id, id)).returning());
    },

    /** Newest first. */
    async list(filter: { state?: string; limit?: number } = {}): Promise<ApprovalRow[]> {
      return db
        .select()
        .from(approvals)
        .where(filter.state ? eq(approvals.state, filter.state) : undefined)
        .orderBy(desc(approvals.createdAt))
        .limit(Math.min(Math.max(filter.limit ?? 100, 1), 1000));
    },

    /**
     * Records one approval. Resolves with the row and whether it completed the quorum (state
     * running: the caller must now run the call). Refusals name their reason; nothing changes.
     */
    async vote(id: string, userId: string, comment: string, now = new Date()): Promise<{ row: ApprovalRow; quorum: boolean }> {
      const vote: VoteJson = { userId, at: now.toISOString(), comment: comment.slice(0, 500) };
      const rows = await db
        .update(approvals)
        .set({
          votes: sql`${approvals.votes} || ${JSON.stringify([vote])}::jsonb`,
          state: sql`case when jsonb_array_length(${approvals.votes}) + 1 >= ${approvals.requiredApprovals} then 'running' else 'pending' end`,
          // The manager completing the quorum runs the call and owns it while it runs.
          runningManager: self,
          updatedAt: now,
        })
        .where(
          and(
            eq(approvals.id, id),
            eq(approvals.state, "pending"),
            gt(approvals.expiresAt, now),
            // Not before its request row is in the audit log (a request whose row could not be written never runs).
            gt(approvals.requestAuditSeq, 0),
            ne(approvals.requesterUserId, userId),
            ne(approvals.onBehalfOf, userId),
            sql`not (${approvals.votes} @> ${JSON.stringify([{ userId }])}::jsonb)`,
          ),
        )
        .returning();
      if (rows.length) {
        emit(rows);
        return { row: rows[0], quorum: rows[0].state === "running" };
      }
      const row = await get(id);
      if (!row) throw new OngridError("not_found", `unknown approval request "${id}"`);
      if (row.requesterUserId === userId) throw new OngridError("permission_denied", `"${userId}" requested ${id} and cannot approve it`, "another approver must approve it");
      if (row.onBehalfOf === userId) throw new OngridError("permission_denied", `"${userId}" started the agent session that requested ${id} and cannot approve it`, "another approver must approve it");
      const mine = row.votes.find((v) => v.userId === userId);
      if (mine) {
        throw new OngridError("failed_precondition", `"${userId}" already approved ${id} at ${mine.at}; an approval counts once`, row.state === "pending" ? `it needs ${row.requiredApprovals} distinct approvers` : undefined);
      }
      if (row.state !== "pending") throw new OngridError("failed_precondition", `approval request ${id} is already ${row.state}`, "only pending requests can be approved");
      if (row.requestAuditSeq <= 0 && row.expiresAt > now) {
        throw new OngridError("failed_precondition", `approval request ${id} is not recorded in the audit log yet`, "retry in a moment; a request that cannot be recorded is withdrawn");
      }
      throw new OngridError("failed_precondition", `approval request ${id} expired at ${row.expiresAt.toISOString()}`, "ask the requester to request it again");
    },

    /** Ends a pending request as denied. */
    async deny(id: string, userId: string, reason: string, now = new Date()): Promise<ApprovalRow> {
      const rows = await db
        .update(approvals)
        .set({ state: "denied", deniedBy: userId, reason: reason.slice(0, 500), updatedAt: now })
        .where(and(eq(approvals.id, id), eq(approvals.state, "pending")))
        .returning();
      if (rows.length) return emit(rows)[0];
      const row = await get(id);
      if (!row) throw new OngridError("not_found", `unknown approval request "${id}"`);
      throw new OngridError("failed_precondition", `approval request ${id} is already ${row.state}`, "only pending requests can be denied");
    },

    /** Records how an approved call ended (from running). */
    async finish(id: string, end: { state: "executed" | "failed"; result?: unknown; executionAuditSeq?: number; reason?: string }): Promise<ApprovalRow | undefined> {
      const rows = await db
        .update(approvals)
        .set({ state: end.state, result: end.result ?? null, executionAuditSeq: end.executionAuditSeq ?? 0, reason: (end.reason ?? "").slice(0, 1000), updatedAt: new Date() })
        .where(and(eq(approvals.id, id), eq(approvals.state, "running")))
        .returning();
      return emit(rows)[0];
    },

    /** Moves every pending request past its expiry to expired; returns them. */
    async expireDue(now = new Date()): Promise<ApprovalRow[]> {
      return emit(
        await db
          .update(approvals)
          .set({ state: "expired", reason: "nobody decided before it expired", updatedAt: now })
          .where(and(eq(approvals.state, "pending"), lte(approvals.expiresAt, now)))
          .returning(),
      );
    },

    /**
     * Calls whose running manager is gone cannot be resumed; they fail. A call belongs to the
     * manager running it: this manager fails its own (`includeOwn`, at its start: a previous run
     * under the same id) and those of managers whose lease is not live, never another live one's.
     */
    async failInterrupted(includeOwn = true): Promise<ApprovalRow[]> {
      const live = sql`(select id from managers where lease_until > now()${includeOwn ? sql` and id <> ${self}` : sql``})`;
      return emit(
        await db
          .update(approvals)
          .set({ state: "failed", reason: "the manager running the approved call stopped while it ran; its outcome is unknown", updatedAt: new Date() })
          .where(and(eq(approvals.state, "running"), includeOwn ? sql`${approvals.runningManager} not in ${live}` : and(ne(approvals.runningManager, self), sql`${approvals.runningManager} not in ${live}`)))
          .returning(),
      );
    },

    /** Resolves with the row once it is final (or rejects when the signal aborts). */
    waitFinal(id: string, signal?: AbortSignal): Promise<ApprovalRow> {
      return new Promise((resolve, reject) => {
        const onChange = (r: ApprovalRow) => {
          if (r.id === id && FINAL_STATES.has(r.state)) done(() => resolve(r));
        };
        const onAbort = () => done(() => reject(new OngridError("cancelled", `stopped waiting for approval request ${id}; it stays open and GetApproval shows its outcome`)));
        const done = (f: () => void) => {
          changes.off("change", onChange);
          signal?.removeEventListener("abort", onAbort);
          f();
        };
        changes.on("change", onChange);
        signal?.addEventListener("abort", onAbort, { once: true });
        if (signal?.aborted) return onAbort();
        get(id).then((r) => {
          if (r && FINAL_STATES.has(r.state)) done(() => resolve(r));
        }, (err) => done(() => reject(err)));
      });
    },
  };
}

/** The approval store's interface. */
export type ApprovalStore = ReturnType<typeof createApprovalStore>;
