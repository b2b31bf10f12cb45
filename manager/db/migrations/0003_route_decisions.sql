CREATE TABLE "route_decisions" (
	"id" text PRIMARY KEY NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"user_id" text DEFAULT '' NOT NULL,
	"session_id" text DEFAULT '' NOT NULL,
	"input_text" text NOT NULL,
	"is_oncall" boolean NOT NULL,
	"skill_name" text DEFAULT '' NOT NULL,
	"confidence" real NOT NULL,
	"reason" text DEFAULT '' NOT NULL,
	"path" text NOT NULL,
	"fallback_cause" text DEFAULT '' NOT NULL,
	"recalled" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"model" text DEFAULT '' NOT NULL,
	"prompt_tokens" integer DEFAULT 0 NOT NULL,
	"completion_tokens" integer DEFAULT 0 NOT NULL,
	"latency_ms" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX "route_decisions_created_at_idx" ON "route_decisions" USING btree ("created_at");