-- Why: the base schema. memento's tables keep memento's names and columns so that a memento
-- database opens as it is; every statement is IF NOT EXISTS because on a memento file these
-- tables already exist and must not be touched. Lethe's own tables carry the lethe_ prefix.
CREATE TABLE IF NOT EXISTS memory_item (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL CHECK (type IN ('working', 'episodic', 'semantic', 'procedural')),
    content TEXT NOT NULL,
    importance REAL DEFAULT 0.5,
    privacy_scope TEXT DEFAULT 'private',
    created_at TEXT NOT NULL,
    last_accessed TEXT,
    pinned INTEGER DEFAULT 0,
    tags TEXT,
    source TEXT,
    view_count INTEGER DEFAULT 0,
    cite_count INTEGER DEFAULT 0,
    edit_count INTEGER DEFAULT 0,
    task_goal TEXT,
    steps TEXT,
    reflection_notes TEXT,
    workflow_name TEXT,
    skill_name TEXT,
    trigger_conditions TEXT,
    version INTEGER DEFAULT 1,
    owner_id TEXT,
    session_id TEXT,
    project_id TEXT,
    is_deleted INTEGER DEFAULT 0,
    deleted_at TEXT
);

CREATE TABLE IF NOT EXISTS memory_forgetting_event (
    id TEXT PRIMARY KEY,
    memory_id TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('soft', 'hard', 'review')),
    reason TEXT,
    policy TEXT,
    forget_score REAL,
    ttl_days INTEGER,
    created_at TEXT NOT NULL,
    metadata_json TEXT
);

CREATE TABLE IF NOT EXISTS meta_memory_stats (
    memory_id TEXT PRIMARY KEY,
    recall_count INTEGER NOT NULL DEFAULT 0,
    success_count INTEGER NOT NULL DEFAULT 0,
    failure_count INTEGER NOT NULL DEFAULT 0,
    avg_confidence REAL,
    last_recalled_at TEXT
);

CREATE TABLE IF NOT EXISTS lethe_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS lethe_settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Person and agent actions (restore, pin, unpin, edit, importance, settings, ...), with the
-- actor and the state before and after. Like memory_forgetting_event it has no foreign key so
-- it outlives the memory.
CREATE TABLE IF NOT EXISTS lethe_action (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id TEXT,
    action TEXT NOT NULL,
    actor TEXT NOT NULL,
    before_json TEXT,
    after_json TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS lethe_action_memory ON lethe_action (memory_id);

-- The change journal: filled by triggers, so writes from any process (memento included) are
-- seen by the live watcher, which reads it from its last sequence number.
CREATE TABLE IF NOT EXISTS lethe_change (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id TEXT,
    kind TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS lethe_signature (
    memory_id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    bands BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS lethe_signature_hash ON lethe_signature (content_hash);

CREATE TABLE IF NOT EXISTS lethe_supersede (
    old_id TEXT NOT NULL,
    new_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (old_id, new_id)
);
CREATE INDEX IF NOT EXISTS lethe_supersede_new ON lethe_supersede (new_id);

CREATE TABLE IF NOT EXISTS lethe_archive (
    archive_no INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id TEXT NOT NULL,
    memo TEXT NOT NULL,
    original BLOB NOT NULL,
    sha256 TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    actor TEXT NOT NULL,
    archived_at TEXT NOT NULL,
    restored_at TEXT
);
CREATE INDEX IF NOT EXISTS lethe_archive_memory ON lethe_archive (memory_id);

CREATE TABLE IF NOT EXISTS lethe_procedure_version (
    memory_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    snapshot_json TEXT NOT NULL,
    actor TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (memory_id, version)
);

-- Memories currently inside the review band, so that a review event is written once when a
-- memory enters the band and not on every batch run.
CREATE TABLE IF NOT EXISTS lethe_review (
    memory_id TEXT PRIMARY KEY,
    entered_at TEXT NOT NULL
);

CREATE TRIGGER IF NOT EXISTS lethe_change_ai AFTER INSERT ON memory_item BEGIN
    INSERT INTO lethe_change (memory_id, kind) VALUES (new.id, 'insert');
END;
CREATE TRIGGER IF NOT EXISTS lethe_change_au AFTER UPDATE ON memory_item BEGIN
    INSERT INTO lethe_change (memory_id, kind) VALUES (new.id, 'update');
END;
CREATE TRIGGER IF NOT EXISTS lethe_change_ad AFTER DELETE ON memory_item BEGIN
    INSERT INTO lethe_change (memory_id, kind) VALUES (old.id, 'delete');
END;
