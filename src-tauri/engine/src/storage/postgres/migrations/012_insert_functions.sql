-- New memories and audit actions are written by the database's functions too: Lethe's roles
-- keep no INSERT right on memory_item or lethe_action. Before this migration an agent's
-- column grants (open to psql with the password its MCP configuration holds) let it insert
-- a memory with any counters, version, dates or size (a trigger stamped the team, the
-- quarantine date and refused a pin, nothing else), and write audit actions of any kind.
--
-- After it (each function SECURITY DEFINER, owned by the NOLOGIN definer role of migration
-- 8, search path `pg_catalog, pg_temp`, every table named with its schema):
--   * lethe_memory_insert: the memories of `remember` (one or a group), `import` and
--     `lethe push`, as a JSON array of rows (the engine's memory columns, by name). Each row
--     is checked as the engine checks it: an id of 1 to 200 characters, a known type,
--     content not blank and at most the team's max_content_bytes, importance in [0, 1],
--     dates in the engine's format and not in the future, counters and version in range,
--     tags as the engine stores them, no pin by an agent, every other text bounded. The row
--     is the caller's team's; a memory in quarantine is quarantined as of the server's clock
--     (a file's old date would let the next batch purge it at once); the journal trigger
--     names the role. A row whose id the team holds already is skipped (another team's ids
--     are not seen). With `remember` (an object, the engine's after state of the `remember`
--     action: the tier and a preview) the function writes that action too, after checking
--     that it describes the row (its type, a preview of its text); the actor is the role and
--     the time the server's. Returns the rowid of each memory stored, in the rows' order.
--   * lethe_action_record: every other action row the engine writes (supersede links,
--     archive receipts, session ends, reflection drops, settings, forget runs and their
--     undo, merges, redaction receipts, push). The actor is the role (or `policy`, as
--     before), the time the server's, the memory one of the caller's team; an action's
--     name is a word and its states JSON of bounded size.
--   * lethe_memory_archive and lethe_memory_unarchive (migration 11's) write their action
--     row too, its after state built by the server from the archive row (number, memory,
--     size, SHA-256, memo; only the memo's redacted spans, which hold no text, and where a
--     person acted are the engine's), so an archive's receipt cannot be forged by a caller;
--     lethe_action_record refuses those actions, as it refuses the actions the functions of
--     migration 11 write themselves (remember, pin, importance, cite, restore).
--   * lethe_memory_procedure (a procedure's swap) and lethe_memory_episodic (a session's end,
--     one working memory) write their `procedure_update` and `task_log` actions too, with
--     the states before and after read from the row by the server.
--   * lethe_action_push: the audit actions `lethe push` brings from a file, the team lead's
--     only: each actor is recorded as `pushed:<original actor>`, no date later than the
--     server's clock (a date not in the engine's form is recorded as the push's).
-- Applied by `lethe admin setup` as the database's owner; a store set up before keeps every
-- memory, audit row and role (no row is rewritten).

DO $do$
DECLARE
    s text := quote_ident(current_schema());
    body text;
BEGIN
    body := $body$
-- A date as the engine writes it (RFC 3339, UTC, `Z`), or NULL when allowed; never more than
-- a minute after the server's clock (the engine's slack for clocks that differ).
CREATE OR REPLACE FUNCTION @S@.lethe_check_date(what text, v text, nullable boolean) RETURNS void
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    at timestamptz;
BEGIN
    IF v IS NULL THEN
        IF NOT nullable THEN
            RAISE EXCEPTION '% is missing', what USING ERRCODE = 'null_value_not_allowed';
        END IF;
        RETURN;
    END IF;
    IF v !~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$' THEN
        RAISE EXCEPTION '% is not a date of the form 2026-01-31T12:00:00.000Z', what
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    BEGIN
        at := v::timestamptz;
    EXCEPTION WHEN OTHERS THEN
        RAISE EXCEPTION '% is not a date', what USING ERRCODE = 'invalid_parameter_value';
    END;
    IF at > pg_catalog.clock_timestamp() + interval '60 seconds' THEN
        RAISE EXCEPTION '% lies in the future; a memory can only be dated now or earlier', what
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$f$;

-- A whole number in [lo, hi], NULL meaning `dflt`.
CREATE OR REPLACE FUNCTION @S@.lethe_check_count(what text, v bigint, lo bigint, hi bigint, dflt bigint) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    IF v IS NULL THEN
        RETURN dflt;
    END IF;
    IF v < lo OR v > hi THEN
        RAISE EXCEPTION '% must be a whole number in [%, %]', what, lo, hi USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN v;
END
$f$;

-- New memories of the caller's team (see the head of this migration). `p_rows` is a JSON
-- array of objects keyed by the engine's memory columns; a row may carry `remember`, the
-- after state of its `remember` action. `p_actor` and `p_at` are the engine's actor and clock
-- for that action, which only the owner's rows keep (a Lethe role's is the role, now).
CREATE OR REPLACE FUNCTION @S@.lethe_memory_insert(p_rows text, p_actor text, p_at text) RETURNS SETOF bigint LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    t text := @S@.lethe_team();
    now_ text := @S@.lethe_now();
    r record;
    rid bigint;
    deleted bigint;
    at text;
    preview text;
BEGIN
    -- A text argument is at most 1 GB (PostgreSQL's own limit); each row is checked below.
    PERFORM @S@.lethe_check_json('memories', p_rows, 'array', 1073741823, false);
    FOR r IN SELECT * FROM pg_catalog.json_to_recordset(p_rows::json) AS x(id text, type text, content text,
            importance double precision, privacy_scope text, created_at text, last_accessed text, pinned bigint,
            tags text, source text, view_count bigint, cite_count bigint, edit_count bigint, task_goal text,
            steps text, reflection_notes text, workflow_name text, skill_name text, trigger_conditions text,
            version bigint, owner_id text, session_id text, project_id text, is_deleted bigint, deleted_at text,
            remember json) LOOP
        IF r.id IS NULL OR pg_catalog.length(r.id) NOT BETWEEN 1 AND 200 THEN
            RAISE EXCEPTION 'a memory id is 1 to 200 characters' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF r.type IS NULL OR r.type NOT IN ('working', 'episodic', 'semantic', 'procedural') THEN
            RAISE EXCEPTION 'memory %: a type is working, episodic, semantic or procedural', pg_catalog.left(r.id, 80)
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        PERFORM @S@.lethe_check_content(r.content, t);
        IF r.importance = 'NaN'::float8 OR r.importance < 0 OR r.importance > 1 THEN
            RAISE EXCEPTION 'memory %: importance must be a number in [0, 1]', pg_catalog.left(r.id, 80)
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        PERFORM @S@.lethe_check_text('privacy scope', r.privacy_scope, 100, true);
        PERFORM @S@.lethe_check_date('created_at', r.created_at, false);
        PERFORM @S@.lethe_check_date('last_accessed', r.last_accessed, true);
        IF COALESCE(r.pinned, 0) NOT IN (0, 1) OR (k = 'agent' AND COALESCE(r.pinned, 0) <> 0) THEN
            RAISE EXCEPTION 'the role % may not store a pinned memory: pinning is for the team lead (a curator role)',
                session_user USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF r.tags IS NOT NULL THEN
            PERFORM @S@.lethe_check_tags(r.tags);
        END IF;
        PERFORM @S@.lethe_check_text('source', r.source, 64 * 1024, true);
        PERFORM @S@.lethe_check_text('task goal', r.task_goal, 64 * 1024, true);
        PERFORM @S@.lethe_check_json('steps', r.steps, NULL, 64 * 1024 * 1024, true);
        PERFORM @S@.lethe_check_json('reflection notes', r.reflection_notes, NULL, 64 * 1024 * 1024, true);
        PERFORM @S@.lethe_check_json('trigger conditions', r.trigger_conditions, NULL, 64 * 1024 * 1024, true);
        PERFORM @S@.lethe_check_text('workflow name', r.workflow_name, 10000, true);
        PERFORM @S@.lethe_check_text('skill name', r.skill_name, 10000, true);
        PERFORM @S@.lethe_check_text('owner id', r.owner_id, 1000, true);
        PERFORM @S@.lethe_check_text('session id', r.session_id, 1000, true);
        PERFORM @S@.lethe_check_text('project id', r.project_id, 1000, true);
        deleted := @S@.lethe_check_count('is_deleted', r.is_deleted, 0, 1, 0);
        -- The owner's rows keep the engine's clock (time travel, `--now`); every Lethe role's
        -- quarantine starts now.
        at := CASE WHEN deleted = 0 THEN NULL
                   WHEN k = 'owner' AND r.deleted_at ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$' THEN r.deleted_at
                   ELSE now_ END;
        IF r.remember IS NOT NULL THEN
            -- The `remember` action describes this row: its type, a preview of its text (the
            -- engine's, on one line and cut with an ellipsis), and when it is backdated.
            preview := r.remember ->> 'preview';
            IF pg_catalog.json_typeof(r.remember) <> 'object'
                OR EXISTS (SELECT 1 FROM pg_catalog.json_object_keys(r.remember) x
                           WHERE x NOT IN ('type', 'preview', 'backdated', 'via'))
                OR (r.remember ->> 'type') IS DISTINCT FROM r.type
                OR preview IS NULL OR pg_catalog.char_length(preview) > 120
                OR pg_catalog.strpos(pg_catalog.regexp_replace(r.content, '\s+', '', 'g'),
                                     pg_catalog.regexp_replace(pg_catalog.rtrim(preview, '…'), '\s+', '', 'g')) <> 1
                OR pg_catalog.octet_length(r.remember::text) > 64 * 1024 THEN
                RAISE EXCEPTION 'memory %: its remember action does not describe it', pg_catalog.left(r.id, 80)
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
        END IF;
        INSERT INTO @S@.memory_item (id, type, content, importance, privacy_scope, created_at, last_accessed, pinned,
            tags, source, view_count, cite_count, edit_count, task_goal, steps, reflection_notes, workflow_name,
            skill_name, trigger_conditions, version, owner_id, session_id, project_id, is_deleted, deleted_at, team)
        VALUES (r.id, r.type, r.content, COALESCE(r.importance, 0.5), COALESCE(r.privacy_scope, 'private'),
            r.created_at, r.last_accessed, COALESCE(r.pinned, 0), r.tags, r.source,
            @S@.lethe_check_count('view count', r.view_count, 0, 1000000000, 0),
            @S@.lethe_check_count('cite count', r.cite_count, 0, 1000000000, 0),
            @S@.lethe_check_count('edit count', r.edit_count, 0, 1000000000, 0),
            r.task_goal, r.steps, r.reflection_notes, r.workflow_name, r.skill_name,
            r.trigger_conditions, @S@.lethe_check_count('version', r.version, 1, 1000000000, 1),
            r.owner_id, r.session_id, r.project_id, deleted, at, t)
        ON CONFLICT (id, team) DO NOTHING
        RETURNING rowid INTO rid;
        IF rid IS NOT NULL THEN
            IF r.remember IS NOT NULL THEN
                INSERT INTO @S@.lethe_action (memory_id, action, actor, before_json, after_json, created_at, team)
                VALUES (r.id, 'remember', CASE WHEN k = 'owner' THEN COALESCE(p_actor, 'user') ELSE @S@.lethe_session_actor() END,
                        NULL, r.remember::text, @S@.lethe_clock(k, p_at), t);
            END IF;
            RETURN NEXT rid;
        END IF;
    END LOOP;
    RETURN;
END
$f$;

-- An action row of the caller's team (see the head of this migration). Returns its id.
CREATE OR REPLACE FUNCTION @S@.lethe_action_record(p_memory_id text, p_action text, p_actor text, p_before text,
    p_after text, p_at text) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    t text := @S@.lethe_team();
    id_ bigint;
BEGIN
    IF p_action IS NULL OR p_action !~ '^[a-z][a-z_]{0,63}$' THEN
        RAISE EXCEPTION 'an action is a word of at most 64 letters' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_action IN ('remember', 'pin', 'unpin', 'importance', 'cite', 'restore', 'archive', 'unarchive',
                    'procedure_update', 'task_log') AND k <> 'owner' THEN
        RAISE EXCEPTION 'a % action is written by its own function', p_action USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM @S@.lethe_check_text('actor', p_actor, 200, false);
    IF k <> 'owner' AND (p_actor LIKE 'pushed:%' OR NOT @S@.lethe_actor_allowed(p_actor)) THEN
        p_actor := @S@.lethe_session_actor();
    END IF;
    PERFORM @S@.lethe_check_json('the state before', p_before, NULL, 64 * 1024 * 1024, true);
    PERFORM @S@.lethe_check_json('the state after', p_after, NULL, 64 * 1024 * 1024, true);
    IF p_memory_id IS NOT NULL THEN
        IF pg_catalog.length(p_memory_id) > 200 OR NOT EXISTS (
            SELECT 1 FROM @S@.memory_item m WHERE m.id = p_memory_id AND (k = 'owner' OR m.team = t)) THEN
            RAISE EXCEPTION 'no memory %', pg_catalog.left(p_memory_id, 80) USING ERRCODE = 'no_data_found';
        END IF;
    END IF;
    INSERT INTO @S@.lethe_action (memory_id, action, actor, before_json, after_json, created_at, team)
    VALUES (p_memory_id, p_action, p_actor, p_before, p_after, @S@.lethe_clock(k, p_at), t)
    RETURNING id INTO id_;
    RETURN id_;
END
$f$;

-- The audit actions a push brings from a file: the team lead's. `p_rows` is a JSON array of
-- [memory_id, action, actor, before_json, after_json, created_at]. Returns the rows written.
CREATE OR REPLACE FUNCTION @S@.lethe_action_push(p_rows text) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{curator}');
    t text := @S@.lethe_team();
    now_ text := @S@.lethe_now();
    r record;
    actor text;
    n bigint := 0;
BEGIN
    PERFORM @S@.lethe_check_json('audit rows', p_rows, 'array', 1073741823, false);
    FOR r IN SELECT e ->> 0 AS memory_id, e ->> 1 AS action, e ->> 2 AS actor, e ->> 3 AS before_json,
                    e ->> 4 AS after_json, e ->> 5 AS created_at
             FROM pg_catalog.json_array_elements(p_rows::json) AS a(e) LOOP
        IF r.action IS NULL OR r.action !~ '^[a-z][a-z_]{0,63}$' THEN
            RAISE EXCEPTION 'an action is a word of at most 64 letters' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        PERFORM @S@.lethe_check_text('memory id', r.memory_id, 200, true);
        PERFORM @S@.lethe_check_text('actor', r.actor, 200, false);
        PERFORM @S@.lethe_check_json('the state before', r.before_json, NULL, 64 * 1024 * 1024, true);
        PERFORM @S@.lethe_check_json('the state after', r.after_json, NULL, 64 * 1024 * 1024, true);
        actor := CASE WHEN r.actor LIKE 'pushed:%' THEN r.actor ELSE 'pushed:' || r.actor END;
        INSERT INTO @S@.lethe_action (memory_id, action, actor, before_json, after_json, created_at, team)
        VALUES (r.memory_id, r.action, actor, r.before_json, r.after_json,
                -- A date in the engine's form, never later than now; another form (a file
                -- written by an older program) is recorded as the push's time.
                CASE WHEN r.created_at !~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$' OR r.created_at IS NULL THEN now_
                     WHEN k = 'owner' THEN r.created_at ELSE LEAST(r.created_at, now_) END, t);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$f$;

-- The after state of an archive's or an unarchive's action, built by the server from the
-- archive row: its number, memory, size, SHA-256 and memo; `p_redacted` the spans of the memo
-- the engine's secrets guard replaced (field, kind, start, end, action: never a value), and
-- `p_via` where a person acted (window or terminal).
CREATE OR REPLACE FUNCTION @S@.lethe_archive_audit(k text, a @S@.lethe_archive, p_action text, p_after jsonb, p_actor text,
    p_via text, now_ text) RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    IF p_via IS NOT NULL AND p_via NOT IN ('window', 'terminal') THEN
        RAISE EXCEPTION 'via is window or terminal' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF k = 'owner' THEN
        PERFORM @S@.lethe_check_text('actor', p_actor, 200, false);
    END IF;
    INSERT INTO @S@.lethe_action (memory_id, action, actor, before_json, after_json, created_at, team)
    VALUES (a.memory_id, p_action, CASE WHEN k = 'owner' THEN p_actor ELSE @S@.lethe_session_actor() END, NULL,
            (CASE WHEN p_via IS NULL THEN p_after ELSE p_after || pg_catalog.jsonb_build_object('via', p_via) END)::text,
            now_, a.team);
END
$f$;

-- 011's archive, which now writes its `archive` action too (the receipt built from the row).
DROP FUNCTION IF EXISTS @S@.lethe_memory_archive(bigint, text);
CREATE OR REPLACE FUNCTION @S@.lethe_memory_archive(p_no bigint, p_placeholder text, p_redacted text, p_actor text,
    p_via text, p_at text) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    now_ text := @S@.lethe_clock(k, p_at);
    a @S@.lethe_archive;
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
    PERFORM @S@.lethe_check_json('redacted spans', p_redacted, 'array', 64 * 1024, false);
    IF EXISTS (SELECT 1 FROM pg_catalog.json_array_elements(p_redacted::json) AS e(x)
               WHERE pg_catalog.json_typeof(x) <> 'object'
                  OR EXISTS (SELECT 1 FROM pg_catalog.json_each(x) AS f(key, value)
                             WHERE f.key NOT IN ('field', 'kind', 'start', 'end', 'action')
                                OR (f.key IN ('start', 'end') AND pg_catalog.json_typeof(f.value) <> 'number')
                                OR (f.key IN ('field', 'kind', 'action') AND (pg_catalog.json_typeof(f.value) <> 'string'
                                    OR pg_catalog.octet_length(f.value #>> '{}') > 64)))) THEN
        RAISE EXCEPTION 'a redacted span is {field, kind, start, end, action}, never a value'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE @S@.memory_item SET content = p_placeholder WHERE rowid = m.rowid;
    PERFORM @S@.lethe_archive_audit(k, a, 'archive', pg_catalog.jsonb_build_object('archive_no', a.archive_no,
        'memory_id', a.memory_id, 'bytes', a.bytes, 'sha256', a.sha256, 'memo', p_placeholder,
        'bytes_saved', a.bytes - pg_catalog.octet_length(p_placeholder), 'redacted', p_redacted::jsonb), p_actor, p_via, now_);
    RETURN 1;
END
$f$;

-- 011's unarchive, which now writes its `unarchive` action too (number and SHA-256 from the row).
DROP FUNCTION IF EXISTS @S@.lethe_memory_unarchive(bigint, text);
CREATE OR REPLACE FUNCTION @S@.lethe_memory_unarchive(p_no bigint, p_actor text, p_via text, p_at text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    now_ text := @S@.lethe_clock(k, p_at);
    a @S@.lethe_archive;
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
    PERFORM @S@.lethe_archive_audit(k, a, 'unarchive',
        pg_catalog.jsonb_build_object('archive_no', a.archive_no, 'sha256', a.sha256), p_actor, p_via, now_);
    RETURN 1;
END
$f$;

-- A JSON column as the engine reads it: NULL when blank, the value when it parses, else the
-- text as a JSON string (a value another program wrote).
CREATE OR REPLACE FUNCTION @S@.lethe_json_value(v text) RETURNS json LANGUAGE plpgsql IMMUTABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    IF v IS NULL OR pg_catalog.btrim(v, E' \t\r\n') = '' THEN
        RETURN NULL;
    END IF;
    BEGIN
        RETURN v::json;
    EXCEPTION WHEN invalid_text_representation THEN
        RETURN pg_catalog.to_json(v);
    END;
END
$f$;

-- A procedure's state as its `procedure_update` action records it, from the row.
CREATE OR REPLACE FUNCTION @S@.lethe_procedure_state(m @S@.memory_item, p_via text) RETURNS text LANGUAGE sql
    IMMUTABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
    SELECT CASE WHEN p_via IS NULL THEN
        pg_catalog.json_build_object('content', m.content, 'task_goal', m.task_goal,
            'steps', @S@.lethe_json_value(m.steps), 'trigger_conditions', @S@.lethe_json_value(m.trigger_conditions),
            'workflow_name', m.workflow_name, 'skill_name', m.skill_name)::text
    ELSE
        pg_catalog.json_build_object('content', m.content, 'task_goal', m.task_goal,
            'steps', @S@.lethe_json_value(m.steps), 'trigger_conditions', @S@.lethe_json_value(m.trigger_conditions),
            'workflow_name', m.workflow_name, 'skill_name', m.skill_name, 'via', p_via)::text
    END
$f$;

-- An action whose states the server built, under the role (the owner's claimed actor is kept)
-- at `now_`; `p_via` where a person acted.
CREATE OR REPLACE FUNCTION @S@.lethe_server_action(k text, m @S@.memory_item, p_action text, p_before text,
    p_after text, p_actor text, p_via text, now_ text) RETURNS void LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    IF p_via IS NOT NULL AND p_via NOT IN ('window', 'terminal') THEN
        RAISE EXCEPTION 'via is window or terminal' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF k = 'owner' THEN
        PERFORM @S@.lethe_check_text('actor', p_actor, 200, false);
    END IF;
    INSERT INTO @S@.lethe_action (memory_id, action, actor, before_json, after_json, created_at, team)
    VALUES (m.id, p_action, CASE WHEN k = 'owner' THEN p_actor ELSE @S@.lethe_session_actor() END, p_before, p_after,
            now_, m.team);
END
$f$;

-- 011's procedure swap, which now writes its `procedure_update` action too: the states before
-- and after are the row's, read by the server.
DROP FUNCTION IF EXISTS @S@.lethe_memory_procedure(text, bigint, text, text, text, text, text, text, text);
CREATE OR REPLACE FUNCTION @S@.lethe_memory_procedure(p_id text, p_expected bigint, p_content text, p_task_goal text,
    p_steps text, p_trigger_conditions text, p_workflow_name text, p_skill_name text, p_actor text, p_via text,
    p_at text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    m @S@.memory_item := @S@.lethe_memory_of(p_id, k);
    now_ text := @S@.lethe_clock(k, p_at);
    after_ @S@.memory_item;
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
    WHERE rowid = m.rowid
    RETURNING * INTO after_;
    PERFORM @S@.lethe_server_action(k, m, 'procedure_update', @S@.lethe_procedure_state(m, NULL),
        @S@.lethe_procedure_state(after_, p_via), p_actor, p_via, now_);
    RETURN 1;
END
$f$;

-- 011's end of a session for one working memory, which now writes its `task_log` action too
-- (the tier before and after and the session from the row, the task's kind given).
DROP FUNCTION IF EXISTS @S@.lethe_memory_episodic(text);
CREATE OR REPLACE FUNCTION @S@.lethe_memory_episodic(p_id text, p_task_kind text, p_actor text, p_via text, p_at text)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    m @S@.memory_item := @S@.lethe_memory_of(p_id, k);
BEGIN
    PERFORM @S@.lethe_check_text('task kind', p_task_kind, 1000, false);
    IF m.type <> 'working' THEN
        RETURN 0;
    END IF;
    UPDATE @S@.memory_item SET type = 'episodic' WHERE rowid = m.rowid;
    PERFORM @S@.lethe_server_action(k, m, 'task_log',
        pg_catalog.json_build_object('type', 'working', 'session_id', m.session_id)::text,
        (CASE WHEN p_via IS NULL THEN pg_catalog.json_build_object('type', 'episodic', 'task_log', true,
                  'session_id', m.session_id, 'task_kind', p_task_kind)
              ELSE pg_catalog.json_build_object('type', 'episodic', 'task_log', true, 'session_id', m.session_id,
                  'task_kind', p_task_kind, 'via', p_via) END)::text,
        p_actor, p_via, @S@.lethe_clock(k, p_at));
    RETURN 1;
END
$f$;
$body$;
    EXECUTE replace(body, '@S@', s);

    EXECUTE format('REVOKE ALL ON FUNCTION %1$s.lethe_check_date(text, text, boolean), '
        '%1$s.lethe_check_count(text, bigint, bigint, bigint, bigint), %1$s.lethe_memory_insert(text, text, text), '
        '%1$s.lethe_action_record(text, text, text, text, text, text), %1$s.lethe_action_push(text) FROM PUBLIC', s);
    EXECUTE format('REVOKE ALL ON FUNCTION %1$s.lethe_archive_audit(text, %1$s.lethe_archive, text, jsonb, text, text, text), '
        '%1$s.lethe_memory_archive(bigint, text, text, text, text, text), '
        '%1$s.lethe_memory_unarchive(bigint, text, text, text) FROM PUBLIC', s);
    EXECUTE format('REVOKE ALL ON FUNCTION %1$s.lethe_json_value(text), %1$s.lethe_procedure_state(%1$s.memory_item, text), '
        '%1$s.lethe_server_action(text, %1$s.memory_item, text, text, text, text, text, text), '
        '%1$s.lethe_memory_procedure(text, bigint, text, text, text, text, text, text, text, text, text), '
        '%1$s.lethe_memory_episodic(text, text, text, text, text) FROM PUBLIC', s);
    EXECUTE format('GRANT EXECUTE ON FUNCTION '
        '%1$s.lethe_memory_procedure(text, bigint, text, text, text, text, text, text, text, text, text), '
        '%1$s.lethe_memory_episodic(text, text, text, text, text) TO lethe_agent', s);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %1$s.lethe_memory_archive(bigint, text, text, text, text, text), '
        '%1$s.lethe_memory_unarchive(bigint, text, text, text) TO lethe_agent', s);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %1$s.lethe_memory_insert(text, text, text), '
        '%1$s.lethe_action_record(text, text, text, text, text, text) TO lethe_agent', s);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %1$s.lethe_action_push(text) TO lethe_curator', s);

    -- No direct INSERT of a memory or an action for any Lethe role (a table-level REVOKE
    -- takes the column rights of migration 9 too).
    EXECUTE format('REVOKE INSERT ON %1$s.memory_item, %1$s.lethe_action FROM PUBLIC, lethe_reader, lethe_agent, lethe_curator', s);
END
$do$;

-- Column INSERT rights granted to a login role by hand go too (see migration 11).
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
                AND c.relname IN ('memory_item', 'lethe_action')
                AND a.privilege_type = 'INSERT'
                AND NOT g.rolsuper AND pg_catalog.pg_has_role(g.oid, 'lethe_reader', 'MEMBER') LOOP
        EXECUTE format('REVOKE INSERT ON %I.%I FROM %I', current_schema(), r.tbl, r.who);
    END LOOP;
    FOR r IN SELECT DISTINCT c.relname::text AS tbl, g.rolname::text AS who
             FROM pg_catalog.pg_class c
             CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) a
             JOIN pg_catalog.pg_roles g ON g.oid = a.grantee
             WHERE c.relnamespace = current_schema()::regnamespace
                AND c.relname IN ('memory_item', 'lethe_action')
                AND a.privilege_type = 'INSERT'
                AND NOT g.rolsuper AND pg_catalog.pg_has_role(g.oid, 'lethe_reader', 'MEMBER') LOOP
        EXECUTE format('REVOKE INSERT ON %I.%I FROM %I', current_schema(), r.tbl, r.who);
    END LOOP;
END
$do$;

SELECT lethe_definer_handover(current_schema());
