CREATE TABLE "messages" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "messages_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"session_id" text NOT NULL,
	"turn_id" text,
	"role" text NOT NULL,
	"content" text DEFAULT '' NOT NULL,
	"content_parts" jsonb,
	"tool_calls" jsonb,
	"tool_call_id" text,
	"tool_name" text,
	"reasoning" text,
	"provider_metadata" jsonb,
	"timestamp" bigint NOT NULL,
	"token_count" integer,
	"finish_reason" text,
	"active" boolean DEFAULT true NOT NULL,
	"compacted" boolean DEFAULT false NOT NULL,
	"superseded_by" bigint,
	"display_kind" text,
	"display_metadata" jsonb,
	"search_vector" "tsvector"
);
--> statement-breakpoint
CREATE TABLE "responses" (
	"id" text PRIMARY KEY NOT NULL,
	"session_id" text NOT NULL,
	"previous_response_id" text,
	"conversation" text,
	"model" text NOT NULL,
	"status" text NOT NULL,
	"request" jsonb NOT NULL,
	"output" jsonb,
	"usage" jsonb,
	"error" jsonb,
	"first_row_id" bigint,
	"last_row_id" bigint,
	"created_at" bigint NOT NULL,
	"completed_at" bigint
);
--> statement-breakpoint
CREATE TABLE "runs" (
	"id" text PRIMARY KEY NOT NULL,
	"session_id" text NOT NULL,
	"turn_id" text,
	"status" text NOT NULL,
	"idempotency_key" text,
	"holder" text NOT NULL,
	"input" jsonb NOT NULL,
	"result" jsonb,
	"exit_reason" text,
	"error" jsonb,
	"created_at" bigint NOT NULL,
	"started_at" bigint,
	"ended_at" bigint,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"source" text DEFAULT 'library' NOT NULL,
	"kind" text DEFAULT 'root' NOT NULL,
	"title" text,
	"title_source" text,
	"parent_session_id" text,
	"model" text,
	"model_config" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"system_prompt" text,
	"cwd" text,
	"started_at" bigint NOT NULL,
	"last_activity_at" bigint NOT NULL,
	"ended_at" bigint,
	"end_reason" text,
	"message_count" integer DEFAULT 0 NOT NULL,
	"tool_call_count" integer DEFAULT 0 NOT NULL,
	"api_call_count" integer DEFAULT 0 NOT NULL,
	"input_tokens" bigint DEFAULT 0 NOT NULL,
	"output_tokens" bigint DEFAULT 0 NOT NULL,
	"cache_read_tokens" bigint DEFAULT 0 NOT NULL,
	"cache_write_tokens" bigint DEFAULT 0 NOT NULL,
	"reasoning_tokens" bigint DEFAULT 0 NOT NULL,
	"estimated_cost_usd" double precision DEFAULT 0 NOT NULL,
	"cost_status" text DEFAULT 'unknown' NOT NULL,
	"rewind_count" integer DEFAULT 0 NOT NULL,
	"hidden" boolean DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE TABLE "turn_leases" (
	"session_id" text PRIMARY KEY NOT NULL,
	"holder" text NOT NULL,
	"turn_id" text NOT NULL,
	"acquired_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "usage_by_model" (
	"session_id" text NOT NULL,
	"provider" text NOT NULL,
	"model" text NOT NULL,
	"task" text NOT NULL,
	"api_calls" integer DEFAULT 0 NOT NULL,
	"input_tokens" bigint DEFAULT 0 NOT NULL,
	"output_tokens" bigint DEFAULT 0 NOT NULL,
	"cache_read_tokens" bigint DEFAULT 0 NOT NULL,
	"cache_write_tokens" bigint DEFAULT 0 NOT NULL,
	"reasoning_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_usd" double precision DEFAULT 0 NOT NULL,
	"cost_status" text DEFAULT 'unknown' NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "usage_by_model_session_id_provider_model_task_pk" PRIMARY KEY("session_id","provider","model","task")
);
--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "responses" ADD CONSTRAINT "responses_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "runs" ADD CONSTRAINT "runs_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_parent_session_id_sessions_id_fk" FOREIGN KEY ("parent_session_id") REFERENCES "public"."sessions"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "turn_leases" ADD CONSTRAINT "turn_leases_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "usage_by_model" ADD CONSTRAINT "usage_by_model_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "messages_session_active_id_idx" ON "messages" USING btree ("session_id","active","id");--> statement-breakpoint
CREATE INDEX "messages_tool_call_id_idx" ON "messages" USING btree ("tool_call_id");--> statement-breakpoint
CREATE INDEX "messages_search_vector_idx" ON "messages" USING gin ("search_vector");--> statement-breakpoint
CREATE INDEX "responses_conversation_created_at_idx" ON "responses" USING btree ("conversation","created_at");--> statement-breakpoint
CREATE INDEX "responses_session_id_idx" ON "responses" USING btree ("session_id");--> statement-breakpoint
CREATE UNIQUE INDEX "runs_idempotency_key_unique" ON "runs" USING btree ("idempotency_key");--> statement-breakpoint
CREATE INDEX "runs_session_created_at_idx" ON "runs" USING btree ("session_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "sessions_title_lower_unique" ON "sessions" USING btree (lower("title"));--> statement-breakpoint
CREATE INDEX "sessions_last_activity_at_idx" ON "sessions" USING btree ("last_activity_at");--> statement-breakpoint
CREATE INDEX "sessions_parent_session_id_idx" ON "sessions" USING btree ("parent_session_id");--> statement-breakpoint
CREATE INDEX "sessions_source_idx" ON "sessions" USING btree ("source");