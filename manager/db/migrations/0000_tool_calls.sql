CREATE TABLE "tool_calls" (
	"seq" bigint PRIMARY KEY NOT NULL,
	"session_id" text DEFAULT '' NOT NULL,
	"tool_name" text NOT NULL,
	"args_json" jsonb,
	"result_json" jsonb,
	"error" text DEFAULT '' NOT NULL,
	"device_id" text DEFAULT '' NOT NULL,
	"started_at" timestamp (3) with time zone NOT NULL,
	"finished_at" timestamp (3) with time zone NOT NULL,
	"duration_ms" integer DEFAULT 0 NOT NULL,
	"caller_user_id" text,
	"caller_role" text,
	"decision" text,
	"decision_reason" text,
	"approval_id" text DEFAULT '',
	"sop_hash" text DEFAULT '',
	"prev_hash" text NOT NULL,
	"row_hash" text NOT NULL
);
--> statement-breakpoint
CREATE INDEX "tool_calls_started_at_idx" ON "tool_calls" USING btree ("started_at");--> statement-breakpoint
CREATE INDEX "tool_calls_tool_name_idx" ON "tool_calls" USING btree ("tool_name","seq");--> statement-breakpoint
CREATE INDEX "tool_calls_device_id_idx" ON "tool_calls" USING btree ("device_id","seq");--> statement-breakpoint
CREATE INDEX "tool_calls_caller_user_id_idx" ON "tool_calls" USING btree ("caller_user_id","seq");--> statement-breakpoint
CREATE INDEX "tool_calls_session_id_idx" ON "tool_calls" USING btree ("session_id","seq");--> statement-breakpoint
CREATE INDEX "tool_calls_decision_idx" ON "tool_calls" USING btree ("decision","seq");