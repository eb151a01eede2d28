-- The team store holds its rules against a role that writes raw SQL with its own password
-- (an agent's MCP configuration holds that password, so whatever the role may do in SQL the
-- agent may do with psql). Before this migration the triggers read the catalog through the
-- caller's search path (a temporary table named pg_roles made an agent the team lead), every
-- role could hold table locks and squat on the shared identities, and an agent could date a
-- quarantine years back so that the next forget purged it at once.
--
-- After it:
--   * every function and trigger of Lethe is SECURITY DEFINER with search_path
--     `pg_catalog, pg_temp` and names every table with its schema; Lethe's roles have no
--     TEMPORARY or CREATE right on the database or the schema;
--   * Lethe's roles hold no table-level UPDATE, DELETE, TRUNCATE, REFERENCES or TRIGGER right
--     on any table (PostgreSQL lets those take ACCESS EXCLUSIVE locks that stop every team):
--     updates are granted column by column, and every delete goes through a function that
--     checks the caller's role and team (hard delete, leaving the review band, pruning the
--     recall log, marking the change journal);
--   * identities are GENERATED ALWAYS and a Lethe role's row gets the next value whatever it
--     supplied, so no team can squat on another's next key;
--   * quarantine dates, forgetting events and audit rows of a Lethe role carry the server's
--     clock, and their actor is the role (`agent:NAME`, `user:NAME` for a curator; a curator
--     also writes `policy` and `pushed:ACTOR`);
--   * notifications carry nothing: each team has its own channel, named from a secret only
--     the owner reads, and the listener reads the journal through row-level security;
--   * the push lock and the change channel are per team (`lethe_team_key`, `lethe_channel`).
-- Applied by `lethe admin setup` as the database's owner, which owns every function.

CREATE TABLE IF NOT EXISTS lethe_secret (id INT PRIMARY KEY CHECK (id = 1), value TEXT NOT NULL);
INSERT INTO lethe_secret (id, value)
    VALUES (1, md5(gen_random_uuid()::text) || md5(gen_random_uuid()::text)) ON CONFLICT (id) DO NOTHING;
REVOKE ALL ON lethe_secret FROM PUBLIC, lethe_reader, lethe_agent, lethe_curator;

-- Identities: ALWAYS, so that an explicit value needs OVERRIDING SYSTEM VALUE (and the
-- triggers below replace it for Lethe's roles anyway).
ALTER TABLE lethe_action ALTER COLUMN id SET GENERATED ALWAYS;
ALTER TABLE lethe_change ALTER COLUMN seq SET GENERATED ALWAYS;
ALTER TABLE lethe_archive ALTER COLUMN archive_no SET GENERATED ALWAYS;
ALTER TABLE lethe_recall_log ALTER COLUMN id SET GENERATED ALWAYS;

DO $do$
DECLARE
    s text := quote_ident(current_schema());
    body text;
    f text;
BEGIN
    -- No temporary tables (the shadow of a catalog), no new objects.
    EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
    EXECUTE format('REVOKE TEMPORARY, CREATE ON DATABASE %I FROM lethe_reader, lethe_agent, lethe_curator', current_database());
    EXECUTE format('REVOKE CREATE ON SCHEMA %s FROM PUBLIC', s);
    EXECUTE format('REVOKE CREATE ON SCHEMA %s FROM lethe_reader, lethe_agent, lethe_curator', s);
    -- Sequences: identity defaults need no right on them; nobody else calls them.
    EXECUTE format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA %s FROM PUBLIC, lethe_reader, lethe_agent, lethe_curator', s);

    body := $body$
-- The server's clock in the engine's timestamp form (2026-01-02T03:04:05.678Z).
CREATE OR REPLACE FUNCTION @S@.lethe_now() RETURNS text LANGUAGE sql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
    SELECT pg_catalog.to_char(pg_catalog.clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$f$;

-- What the session's role is: 'owner' (a superuser or the database's owner), 'curator',
-- 'agent', 'reader' or 'other'. One definition for every rule below.
CREATE OR REPLACE FUNCTION @S@.lethe_session_kind() RETURNS text LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
    SELECT CASE
        WHEN (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = session_user)
            OR session_user = (SELECT pg_catalog.pg_get_userbyid(d.datdba) FROM pg_catalog.pg_database d
                               WHERE d.datname = pg_catalog.current_database()) THEN 'owner'
        WHEN pg_catalog.pg_has_role(session_user, 'lethe_curator', 'MEMBER') THEN 'curator'
        WHEN pg_catalog.pg_has_role(session_user, 'lethe_agent', 'MEMBER') THEN 'agent'
        WHEN pg_catalog.pg_has_role(session_user, 'lethe_reader', 'MEMBER') THEN 'reader'
        ELSE 'other'
    END
$f$;

CREATE OR REPLACE FUNCTION @S@.lethe_session_is_agent() RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
    SELECT @S@.lethe_session_kind() = 'agent'
$f$;

-- The actor a Lethe role writes as: agent:NAME for an agent, user:NAME for a curator.
CREATE OR REPLACE FUNCTION @S@.lethe_session_actor() RETURNS text LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
    SELECT CASE @S@.lethe_session_kind() WHEN 'agent' THEN 'agent:' WHEN 'curator' THEN 'user:' END || session_user
$f$;

-- Whether a Lethe role may write `claimed` as the actor of a row: its own name; a curator
-- also the policy (the forgetting batch) and rows a push brought (`pushed:ORIGINAL`); an
-- agent also the policy of its own session's working memory (the engine's gate).
CREATE OR REPLACE FUNCTION @S@.lethe_actor_allowed(claimed text) RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
    SELECT claimed = @S@.lethe_session_actor()
        OR claimed = 'policy'
        OR (@S@.lethe_session_kind() = 'curator' AND claimed LIKE 'pushed:%')
$f$;

-- A team's channel and lock key: derived from a secret only the owner reads, so that no
-- role can listen to, notify or lock another team's.
CREATE OR REPLACE FUNCTION @S@.lethe_team_channel(t text) RETURNS text LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
    SELECT 'lethe_change_' || pg_catalog.left(pg_catalog.md5((SELECT value FROM @S@.lethe_secret WHERE id = 1) || ':channel:' || t), 24)
$f$;
CREATE OR REPLACE FUNCTION @S@.lethe_channel() RETURNS text LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
    SELECT @S@.lethe_team_channel(@S@.lethe_team())
$f$;
CREATE OR REPLACE FUNCTION @S@.lethe_team_key(purpose text) RETURNS bigint LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
    SELECT ('x' || pg_catalog.left(pg_catalog.md5((SELECT value FROM @S@.lethe_secret WHERE id = 1)
        || ':' || purpose || ':' || @S@.lethe_team()), 16))::bit(64)::bigint
$f$;

-- The change journal and the derived rows a change of content or a delete makes stale, as
-- before; the notification is payload-free on the team's own channel.
CREATE OR REPLACE FUNCTION @S@.lethe_memory_changed() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO @S@.lethe_change (memory_id, kind, team) VALUES (NEW.id, 'insert', NEW.team);
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO @S@.lethe_change (memory_id, kind, team) VALUES (NEW.id, 'update', NEW.team);
        IF OLD.content IS DISTINCT FROM NEW.content THEN
            DELETE FROM @S@.lethe_vector WHERE memory_id = OLD.id;
            DELETE FROM @S@.lethe_neighbour WHERE memory_rowid = OLD.rowid;
            DELETE FROM @S@.lethe_signature WHERE memory_id = OLD.id;
        END IF;
    ELSE
        INSERT INTO @S@.lethe_change (memory_id, kind, team) VALUES (OLD.id, 'delete', OLD.team);
        DELETE FROM @S@.lethe_vector WHERE memory_id = OLD.id;
        DELETE FROM @S@.lethe_neighbour WHERE memory_rowid = OLD.rowid;
    END IF;
    PERFORM pg_catalog.pg_notify(@S@.lethe_team_channel(COALESCE(NEW.team, OLD.team)), '');
    RETURN NULL;
END
$f$;

-- The rules of a memory row a Lethe role writes: an agent never pins; a quarantine starts
-- at the server's clock whatever the row says (and a restore clears it); the version, the
-- compare-and-swap of edits, never goes back.
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

-- 004's trigger, through the same rules (kept for a store whose trigger still names it).
CREATE OR REPLACE FUNCTION @S@.lethe_agents_do_not_pin() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    IF COALESCE(NEW.pinned, 0) <> 0 AND @S@.lethe_session_is_agent() THEN
        RAISE EXCEPTION 'the role % is an agent: pinning is for the team lead (a curator role)', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$f$;

-- The audit (lethe_action, memory_forgetting_event) of a Lethe role: its own actor, the
-- server's clock (a pushed row keeps its date, never a future one), the next identity, and
-- no agent writes a `hard` event. An update (a curator's scrub of erased text) keeps actor
-- and date.
CREATE OR REPLACE FUNCTION @S@.lethe_actor_is_the_role() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_session_kind();
    claimed text;
    now_ text;
BEGIN
    IF k NOT IN ('agent', 'curator', 'reader') THEN
        RETURN NEW;
    END IF;
    now_ := @S@.lethe_now();
    IF TG_TABLE_NAME = 'lethe_action' THEN
        IF TG_OP = 'UPDATE' THEN
            NEW.actor := OLD.actor;
            NEW.created_at := OLD.created_at;
            NEW.memory_id := OLD.memory_id;
            NEW.action := OLD.action;
            RETURN NEW;
        END IF;
        NEW.id := pg_catalog.nextval(pg_catalog.pg_get_serial_sequence('@S@.lethe_action', 'id')::regclass);
        IF NOT @S@.lethe_actor_allowed(NEW.actor) THEN
            NEW.actor := @S@.lethe_session_actor();
        END IF;
        IF NEW.actor LIKE 'pushed:%' THEN
            NEW.created_at := LEAST(COALESCE(NEW.created_at, now_), now_);
        ELSE
            NEW.created_at := now_;
        END IF;
        RETURN NEW;
    END IF;
    -- memory_forgetting_event: the actor is in the metadata.
    IF TG_OP = 'UPDATE' THEN
        claimed := OLD.metadata_json::jsonb ->> 'actor';
        IF claimed IS NOT NULL THEN
            NEW.metadata_json := pg_catalog.jsonb_set(COALESCE(NEW.metadata_json, '{}')::jsonb, '{actor}',
                pg_catalog.to_jsonb(claimed))::text;
        ELSIF NEW.metadata_json IS NOT NULL THEN
            NEW.metadata_json := (NEW.metadata_json::jsonb - 'actor')::text;
        END IF;
        NEW.created_at := OLD.created_at;
        NEW.action := OLD.action;
        NEW.memory_id := OLD.memory_id;
        RETURN NEW;
    END IF;
    IF NEW.action = 'hard' AND k <> 'curator' THEN
        RAISE EXCEPTION 'the role % may not write a hard-delete event: deleting for ever is for the team lead', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    claimed := COALESCE(NEW.metadata_json::jsonb ->> 'actor', '');
    IF NOT @S@.lethe_actor_allowed(claimed) THEN
        claimed := @S@.lethe_session_actor();
        NEW.metadata_json := pg_catalog.jsonb_set(COALESCE(NEW.metadata_json, '{}')::jsonb, '{actor}',
            pg_catalog.to_jsonb(claimed))::text;
    END IF;
    IF claimed LIKE 'pushed:%' AND NEW.action <> 'soft' THEN
        NEW.created_at := LEAST(COALESCE(NEW.created_at, now_), now_);
    ELSE
        NEW.created_at := now_;
    END IF;
    RETURN NEW;
END
$f$;

-- The other rows with an actor or a date (supersede links, dismissed pairs, archives,
-- procedure versions, the recall log, ended sessions, the review band): a Lethe role's new
-- row names the role, carries no date after the server's clock, and gets the next identity.
-- (The journal, lethe_change, is written by Lethe's functions only.)
CREATE OR REPLACE FUNCTION @S@.lethe_row_rules() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_session_kind();
    now_ text;
BEGIN
    IF k NOT IN ('agent', 'curator', 'reader') THEN
        RETURN NEW;
    END IF;
    now_ := @S@.lethe_now();
    IF TG_OP = 'UPDATE' THEN
        -- Column grants decide what changes; a restore is not dated after the server's clock.
        IF TG_TABLE_NAME = 'lethe_archive' THEN
            IF NEW.restored_at IS NOT NULL THEN
                NEW.restored_at := LEAST(NEW.restored_at, now_);
            END IF;
        END IF;
        RETURN NEW;
    END IF;
    IF TG_TABLE_NAME = 'lethe_archive' THEN
        NEW.archive_no := pg_catalog.nextval(pg_catalog.pg_get_serial_sequence('@S@.lethe_archive', 'archive_no')::regclass);
        IF NOT @S@.lethe_actor_allowed(NEW.actor) THEN NEW.actor := @S@.lethe_session_actor(); END IF;
        NEW.archived_at := LEAST(COALESCE(NEW.archived_at, now_), now_);
        IF NEW.restored_at IS NOT NULL THEN
            NEW.restored_at := LEAST(NEW.restored_at, now_);
        END IF;
    ELSIF TG_TABLE_NAME = 'lethe_recall_log' THEN
        NEW.id := pg_catalog.nextval(pg_catalog.pg_get_serial_sequence('@S@.lethe_recall_log', 'id')::regclass);
        IF NOT @S@.lethe_actor_allowed(NEW.actor) THEN NEW.actor := @S@.lethe_session_actor(); END IF;
        NEW.at := LEAST(COALESCE(NEW.at, now_), now_);
    ELSIF TG_TABLE_NAME IN ('lethe_supersede', 'lethe_dismissed_pair', 'lethe_procedure_version') THEN
        IF NOT @S@.lethe_actor_allowed(NEW.actor) THEN NEW.actor := @S@.lethe_session_actor(); END IF;
        NEW.created_at := LEAST(COALESCE(NEW.created_at, now_), now_);
    ELSIF TG_TABLE_NAME = 'lethe_session_end' THEN
        IF NOT @S@.lethe_actor_allowed(NEW.actor) THEN NEW.actor := @S@.lethe_session_actor(); END IF;
        NEW.ended_at := LEAST(COALESCE(NEW.ended_at, now_), now_);
    ELSIF TG_TABLE_NAME = 'lethe_review' THEN
        NEW.entered_at := LEAST(COALESCE(NEW.entered_at, now_), now_);
    END IF;
    RETURN NEW;
END
$f$;

-- Marks a change of a memory of the caller's team in the journal (the window and the
-- server watcher reread it): the engine's only direct write to the journal.
CREATE OR REPLACE FUNCTION @S@.lethe_journal(p_memory text, p_kind text) RETURNS void LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    t text := @S@.lethe_team();
BEGIN
    IF @S@.lethe_session_kind() NOT IN ('agent', 'curator', 'owner') THEN
        RAISE EXCEPTION 'the role % writes nothing', session_user USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_kind IS NULL OR p_kind NOT IN ('insert', 'update', 'delete', 'dismiss', 'supersede') THEN
        RAISE EXCEPTION 'a change is insert, update, delete, dismiss or supersede' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_memory IS NULL OR NOT EXISTS (SELECT 1 FROM @S@.memory_item WHERE id = p_memory AND team = t) THEN
        RAISE EXCEPTION 'no memory % in team %', pg_catalog.left(COALESCE(p_memory, 'NULL'), 80), t
            USING ERRCODE = 'no_data_found';
    END IF;
    INSERT INTO @S@.lethe_change (memory_id, kind, team) VALUES (p_memory, p_kind, t);
    PERFORM pg_catalog.pg_notify(@S@.lethe_team_channel(t), '');
END
$f$;

-- A memory leaves the review band (it was quarantined or the policy let it go). Rows of the
-- caller's team only; with `only_quarantined`, only memories now in quarantine.
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
            SELECT 1 FROM @S@.memory_item m WHERE m.id = r.memory_id AND COALESCE(m.is_deleted, 0) <> 0));
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$f$;

-- The recall log keeps its newest entries: the caller's team's entries below `cutoff` go.
CREATE OR REPLACE FUNCTION @S@.lethe_recall_log_prune(cutoff bigint) RETURNS void LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_session_kind();
    t text := @S@.lethe_team();
BEGIN
    IF k NOT IN ('agent', 'curator', 'owner') THEN
        RAISE EXCEPTION 'the role % writes nothing', session_user USING ERRCODE = 'insufficient_privilege';
    END IF;
    DELETE FROM @S@.lethe_recall_log WHERE id < cutoff AND (k = 'owner' OR team = t);
    DELETE FROM @S@.lethe_recall_log_hit WHERE log_id < cutoff AND (k = 'owner' OR team = t);
END
$f$;

-- A hard delete's rows: the memory and everything derived from it, by the team lead (a
-- curator) of the memory's team or the owner. The audit (its scrub and the `hard` event)
-- is written by the engine in the same transaction, under the curator's name.
CREATE OR REPLACE FUNCTION @S@.lethe_hard_delete_rows(p_id text) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_session_kind();
    n bigint;
BEGIN
    IF k NOT IN ('curator', 'owner') THEN
        RAISE EXCEPTION 'the role % may not delete for ever: that is for the team lead (a curator role)', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_id IS NULL OR NOT EXISTS (SELECT 1 FROM @S@.memory_item
                                   WHERE id = p_id AND (k = 'owner' OR team = @S@.lethe_team())) THEN
        RETURN 0;
    END IF;
    DELETE FROM @S@.meta_memory_stats WHERE memory_id = p_id;
    DELETE FROM @S@.lethe_archive WHERE memory_id = p_id;
    DELETE FROM @S@.lethe_signature WHERE memory_id = p_id;
    DELETE FROM @S@.lethe_vector WHERE memory_id = p_id;
    DELETE FROM @S@.lethe_supersede WHERE old_id = p_id OR new_id = p_id;
    DELETE FROM @S@.lethe_dismissed_pair WHERE a_id = p_id OR b_id = p_id;
    DELETE FROM @S@.lethe_procedure_version WHERE memory_id = p_id;
    DELETE FROM @S@.lethe_review WHERE memory_id = p_id;
    DELETE FROM @S@.lethe_task_log WHERE memory_id = p_id;
    DELETE FROM @S@.lethe_session_rule WHERE memory_id = p_id;
    DELETE FROM @S@.lethe_recall_log_hit WHERE memory_id = p_id;
    DELETE FROM @S@.memory_item WHERE id = p_id;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$f$;

DROP TRIGGER IF EXISTS lethe_agents_do_not_pin ON @S@.memory_item;
DROP TRIGGER IF EXISTS lethe_memory_rules ON @S@.memory_item;
CREATE TRIGGER lethe_memory_rules BEFORE INSERT OR UPDATE ON @S@.memory_item
    FOR EACH ROW EXECUTE FUNCTION @S@.lethe_memory_rules();
DROP TRIGGER IF EXISTS lethe_action_actor ON @S@.lethe_action;
CREATE TRIGGER lethe_action_actor BEFORE INSERT OR UPDATE ON @S@.lethe_action
    FOR EACH ROW EXECUTE FUNCTION @S@.lethe_actor_is_the_role();
DROP TRIGGER IF EXISTS lethe_event_actor ON @S@.memory_forgetting_event;
CREATE TRIGGER lethe_event_actor BEFORE INSERT OR UPDATE ON @S@.memory_forgetting_event
    FOR EACH ROW EXECUTE FUNCTION @S@.lethe_actor_is_the_role();
$body$;
    EXECUTE replace(body, '@S@', s);

    -- The row rules on every table they describe.
    DECLARE
        t text;
    BEGIN
        FOREACH t IN ARRAY ARRAY['lethe_archive', 'lethe_recall_log', 'lethe_supersede',
            'lethe_dismissed_pair', 'lethe_procedure_version', 'lethe_session_end', 'lethe_review'] LOOP
            EXECUTE format('DROP TRIGGER IF EXISTS lethe_row_rules ON %s.%I', s, t);
            EXECUTE format('CREATE TRIGGER lethe_row_rules BEFORE INSERT OR UPDATE ON %s.%I '
                'FOR EACH ROW EXECUTE FUNCTION %s.lethe_row_rules()', s, t, s);
        END LOOP;
    END;

    -- typeof and instr (001) name no table; their search path is fixed too.
    EXECUTE format('ALTER FUNCTION %s.typeof(anyelement) SET search_path = pg_catalog, pg_temp', s);
    EXECUTE format('ALTER FUNCTION %s.instr(text, text) SET search_path = pg_catalog, pg_temp', s);

    -- Who may call what. Functions are PUBLIC by default: no longer.
    FOR f IN SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc p
             JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = current_schema() AND (p.proname LIKE 'lethe\_%' OR p.proname IN ('typeof', 'instr')) LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
    END LOOP;
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s.typeof(anyelement), %s.instr(text, text), %s.lethe_team(), '
        '%s.lethe_channel(), %s.lethe_team_key(text), %s.lethe_session_kind() TO lethe_reader', s, s, s, s, s, s);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s.lethe_journal(text, text), %s.lethe_review_leave(text[], boolean), '
        '%s.lethe_recall_log_prune(bigint) TO lethe_agent', s, s, s);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s.lethe_hard_delete_rows(text) TO lethe_curator', s);
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
               WHERE n.nspname = current_schema() AND p.proname = 'lethe_vector_emb') THEN
        EXECUTE format('ALTER FUNCTION %s.lethe_vector_emb() SECURITY DEFINER SET search_path = pg_catalog, %s, pg_temp', s, s);
    END IF;

    -- Tables: no table-level UPDATE, DELETE, TRUNCATE, REFERENCES or TRIGGER for any Lethe
    -- role (each of the first three lets a role lock a whole table against every team);
    -- updates column by column, deletes through the functions above.
    EXECUTE format('REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON ALL TABLES IN SCHEMA %s '
        'FROM PUBLIC, lethe_reader, lethe_agent, lethe_curator', s);
END
$do$;

GRANT INSERT ON memory_item, memory_forgetting_event, lethe_action, meta_memory_stats, lethe_signature,
    lethe_supersede, lethe_archive, lethe_procedure_version, lethe_review, lethe_vector, lethe_neighbour,
    lethe_centroid, lethe_session_end, lethe_task_log, lethe_session_rule, lethe_recall_log, lethe_recall_log_hit,
    lethe_dismissed_pair TO lethe_agent;
GRANT UPDATE (type, content, privacy_scope, last_accessed, tags, source, view_count, cite_count, edit_count,
    task_goal, steps, reflection_notes, workflow_name, skill_name, trigger_conditions, version, owner_id,
    session_id, project_id, is_deleted, deleted_at) ON memory_item TO lethe_agent;
GRANT UPDATE (recall_count, success_count, failure_count, avg_confidence, last_recalled_at) ON meta_memory_stats TO lethe_agent;
GRANT UPDATE (content_hash, bands) ON lethe_signature TO lethe_agent;
GRANT UPDATE (model, vec, rowid) ON lethe_vector TO lethe_agent;
GRANT UPDATE (model, hash, keys, list) ON lethe_neighbour TO lethe_agent;
GRANT UPDATE (data) ON lethe_centroid TO lethe_agent;
GRANT UPDATE (restored_at) ON lethe_archive TO lethe_agent;
GRANT UPDATE (score) ON lethe_recall_log_hit TO lethe_agent;
GRANT UPDATE (query, context_json, results_json) ON lethe_recall_log TO lethe_agent;

GRANT UPDATE (pinned, importance) ON memory_item TO lethe_curator;
GRANT INSERT, UPDATE (value) ON lethe_settings TO lethe_curator;
GRANT UPDATE (before_json, after_json) ON lethe_action TO lethe_curator;
GRANT UPDATE (metadata_json) ON memory_forgetting_event TO lethe_curator;
GRANT UPDATE (snapshot_json) ON lethe_procedure_version TO lethe_curator;
GRANT UPDATE (original, sha256, bytes) ON lethe_archive TO lethe_curator;

-- A session of a Lethe role never holds a transaction (and its locks) open for long, nor
-- runs a statement for ever. Role settings are not inherited from groups: every member gets
-- them here, and `lethe admin add-*` gives them to the roles it makes.
DO $$
DECLARE
    r text;
BEGIN
    FOR r IN SELECT m.rolname FROM pg_catalog.pg_roles m
             WHERE m.rolname IN ('lethe_reader', 'lethe_agent', 'lethe_curator')
                OR (NOT m.rolsuper AND pg_catalog.pg_has_role(m.oid, 'lethe_reader', 'MEMBER')) LOOP
        BEGIN
            EXECUTE format('ALTER ROLE %I IN DATABASE %I SET idle_in_transaction_session_timeout = %L',
                r, current_database(), '120s');
            EXECUTE format('ALTER ROLE %I IN DATABASE %I SET statement_timeout = %L', r, current_database(), '600s');
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE WARNING 'role %: no right to set its timeouts (a role made by another owner)', r;
        END;
    END LOOP;
END
$$;
