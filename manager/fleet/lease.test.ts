/** Managers sharing one database (M2): ids, leases, and the edges of a manager whose lease lapsed. */
import { eq } from "drizzle-orm";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { describeBothBackends } from "../../test/support/pg.ts";
import type { Database } from "../db/client.ts";
import { edges, managers } from "../db/schema/index.ts";
import { createManagerLease, managerIdOf } from "./lease.ts";
import { createEdgeStore } from "./edge-store.ts";

const log = pino({ level: "silent" });

describe("managerIdOf", () => {
  it("takes the configured id, else the host name and a random suffix, different for two managers on one host", () => {
    expect(managerIdOf("mgr-a")).toBe("mgr-a");
    const a = managerIdOf("");
    const b = managerIdOf("");
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[a-z0-9.-]+-[0-9a-f]{8}$/);
  });
});

describeBothBackends("manager leases", (backend) => {
  async function edge(database: Database, id: string, managerId: string): Promise<void> {
    await database.db.insert(edges).values({ id, tokenHash: `h-${id}`, enrolledAt: new Date(), online: true, managerId });
  }
  const online = async (database: Database, id: string) => (await database.db.select({ online: edges.online }).from(edges).where(eq(edges.id, id)))[0].online;

  it("each manager renews its row; when one stops renewing, the next renewal of another shows its edges offline", async () => {
    const database = await backend.open();
    let t = Date.parse("2026-12-06T00:00:00Z");
    const clock = () => t;
    const a = createManagerLease({ database, id: "mgr-a", version: "1", ttlMs: 30_000, log, now: clock });
    const b = createManagerLease({ database, id: "mgr-b", version: "1", ttlMs: 30_000, log, now: clock });
    await a.renew();
    await b.renew();
    await edge(database, "e-a", "mgr-a");
    await edge(database, "e-b", "mgr-b");
    expect((await b.live()).map((m) => m.id)).toEqual(["mgr-a", "mgr-b"]);
    // Within the lease nothing changes.
    t += 20_000;
    expect(await b.clearLapsed()).toBe(0);
    expect(await online(database, "e-a")).toBe(true);
    // a renewed nothing for 31 s: dead to b.
    t += 11_000;
    await b.renew();
    expect(await online(database, "e-a")).toBe(false);
    expect(await online(database, "e-b")).toBe(true);
    expect((await b.live()).map((m) => m.id)).toEqual(["mgr-b"]);
    // A dead manager's row stays an hour (for display), then goes.
    expect((await database.db.select().from(managers)).map((m) => m.id).sort()).toEqual(["mgr-a", "mgr-b"]);
    t += 61 * 60_000;
    await b.renew();
    expect((await database.db.select().from(managers)).map((m) => m.id)).toEqual(["mgr-b"]);
  });

  it("start advertises the URL; stop removes the row so the others see the manager gone at once", async () => {
    const database = await backend.open();
    const a = createManagerLease({ database, id: "mgr-a", version: "9.9", ttlMs: 30_000, log });
    await a.start("http://10.0.0.1:7070");
    expect(await a.live()).toMatchObject([{ id: "mgr-a", advertiseUrl: "http://10.0.0.1:7070", version: "9.9" }]);
    await a.stop();
    expect(await a.live()).toEqual([]);
  });

  it(`a lease left by a crashed run is ${backend.kind === "pglite" ? "dead at once on the embedded database (one manager per data directory)" : "waited out on PostgreSQL (another manager may hold it)"}`, async () => {
    const database = await backend.open();
    const crashed = createManagerLease({ database, id: "mgr-old", version: "1", ttlMs: 30_000, log });
    await crashed.renew();
    await edge(database, "e-old", "mgr-old");
    const next = createManagerLease({ database, id: "mgr-new", version: "1", ttlMs: 30_000, log });
    await next.start("http://127.0.0.1:7070");
    expect(await online(database, "e-old")).toBe(backend.kind !== "pglite");
    expect((await next.live()).map((m) => m.id)).toEqual(backend.kind === "pglite" ? ["mgr-new"] : ["mgr-new", "mgr-old"].sort());
    await next.stop();
  });

  it("a manager whose lease lapsed and is renewed records the edges it still holds online again", async () => {
    const database = await backend.open();
    let t = Date.parse("2026-12-06T00:00:00Z");
    const clock = () => t;
    let recovered = 0;
    const store = createEdgeStore(database, "mgr-a");
    const a = createManagerLease({ database, id: "mgr-a", version: "1", ttlMs: 30_000, log, now: clock, onRecovered: async () => void (recovered += await store.reassert(["e-held", "e-moved", "e-revoked"])) });
    const b = createManagerLease({ database, id: "mgr-b", version: "1", ttlMs: 30_000, log, now: clock });
    await a.renew();
    await b.renew();
    await edge(database, "e-held", "mgr-a");
    await edge(database, "e-moved", "mgr-a");
    await edge(database, "e-revoked", "mgr-a");
    // a cannot renew for 40 s (its database out of reach); b clears its edges meanwhile.
    t += 40_000;
    await b.renew();
    expect(await online(database, "e-held")).toBe(false);
    // Meanwhile one edge moved to b, one was revoked.
    await database.db.update(edges).set({ online: true, managerId: "mgr-b" }).where(eq(edges.id, "e-moved"));
    await database.db.update(edges).set({ revokedAt: new Date() }).where(eq(edges.id, "e-revoked"));
    // A renewal within the lease does not call it; the one after the lapse does.
    await a.renew();
    expect(recovered).toBe(1);
    expect(await online(database, "e-held")).toBe(true);
    expect(await online(database, "e-revoked")).toBe(false);
    expect((await database.db.select().from(edges).where(eq(edges.id, "e-moved")))[0]).toMatchObject({ online: true, managerId: "mgr-b" });
    t += 5_000;
    await a.renew();
    expect(recovered).toBe(1);
  });
});
