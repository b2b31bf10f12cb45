CREATE TABLE "agent_sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	"user_id" text NOT NULL,
	"input_text" text NOT NULL,
	"edge_id" text DEFAULT '' NOT NULL,
	"mode" text DEFAULT '' NOT NULL,
	"route_decision_id" text DEFAULT '' NOT NULL,
	"skill_name" text DEFAULT '' NOT NULL,
	"path" text DEFAULT '' NOT NULL,
	"plan" jsonb,
	"report" text DEFAULT '' NOT NULL,
	"verdict" jsonb,
	"status" text NOT NULL,
	"error" text DEFAULT '' NOT NULL,
	"model" text DEFAULT '' NOT NULL,
	"prompt_tokens" integer DEFAULT 0 NOT NULL,
	"completion_tokens" integer DEFAULT 0 NOT NULL,
	"tool_calls" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX "agent_sessions_created_at_idx" ON "agent_sessions" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "agent_sessions_user_idx" ON "agent_sessions" USING btree ("user_id");