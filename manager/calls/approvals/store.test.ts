import { createHash } from "node:crypto";
import { expect, test } from "vitest";
import { canonicalJson } from "../../../skill/canonical.ts";
import { OngridError } from "../../../skill/errors.ts";
import { describeBothBackends } from "../../../test/support/pg.ts";
import { managers, type ApprovalRow } from "../../db/schema/index.ts";
import { createApprovalStore, FINAL_STATES, paramsHash, type NewApproval } from "./store.ts";
import { rejection } from "../../../test/support/rejection.ts";

function request(over: Partial<NewApproval> = {}): NewApproval {
  return {
    skillKey: "service_restart",
    edgeId: "edge-a",
    edgeLabels: { env: "prod", team: "payments" },
    params: { unit: "nginx.service", opts: { now: true, delay: 0 } },
    effectiveClass: "mutating",
    requester: { userId: "olivia", role: "operator", reach: ["team=payments"], tokenId: "0123456789ab" },
    sessionId: "sess-1",
    timeoutMs: 30_000,
    requiredApprovals: 1,
    ttlMs: 600_000,
    ...over,
  };
}


const APPROVERS = Array.from({ length: 10 }, (_, i) => `approver-${i}`);

/** A request as the dispatcher leaves it: created, then its audit row's seq recorded (votes need it). */
async function recorded(store: ReturnType<typeof createApprovalStore>, n: NewApproval, seq = 1): Promise<ApprovalRow> {
  const row = await store.create(n);
  await store.setRequestSeq(row.id, seq);
  return { ...row, requestAuditSeq: seq };
}

describeBothBackends("approval store", (backend) => {
  test("create stores a pending request with the hash of the canonical params", async () => {
    const store = createApprovalStore(await backend.open());
    const seen: ApprovalRow[] = [];
    store.changes.on("change", (r: ApprovalRow) => seen.push(r));
    const n = request({ sop: { id: "restart-web", version: "3", hash: "ab".repeat(32), document: "---\nid: restart-web\n---\n" }, requiredApprovals: 2 });
    const row = await store.create(n);
    expect(row.id).toMatch(/^apr_[0-9a-f]{16}$/);
    expect(row).toMatchObject({
      state: "pending",
      skillKey: "service_restart",
      edgeId: "edge-a",
      edgeLabels: { env: "prod", team: "payments" },
      params: n.params,
      effectiveClass: "mutating",
      requesterUserId: "olivia",
      requesterRole: "operator",
      requesterReach: ["team=payments"],
      sessionId: "sess-1",
      timeoutMs: 30_000,
      requiredApprovals: 2,
      votes: [],
      deniedBy: "",
      sopId: "restart-web",
      sopVersion: "3",
      sopHash: "ab".repeat(32),
    });
    expect(row.expiresAt.getTime() - row.createdAt.getTime()).toBe(600_000);
    const want = createHash("sha256").update(canonicalJson(n.params)).digest("hex");
    expect(row.paramsHash).toBe(want);
    expect(paramsHash(n.params)).toBe(want);
    // Key order does not change the hash; values do.
    expect(paramsHash({ opts: { delay: 0, now: true }, unit: "nginx.service" })).toBe(want);
    expect(paramsHash({ unit: "nginx.service", opts: { now: false, delay: 0 } })).not.toBe(want);
    expect(await store.get(row.id)).toEqual(row);
    expect(await store.get("apr_missing")).toBeUndefined();
    expect(seen.map((r) => r.id)).toEqual([row.id]);
    expect((await store.list()).map((r) => r.id)).toEqual([row.id]);
    expect(await store.list({ state: "running" })).toEqual([]);
  });

  test("vote: the requester is refused, one of two keeps it pending, a repeat is refused, the second distinct approver runs it", async () => {
    const store = createApprovalStore(await backend.open());
    const row = await recorded(store, request({ requiredApprovals: 2 }));

    const self = await rejection(store.vote(row.id, "olivia", "me"));
    expect(self.code).toBe("permission_denied");
    expect(self.message).toMatch(/"olivia" requested apr_\w+ and cannot approve it/);

    const first = await store.vote(row.id, "alice", "looks fine");
    expect(first.quorum).toBe(false);
    expect(first.row.state).toBe("pending");
    expect(first.row.votes).toEqual([{ userId: "alice", at: expect.any(String), comment: "looks fine" }]);

    const again = await rejection(store.vote(row.id, "alice", "again"));
    expect(again.code).toBe("failed_precondition");
    expect(again.message).toMatch(/"alice" already approved apr_\w+ at .*; an approval counts once/);
    expect((await store.get(row.id))!.votes).toHaveLength(1);

    const second = await store.vote(row.id, "bob", "");
    expect(second.quorum).toBe(true);
    expect(second.row.state).toBe("running");
    expect(second.row.votes.map((v) => v.userId)).toEqual(["alice", "bob"]);

    const late = await rejection(store.vote(row.id, "carol", ""));
    expect(late.code).toBe("failed_precondition");
    expect(late.message).toMatch(/is already running/);
    expect((await rejection(store.vote("apr_missing", "alice", ""))).code).toBe("not_found");
    expect((await store.get(row.id))!.votes).toHaveLength(2);
  });

  test("a request whose audit row is not recorded cannot be approved; once it is, it can", async () => {
    const store = createApprovalStore(await backend.open());
    const row = await store.create(request());
    const refused = await store.vote(row.id, "approver-0", "").catch((e: OngridError) => e);
    expect(refused).toBeInstanceOf(OngridError);
    expect((refused as OngridError).code).toBe("failed_precondition");
    expect((refused as OngridError).message).toBe(`approval request ${row.id} is not recorded in the audit log yet`);
    expect((await store.get(row.id))?.votes).toEqual([]);
    await store.setRequestSeq(row.id, 7);
    expect((await store.vote(row.id, "approver-0", "")).quorum).toBe(true);
  });

  test("a vote after expiry is refused as expired", async () => {
    const store = createApprovalStore(await backend.open());
    const row = await recorded(store, request({ ttlMs: 60_000 }));
    const e = await rejection(store.vote(row.id, "alice", "", new Date(row.expiresAt.getTime())));
    expect(e.code).toBe("failed_precondition");
    expect(e.message).toBe(`approval request ${row.id} expired at ${row.expiresAt.toISOString()}`);
    expect(await store.get(row.id)).toMatchObject({ state: "pending", votes: [] });
    // Just before expiry it still counts.
    expect((await store.vote(row.id, "alice", "", new Date(row.expiresAt.getTime() - 1))).quorum).toBe(true);
  });

  test("deny ends a pending request; votes and denials after it are refused", async () => {
    const store = createApprovalStore(await backend.open());
    const row = await recorded(store, request({ requiredApprovals: 2 }));
    await store.vote(row.id, "alice", "");
    const denied = await store.deny(row.id, "bob", "not during business hours");
    expect(denied).toMatchObject({ state: "denied", deniedBy: "bob", reason: "not during business hours" });
    const v = await rejection(store.vote(row.id, "carol", ""));
    expect(v.code).toBe("failed_precondition");
    expect(v.message).toMatch(/already denied/);
    const d = await rejection(store.deny(row.id, "carol", ""));
    expect(d.code).toBe("failed_precondition");
    expect(d.message).toMatch(/already denied/);
    expect((await rejection(store.deny("apr_missing", "bob", ""))).code).toBe("not_found");

    // A running request cannot be denied either.
    const running = await recorded(store, request());
    await store.vote(running.id, "alice", "");
    expect((await rejection(store.deny(running.id, "bob", ""))).message).toMatch(/already running/);
  });

  test("finish only moves a running request", async () => {
    const store = createApprovalStore(await backend.open());
    const row = await recorded(store, request());
    expect(await store.finish(row.id, { state: "executed", result: { ok: 1 } })).toBeUndefined();
    expect((await store.get(row.id))!.state).toBe("pending");
    await store.vote(row.id, "alice", "");
    const done = await store.finish(row.id, { state: "executed", result: { success: true, output: "restarted" }, executionAuditSeq: 42 });
    expect(done).toMatchObject({ state: "executed", result: { success: true, output: "restarted" }, executionAuditSeq: 42 });
    expect(await store.finish(row.id, { state: "failed", reason: "again" })).toBeUndefined();
    expect((await store.get(row.id))!.state).toBe("executed");

    const failing = await recorded(store, request());
    await store.vote(failing.id, "alice", "");
    expect(await store.finish(failing.id, { state: "failed", reason: "edge went away" })).toMatchObject({ state: "failed", reason: "edge went away", result: null });

    const denied = await recorded(store, request());
    await store.deny(denied.id, "alice", "");
    expect(await store.finish(denied.id, { state: "executed" })).toBeUndefined();
    expect(await store.finish("apr_missing", { state: "executed" })).toBeUndefined();
  });

  test("expireDue moves only due pending requests", async () => {
    const store = createApprovalStore(await backend.open());
    const due = await recorded(store, request({ ttlMs: 1_000 }));
    const dueToo = await recorded(store, request({ ttlMs: 2_000 }));
    const notYet = await recorded(store, request({ ttlMs: 600_000 }));
    const running = await recorded(store, request({ ttlMs: 1_000 }));
    await store.vote(running.id, "alice", "");
    const denied = await recorded(store, request({ ttlMs: 1_000 }));
    await store.deny(denied.id, "alice", "no");

    const now = new Date(dueToo.expiresAt.getTime()); // expiry == now counts as due
    const expired = await store.expireDue(now);
    expect(expired.map((r) => r.id).sort()).toEqual([due.id, dueToo.id].sort());
    for (const r of expired) expect(r).toMatchObject({ state: "expired", reason: "nobody decided before it expired" });
    expect((await store.get(notYet.id))!.state).toBe("pending");
    expect((await store.get(running.id))!.state).toBe("running");
    expect((await store.get(denied.id))!.state).toBe("denied");
    expect(await store.expireDue(now)).toEqual([]);
    expect((await store.list({ state: "expired" })).map((r) => r.id).sort()).toEqual([due.id, dueToo.id].sort());
  });

  test("failInterrupted fails running requests only", async () => {
    const store = createApprovalStore(await backend.open());
    const a = await recorded(store, request());
    const b = await recorded(store, request());
    const pending = await recorded(store, request());
    await store.vote(a.id, "alice", "");
    await store.vote(b.id, "alice", "");
    const failed = await store.failInterrupted();
    expect(failed.map((r) => r.id).sort()).toEqual([a.id, b.id].sort());
    for (const r of failed) {
      expect(r.state).toBe("failed");
      expect(r.reason).toMatch(/the manager running the approved call stopped while it ran/);
    }
    expect((await store.get(pending.id))!.state).toBe("pending");
    expect(await store.failInterrupted()).toEqual([]);
  });

  test("a running call belongs to its manager: another live manager never fails it; the lapse of its lease does (M2)", async () => {
    const database = await backend.open();
    const a = createApprovalStore(database, { managerId: "mgr-a" });
    const b = createApprovalStore(database, { managerId: "mgr-b" });
    const lease = async (id: string, untilMs: number) => {
      const at = new Date();
      await database.db
        .insert(managers)
        .values({ id, startedAt: at, renewedAt: at, leaseUntil: new Date(at.getTime() + untilMs) })
        .onConflictDoUpdate({ target: managers.id, set: { leaseUntil: new Date(at.getTime() + untilMs) } });
    };
    await lease("mgr-a", 60_000);
    await lease("mgr-b", 60_000);
    const onA = await recorded(a, request());
    const voted = await a.vote(onA.id, "alice", "");
    expect(voted).toMatchObject({ quorum: true, row: { state: "running", runningManager: "mgr-a" } });
    // b starting (its own and dead managers' calls) and b's periodic sweep leave a's call running.
    expect(await b.failInterrupted(true)).toEqual([]);
    expect(await b.failInterrupted(false)).toEqual([]);
    expect((await b.get(onA.id))!.state).toBe("running");
    // Once a's lease lapses, b's sweep fails it.
    await lease("mgr-a", -1_000);
    const failed = await b.failInterrupted(false);
    expect(failed.map((r) => r.id)).toEqual([onA.id]);
    // A manager restarting under its own id fails what its previous run left running.
    await lease("mgr-a", 60_000);
    const again = await recorded(a, request());
    await a.vote(again.id, "alice", "");
    expect(await b.failInterrupted(false)).toEqual([]);
    expect((await a.failInterrupted(true)).map((r) => r.id)).toEqual([again.id]);
  });

  test("waitFinal resolves on a later finish, at once for a final row, and rejects on abort", async () => {
    const store = createApprovalStore(await backend.open());
    const row = await recorded(store, request());
    const waiting = store.waitFinal(row.id);
    let settled = false;
    void waiting.then(() => (settled = true), () => (settled = true));
    await store.vote(row.id, "alice", "");
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false); // running is not final
    await store.finish(row.id, { state: "executed", result: { success: true } });
    const final = await waiting;
    expect(final).toMatchObject({ id: row.id, state: "executed" });
    expect(FINAL_STATES.has(final.state)).toBe(true);
    expect(store.changes.listenerCount("change")).toBe(0);

    // Already final: resolves from the database.
    expect(await store.waitFinal(row.id)).toMatchObject({ state: "executed" });

    const open = await recorded(store, request());
    const ac = new AbortController();
    const aborted = store.waitFinal(open.id, ac.signal);
    setTimeout(() => ac.abort(), 10);
    const e = await rejection(aborted);
    expect(e.code).toBe("cancelled");
    expect(e.message).toMatch(new RegExp(`stopped waiting for approval request ${open.id}`));
    expect(store.changes.listenerCount("change")).toBe(0);

    // An already aborted signal rejects at once.
    const pre = new AbortController();
    pre.abort();
    expect((await rejection(store.waitFinal(open.id, pre.signal))).code).toBe("cancelled");
    expect((await store.get(open.id))!.state).toBe("pending"); // waiting never changes the request

    // Denial is final too.
    const w = store.waitFinal(open.id);
    await store.deny(open.id, "alice", "");
    expect(await w).toMatchObject({ state: "denied" });
  });

  /** Stores over one database: separate connections (as separate managers would have) on PostgreSQL. */
  async function racers(n: number) {
    const s = await backend.fresh();
    const first = await s.open();
    const dbs = [first];
    if (backend.kind === "postgres") for (let i = 1; i < n; i++) dbs.push(await s.open({ poolSize: 2 }));
    return Array.from({ length: n }, (_, i) => createApprovalStore(dbs[i % dbs.length]!));
  }

  test("RACE: 10 approvers voting at once on a 1-approval request: exactly one vote counts and it completes the quorum", async () => {
    const stores = await racers(backend.kind === "postgres" ? 3 : 1);
    for (let round = 0; round < 5; round++) {
      const row = await recorded(stores[0]!, request({ requiredApprovals: 1 }));
      const results = await Promise.allSettled(APPROVERS.map((u, i) => stores[i % stores.length]!.vote(row.id, u, `vote ${i}`)));
      const ok = results.filter((r): r is PromiseFulfilledResult<{ row: ApprovalRow; quorum: boolean }> => r.status === "fulfilled");
      expect(ok).toHaveLength(1);
      expect(ok[0]!.value.quorum).toBe(true);
      for (const r of results) {
        if (r.status === "rejected") {
          expect(r.reason).toBeInstanceOf(OngridError);
          expect((r.reason as OngridError).message).toMatch(/is already running/);
        }
      }
      const stored = (await stores[0]!.get(row.id))!;
      expect(stored.state).toBe("running");
      expect(stored.votes).toHaveLength(1);
      expect(stored.votes[0]!.userId).toBe(ok[0]!.value.row.votes[0]!.userId);
    }
  });

  test("RACE: 10 distinct approvers voting at once on a 2-approval request: exactly two votes, one quorum", async () => {
    const stores = await racers(backend.kind === "postgres" ? 3 : 1);
    for (let round = 0; round < 5; round++) {
      const row = await recorded(stores[0]!, request({ requiredApprovals: 2, effectiveClass: "dangerous" }));
      const results = await Promise.allSettled(APPROVERS.map((u, i) => stores[i % stores.length]!.vote(row.id, u, "")));
      const ok = results.filter((r): r is PromiseFulfilledResult<{ row: ApprovalRow; quorum: boolean }> => r.status === "fulfilled");
      expect(ok).toHaveLength(2);
      expect(ok.filter((r) => r.value.quorum)).toHaveLength(1);
      expect(ok.filter((r) => !r.value.quorum)).toHaveLength(1);
      const stored = (await stores[0]!.get(row.id))!;
      expect(stored.state).toBe("running");
      expect(stored.votes).toHaveLength(2);
      expect(new Set(stored.votes.map((v) => v.userId)).size).toBe(2);
      expect(stored.votes.map((v) => v.userId).sort()).toEqual(ok.map((r) => r.value.row.votes.at(-1)!.userId).sort());
    }
  });

  test("RACE: one approver voting 10 times at once counts once", async () => {
    const stores = await racers(backend.kind === "postgres" ? 3 : 1);
    const row = await recorded(stores[0]!, request({ requiredApprovals: 2 }));
    const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => stores[i % stores.length]!.vote(row.id, "alice", "")));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    for (const r of results) if (r.status === "rejected") expect((r.reason as OngridError).message).toMatch(/already approved/);
    expect(await stores[0]!.get(row.id)).toMatchObject({ state: "pending", votes: [expect.objectContaining({ userId: "alice" })] });
  });

  test("RACE: concurrent vote and deny: the request ends one way only", async () => {
    const stores = await racers(backend.kind === "postgres" ? 2 : 1);
    for (let round = 0; round < 5; round++) {
      const row = await recorded(stores[0]!, request());
      const [v, d] = await Promise.allSettled([stores[0]!.vote(row.id, "alice", ""), stores[stores.length - 1]!.deny(row.id, "bob", "")]);
      const stored = (await stores[0]!.get(row.id))!;
      expect([v.status, d.status].filter((s) => s === "fulfilled")).toHaveLength(1);
      if (v.status === "fulfilled") expect(stored).toMatchObject({ state: "running", deniedBy: "" });
      else expect(stored).toMatchObject({ state: "denied", votes: [] });
    }
  });
});
