-- 007: the recall log. People see what agents recalled through the CLI or
-- `lethe mcp`: who, when, the query, the context, and which memories came back with their
-- scores. The log is bounded by the setting `recall_log_max_rows` (oldest rows dropped) and is
-- written through the meta-statistics coalescer, so recall never waits on it. The window's own
-- Recall view never logs. Additions only: memento's tables are untouched.
CREATE TABLE IF NOT EXISTS lethe_recall_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    actor TEXT NOT NULL,
    at TEXT NOT NULL,
    query TEXT NOT NULL,
    context_json TEXT NOT NULL,
    results_json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS lethe_recall_log_actor ON lethe_recall_log (actor, id);

-- Which logged recalls returned a memory (its detail lists them).
CREATE TABLE IF NOT EXISTS lethe_recall_log_hit (
    memory_id TEXT NOT NULL,
    log_id INTEGER NOT NULL,
    score REAL NOT NULL,
    PRIMARY KEY (memory_id, log_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS lethe_recall_log_hit_log ON lethe_recall_log_hit (log_id);
