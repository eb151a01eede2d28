-- Why: full-text recall. Same shape as memento's index (external content over content, tags,
-- source and normalised reflection notes, kept in sync by triggers) so that memento and Lethe
-- can both write a file. Only created when the file has no such index yet.
CREATE VIRTUAL TABLE memory_item_fts USING fts5(
    content, tags, source, reflection_notes,
    content = 'memory_item', content_rowid = 'rowid'
);
INSERT INTO memory_item_fts (rowid, content, tags, source, reflection_notes)
    SELECT rowid, content, tags, source, normalize_reflection_notes(reflection_notes) FROM memory_item;
CREATE TRIGGER memory_item_fts_ai AFTER INSERT ON memory_item BEGIN
    INSERT INTO memory_item_fts (rowid, content, tags, source, reflection_notes)
    VALUES (new.rowid, new.content, new.tags, new.source, normalize_reflection_notes(new.reflection_notes));
END;
CREATE TRIGGER memory_item_fts_ad AFTER DELETE ON memory_item BEGIN
    INSERT INTO memory_item_fts (memory_item_fts, rowid, content, tags, source, reflection_notes)
    VALUES ('delete', old.rowid, old.content, old.tags, old.source, normalize_reflection_notes(old.reflection_notes));
END;
CREATE TRIGGER memory_item_fts_au AFTER UPDATE OF content, tags, source, reflection_notes ON memory_item BEGIN
    INSERT INTO memory_item_fts (memory_item_fts, rowid, content, tags, source, reflection_notes)
    VALUES ('delete', old.rowid, old.content, old.tags, old.source, normalize_reflection_notes(old.reflection_notes));
    INSERT INTO memory_item_fts (rowid, content, tags, source, reflection_notes)
    VALUES (new.rowid, new.content, new.tags, new.source, normalize_reflection_notes(new.reflection_notes));
END;
