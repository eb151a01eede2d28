-- The database is the API for every change of a memory row and of the audit: Lethe's roles
-- keep no UPDATE right on memory_item, lethe_action, memory_forgetting_event, lethe_archive,
-- lethe_procedure_version or lethe_recall_log. Before this migration an agent's column grants
-- (open to psql with the password its MCP configuration holds) let it rewrite its own team's
-- content, tags, procedure fields and counters with no audit row and no validation, a curator
-- could rewrite the before/after text of any audit row (the grant existed so that erasure
-- could remove a deleted memory's text), and any writing role could call the forgetting
-- batch's function and choose which of its team's memories were quarantined "by policy".
--
-- After it, each operation is one SECURITY DEFINER function (owned by the NOLOGIN definer
-- role of migration 8, search path `pg_catalog, pg_temp`, every table named with its schema)
-- that checks the caller's role and team, validates its arguments (NULLs, ranges, sizes: a
-- content is at most the team's max_content_bytes, 1 MiB by default; tags, reasons, names and
-- audit states far less; no text more than the settings' 64 MiB ceiling), stamps the server's
-- clock (only the owner's rows keep the engine's clock, as the triggers let them) and writes
-- through the journal trigger, which names the role, the time and the columns changed; pin,
-- importance, cite, edit and restore write their action row (lethe_action) themselves, with
-- the role as the actor and the server's time:
--   * lethe_memory_pin, lethe_memory_importance (the team lead's), lethe_memory_count (cite,
--     view), lethe_memory_restore (one memory, or a forget run's undo), lethe_memory_quarantine (with its `soft` event, actor and
--     policy the role's), lethe_memory_edit (compare-and-swap on the version), lethe_memory_tags,
--     lethe_memory_procedure (the procedure's compare-and-swap), lethe_memory_reflection,
--     lethe_memory_archive and lethe_memory_unarchive (the text comes from the archive row and
--     its SHA-256 is checked), lethe_memory_episodic (a session's end), and the team lead's
--     redaction of stored secrets (lethe_memory_redact, lethe_procedure_version_redact,
--     lethe_archive_redact);
--   * lethe_audit_erase (the team lead's, for a memory deleted for ever or a secret redacted):
--     the text of a memory's audit rows becomes its erased form, and nothing else: every value
--     either stays or becomes {"erased_bytes": n}, so no audit text can be written;
--   * lethe_recall_log_erase: a recall-log entry that returned a memory being deleted for ever
--     loses its query and context and that memory from its results, and nothing else;
--   * lethe_forget_chunk is the team lead's (and the owner's): the batch's score comes from
--     inputs the server does not hold (vectors compared in the engine, neighbour context,
--     decay settings) and recomputing it in SQL would be a second copy of the engine's
--     formula, so the database verifies who ran the batch instead: an agent may no longer call
--     it, and every event it writes names the curator's role.
-- The rows an agent derives and rewrites (vectors, neighbour lists, centroids, signatures,
-- recall statistics, the recall log's hit scores) and the team lead's settings keep their
-- column grants: their upserts are shared with the file's SQL.
-- Applied by `lethe admin setup` as the database's owner; a store set up before keeps every
-- memory, audit row and role (no row is rewritten).

DO $do$
DECLARE
    s text := quote_ident(current_schema());
    body text;
    f text;
BEGIN
    body := $body$
-- The caller's kind if it is one of `kinds` (the owner always is), else a refusal.
CREATE OR REPLACE FUNCTION @S@.lethe_require(kinds text[]) RETURNS text LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_session_kind();
BEGIN
    IF k = 'owner' OR k = ANY (kinds) THEN
        RETURN k;
    END IF;
    IF k = 'agent' AND 'curator' = ANY (kinds) THEN
        RAISE EXCEPTION 'the role % is an agent: this is for the team lead (a curator role)', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RAISE EXCEPTION 'the role % writes nothing here', session_user USING ERRCODE = 'insufficient_privilege';
END
$f$;

-- The memory `p_id` of the caller's team (any team's for the owner), locked for the change;
-- a refusal naming the id when there is none (another team's id gets the same answer).
CREATE OR REPLACE FUNCTION @S@.lethe_memory_of(p_id text, k text) RETURNS @S@.memory_item LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    m @S@.memory_item;
BEGIN
    IF p_id IS NULL OR pg_catalog.length(p_id) > 200 THEN
        RAISE EXCEPTION 'a memory id is 1 to 200 characters' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT * INTO m FROM @S@.memory_item WHERE id = p_id AND (k = 'owner' OR team = @S@.lethe_team()) FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no memory %', pg_catalog.left(p_id, 80) USING ERRCODE = 'no_data_found';
    END IF;
    RETURN m;
END
$f$;

-- The clock a row is stamped with: the engine's for the owner (time travel, `--now`), the
-- server's for every Lethe role.
CREATE OR REPLACE FUNCTION @S@.lethe_clock(k text, p_at text) RETURNS text LANGUAGE sql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
    SELECT CASE WHEN k = 'owner' AND p_at ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$' THEN p_at ELSE @S@.lethe_now() END
$f$;

-- A text argument: not NULL (unless allowed), at most `max_bytes`, no NUL.
CREATE OR REPLACE FUNCTION @S@.lethe_check_text(what text, v text, max_bytes int, nullable boolean) RETURNS void
    LANGUAGE plpgsql IMMUTABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    IF v IS NULL THEN
        IF NOT nullable THEN
            RAISE EXCEPTION '% is missing', what USING ERRCODE = 'null_value_not_allowed';
        END IF;
        RETURN;
    END IF;
    IF pg_catalog.octet_length(v) > max_bytes THEN
        RAISE EXCEPTION '% is % bytes, more than %', what, pg_catalog.octet_length(v), max_bytes
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$f$;

-- A JSON argument of the given kind ('array', 'object'; NULL: any), or NULL when allowed.
CREATE OR REPLACE FUNCTION @S@.lethe_check_json(what text, v text, kind text, max_bytes int, nullable boolean) RETURNS void
    LANGUAGE plpgsql IMMUTABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    PERFORM @S@.lethe_check_text(what, v, max_bytes, nullable);
    IF v IS NOT NULL THEN
        BEGIN
            -- json, not jsonb: a text may hold \u0000, which jsonb refuses and a text column keeps.
            IF pg_catalog.json_typeof(v::json) <> COALESCE(kind, pg_catalog.json_typeof(v::json)) THEN
                RAISE EXCEPTION '% is not a JSON %', what, kind USING ERRCODE = 'invalid_parameter_value';
            END IF;
        EXCEPTION WHEN invalid_text_representation THEN
            RAISE EXCEPTION '% is not JSON', what USING ERRCODE = 'invalid_parameter_value';
        END;
    END IF;
END
$f$;

-- Tags as the engine stores them: a JSON array of at most 64 strings of 1 to 100 bytes.
CREATE OR REPLACE FUNCTION @S@.lethe_check_tags(v text) RETURNS void LANGUAGE plpgsql IMMUTABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    PERFORM @S@.lethe_check_json('tags', v, 'array', 64 * 1024, false);
    IF pg_catalog.json_array_length(v::json) > 64 OR EXISTS (
        SELECT 1 FROM pg_catalog.json_array_elements(v::json) AS e(x)
        WHERE pg_catalog.json_typeof(e.x) <> 'string'
            OR pg_catalog.octet_length(e.x #>> '{}') NOT BETWEEN 1 AND 100
            OR pg_catalog.btrim(e.x #>> '{}') = '') THEN
        RAISE EXCEPTION 'tags are at most 64 strings of 1 to 100 bytes' USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$f$;

-- Content as the engine stores it: not blank, at most the team's max_content_bytes (1 MiB
-- unless the team lead changed it; never more than the 64 MiB the settings allow).
CREATE OR REPLACE FUNCTION @S@.lethe_check_content(v text, t text) RETURNS void LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    max_bytes bigint;
BEGIN
    SELECT (s.value::jsonb ->> 'max_content_bytes')::bigint INTO max_bytes
    FROM @S@.lethe_settings s WHERE s.team = t AND s.key = 'policy';
    PERFORM @S@.lethe_check_text('content', v, LEAST(COALESCE(max_bytes, 1024 * 1024), 64 * 1024 * 1024)::int, false);
    IF pg_catalog.btrim(v, E' \t\r\n') = '' THEN
        RAISE EXCEPTION 'content is empty' USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$f$;

-- The action row of a change of memory `m`, written by the change's own function in its
-- transaction: the actor is the role (the owner's claimed actor is kept), the time the
-- server's (the owner's: `now_`). `p_before` and `p_after` are the memory's states as the
-- engine snapshots them (JSON objects of at most 64 kB).
CREATE OR REPLACE FUNCTION @S@.lethe_audit_action(k text, m @S@.memory_item, p_action text, p_actor text,
    p_before text, p_after text, now_ text) RETURNS void LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    PERFORM @S@.lethe_check_json('the state before', p_before, 'object', 64 * 1024, false);
    PERFORM @S@.lethe_check_json('the state after', p_after, 'object', 64 * 1024, false);
    IF k = 'owner' THEN
        PERFORM @S@.lethe_check_text('actor', p_actor, 200, false);
    END IF;
    INSERT INTO @S@.lethe_action (memory_id, action, actor, before_json, after_json, created_at, team)
    VALUES (m.id, p_action, CASE WHEN k = 'owner' THEN p_actor ELSE @S@.lethe_session_actor() END,
            p_before, p_after, now_, m.team);
END
$f$;

-- Pin or unpin: the team lead's.
CREATE OR REPLACE FUNCTION @S@.lethe_memory_pin(p_id text, p_pinned boolean, p_actor text, p_before text,
    p_after text, p_at text) RETURNS bigint LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{curator}');
    m @S@.memory_item := @S@.lethe_memory_of(p_id, k);
BEGIN
    IF p_pinned IS NULL THEN
        RAISE EXCEPTION 'pinned is missing' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    UPDATE @S@.memory_item SET pinned = CASE WHEN p_pinned THEN 1 ELSE 0 END WHERE rowid = m.rowid;
    PERFORM @S@.lethe_audit_action(k, m, CASE WHEN p_pinned THEN 'pin' ELSE 'unpin' END, p_actor, p_before, p_after,
        @S@.lethe_clock(k, p_at));
    RETURN 1;
END
$f$;

-- A memory's importance, a number in [0, 1]: the team lead's.
CREATE OR REPLACE FUNCTION @S@.lethe_memory_importance(p_id text, p_value double precision, p_actor text,
    p_before text, p_after text, p_at text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{curator}');
    m @S@.memory_item := @S@.lethe_memory_of(p_id, k);
BEGIN
    IF p_value IS NULL OR p_value = 'NaN'::float8 OR p_value < 0 OR p_value > 1 THEN
        RAISE EXCEPTION 'importance must be a number in [0, 1]' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE @S@.memory_item SET importance = p_value WHERE rowid = m.rowid;
    PERFORM @S@.lethe_audit_action(k, m, 'importance', p_actor, p_before, p_after, @S@.lethe_clock(k, p_at));
    RETURN 1;
END
$f$;

-- A cite or a view: its counter goes up by one and the memory was used now. A cite is
-- audited (the states go with it), a view is not (it is a read).
CREATE OR REPLACE FUNCTION @S@.lethe_memory_count(p_id text, p_what text, p_actor text, p_before text, p_after text,
    p_at text) RETURNS bigint LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    m @S@.memory_item := @S@.lethe_memory_of(p_id, k);
    now_ text := @S@.lethe_clock(k, p_at);
BEGIN
    IF p_what = 'cite' THEN
        UPDATE @S@.memory_item SET cite_count = COALESCE(cite_count, 0) + 1, last_accessed = now_ WHERE rowid = m.rowid;
        PERFORM @S@.lethe_audit_action(k, m, 'cite', p_actor, p_before, p_after, now_);
    ELSIF p_what = 'view' THEN
        UPDATE @S@.memory_item SET view_count = COALESCE(view_count, 0) + 1, last_accessed = now_ WHERE rowid = m.rowid;
    ELSE
        RAISE EXCEPTION 'a use is cite or view' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN 1;
END
$f$;

-- Back from quarantine, one memory, with its `restore` action.
CREATE OR REPLACE FUNCTION @S@.lethe_memory_restore(p_id text, p_actor text, p_before text, p_after text, p_at text)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    m @S@.memory_item := @S@.lethe_memory_of(p_id, k);
BEGIN
    IF COALESCE(m.is_deleted, 0) = 0 THEN
        RAISE EXCEPTION 'memory % is not in quarantine', m.id USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE @S@.memory_item SET is_deleted = 0, deleted_at = NULL WHERE rowid = m.rowid;
    PERFORM @S@.lethe_audit_action(k, m, 'restore', p_actor, p_before, p_after, @S@.lethe_clock(k, p_at));
    RETURN 1;
END
$f$;

-- The undo of a forget run (`lethe forget --undo`, whose one action names every memory): of
-- `p_ids`, the memories of the caller's team in quarantine whose newest `soft` event is a
-- forget run's come back. Returns how many came back.
CREATE OR REPLACE FUNCTION @S@.lethe_memory_restore(p_ids text[]) RETURNS bigint LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    n bigint;
BEGIN
    IF p_ids IS NULL OR pg_catalog.cardinality(p_ids) > 100000 THEN
        RAISE EXCEPTION 'restore takes a list of at most 100000 ids' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE @S@.memory_item m SET is_deleted = 0, deleted_at = NULL
    WHERE m.id = ANY (p_ids) AND (k = 'owner' OR m.team = @S@.lethe_team()) AND COALESCE(m.is_deleted, 0) <> 0
        AND (SELECT e.metadata_json::jsonb ? 'run' FROM @S@.memory_forgetting_event e
             WHERE e.memory_id = m.id AND e.team = m.team AND e.action = 'soft'
             ORDER BY e.created_at DESC, e.id DESC LIMIT 1);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$f$;

-- Into quarantine by a person or an agent, with its `soft` event: the quarantine starts at
-- the server's clock, the event names the role (`manual` for the team lead, `agent` for an
-- agent). `p_ev` is the event's id (fev_ and a UUID). Returns 0 when the memory is already
-- in quarantine (nothing written).
CREATE OR REPLACE FUNCTION @S@.lethe_memory_quarantine(p_id text, p_ev text, p_reason text, p_policy text,
    p_score double precision, p_ttl bigint, p_metadata text, p_at text) RETURNS bigint LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    m @S@.memory_item := @S@.lethe_memory_of(p_id, k);
    now_ text := @S@.lethe_clock(k, p_at);
    meta jsonb;
BEGIN
    IF p_ev IS NULL OR p_ev !~ '^fev_[0-9a-f-]{36}$' THEN
        RAISE EXCEPTION 'an event id is fev_ and a UUID' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM @S@.lethe_check_text('reason', p_reason, 2000, false);
    PERFORM @S@.lethe_check_json('metadata', p_metadata, 'object', 64 * 1024, true);
    IF p_policy IS NULL OR p_policy NOT IN ('manual', 'agent')
        OR (k = 'agent' AND p_policy <> 'agent') OR (k = 'curator' AND p_policy <> 'manual') THEN
        RAISE EXCEPTION 'a quarantine by hand is manual (a person) or agent (an agent)' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_score = 'NaN'::float8 OR p_score NOT BETWEEN -1e6 AND 1e6 THEN
        RAISE EXCEPTION 'a score is a finite number' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_ttl IS NULL OR p_ttl < 0 OR p_ttl > 36500 THEN
        RAISE EXCEPTION 'a quarantine lasts 0 to 36500 days' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF COALESCE(m.is_deleted, 0) <> 0 THEN
        RETURN 0;
    END IF;
    UPDATE @S@.memory_item SET is_deleted = 1, deleted_at = now_ WHERE rowid = m.rowid;
    meta := COALESCE(p_metadata::jsonb, '{}'::jsonb);
    IF k <> 'owner' THEN
        meta := meta || pg_catalog.jsonb_build_object('actor', @S@.lethe_session_actor());
    END IF;
    INSERT INTO @S@.memory_forgetting_event
        (id, memory_id, action, reason, policy, forget_score, ttl_days, created_at, metadata_json, team)
    VALUES (p_ev, m.id, 'soft', p_reason, p_policy, p_score, p_ttl, now_, meta::text, m.team);
    DELETE FROM @S@.lethe_review WHERE memory_id = m.id AND team = m.team;
    RETURN 1;
END
$f$;

-- A new text for a memory that is not a procedure: the version must still be `p_expected`
-- (compare-and-swap; NULL: last writer wins), the edit counts as a use. Returns 0 on a
-- stale version (nothing written).
CREATE OR REPLACE FUNCTION @S@.lethe_memory_edit(p_id text, p_content text, p_expected bigint, p_actor text,
    p_before text, p_after text, p_at text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    m @S@.memory_item := @S@.lethe_memory_of(p_id, k);
    now_ text := @S@.lethe_clock(k, p_at);
BEGIN
    PERFORM @S@.lethe_check_content(p_content, m.team);
    IF m.type = 'procedural' THEN
        RAISE EXCEPTION 'memory % is a procedure: its edits keep versions (lethe_memory_procedure)', m.id
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM @S@.lethe_archive a WHERE a.memory_id = m.id AND a.team = m.team AND a.restored_at IS NULL) THEN
        RAISE EXCEPTION 'memory % is archived; unarchive it before editing', m.id USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_expected IS NOT NULL AND COALESCE(m.version, 1) <> p_expected THEN
        RETURN 0;
    END IF;
    UPDATE @S@.memory_item SET content = p_content, edit_count = COALESCE(edit_count, 0) + 1, last_accessed = now_,
        version = COALESCE(version, 1) + 1
    WHERE rowid = m.rowid;
    PERFORM @S@.lethe_audit_action(k, m, 'edit', p_actor, p_before, p_after, now_);
    RETURN 1;
END
$f$;

-- A memory's tags (the engine adds the tags of the personal data it redacted).
CREATE OR REPLACE FUNCTION @S@.lethe_memory_tags(p_id text, p_tags text) RETURNS bigint LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    m @S@.memory_item := @S@.lethe_memory_of(p_id, k);
BEGIN
    PERFORM @S@.lethe_check_tags(p_tags);
    UPDATE @S@.memory_item SET tags = p_tags WHERE rowid = m.rowid;
    RETURN 1;
END
$f$;

-- A procedure's compare-and-swap: the fields given (NULL: unchanged) if the version is still
-- `p_expected`; a new version and an edit. Returns 0 on a stale version (nothing written).
CREATE OR REPLACE FUNCTION @S@.lethe_memory_procedure(p_id text, p_expected bigint, p_content text, p_task_goal text,
    p_steps text, p_trigger_conditions text, p_workflow_name text, p_skill_name text, p_at text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    m @S@.memory_item := @S@.lethe_memory_of(p_id, k);
    now_ text := @S@.lethe_clock(k, p_at);
BEGIN
    IF m.type <> 'procedural' THEN
        RAISE EXCEPTION 'memory % is not a procedure', m.id USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_expected IS NULL THEN
        RAISE EXCEPTION 'a procedure changes from a version' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF p_content IS NOT NULL THEN
        PERFORM @S@.lethe_check_content(p_content, m.team);
    END IF;
    PERFORM @S@.lethe_check_text('task goal', p_task_goal, 64 * 1024, true);
    PERFORM @S@.lethe_check_json('steps', p_steps, 'array', 64 * 1024 * 1024, true);
    PERFORM @S@.lethe_check_json('trigger conditions', p_trigger_conditions, 'object', 64 * 1024, true);
    PERFORM @S@.lethe_check_text('workflow name', p_workflow_name, 10000, true);
    PERFORM @S@.lethe_check_text('skill name', p_skill_name, 10000, true);
    IF COALESCE(m.version, 1) <> p_expected THEN
        RETURN 0;
    END IF;
    UPDATE @S@.memory_item SET content = COALESCE(p_content, content), task_goal = COALESCE(p_task_goal, task_goal),
        steps = COALESCE(p_steps, steps), trigger_conditions = COALESCE(p_trigger_conditions, trigger_conditions),
        workflow_name = COALESCE(p_workflow_name, workflow_name), skill_name = COALESCE(p_skill_name, skill_name),
        version = p_expected + 1, edit_count = COALESCE(edit_count, 0) + 1, last_accessed = now_
    WHERE rowid = m.rowid;
    RETURN 1;
END
$f$;

-- A procedure's reflection notes (a JSON array; the engine keeps the newest).
CREATE OR REPLACE FUNCTION @S@.lethe_memory_reflection(p_id text, p_notes text) RETURNS bigint LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    m @S@.memory_item := @S@.lethe_memory_of(p_id, k);
BEGIN
    IF m.type <> 'procedural' THEN
        RAISE EXCEPTION 'memory % is not procedural; reflection notes belong to procedures', m.id
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM @S@.lethe_check_json('reflection notes', p_notes, 'array', 64 * 1024 * 1024, false);
    UPDATE @S@.memory_item SET reflection_notes = p_notes WHERE rowid = m.rowid;
    RETURN 1;
END
$f$;

-- The archive's placeholder replaces the text of the memory the archive row `p_no` (of the
-- caller's team, not restored) holds, if the memory's text is still that row's original.
CREATE OR REPLACE FUNCTION @S@.lethe_memory_archive(p_no bigint, p_placeholder text) RETURNS bigint LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    a record;
    m @S@.memory_item;
BEGIN
    SELECT * INTO a FROM @S@.lethe_archive WHERE archive_no = p_no AND (k = 'owner' OR team = @S@.lethe_team())
        AND restored_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no archive #% to apply', COALESCE(p_no::text, 'NULL') USING ERRCODE = 'no_data_found';
    END IF;
    m := @S@.lethe_memory_of(a.memory_id, k);
    IF p_placeholder IS DISTINCT FROM '[Archive#' || a.archive_no || ': ' || a.memo || ']'
        OR pg_catalog.convert_to(m.content, 'UTF8') IS DISTINCT FROM a.original THEN
        RAISE EXCEPTION 'archive #% does not hold this memory''s text, or its placeholder is not its own', p_no
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE @S@.memory_item SET content = p_placeholder WHERE rowid = m.rowid;
    RETURN 1;
END
$f$;

-- The original text of archive `p_no` (its SHA-256 checked) back into its memory; the row is
-- marked restored at the server's clock.
CREATE OR REPLACE FUNCTION @S@.lethe_memory_unarchive(p_no bigint, p_at text) RETURNS bigint LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    now_ text := @S@.lethe_clock(k, p_at);
    a record;
    m @S@.memory_item;
BEGIN
    SELECT * INTO a FROM @S@.lethe_archive WHERE archive_no = p_no AND (k = 'owner' OR team = @S@.lethe_team())
        AND restored_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no archive #% to restore', COALESCE(p_no::text, 'NULL') USING ERRCODE = 'no_data_found';
    END IF;
    IF pg_catalog.encode(pg_catalog.sha256(a.original), 'hex') <> a.sha256 THEN
        RAISE EXCEPTION 'archive #% does not match its SHA-256', p_no USING ERRCODE = 'data_corrupted';
    END IF;
    m := @S@.lethe_memory_of(a.memory_id, k);
    UPDATE @S@.memory_item SET content = pg_catalog.convert_from(a.original, 'UTF8') WHERE rowid = m.rowid;
    UPDATE @S@.lethe_archive SET restored_at = now_ WHERE archive_no = a.archive_no;
    RETURN 1;
END
$f$;

-- A session's end: its working memories become episodic.
CREATE OR REPLACE FUNCTION @S@.lethe_memory_episodic(p_id text) RETURNS bigint LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    m @S@.memory_item := @S@.lethe_memory_of(p_id, k);
BEGIN
    IF m.type <> 'working' THEN
        RETURN 0;
    END IF;
    UPDATE @S@.memory_item SET type = 'episodic' WHERE rowid = m.rowid;
    RETURN 1;
END
$f$;

-- The team lead's redaction of a secret found in a stored memory (`lethe scan --fix`): one
-- text column of the memory gets its redacted value.
CREATE OR REPLACE FUNCTION @S@.lethe_memory_redact(p_id text, p_column text, p_value text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{curator}');
    m @S@.memory_item := @S@.lethe_memory_of(p_id, k);
BEGIN
    IF p_column = 'content' THEN
        PERFORM @S@.lethe_check_content(p_value, m.team);
        UPDATE @S@.memory_item SET content = p_value WHERE rowid = m.rowid;
    ELSIF p_column = 'tags' THEN
        PERFORM @S@.lethe_check_tags(p_value);
        UPDATE @S@.memory_item SET tags = p_value WHERE rowid = m.rowid;
    ELSIF p_column IN ('source', 'task_goal', 'workflow_name', 'skill_name') THEN
        PERFORM @S@.lethe_check_text(p_column, p_value, 64 * 1024, true);
        EXECUTE pg_catalog.format('UPDATE @S@.memory_item SET %I = $1 WHERE rowid = $2', p_column) USING p_value, m.rowid;
    ELSIF p_column IN ('steps', 'reflection_notes', 'trigger_conditions') THEN
        PERFORM @S@.lethe_check_json(p_column, p_value, NULL, 64 * 1024 * 1024, true);
        EXECUTE pg_catalog.format('UPDATE @S@.memory_item SET %I = $1 WHERE rowid = $2', p_column) USING p_value, m.rowid;
    ELSE
        RAISE EXCEPTION 'a redaction changes content, tags, source, task_goal, workflow_name, skill_name, steps, reflection_notes or trigger_conditions'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN 1;
END
$f$;

CREATE OR REPLACE FUNCTION @S@.lethe_procedure_version_redact(p_id text, p_version bigint, p_snapshot text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{curator}');
    n bigint;
BEGIN
    PERFORM @S@.lethe_check_json('snapshot', p_snapshot, 'object', 64 * 1024 * 1024, false);
    UPDATE @S@.lethe_procedure_version SET snapshot_json = p_snapshot
    WHERE memory_id = p_id AND version = p_version AND (k = 'owner' OR team = @S@.lethe_team());
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$f$;

CREATE OR REPLACE FUNCTION @S@.lethe_archive_redact(p_no bigint, p_original bytea) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{curator}');
    n bigint;
BEGIN
    IF p_original IS NULL OR pg_catalog.length(p_original) > 64 * 1024 * 1024 THEN
        RAISE EXCEPTION 'an archived original is at most 64 MiB' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE @S@.lethe_archive SET original = p_original, sha256 = pg_catalog.encode(pg_catalog.sha256(p_original), 'hex'),
        bytes = pg_catalog.length(p_original)
    WHERE archive_no = p_no AND (k = 'owner' OR team = @S@.lethe_team());
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$f$;

-- lethe_is_erasure for texts that hold \u0000 (json, not jsonb): a kept value is the same text.
CREATE OR REPLACE FUNCTION @S@.lethe_is_erasure_text(old text, new text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    o json;
    n json;
BEGIN
    BEGIN
        n := new::json;
        o := old::json;
    EXCEPTION WHEN invalid_text_representation THEN
        RETURN false;
    END;
    IF pg_catalog.json_typeof(n) = 'object' AND (SELECT pg_catalog.array_agg(x) FROM pg_catalog.json_object_keys(n) x) = '{erased_bytes}'
        AND pg_catalog.json_typeof(n -> 'erased_bytes') = 'number' THEN
        RETURN true;
    END IF;
    IF pg_catalog.json_typeof(o) <> 'object' OR pg_catalog.json_typeof(n) <> 'object' THEN
        RETURN false;
    END IF;
    RETURN NOT EXISTS (SELECT 1 FROM pg_catalog.json_object_keys(o) x WHERE (n -> x) IS NULL)
        AND NOT EXISTS (
            SELECT 1 FROM pg_catalog.json_each(n) e
            WHERE (o -> e.key) IS NULL
                OR ((e.value)::text IS DISTINCT FROM (o -> e.key)::text
                    AND NOT (pg_catalog.json_typeof(e.value) = 'object'
                             AND (SELECT pg_catalog.array_agg(x) FROM pg_catalog.json_object_keys(e.value) x) = '{erased_bytes}'
                             AND pg_catalog.json_typeof(e.value -> 'erased_bytes') = 'number')));
END
$f$;

-- Whether `new` is `old` with some values replaced by their erased form ({"erased_bytes": n}):
-- the same keys, each value the same or erased; a scalar or text erased whole.
CREATE OR REPLACE FUNCTION @S@.lethe_is_erasure(old text, new text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    o jsonb;
    n jsonb;
BEGIN
    IF new IS NOT DISTINCT FROM old THEN
        RETURN true;
    END IF;
    IF old IS NULL OR new IS NULL THEN
        RETURN false;
    END IF;
    BEGIN
        n := new::jsonb;
    EXCEPTION WHEN invalid_text_representation THEN
        RETURN false;
    WHEN untranslatable_character THEN
        RETURN @S@.lethe_is_erasure_text(old, new);
    END;
    IF pg_catalog.jsonb_typeof(n) = 'object' AND (SELECT pg_catalog.array_agg(x) FROM pg_catalog.jsonb_object_keys(n) x) = '{erased_bytes}'
        AND pg_catalog.jsonb_typeof(n -> 'erased_bytes') = 'number' THEN
        RETURN true;
    END IF;
    BEGIN
        o := old::jsonb;
    EXCEPTION WHEN invalid_text_representation THEN
        RETURN false;
    WHEN untranslatable_character THEN
        RETURN @S@.lethe_is_erasure_text(old, new);
    END;
    IF pg_catalog.jsonb_typeof(o) <> 'object' OR pg_catalog.jsonb_typeof(n) <> 'object' THEN
        RETURN false;
    END IF;
    RETURN NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_object_keys(o) x WHERE NOT n ? x)
        AND NOT EXISTS (
            SELECT 1 FROM pg_catalog.jsonb_each(n) e
            WHERE NOT o ? e.key
                OR (e.value IS DISTINCT FROM o -> e.key
                    AND NOT (pg_catalog.jsonb_typeof(e.value) = 'object'
                             AND (SELECT pg_catalog.array_agg(x) FROM pg_catalog.jsonb_object_keys(e.value) x) = '{erased_bytes}'
                             AND pg_catalog.jsonb_typeof(e.value -> 'erased_bytes') = 'number')));
END
$f$;

-- The erasure of a memory's text from its audit rows, by the team lead: when the memory is
-- deleted for ever, and when `lethe scan --fix` redacts a secret stored in it. `p_rows` is a
-- JSON array of {kind: action|event, id, before, after | metadata}; each row must be the
-- memory's, of the caller's team, and each new value its old one with values erased
-- (lethe_is_erasure): text can go, none can be written. Returns the rows rewritten.
CREATE OR REPLACE FUNCTION @S@.lethe_audit_erase(p_memory_id text, p_rows text) RETURNS bigint LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{curator}');
    t text := @S@.lethe_team();
    r record;
    n bigint := 0;
    c bigint;
BEGIN
    IF p_memory_id IS NULL OR pg_catalog.length(p_memory_id) > 200 THEN
        RAISE EXCEPTION 'a memory id is 1 to 200 characters' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM @S@.lethe_check_json('audit rows', p_rows, 'array', 64 * 1024 * 1024, false);
    FOR r IN SELECT * FROM pg_catalog.jsonb_to_recordset(p_rows::jsonb)
             AS x(kind text, id text, before text, after text, metadata text) LOOP
        IF r.kind = 'action' AND r.id ~ '^[0-9]{1,18}$' THEN
            UPDATE @S@.lethe_action a SET before_json = r.before, after_json = r.after
            WHERE a.id = r.id::bigint AND a.memory_id = p_memory_id AND (k = 'owner' OR a.team = t)
                AND @S@.lethe_is_erasure(a.before_json, r.before) AND @S@.lethe_is_erasure(a.after_json, r.after);
        ELSIF r.kind = 'event' THEN
            UPDATE @S@.memory_forgetting_event e SET metadata_json = r.metadata
            WHERE e.id = r.id AND e.memory_id = p_memory_id AND (k = 'owner' OR e.team = t)
                AND @S@.lethe_is_erasure(e.metadata_json, r.metadata);
        ELSE
            RAISE EXCEPTION 'an audit row is an action (numeric id) or an event' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        GET DIAGNOSTICS c = ROW_COUNT;
        IF c = 0 THEN
            RAISE EXCEPTION 'audit row % of memory % is not the memory''s, or its new text is not its erased form',
                pg_catalog.left(COALESCE(r.id, 'NULL'), 80), pg_catalog.left(p_memory_id, 80)
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        n := n + c;
    END LOOP;
    RETURN n;
END
$f$;

-- A recall-log entry of the caller's team that returned memory `p_memory_id`, which the team
-- lead is deleting for ever: its query and context go (`p_context` must be the erased mark)
-- and the memory leaves its results (`p_results` must hold only results the entry held, each
-- an id and its score, and not that memory): text can go, none can be written. A score read
-- and written again by the engine may move in its last bit: it is compared to 1e-9.
CREATE OR REPLACE FUNCTION @S@.lethe_recall_log_erase(p_log bigint, p_memory_id text, p_context text, p_results text)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{curator}');
    n bigint;
BEGIN
    PERFORM @S@.lethe_check_json('context', p_context, 'object', 1024, false);
    PERFORM @S@.lethe_check_json('results', p_results, 'array', 64 * 1024 * 1024, false);
    IF p_context::jsonb <> '{"query_erased": true}'::jsonb THEN
        RAISE EXCEPTION 'an erased entry''s context is {"query_erased":true}' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE @S@.lethe_recall_log l SET query = '', context_json = p_context, results_json = p_results
    WHERE l.id = p_log AND (k = 'owner' OR l.team = @S@.lethe_team())
        AND EXISTS (SELECT 1 FROM @S@.lethe_recall_log_hit h WHERE h.log_id = l.id AND h.memory_id = p_memory_id
                    AND h.team = l.team)
        AND NOT EXISTS (
            SELECT 1 FROM pg_catalog.jsonb_array_elements(p_results::jsonb) AS e(y)
            WHERE y ->> 'id' IS NOT DISTINCT FROM p_memory_id
                OR pg_catalog.jsonb_typeof(y) <> 'object'
                OR EXISTS (SELECT 1 FROM pg_catalog.jsonb_object_keys(y) AS kk(key) WHERE kk.key NOT IN ('id', 'score'))
                OR NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements(l.results_json::jsonb) AS o(x)
                               WHERE x ->> 'id' = y ->> 'id'
                                   AND pg_catalog.abs((x ->> 'score')::float8 - (y ->> 'score')::float8)
                                       <= 1e-9 * GREATEST(1, pg_catalog.abs((x ->> 'score')::float8))));
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
        RAISE EXCEPTION 'recall-log entry % did not return memory %, or the new results are not some of its own without it',
            COALESCE(p_log::text, 'NULL'), pg_catalog.left(COALESCE(p_memory_id, 'NULL'), 80)
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN n;
END
$f$;
$body$;
    EXECUTE replace(body, '@S@', s);

    -- Who may call what: nobody but the groups below (functions are PUBLIC by default).
    FOR f IN SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc p
             WHERE p.pronamespace = current_schema()::regnamespace AND p.proname LIKE 'lethe\_%' LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
    END LOOP;
    EXECUTE format('GRANT EXECUTE ON FUNCTION %1$s.lethe_memory_count(text, text, text, text, text, text), '
        '%1$s.lethe_memory_restore(text[]), %1$s.lethe_memory_restore(text, text, text, text, text), '
        '%1$s.lethe_memory_quarantine(text, text, text, text, double precision, bigint, text, text), '
        '%1$s.lethe_memory_edit(text, text, bigint, text, text, text, text), %1$s.lethe_memory_tags(text, text), '
        '%1$s.lethe_memory_procedure(text, bigint, text, text, text, text, text, text, text), '
        '%1$s.lethe_memory_reflection(text, text), %1$s.lethe_memory_archive(bigint, text), '
        '%1$s.lethe_memory_unarchive(bigint, text), %1$s.lethe_memory_episodic(text) TO lethe_agent', s);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %1$s.lethe_memory_pin(text, boolean, text, text, text, text), '
        '%1$s.lethe_memory_importance(text, double precision, text, text, text, text), %1$s.lethe_memory_redact(text, text, text), '
        '%1$s.lethe_procedure_version_redact(text, bigint, text), %1$s.lethe_archive_redact(bigint, bytea), '
        '%1$s.lethe_audit_erase(text, text), %1$s.lethe_recall_log_erase(bigint, text, text, text), '
        '%1$s.lethe_forget_chunk(text, bigint, text, text) TO lethe_curator', s);
    -- The batch's function: the team lead's alone from now on.
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s.lethe_forget_chunk(text, bigint, text, text) FROM lethe_agent', s);
    -- The functions named in migration 6's grants keep them.
    EXECUTE format('GRANT EXECUTE ON FUNCTION %1$s.typeof(anyelement), %1$s.instr(text, text), %1$s.lethe_team(), '
        '%1$s.lethe_channel(), %1$s.lethe_team_key(text), %1$s.lethe_session_kind() TO lethe_reader', s);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %1$s.lethe_journal(text, text), %1$s.lethe_review_leave(text[], boolean), '
        '%1$s.lethe_recall_log_prune(bigint) TO lethe_agent', s);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s.lethe_hard_delete_rows(text) TO lethe_curator', s);

    -- No direct change of a memory, of the audit, of archives, procedure versions or the
    -- recall log for any Lethe role: the functions above are the only way.
    EXECUTE format('REVOKE UPDATE ON %1$s.memory_item, %1$s.lethe_action, %1$s.memory_forgetting_event, '
        '%1$s.lethe_archive, %1$s.lethe_procedure_version, %1$s.lethe_recall_log FROM PUBLIC, lethe_reader, lethe_agent, lethe_curator', s);
END
$do$;

-- Column UPDATE rights are kept per column by PostgreSQL: a table-level REVOKE removes them
-- too, but a grant made to a login role by hand would stay. Every Lethe role's column rights
-- on these tables go.
DO $do$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT DISTINCT c.relname::text AS tbl, g.rolname::text AS who
             FROM pg_catalog.pg_class c
             JOIN pg_catalog.pg_attribute x ON x.attrelid = c.oid AND x.attnum > 0 AND NOT x.attisdropped
             CROSS JOIN LATERAL pg_catalog.aclexplode(x.attacl) a
             JOIN pg_catalog.pg_roles g ON g.oid = a.grantee
             WHERE c.relnamespace = current_schema()::regnamespace
                AND c.relname IN ('memory_item', 'lethe_action', 'memory_forgetting_event', 'lethe_archive',
                                  'lethe_procedure_version', 'lethe_recall_log')
                AND a.privilege_type = 'UPDATE'
                AND NOT g.rolsuper AND pg_catalog.pg_has_role(g.oid, 'lethe_reader', 'MEMBER') LOOP
        EXECUTE format('REVOKE UPDATE ON %I.%I FROM %I', current_schema(), r.tbl, r.who);
    END LOOP;
END
$do$;

SELECT lethe_definer_handover(current_schema());
