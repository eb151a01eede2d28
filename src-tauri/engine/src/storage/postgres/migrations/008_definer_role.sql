-- Lethe's functions run as a role that cannot log in. Until this migration every SECURITY
-- DEFINER function and trigger was owned by the role that ran `lethe admin setup`: a login
-- role that owns the tables, bypasses row-level security and may run DDL, so a fault in any
-- function ran with all of that. After it they are owned by `lethe_definer_<database oid>`:
-- NOLOGIN, one per database (a role is the whole server's, and one shared by two databases
-- would let the owner of one reach the other's tables), with SELECT, INSERT, UPDATE and
-- DELETE on Lethe's tables and nothing else: no DDL, no TRUNCATE, and row-level security
-- applies to it (a policy lets it see every team: the functions check the team
-- themselves, as they did when the owner ran them).
--
-- `lethe_definer_handover(schema)` does the work and is run again at the end of every
-- `admin setup` (with the schema of the store: its own search path is the catalog's), so that a function or table a later migration (or pgvector's column) adds
-- is handed over too. It is the setup role's alone.
--
-- The forgetting batch's writes on a team store are one function call per chunk,
-- `lethe_forget_chunk`: it checks the caller's role and team once, stamps the server's clock,
-- validates every decision, and writes the soft deletes, the review band and their events
-- (`policy` for the soft ones, with the run) in the caller's transaction. Rows a definer
-- function writes skip the per-row BEFORE triggers that stamp the clock and the actor (the
-- function stamps them itself; a trigger `WHEN` compares the statement's current user, which
-- is the definer only inside such a function): each of those triggers was a definer call
-- per row, which made the batch 2–3 times slower. So a function that writes memory_item,
-- memory_forgetting_event or lethe_review must stamp its rows as these triggers would.
-- Written directly by a Lethe role, a forgetting event under the actor `policy` is now the
-- role's own, but for the `hard` event of a purge the team lead has just made (the memory is
-- gone from the team).

CREATE OR REPLACE FUNCTION lethe_definer_handover(p_schema name) RETURNS text LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    s text := pg_catalog.quote_ident(p_schema);
    ns oid := (SELECT n.oid FROM pg_catalog.pg_namespace n WHERE n.nspname = p_schema);
    r text := 'lethe_definer_' || (SELECT d.oid FROM pg_catalog.pg_database d
                                   WHERE d.datname = pg_catalog.current_database());
    t text;
    f text;
    lent boolean := false;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
        BEGIN
            EXECUTE format('CREATE ROLE %I NOLOGIN NOINHERIT', r);
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;
        END;
    END IF;
    -- A role made before may have gained LOGIN by hand: it is a login no longer.
    IF (SELECT rolcanlogin FROM pg_catalog.pg_roles WHERE rolname = r) THEN
        EXECUTE format('ALTER ROLE %I NOLOGIN', r);
    END IF;
    -- The setup role hands its functions over, and replaces them in later migrations: it
    -- is a member that may SET ROLE to the definer and inherits its rights (PostgreSQL 16
    -- gives the creator of a role ADMIN on it only).
    IF pg_catalog.current_setting('server_version_num')::int >= 160000 THEN
        EXECUTE format('GRANT %I TO %I WITH INHERIT TRUE, SET TRUE', r, current_user);
    ELSIF NOT pg_catalog.pg_has_role(current_user, r, 'MEMBER') THEN
        EXECUTE format('GRANT %I TO %I', r, current_user);
    END IF;
    EXECUTE format('GRANT USAGE ON SCHEMA %s TO %I', s, r);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %s TO %I', s, r);
    EXECUTE format('GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA %s TO %I', s, r);
    -- A policy is made once: making one locks its table against every reader, which a
    -- setup run again on a busy store must not do.
    FOR t IN SELECT c.relname FROM pg_catalog.pg_class c
             WHERE c.relnamespace = ns AND c.relkind = 'r'
                AND c.relrowsecurity
                AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_policy p
                                WHERE p.polrelid = c.oid AND p.polname = 'lethe_definer_rows') LOOP
        EXECUTE format('CREATE POLICY lethe_definer_rows ON %s.%I TO %I USING (true) WITH CHECK (true)', s, t, r);
    END LOOP;
    FOR f IN SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc p
             WHERE p.pronamespace = ns
                AND (p.proname LIKE 'lethe\_%' OR p.proname IN ('typeof', 'instr'))
                AND p.proname <> 'lethe_definer_handover'
                AND p.proowner <> r::regrole LOOP
        -- PostgreSQL gives a function only to a role that may create in its schema: the
        -- right is lent for the handover.
        IF NOT lent THEN
            EXECUTE format('GRANT CREATE ON SCHEMA %s TO %I', s, r);
            lent := true;
        END IF;
        EXECUTE format('ALTER FUNCTION %s OWNER TO %I', f, r);
    END LOOP;
    IF lent THEN
        EXECUTE format('REVOKE CREATE ON SCHEMA %s FROM %I', s, r);
    END IF;
    RETURN r;
END
$f$;
REVOKE ALL ON FUNCTION lethe_definer_handover(name) FROM PUBLIC;


DO $do$
DECLARE
    s text := quote_ident(current_schema());
    body text;
BEGIN
    body := $body$
-- The forgetting batch's soft deletes, review entries and exits for one chunk of decisions,
-- of the caller's team. `p_batch` is a JSON array of decisions {n, kind (soft, review or
-- leave), rowid, id, reason, policy, score, in_band, ev (the event's id)} in the batch's
-- order; `p_ttl` the quarantine's days; `p_run` the run the soft events name; `p_at` the
-- engine's clock, which only the owner's rows keep (as the triggers do: a Lethe role's rows
-- carry the server's clock). A row no longer active or now pinned is left alone, a memory
-- already in the band gets no second event. Returns the number of events written.
CREATE OR REPLACE FUNCTION @S@.lethe_forget_chunk(p_batch text, p_ttl bigint, p_run text, p_at text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_session_kind();
    t text := @S@.lethe_team();
    now_ text;
    meta text;
    review_meta text;
    bad text;
    n bigint;
BEGIN
    IF k NOT IN ('agent', 'curator', 'owner') THEN
        RAISE EXCEPTION 'the role % writes nothing', session_user USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_run IS NULL OR p_run !~ '^run_[0-9a-f]{32}$' THEN
        RAISE EXCEPTION 'a run id is run_ and 32 hex digits' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_ttl IS NULL OR p_ttl < 0 OR p_ttl > 36500 THEN
        RAISE EXCEPTION 'a quarantine lasts 0 to 36500 days' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_batch IS NULL OR pg_catalog.length(p_batch) > 64 * 1024 * 1024 THEN
        RAISE EXCEPTION 'a chunk of decisions is a JSON array of at most 64 MB' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT pg_catalog.left(COALESCE(d.id, 'NULL'), 80) INTO bad
    FROM pg_catalog.json_to_recordset(p_batch::json) AS d(n bigint, kind text, rowid bigint, id text, reason text,
        policy text, score double precision, in_band boolean, ev text)
    WHERE d.n IS NULL OR d.id IS NULL OR pg_catalog.length(d.id) > 200 OR d.rowid IS NULL
        OR d.kind IS NULL OR d.kind NOT IN ('soft', 'review', 'leave')
        OR (d.kind = 'soft' AND COALESCE(d.policy, '') NOT IN ('working-gate', 'forget-score'))
        OR (d.kind = 'review' AND COALESCE(d.policy, '') <> 'review-band')
        OR (d.kind <> 'leave' AND (d.ev IS NULL OR d.ev !~ '^fev_[0-9a-f-]{36}$'
            OR d.score IS NULL OR d.score = 'NaN'::float8 OR d.score NOT BETWEEN -1e6 AND 1e6
            OR pg_catalog.length(COALESCE(d.reason, '')) > 1000))
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'a decision of the chunk is malformed (memory %)', bad USING ERRCODE = 'invalid_parameter_value';
    END IF;
    now_ := CASE WHEN k = 'owner' AND p_at IS NOT NULL THEN p_at ELSE @S@.lethe_now() END;
    -- Written as the engine writes it in a file (`lethe forget --undo` finds a run's events
    -- by this text); the run id was checked above.
    meta := '{"actor":"policy","run":"' || p_run || '"}';
    -- A review event names the role that ran the batch, as the audit trigger names it.
    review_meta := CASE WHEN k = 'owner' THEN NULL
                        ELSE pg_catalog.jsonb_build_object('actor', @S@.lethe_session_actor())::text END;
    WITH d AS (
        SELECT * FROM pg_catalog.json_to_recordset(p_batch::json) AS d(n bigint, kind text, rowid bigint, id text,
            reason text, policy text, score double precision, in_band boolean, ev text)),
    soft AS (
        UPDATE @S@.memory_item m SET is_deleted = 1, deleted_at = now_
        FROM d WHERE d.kind = 'soft' AND m.rowid = d.rowid AND m.id = d.id AND m.team = t
            AND COALESCE(m.is_deleted, 0) = 0 AND COALESCE(m.pinned, 0) = 0
        RETURNING d.n),
    review AS (
        INSERT INTO @S@.lethe_review (memory_id, entered_at, team)
        SELECT d.id, now_, t FROM d
        WHERE d.kind = 'review' AND EXISTS (SELECT 1 FROM @S@.memory_item m WHERE m.id = d.id AND m.team = t)
        ON CONFLICT DO NOTHING RETURNING memory_id)
    INSERT INTO @S@.memory_forgetting_event
        (id, memory_id, action, reason, policy, forget_score, ttl_days, created_at, metadata_json, team)
    SELECT d.ev, d.id, d.kind, d.reason, d.policy, d.score,
           CASE WHEN d.kind = 'soft' THEN p_ttl END, now_,
           CASE WHEN d.kind = 'soft' THEN meta ELSE review_meta END, t
    FROM d
    WHERE d.n IN (SELECT soft.n FROM soft) OR (d.kind = 'review' AND d.id IN (SELECT memory_id FROM review))
    ORDER BY d.n;
    GET DIAGNOSTICS n = ROW_COUNT;
    -- Out of the band: the memories the policy lets go, and those of the band now in quarantine.
    DELETE FROM @S@.lethe_review r
    USING pg_catalog.json_to_recordset(p_batch::json) AS d(kind text, id text, in_band boolean)
    WHERE r.memory_id = d.id AND r.team = t
        AND (d.kind = 'leave' OR (d.kind = 'soft' AND d.in_band AND EXISTS (
            SELECT 1 FROM @S@.memory_item m WHERE m.id = d.id AND m.team = t AND COALESCE(m.is_deleted, 0) <> 0)));
    RETURN n;
END
$f$;

-- 006's audit trigger, with one change: a forgetting event a Lethe role writes directly is
-- never the policy's, but for the `hard` event of a purge by the team lead (the memory is
-- gone from the team). The batch's policy events come from lethe_forget_chunk.
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
    IF NOT @S@.lethe_actor_allowed(claimed)
        OR (claimed = 'policy' AND NOT (NEW.action = 'hard' AND k = 'curator'
            AND NOT EXISTS (SELECT 1 FROM @S@.memory_item m WHERE m.id = NEW.memory_id AND m.team = @S@.lethe_team()))) THEN
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

-- The BEFORE triggers that stamp a row: not for rows a definer function writes.
DROP TRIGGER IF EXISTS lethe_memory_rules ON @S@.memory_item;
CREATE TRIGGER lethe_memory_rules BEFORE INSERT OR UPDATE ON @S@.memory_item FOR EACH ROW
    WHEN (NOT pg_catalog.starts_with(current_user::text, 'lethe_definer_'))
    EXECUTE FUNCTION @S@.lethe_memory_rules();
DROP TRIGGER IF EXISTS lethe_event_actor ON @S@.memory_forgetting_event;
CREATE TRIGGER lethe_event_actor BEFORE INSERT OR UPDATE ON @S@.memory_forgetting_event FOR EACH ROW
    WHEN (NOT pg_catalog.starts_with(current_user::text, 'lethe_definer_'))
    EXECUTE FUNCTION @S@.lethe_actor_is_the_role();
DROP TRIGGER IF EXISTS lethe_row_rules ON @S@.lethe_review;
CREATE TRIGGER lethe_row_rules BEFORE INSERT OR UPDATE ON @S@.lethe_review FOR EACH ROW
    WHEN (NOT pg_catalog.starts_with(current_user::text, 'lethe_definer_'))
    EXECUTE FUNCTION @S@.lethe_row_rules();
$body$;
    EXECUTE replace(body, '@S@', s);
    EXECUTE format('REVOKE ALL ON FUNCTION %s.lethe_forget_chunk(text, bigint, text, text) FROM PUBLIC', s);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s.lethe_forget_chunk(text, bigint, text, text) TO lethe_agent', s);
END
$do$;

SELECT lethe_definer_handover(current_schema());
