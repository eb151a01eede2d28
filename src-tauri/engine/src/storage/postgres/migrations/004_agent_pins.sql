-- An agent role never pins (002_roles): its grants keep it from pinning an existing memory,
-- and this keeps it from writing a memory that is pinned already. A pin is the team lead's:
-- the policy never forgets a pinned memory, so an agent that pinned its own notes would put
-- them beyond review. The error is `insufficient_privilege`, which Lethe reports as
-- `forbidden` (exit 6).

-- Whether the session's role is an agent (not a superuser, in lethe_agent, not a curator):
-- one definition for every trigger that treats agents apart.
CREATE OR REPLACE FUNCTION lethe_session_is_agent() RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT NOT (SELECT rolsuper FROM pg_roles WHERE rolname = session_user)
        AND pg_has_role(session_user, 'lethe_agent', 'MEMBER')
        AND NOT pg_has_role(session_user, 'lethe_curator', 'MEMBER')
$$;

-- 002's audit trigger, the same rule through that definition.
CREATE OR REPLACE FUNCTION lethe_actor_is_the_role() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF lethe_session_is_agent() THEN
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

CREATE OR REPLACE FUNCTION lethe_agents_do_not_pin() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF COALESCE(NEW.pinned, 0) <> 0 AND lethe_session_is_agent() THEN
        RAISE EXCEPTION 'the role % is an agent: pinning is for the team lead (a curator role)', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;
DROP TRIGGER IF EXISTS lethe_agents_do_not_pin ON memory_item;
CREATE TRIGGER lethe_agents_do_not_pin BEFORE INSERT ON memory_item
    FOR EACH ROW EXECUTE FUNCTION lethe_agents_do_not_pin();
