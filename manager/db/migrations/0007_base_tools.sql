CREATE TABLE "knowledge_docs" (
	"id" serial PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"source" text NOT NULL,
	"title" text DEFAULT '' NOT NULL,
	"body" text NOT NULL,
	"modified_at" timestamp (3) with time zone NOT NULL,
	"indexed_at" timestamp (3) with time zone NOT NULL,
	"tsv" "tsvector" GENERATED ALWAYS AS (setweight(to_tsvector('english', coalesce("title", '')), 'A') || setweight(to_tsvector('english', "body"), 'B')) STORED NOT NULL,
	CONSTRAINT "knowledge_docs_source_unique" UNIQUE("source")
);
--> statement-breakpoint
CREATE TABLE "change_events" (
	"id" serial PRIMARY KEY NOT NULL,
	"at" timestamp (3) with time zone NOT NULL,
	"source" text NOT NULL,
	"kind" text NOT NULL,
	"summary" text NOT NULL,
	"edge_id" text DEFAULT '' NOT NULL,
	"actor" text DEFAULT '' NOT NULL,
	"details" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"received_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "incidents" (
	"id" text PRIMARY KEY NOT NULL,
	"fingerprint" text NOT NULL,
	"status" text NOT NULL,
	"alertname" text DEFAULT '' NOT NULL,
	"severity" text DEFAULT '' NOT NULL,
	"summary" text DEFAULT '' NOT NULL,
	"labels" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"annotations" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"edge_ids" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"starts_at" timestamp (3) with time zone NOT NULL,
	"ends_at" timestamp (3) with time zone,
	"generator_url" text DEFAULT '' NOT NULL,
	"session_id" text DEFAULT '' NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "incidents_fingerprint_unique" UNIQUE("fingerprint")
);
--> statement-breakpoint
CREATE INDEX "knowledge_docs_tsv_idx" ON "knowledge_docs" USING gin ("tsv");--> statement-breakpoint
CREATE INDEX "knowledge_docs_kind_idx" ON "knowledge_docs" USING btree ("kind");--> statement-breakpoint
CREATE INDEX "change_events_at_idx" ON "change_events" USING btree ("at");--> statement-breakpoint
CREATE INDEX "incidents_starts_at_idx" ON "incidents" USING btree ("starts_at");--> statement-breakpoint
CREATE INDEX "incidents_status_idx" ON "incidents" USING btree ("status");