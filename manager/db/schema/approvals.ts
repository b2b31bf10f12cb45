/** The approval aggregate (G2, G3): parked non-safe calls, their votes and their outcome. */
import { bigint, index, integer, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** One vote of one approver. */
export interface VoteJson {
  userId: string;
  at: string;
  comment: string;
}

/** One row per approval request; state moves pending → running → executed|failed, or pending → denied|expired. */
export const approvals = pgTable(
  "approvals",
  {
    id: text("id").primaryKey(),
    skillKey: text("skill_key").notNull(),
    edgeId: text("edge_id").notNull().default(""),
    /** The target edge's labels when requested: who may see the request (reach) is decided on them. */
    edgeLabels: jsonb("edge_labels").$type<Record<string, string>>().notNull().default({}),
    /** The params exactly as validated; the call runs with these and nothing else. */
    params: jsonb("params").notNull(),
    /** SHA-256 of the canonical params, fixed at request time. */
    paramsHash: text("params_hash").notNull(),
    effectiveClass: text("effective_class").notNull(),
    requesterUserId: text("requester_user_id").notNull(),
    requesterRole: text("requester_role").notNull(),
    /** For a call the agent (user "0") requested: the session's user, who may not approve it either. */
    onBehalfOf: text("on_behalf_of").notNull().default(""),
    /** The requester's reach when asking (label selectors, the call may not leave it). */
    requesterReach: jsonb("requester_reach").$type<string[]>().notNull().default([]),
    sessionId: text("session_id").notNull().default(""),
    /** The client program that requested the call (an MCP client's "name/version"), carried to the execution's audit row. */
    client: text("client").notNull().default(""),
    timeoutMs: integer("timeout_ms").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
    state: text("state").notNull(),
    requiredApprovals: integer("required_approvals").notNull(),
    votes: jsonb("votes").$type<VoteJson[]>().notNull().default([]),
    deniedBy: text("denied_by").notNull().default(""),
    reason: text("reason").notNull().default(""),
    sopId: text("sop_id").notNull().default(""),
    sopVersion: text("sop_version").notNull().default(""),
    sopHash: text("sop_hash").notNull().default(""),
    /** The signed SOP as presented, so approvers can read it and the call can re-check it. */
    sopDocument: text("sop_document").notNull().default(""),
    result: jsonb("result"),
    requestAuditSeq: bigint("request_audit_seq", { mode: "number" }).notNull().default(0),
    executionAuditSeq: bigint("execution_audit_seq", { mode: "number" }).notNull().default(0),
    /** The manager running the approved call (state running): only it, or the lapse of its lease, fails it (M2). */
    runningManager: text("running_manager").notNull().default(""),
    updatedAt: timestamp("updated_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
  },
  (t) => [index("approvals_state_idx").on(t.state, t.expiresAt), index("approvals_created_at_idx").on(t.createdAt)],
);

/** An approvals row as read. */
export type ApprovalRow = typeof approvals.$inferSelect;
