CREATE TABLE "edges" (
	"id" text PRIMARY KEY NOT NULL,
	"token_hash" text NOT NULL,
	"enrolled_at" timestamp (3) with time zone NOT NULL,
	"revoked_at" timestamp (3) with time zone,
	"online" boolean DEFAULT false NOT NULL,
	"last_seen_at" timestamp (3) with time zone,
	"manager_id" text DEFAULT '' NOT NULL,
	"version" text DEFAULT '' NOT NULL,
	"hostname" text DEFAULT '' NOT NULL,
	"os" text DEFAULT '' NOT NULL,
	"labels" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"skills" jsonb DEFAULT '[]'::jsonb NOT NULL
);
--> statement-breakpoint
CREATE INDEX "edges_token_hash_idx" ON "edges" USING btree ("token_hash");