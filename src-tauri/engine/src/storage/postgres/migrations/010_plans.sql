-- Plans for the recall-context trigger of migration 7 that stay small whatever the table's
-- size. The planner took each neighbour look-up for a set of 1,000 rows, so a memory's
-- refresh joined the whole table by hash and crossed PostgreSQL's JIT threshold: every memory
-- written in a session paid a JIT compilation (about 50 ms) and a scan of the table, and a
-- push of 100k memories took about an hour. A look-up answers one row (its two neighbours'
-- ids), the dependents are a handful, and statements this short never gain from JIT.

DO $do$
DECLARE
    s text := quote_ident(current_schema());
BEGIN
    EXECUTE format('ALTER FUNCTION %s.lethe_session_context(bigint, text, text, text, text, text) ROWS 1', s);
    EXECUTE format('ALTER FUNCTION %s.lethe_context_dependents(bigint, text, text, text, text, text) ROWS 4', s);
    EXECUTE format('ALTER FUNCTION %s.lethe_context_refresh(bigint[]) SET jit = off', s);
    EXECUTE format('ALTER FUNCTION %s.lethe_context_changed() SET jit = off', s);
END
$do$;
