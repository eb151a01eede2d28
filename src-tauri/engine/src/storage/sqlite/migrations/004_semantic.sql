-- Why: recall by meaning and paraphrase duplication (docs/recall.md, docs/scores.md). One quantised sentence
-- embedding per memory with the fingerprint of the model that made it (vectors of two models
-- are never compared), and Lethe's own stemmed full-text index beside memento's (whose
-- tokenizer has no stemming and which stays as it is).
CREATE TABLE IF NOT EXISTS lethe_vector (
    memory_id TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    vec BLOB NOT NULL
);
-- A vector leaves with its memory, and a changed content invalidates it (re-embedded by the
-- writer in the same transaction, or by the back-fill when another program changed it).
CREATE TRIGGER IF NOT EXISTS lethe_vector_ad AFTER DELETE ON memory_item BEGIN
    DELETE FROM lethe_vector WHERE memory_id = old.id;
END;
CREATE TRIGGER IF NOT EXISTS lethe_vector_au AFTER UPDATE OF content ON memory_item
WHEN old.content IS NOT new.content BEGIN
    DELETE FROM lethe_vector WHERE memory_id = old.id;
END;

-- A procedure is searched for by its name and goal as much as by its text, so those fields
-- are indexed too (memento's index has content, tags, source and reflection notes).
CREATE VIRTUAL TABLE IF NOT EXISTS lethe_fts USING fts5(
    content, tags, task_goal, workflow_name, skill_name, steps,
    content = 'memory_item', content_rowid = 'rowid',
    tokenize = 'porter unicode61'
);
INSERT INTO lethe_fts (lethe_fts) VALUES ('rebuild');
CREATE TRIGGER IF NOT EXISTS lethe_fts_ai AFTER INSERT ON memory_item BEGIN
    INSERT INTO lethe_fts (rowid, content, tags, task_goal, workflow_name, skill_name, steps)
    VALUES (new.rowid, new.content, new.tags, new.task_goal, new.workflow_name, new.skill_name, new.steps);
END;
CREATE TRIGGER IF NOT EXISTS lethe_fts_ad AFTER DELETE ON memory_item BEGIN
    INSERT INTO lethe_fts (lethe_fts, rowid, content, tags, task_goal, workflow_name, skill_name, steps)
    VALUES ('delete', old.rowid, old.content, old.tags, old.task_goal, old.workflow_name, old.skill_name, old.steps);
END;
CREATE TRIGGER IF NOT EXISTS lethe_fts_au AFTER UPDATE OF content, tags, task_goal, workflow_name, skill_name, steps ON memory_item BEGIN
    INSERT INTO lethe_fts (lethe_fts, rowid, content, tags, task_goal, workflow_name, skill_name, steps)
    VALUES ('delete', old.rowid, old.content, old.tags, old.task_goal, old.workflow_name, old.skill_name, old.steps);
    INSERT INTO lethe_fts (rowid, content, tags, task_goal, workflow_name, skill_name, steps)
    VALUES (new.rowid, new.content, new.tags, new.task_goal, new.workflow_name, new.skill_name, new.steps);
END;

-- Duplication's similar pairs, kept per memory (docs/scores.md): the most similar other memories
-- found among its candidates when it was written or changed, so that scoring never pays for
-- a pass over all similar pairs. `model` is the fingerprint whose vectors took part ('' for
-- words only) and `hash` the content hash it was derived for: either changing re-derives it.
-- `keys` are its semantic bucket keys, `list` its neighbours (see neighbours.rs).
CREATE TABLE IF NOT EXISTS lethe_neighbour (
    memory_rowid INTEGER PRIMARY KEY,
    model TEXT NOT NULL,
    hash TEXT NOT NULL,
    keys BLOB NOT NULL,
    list BLOB NOT NULL
);
CREATE TRIGGER IF NOT EXISTS lethe_neighbour_ad AFTER DELETE ON memory_item BEGIN
    DELETE FROM lethe_neighbour WHERE memory_rowid = old.rowid;
END;
-- The centroids that give vectors their semantic bucket keys, trained once per model on a
-- sample of the file's vectors and then kept, so that whether two memories are candidates
-- depends on the two of them only.
CREATE TABLE IF NOT EXISTS lethe_centroid (
    model TEXT PRIMARY KEY,
    data BLOB NOT NULL
);
