CREATE TABLE "api_tokens" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"token_hash" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"reach" text DEFAULT '' NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"expires_at" timestamp (3) with time zone,
	"revoked_at" timestamp (3) with time zone,
	"last_used_at" timestamp (3) with time zone,
	CONSTRAINT "api_tokens_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" text PRIMARY KEY NOT NULL,
	"role" text NOT NULL,
	"reach" text DEFAULT '' NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"disabled_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "approvals" (
	"id" text PRIMARY KEY NOT NULL,
	"skill_key" text NOT NULL,
	"edge_id" text DEFAULT '' NOT NULL,
	"edge_labels" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"params" jsonb NOT NULL,
	"params_hash" text NOT NULL,
	"effective_class" text NOT NULL,
	"requester_user_id" text NOT NULL,
	"requester_role" text NOT NULL,
	"requester_reach" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"session_id" text DEFAULT '' NOT NULL,
	"timeout_ms" integer NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL,
	"state" text NOT NULL,
	"required_approvals" integer NOT NULL,
	"votes" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"denied_by" text DEFAULT '' NOT NULL,
	"reason" text DEFAULT '' NOT NULL,
	"sop_id" text DEFAULT '' NOT NULL,
	"sop_version" text DEFAULT '' NOT NULL,
	"sop_hash" text DEFAULT '' NOT NULL,
	"sop_document" text DEFAULT '' NOT NULL,
	"result" jsonb,
	"request_audit_seq" bigint DEFAULT 0 NOT NULL,
	"execution_audit_seq" bigint DEFAULT 0 NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "credentials" (
	"name" text PRIMARY KEY NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"ciphertext" text NOT NULL,
	"key_id" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	"updated_by" text DEFAULT '' NOT NULL
);
--> statement-breakpoint
ALTER TABLE "tool_calls" ADD COLUMN "approved_by" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "api_tokens" ADD CONSTRAINT "api_tokens_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_tokens_user_id_idx" ON "api_tokens" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "approvals_state_idx" ON "approvals" USING btree ("state","expires_at");--> statement-breakpoint
CREATE INDEX "approvals_created_at_idx" ON "approvals" USING btree ("created_at");