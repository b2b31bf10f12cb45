/** The audit aggregate: one row per tool call (H1), hash-chained by seq (H2). */
import { sql } from "drizzle-orm";
import { bigint, index, integer, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** Every call of every skill, whatever its outcome; seq is assigned by the audit writer, never by a sequence. */
export const toolCalls = pgTable(
  "tool_calls",
  {
    seq: bigint("seq", { mode: "number" }).primaryKey(),
    sessionId: text("session_id").notNull().default(""),
    toolName: text("tool_name").notNull(),
    argsJson: jsonb("args_json"),
    resultJson: jsonb("result_json"),
    error: text("error").notNull().default(""),
    deviceId: text("device_id").notNull().default(""),
    startedAt: timestamp("started_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
    finishedAt: timestamp("finished_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
    durationMs: integer("duration_ms").notNull().default(0),
    callerUserId: text("caller_user_id"),
    callerRole: text("caller_role"),
    decision: text("decision"),
    decisionReason: text("decision_reason"),
    approvalId: text("approval_id").default(""),
    sopHash: text("sop_hash").default(""),
    /** Comma-separated ids of the approvers who let the call run ("" when none did). */
    approvedBy: text("approved_by").notNull().default(""),
    /** For the agent's calls (user "0"): the session's user. Hashed into the chain only when not empty. */
    onBehalfOf: text("on_behalf_of").notNull().default(""),
    /** The client program as it named itself (an MCP client's "name/version"). Hashed into the chain only when not empty. */
    client: text("client").notNull().default(""),
    prevHash: text("prev_hash").notNull(),
    rowHash: text("row_hash").notNull(),
  },
  (t) => [
    index("tool_calls_started_at_idx").on(t.startedAt),
    index("tool_calls_tool_name_idx").on(t.toolName, t.seq),
    index("tool_calls_device_id_idx").on(t.deviceId, t.seq),
    index("tool_calls_caller_user_id_idx").on(t.callerUserId, t.seq),
    // The user filter matches the caller or the user the agent acted for (H3): with both indexed
    // the two arms are one bitmap OR, not a scan of the table. Only the agent's rows have
    // on_behalf_of set, so the others cost this index nothing.
    index("tool_calls_on_behalf_of_idx").on(t.onBehalfOf, t.seq).where(sql`${t.onBehalfOf} <> ''`),
    index("tool_calls_session_id_idx").on(t.sessionId, t.seq),
    index("tool_calls_decision_idx").on(t.decision, t.seq),
  ],
);

/** A tool_calls row as drizzle reads it. */
export type ToolCallRow = typeof toolCalls.$inferSelect;
/** A tool_calls row as the audit writer inserts it. */
export type NewToolCallRow = typeof toolCalls.$inferInsert;
