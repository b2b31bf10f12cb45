ALTER TABLE "tool_calls" ADD COLUMN "client" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "client" text DEFAULT '' NOT NULL;