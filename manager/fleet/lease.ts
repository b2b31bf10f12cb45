/**
 * A manager's identity and lease among the managers sharing one database (M2, issue 31's first
 * part): each running manager has a row in `managers` that it renews every third of
 * `server.lease_ttl`; a manager whose lease has lapsed is dead to the others, and the edges it held
 * are no longer shown online (whichever manager renews next clears them). PostgreSQL is the shared
 * engine: no consensus of our own.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { and, eq, gt, lt, ne, notInArray, sql } from "drizzle-orm";
import type { Logger } from "pino";
import type { Database } from "../db/client.ts";
import { edges, managers, type ManagerRow } from "../db/schema/index.ts";

/** Rows of managers dead this long are deleted (until then `live()` tells them apart by lease). */
const FORGET_AFTER_MS = 60 * 60_000;

/** The id of this manager process: `server.manager_id`, else the host name and a random suffix (two managers on one host never share one). */
export function managerIdOf(configured: string): string {
  return configured || `${hostname().toLowerCase().replace(/[^a-z0-9.-]/g, "-").slice(0, 48)}-${randomBytes(4).toString("hex")}`;
}

/** The lease of one manager. */
export interface ManagerLease {
  readonly id: string;
  /** Writes the row (advertising `url`), clears what lapsed managers held, and renews on a timer. */
  start(url: string): Promise<void>;
  /** One renewal now (the timer's work): extends the lease, then clears lapsed managers' edges. */
  renew(): Promise<void>;
  /** Edges shown online by a manager whose lease has lapsed are set offline; returns how many. */
  clearLapsed(): Promise<number>;
  /** The managers whose lease has not lapsed. */
  live(): Promise<ManagerRow[]>;
  /** Stops renewing and removes the row: the others see this manager gone at once. */
  stop(): Promise<void>;
}

/** Creates the lease; nothing is written until start(). `now` is for tests. */
export function createManagerLease(o: {
  database: Database;
  id: string;
  version: string;
  ttlMs: number;
  log: Logger;
  now?: () => number;
  /**
   * Called after a renewal that follows a lapse (no renewal for longer than the lease: a slow or
   * partitioned database). The others may have shown this manager's edges offline meanwhile; the
   * hub records the ones it still holds online again.
   */
  onRecovered?: () => Promise<void>;
}): ManagerLease {
  const db = o.database.db;
  const now = o.now ?? Date.now;
  let url = "";
  let startedAt: Date | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  let renewing: Promise<void> | undefined;

  async function clearLapsed(): Promise<number> {
    const at = new Date(now());
    const alive = db.select({ id: managers.id }).from(managers).where(gt(managers.leaseUntil, at));
    const cleared = await db
      .update(edges)
      .set({ online: false, presenceAt: sql`now()` })
      .where(and(eq(edges.online, true), ne(edges.managerId, o.id), notInArray(edges.managerId, alive)))
      .returning({ id: edges.id });
    await db.delete(managers).where(lt(managers.leaseUntil, new Date(now() - FORGET_AFTER_MS)));
    if (cleared.length) o.log.info({ edges: cleared.length }, "edges held by managers whose lease lapsed are offline now");
    return cleared.length;
  }

  let lastRenewed = 0;

  async function renewOnce(): Promise<void> {
    const at = new Date(now());
    const until = new Date(now() + o.ttlMs);
    startedAt ??= at;
    const lapsed = lastRenewed > 0 && at.getTime() - lastRenewed > o.ttlMs;
    await db
      .insert(managers)
      .values({ id: o.id, advertiseUrl: url, hostname: hostname(), version: o.version, startedAt, renewedAt: at, leaseUntil: until })
      .onConflictDoUpdate({ target: managers.id, set: { advertiseUrl: url, renewedAt: at, leaseUntil: until, version: o.version } });
    const gap = at.getTime() - lastRenewed;
    lastRenewed = at.getTime();
    if (lapsed) {
      o.log.warn({ since_last_renewal_ms: gap }, "this manager's lease had lapsed (the database was out of reach); renewed, recording its edges online again");
      await o.onRecovered?.();
    }
    await clearLapsed();
  }

  function renew(): Promise<void> {
    // One renewal at a time: a slow database must not pile them up.
    renewing ??= renewOnce().finally(() => {
      renewing = undefined;
    });
    return renewing;
  }

  return {
    id: o.id,
    async start(advertiseUrl) {
      url = advertiseUrl;
      // The embedded database has one manager at a time (its data directory is locked): any other
      // lease in it is a previous run's, dead however long it had left.
      if (o.database.kind === "pglite") await db.delete(managers).where(ne(managers.id, o.id));
      await renew();
      timer = setInterval(() => {
        renew().catch((err: Error) => o.log.warn({ err: err.message }, "could not renew the manager's lease; the others will see it dead once it lapses"));
      }, Math.max(100, Math.floor(o.ttlMs / 3)));
      timer.unref();
    },
    renew,
    clearLapsed,
    live: () => db.select().from(managers).where(gt(managers.leaseUntil, new Date(now()))).orderBy(managers.id),
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await renewing?.catch(() => {});
      await db.delete(managers).where(eq(managers.id, o.id));
    },
  };
}
