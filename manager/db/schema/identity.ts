/** The identity aggregate (G1, G4): users with a role and a reach, and their API tokens (stored hashed). */
import { index, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** One row per user; the id is the user's lower-case name. */
export const users = pgTable("users", {
  id: text("id").primaryKey(),
  /** viewer | operator | approver | admin */
  role: text("role").notNull(),
  /** Label selector limiting the edges the user reaches; "" reaches all. */
  reach: text("reach").notNull().default(""),
  createdAt: timestamp("created_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
  disabledAt: timestamp("disabled_at", { withTimezone: true, precision: 3, mode: "date" }),
  /** Who created the account ("" for the bootstrap admin and rows from before this column). */
  createdBy: text("created_by").notNull().default(""),
  /** When the role, reach or disabled state last changed, and by whom (separation of duties, G3). */
  changedAt: timestamp("changed_at", { withTimezone: true, precision: 3, mode: "date" }),
  changedBy: text("changed_by").notNull().default(""),
});

/** One row per API token; only the token's SHA-256 is kept. */
export const apiTokens = pgTable(
  "api_tokens",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    tokenHash: text("token_hash").notNull().unique(),
    description: text("description").notNull().default(""),
    /** Label selector narrowing the user's reach for this token; "" adds no limit. */
    reach: text("reach").notNull().default(""),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true, precision: 3, mode: "date" }),
    revokedAt: timestamp("revoked_at", { withTimezone: true, precision: 3, mode: "date" }),
    lastUsedAt: timestamp("last_used_at", { withTimezone: true, precision: 3, mode: "date" }),
    /** Who issued the token ("" for the bootstrap token and rows from before this column). */
    createdBy: text("created_by").notNull().default(""),
  },
  (t) => [index("api_tokens_user_id_idx").on(t.userId)],
);

/** A users row as read. */
export type UserRow = typeof users.$inferSelect;
/** An api_tokens row as read. */
export type ApiTokenRow = typeof apiTokens.$inferSelect;
