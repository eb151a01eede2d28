-- The rows Lethe derives from a memory (signatures, vectors, neighbour lists, centroids, recall
-- statistics) and the team lead's settings are written by the database's functions too: after
-- this migration no Lethe role holds any right but SELECT on any table. Before it a role kept
-- column INSERT and UPDATE rights on those tables, so with psql (the password is in an agent's
-- MCP configuration) it could rewrite the vector or the signature of any memory of its team,
-- set recall statistics to any number (which moves forget scores), or store settings the
-- engine would refuse.
--
-- After it (each function SECURITY DEFINER, owned by the NOLOGIN definer role of migration
-- 8, search path `pg_catalog, pg_temp`, every table named with its schema), each function
-- checks the caller's role and team and what the server can check without the engine's model
-- and formulas:
--   * lethe_signatures_store: signatures (a content hash of 64 hex digits, band keys of at
--     most 1 kB) of memories of the caller's team; a memory's signature is never rewritten
--     (a change of its text drops it first: the journal trigger), a second one is ignored;
--   * lethe_vectors_store: vectors of memories of the caller's team, each of the model's size
--     (`vector_bytes` in lethe_meta, recorded by `admin setup`); a vector of a model is never
--     rewritten by the same model (a change of text drops it first), only replaced by another
--     model's (a new model re-embeds);
--   * lethe_neighbour_store (one list) and lethe_neighbours_store (a JSON array of lists):
--     a memory's neighbour list (a memory of the caller's team by rowid; model and hash at
--     most 200 bytes, keys and list at most 64 MiB), replacing the memory's row (the final
--     list replaces a partial one);
--   * lethe_centroid_store: a model's centroids (at most 16 MiB of 4-byte numbers), stored
--     once per team and model;
--   * lethe_stats_add: recall statistics only move forward (0 to 1,000,000 recalls a call,
--     successes and failures together at most that, a finite confidence sum, a date in the
--     engine's form and not in the future), for memories of the caller's team;
--   * lethe_settings_store: the team lead's; the value a JSON object whose fields the server
--     relies on are in the engine's ranges; the `settings` action written with it, its before
--     state the stored row.
-- Applied by `lethe admin setup` as the database's owner; a store set up before keeps every
-- row (no row is rewritten).

DO $do$
DECLARE
    s text := quote_ident(current_schema());
    body text;
    f text;
BEGIN
    body := $body$
-- Bytes given as hex text (JSON carries no bytes), at most `max_bytes`.
CREATE OR REPLACE FUNCTION @S@.lethe_hex_bytes(what text, v text, max_bytes int) RETURNS bytea LANGUAGE plpgsql
    IMMUTABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    b bytea;
BEGIN
    IF v IS NULL OR pg_catalog.length(v) > 2 * max_bytes + 2 OR v !~ '^(\\x)?([0-9a-fA-F]{2})*$' THEN
        RAISE EXCEPTION '% is at most % bytes as hex', what, max_bytes USING ERRCODE = 'invalid_parameter_value';
    END IF;
    b := pg_catalog.decode(pg_catalog.regexp_replace(v, '^\\x', ''), 'hex');
    RETURN b;
END
$f$;

-- Signatures of memories of the caller's team: `p_rows` a JSON array of [memory id, content
-- hash, band keys as hex]. A memory that has one keeps it; a row of a memory the team does not
-- hold (deleted since, or another team's) is left out. Returns the rows stored.
CREATE OR REPLACE FUNCTION @S@.lethe_signatures_store(p_rows text) RETURNS bigint LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    t text := @S@.lethe_team();
    r json;
    n bigint := 0;
    c bigint;
BEGIN
    PERFORM @S@.lethe_check_json('signatures', p_rows, 'array', 256 * 1024 * 1024, false);
    FOR r IN SELECT e FROM pg_catalog.json_array_elements(p_rows::json) AS a(e) LOOP
        IF (r ->> 1) IS NULL OR (r ->> 1) !~ '^[0-9a-f]{64}$' THEN
            RAISE EXCEPTION 'a content hash is 64 hex digits' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF NOT @S@.lethe_memory_in_team(r ->> 0, k, t) THEN
            CONTINUE;
        END IF;
        INSERT INTO @S@.lethe_signature (memory_id, content_hash, bands, team)
        VALUES (r ->> 0, r ->> 1, @S@.lethe_hex_bytes('band keys', r ->> 2, 1024),
                (SELECT m.team FROM @S@.memory_item m WHERE m.id = r ->> 0 AND (k = 'owner' OR m.team = t) LIMIT 1))
        ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS c = ROW_COUNT;
        n := n + c;
    END LOOP;
    RETURN n;
END
$f$;

-- Vectors of memories of the caller's team: `p_rows` a JSON array of [memory id, model,
-- vector as hex]. A vector of the same model stays; another model's is replaced; a row of a
-- memory the team does not hold is left out. Returns the rows stored.
CREATE OR REPLACE FUNCTION @S@.lethe_vectors_store(p_rows text) RETURNS bigint LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    t text := @S@.lethe_team();
    size int := (SELECT value::int FROM @S@.lethe_meta WHERE key = 'vector_bytes' AND value ~ '^[0-9]{1,6}$');
    r json;
    v bytea;
    mt text;
    n bigint := 0;
    c bigint;
BEGIN
    PERFORM @S@.lethe_check_json('vectors', p_rows, 'array', 256 * 1024 * 1024, false);
    FOR r IN SELECT e FROM pg_catalog.json_array_elements(p_rows::json) AS a(e) LOOP
        PERFORM @S@.lethe_check_text('model', r ->> 1, 200, false);
        v := @S@.lethe_hex_bytes('a vector', r ->> 2, 65536);
        IF size IS NOT NULL AND pg_catalog.length(v) <> size THEN
            RAISE EXCEPTION 'a vector is % bytes, not %', size, pg_catalog.length(v) USING ERRCODE = 'invalid_parameter_value';
        END IF;
        SELECT m.team INTO mt FROM @S@.memory_item m WHERE m.id = r ->> 0 AND (k = 'owner' OR m.team = t) LIMIT 1;
        IF mt IS NULL THEN
            CONTINUE;
        END IF;
        -- A vector of another model replaced takes a new rowid, as a new row does: readers that
        -- keep the index in memory look for vectors stored above the highest rowid they read.
        INSERT INTO @S@.lethe_vector (memory_id, model, vec, team) VALUES (r ->> 0, r ->> 1, v, mt)
        ON CONFLICT (memory_id, team) DO UPDATE SET model = EXCLUDED.model, vec = EXCLUDED.vec, rowid = DEFAULT
            WHERE @S@.lethe_vector.model <> EXCLUDED.model;
        GET DIAGNOSTICS c = ROW_COUNT;
        n := n + c;
    END LOOP;
    RETURN n;
END
$f$;

-- A memory's neighbour list (by the memory's rowid, of the caller's team), replacing the
-- memory's row. Returns 1, or 0 when the team has no memory at that rowid (deleted since).
-- Called once per list, 100,000 times in one transaction for a first scoring: the checks are
-- inline, and the role and team are read once each.
CREATE OR REPLACE FUNCTION @S@.lethe_neighbour_store(p_rowid bigint, p_model text, p_hash text, p_keys bytea,
    p_list bytea) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_session_kind();
    n bigint;
BEGIN
    IF k NOT IN ('agent', 'curator', 'owner') THEN
        RAISE EXCEPTION 'the role % writes nothing here', session_user USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_model IS NULL OR pg_catalog.octet_length(p_model) > 200 OR p_hash IS NULL
        OR pg_catalog.octet_length(p_hash) > 200 OR p_keys IS NULL OR p_list IS NULL
        OR pg_catalog.length(p_keys) > 64 * 1024 * 1024 OR pg_catalog.length(p_list) > 64 * 1024 * 1024 THEN
        RAISE EXCEPTION 'a neighbour list has a model and a hash of at most 200 bytes, keys and entries of at most 64 MiB'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO @S@.lethe_neighbour (memory_rowid, model, hash, keys, list, team)
    SELECT p_rowid, p_model, p_hash, p_keys, p_list, m.team FROM @S@.memory_item m
    WHERE m.rowid = p_rowid AND (k = 'owner' OR m.team = @S@.lethe_team())
    ON CONFLICT (memory_rowid, team) DO UPDATE SET model = EXCLUDED.model, hash = EXCLUDED.hash, keys = EXCLUDED.keys,
        list = EXCLUDED.list;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$f$;

-- Many neighbour lists at once (`p_rows` a JSON array of [rowid, model, hash, keys as hex,
-- list as hex]), each as lethe_neighbour_store stores it: the role and team are checked once
-- for the whole array. Returns the lists stored.
CREATE OR REPLACE FUNCTION @S@.lethe_neighbours_store(p_rows text) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    t text := @S@.lethe_team();
    n bigint;
BEGIN
    PERFORM @S@.lethe_check_json('neighbour lists', p_rows, 'array', 1073741823, false);
    IF EXISTS (SELECT 1 FROM pg_catalog.json_array_elements(p_rows::json) AS e(x)
               WHERE pg_catalog.json_typeof(x) <> 'array' OR pg_catalog.json_typeof(x -> 0) IS DISTINCT FROM 'number'
                  OR (x ->> 1) IS NULL OR pg_catalog.octet_length(x ->> 1) > 200
                  OR (x ->> 2) IS NULL OR pg_catalog.octet_length(x ->> 2) > 200
                  OR (x ->> 3) IS NULL OR (x ->> 3) !~ '^([0-9a-f]{2})*$' OR pg_catalog.length(x ->> 3) > 128 * 1024 * 1024
                  OR (x ->> 4) IS NULL OR (x ->> 4) !~ '^([0-9a-f]{2})*$' OR pg_catalog.length(x ->> 4) > 128 * 1024 * 1024) THEN
        RAISE EXCEPTION 'a neighbour list is [rowid, model, hash, keys, list] with model and hash of at most 200 bytes and hex keys and list of at most 64 MiB'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO @S@.lethe_neighbour (memory_rowid, model, hash, keys, list, team)
    SELECT DISTINCT ON ((x ->> 0)::bigint) (x ->> 0)::bigint, x ->> 1, x ->> 2, pg_catalog.decode(x ->> 3, 'hex'),
           pg_catalog.decode(x ->> 4, 'hex'), m.team
    FROM pg_catalog.json_array_elements(p_rows::json) WITH ORDINALITY AS e(x, i)
    JOIN @S@.memory_item m ON m.rowid = (x ->> 0)::bigint AND (k = 'owner' OR m.team = t)
    ORDER BY (x ->> 0)::bigint, i DESC
    ON CONFLICT (memory_rowid, team) DO UPDATE SET model = EXCLUDED.model, hash = EXCLUDED.hash, keys = EXCLUDED.keys,
        list = EXCLUDED.list;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$f$;

-- A model's centroids for the caller's team, stored once. Returns the rows stored.
CREATE OR REPLACE FUNCTION @S@.lethe_centroid_store(p_model text, p_data bytea) RETURNS bigint LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    n bigint;
BEGIN
    PERFORM @S@.lethe_check_text('model', p_model, 200, false);
    IF p_data IS NULL OR pg_catalog.length(p_data) = 0 OR pg_catalog.length(p_data) > 16 * 1024 * 1024
        OR pg_catalog.length(p_data) % 4 <> 0 THEN
        RAISE EXCEPTION 'centroids are at most 16 MiB of 4-byte numbers' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO @S@.lethe_centroid (model, data, team) VALUES (p_model, p_data, @S@.lethe_team()) ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$f$;

-- Recall statistics of a memory of the caller's team move forward: `p_count` recalls (0 to
-- 1,000,000), of which `p_success` and `p_failure` (together at most the count), the sum of
-- their confidences (finite), the latest at `p_last` (the engine's form, not in the future;
-- the later date stays). The additive upsert of the engine's file. Returns 1, or 0 when the
-- team has no such memory (deleted for ever since its recall: nothing is added).
CREATE OR REPLACE FUNCTION @S@.lethe_stats_add(p_id text, p_count bigint, p_success bigint, p_failure bigint,
    p_confidence_sum double precision, p_last text) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{agent,curator}');
    mt text;
BEGIN
    IF p_count IS NULL OR p_count < 0 OR p_count > 1000000 OR p_success IS NULL OR p_success < 0
        OR p_failure IS NULL OR p_failure < 0 OR p_success + p_failure > p_count OR p_confidence_sum IS NULL
        OR p_confidence_sum = 'NaN'::float8 OR pg_catalog.abs(p_confidence_sum) > 1e6 * p_count THEN
        RAISE EXCEPTION 'statistics move forward: 0 to 1000000 recalls, successes, failures and confidence within them'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM @S@.lethe_check_date('last recalled', p_last, true);
    SELECT m.team INTO mt FROM @S@.memory_item m WHERE m.id = p_id AND (k = 'owner' OR m.team = @S@.lethe_team()) LIMIT 1;
    IF mt IS NULL THEN
        -- A memory deleted for ever since it was recalled (or none of the team's): nothing to add.
        RETURN 0;
    END IF;
    INSERT INTO @S@.meta_memory_stats AS s (memory_id, recall_count, success_count, failure_count, avg_confidence,
        last_recalled_at, team)
    VALUES (p_id, p_count, p_success, p_failure, p_confidence_sum / NULLIF(p_count, 0), p_last, mt)
    ON CONFLICT (memory_id, team) DO UPDATE SET
        avg_confidence = COALESCE((COALESCE(s.avg_confidence, 0) * s.recall_count + p_confidence_sum)
            / NULLIF(s.recall_count + p_count, 0), s.avg_confidence),
        recall_count = s.recall_count + p_count,
        success_count = s.success_count + p_success,
        failure_count = s.failure_count + p_failure,
        last_recalled_at = GREATEST(COALESCE(s.last_recalled_at, ''), COALESCE(p_last, ''));
    RETURN 1;
END
$f$;

-- A number field of the settings: absent, or a finite number in [lo, hi].
CREATE OR REPLACE FUNCTION @S@.lethe_check_setting(v jsonb, field text, lo double precision, hi double precision)
    RETURNS void LANGUAGE plpgsql IMMUTABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    IF v ? field AND (pg_catalog.jsonb_typeof(v -> field) <> 'number' OR (v ->> field)::float8 < lo
                      OR (v ->> field)::float8 > hi) THEN
        RAISE EXCEPTION 'setting % must be a number in [%, %]', field, lo, hi USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$f$;

-- The team lead's settings (`p_value`, the engine's JSON object) and their `settings` action:
-- its before state is the stored row (`p_before`, the engine's defaults, only when the team
-- has none), its after state the value stored. Returns 1.
CREATE OR REPLACE FUNCTION @S@.lethe_settings_store(p_value text, p_before text, p_actor text, p_via text, p_at text)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    k text := @S@.lethe_require('{curator}');
    t text := @S@.lethe_team();
    v jsonb;
    before_ text;
BEGIN
    PERFORM @S@.lethe_check_json('settings', p_value, 'object', 64 * 1024, false);
    PERFORM @S@.lethe_check_json('the settings before', p_before, 'object', 64 * 1024, true);
    v := p_value::jsonb;
    PERFORM @S@.lethe_check_setting(v, 'max_content_bytes', 1, 64 * 1024 * 1024);
    PERFORM @S@.lethe_check_setting(v, 'quarantine_days', 0, 1e9);
    PERFORM @S@.lethe_check_setting(v, 'recall_log_max_rows', 0, 10000000);
    PERFORM @S@.lethe_check_setting(v, 'threshold', 1e-300, 2);
    PERFORM @S@.lethe_check_setting(v, 'review_band_low', -1e300, COALESCE((v ->> 'threshold')::float8, 2));
    PERFORM @S@.lethe_check_setting(v, 'duplicate_reason_above', 0, 1);
    PERFORM @S@.lethe_check_setting(v, 'working_max_turns', 1, 1e18);
    PERFORM @S@.lethe_check_setting(v, 'access_decay_days', 1e-300, 1e300);
    PERFORM @S@.lethe_check_setting(v, 'task_log_half_life_days', 1e-300, 1e300);
    PERFORM @S@.lethe_check_setting(v, 'working_window_hours', 1e-300, 1e300);
    IF (v ? 'max_content_bytes' AND (v ->> 'max_content_bytes') !~ '^[0-9]+$')
        OR (v ? 'recall_log_max_rows' AND (v ->> 'recall_log_max_rows') !~ '^[0-9]+$') THEN
        RAISE EXCEPTION 'max_content_bytes and recall_log_max_rows are whole numbers' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT value INTO before_ FROM @S@.lethe_settings WHERE team = t AND key = 'policy' FOR UPDATE;
    INSERT INTO @S@.lethe_settings (key, value, team) VALUES ('policy', p_value, t)
    ON CONFLICT (team, key) DO UPDATE SET value = EXCLUDED.value;
    INSERT INTO @S@.lethe_action (memory_id, action, actor, before_json, after_json, created_at, team)
    VALUES (NULL, 'settings', @S@.lethe_row_actor(k, p_actor), COALESCE(before_, p_before),
            @S@.lethe_with_via(v, p_via), @S@.lethe_clock(k, p_at), t);
    RETURN 1;
END
$f$;

-- 013's action row, refusing also the settings' action (lethe_settings_store writes it).
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
                    'procedure_update', 'task_log', 'superseded', 'keep_both', 'end_session', 'settings')
        AND k <> 'owner' THEN
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
$body$;
    EXECUTE replace(body, '@S@', s);

    FOR f IN SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc p
             WHERE p.pronamespace = current_schema()::regnamespace AND p.proname IN ('lethe_hex_bytes',
                'lethe_signatures_store', 'lethe_vectors_store', 'lethe_neighbour_store', 'lethe_neighbours_store',
                'lethe_centroid_store',
                'lethe_stats_add', 'lethe_check_setting', 'lethe_settings_store') LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
    END LOOP;
    EXECUTE format('GRANT EXECUTE ON FUNCTION %1$s.lethe_signatures_store(text), %1$s.lethe_vectors_store(text), '
        '%1$s.lethe_neighbour_store(bigint, text, text, bytea, bytea), %1$s.lethe_neighbours_store(text), '
        '%1$s.lethe_centroid_store(text, bytea), '
        '%1$s.lethe_stats_add(text, bigint, bigint, bigint, double precision, text) TO lethe_agent', s);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %1$s.lethe_settings_store(text, text, text, text, text) TO lethe_curator', s);

    -- No right but SELECT on any table for any Lethe role (a table-level REVOKE takes the
    -- column rights granted to the groups too).
    EXECUTE format('REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON ALL TABLES IN SCHEMA %s '
        'FROM PUBLIC, lethe_reader, lethe_agent, lethe_curator', s);
END
$do$;

-- Column and table rights granted to a login role of Lethe's groups by hand go too.
DO $do$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT DISTINCT c.relname::text AS tbl, g.rolname::text AS who, a.privilege_type AS what
             FROM pg_catalog.pg_class c
             JOIN pg_catalog.pg_attribute x ON x.attrelid = c.oid AND x.attnum > 0 AND NOT x.attisdropped
             CROSS JOIN LATERAL pg_catalog.aclexplode(x.attacl) a
             JOIN pg_catalog.pg_roles g ON g.oid = a.grantee
             WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm')
                AND a.privilege_type <> 'SELECT'
                AND NOT g.rolsuper AND pg_catalog.pg_has_role(g.oid, 'lethe_reader', 'MEMBER')
             UNION
             SELECT DISTINCT c.relname::text, g.rolname::text, a.privilege_type
             FROM pg_catalog.pg_class c
             CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) a
             JOIN pg_catalog.pg_roles g ON g.oid = a.grantee
             WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm')
                AND a.privilege_type <> 'SELECT'
                AND NOT g.rolsuper AND pg_catalog.pg_has_role(g.oid, 'lethe_reader', 'MEMBER') LOOP
        EXECUTE format('REVOKE %s ON %I.%I FROM %I', r.what, current_schema(), r.tbl, r.who);
    END LOOP;
END
$do$;

SELECT lethe_definer_handover(current_schema());
