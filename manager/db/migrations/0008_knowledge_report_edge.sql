ALTER TABLE "knowledge_docs" ADD COLUMN "edge_id" text DEFAULT '' NOT NULL;--> statement-breakpoint
-- Reports indexed before this migration take their session's edge, so they stay hidden from callers who do not reach it (G4).
UPDATE "knowledge_docs" SET "edge_id" = "agent_sessions"."edge_id" FROM "agent_sessions" WHERE "knowledge_docs"."kind" = 'report' AND "knowledge_docs"."source" = 'session:' || "agent_sessions"."id";
