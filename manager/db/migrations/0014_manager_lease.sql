CREATE TABLE "managers" (
	"id" text PRIMARY KEY NOT NULL,
	"advertise_url" text DEFAULT '' NOT NULL,
	"hostname" text DEFAULT '' NOT NULL,
	"version" text DEFAULT '' NOT NULL,
	"started_at" timestamp (3) with time zone NOT NULL,
	"renewed_at" timestamp (3) with time zone NOT NULL,
	"lease_until" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "managers_lease_until_idx" ON "managers" USING btree ("lease_until");