-- Every write a Lethe role makes is recorded by the server under the role's name, and no team's
-- keys collide with another's. An agent's MCP configuration holds its role's password, so the
-- role's column grants (remember, edit, cite, counters, vectors, recall statistics) are also
-- open to psql; before this migration such a write left no trace (an UPDATE of a memory's
-- content or counters wrote a journal row without a name, a vector or a neighbour list was
-- rewritten silently), a forgetting event that Lethe's batch function wrote as `policy` did
-- not say which role called it, and a memory id (one key space for every team) told whether
-- another team held it: an INSERT of that id failed, or `ON CONFLICT DO NOTHING` skipped it.
--
-- After it:
--   * the change journal (lethe_change, written only by Lethe's functions and triggers) names
--     the login role of every write of a memory row (`role`, the server's `session_user`), its
--     time by the server's clock (`at`) and, for an update, which columns changed (`columns`):
--     a raw UPDATE of content, counters, flags or version is one journal row naming the role;
--   * every other table of a team gains `role`, the login role that wrote the row, stamped by
--     the server: audit rows (lethe_action, memory_forgetting_event) keep the role that wrote
--     them, so a `policy` event or action always names the role whose session wrote it (the
--     curator who ran the batch, or whoever called the batch's function); a row Lethe derives
--     and rewrites (vectors, signatures, neighbour lists, centroids, recall statistics, the
--     recall log, settings, archive marks) names the role that last wrote it. Lethe's roles
--     may not name `role` in an INSERT (their INSERT rights are column by column) and a
--     trigger stamps it on every UPDATE;
--   * a memory's view, cite and edit counters and its version move by one at most in an
--     update by a Lethe role (Lethe's commands add one), so a role cannot set them at will;
--   * keys are per team: every primary key that holds a memory's or an event's id (or a
--     memory's rowid) also holds the team, so two teams may hold the same id and an insert
--     answers the same whether or not another team has it. Lethe's functions that find rows
--     by a memory id name the team too.
-- Applied by `lethe admin setup` as the database's owner; a store set up before keeps every
-- row (rows written before carry no role: NULL).

-- The journal's new columns: no default while they are added, so that earlier rows carry
-- none (their writer is not known), then the server's values for every row to come.
ALTER TABLE lethe_change ADD COLUMN IF NOT EXISTS role text;
ALTER TABLE lethe_change ADD COLUMN IF NOT EXISTS at text;
ALTER TABLE lethe_change ADD COLUMN IF NOT EXISTS columns text[];
ALTER TABLE lethe_change ALTER COLUMN role SET DEFAULT session_user;
ALTER TABLE lethe_change ALTER COLUMN at
    SET DEFAULT pg_catalog.to_char(pg_catalog.clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');

DO $do$
DECLARE
    s text := quote_ident(current_schema());
    ns oid := current_schema()::regnamespace;
    body text;
    t text;
    r record;
    cols text;
BEGIN
    -- The writer of every other team row.
    FOREACH t IN ARRAY ARRAY['memory_forgetting_event', 'meta_memory_stats', 'lethe_settings', 'lethe_action',
        'lethe_signature', 'lethe_supersede', 'lethe_archive', 'lethe_procedure_version', 'lethe_review',
        'lethe_vector', 'lethe_neighbour', 'lethe_centroid', 'lethe_session_end', 'lethe_task_log',
        'lethe_session_rule', 'lethe_recall_log', 'lethe_recall_log_hit', 'lethe_dismissed_pair'] LOOP
        EXECUTE format('ALTER TABLE %s.%I ADD COLUMN IF NOT EXISTS role text', s, t);
        EXECUTE format('ALTER TABLE %s.%I ALTER COLUMN role SET DEFAULT session_user', s, t);
    END LOOP;

    -- A Lethe group's INSERT right on a table that has `role` becomes a right on every other
    -- column: the server's default is the only value `role` can take.
    FOR r IN SELECT c.relname::text AS tbl, g.rolname::text AS grp
             FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a, pg_catalog.pg_roles g
             WHERE c.relnamespace = ns AND c.relkind = 'r' AND g.oid = a.grantee
                AND a.privilege_type = 'INSERT' AND g.rolname IN ('lethe_reader', 'lethe_agent', 'lethe_curator')
                AND EXISTS (SELECT 1 FROM pg_catalog.pg_attribute x WHERE x.attrelid = c.oid AND x.attname = 'role'
                            AND NOT x.attisdropped) LOOP
        SELECT pg_catalog.string_agg(pg_catalog.quote_ident(x.attname), ', ' ORDER BY x.attnum) INTO cols
        FROM pg_catalog.pg_attribute x
        WHERE x.attrelid = (s || '.' || pg_catalog.quote_ident(r.tbl))::regclass AND x.attnum > 0
            AND NOT x.attisdropped AND x.attgenerated = '' AND x.attname <> 'role';
        EXECUTE format('REVOKE INSERT ON %s.%I FROM %I', s, r.tbl, r.grp);
        EXECUTE format('GRANT INSERT (%s) ON %s.%I TO %I', cols, s, r.tbl, r.grp);
    END LOOP;

    -- Keys per team. The id stays first, so a look-up by id (the owner's, who sees every
    -- team) still uses the key's index.
    FOR r IN SELECT * FROM (VALUES ('memory_item', 'id'), ('memory_forgetting_event', 'id'),
            ('meta_memory_stats', 'memory_id'), ('lethe_signature', 'memory_id'), ('lethe_supersede', 'old_id, new_id'),
            ('lethe_procedure_version', 'memory_id, version'), ('lethe_review', 'memory_id'),
            ('lethe_vector', 'memory_id'), ('lethe_neighbour', 'memory_rowid'), ('lethe_task_log', 'memory_id'),
            ('lethe_session_rule', 'memory_id'), ('lethe_recall_log_hit', 'memory_id, log_id'),
            ('lethe_dismissed_pair', 'a_id, b_id')) AS k(tbl, keycols) LOOP
        EXECUTE format('ALTER TABLE %s.%I DROP CONSTRAINT IF EXISTS %I, ADD PRIMARY KEY (%s, team)',
            s, r.tbl, r.tbl || '_pkey', r.keycols);
    END LOOP;

    body := $body$
-- The writer of a row Lethe rewrites (derived rows, statistics, the recall log, settings,
-- archive marks): whoever updates it, the server's name for the session.
CREATE OR REPLACE FUNCTION @S@.lethe_stamp_role() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    NEW.role := session_user;
    RETURN NEW;
END
$f$;

-- 006's journal trigger, with the role, the time and the changed columns of every write (the
-- role and the time are the journal's defaults), and the derived rows a change of content
-- makes stale found within the memory's own team.
CREATE OR REPLACE FUNCTION @S@.lethe_memory_changed() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    c text[] := '{}';
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO @S@.lethe_change (memory_id, kind, team) VALUES (NEW.id, 'insert', NEW.team);
    ELSIF TG_OP = 'UPDATE' THEN
        IF OLD.type IS DISTINCT FROM NEW.type THEN c := c || 'type'::text; END IF;
        IF OLD.content IS DISTINCT FROM NEW.content THEN c := c || 'content'::text; END IF;
        IF OLD.importance IS DISTINCT FROM NEW.importance THEN c := c || 'importance'::text; END IF;
        IF OLD.privacy_scope IS DISTINCT FROM NEW.privacy_scope THEN c := c || 'privacy_scope'::text; END IF;
        IF OLD.created_at IS DISTINCT FROM NEW.created_at THEN c := c || 'created_at'::text; END IF;
        IF OLD.last_accessed IS DISTINCT FROM NEW.last_accessed THEN c := c || 'last_accessed'::text; END IF;
        IF OLD.pinned IS DISTINCT FROM NEW.pinned THEN c := c || 'pinned'::text; END IF;
        IF OLD.tags IS DISTINCT FROM NEW.tags THEN c := c || 'tags'::text; END IF;
        IF OLD.source IS DISTINCT FROM NEW.source THEN c := c || 'source'::text; END IF;
        IF OLD.view_count IS DISTINCT FROM NEW.view_count THEN c := c || 'view_count'::text; END IF;
        IF OLD.cite_count IS DISTINCT FROM NEW.cite_count THEN c := c || 'cite_count'::text; END IF;
        IF OLD.edit_count IS DISTINCT FROM NEW.edit_count THEN c := c || 'edit_count'::text; END IF;
        IF OLD.task_goal IS DISTINCT FROM NEW.task_goal THEN c := c || 'task_goal'::text; END IF;
        IF OLD.steps IS DISTINCT FROM NEW.steps THEN c := c || 'steps'::text; END IF;
        IF OLD.reflection_notes IS DISTINCT FROM NEW.reflection_notes THEN c := c || 'reflection_notes'::text; END IF;
        IF OLD.workflow_name IS DISTINCT FROM NEW.workflow_name THEN c := c || 'workflow_name'::text; END IF;
        IF OLD.skill_name IS DISTINCT FROM NEW.skill_name THEN c := c || 'skill_name'::text; END IF;
        IF OLD.trigger_conditions IS DISTINCT FROM NEW.trigger_conditions THEN c := c || 'trigger_conditions'::text; END IF;
        IF OLD.version IS DISTINCT FROM NEW.version THEN c := c || 'version'::text; END IF;
        IF OLD.owner_id IS DISTINCT FROM NEW.owner_id THEN c := c || 'owner_id'::text; END IF;
        IF OLD.session_id IS DISTINCT FROM NEW.session_id THEN c := c || 'session_id'::text; END IF;
        IF OLD.project_id IS DISTINCT FROM NEW.project_id THEN c := c || 'project_id'::text; END IF;
        IF OLD.is_deleted IS DISTINCT FROM NEW.is_deleted THEN c := c || 'is_deleted'::text; END IF;
        IF OLD.deleted_at IS DISTINCT FROM NEW.deleted_at THEN c := c || 'deleted_at'::text; END IF;
        INSERT INTO @S@.lethe_change (memory_id, kind, team, columns) VALUES (NEW.id, 'update', NEW.team, c);
        IF OLD.content IS DISTINCT FROM NEW.content THEN
            DELETE FROM @S@.lethe_vector WHERE memory_id = OLD.id AND team = OLD.team;
            DELETE FROM @S@.lethe_neighbour WHERE memory_rowid = OLD.rowid AND team = OLD.team;
            DELETE FROM @S@.lethe_signature WHERE memory_id = OLD.id AND team = OLD.team;
        END IF;
    ELSE
        INSERT INTO @S@.lethe_change (memory_id, kind, team) VALUES (OLD.id, 'delete', OLD.team);
        DELETE FROM @S@.lethe_vector WHERE memory_id = OLD.id AND team = OLD.team;
        DELETE FROM @S@.lethe_neighbour WHERE memory_rowid = OLD.rowid AND team = OLD.team;
    END IF;
    PERFORM pg_catalog.pg_notify(@S@.lethe_team_channel(COALESCE(NEW.team, OLD.team)), '');
    RETURN NULL;
END
$f$;

-- 006's rules of a memory row a Lethe role writes, and one more: the counters of usage and
-- the version move by one at most in an update (each of Lethe's commands adds one).
CREATE OR REPLACE FUNCTION @S@.lethe_memory_rules() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_session_kind();
BEGIN
    IF k NOT IN ('agent', 'curator', 'reader') THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF COALESCE(NEW.pinned, 0) <> 0 AND k = 'agent' THEN
            RAISE EXCEPTION 'the role % is an agent: pinning is for the team lead (a curator role)', session_user
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF COALESCE(NEW.is_deleted, 0) <> 0 THEN
            NEW.is_deleted := 1;
            NEW.deleted_at := @S@.lethe_now();
        ELSE
            NEW.deleted_at := NULL;
        END IF;
    ELSE
        IF COALESCE(NEW.version, 0) < COALESCE(OLD.version, 0) THEN
            RAISE EXCEPTION 'memory %: its version never goes back (% to %)', OLD.id, OLD.version, NEW.version
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF COALESCE(NEW.version, 1) - COALESCE(OLD.version, 1) NOT IN (0, 1)
            OR COALESCE(NEW.view_count, 0) - COALESCE(OLD.view_count, 0) NOT IN (0, 1)
            OR COALESCE(NEW.cite_count, 0) - COALESCE(OLD.cite_count, 0) NOT IN (0, 1)
            OR COALESCE(NEW.edit_count, 0) - COALESCE(OLD.edit_count, 0) NOT IN (0, 1) THEN
            RAISE EXCEPTION 'memory %: its version and its view, cite and edit counts move by one at a time', OLD.id
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF COALESCE(NEW.is_deleted, 0) <> 0 AND COALESCE(OLD.is_deleted, 0) = 0 THEN
            NEW.is_deleted := 1;
            NEW.deleted_at := @S@.lethe_now();
        ELSIF COALESCE(NEW.is_deleted, 0) = 0 THEN
            NEW.deleted_at := NULL;
        ELSE
            NEW.is_deleted := OLD.is_deleted;
            NEW.deleted_at := OLD.deleted_at;
        END IF;
    END IF;
    RETURN NEW;
END
$f$;

-- 006's exit from the review band, the memory found within the row's team.
CREATE OR REPLACE FUNCTION @S@.lethe_review_leave(p_ids text[], only_quarantined boolean) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_session_kind();
    n bigint;
BEGIN
    IF k NOT IN ('agent', 'curator', 'owner') THEN
        RAISE EXCEPTION 'the role % writes nothing', session_user USING ERRCODE = 'insufficient_privilege';
    END IF;
    DELETE FROM @S@.lethe_review r
    WHERE r.memory_id = ANY (COALESCE(p_ids, '{}'))
        AND (k = 'owner' OR r.team = @S@.lethe_team())
        AND (NOT COALESCE(only_quarantined, false) OR EXISTS (
            SELECT 1 FROM @S@.memory_item m WHERE m.id = r.memory_id AND m.team = r.team
                AND COALESCE(m.is_deleted, 0) <> 0));
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$f$;

-- 006's hard delete, every row found within the caller's team (the owner's: every team's
-- memory of that id, as before).
CREATE OR REPLACE FUNCTION @S@.lethe_hard_delete_rows(p_id text) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_session_kind();
    t text := @S@.lethe_team();
    n bigint;
BEGIN
    IF k NOT IN ('curator', 'owner') THEN
        RAISE EXCEPTION 'the role % may not delete for ever: that is for the team lead (a curator role)', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_id IS NULL OR NOT EXISTS (SELECT 1 FROM @S@.memory_item WHERE id = p_id AND (k = 'owner' OR team = t)) THEN
        RETURN 0;
    END IF;
    DELETE FROM @S@.meta_memory_stats WHERE memory_id = p_id AND (k = 'owner' OR team = t);
    DELETE FROM @S@.lethe_archive WHERE memory_id = p_id AND (k = 'owner' OR team = t);
    DELETE FROM @S@.lethe_signature WHERE memory_id = p_id AND (k = 'owner' OR team = t);
    DELETE FROM @S@.lethe_vector WHERE memory_id = p_id AND (k = 'owner' OR team = t);
    DELETE FROM @S@.lethe_supersede WHERE (old_id = p_id OR new_id = p_id) AND (k = 'owner' OR team = t);
    DELETE FROM @S@.lethe_dismissed_pair WHERE (a_id = p_id OR b_id = p_id) AND (k = 'owner' OR team = t);
    DELETE FROM @S@.lethe_procedure_version WHERE memory_id = p_id AND (k = 'owner' OR team = t);
    DELETE FROM @S@.lethe_review WHERE memory_id = p_id AND (k = 'owner' OR team = t);
    DELETE FROM @S@.lethe_task_log WHERE memory_id = p_id AND (k = 'owner' OR team = t);
    DELETE FROM @S@.lethe_session_rule WHERE memory_id = p_id AND (k = 'owner' OR team = t);
    DELETE FROM @S@.lethe_recall_log_hit WHERE memory_id = p_id AND (k = 'owner' OR team = t);
    DELETE FROM @S@.memory_item WHERE id = p_id AND (k = 'owner' OR team = t);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$f$;
$body$;
    EXECUTE replace(body, '@S@', s);
    EXECUTE format('REVOKE ALL ON FUNCTION %s.lethe_stamp_role() FROM PUBLIC', s);

    -- The stamp on every table whose rows a Lethe role may update, but the audit's own
    -- (lethe_action, memory_forgetting_event: a curator's scrub of erased text keeps the
    -- role that wrote the row).
    FOREACH t IN ARRAY ARRAY['meta_memory_stats', 'lethe_settings', 'lethe_signature', 'lethe_archive',
        'lethe_procedure_version', 'lethe_vector', 'lethe_neighbour', 'lethe_centroid', 'lethe_recall_log',
        'lethe_recall_log_hit'] LOOP
        EXECUTE format('DROP TRIGGER IF EXISTS lethe_stamp_role ON %s.%I', s, t);
        EXECUTE format('CREATE TRIGGER lethe_stamp_role BEFORE UPDATE ON %s.%I FOR EACH ROW '
            'EXECUTE FUNCTION %s.lethe_stamp_role()', s, t, s);
    END LOOP;
END
$do$;
