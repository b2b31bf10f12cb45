CREATE TABLE "topology_graphs" (
	"id" text PRIMARY KEY NOT NULL,
	"built_at" timestamp (3) with time zone NOT NULL,
	"graph" jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "topology_observations" (
	"edge_id" text PRIMARY KEY NOT NULL,
	"collected_at" timestamp (3) with time zone,
	"sockets" jsonb,
	"last_error" text DEFAULT '' NOT NULL,
	"last_attempt_at" timestamp (3) with time zone NOT NULL
);
