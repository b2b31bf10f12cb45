/** The credential store (G5): secrets skills need, encrypted at rest (AES-256-GCM). */
import { pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** One row per credential; the value exists here only as ciphertext. */
export const credentials = pgTable("credentials", {
  name: text("name").primaryKey(),
  description: text("description").notNull().default(""),
  /** base64 of iv (12 bytes) ‖ ciphertext ‖ GCM tag (16 bytes); the name is the associated data. */
  ciphertext: text("ciphertext").notNull(),
  /** Which key encrypted it (first 16 hex of the key's SHA-256), to explain a key mismatch. */
  keyId: text("key_id").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
  updatedAt: timestamp("updated_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
  updatedBy: text("updated_by").notNull().default(""),
});

/** A credentials row as read. */
export type CredentialRow = typeof credentials.$inferSelect;
