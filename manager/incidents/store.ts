/** Incidents (one per Alertmanager fingerprint) and external change events in the database (K3). */
import { randomBytes } from "node:crypto";
import { and, desc, eq, gte, inArray, isNull, lte, or, sql, type SQL } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { changeEvents, incidents } from "../db/schema/index.ts";
import type { AlertIn } from "./alertmanager.ts";

/** An incident row. */
export type IncidentRow = typeof incidents.$inferSelect;
/** A change event row. */
export type ChangeEventRow = typeof changeEvents.$inferSelect;

/** What recording one alert did. */
export interface Recorded {
  incident: IncidentRow;
  /** A new incident, or a resolved one firing again: a new occurrence (auto_diagnose starts a session for it). */
  opened: boolean;
  /** A notification of an occurrence older than the one stored (a late firing, or a late resolved of an earlier occurrence): nothing was changed. */
  stale: boolean;
}

/** An alert refused because its fingerprint names an incident the poster may not touch: nothing was changed. */
export interface Refused {
  refused: true;
}

/** How an alert is recorded. */
export interface RecordOptions {
  now?: Date;
  /**
   * The poster's reach over edges (G4), undefined when unlimited. An existing incident that names
   * edges, none of them visible, is not the poster's: the alert is refused and nothing changes.
   * An incident the poster may touch keeps its stored edges outside the poster's reach.
   */
  visible?: (edgeId: string) => boolean;
}

/** Filters of query_incidents; all optional. */
export interface IncidentFilter {
  status?: "firing" | "resolved";
  /** Incidents active at some point in [since, until]. */
  since?: Date;
  until?: Date;
  alertname?: string;
  edgeId?: string;
  limit: number;
}

const summaryOf = (a: Record<string, string>) => (a.summary ?? a.description ?? a.message ?? "").slice(0, 1000);

/** Creates the store over the manager's database. */
export function createIncidentStore(database: Database) {
  const { db } = database;

  async function byFingerprint(fp: string): Promise<IncidentRow | undefined> {
    return (await db.select().from(incidents).where(eq(incidents.fingerprint, fp)))[0];
  }

  /**
   * Records one alert: inserts, updates, resolves or reopens its incident. With `visible` (a poster
   * whose reach is limited), an incident naming edges none of which is visible is refused
   * unchanged, and an update keeps the incident's edges the poster cannot see.
   */
  async function recordAlert(a: AlertIn, edgeIds: string[], opts?: RecordOptions & { visible?: undefined }): Promise<Recorded>;
  async function recordAlert(a: AlertIn, edgeIds: string[], opts: RecordOptions): Promise<Recorded | Refused>;
  async function recordAlert(a: AlertIn, edgeIds: string[], opts: RecordOptions = {}): Promise<Recorded | Refused> {
    const now = opts.now ?? new Date();
    const { visible } = opts;
    const fields = {
      alertname: (a.labels.alertname ?? "").slice(0, 200),
      severity: (a.labels.severity ?? "").slice(0, 64),
      summary: summaryOf(a.annotations),
      labels: a.labels,
      annotations: a.annotations,
      edgeIds,
      generatorUrl: a.generatorUrl,
      updatedAt: now,
    };
    for (let attempt = 0; attempt < 2; attempt++) {
      fields.edgeIds = edgeIds;
      const existing = await byFingerprint(a.fingerprint);
      if (!existing) {
        const row = {
          id: `inc_${randomBytes(8).toString("hex")}`,
          fingerprint: a.fingerprint,
          status: a.status,
          startsAt: a.startsAt,
          endsAt: a.status === "resolved" ? (a.endsAt ?? now) : null,
          sessionId: "",
          createdAt: now,
          ...fields,
        };
        const ins = await db.insert(incidents).values(row).onConflictDoNothing().returning();
        if (ins.length) return { incident: ins[0], opened: a.status === "firing", stale: false };
        continue; // another post inserted it meanwhile: update that one
      }
      if (visible && existing.edgeIds.length && !existing.edgeIds.some(visible)) return { refused: true };
      // Only edges the poster can see are its to replace; the others stay (an incident with fewer
      // edges is visible to more callers, one with none to everyone). The update applies only to
      // the edges checked here: changed meanwhile by another post, it looks again.
      const kept = visible ? existing.edgeIds.filter((id) => !visible(id) && !edgeIds.includes(id)) : [];
      fields.edgeIds = [...edgeIds, ...kept];
      const sameEdges = visible ? sql`${incidents.edgeIds} = ${JSON.stringify(existing.edgeIds)}::jsonb` : undefined;
      if (a.status === "resolved") {
        // A resolved notification of an earlier occurrence (Alertmanager retries, HA peers) arriving after
        // the incident reopened: resolving now would end the new occurrence before it started.
        if (a.startsAt.getTime() < existing.startsAt.getTime()) return { incident: existing, opened: false, stale: true };
        const upd = await db
          .update(incidents)
          .set({ ...fields, status: "resolved", endsAt: a.endsAt ?? now })
          .where(and(eq(incidents.id, existing.id), lte(incidents.startsAt, a.startsAt), sameEdges))
          .returning();
        if (!upd.length) continue; // reopened (or its edges changed) by a concurrent post meanwhile: look again
        return { incident: upd[0], opened: false, stale: false };
      }
      if (existing.status === "resolved") {
        // Firing after resolved: a new occurrence when it started later, else a late notification.
        if (a.startsAt.getTime() <= existing.startsAt.getTime()) return { incident: existing, opened: false, stale: true };
        const upd = await db
          .update(incidents)
          .set({ ...fields, status: "firing", startsAt: a.startsAt, endsAt: null, sessionId: "" })
          .where(and(eq(incidents.id, existing.id), eq(incidents.status, "resolved"), sameEdges))
          .returning();
        if (!upd.length) continue; // reopened by a concurrent post
        return { incident: upd[0], opened: true, stale: false };
      }
      const upd = await db.update(incidents).set({ ...fields, status: "firing", endsAt: null }).where(and(eq(incidents.id, existing.id), sameEdges)).returning();
      if (!upd.length) continue; // its edges changed meanwhile: look again
      return { incident: upd[0], opened: false, stale: false };
    }
    const last = (await byFingerprint(a.fingerprint))!;
    if (visible && last.edgeIds.length && !last.edgeIds.some(visible)) return { refused: true };
    return { incident: last, opened: false, stale: false };
  }

  return {
    recordAlert,

    /** Incidents matching the filter, newest first; one more than `limit` tells the caller it was cut. */
    async list(f: IncidentFilter): Promise<IncidentRow[]> {
      const where: SQL[] = [];
      if (f.status) where.push(eq(incidents.status, f.status));
      if (f.until) where.push(lte(incidents.startsAt, f.until));
      if (f.since) where.push(or(isNull(incidents.endsAt), gte(incidents.endsAt, f.since))!);
      if (f.alertname) where.push(eq(incidents.alertname, f.alertname));
      if (f.edgeId) where.push(sql`${incidents.edgeIds} @> ${JSON.stringify([f.edgeId])}::jsonb`);
      return db
        .select()
        .from(incidents)
        .where(where.length ? and(...where) : undefined)
        .orderBy(desc(incidents.startsAt), desc(incidents.id))
        .limit(f.limit + 1);
    },

    /** One incident by id (inc_…) or by Alertmanager fingerprint. */
    async get(idOrFingerprint: string): Promise<IncidentRow | undefined> {
      return (await db.select().from(incidents).where(or(eq(incidents.id, idOrFingerprint), eq(incidents.fingerprint, idOrFingerprint))))[0];
    },

    async setSession(id: string, sessionId: string): Promise<void> {
      await db.update(incidents).set({ sessionId, updatedAt: new Date() }).where(eq(incidents.id, id));
    },

    async addChangeEvent(e: Omit<ChangeEventRow, "id" | "receivedAt">, now = new Date()): Promise<ChangeEventRow> {
      return (await db.insert(changeEvents).values({ ...e, receivedAt: now }).returning())[0];
    },

    /** Change events with `at` in [since, until] (on one edge, or on one of `edgeIds`: a caller's reach), newest first, at most limit + 1. */
    async listChangeEvents(f: { since: Date; until: Date; edgeId?: string; edgeIds?: string[]; limit: number }): Promise<ChangeEventRow[]> {
      const where: SQL[] = [gte(changeEvents.at, f.since), lte(changeEvents.at, f.until)];
      if (f.edgeId) where.push(eq(changeEvents.edgeId, f.edgeId));
      if (f.edgeIds) where.push(inArray(changeEvents.edgeId, f.edgeIds));
      return db.select().from(changeEvents).where(and(...where)).orderBy(desc(changeEvents.at), desc(changeEvents.id)).limit(f.limit + 1);
    },
  };
}

/** The store's interface. */
export type IncidentStore = ReturnType<typeof createIncidentStore>;
