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

SELECT lethe_definer_handover(current_schema());
