-- An agent role never pins (002_roles): its grants keep it from pinning an existing memory,
-- and this keeps it from writing a memory that is pinned already. A pin is the team lead's:
-- the policy never forgets a pinned memory, so an agent that pinned its own notes would put
-- them beyond review. The error is `insufficient_privilege`, which Lethe reports as
-- `forbidden` (exit 6).
CREATE OR REPLACE FUNCTION lethe_agents_do_not_pin() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF COALESCE(NEW.pinned, 0) <> 0
        AND NOT (SELECT rolsuper FROM pg_roles WHERE rolname = session_user)
        AND pg_has_role(session_user, 'lethe_agent', 'MEMBER')
        AND NOT pg_has_role(session_user, 'lethe_curator', 'MEMBER') THEN
        RAISE EXCEPTION 'the role % is an agent: pinning is for the team lead (a curator role)', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;
DROP TRIGGER IF EXISTS lethe_agents_do_not_pin ON memory_item;
CREATE TRIGGER lethe_agents_do_not_pin BEFORE INSERT ON memory_item
    FOR EACH ROW EXECUTE FUNCTION lethe_agents_do_not_pin();
