/** Diagnosis sessions of the agent (J2): input, route, plan, report, verdict and what they cost. */
import { index, integer, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** One row per Diagnose call; updated as the session moves on. */
export const agentSessions = pgTable(
  "agent_sessions",
  {
    id: text("id").primaryKey(),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
    updatedAt: timestamp("updated_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
    userId: text("user_id").notNull(),
    /** The input, redacted. */
    inputText: text("input_text").notNull(),
    edgeId: text("edge_id").notNull().default(""),
    mode: text("mode").notNull().default(""),
    routeDecisionId: text("route_decision_id").notNull().default(""),
    skillName: text("skill_name").notNull().default(""),
    /** model (planner → executor → verifier) or fallback (the playbook's fallback steps). */
    path: text("path").notNull().default(""),
    plan: jsonb("plan").$type<unknown>(),
    report: text("report").notNull().default(""),
    verdict: jsonb("verdict").$type<unknown>(),
    /** running | done | failed | cancelled */
    status: text("status").notNull(),
    error: text("error").notNull().default(""),
    model: text("model").notNull().default(""),
    promptTokens: integer("prompt_tokens").notNull().default(0),
    completionTokens: integer("completion_tokens").notNull().default(0),
    toolCalls: integer("tool_calls").notNull().default(0),
  },
  (t) => [index("agent_sessions_created_at_idx").on(t.createdAt), index("agent_sessions_user_idx").on(t.userId)],
);
