/** The edge aggregate: enrolled edge agents, their hashed tokens and their last known presence (C4, B2). */
import { boolean, index, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** One row per enrolled edge id; the token is stored only as its SHA-256. */
export const edges = pgTable(
  "edges",
  {
    id: text("id").primaryKey(),
    tokenHash: text("token_hash").notNull(),
    enrolledAt: timestamp("enrolled_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
    revokedAt: timestamp("revoked_at", { withTimezone: true, precision: 3, mode: "date" }),
    online: boolean("online").notNull().default(false),
    lastSeenAt: timestamp("last_seen_at", { withTimezone: true, precision: 3, mode: "date" }),
    managerId: text("manager_id").notNull().default(""),
    version: text("version").notNull().default(""),
    hostname: text("hostname").notNull().default(""),
    os: text("os").notNull().default(""),
    /** Labels for reach and selectors: set at enrolment and by an admin, never by the edge (C4, G4). */
    labels: jsonb("labels").$type<Record<string, string>>().notNull().default({}),
    /** Labels the edge reported in its last hello: shown, never used for reach or selectors. */
    reportedLabels: jsonb("reported_labels").$type<Record<string, string>>().notNull().default({}),
    /** The skill metadata of the last hello, as the contract's JSON. */
    skills: jsonb("skills").$type<unknown[]>().notNull().default([]),
    /** The inventory digest of `skills` (managers reading another's edges parse each distinct list once). */
    skillsDigest: text("skills_digest").notNull().default(""),
    /** When the presence columns last changed (database clock): what other managers poll for (M2). */
    presenceAt: timestamp("presence_at", { withTimezone: true, precision: 3, mode: "date" }),
  },
  (t) => [index("edges_token_hash_idx").on(t.tokenHash), index("edges_presence_at_idx").on(t.presenceAt)],
);

/** A row of edges as read. */
export type EdgeRow = typeof edges.$inferSelect;
