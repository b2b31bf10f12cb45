/** The service topology (K5): each edge's last observed sockets, and the graph built from them and the static file. */
import { jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** One row per edge whose sockets were ever asked for: its last good host_sockets output and how the last attempt went. */
export const topologyObservations = pgTable("topology_observations", {
  edgeId: text("edge_id").primaryKey(),
  /** When the sockets below were read (null: no attempt has succeeded yet). */
  collectedAt: timestamp("collected_at", { withTimezone: true, precision: 3, mode: "date" }),
  /** The host_sockets output (null until one succeeds). */
  sockets: jsonb("sockets").$type<unknown>(),
  /** Why the last attempt failed ("" when it did not). */
  lastError: text("last_error").notNull().default(""),
  lastAttemptAt: timestamp("last_attempt_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
});

/** The built graph: one row ("current"), replaced by each build; managers sharing the database read it. */
export const topologyGraphs = pgTable("topology_graphs", {
  id: text("id").primaryKey(),
  builtAt: timestamp("built_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
  graph: jsonb("graph").$type<unknown>().notNull(),
});
