-- Why: recall finds the evidence more often when a memory's recall document also holds the
-- text of its session neighbours (in a conversation the words that answer a question are often
-- in the turn next to the one that holds the fact). Each memory of a session gets a `context`
-- column in Lethe's stemmed index: the content of the memory of the same session, owner and
-- privacy scope written just before it and of the one written just after it, leaving out
-- memories in quarantine. Memories without a session have none. Recall weights the column
-- below the memory's own text.
--
-- The neighbours are defined once, in the view `lethe_session_context`; `lethe_fts_row` is the
-- row the index holds for a memory (Lethe's in-memory copy of the index reads the same view).
-- The index keeps its own copy of the text (no external content): a neighbour's context
-- changes when another row changes, and FTS5 can then drop the old entry by rowid alone.
-- Triggers keep it true in the writer's own transaction, whoever writes: before a change the
-- memory's old neighbours are noted in `lethe_context_dirty`, after it its new ones, and every
-- noted row is indexed again.
CREATE INDEX IF NOT EXISTS lethe_memory_session_time ON memory_item (session_id, created_at);

CREATE VIEW IF NOT EXISTS lethe_session_context AS
SELECT m.rowid AS memory_rowid,
    (SELECT p.rowid FROM memory_item p
     WHERE p.session_id = m.session_id AND p.owner_id IS m.owner_id AND p.privacy_scope IS m.privacy_scope
       AND p.rowid <> m.rowid AND (p.created_at < m.created_at OR (p.created_at = m.created_at AND p.rowid < m.rowid))
       AND NOT ((typeof(p.is_deleted) IN ('integer', 'real') AND p.is_deleted <> 0)
                OR (typeof(p.is_deleted) = 'text' AND lower(trim(p.is_deleted)) IN ('true', '1', 'yes')))
     ORDER BY p.created_at DESC, p.rowid DESC LIMIT 1) AS before_rowid,
    (SELECT p.rowid FROM memory_item p
     WHERE p.session_id = m.session_id AND p.owner_id IS m.owner_id AND p.privacy_scope IS m.privacy_scope
       AND p.rowid <> m.rowid AND (p.created_at > m.created_at OR (p.created_at = m.created_at AND p.rowid > m.rowid))
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

CREATE TABLE IF NOT EXISTS lethe_context_dirty (memory_rowid INTEGER PRIMARY KEY);

DROP TRIGGER IF EXISTS lethe_fts_ai;
DROP TRIGGER IF EXISTS lethe_fts_ad;
DROP TRIGGER IF EXISTS lethe_fts_au;
DROP TABLE IF EXISTS lethe_fts;
CREATE VIRTUAL TABLE lethe_fts USING fts5(
    content, tags, task_goal, workflow_name, skill_name, steps, context,
    tokenize = 'porter unicode61'
);
INSERT INTO lethe_fts (rowid, content, tags, task_goal, workflow_name, skill_name, steps, context)
    SELECT memory_rowid, content, tags, task_goal, workflow_name, skill_name, steps, context FROM lethe_fts_row;

CREATE TRIGGER IF NOT EXISTS lethe_fts_ai AFTER INSERT ON memory_item BEGIN
    INSERT OR IGNORE INTO lethe_context_dirty (memory_rowid)
        SELECT new.rowid
        UNION SELECT before_rowid FROM lethe_session_context WHERE memory_rowid = new.rowid AND before_rowid IS NOT NULL
        UNION SELECT after_rowid FROM lethe_session_context WHERE memory_rowid = new.rowid AND after_rowid IS NOT NULL;
    DELETE FROM lethe_fts WHERE rowid IN (SELECT memory_rowid FROM lethe_context_dirty);
    INSERT INTO lethe_fts (rowid, content, tags, task_goal, workflow_name, skill_name, steps, context)
        SELECT memory_rowid, content, tags, task_goal, workflow_name, skill_name, steps, context FROM lethe_fts_row
        WHERE memory_rowid IN (SELECT memory_rowid FROM lethe_context_dirty);
    DELETE FROM lethe_context_dirty;
END;
CREATE TRIGGER IF NOT EXISTS lethe_fts_bd BEFORE DELETE ON memory_item BEGIN
    INSERT OR IGNORE INTO lethe_context_dirty (memory_rowid)
        SELECT before_rowid FROM lethe_session_context WHERE memory_rowid = old.rowid AND before_rowid IS NOT NULL
        UNION SELECT after_rowid FROM lethe_session_context WHERE memory_rowid = old.rowid AND after_rowid IS NOT NULL;
END;
CREATE TRIGGER IF NOT EXISTS lethe_fts_ad AFTER DELETE ON memory_item BEGIN
    DELETE FROM lethe_fts WHERE rowid = old.rowid;
    DELETE FROM lethe_fts WHERE rowid IN (SELECT memory_rowid FROM lethe_context_dirty);
    INSERT INTO lethe_fts (rowid, content, tags, task_goal, workflow_name, skill_name, steps, context)
        SELECT memory_rowid, content, tags, task_goal, workflow_name, skill_name, steps, context FROM lethe_fts_row
        WHERE memory_rowid IN (SELECT memory_rowid FROM lethe_context_dirty);
    DELETE FROM lethe_context_dirty;
END;
CREATE TRIGGER IF NOT EXISTS lethe_fts_bu BEFORE UPDATE OF content, tags, task_goal, workflow_name, skill_name, steps,
    session_id, owner_id, privacy_scope, is_deleted, created_at ON memory_item BEGIN
    INSERT OR IGNORE INTO lethe_context_dirty (memory_rowid)
        SELECT before_rowid FROM lethe_session_context WHERE memory_rowid = old.rowid AND before_rowid IS NOT NULL
        UNION SELECT after_rowid FROM lethe_session_context WHERE memory_rowid = old.rowid AND after_rowid IS NOT NULL;
END;
CREATE TRIGGER IF NOT EXISTS lethe_fts_au AFTER UPDATE OF content, tags, task_goal, workflow_name, skill_name, steps,
    session_id, owner_id, privacy_scope, is_deleted, created_at ON memory_item BEGIN
    INSERT OR IGNORE INTO lethe_context_dirty (memory_rowid)
        SELECT new.rowid
        UNION SELECT before_rowid FROM lethe_session_context WHERE memory_rowid = new.rowid AND before_rowid IS NOT NULL
        UNION SELECT after_rowid FROM lethe_session_context WHERE memory_rowid = new.rowid AND after_rowid IS NOT NULL;
    DELETE FROM lethe_fts WHERE rowid = old.rowid;
    DELETE FROM lethe_fts WHERE rowid IN (SELECT memory_rowid FROM lethe_context_dirty);
    INSERT INTO lethe_fts (rowid, content, tags, task_goal, workflow_name, skill_name, steps, context)
        SELECT memory_rowid, content, tags, task_goal, workflow_name, skill_name, steps, context FROM lethe_fts_row
        WHERE memory_rowid IN (SELECT memory_rowid FROM lethe_context_dirty);
    DELETE FROM lethe_context_dirty;
END;
