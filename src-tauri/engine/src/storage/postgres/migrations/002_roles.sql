-- Database roles instead of trust. Three group roles; `lethe admin add-agent`,
-- `add-curator` and `add-reader` create login roles in them.
--   lethe_reader:  reads everything, writes nothing.
--   lethe_agent:   remembers, edits, cites, recalls, quarantines and restores; never deletes a
--                  memory for ever, never changes settings, never pins or sets importance,
--                  and appends to the audit without rewriting it.
--   lethe_curator: an agent's rights, plus hard delete (and the scrub of the deleted text
--                  from earlier audit rows), pin, importance and settings.
-- Roles belong to the whole server: another database's setup may create them at the same time.
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['lethe_reader', 'lethe_agent', 'lethe_curator'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL;
            END;
        END IF;
    END LOOP;
END
$$;
GRANT lethe_reader TO lethe_agent;
GRANT lethe_agent TO lethe_curator;

DO $$
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO lethe_reader', current_schema());
    EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO lethe_reader', current_schema());
    EXECUTE format('GRANT USAGE ON ALL SEQUENCES IN SCHEMA %I TO lethe_agent', current_schema());
END
$$;

GRANT INSERT ON memory_item TO lethe_agent;
GRANT UPDATE (type, content, privacy_scope, last_accessed, tags, source, view_count, cite_count, edit_count,
    task_goal, steps, reflection_notes, workflow_name, skill_name, trigger_conditions, version, owner_id,
    session_id, project_id, is_deleted, deleted_at) ON memory_item TO lethe_agent;
GRANT INSERT, UPDATE, DELETE ON meta_memory_stats, lethe_signature, lethe_supersede, lethe_archive,
    lethe_procedure_version, lethe_review, lethe_vector, lethe_neighbour, lethe_centroid, lethe_session_end,
    lethe_task_log, lethe_session_rule, lethe_recall_log, lethe_recall_log_hit, lethe_dismissed_pair,
    lethe_change TO lethe_agent;
GRANT INSERT ON memory_forgetting_event, lethe_action TO lethe_agent;

GRANT UPDATE (pinned, importance), DELETE ON memory_item TO lethe_curator;
GRANT INSERT, UPDATE ON lethe_settings TO lethe_curator;
GRANT UPDATE ON memory_forgetting_event, lethe_action TO lethe_curator;

-- The audit's actor is the database role for an agent: whatever the client claims, a row an
-- agent role inserts names that role, so no agent can write as someone else.
CREATE OR REPLACE FUNCTION lethe_actor_is_the_role() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    agent boolean := NOT (SELECT rolsuper FROM pg_roles WHERE rolname = session_user)
        AND pg_has_role(session_user, 'lethe_agent', 'MEMBER')
        AND NOT pg_has_role(session_user, 'lethe_curator', 'MEMBER');
BEGIN
    IF agent THEN
        IF TG_TABLE_NAME = 'lethe_action' THEN
            NEW.actor := 'agent:' || session_user;
        ELSIF COALESCE(NEW.metadata_json::jsonb ->> 'actor', '') <> 'policy' THEN
            NEW.metadata_json := jsonb_set(COALESCE(NEW.metadata_json, '{}')::jsonb, '{actor}',
                to_jsonb('agent:' || session_user))::text;
        END IF;
    END IF;
    RETURN NEW;
END
$$;
DROP TRIGGER IF EXISTS lethe_action_actor ON lethe_action;
CREATE TRIGGER lethe_action_actor BEFORE INSERT ON lethe_action
    FOR EACH ROW EXECUTE FUNCTION lethe_actor_is_the_role();
DROP TRIGGER IF EXISTS lethe_event_actor ON memory_forgetting_event;
CREATE TRIGGER lethe_event_actor BEFORE INSERT ON memory_forgetting_event
    FOR EACH ROW EXECUTE FUNCTION lethe_actor_is_the_role();
