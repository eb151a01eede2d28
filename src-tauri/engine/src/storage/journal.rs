//! A reader's place in the change journal (`lethe_change`), for those that follow another
//! process's writes: the window's watcher and scoring snapshot, the process cache of the
//! vector index, and the forgetting batch (what changed since its plan).
//!
//! In an SQLite file one writer at a time hands out sequence numbers in commit order, so "the
//! rows after the highest number seen" are exactly the new ones. On PostgreSQL a number is
//! handed out at insert and becomes visible at commit: a transaction that started earlier can
//! commit a lower number after a higher one was read. So the journal is re-read
//! [`LOOKBACK`] numbers below the highest one seen, and the numbers already seen are skipped.
//! (A transaction that stays open while more than [`LOOKBACK`] others commit their changes is
//! seen only by a full re-read.)

use std::collections::{BTreeSet, HashSet};

use crate::error::Result;
use crate::storage::db::Connection;

/// How far below the highest sequence number seen the journal is read again.
pub const LOOKBACK: i64 = 1000;
/// Changes [`Journal::read`] lists by id; more, and it says "everything may have changed".
pub const MAX_IDS: usize = 500;

/// What a reader has seen of the journal.
#[derive(Debug, Clone, Default)]
pub struct Journal {
    high: i64,
    seen: BTreeSet<i64>,
    /// Rows in the window below `high` when last read (a late commit there adds one).
    window: i64,
}

impl Journal {
    /// The journal as it is now: everything in it counts as seen.
    pub fn at(conn: &Connection) -> Result<Journal> {
        let mut j = Journal::default();
        j.catch_up(conn)?;
        Ok(j)
    }

    /// The highest sequence number seen.
    pub fn high(&self) -> i64 {
        self.high
    }

    fn catch_up(&mut self, conn: &Connection) -> Result<()> {
        self.high = crate::store::last_change_seq(conn)?;
        let mut stmt = conn.prepare_cached("SELECT seq FROM lethe_change WHERE seq > ?1 AND seq <= ?2")?;
        let rows = stmt.query_map(crate::params![self.high - LOOKBACK, self.high], |r| r.get::<_, i64>(0))?;
        self.seen = rows.collect::<Result<_>>()?;
        self.window = self.seen.len() as i64;
        Ok(())
    }

    /// Whether anything was committed since the last read: one indexed query, no rows moved.
    pub fn moved(&self, conn: &Connection) -> Result<bool> {
        let (high, window): (i64, i64) = conn.query_row(
            "SELECT COALESCE(MAX(seq), 0), COUNT(*) FROM lethe_change WHERE seq > ?1",
            [self.high - LOOKBACK],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(high != self.high || window != self.window)
    }

    /// The memories changed since the last read: `Ok(None)` when nothing was committed,
    /// `Ok(Some(None))` when more than [`MAX_IDS`] changes were (re-read everything), else
    /// their ids, sorted and deduplicated.
    #[allow(clippy::option_option)]
    pub fn read(&mut self, conn: &Connection) -> Result<Option<Option<Vec<String>>>> {
        self.read_up_to(conn, MAX_IDS)
    }

    /// [`read`](Self::read) listing up to `max_ids` changes.
    #[allow(clippy::option_option)]
    pub fn read_up_to(&mut self, conn: &Connection, max_ids: usize) -> Result<Option<Option<Vec<String>>>> {
        let mut stmt =
            conn.prepare_cached("SELECT seq, memory_id FROM lethe_change WHERE seq > ?1 ORDER BY seq LIMIT ?2")?;
        let limit = LOOKBACK + max_ids as i64 + 1;
        let rows: Vec<(i64, Option<String>)> = stmt
            .query_map(crate::params![self.high - LOOKBACK, limit], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_>>()?;
        let full = rows.len() as i64 == limit;
        let new: Vec<(i64, Option<String>)> = rows.into_iter().filter(|(seq, _)| !self.seen.contains(seq)).collect();
        if new.is_empty() && !full {
            return Ok(None);
        }
        if full || new.len() > max_ids {
            self.catch_up(conn)?;
            return Ok(Some(None));
        }
        for (seq, _) in &new {
            self.seen.insert(*seq);
            self.high = self.high.max(*seq);
        }
        self.seen = self.seen.split_off(&(self.high - LOOKBACK + 1));
        self.window = self.seen.len() as i64;
        let mut ids: Vec<String> = new.into_iter().filter_map(|(_, id)| id).collect();
        ids.sort();
        ids.dedup();
        Ok(Some(Some(ids)))
    }

    /// Every memory changed since the last read, however many (the forgetting batch must skip
    /// each of them); they count as seen.
    pub fn read_all(&mut self, conn: &Connection) -> Result<HashSet<String>> {
        let mut stmt = conn.prepare_cached("SELECT seq, memory_id FROM lethe_change WHERE seq > ?1 ORDER BY seq")?;
        let mut rows = stmt.query([self.high - LOOKBACK])?;
        let mut ids = HashSet::new();
        while let Some(r) = rows.next()? {
            let seq: i64 = r.get(0)?;
            if self.seen.insert(seq) {
                self.high = self.high.max(seq);
                if let Some(id) = r.get::<_, Option<String>>(1)? {
                    ids.insert(id);
                }
            }
        }
        self.seen = self.seen.split_off(&(self.high - LOOKBACK + 1));
        self.window = self.seen.len() as i64;
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(conn: &Connection, seq: i64, id: &str) {
        conn.execute(
            "INSERT INTO lethe_change (seq, memory_id, kind) VALUES (?1, ?2, 'insert')",
            crate::params![seq, id],
        )
        .unwrap();
    }

    #[test]
    fn a_late_commit_below_the_highest_number_is_still_read_once() {
        let conn = crate::store::open_in_memory().unwrap();
        change(&conn, 10, "mem_a");
        let mut j = Journal::at(&conn).unwrap();
        assert!(!j.moved(&conn).unwrap());
        assert_eq!(j.read(&conn).unwrap(), None);
        change(&conn, 12, "mem_c");
        assert!(j.moved(&conn).unwrap());
        assert_eq!(j.read(&conn).unwrap(), Some(Some(vec!["mem_c".to_string()])));
        // Number 11 was handed out before 12 and commits after it was read.
        change(&conn, 11, "mem_b");
        assert!(j.moved(&conn).unwrap(), "a late commit below the highest number is noticed");
        assert_eq!(j.read(&conn).unwrap(), Some(Some(vec!["mem_b".to_string()])));
        assert_eq!(j.read(&conn).unwrap(), None, "and read once");
        assert!(!j.moved(&conn).unwrap());
        for k in 0..(MAX_IDS as i64 + 1) {
            change(&conn, 100 + k, &format!("mem_{k}"));
        }
        assert_eq!(j.read(&conn).unwrap(), Some(None), "too many to list");
        assert_eq!(j.high(), 100 + MAX_IDS as i64);
        assert_eq!(j.read(&conn).unwrap(), None);
    }

    #[test]
    fn read_all_lists_every_change_a_late_one_included() {
        let conn = crate::store::open_in_memory().unwrap();
        change(&conn, 5, "mem_a");
        let mut j = Journal::at(&conn).unwrap();
        for k in 0..(MAX_IDS as i64 + 10) {
            change(&conn, 1000 + k, &format!("mem_{k}"));
        }
        assert_eq!(j.read_all(&conn).unwrap().len(), MAX_IDS + 10, "no limit");
        change(&conn, 999, "mem_late");
        let ids = j.read_all(&conn).unwrap();
        assert_eq!(ids, HashSet::from(["mem_late".to_string()]), "a late commit below the highest number");
        assert!(j.read_all(&conn).unwrap().is_empty());
        assert!(!j.moved(&conn).unwrap());
    }
}
