-- Why: scoring reads every memory's stored neighbours (lethe_neighbour) and signature
-- (lethe_signature). Until now each read compared a list's content hash with the signature's,
-- row by row, and a change of content by another program (memento, sqlite3) left a stale
-- signature behind. Now any change of content drops both, in the writer's own statement:
-- Lethe's writers store the new signature right after, and the next read searches the new
-- neighbours. So a list that exists is the list of the content as it is.
CREATE TRIGGER IF NOT EXISTS lethe_derived_au AFTER UPDATE OF content ON memory_item
WHEN old.content IS NOT new.content BEGIN
    DELETE FROM lethe_neighbour WHERE memory_rowid = old.rowid;
    DELETE FROM lethe_signature WHERE memory_id = old.id;
END;
-- Lists stored before this trigger existed are kept only where they match their signature.
DELETE FROM lethe_neighbour WHERE hash IS NOT (
    SELECT s.content_hash FROM memory_item m JOIN lethe_signature s ON s.memory_id = m.id
    WHERE m.rowid = lethe_neighbour.memory_rowid
);
