-- Full-text index of messages (spec/core.md §9.2.3). Hand-written: drizzle does not model FTS5.
-- Self-contained (not external content): it keeps its own copy of the indexed text, which differs
-- from the row (tool call names and arguments added, tool output cut to 8,000 characters).
-- Inactive rows stay indexed so compacted history remains searchable; search filters superseded rows.
CREATE VIRTUAL TABLE `messages_fts` USING fts5(
	`text`,
	`tool_name`,
	tokenize = 'unicode61 remove_diacritics 2'
);
--> statement-breakpoint
CREATE TRIGGER `messages_fts_after_insert` AFTER INSERT ON `messages` BEGIN
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
--> statement-breakpoint
CREATE TRIGGER `messages_fts_after_update` AFTER UPDATE OF `content`, `tool_calls`, `tool_name`, `role` ON `messages` BEGIN
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
--> statement-breakpoint
CREATE TRIGGER `messages_fts_after_delete` AFTER DELETE ON `messages` BEGIN
	DELETE FROM `messages_fts` WHERE rowid = old.`id`;
END;
