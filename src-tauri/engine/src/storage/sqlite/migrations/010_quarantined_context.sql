-- Why: a memory in quarantine keeps a recall context too (its nearest neighbours that are not
-- in quarantine), so that a restore finds it as it was. Until now a change to a memory re-indexed
-- only its own neighbours, which skip quarantined memories: a quarantined memory next to a memory
-- deleted for ever, edited or redacted kept the old text in its context. Every trigger now also
-- indexes again the quarantined memories of the same session, owner and privacy scope whose
-- neighbour the changed memory is (before the change and after it).
DROP TRIGGER IF EXISTS lethe_fts_ai;
DROP TRIGGER IF EXISTS lethe_fts_bd;
DROP TRIGGER IF EXISTS lethe_fts_ad;
DROP TRIGGER IF EXISTS lethe_fts_bu;
DROP TRIGGER IF EXISTS lethe_fts_au;

CREATE TRIGGER IF NOT EXISTS lethe_fts_ai AFTER INSERT ON memory_item BEGIN
    INSERT OR IGNORE INTO lethe_context_dirty (memory_rowid)
        SELECT new.rowid
        UNION SELECT before_rowid FROM lethe_session_context WHERE memory_rowid = new.rowid AND before_rowid IS NOT NULL
        UNION SELECT after_rowid FROM lethe_session_context WHERE memory_rowid = new.rowid AND after_rowid IS NOT NULL
        UNION SELECT c.memory_rowid FROM memory_item q JOIN lethe_session_context c ON c.memory_rowid = q.rowid
            WHERE q.session_id = new.session_id AND q.owner_id IS new.owner_id AND q.privacy_scope IS new.privacy_scope
              AND ((typeof(q.is_deleted) IN ('integer', 'real') AND q.is_deleted <> 0)
                 OR (typeof(q.is_deleted) = 'text' AND lower(trim(q.is_deleted)) IN ('true', '1', 'yes')))
              AND (c.before_rowid = new.rowid OR c.after_rowid = new.rowid);
    DELETE FROM lethe_fts WHERE rowid IN (SELECT memory_rowid FROM lethe_context_dirty);
    INSERT INTO lethe_fts (rowid, content, tags, task_goal, workflow_name, skill_name, steps, context)
        SELECT memory_rowid, content, tags, task_goal, workflow_name, skill_name, steps, context FROM lethe_fts_row
        WHERE memory_rowid IN (SELECT memory_rowid FROM lethe_context_dirty);
    DELETE FROM lethe_context_dirty;
END;
CREATE TRIGGER IF NOT EXISTS lethe_fts_bd BEFORE DELETE ON memory_item BEGIN
    INSERT OR IGNORE INTO lethe_context_dirty (memory_rowid)
        SELECT before_rowid FROM lethe_session_context WHERE memory_rowid = old.rowid AND before_rowid IS NOT NULL
        UNION SELECT after_rowid FROM lethe_session_context WHERE memory_rowid = old.rowid AND after_rowid IS NOT NULL
        UNION SELECT c.memory_rowid FROM memory_item q JOIN lethe_session_context c ON c.memory_rowid = q.rowid
            WHERE q.session_id = old.session_id AND q.owner_id IS old.owner_id AND q.privacy_scope IS old.privacy_scope
              AND ((typeof(q.is_deleted) IN ('integer', 'real') AND q.is_deleted <> 0)
                 OR (typeof(q.is_deleted) = 'text' AND lower(trim(q.is_deleted)) IN ('true', '1', 'yes')))
              AND (c.before_rowid = old.rowid OR c.after_rowid = old.rowid);
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
        UNION SELECT after_rowid FROM lethe_session_context WHERE memory_rowid = old.rowid AND after_rowid IS NOT NULL
        UNION SELECT c.memory_rowid FROM memory_item q JOIN lethe_session_context c ON c.memory_rowid = q.rowid
            WHERE q.session_id = old.session_id AND q.owner_id IS old.owner_id AND q.privacy_scope IS old.privacy_scope
              AND ((typeof(q.is_deleted) IN ('integer', 'real') AND q.is_deleted <> 0)
                 OR (typeof(q.is_deleted) = 'text' AND lower(trim(q.is_deleted)) IN ('true', '1', 'yes')))
              AND (c.before_rowid = old.rowid OR c.after_rowid = old.rowid);
END;
CREATE TRIGGER IF NOT EXISTS lethe_fts_au AFTER UPDATE OF content, tags, task_goal, workflow_name, skill_name, steps,
    session_id, owner_id, privacy_scope, is_deleted, created_at ON memory_item BEGIN
    INSERT OR IGNORE INTO lethe_context_dirty (memory_rowid)
        SELECT new.rowid
        UNION SELECT before_rowid FROM lethe_session_context WHERE memory_rowid = new.rowid AND before_rowid IS NOT NULL
        UNION SELECT after_rowid FROM lethe_session_context WHERE memory_rowid = new.rowid AND after_rowid IS NOT NULL
        UNION SELECT c.memory_rowid FROM memory_item q JOIN lethe_session_context c ON c.memory_rowid = q.rowid
            WHERE q.session_id = new.session_id AND q.owner_id IS new.owner_id AND q.privacy_scope IS new.privacy_scope
              AND ((typeof(q.is_deleted) IN ('integer', 'real') AND q.is_deleted <> 0)
                 OR (typeof(q.is_deleted) = 'text' AND lower(trim(q.is_deleted)) IN ('true', '1', 'yes')))
              AND (c.before_rowid = new.rowid OR c.after_rowid = new.rowid);
    DELETE FROM lethe_fts WHERE rowid = old.rowid;
    DELETE FROM lethe_fts WHERE rowid IN (SELECT memory_rowid FROM lethe_context_dirty);
    INSERT INTO lethe_fts (rowid, content, tags, task_goal, workflow_name, skill_name, steps, context)
        SELECT memory_rowid, content, tags, task_goal, workflow_name, skill_name, steps, context FROM lethe_fts_row
        WHERE memory_rowid IN (SELECT memory_rowid FROM lethe_context_dirty);
    DELETE FROM lethe_context_dirty;
END;

-- Quarantined memories indexed with a context that may be stale are indexed again once.
INSERT OR IGNORE INTO lethe_context_dirty (memory_rowid)
    SELECT q.rowid FROM memory_item q
    WHERE q.session_id IS NOT NULL
      AND ((typeof(q.is_deleted) IN ('integer', 'real') AND q.is_deleted <> 0)
           OR (typeof(q.is_deleted) = 'text' AND lower(trim(q.is_deleted)) IN ('true', '1', 'yes')));
DELETE FROM lethe_fts WHERE rowid IN (SELECT memory_rowid FROM lethe_context_dirty);
INSERT INTO lethe_fts (rowid, content, tags, task_goal, workflow_name, skill_name, steps, context)
    SELECT memory_rowid, content, tags, task_goal, workflow_name, skill_name, steps, context FROM lethe_fts_row
    WHERE memory_rowid IN (SELECT memory_rowid FROM lethe_context_dirty);
DELETE FROM lethe_context_dirty;
