-- A memory's session neighbours as recall context, on the team store as in a file (SQLite's
-- migration 9): recall finds the evidence more often when a memory's recall document also
-- holds the text of the memories of the same session written just before and just after it
-- (same team, owner and privacy scope; memories in quarantine left out). Memories without a
-- session have none.
--
-- `memory_item.lethe_context` holds the neighbours' text as a tsvector at weight B, and the
-- full-text column `lethe_fts` becomes the memory's own text (content at A, the other fields
-- at B, as before) followed by that context. Recall ranks weight B at 0.5, as a file's
-- `bm25()` weighs the `context` column.
--
-- The neighbours are defined once, in `lethe_session_context`. A trigger keeps every
-- context true in the writer's own transaction, whoever writes (insert, edit, quarantine,
-- restore, hard delete, purge, redaction, push): after a change of a memory's text, session,
-- owner, scope, date or quarantine, its old and new neighbours and the memory itself are
-- computed again. The trigger runs as the owner; no Lethe role has a right to write the
-- column (an agent's INSERT that names it is overwritten), so nothing of a quarantined or
-- erased memory can stay in another memory's context.
-- Applied by `lethe admin setup` as the database's owner, which back-fills an existing store.

ALTER TABLE memory_item ADD COLUMN IF NOT EXISTS lethe_context tsvector;

DO $do$
DECLARE
    s text := quote_ident(current_schema());
    body text;
BEGIN
    body := $body$
-- The memory's own text as recall searches it: content at weight A, the other fields at B.
CREATE OR REPLACE FUNCTION @S@.lethe_own_fts(content text, tags text, task_goal text, workflow_name text,
    skill_name text, steps text) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp AS $f$
    SELECT pg_catalog.setweight(pg_catalog.to_tsvector('english'::regconfig, COALESCE(content, '')), 'A') ||
        pg_catalog.setweight(pg_catalog.to_tsvector('english'::regconfig, COALESCE(tags, '') || ' ' ||
            COALESCE(task_goal, '') || ' ' || COALESCE(workflow_name, '') || ' ' || COALESCE(skill_name, '') || ' ' ||
            COALESCE(steps, '')), 'B')
$f$;

-- A document's length for BM25: the positions its text spans (function words, which the
-- English configuration leaves out of the index, still take their place, as they count in
-- a file's FTS5 row).
CREATE OR REPLACE FUNCTION @S@.lethe_tsvector_length(v tsvector) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp AS $f$
    SELECT COALESCE(max(p), 0)::integer FROM pg_catalog.unnest(v) AS u, pg_catalog.unnest(u.positions) AS p
$f$;

-- The session neighbours of a memory (its rowid, team, session, owner, scope and date): the
-- memory of the same session, team, owner and privacy scope written just before it and the
-- one written just after it (ties by rowid), leaving out memories in quarantine. Dates are
-- RFC 3339 text compared byte by byte, as SQLite compares them. Runs with the caller's
-- rights (a Lethe role sees its own team's rows only; the trigger below runs as the owner).
CREATE OR REPLACE FUNCTION @S@.lethe_session_context(p_rowid bigint, p_team text, p_session text, p_owner text,
    p_scope text, p_created text) RETURNS TABLE (before_rowid bigint, after_rowid bigint)
    LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $f$
    SELECT
        (SELECT p.rowid FROM @S@.memory_item p
         WHERE p_session IS NOT NULL AND p.team = p_team AND p.session_id = p_session
           AND p.owner_id IS NOT DISTINCT FROM p_owner AND p.privacy_scope IS NOT DISTINCT FROM p_scope
           AND p.rowid <> p_rowid AND COALESCE(p.is_deleted, 0) = 0
           AND (p.created_at COLLATE "C" < p_created COLLATE "C"
                OR (p.created_at COLLATE "C" = p_created COLLATE "C" AND p.rowid < p_rowid))
         ORDER BY p.created_at COLLATE "C" DESC, p.rowid DESC LIMIT 1),
        (SELECT p.rowid FROM @S@.memory_item p
         WHERE p_session IS NOT NULL AND p.team = p_team AND p.session_id = p_session
           AND p.owner_id IS NOT DISTINCT FROM p_owner AND p.privacy_scope IS NOT DISTINCT FROM p_scope
           AND p.rowid <> p_rowid AND COALESCE(p.is_deleted, 0) = 0
           AND (p.created_at COLLATE "C" > p_created COLLATE "C"
                OR (p.created_at COLLATE "C" = p_created COLLATE "C" AND p.rowid > p_rowid))
         ORDER BY p.created_at COLLATE "C" ASC, p.rowid ASC LIMIT 1)
$f$;

-- The context of the memories at `p_rowids`, computed again from the rows as they are now;
-- a row is written only when its context changed.
CREATE OR REPLACE FUNCTION @S@.lethe_context_refresh(p_rowids bigint[]) RETURNS void LANGUAGE sql VOLATILE
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
    UPDATE @S@.memory_item m SET lethe_context = x.ctx
    FROM (SELECT t.rowid,
                 CASE WHEN c.before_rowid IS NULL AND c.after_rowid IS NULL THEN NULL
                      ELSE pg_catalog.setweight(pg_catalog.to_tsvector('english'::regconfig,
                          COALESCE((SELECT b.content FROM @S@.memory_item b WHERE b.rowid = c.before_rowid), '')
                          || E'\n' ||
                          COALESCE((SELECT a.content FROM @S@.memory_item a WHERE a.rowid = c.after_rowid), '')), 'B')
                 END AS ctx
          FROM @S@.memory_item t,
               LATERAL @S@.lethe_session_context(t.rowid, t.team, t.session_id, t.owner_id, t.privacy_scope,
                                                 t.created_at) c
          WHERE t.rowid = ANY (p_rowids)) x
    WHERE m.rowid = x.rowid AND m.lethe_context IS DISTINCT FROM x.ctx
$f$;

-- The memories whose context may hold the text of a memory at this position (rowid, team,
-- session, owner, scope, date): its two neighbours, and the memories in quarantine between
-- them (a memory in quarantine keeps a context of its own, which names its neighbours too).
CREATE OR REPLACE FUNCTION @S@.lethe_context_dependents(p_rowid bigint, p_team text, p_session text, p_owner text,
    p_scope text, p_created text) RETURNS SETOF bigint LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp AS $f$
    WITH n AS (SELECT c.before_rowid, c.after_rowid,
                      (SELECT b.created_at FROM @S@.memory_item b WHERE b.rowid = c.before_rowid) AS before_at,
                      (SELECT a.created_at FROM @S@.memory_item a WHERE a.rowid = c.after_rowid) AS after_at
               FROM @S@.lethe_session_context(p_rowid, p_team, p_session, p_owner, p_scope, p_created) c)
    SELECT n.before_rowid FROM n WHERE n.before_rowid IS NOT NULL
    UNION SELECT n.after_rowid FROM n WHERE n.after_rowid IS NOT NULL
    UNION SELECT p.rowid FROM @S@.memory_item p, n
        WHERE p_session IS NOT NULL AND p.team = p_team AND p.session_id = p_session
          AND p.owner_id IS NOT DISTINCT FROM p_owner AND p.privacy_scope IS NOT DISTINCT FROM p_scope
          AND p.rowid <> p_rowid AND COALESCE(p.is_deleted, 0) <> 0
          AND (n.before_rowid IS NULL OR p.created_at COLLATE "C" > n.before_at COLLATE "C"
               OR (p.created_at COLLATE "C" = n.before_at COLLATE "C" AND p.rowid > n.before_rowid))
          AND (n.after_rowid IS NULL OR p.created_at COLLATE "C" < n.after_at COLLATE "C"
               OR (p.created_at COLLATE "C" = n.after_at COLLATE "C" AND p.rowid < n.after_rowid))
$f$;

-- After a memory is written: the memories whose context held its text where it was, those
-- whose context holds it where it is now, and the memory itself get their context again.
-- Every row of a statement that writes several runs this once the whole statement is done,
-- so each sees the others' final state.
CREATE OR REPLACE FUNCTION @S@.lethe_context_changed() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    dirty bigint[] := '{}';
BEGIN
    -- A memory outside any session has no neighbours and is nobody's neighbour (most rows of a
    -- bulk load: planned against a table's stale size, the refresh below would scan it per row).
    IF (TG_OP = 'INSERT' AND NEW.session_id IS NULL) OR (TG_OP = 'DELETE' AND OLD.session_id IS NULL)
        OR (TG_OP = 'UPDATE' AND OLD.session_id IS NULL AND NEW.session_id IS NULL) THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        dirty := dirty || ARRAY(SELECT @S@.lethe_context_dependents(OLD.rowid, OLD.team, OLD.session_id, OLD.owner_id,
                                                                    OLD.privacy_scope, OLD.created_at));
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        dirty := dirty || NEW.rowid || ARRAY(SELECT @S@.lethe_context_dependents(NEW.rowid, NEW.team, NEW.session_id,
                                                 NEW.owner_id, NEW.privacy_scope, NEW.created_at));
    END IF;
    IF pg_catalog.cardinality(dirty) > 0 THEN
        PERFORM @S@.lethe_context_refresh(dirty);
    END IF;
    RETURN NULL;
END
$f$;

DROP TRIGGER IF EXISTS lethe_context_changed ON @S@.memory_item;
CREATE TRIGGER lethe_context_changed
    AFTER INSERT OR DELETE OR UPDATE OF content, session_id, owner_id, privacy_scope, is_deleted, created_at, team
    ON @S@.memory_item FOR EACH ROW EXECUTE FUNCTION @S@.lethe_context_changed();

-- The journal records what Lethe's roles write, not the context the trigger above keeps:
-- its rows are written from inside a trigger, so the journal trigger fires at top level only.
DROP TRIGGER IF EXISTS lethe_memory_changed ON @S@.memory_item;
CREATE TRIGGER lethe_memory_changed AFTER INSERT OR UPDATE OR DELETE ON @S@.memory_item
    FOR EACH ROW WHEN (pg_catalog.pg_trigger_depth() < 1) EXECUTE FUNCTION @S@.lethe_memory_changed();
$body$;
    EXECUTE replace(body, '@S@', s);

    EXECUTE format('REVOKE ALL ON FUNCTION %s.lethe_tsvector_length(tsvector) FROM PUBLIC', s);
    EXECUTE format('REVOKE ALL ON FUNCTION %s.lethe_own_fts(text, text, text, text, text, text), '
        '%s.lethe_session_context(bigint, text, text, text, text, text), %s.lethe_context_refresh(bigint[]), '
        '%s.lethe_context_dependents(bigint, text, text, text, text, text), %s.lethe_context_changed() FROM PUBLIC', s, s, s, s, s);
    -- Every role that writes a memory computes its full-text column; explain reads the
    -- neighbours (of its own team's rows).
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s.lethe_own_fts(text, text, text, text, text, text), '
        '%s.lethe_tsvector_length(tsvector), %s.lethe_session_context(bigint, text, text, text, text, text) '
        'TO lethe_reader', s, s, s);
END
$do$;

-- The neighbours' look-up: a session's memories in date order.
CREATE INDEX IF NOT EXISTS lethe_memory_session_time
    ON memory_item (team, session_id, created_at COLLATE "C", rowid) WHERE session_id IS NOT NULL;

-- The back-fill of an existing store (the journal is not told: no memory changed).
ALTER TABLE memory_item DISABLE TRIGGER lethe_memory_changed;
SELECT lethe_context_refresh(ARRAY(SELECT rowid FROM memory_item WHERE session_id IS NOT NULL));
ALTER TABLE memory_item ENABLE TRIGGER lethe_memory_changed;

-- The full-text column: the memory's own text, then its context (a generated column's
-- expression cannot be altered in place before PostgreSQL 17: it is made again, with its
-- index), and its length for recall's BM25.
DROP INDEX IF EXISTS lethe_fts_gin;
ALTER TABLE memory_item DROP COLUMN IF EXISTS lethe_fts_len;
ALTER TABLE memory_item DROP COLUMN IF EXISTS lethe_fts;
ALTER TABLE memory_item ADD COLUMN lethe_fts tsvector GENERATED ALWAYS AS (
    lethe_own_fts(content, tags, task_goal, workflow_name, skill_name, steps) || COALESCE(lethe_context, ''::tsvector)
) STORED;
CREATE INDEX IF NOT EXISTS lethe_fts_gin ON memory_item USING gin (lethe_fts);
ALTER TABLE memory_item ADD COLUMN lethe_fts_len integer GENERATED ALWAYS AS (
    lethe_tsvector_length(lethe_own_fts(content, tags, task_goal, workflow_name, skill_name, steps)
        || COALESCE(lethe_context, ''::tsvector))
) STORED;
