/** The router's decisions (I3): which playbook was picked for an incident text, by which path. */
import { index, integer, jsonb, pgTable, real, text, timestamp, boolean } from "drizzle-orm/pg-core";

/** One row per Route call. */
export const routeDecisions = pgTable(
  "route_decisions",
  {
    id: text("id").primaryKey(),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
    userId: text("user_id").notNull().default(""),
    sessionId: text("session_id").notNull().default(""),
    /** The input, redacted (secrets never stored in clear). */
    inputText: text("input_text").notNull(),
    isOncall: boolean("is_oncall").notNull(),
    skillName: text("skill_name").notNull().default(""),
    confidence: real("confidence").notNull(),
    reason: text("reason").notNull().default(""),
    /** out_of_scope | model | model_unknown_name | rules */
    path: text("path").notNull(),
    fallbackCause: text("fallback_cause").notNull().default(""),
    recalled: jsonb("recalled").$type<string[]>().notNull().default([]),
    model: text("model").notNull().default(""),
    promptTokens: integer("prompt_tokens").notNull().default(0),
    completionTokens: integer("completion_tokens").notNull().default(0),
    latencyMs: integer("latency_ms").notNull().default(0),
  },
  (t) => [index("route_decisions_created_at_idx").on(t.createdAt)],
);
