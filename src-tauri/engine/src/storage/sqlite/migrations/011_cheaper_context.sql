-- Why: the recall context (migrations 9 and 10) made every write to memory_item cost about a
-- third more than before, most of it in work that cannot change anything. The neighbours, the
-- indexed row and what a change re-indexes stay exactly as they were; only the way there is
-- cheaper:
--
-- * A memory without a session has no neighbours and is nobody's neighbour, so writing one
--   indexes just its own row (triggers `lethe_fts_ai_alone`, and in `lethe_fts_au` a plain
--   re-index when the row had and has no session); the notes in `lethe_context_dirty` and the
--   neighbour look-ups are for rows of a session only.
-- * The neighbour look-ups walk the session index from the memory's own time outwards (the time
--   as a range, the tie on rowid beside it) instead of from one end of the session.
-- * The quarantined memories a change may touch are looked for only between the changed
--   memory's neighbours: a quarantined memory whose neighbour it is lies there (no memory out of
--   quarantine lies between them), so the rest of the session is not read.
-- * The session indexes leave out memories without a session, which are never looked up by it.
DROP INDEX IF EXISTS lethe_memory_session_time;
CREATE INDEX IF NOT EXISTS lethe_memory_session_time ON memory_item (session_id, created_at)
    WHERE session_id IS NOT NULL;
DROP INDEX IF EXISTS lethe_memory_session;
CREATE INDEX IF NOT EXISTS lethe_memory_session ON memory_item (session_id, type)
    WHERE session_id IS NOT NULL;

DROP VIEW IF EXISTS lethe_fts_row;
DROP VIEW IF EXISTS lethe_session_context;
CREATE VIEW IF NOT EXISTS lethe_session_context AS
SELECT m.rowid AS memory_rowid,
    (SELECT p.rowid FROM memory_item p
     WHERE p.session_id = m.session_id AND p.created_at <= m.created_at
       AND (p.created_at < m.created_at OR p.rowid < m.rowid)
       AND p.owner_id IS m.owner_id AND p.privacy_scope IS m.privacy_scope
       AND NOT ((typeof(p.is_deleted) IN ('integer', 'real') AND p.is_deleted <> 0)
                OR (typeof(p.is_deleted) = 'text' AND lower(trim(p.is_deleted)) IN ('true', '1', 'yes')))
     ORDER BY p.created_at DESC, p.rowid DESC LIMIT 1) AS before_rowid,
    (SELECT p.rowid FROM memory_item p
     WHERE p.session_id = m.session_id AND p.created_at >= m.created_at
       AND (p.created_at > m.created_at OR p.rowid > m.rowid)
       AND p.owner_id IS m.owner_id AND p.privacy_scope IS m.privacy_scope
       AND NOT ((typeof(p.is_deleted) IN ('integer', 'real') AND p.is_deleted <> 0)
                OR (typeof(p.is_deleted) = 'text' AND lower(trim(p.is_deleted)) IN ('true', '1', 'yes')))
     ORDER BY p.created_at ASC, p.rowid ASC LIMIT 1) AS after_rowid
FROM memory_item m;

CREATE VIEW IF NOT EXISTS lethe_fts_row AS
SELECT m.rowid AS memory_rowid, m.content, m.tags, m.task_goal, m.workflow_name, m.skill_name, m.steps,
    CASE WHEN c.before_rowid IS NULL AND c.after_rowid IS NULL THEN NULL
         ELSE COALESCE((SELECT CAST(b.content AS TEXT) FROM memory_item b WHERE b.rowid = c.before_rowid), '')
              || char(10) ||
              COALESCE((SELECT CAST(a.content AS TEXT) FROM memory_item a WHERE a.rowid = c.after_rowid), '')
    END AS context,
    c.before_rowid, c.after_rowid
FROM memory_item m JOIN lethe_session_context c ON c.memory_rowid = m.rowid;

-- The quarantined memories of a session whose neighbour a memory is: those between its own
-- neighbours (inclusive bounds on the time; the first or last time of the session where it has
-- none), then the exact test on their neighbours.
DROP VIEW IF EXISTS lethe_quarantined_next_to;
CREATE VIEW IF NOT EXISTS lethe_quarantined_next_to AS
SELECT n.memory_rowid AS next_to, q.rowid AS memory_rowid
FROM lethe_session_context n
JOIN memory_item m ON m.rowid = n.memory_rowid
JOIN memory_item q ON q.session_id = m.session_id
    AND q.created_at >= COALESCE((SELECT b.created_at FROM memory_item b WHERE b.rowid = n.before_rowid),
                                 (SELECT MIN(s.created_at) FROM memory_item s WHERE s.session_id = m.session_id))
    AND q.created_at <= COALESCE((SELECT a.created_at FROM memory_item a WHERE a.rowid = n.after_rowid),
                                 (SELECT MAX(s.created_at) FROM memory_item s WHERE s.session_id = m.session_id))
    AND q.owner_id IS m.owner_id AND q.privacy_scope IS m.privacy_scope
    AND ((typeof(q.is_deleted) IN ('integer', 'real') AND q.is_deleted <> 0)
         OR (typeof(q.is_deleted) = 'text' AND lower(trim(q.is_deleted)) IN ('true', '1', 'yes')))
JOIN lethe_session_context c ON c.memory_rowid = q.rowid
WHERE c.before_rowid = n.memory_rowid OR c.after_rowid = n.memory_rowid;

DROP TRIGGER IF EXISTS lethe_fts_ai;
DROP TRIGGER IF EXISTS lethe_fts_ai_alone;
DROP TRIGGER IF EXISTS lethe_fts_bd;
DROP TRIGGER IF EXISTS lethe_fts_bu;
DROP TRIGGER IF EXISTS lethe_fts_au;

CREATE TRIGGER IF NOT EXISTS lethe_fts_ai_alone AFTER INSERT ON memory_item WHEN new.session_id IS NULL BEGIN
    INSERT INTO lethe_fts (rowid, content, tags, task_goal, workflow_name, skill_name, steps, context)
    VALUES (new.rowid, new.content, new.tags, new.task_goal, new.workflow_name, new.skill_name, new.steps, NULL);
END;
CREATE TRIGGER IF NOT EXISTS lethe_fts_ai AFTER INSERT ON memory_item WHEN new.session_id IS NOT NULL BEGIN
    INSERT OR IGNORE INTO lethe_context_dirty (memory_rowid)
        SELECT new.rowid
        UNION SELECT before_rowid FROM lethe_session_context WHERE memory_rowid = new.rowid AND before_rowid IS NOT NULL
        UNION SELECT after_rowid FROM lethe_session_context WHERE memory_rowid = new.rowid AND after_rowid IS NOT NULL
        UNION SELECT memory_rowid FROM lethe_quarantined_next_to WHERE next_to = new.rowid;
    DELETE FROM lethe_fts WHERE rowid IN (SELECT memory_rowid FROM lethe_context_dirty);
    INSERT INTO lethe_fts (rowid, content, tags, task_goal, workflow_name, skill_name, steps, context)
        SELECT memory_rowid, content, tags, task_goal, workflow_name, skill_name, steps, context FROM lethe_fts_row
        WHERE memory_rowid IN (SELECT memory_rowid FROM lethe_context_dirty);
    DELETE FROM lethe_context_dirty;
END;
CREATE TRIGGER IF NOT EXISTS lethe_fts_bd BEFORE DELETE ON memory_item WHEN old.session_id IS NOT NULL BEGIN
    INSERT OR IGNORE INTO lethe_context_dirty (memory_rowid)
        SELECT before_rowid FROM lethe_session_context WHERE memory_rowid = old.rowid AND before_rowid IS NOT NULL
        UNION SELECT after_rowid FROM lethe_session_context WHERE memory_rowid = old.rowid AND after_rowid IS NOT NULL
        UNION SELECT memory_rowid FROM lethe_quarantined_next_to WHERE next_to = old.rowid;
END;
CREATE TRIGGER IF NOT EXISTS lethe_fts_bu BEFORE UPDATE OF content, tags, task_goal, workflow_name, skill_name, steps,
    session_id, owner_id, privacy_scope, is_deleted, created_at ON memory_item WHEN old.session_id IS NOT NULL BEGIN
    INSERT OR IGNORE INTO lethe_context_dirty (memory_rowid)
        SELECT before_rowid FROM lethe_session_context WHERE memory_rowid = old.rowid AND before_rowid IS NOT NULL
        UNION SELECT after_rowid FROM lethe_session_context WHERE memory_rowid = old.rowid AND after_rowid IS NOT NULL
        UNION SELECT memory_rowid FROM lethe_quarantined_next_to WHERE next_to = old.rowid;
END;
CREATE TRIGGER IF NOT EXISTS lethe_fts_au AFTER UPDATE OF content, tags, task_goal, workflow_name, skill_name, steps,
    session_id, owner_id, privacy_scope, is_deleted, created_at ON memory_item BEGIN
    INSERT OR IGNORE INTO lethe_context_dirty (memory_rowid)
        SELECT new.rowid WHERE new.session_id IS NOT NULL
        UNION SELECT before_rowid FROM lethe_session_context
            WHERE new.session_id IS NOT NULL AND memory_rowid = new.rowid AND before_rowid IS NOT NULL
        UNION SELECT after_rowid FROM lethe_session_context
            WHERE new.session_id IS NOT NULL AND memory_rowid = new.rowid AND after_rowid IS NOT NULL
        UNION SELECT memory_rowid FROM lethe_quarantined_next_to WHERE new.session_id IS NOT NULL AND next_to = new.rowid;
    DELETE FROM lethe_fts WHERE rowid = old.rowid;
    INSERT INTO lethe_fts (rowid, content, tags, task_goal, workflow_name, skill_name, steps, context)
        SELECT new.rowid, new.content, new.tags, new.task_goal, new.workflow_name, new.skill_name, new.steps, NULL
        WHERE new.session_id IS NULL;
    DELETE FROM lethe_fts WHERE rowid IN (SELECT memory_rowid FROM lethe_context_dirty);
    INSERT INTO lethe_fts (rowid, content, tags, task_goal, workflow_name, skill_name, steps, context)
        SELECT memory_rowid, content, tags, task_goal, workflow_name, skill_name, steps, context FROM lethe_fts_row
        WHERE memory_rowid IN (SELECT memory_rowid FROM lethe_context_dirty);
    DELETE FROM lethe_context_dirty;
END;
