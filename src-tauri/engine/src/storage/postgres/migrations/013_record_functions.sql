-- The rest of the team's records are written by the database's functions too: Lethe's roles
-- keep no INSERT right on memory_forgetting_event, the recall log and its hits, supersede
-- links, archives, procedure versions, the review band, ended sessions, task logs, session
-- rules or dismissed pairs. Before this migration a role could insert into those tables of its
-- own team with psql (the password is in an agent's MCP configuration): a `hard` event under
-- the team lead's name, recall-log entries and hit scores that steer the statistics, supersede
-- links and "keep both" marks no person made, archives that hold another text than the
-- memory's, procedure history that never was, sessions ended with any answer.
--
-- After it (each function SECURITY DEFINER, owned by the NOLOGIN definer role of migration
-- 8, search path `pg_catalog, pg_temp`, every table named with its schema), every function
-- checks the caller's role and team, stamps the server's clock and the role as the actor
-- (only the owner's rows keep the engine's clock and actor), validates its arguments (NULLs,
-- sizes, a memory of the caller's team; another team's id gets the answer of an unknown one),
-- and writes the audit row in the same transaction, its before/after text read from the rows:
--   * lethe_memory_erase: a hard delete by the team lead (every row of the memory, as
--     lethe_hard_delete_rows) and its `hard` event, whose type, SHA-256 and length of the
--     text the server reads from the row; the actor is the role, or `policy` for the purge of
--     a memory in quarantine by the forgetting batch;
--   * lethe_recall_log_append: a recall-log entry under the role's name at the server's
--     clock; its hits (the index of which entries returned a memory, with their scores) are
--     the server's reading of the entry's results, for memories of the caller's team only;
--   * lethe_supersede_link (and its `superseded` action), lethe_pair_dismiss (the pair, its
--     `keep_both` actions and the journal), lethe_archive_insert (the original, its SHA-256
--     and size read from the memory), lethe_session_rule_add (a rule stored at a session's
--     end names that session), lethe_session_end_record (the ended session and its
--     `end_session` action, whose task logs and rules the server reads from the rows);
--   * lethe_memory_procedure keeps the version it replaces (the snapshot read from the row,
--     its writer and date from the audit), lethe_memory_episodic writes the task log;
--   * lethe_push_archive and lethe_push_rows: the rows `lethe push` brings from a file, the
--     team lead's only: every actor recorded as `pushed:<original actor>`, no date later than
--     the server's clock, a quarantine event dated now (as the memory's quarantine is),
--     each row's memory one of the caller's team (the audit of a memory deleted for ever in
--     the file moves without it);
--   * lethe_action_record refuses the actions these functions write themselves.
-- Applied by `lethe admin setup` as the database's owner; a store set up before keeps every
-- memory, audit row and role (no row is rewritten).

DO $do$
DECLARE
    s text := quote_ident(current_schema());
    body text;
    f text;
BEGIN
    body := $body$
-- Whether memory `p_id` is one of team `t`'s (the owner's: any team's).
CREATE OR REPLACE FUNCTION @S@.lethe_memory_in_team(p_id text, k text, t text) RETURNS boolean LANGUAGE sql STABLE
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
    SELECT p_id IS NOT NULL AND pg_catalog.length(p_id) <= 200
        AND EXISTS (SELECT 1 FROM @S@.memory_item m WHERE m.id = p_id AND (k = 'owner' OR m.team = t))
$f$;

-- The actor of a row a function writes: the owner's claimed actor (checked), else the role.
CREATE OR REPLACE FUNCTION @S@.lethe_row_actor(k text, p_actor text) RETURNS text LANGUAGE plpgsql STABLE
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    IF k = 'owner' THEN
        PERFORM @S@.lethe_check_text('actor', p_actor, 200, false);
        RETURN p_actor;
    END IF;
    RETURN @S@.lethe_session_actor();
END
$f$;

-- An after state with where a person acted (`via`: window or terminal), as the engine adds it.
CREATE OR REPLACE FUNCTION @S@.lethe_with_via(p_after jsonb, p_via text) RETURNS text LANGUAGE plpgsql IMMUTABLE
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    IF p_via IS NULL THEN
        RETURN p_after::text;
    END IF;
    IF p_via NOT IN ('window', 'terminal') THEN
        RAISE EXCEPTION 'via is window or terminal' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN (p_after || pg_catalog.jsonb_build_object('via', p_via))::text;
END
$f$;

-- A hard delete by the team lead: every row of memory `p_id` (lethe_hard_delete_rows) and its
-- `hard` event `p_ev` (fev_ and a UUID), whose metadata the server builds from the row: the
-- actor, the memory's type, the SHA-256 and the length in bytes of its text (never the text).
-- The actor is the role, or `policy` when the forgetting batch purges a memory in quarantine
-- (`p_policy` quarantine-expired). The caller erases the memory's earlier audit text first
-- (lethe_audit_erase). Returns 1, or 0 when the team has no such memory.
CREATE OR REPLACE FUNCTION @S@.lethe_memory_erase(p_id text, p_ev text, p_reason text, p_policy text, p_actor text,
    p_via text, p_at text) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{curator}');
    t text := @S@.lethe_team();
    now_ text := @S@.lethe_clock(k, p_at);
    m @S@.memory_item;
    actor text;
    meta jsonb;
BEGIN
    IF p_ev IS NULL OR p_ev !~ '^fev_[0-9a-f-]{36}$' THEN
        RAISE EXCEPTION 'an event id is fev_ and a UUID' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM @S@.lethe_check_text('reason', p_reason, 2000, false);
    IF p_policy IS NULL OR p_policy !~ '^[a-z][a-z-]{0,63}$' THEN
        RAISE EXCEPTION 'a policy is a word of at most 64 letters' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_id IS NULL OR pg_catalog.length(p_id) > 200 THEN
        RAISE EXCEPTION 'a memory id is 1 to 200 characters' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT * INTO m FROM @S@.memory_item WHERE id = p_id AND (k = 'owner' OR team = t) FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    IF k = 'owner' THEN
        actor := @S@.lethe_row_actor(k, p_actor);
    ELSIF p_actor = 'policy' AND p_policy = 'quarantine-expired' AND COALESCE(m.is_deleted, 0) <> 0 THEN
        actor := 'policy';
    ELSE
        actor := @S@.lethe_session_actor();
    END IF;
    PERFORM @S@.lethe_hard_delete_rows(p_id);
    meta := pg_catalog.jsonb_build_object('actor', actor, 'type', m.type,
        'content_sha256', pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(m.content, 'UTF8')), 'hex'),
        'content_bytes', pg_catalog.octet_length(m.content));
    IF p_via IS NOT NULL AND actor <> 'policy' THEN
        meta := @S@.lethe_with_via(meta, p_via)::jsonb;
    END IF;
    INSERT INTO @S@.memory_forgetting_event
        (id, memory_id, action, reason, policy, forget_score, ttl_days, created_at, metadata_json, team)
    VALUES (p_ev, m.id, 'hard', p_reason, p_policy, NULL, NULL, now_, meta::text, m.team);
    RETURN 1;
END
$f$;

-- A recall-log entry of the caller's team: the query (at most 64 kB: the engine keeps 4 kB),
-- the context (a JSON object) and the results (a JSON array of {id, score}, at most 100,000,
-- each score a finite number). The actor is the role, the time the server's. The hits index
-- the results of memories of the caller's team, an id given twice keeping its last score.
-- Returns the entry's id.
CREATE OR REPLACE FUNCTION @S@.lethe_recall_log_append(p_actor text, p_at text, p_query text, p_context text,
    p_results text) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    t text := @S@.lethe_team();
    id_ bigint;
BEGIN
    PERFORM @S@.lethe_check_text('query', p_query, 64 * 1024, false);
    PERFORM @S@.lethe_check_json('context', p_context, 'object', 64 * 1024, false);
    PERFORM @S@.lethe_check_json('results', p_results, 'array', 16 * 1024 * 1024, false);
    IF pg_catalog.json_array_length(p_results::json) > 100000 OR EXISTS (
        SELECT 1 FROM pg_catalog.json_array_elements(p_results::json) AS e(x)
        WHERE pg_catalog.json_typeof(x) <> 'object'
            OR pg_catalog.json_typeof(x -> 'id') IS DISTINCT FROM 'string'
            OR pg_catalog.json_typeof(x -> 'score') IS DISTINCT FROM 'number'
            OR pg_catalog.length(x ->> 'id') > 200
            OR pg_catalog.abs((x ->> 'score')::float8) > 1e6) THEN
        RAISE EXCEPTION 'results are at most 100000 {id, score} with finite scores' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO @S@.lethe_recall_log (actor, at, query, context_json, results_json, team)
    VALUES (@S@.lethe_row_actor(k, p_actor), @S@.lethe_clock(k, p_at), p_query, p_context, p_results, t)
    RETURNING id INTO id_;
    INSERT INTO @S@.lethe_recall_log_hit (memory_id, log_id, score, team)
    SELECT DISTINCT ON (x ->> 'id') x ->> 'id', id_, (x ->> 'score')::float8, t
    FROM pg_catalog.json_array_elements(p_results::json) WITH ORDINALITY AS e(x, n)
    WHERE EXISTS (SELECT 1 FROM @S@.memory_item m WHERE m.id = x ->> 'id' AND (k = 'owner' OR m.team = t))
    ORDER BY x ->> 'id', n DESC;
    RETURN id_;
END
$f$;

-- The supersede link `p_old` -> `p_new` (two memories of the caller's team) and its
-- `superseded` action on the old one. Returns 1 when the link is new, 0 when it was there.
CREATE OR REPLACE FUNCTION @S@.lethe_supersede_link(p_old text, p_new text, p_actor text, p_via text, p_at text)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    old_ @S@.memory_item := @S@.lethe_memory_of(p_old, k);
    new_ @S@.memory_item := @S@.lethe_memory_of(p_new, k);
    now_ text := @S@.lethe_clock(k, p_at);
    actor text := @S@.lethe_row_actor(k, p_actor);
    n bigint;
BEGIN
    IF old_.id = new_.id OR old_.team <> new_.team THEN
        RAISE EXCEPTION 'a memory supersedes another memory of its team' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO @S@.lethe_supersede (old_id, new_id, actor, created_at, team)
    VALUES (old_.id, new_.id, actor, now_, old_.team) ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    INSERT INTO @S@.lethe_action (memory_id, action, actor, before_json, after_json, created_at, team)
    VALUES (old_.id, 'superseded', actor, NULL,
            @S@.lethe_with_via(pg_catalog.jsonb_build_object('superseded_by', new_.id), p_via), now_, old_.team);
    RETURN n;
END
$f$;

-- "Keep both": the pair (`p_a` < `p_b`, two memories of the caller's team) is no near-copy.
-- The first time, each memory gets its `keep_both` action and a journal mark. Returns 1 when
-- the pair is new, 0 when it was dismissed before (nothing written).
CREATE OR REPLACE FUNCTION @S@.lethe_pair_dismiss(p_a text, p_b text, p_actor text, p_via text, p_at text)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    a_ @S@.memory_item := @S@.lethe_memory_of(p_a, k);
    b_ @S@.memory_item := @S@.lethe_memory_of(p_b, k);
    now_ text := @S@.lethe_clock(k, p_at);
    actor text := @S@.lethe_row_actor(k, p_actor);
    n bigint;
BEGIN
    IF NOT (a_.id < b_.id) OR a_.team <> b_.team THEN
        RAISE EXCEPTION 'a pair is two memories of a team, the smaller id first' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO @S@.lethe_dismissed_pair (a_id, b_id, actor, created_at, team)
    VALUES (a_.id, b_.id, actor, now_, a_.team) ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
        RETURN 0;
    END IF;
    INSERT INTO @S@.lethe_action (memory_id, action, actor, before_json, after_json, created_at, team)
    VALUES (a_.id, 'keep_both', actor, NULL, @S@.lethe_with_via(pg_catalog.jsonb_build_object('kept_with', b_.id), p_via),
            now_, a_.team),
           (b_.id, 'keep_both', actor, NULL, @S@.lethe_with_via(pg_catalog.jsonb_build_object('kept_with', a_.id), p_via),
            now_, a_.team);
    INSERT INTO @S@.lethe_change (memory_id, kind, team) VALUES (a_.id, 'dismiss', a_.team), (b_.id, 'dismiss', a_.team);
    PERFORM pg_catalog.pg_notify(@S@.lethe_team_channel(a_.team), '');
    RETURN 1;
END
$f$;

-- A new archive of memory `p_memory_id` (of the caller's team, a tool observation, not in
-- quarantine, not archived already): its original, SHA-256 and size are the memory's text as
-- it is now; `p_memo` one line of at most 500 bytes. The archive is applied by
-- lethe_memory_archive. Returns the archive's number.
CREATE OR REPLACE FUNCTION @S@.lethe_archive_insert(p_memory_id text, p_memo text, p_actor text, p_at text)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    m @S@.memory_item := @S@.lethe_memory_of(p_memory_id, k);
    src text := pg_catalog.lower(COALESCE(m.source, ''));
    original bytea := pg_catalog.convert_to(m.content, 'UTF8');
    no bigint;
BEGIN
    PERFORM @S@.lethe_check_text('memo', p_memo, 500, false);
    IF p_memo !~ '^\S+( \S+)*$' THEN
        RAISE EXCEPTION 'a memo is one line of words' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT (src IN ('tool', 'observation', 'tool_observation') OR src LIKE 'tool:%' OR src LIKE 'tool\_%'
            OR src LIKE 'observation:%') THEN
        RAISE EXCEPTION 'protected: memory % is not a tool observation', m.id USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF COALESCE(m.is_deleted, 0) <> 0 THEN
        RAISE EXCEPTION 'memory % is in quarantine', m.id USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM @S@.lethe_archive a WHERE a.memory_id = m.id AND a.team = m.team AND a.restored_at IS NULL) THEN
        RAISE EXCEPTION 'memory % is already archived', m.id USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO @S@.lethe_archive (memory_id, memo, original, sha256, bytes, actor, archived_at, team)
    VALUES (m.id, p_memo, original, pg_catalog.encode(pg_catalog.sha256(original), 'hex'), pg_catalog.length(original),
            @S@.lethe_row_actor(k, p_actor), @S@.lethe_clock(k, p_at), m.team)
    RETURNING archive_no INTO no;
    RETURN no;
END
$f$;

-- A rule stored at the end of session `p_session_id`: memory `p_memory_id` of the caller's
-- team, whose session it is. Returns 1 (0 when it was named already).
CREATE OR REPLACE FUNCTION @S@.lethe_session_rule_add(p_memory_id text, p_session_id text, p_at text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    m @S@.memory_item := @S@.lethe_memory_of(p_memory_id, k);
    n bigint;
BEGIN
    PERFORM @S@.lethe_check_text('session id', p_session_id, 1000, false);
    IF m.session_id IS DISTINCT FROM p_session_id THEN
        RAISE EXCEPTION 'memory % is not of session %', m.id, pg_catalog.left(p_session_id, 80)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO @S@.lethe_session_rule (memory_id, session_id, created_at, team)
    VALUES (m.id, p_session_id, @S@.lethe_clock(k, p_at), m.team) ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$f$;

-- The end of session `p_session_id` as task kind `p_task_kind`, after its working memories
-- became task logs and its rules were stored: the ended session (`p_answer`, the engine's
-- answer, which a second end of the session returns, must name that session and kind) and
-- its `end_session` action, whose task logs and rules the server reads from the rows. Returns
-- 1, or 0 when the session has ended already (nothing written).
CREATE OR REPLACE FUNCTION @S@.lethe_session_end_record(p_session_id text, p_task_kind text, p_answer text,
    p_actor text, p_via text, p_at text) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    t text := @S@.lethe_team();
    now_ text := @S@.lethe_clock(k, p_at);
    actor text := @S@.lethe_row_actor(k, p_actor);
    answer json;
    n bigint;
BEGIN
    PERFORM @S@.lethe_check_text('session id', p_session_id, 1000, false);
    PERFORM @S@.lethe_check_text('task kind', p_task_kind, 1000, false);
    PERFORM @S@.lethe_check_json('answer', p_answer, 'object', 16 * 1024 * 1024, false);
    answer := p_answer::json;
    IF (answer ->> 'session_id') IS DISTINCT FROM p_session_id OR (answer ->> 'task_kind') IS DISTINCT FROM p_task_kind THEN
        RAISE EXCEPTION 'the answer of a session''s end names that session and kind' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO @S@.lethe_session_end (session_id, task_kind, ended_at, actor, answer, team)
    VALUES (p_session_id, p_task_kind, now_, actor, p_answer, t) ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
        RETURN 0;
    END IF;
    INSERT INTO @S@.lethe_action (memory_id, action, actor, before_json, after_json, created_at, team)
    VALUES (NULL, 'end_session', actor, NULL, @S@.lethe_with_via(pg_catalog.jsonb_build_object(
        'session_id', p_session_id, 'task_kind', p_task_kind,
        'task_logs', COALESCE((SELECT pg_catalog.jsonb_agg(l.memory_id ORDER BY m.created_at, m.rowid)
                               FROM @S@.lethe_task_log l JOIN @S@.memory_item m ON m.id = l.memory_id AND m.team = l.team
                               WHERE l.session_id = p_session_id AND l.team = t), '[]'::jsonb),
        'rules', COALESCE((SELECT pg_catalog.jsonb_agg(r.memory_id ORDER BY m.rowid)
                           FROM @S@.lethe_session_rule r JOIN @S@.memory_item m ON m.id = r.memory_id AND m.team = r.team
                           WHERE r.session_id = p_session_id AND r.team = t), '[]'::jsonb)), p_via), now_, t);
    RETURN 1;
END
$f$;

-- 012's procedure swap, which now keeps the version it replaces too: the snapshot is the
-- row's state, its writer and date those of the newest write of its text in the audit
-- (`unknown` and the memory's date when there is none), as the engine keeps them in a file.
CREATE OR REPLACE FUNCTION @S@.lethe_memory_procedure(p_id text, p_expected bigint, p_content text, p_task_goal text,
    p_steps text, p_trigger_conditions text, p_workflow_name text, p_skill_name text, p_actor text, p_via text,
    p_at text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    m @S@.memory_item := @S@.lethe_memory_of(p_id, k);
    now_ text := @S@.lethe_clock(k, p_at);
    after_ @S@.memory_item;
    prev_actor text;
    prev_at text;
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
    SELECT a.actor, a.created_at INTO prev_actor, prev_at FROM @S@.lethe_action a
    WHERE a.memory_id = m.id AND a.team = m.team AND a.action IN ('remember', 'procedure_update', 'rollback')
    ORDER BY a.id DESC LIMIT 1;
    INSERT INTO @S@.lethe_procedure_version (memory_id, version, snapshot_json, actor, created_at, team)
    VALUES (m.id, COALESCE(m.version, 1), @S@.lethe_procedure_state(m, NULL), COALESCE(prev_actor, 'unknown'),
            COALESCE(NULLIF(prev_at, ''), m.created_at), m.team)
    ON CONFLICT DO NOTHING;
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

-- 012's end of a session for one working memory, which now writes its task log too (the
-- session from the row, ended at the server's clock).
CREATE OR REPLACE FUNCTION @S@.lethe_memory_episodic(p_id text, p_task_kind text, p_actor text, p_via text, p_at text)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    m @S@.memory_item := @S@.lethe_memory_of(p_id, k);
    now_ text := @S@.lethe_clock(k, p_at);
BEGIN
    PERFORM @S@.lethe_check_text('task kind', p_task_kind, 1000, false);
    IF m.type <> 'working' OR m.session_id IS NULL THEN
        RETURN 0;
    END IF;
    UPDATE @S@.memory_item SET type = 'episodic' WHERE rowid = m.rowid;
    INSERT INTO @S@.lethe_task_log (memory_id, session_id, task_kind, ended_at, team)
    VALUES (m.id, m.session_id, p_task_kind, now_, m.team) ON CONFLICT DO NOTHING;
    PERFORM @S@.lethe_server_action(k, m, 'task_log',
        pg_catalog.json_build_object('type', 'working', 'session_id', m.session_id)::text,
        (CASE WHEN p_via IS NULL THEN pg_catalog.json_build_object('type', 'episodic', 'task_log', true,
                  'session_id', m.session_id, 'task_kind', p_task_kind)
              ELSE pg_catalog.json_build_object('type', 'episodic', 'task_log', true, 'session_id', m.session_id,
                  'task_kind', p_task_kind, 'via', p_via) END)::text,
        p_actor, p_via, now_);
    RETURN 1;
END
$f$;

-- 012's action row, refusing also the actions the functions above write themselves.
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
                    'procedure_update', 'task_log', 'superseded', 'keep_both', 'end_session') AND k <> 'owner' THEN
        RAISE EXCEPTION 'a % action is written by its own function', p_action USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM @S@.lethe_check_text('actor', p_actor, 200, false);
    IF k <> 'owner' AND (p_actor LIKE 'pushed:%' OR NOT @S@.lethe_actor_allowed(p_actor)) THEN
        p_actor := @S@.lethe_session_actor();
    END IF;
    PERFORM @S@.lethe_check_json('the state before', p_before, NULL, 64 * 1024 * 1024, true);
    PERFORM @S@.lethe_check_json('the state after', p_after, NULL, 64 * 1024 * 1024, true);
    IF p_memory_id IS NOT NULL THEN
        IF NOT @S@.lethe_memory_in_team(p_memory_id, k, t) THEN
            RAISE EXCEPTION 'no memory %', pg_catalog.left(p_memory_id, 80) USING ERRCODE = 'no_data_found';
        END IF;
    END IF;
    INSERT INTO @S@.lethe_action (memory_id, action, actor, before_json, after_json, created_at, team)
    VALUES (p_memory_id, p_action, p_actor, p_before, p_after, @S@.lethe_clock(k, p_at), t)
    RETURNING id INTO id_;
    RETURN id_;
END
$f$;

-- A pushed date: the engine's form and no later than now (the owner's kept as it is), else now.
CREATE OR REPLACE FUNCTION @S@.lethe_pushed_date(k text, v text, now_ text) RETURNS text LANGUAGE sql STABLE
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
    SELECT CASE WHEN v IS NULL OR v !~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$' THEN now_
                WHEN k = 'owner' THEN v ELSE LEAST(v, now_) END
$f$;

-- A pushed actor: `pushed:<original>` (at most 200 characters).
CREATE OR REPLACE FUNCTION @S@.lethe_pushed_actor(v text) RETURNS text LANGUAGE plpgsql IMMUTABLE
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    PERFORM @S@.lethe_check_text('actor', v, 200, false);
    RETURN CASE WHEN v LIKE 'pushed:%' THEN v ELSE 'pushed:' || v END;
END
$f$;

-- An archive `lethe push` brings with its memory (of the caller's team: pushed just before):
-- the team lead's. The SHA-256 and size are the server's reading of `p_original`. Returns
-- the archive's number in the team store.
CREATE OR REPLACE FUNCTION @S@.lethe_push_archive(p_memory_id text, p_memo text, p_original bytea, p_actor text,
    p_archived_at text, p_restored_at text) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{curator}');
    t text := @S@.lethe_team();
    now_ text := @S@.lethe_now();
    no bigint;
BEGIN
    PERFORM @S@.lethe_check_text('memory id', p_memory_id, 200, false);
    PERFORM @S@.lethe_check_text('memo', p_memo, 64 * 1024, false);
    IF p_original IS NULL OR pg_catalog.length(p_original) > 64 * 1024 * 1024 THEN
        RAISE EXCEPTION 'an archived original is at most 64 MiB' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO @S@.lethe_archive (memory_id, memo, original, sha256, bytes, actor, archived_at, restored_at, team)
    VALUES (p_memory_id, p_memo, p_original, pg_catalog.encode(pg_catalog.sha256(p_original), 'hex'),
            pg_catalog.length(p_original), @S@.lethe_pushed_actor(COALESCE(p_actor, 'unknown')),
            @S@.lethe_pushed_date(k, p_archived_at, now_),
            CASE WHEN p_restored_at IS NULL THEN NULL ELSE @S@.lethe_pushed_date(k, p_restored_at, now_) END, t)
    RETURNING archive_no INTO no;
    RETURN no;
END
$f$;

-- Rows `lethe push` brings from a file into `p_table`, the team lead's: `p_rows` is a JSON
-- array of arrays, each in the columns the engine names for that table:
--   lethe_procedure_version: memory_id, version, snapshot_json, actor, created_at
--   lethe_review:            memory_id, entered_at
--   lethe_task_log:          memory_id, session_id, task_kind, ended_at
--   lethe_session_rule:      memory_id, session_id, created_at
--   lethe_supersede:         old_id, new_id, actor, created_at
--   lethe_dismissed_pair:    a_id, b_id, actor, created_at
--   lethe_session_end:       session_id, task_kind, ended_at, actor, answer
--   memory_forgetting_event: id, memory_id, action, reason, policy, forget_score, ttl_days,
--                            created_at, metadata_json
-- Each row is checked (sizes, JSON, a memory of the caller's team but for the events of a
-- memory deleted for ever in the file), its actor recorded as `pushed:<original>` and its
-- date never later than now (a `soft` event: now, as the memory's quarantine starts now). A
-- row whose key the team holds already is skipped. Returns the rows written.
CREATE OR REPLACE FUNCTION @S@.lethe_push_rows(p_table text, p_rows text) RETURNS bigint LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{curator}');
    t text := @S@.lethe_team();
    now_ text := @S@.lethe_now();
    r json;
    n bigint := 0;
    c bigint;
    meta jsonb;
BEGIN
    PERFORM @S@.lethe_check_json('pushed rows', p_rows, 'array', 1073741823, false);
    FOR r IN SELECT e FROM pg_catalog.json_array_elements(p_rows::json) AS a(e) LOOP
        IF pg_catalog.json_typeof(r) <> 'array' THEN
            RAISE EXCEPTION 'a pushed row is a JSON array' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF p_table = 'memory_forgetting_event' THEN
            IF (r ->> 0) IS NULL OR (r ->> 0) !~ '^fev_[0-9A-Za-z_-]{1,64}$' THEN
                RAISE EXCEPTION 'an event id is fev_ and at most 64 letters' USING ERRCODE = 'invalid_parameter_value';
            END IF;
            PERFORM @S@.lethe_check_text('memory id', r ->> 1, 200, false);
            IF (r ->> 2) IS NULL OR (r ->> 2) NOT IN ('soft', 'hard', 'review') THEN
                RAISE EXCEPTION 'an event is soft, hard or review' USING ERRCODE = 'invalid_parameter_value';
            END IF;
            PERFORM @S@.lethe_check_text('reason', r ->> 3, 2000, true);
            PERFORM @S@.lethe_check_text('policy', r ->> 4, 200, true);
            PERFORM @S@.lethe_check_json('metadata', r ->> 8, 'object', 64 * 1024, true);
            IF (r ->> 5) IS NOT NULL AND (pg_catalog.json_typeof(r -> 5) <> 'number'
                OR pg_catalog.abs((r ->> 5)::float8) > 1e6) THEN
                RAISE EXCEPTION 'a score is a finite number' USING ERRCODE = 'invalid_parameter_value';
            END IF;
            -- The memory may be gone: the audit of a memory the file deleted for ever moves
            -- without it (into the caller's team, as every row here).
            meta := COALESCE((r ->> 8)::jsonb, '{}'::jsonb);
            meta := meta || pg_catalog.jsonb_build_object('actor',
                @S@.lethe_pushed_actor(COALESCE(meta ->> 'actor', 'unknown')));
            INSERT INTO @S@.memory_forgetting_event
                (id, memory_id, action, reason, policy, forget_score, ttl_days, created_at, metadata_json, team)
            VALUES (r ->> 0, r ->> 1, r ->> 2, r ->> 3, r ->> 4, (r ->> 5)::float8,
                    @S@.lethe_check_count('ttl days', (r ->> 6)::bigint, 0, 36500, NULL),
                    CASE WHEN r ->> 2 = 'soft' THEN now_ ELSE @S@.lethe_pushed_date(k, r ->> 7, now_) END, meta::text, t)
            ON CONFLICT DO NOTHING;
        ELSIF p_table IN ('lethe_supersede', 'lethe_dismissed_pair') THEN
            IF NOT @S@.lethe_memory_in_team(r ->> 0, k, t) OR NOT @S@.lethe_memory_in_team(r ->> 1, k, t)
                OR (r ->> 0) = (r ->> 1) OR (p_table = 'lethe_dismissed_pair' AND NOT ((r ->> 0) < (r ->> 1))) THEN
                RAISE EXCEPTION 'a pushed link names two memories of the team' USING ERRCODE = 'invalid_parameter_value';
            END IF;
            EXECUTE pg_catalog.format('INSERT INTO @S@.%I (%I, %I, actor, created_at, team) VALUES ($1, $2, $3, $4, $5) '
                'ON CONFLICT DO NOTHING', p_table, CASE WHEN p_table = 'lethe_supersede' THEN 'old_id' ELSE 'a_id' END,
                CASE WHEN p_table = 'lethe_supersede' THEN 'new_id' ELSE 'b_id' END)
            USING r ->> 0, r ->> 1, @S@.lethe_pushed_actor(COALESCE(r ->> 2, 'unknown')),
                @S@.lethe_pushed_date(k, r ->> 3, now_), t;
        ELSIF p_table = 'lethe_session_end' THEN
            PERFORM @S@.lethe_check_text('session id', r ->> 0, 1000, false);
            PERFORM @S@.lethe_check_text('task kind', r ->> 1, 1000, false);
            PERFORM @S@.lethe_check_json('answer', r ->> 4, 'object', 16 * 1024 * 1024, false);
            INSERT INTO @S@.lethe_session_end (session_id, task_kind, ended_at, actor, answer, team)
            VALUES (r ->> 0, r ->> 1, @S@.lethe_pushed_date(k, r ->> 2, now_),
                    @S@.lethe_pushed_actor(COALESCE(r ->> 3, 'unknown')), r ->> 4, t)
            ON CONFLICT DO NOTHING;
        ELSE
            IF NOT @S@.lethe_memory_in_team(r ->> 0, k, t) THEN
                RAISE EXCEPTION 'a pushed row names a memory of the team' USING ERRCODE = 'invalid_parameter_value';
            END IF;
            IF p_table = 'lethe_procedure_version' THEN
                PERFORM @S@.lethe_check_json('snapshot', r ->> 2, 'object', 64 * 1024 * 1024, false);
                INSERT INTO @S@.lethe_procedure_version (memory_id, version, snapshot_json, actor, created_at, team)
                VALUES (r ->> 0, @S@.lethe_check_count('version', (r ->> 1)::bigint, 1, 1000000000, 1), r ->> 2,
                        @S@.lethe_pushed_actor(COALESCE(r ->> 3, 'unknown')), @S@.lethe_pushed_date(k, r ->> 4, now_), t)
                ON CONFLICT DO NOTHING;
            ELSIF p_table = 'lethe_review' THEN
                INSERT INTO @S@.lethe_review (memory_id, entered_at, team)
                VALUES (r ->> 0, @S@.lethe_pushed_date(k, r ->> 1, now_), t) ON CONFLICT DO NOTHING;
            ELSIF p_table = 'lethe_task_log' THEN
                PERFORM @S@.lethe_check_text('session id', r ->> 1, 1000, false);
                PERFORM @S@.lethe_check_text('task kind', r ->> 2, 1000, false);
                INSERT INTO @S@.lethe_task_log (memory_id, session_id, task_kind, ended_at, team)
                VALUES (r ->> 0, r ->> 1, r ->> 2, @S@.lethe_pushed_date(k, r ->> 3, now_), t) ON CONFLICT DO NOTHING;
            ELSIF p_table = 'lethe_session_rule' THEN
                PERFORM @S@.lethe_check_text('session id', r ->> 1, 1000, false);
                INSERT INTO @S@.lethe_session_rule (memory_id, session_id, created_at, team)
                VALUES (r ->> 0, r ->> 1, @S@.lethe_pushed_date(k, r ->> 2, now_), t) ON CONFLICT DO NOTHING;
            ELSE
                RAISE EXCEPTION 'no pushed rows go to %', pg_catalog.left(COALESCE(p_table, 'NULL'), 80)
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
        END IF;
        GET DIAGNOSTICS c = ROW_COUNT;
        n := n + c;
    END LOOP;
    RETURN n;
END
$f$;
$body$;
    EXECUTE replace(body, '@S@', s);

    -- Who may call what: nobody but the groups below (functions are PUBLIC by default).
    FOR f IN SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc p
             WHERE p.pronamespace = current_schema()::regnamespace AND p.proname IN ('lethe_memory_in_team',
                'lethe_row_actor', 'lethe_with_via', 'lethe_memory_erase', 'lethe_recall_log_append',
                'lethe_supersede_link', 'lethe_pair_dismiss', 'lethe_archive_insert', 'lethe_session_rule_add',
                'lethe_session_end_record', 'lethe_pushed_date', 'lethe_pushed_actor', 'lethe_push_archive',
                'lethe_push_rows') LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
    END LOOP;
    EXECUTE format('GRANT EXECUTE ON FUNCTION %1$s.lethe_recall_log_append(text, text, text, text, text), '
        '%1$s.lethe_supersede_link(text, text, text, text, text), %1$s.lethe_pair_dismiss(text, text, text, text, text), '
        '%1$s.lethe_archive_insert(text, text, text, text), %1$s.lethe_session_rule_add(text, text, text), '
        '%1$s.lethe_session_end_record(text, text, text, text, text, text) TO lethe_agent', s);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %1$s.lethe_memory_erase(text, text, text, text, text, text, text), '
        '%1$s.lethe_push_archive(text, text, bytea, text, text, text), %1$s.lethe_push_rows(text, text) TO lethe_curator', s);
    -- The rows of a hard delete go with its event now: the function alone is the team lead's
    -- no longer (the owner keeps it).
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s.lethe_hard_delete_rows(text) FROM lethe_curator', s);

    -- No direct INSERT (nor UPDATE of a hit's score) on these tables for any Lethe role.
    EXECUTE format('REVOKE INSERT ON %1$s.memory_forgetting_event, %1$s.lethe_recall_log, %1$s.lethe_recall_log_hit, '
        '%1$s.lethe_supersede, %1$s.lethe_archive, %1$s.lethe_procedure_version, %1$s.lethe_review, '
        '%1$s.lethe_session_end, %1$s.lethe_task_log, %1$s.lethe_session_rule, %1$s.lethe_dismissed_pair '
        'FROM PUBLIC, lethe_reader, lethe_agent, lethe_curator', s);
    EXECUTE format('REVOKE UPDATE ON %1$s.lethe_recall_log_hit FROM PUBLIC, lethe_reader, lethe_agent, lethe_curator', s);
END
$do$;

-- Column INSERT and UPDATE rights granted to a login role by hand go too (see migration 11).
DO $do$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT DISTINCT c.relname::text AS tbl, g.rolname::text AS who, a.privilege_type AS what
             FROM pg_catalog.pg_class c
             JOIN pg_catalog.pg_attribute x ON x.attrelid = c.oid AND x.attnum > 0 AND NOT x.attisdropped
             CROSS JOIN LATERAL pg_catalog.aclexplode(x.attacl) a
             JOIN pg_catalog.pg_roles g ON g.oid = a.grantee
             WHERE c.relnamespace = current_schema()::regnamespace
                AND c.relname IN ('memory_forgetting_event', 'lethe_recall_log', 'lethe_recall_log_hit',
                    'lethe_supersede', 'lethe_archive', 'lethe_procedure_version', 'lethe_review', 'lethe_session_end',
                    'lethe_task_log', 'lethe_session_rule', 'lethe_dismissed_pair')
                AND a.privilege_type IN ('INSERT', 'UPDATE')
                AND NOT g.rolsuper AND pg_catalog.pg_has_role(g.oid, 'lethe_reader', 'MEMBER')
             UNION
             SELECT DISTINCT c.relname::text, g.rolname::text, a.privilege_type
             FROM pg_catalog.pg_class c
             CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) a
             JOIN pg_catalog.pg_roles g ON g.oid = a.grantee
             WHERE c.relnamespace = current_schema()::regnamespace
                AND c.relname IN ('memory_forgetting_event', 'lethe_recall_log', 'lethe_recall_log_hit',
                    'lethe_supersede', 'lethe_archive', 'lethe_procedure_version', 'lethe_review', 'lethe_session_end',
                    'lethe_task_log', 'lethe_session_rule', 'lethe_dismissed_pair')
                AND a.privilege_type IN ('INSERT', 'UPDATE')
                AND NOT g.rolsuper AND pg_catalog.pg_has_role(g.oid, 'lethe_reader', 'MEMBER') LOOP
        EXECUTE format('REVOKE %s ON %I.%I FROM %I', r.what, current_schema(), r.tbl, r.who);
    END LOOP;
END
$do$;

SELECT lethe_definer_handover(current_schema());
