ALTER TABLE "edges" ADD COLUMN "reported_labels" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
UPDATE "edges" SET "reported_labels" = "labels";
