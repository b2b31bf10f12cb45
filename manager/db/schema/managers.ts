/** Managers sharing one database (M2): each running manager's identity and lease. */
import { index, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** One row per running manager; a manager whose lease_until has passed is dead to the others. */
export const managers = pgTable(
  "managers",
  {
    id: text("id").primaryKey(),
    /** The URL other managers and clients reach it at (server.advertise_url, else its listener's). */
    advertiseUrl: text("advertise_url").notNull().default(""),
    hostname: text("hostname").notNull().default(""),
    version: text("version").notNull().default(""),
    startedAt: timestamp("started_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
    renewedAt: timestamp("renewed_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
    leaseUntil: timestamp("lease_until", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
  },
  (t) => [index("managers_lease_until_idx").on(t.leaseUntil)],
);

/** A row of managers as read. */
export type ManagerRow = typeof managers.$inferSelect;

/**
 * The cluster credential peers prove to each other (M2), when `server.cluster_secret` is not set:
 * the first manager to start writes a random one; every manager sharing the database reads it.
 */
export const clusterSecrets = pgTable("cluster_secrets", {
  name: text("name").primaryKey(),
  /** 32 random bytes, base64url. Readable by whoever can read the database, like the audit key material. */
  secret: text("secret").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
});
