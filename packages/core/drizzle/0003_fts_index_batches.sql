-- The full-text index is written in batches (ADR 0060): an FTS5 table writes a new segment at every
-- commit that changed it, which cost more than the rest of a turn's append. New rows are no longer
-- indexed by a trigger; `messages_fts_indexed` holds the highest row id indexed so far, and the store
-- indexes every row above it (with the text expression the insert trigger had) when a batch has
-- gathered, and before every search, in a write transaction, so a search still finds every committed
-- row. Row ids only grow (AUTOINCREMENT, one writer at a time), so "above the mark" is exactly the
-- rows not yet indexed. The mark is part of the database: a crash loses no index entry, and any
-- process's store indexes what another left behind.
CREATE TABLE `messages_fts_indexed` (
	`id` integer PRIMARY KEY NOT NULL CHECK (`id` = 1),
	`last_row_id` integer NOT NULL
);
--> statement-breakpoint
INSERT INTO `messages_fts_indexed` (`id`, `last_row_id`) VALUES (1, coalesce((SELECT max(`id`) FROM `messages`), 0));
--> statement-breakpoint
DROP TRIGGER `messages_fts_after_insert`;
--> statement-breakpoint
DROP TRIGGER `messages_fts_after_update`;
--> statement-breakpoint
-- Rows above the mark are indexed from their current columns when their batch is; only indexed rows
-- are re-indexed here.
CREATE TRIGGER `messages_fts_after_update` AFTER UPDATE OF `content`, `tool_calls`, `tool_name`, `role` ON `messages`
WHEN old.`id` <= (SELECT `last_row_id` FROM `messages_fts_indexed`) BEGIN
	DELETE FROM `messages_fts` WHERE rowid = old.`id`;
	INSERT INTO `messages_fts` (rowid, `text`, `tool_name`) VALUES (
		new.`id`,
		CASE WHEN new.`role` = 'tool' THEN substr(new.`content`, 1, 8000) ELSE new.`content` END
			|| CASE WHEN json_valid(new.`tool_calls`) THEN coalesce((
				SELECT ' ' || group_concat(coalesce(json_extract(value, '$.name'), '') || ' ' || coalesce(json_extract(value, '$.arguments'), ''), ' ')
				FROM json_each(new.`tool_calls`)
			), '') ELSE '' END,
		coalesce(new.`tool_name`, CASE WHEN json_valid(new.`tool_calls`) THEN (
			SELECT group_concat(json_extract(value, '$.name'), ' ') FROM json_each(new.`tool_calls`)
		) END)
	);
END;
