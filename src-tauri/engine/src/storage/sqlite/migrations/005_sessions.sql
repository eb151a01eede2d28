-- Why: the end of a session (the task-log tier). A task log is an episodic
-- memory with a row here naming its session and task kind: recall leaves it out unless the
-- caller names the same kind, and its recency uses `task_log_half_life_days`. The rules a
-- session produced are semantic memories linked here; `lethe_session_end` keeps each ended
-- session with its answer, so ending it again writes nothing. Lethe tables only, no trigger:
-- memento's columns keep their meaning (type stays one of its four tiers).
CREATE TABLE IF NOT EXISTS lethe_session_end (
    session_id TEXT PRIMARY KEY,
    task_kind TEXT NOT NULL,
    ended_at TEXT NOT NULL,
    actor TEXT NOT NULL,
    answer TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS lethe_task_log (
    memory_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    task_kind TEXT NOT NULL,
    ended_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS lethe_task_log_kind ON lethe_task_log (task_kind, ended_at);
CREATE INDEX IF NOT EXISTS lethe_task_log_session ON lethe_task_log (session_id);
CREATE TABLE IF NOT EXISTS lethe_session_rule (
    memory_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS lethe_session_rule_session ON lethe_session_rule (session_id);
