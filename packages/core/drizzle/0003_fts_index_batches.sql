-- The full-text index is written in batches (ADR 0060): an FTS5 table writes a new segment at every
-- commit that changed it, which cost more than the rest of a turn's append. The triggers now queue the
-- ids of rows to index in `messages_fts_pending`; the store indexes the queue (the text expression
-- that was in the insert trigger) when it holds a batch, and before every search, in a write
-- transaction, so a search still finds every committed row. The queue is part of the database: a
-- crash loses no index entry, and any process's store indexes what another left queued.
CREATE TABLE `messages_fts_pending` (
	`id` integer PRIMARY KEY NOT NULL
);
--> statement-breakpoint
DROP TRIGGER `messages_fts_after_insert`;
--> statement-breakpoint
CREATE TRIGGER `messages_fts_after_insert` AFTER INSERT ON `messages` BEGIN
	INSERT INTO `messages_fts_pending` (`id`) VALUES (new.`id`);
END;
--> statement-breakpoint
DROP TRIGGER `messages_fts_after_update`;
--> statement-breakpoint
CREATE TRIGGER `messages_fts_after_update` AFTER UPDATE OF `content`, `tool_calls`, `tool_name`, `role` ON `messages` BEGIN
	DELETE FROM `messages_fts` WHERE rowid = old.`id`;
	INSERT OR IGNORE INTO `messages_fts_pending` (`id`) VALUES (new.`id`);
END;
--> statement-breakpoint
DROP TRIGGER `messages_fts_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `messages_fts_after_delete` AFTER DELETE ON `messages` BEGIN
	DELETE FROM `messages_fts` WHERE rowid = old.`id`;
	DELETE FROM `messages_fts_pending` WHERE `id` = old.`id`;
END;
