-- Teams: every row that holds or describes a memory belongs to a team, and
-- row-level security shows a role its own team's rows only. `lethe admin add-agent NAME
-- --team T` (and add-curator, add-reader) puts a role in a team; a role in no team, and the
-- rows written before this migration, are in the team `default`. The owner who sets the server
-- up owns the tables and so sees every team (PostgreSQL's rule for table owners); agents,
-- curators and readers never do.

CREATE TABLE IF NOT EXISTS lethe_team_member (
    role TEXT PRIMARY KEY,
    team TEXT NOT NULL CHECK (team ~ '^[A-Za-z0-9._-]{1,64}$')
);

-- The team of the connection's role. SECURITY DEFINER, so that roles need no right on the
-- membership table (they would otherwise see which roles other teams have); its search path
-- is fixed and the table named with its schema.
DO $do$
BEGIN
    EXECUTE format($f$
        CREATE OR REPLACE FUNCTION lethe_team() RETURNS text LANGUAGE sql STABLE SECURITY DEFINER
            SET search_path = pg_catalog, pg_temp AS $b$
            SELECT COALESCE((SELECT team FROM %I.lethe_team_member WHERE role = session_user::text), 'default')
        $b$$f$, current_schema());
    EXECUTE format('REVOKE ALL ON FUNCTION %I.lethe_team() FROM PUBLIC', current_schema());
    EXECUTE format('GRANT EXECUTE ON FUNCTION %I.lethe_team() TO lethe_reader', current_schema());
END
$do$;

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memory_item', 'memory_forgetting_event', 'meta_memory_stats', 'lethe_settings',
        'lethe_action', 'lethe_change', 'lethe_signature', 'lethe_supersede', 'lethe_archive',
        'lethe_procedure_version', 'lethe_review', 'lethe_vector', 'lethe_neighbour', 'lethe_centroid',
        'lethe_session_end', 'lethe_task_log', 'lethe_session_rule', 'lethe_recall_log',
        'lethe_recall_log_hit', 'lethe_dismissed_pair'] LOOP
        EXECUTE format('ALTER TABLE %I ADD COLUMN IF NOT EXISTS team TEXT NOT NULL DEFAULT lethe_team()', t);
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('DROP POLICY IF EXISTS lethe_team_rows ON %I', t);
        -- `(SELECT lethe_team())` is evaluated once per statement, not once per row.
        EXECUTE format('CREATE POLICY lethe_team_rows ON %I USING (team = (SELECT lethe_team())) '
            'WITH CHECK (team = (SELECT lethe_team()))', t);
    END LOOP;
END
$$;

-- Keys that two teams may both use: a setting, a model's centroids, a session's end.
ALTER TABLE lethe_settings DROP CONSTRAINT IF EXISTS lethe_settings_pkey;
ALTER TABLE lethe_settings ADD PRIMARY KEY (team, key);
ALTER TABLE lethe_centroid DROP CONSTRAINT IF EXISTS lethe_centroid_pkey;
ALTER TABLE lethe_centroid ADD PRIMARY KEY (team, model);
ALTER TABLE lethe_session_end DROP CONSTRAINT IF EXISTS lethe_session_end_pkey;
ALTER TABLE lethe_session_end ADD PRIMARY KEY (team, session_id);
CREATE INDEX IF NOT EXISTS lethe_memory_team ON memory_item (team);

-- Notifications carry the team, so a listener wakes for its own team's changes only.
CREATE OR REPLACE FUNCTION lethe_memory_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO lethe_change (memory_id, kind, team) VALUES (NEW.id, 'insert', NEW.team);
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO lethe_change (memory_id, kind, team) VALUES (NEW.id, 'update', NEW.team);
        IF OLD.content IS DISTINCT FROM NEW.content THEN
            DELETE FROM lethe_vector WHERE memory_id = OLD.id;
            DELETE FROM lethe_neighbour WHERE memory_rowid = OLD.rowid;
            DELETE FROM lethe_signature WHERE memory_id = OLD.id;
        END IF;
    ELSE
        INSERT INTO lethe_change (memory_id, kind, team) VALUES (OLD.id, 'delete', OLD.team);
        DELETE FROM lethe_vector WHERE memory_id = OLD.id;
        DELETE FROM lethe_neighbour WHERE memory_rowid = OLD.rowid;
    END IF;
    PERFORM pg_notify('lethe_change', COALESCE(NEW.team, OLD.team));
    RETURN NULL;
END
$$;
