/**
 * The edge store's presence writes and credential reads, on PGlite and the real PostgreSQL:
 * batched writes keep each edge's last state in order, never mark a revoked edge online, and
 * thousands of edges go through in a few statements.
 */
import { sql } from "drizzle-orm";
import { expect, it } from "vitest";
import { describeBothBackends } from "../../test/support/pg.ts";
import { createEdgeStore } from "./edge-store.ts";

const hello = (v: string) => ({ version: v, hostname: `host-${v}`, os: "linux/x64", labels: { team: "a" }, skills: [{ key: "host_load" }], skillsDigest: "d-host-load" });

describeBothBackends("edge store presence", (backend) => {
  it("writes a hello's presence, then the loss, in order, even when both land in one batch", async () => {
    const db = await backend.open();
    const store = createEdgeStore(db, "mgr-1");
    await store.enroll("e1");
    await store.enroll("e2");
    // e1: online then offline in the same tick (one batch); e2: online only.
    const seen = new Date("2026-12-01T10:00:00.000Z");
    await Promise.all([store.markOnline("e1", hello("1.0")), store.markOffline("e1", seen), store.markOnline("e2", hello("2.0"))]);
    const e1 = await store.get("e1");
    const e2 = await store.get("e2");
    // What the hello said of the edge's labels is kept as reported; the manager's labels are untouched.
    expect(e1).toMatchObject({ online: false, lastSeenAt: seen, version: "1.0", hostname: "host-1.0", managerId: "mgr-1", reportedLabels: { team: "a" }, labels: {}, skills: [{ key: "host_load" }] });
    expect(e2).toMatchObject({ online: true, version: "2.0", managerId: "mgr-1" });
    // A later batch: e2 goes away.
    await store.markOffline("e2", seen);
    expect(await store.get("e2")).toMatchObject({ online: false, lastSeenAt: seen, version: "2.0" });
  });

  it("lets only the holder record an edge gone: an edge that moved to another manager stays online there (M2)", async () => {
    const db = await backend.open();
    const a = createEdgeStore(db, "mgr-a");
    const b = createEdgeStore(db, "mgr-b");
    await a.enroll("moved");
    await a.markOnline("moved", hello("1.0"));
    const before = (await a.get("moved"))!.presenceAt!;
    expect(before).toBeInstanceOf(Date);
    // The edge reconnects to b before a notices its loss; a's late loss must not take it offline.
    await b.markOnline("moved", hello("1.1"));
    await a.markOffline("moved", new Date());
    expect(await a.get("moved")).toMatchObject({ online: true, managerId: "mgr-b", version: "1.1", skillsDigest: "d-host-load" });
    await b.markOffline("moved", new Date());
    const after = await a.get("moved");
    expect(after).toMatchObject({ online: false, managerId: "mgr-b" });
    expect(after!.presenceAt!.getTime()).toBeGreaterThanOrEqual(before.getTime());
  });

  it("writes each edge's own skills when a batch holds shared and distinct skill lists", async () => {
    const db = await backend.open();
    const store = createEdgeStore(db, "mgr-1");
    for (const id of ["s1", "s2", "s3", "s4"]) await store.enroll(id);
    const shared = [{ key: "host_load" }, { key: "tail_file", params: { fields: [{ name: "path" }] } }];
    const own = [{ key: "probe_http" }];
    const at = (skills: unknown[]) => ({ version: "1", hostname: "h", os: "linux/x64", labels: {}, skills, skillsDigest: JSON.stringify(skills) });
    await Promise.all([store.markOnline("s1", at(shared)), store.markOnline("s2", at(own)), store.markOnline("s3", at(shared)), store.markOnline("s4", at([]))]);
    expect((await store.get("s1"))?.skills).toEqual(shared);
    expect((await store.get("s2"))?.skills).toEqual(own);
    expect((await store.get("s3"))?.skills).toEqual(shared);
    expect((await store.get("s4"))?.skills).toEqual([]);
  });

  it("lists every edge with its stored skills brief (key, class, scope), read once per inventory digest", async () => {
    const db = await backend.open();
    const store = createEdgeStore(db, "mgr-1");
    const full = [
      { key: "host_load", name: "Host load", class: "SKILL_CLASS_SAFE", scope: "SKILL_SCOPE_HOST", description: "x".repeat(2000) },
      { key: "restart_service", class: "SKILL_CLASS_MUTATING", scope: "SKILL_SCOPE_HOST", params: { fields: [{ name: "unit" }] } },
    ];
    for (const id of ["b1", "b2", "legacy", "never"]) await store.enroll(id);
    await Promise.all(["b1", "b2"].map((id) => store.markOnline(id, { version: "1", hostname: id, os: "linux/x64", labels: {}, skills: full, skillsDigest: "digest-full" })));
    // A row written before digests were recorded keeps its own skills.
    await db.db.execute(sql`update edges set skills = ${JSON.stringify([{ key: "tail_file", class: "SKILL_CLASS_SAFE" }])}::jsonb where id = 'legacy'`);
    const brief = [
      { key: "host_load", class: "SKILL_CLASS_SAFE", scope: "SKILL_SCOPE_HOST" },
      { key: "restart_service", class: "SKILL_CLASS_MUTATING", scope: "SKILL_SCOPE_HOST" },
    ];
    const rows = new Map((await store.list()).map((r) => [r.id, r]));
    expect(rows.get("b1")!.skills).toEqual(brief);
    expect(rows.get("b2")!.skills).toEqual(brief);
    expect(rows.get("legacy")!.skills).toEqual([{ key: "tail_file", class: "SKILL_CLASS_SAFE" }]);
    expect(rows.get("never")!.skills).toEqual([]);
    // The full metadata stays where get() reads it.
    expect((await store.get("b1"))!.skills).toEqual(full);
  });

  it("never marks a revoked edge online, but records its loss", async () => {
    const db = await backend.open();
    const store = createEdgeStore(db, "mgr-1");
    await store.enroll("gone");
    await store.revoke("gone");
    await store.markOnline("gone", hello("1.0"));
    expect(await store.get("gone")).toMatchObject({ online: false, version: "" });
    const seen = new Date("2026-12-01T11:00:00.000Z");
    await store.markOffline("gone", seen);
    expect((await store.get("gone"))?.lastSeenAt).toEqual(seen);
  });

  it("takes 1,200 edges' hellos in one go, and answers 1,200 credential and token lookups of one tick", async () => {
    const db = await backend.open();
    const store = createEdgeStore(db, "mgr-1");
    const ids = Array.from({ length: 1200 }, (_, i) => `bulk-${i}`);
    const tokens = new Map<string, string>();
    for (const id of ids) tokens.set(id, (await store.enroll(id)).token);
    await Promise.all(ids.map((id) => store.markOnline(id, hello(id))));
    const rows = await store.list();
    expect(rows.filter((r) => r.online)).toHaveLength(1200);
    expect(rows.find((r) => r.id === "bulk-777")).toMatchObject({ version: "bulk-777" });
    await store.revoke("bulk-5");
    // All asked in the same tick: batched (more than one chunk of 1,000), each answered for its own key.
    const creds = await Promise.all([...ids, "no-such-edge"].map((id) => store.credential(id)));
    expect(creds.at(-1)).toBeUndefined();
    expect(creds.slice(0, -1).map((c) => c?.id)).toEqual(ids);
    expect(creds[5]?.revokedAt).toBeInstanceOf(Date);
    expect(creds[6]).toEqual({ id: "bulk-6", tokenHash: expect.stringMatching(/^[0-9a-f]{64}$/), revokedAt: null, labels: {} });
    const authed = await Promise.allSettled(ids.map((id) => store.authenticate(tokens.get(id)!)));
    expect(authed.filter((a) => a.status === "fulfilled").map((a) => (a as PromiseFulfilledResult<{ id: string }>).value.id)).toEqual(ids.filter((id) => id !== "bulk-5"));
    expect((authed[5] as PromiseRejectedResult).reason.message).toBe("edge token is unknown or revoked");
    await expect(store.authenticate("ogt_not-a-token")).rejects.toThrow("edge token is unknown or revoked");
    // A windowed lookup (the hub's periodic re-checks) is answered too.
    expect(await store.credential("bulk-7", 50)).toMatchObject({ id: "bulk-7", revokedAt: null });
  });
});
