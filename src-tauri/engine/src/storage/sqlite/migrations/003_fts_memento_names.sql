-- Why: memento names its FTS triggers memory_item_fts_insert/_delete/_update and creates them
-- with IF NOT EXISTS; under Lethe's 001 names (_ai/_ad/_au) memento opening a file whose index
-- Lethe built would add its triggers next to Lethe's and index every row twice. Same bodies,
-- memento's names. Run only when Lethe's triggers exist (an index Lethe built).
DROP TRIGGER IF EXISTS memory_item_fts_ai;
DROP TRIGGER IF EXISTS memory_item_fts_ad;
DROP TRIGGER IF EXISTS memory_item_fts_au;
CREATE TRIGGER IF NOT EXISTS memory_item_fts_insert AFTER INSERT ON memory_item BEGIN
    INSERT INTO memory_item_fts (rowid, content, tags, source, reflection_notes)
    VALUES (new.rowid, new.content, new.tags, new.source, normalize_reflection_notes(new.reflection_notes));
END;
CREATE TRIGGER IF NOT EXISTS memory_item_fts_delete AFTER DELETE ON memory_item BEGIN
    INSERT INTO memory_item_fts (memory_item_fts, rowid, content, tags, source, reflection_notes)
    VALUES ('delete', old.rowid, old.content, old.tags, old.source, normalize_reflection_notes(old.reflection_notes));
END;
CREATE TRIGGER IF NOT EXISTS memory_item_fts_update AFTER UPDATE OF content, tags, source, reflection_notes ON memory_item BEGIN
    INSERT INTO memory_item_fts (memory_item_fts, rowid, content, tags, source, reflection_notes)
    VALUES ('delete', old.rowid, old.content, old.tags, old.source, normalize_reflection_notes(old.reflection_notes));
    INSERT INTO memory_item_fts (rowid, content, tags, source, reflection_notes)
    VALUES (new.rowid, new.content, new.tags, new.source, normalize_reflection_notes(new.reflection_notes));
END;
-- The reflection-notes normalisation now matches memento's (store::normalize_reflection_notes),
-- so the index is rebuilt with it: FTS5's 'delete' must be given the tokens that were indexed.
-- ('rebuild' would read the raw JSON column, not the normalised text.)
INSERT INTO memory_item_fts (memory_item_fts) VALUES ('delete-all');
INSERT INTO memory_item_fts (rowid, content, tags, source, reflection_notes)
    SELECT rowid, content, tags, source, normalize_reflection_notes(reflection_notes) FROM memory_item;
