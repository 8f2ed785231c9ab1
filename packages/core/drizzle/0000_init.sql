CREATE TABLE `messages` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`session_id` text NOT NULL,
	`turn_id` text,
	`role` text NOT NULL,
	`content` text DEFAULT '' NOT NULL,
	`content_parts` text,
	`tool_calls` text,
	`tool_call_id` text,
	`tool_name` text,
	`reasoning` text,
	`provider_metadata` text,
	`timestamp` integer NOT NULL,
	`token_count` integer,
	`finish_reason` text,
	`active` integer DEFAULT true NOT NULL,
	`compacted` integer DEFAULT false NOT NULL,
	`superseded_by` integer,
	`display_kind` text,
	`display_metadata` text,
	FOREIGN KEY (`session_id`) REFERENCES `sessions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `messages_session_active_id_idx` ON `messages` (`session_id`,`active`,`id`);--> statement-breakpoint
CREATE INDEX `messages_tool_call_id_idx` ON `messages` (`tool_call_id`);--> statement-breakpoint
CREATE TABLE `responses` (
	`id` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`previous_response_id` text,
	`conversation` text,
	`model` text NOT NULL,
	`status` text NOT NULL,
	`request` text NOT NULL,
	`output` text,
	`usage` text,
	`error` text,
	`first_row_id` integer,
	`last_row_id` integer,
	`created_at` integer NOT NULL,
	`completed_at` integer,
	FOREIGN KEY (`session_id`) REFERENCES `sessions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `responses_conversation_created_at_idx` ON `responses` (`conversation`,`created_at`);--> statement-breakpoint
CREATE INDEX `responses_session_id_idx` ON `responses` (`session_id`);--> statement-breakpoint
CREATE TABLE `runs` (
	`id` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`turn_id` text,
	`status` text NOT NULL,
	`idempotency_key` text,
	`holder` text NOT NULL,
	`input` text NOT NULL,
	`result` text,
	`exit_reason` text,
	`error` text,
	`created_at` integer NOT NULL,
	`started_at` integer,
	`ended_at` integer,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`session_id`) REFERENCES `sessions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `runs_idempotency_key_unique` ON `runs` (`idempotency_key`);--> statement-breakpoint
CREATE INDEX `runs_session_created_at_idx` ON `runs` (`session_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`source` text DEFAULT 'library' NOT NULL,
	`kind` text DEFAULT 'root' NOT NULL,
	`title` text,
	`title_source` text,
	`parent_session_id` text,
	`model` text,
	`model_config` text DEFAULT '{}' NOT NULL,
	`system_prompt` text,
	`cwd` text,
	`started_at` integer NOT NULL,
	`last_activity_at` integer NOT NULL,
	`ended_at` integer,
	`end_reason` text,
	`message_count` integer DEFAULT 0 NOT NULL,
	`tool_call_count` integer DEFAULT 0 NOT NULL,
	`api_call_count` integer DEFAULT 0 NOT NULL,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	`cache_read_tokens` integer DEFAULT 0 NOT NULL,
	`cache_write_tokens` integer DEFAULT 0 NOT NULL,
	`reasoning_tokens` integer DEFAULT 0 NOT NULL,
	`estimated_cost_usd` real DEFAULT 0 NOT NULL,
	`cost_status` text DEFAULT 'unknown' NOT NULL,
	`rewind_count` integer DEFAULT 0 NOT NULL,
	`hidden` integer DEFAULT false NOT NULL,
	FOREIGN KEY (`parent_session_id`) REFERENCES `sessions`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sessions_title_nocase_unique` ON `sessions` ("title" COLLATE NOCASE);--> statement-breakpoint
CREATE INDEX `sessions_last_activity_at_idx` ON `sessions` (`last_activity_at`);--> statement-breakpoint
CREATE INDEX `sessions_parent_session_id_idx` ON `sessions` (`parent_session_id`);--> statement-breakpoint
CREATE INDEX `sessions_source_idx` ON `sessions` (`source`);--> statement-breakpoint
CREATE TABLE `turn_leases` (
	`session_id` text PRIMARY KEY NOT NULL,
	`holder` text NOT NULL,
	`turn_id` text NOT NULL,
	`acquired_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	FOREIGN KEY (`session_id`) REFERENCES `sessions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `usage_by_model` (
	`session_id` text NOT NULL,
	`provider` text NOT NULL,
	`model` text NOT NULL,
	`task` text NOT NULL,
	`api_calls` integer DEFAULT 0 NOT NULL,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	`cache_read_tokens` integer DEFAULT 0 NOT NULL,
	`cache_write_tokens` integer DEFAULT 0 NOT NULL,
	`reasoning_tokens` integer DEFAULT 0 NOT NULL,
	`cost_usd` real DEFAULT 0 NOT NULL,
	`cost_status` text DEFAULT 'unknown' NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`session_id`, `provider`, `model`, `task`),
	FOREIGN KEY (`session_id`) REFERENCES `sessions`(`id`) ON UPDATE no action ON DELETE cascade
);
