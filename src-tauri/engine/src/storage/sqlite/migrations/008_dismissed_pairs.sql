-- 008: "Keep both" in the duplicates review. A person who decides that two
-- near-duplicates are both worth keeping dismisses the pair: it no longer shows as a cluster
-- and no longer counts in either memory's duplication D (the scoring snapshot drops the pair's
-- link). Keyed by the ordered id pair (a_id < b_id), so dismissing again writes nothing.
-- Additions only: memento's tables are untouched, and no trigger is added.
CREATE TABLE IF NOT EXISTS lethe_dismissed_pair (
    a_id TEXT NOT NULL,
    b_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (a_id, b_id),
    CHECK (a_id < b_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS lethe_dismissed_pair_b ON lethe_dismissed_pair (b_id);
