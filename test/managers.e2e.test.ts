/**
 * Two managers on one PostgreSQL on one host (M2, issue 31's first part): each has its own id and
 * lease, so starting the second does not show the first one's edges offline (before, both used the
 * host name and the second's start cleared the first's edges); a manager that stops is gone from
 * the others' list of live managers at once.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, waitFor, type TestEdge } from "./support/edge.ts";
import { createTestDatabase, pgUnavailableReason, type TestDatabase } from "./support/pg.ts";

const reason = await pgUnavailableReason();
const requirePg = process.env.CI === "true";

describe.skipIf(reason !== null && !requirePg)(`two managers on one database${reason ? ` (skipped: PostgreSQL not reachable: ${reason})` : ""}`, () => {
  let pg: TestDatabase;
  let a: TestManager;
  let b: TestManager | undefined;
  let edge: TestEdge;
  beforeAll(async () => {
    if (reason !== null) throw new Error(`PostgreSQL is required when CI=true: ${reason}`);
    pg = await createTestDatabase();
    a = await bootManager({ database_url: pg.url });
    edge = await startEdge(a, "lease-edge");
  }, 120_000);
  afterAll(async () => {
    await edge?.stop();
    await b?.stop();
    await a?.stop();
    await pg?.drop();
  });

  test("each has its own id; the second's start leaves the first's edges online; a stopped manager leaves the live list", async () => {
    const online = async (m: TestManager) => (await m.edges.list()).filter((e) => e.online).map((e) => e.id);
    expect(await waitFor(async () => (await online(a)).includes("lease-edge"), 15_000)).toBe(true);
    b = await bootManager({ database_url: pg.url });
    expect(b.lease.id).not.toBe(a.lease.id);
    expect((await b.lease.live()).map((m) => m.id).sort()).toEqual([a.lease.id, b.lease.id].sort());
    expect((await b.lease.live()).find((m) => m.id === a.lease.id)?.advertiseUrl).toBe(a.url);
    // b's own start and renewals clear only what lapsed managers held.
    await b.lease.renew();
    expect(await online(b)).toContain("lease-edge");
    const rows = await b.edges.list();
    expect(rows.find((e) => e.id === "lease-edge")?.managerId).toBe(a.lease.id);
    await b.stop();
    expect((await a.lease.live()).map((m) => m.id)).toEqual([a.lease.id]);
    b = undefined;
  }, 60_000);
});
