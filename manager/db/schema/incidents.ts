/** Incidents from Alertmanager's webhook, and change events posted by deploy tools (K3). */
import { index, jsonb, pgTable, serial, text, timestamp } from "drizzle-orm/pg-core";

const ts = (name: string) => timestamp(name, { withTimezone: true, precision: 3, mode: "date" });

/** One incident per alert fingerprint: created when it first fires, updated while it fires, resolved. */
export const incidents = pgTable(
  "incidents",
  {
    id: text("id").primaryKey(),
    /** Alertmanager's fingerprint of the alert (its label set). */
    fingerprint: text("fingerprint").notNull().unique(),
    /** firing | resolved */
    status: text("status").notNull(),
    alertname: text("alertname").notNull().default(""),
    severity: text("severity").notNull().default(""),
    summary: text("summary").notNull().default(""),
    labels: jsonb("labels").$type<Record<string, string>>().notNull().default({}),
    annotations: jsonb("annotations").$type<Record<string, string>>().notNull().default({}),
    /** Edges the alert names (an "edge", "instance" or "host" label matching an edge id). */
    edgeIds: jsonb("edge_ids").$type<string[]>().notNull().default([]),
    startsAt: ts("starts_at").notNull(),
    endsAt: ts("ends_at"),
    generatorUrl: text("generator_url").notNull().default(""),
    /** The diagnosis session started for it, when incidents.auto_diagnose is on. */
    sessionId: text("session_id").notNull().default(""),
    createdAt: ts("created_at").notNull(),
    updatedAt: ts("updated_at").notNull(),
  },
  (t) => [index("incidents_starts_at_idx").on(t.startsAt), index("incidents_status_idx").on(t.status)],
);

/** A change made outside ongrid (a deploy, a config push), posted to the change-event endpoint. */
export const changeEvents = pgTable(
  "change_events",
  {
    id: serial("id").primaryKey(),
    at: ts("at").notNull(),
    /** Who or what posted it, e.g. "argocd", "terraform"; set from the caller's token. */
    source: text("source").notNull(),
    /** deploy | config | restart | scale | … (free text, lower case). */
    kind: text("kind").notNull(),
    summary: text("summary").notNull(),
    edgeId: text("edge_id").notNull().default(""),
    actor: text("actor").notNull().default(""),
    details: jsonb("details").$type<Record<string, unknown>>().notNull().default({}),
    receivedAt: ts("received_at").notNull(),
  },
  (t) => [index("change_events_at_idx").on(t.at)],
);
