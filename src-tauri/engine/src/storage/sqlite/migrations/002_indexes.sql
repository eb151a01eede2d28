-- Why: listing, the policy batch and the working-memory gate filter on these columns; without
-- indexes every page of the inspector would scan the table.
CREATE INDEX IF NOT EXISTS lethe_memory_type_deleted ON memory_item (type, is_deleted);
CREATE INDEX IF NOT EXISTS lethe_memory_created ON memory_item (created_at);
CREATE INDEX IF NOT EXISTS lethe_memory_session ON memory_item (session_id, type);
CREATE INDEX IF NOT EXISTS lethe_memory_deleted_at ON memory_item (is_deleted, deleted_at);
CREATE INDEX IF NOT EXISTS lethe_event_memory ON memory_forgetting_event (memory_id);
