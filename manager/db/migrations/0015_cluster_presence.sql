CREATE TABLE "cluster_secrets" (
	"name" text PRIMARY KEY NOT NULL,
	"secret" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "edges" ADD COLUMN "skills_digest" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "edges" ADD COLUMN "presence_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "running_manager" text DEFAULT '' NOT NULL;--> statement-breakpoint
CREATE INDEX "edges_presence_at_idx" ON "edges" USING btree ("presence_at");