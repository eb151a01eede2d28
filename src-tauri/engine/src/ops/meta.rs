//! Meta-memory statistics (docs/recall.md): recall hits accumulate in an in-memory
//! delta map and a flusher writes them every 100 ms in one transaction of additive UPSERTs,
//! so concurrent processes never lose increments and recall never waits on a write.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::storage::db::{params, Connection, OptionalExtension};
use serde::Serialize;

use crate::error::Result;
use crate::store;
use crate::time::{self, Instant};

/// A recall hit whose score is at least this counts as a success in the statistics.
pub const SUCCESS_AT: f64 = 0.5;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Delta {
    pub count: i64,
    pub success: i64,
    pub failure: i64,
    pub confidence_sum: f64,
    pub last_recalled_at: Option<String>,
}

impl MetaStats {
    /// A row of (memory_id, recall_count, success_count, failure_count, avg_confidence,
    /// last_recalled_at); an empty time counts as none.
    fn from_row(r: &crate::storage::db::Row<'_>) -> crate::error::Result<MetaStats> {
        Ok(MetaStats {
            memory_id: r.get(0)?,
            recall_count: r.get(1)?,
            success_count: r.get(2)?,
            failure_count: r.get(3)?,
            avg_confidence: r.get(4)?,
            last_recalled_at: r.get::<_, Option<String>>(5)?.filter(|s| !s.is_empty()),
        })
    }
}

impl Delta {
    /// One recall hit: count 1, confidence = its score, a success when the score is at least
    /// [`SUCCESS_AT`], stamped `at`.
    pub fn of_hit(score: f64, at: &str) -> Delta {
        Delta {
            count: 1,
            success: i64::from(score >= SUCCESS_AT),
            failure: i64::from(score < SUCCESS_AT),
            confidence_sum: score,
            last_recalled_at: Some(at.to_string()),
        }
    }

    /// The deltas of one recall's hits, by memory, stamped `at` (what a one-shot process
    /// writes in one transaction, as the flusher does).
    pub fn of_hits<'a>(hits: impl IntoIterator<Item = (&'a str, f64)>, at: &str) -> HashMap<String, Delta> {
        let mut out: HashMap<String, Delta> = HashMap::new();
        for (id, score) in hits {
            out.entry(id.to_string()).or_default().add(&Delta::of_hit(score, at));
        }
        out
    }

    fn add(&mut self, other: &Delta) {
        self.count += other.count;
        self.success += other.success;
        self.failure += other.failure;
        self.confidence_sum += other.confidence_sum;
        if other.last_recalled_at > self.last_recalled_at {
            self.last_recalled_at.clone_from(&other.last_recalled_at);
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct MetaStats {
    pub memory_id: String,
    pub recall_count: i64,
    pub success_count: i64,
    pub failure_count: i64,
    pub avg_confidence: Option<f64>,
    pub last_recalled_at: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MetaSummary {
    /// Memories recalled at least once.
    pub recalled_memories: i64,
    /// Recall hits.
    pub total_recalls: i64,
    /// The mean confidence of those hits; none before the first.
    pub avg_confidence: Option<f64>,
}

pub fn summary(conn: &Connection) -> Result<MetaSummary> {
    conn.query_row(
        "SELECT COUNT(*), CAST(COALESCE(SUM(recall_count), 0) AS BIGINT), \
         CASE WHEN SUM(recall_count) > 0 THEN CAST(SUM(avg_confidence * recall_count) AS DOUBLE PRECISION) / SUM(recall_count) END \
         FROM meta_memory_stats",
        [],
        |r| Ok(MetaSummary { recalled_memories: r.get(0)?, total_recalls: r.get(1)?, avg_confidence: r.get(2)? }),
    )
}

/// How many memories [`overview`] names in each of its two lists.
pub const OVERVIEW_LIST: usize = 10;

/// The recall statistics of a set of active memories (all of them, or those recall finds for
/// a topic): how many were recalled and how often, how confidently, which are shakiest, which
/// are used most, and how many were never recalled: the answer to "how well do I remember X?".
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MetaOverview {
    /// Active memories the figures are over.
    pub memories: usize,
    /// Of those, how many were recalled at least once.
    pub recalled_memories: usize,
    /// Recall hits over those memories.
    pub total_recalls: i64,
    /// Mean confidence of those hits, weighted by recall count; None with no hits.
    pub avg_confidence: Option<f64>,
    /// Recalled memories with an average confidence below 0.5, lowest first (at most
    /// [`OVERVIEW_LIST`]).
    pub lowest_confidence: Vec<MetaStats>,
    /// The most recalled memories, most first (at most [`OVERVIEW_LIST`]).
    pub most_recalled: Vec<MetaStats>,
    /// Memories never recalled.
    pub never_recalled: usize,
}

/// The figures of [`MetaOverview`] over the active memories `ids` (None: every active
/// memory), from the stored statistics plus `extra` (deltas not yet flushed).
pub fn overview(conn: &Connection, ids: Option<&[String]>, extra: &HashMap<String, Delta>) -> Result<MetaOverview> {
    const SELECT: &str = "SELECT m.id, COALESCE(s.recall_count, 0), COALESCE(s.success_count, 0), \
        COALESCE(s.failure_count, 0), s.avg_confidence, s.last_recalled_at \
        FROM memory_item m LEFT JOIN meta_memory_stats s ON s.memory_id = m.id WHERE COALESCE(m.is_deleted, 0) = 0";
    let row = MetaStats::from_row;
    let stored: Vec<MetaStats> = match ids {
        Some(ids) => {
            let mut stmt = conn.prepare_cached(&format!("{SELECT} AND m.id = ?1"))?;
            let mut seen = std::collections::HashSet::new();
            let mut out = Vec::new();
            for id in ids.iter().filter(|id| seen.insert(id.as_str())) {
                if let Some(m) = stmt.query_row([id], row).optional()? {
                    out.push(m);
                }
            }
            out
        }
        None => {
            let mut stmt = conn.prepare(SELECT)?;
            let rows = stmt.query_map([], row)?;
            rows.collect::<std::result::Result<_, _>>()?
        }
    };
    let stats = stored
        .into_iter()
        .map(|m| match extra.get(&m.memory_id) {
            Some(d) => merge(m, d),
            None => m,
        })
        .collect();
    Ok(overview_of(stats))
}

fn overview_of(stats: Vec<MetaStats>) -> MetaOverview {
    let memories = stats.len();
    let recalled: Vec<MetaStats> = stats.into_iter().filter(|m| m.recall_count > 0).collect();
    let total_recalls: i64 = recalled.iter().map(|m| m.recall_count).sum();
    let confidence_sum: f64 = recalled.iter().map(|m| m.avg_confidence.unwrap_or(0.0) * m.recall_count as f64).sum();
    let mut lowest: Vec<MetaStats> =
        recalled.iter().filter(|m| m.avg_confidence.is_some_and(|c| c < 0.5)).cloned().collect();
    lowest.sort_by(|a, b| {
        a.avg_confidence.unwrap_or(0.0).total_cmp(&b.avg_confidence.unwrap_or(0.0)).then(a.memory_id.cmp(&b.memory_id))
    });
    lowest.truncate(OVERVIEW_LIST);
    let mut most = recalled.clone();
    most.sort_by(|a, b| b.recall_count.cmp(&a.recall_count).then(a.memory_id.cmp(&b.memory_id)));
    most.truncate(OVERVIEW_LIST);
    MetaOverview {
        memories,
        recalled_memories: recalled.len(),
        total_recalls,
        avg_confidence: (total_recalls > 0).then(|| confidence_sum / total_recalls as f64),
        lowest_confidence: lowest,
        most_recalled: most,
        never_recalled: memories - recalled.len(),
    }
}

/// Writes deltas in one transaction; each UPSERT adds to what is stored, so two processes
/// flushing the same memory both count.
pub fn write_deltas(conn: &mut Connection, deltas: &HashMap<String, Delta>) -> Result<()> {
    write_batch(conn, deltas, &[])
}

/// Writes deltas and recall-log entries in one transaction (what the flusher does each tick,
/// and what a one-shot CLI recall does once).
pub fn write_batch(
    conn: &mut Connection,
    deltas: &HashMap<String, Delta>,
    log: &[crate::recall_log::NewEntry],
) -> Result<()> {
    if deltas.is_empty() && log.is_empty() {
        return Ok(());
    }
    store::write_tx(conn, |tx| {
        crate::recall_log::append_tx(tx, log)?;
        // Additive upserts: two processes (or two machines on a team server) adding to the same
        // row both count; the later of two timestamps stays. On a team store the server's
        // function runs the same upsert after checking that the statistics only move forward,
        // for a memory of the caller's team (Lethe's roles hold no write right on the table there).
        let sql = if tx.is_postgres() {
            "SELECT lethe_stats_add(?1, ?2, ?3, ?4, ?5, ?6)"
        } else {
            "INSERT INTO meta_memory_stats (memory_id, recall_count, success_count, failure_count, avg_confidence, last_recalled_at) \
             VALUES (?1, CAST(?2 AS BIGINT), ?3, ?4, CAST(?5 AS DOUBLE PRECISION) / CAST(?2 AS BIGINT), ?6) \
             ON CONFLICT(memory_id) DO UPDATE SET \
               avg_confidence = (COALESCE(meta_memory_stats.avg_confidence, 0) * meta_memory_stats.recall_count \
                 + CAST(?5 AS DOUBLE PRECISION)) / (meta_memory_stats.recall_count + CAST(?2 AS BIGINT)), \
               recall_count = meta_memory_stats.recall_count + CAST(?2 AS BIGINT), \
               success_count = meta_memory_stats.success_count + ?3, \
               failure_count = meta_memory_stats.failure_count + ?4, \
               last_recalled_at = MAX(COALESCE(meta_memory_stats.last_recalled_at, ''), COALESCE(CAST(?6 AS TEXT), ''))"
        };
        let mut stmt = tx.prepare_cached(sql)?;
        for (id, d) in deltas {
            stmt.execute(params![id, d.count, d.success, d.failure, d.confidence_sum, d.last_recalled_at])?;
        }
        Ok(())
    })
}

pub fn read_stored(conn: &Connection, memory_id: &str) -> Result<Option<MetaStats>> {
    conn
        .prepare_cached(
            "SELECT memory_id, recall_count, success_count, failure_count, avg_confidence, last_recalled_at FROM meta_memory_stats WHERE memory_id = ?1",
        )?
        .query_row([memory_id], MetaStats::from_row)
        .optional()
}

#[derive(Default)]
struct Shared {
    /// Hits not yet taken by the flusher. `record_hit` only ever takes this lock.
    pending: Mutex<HashMap<String, Delta>>,
    /// Deltas taken by the flusher. Its lock is held from the commit until they are cleared,
    /// and by readers around their read of the table, so a read never counts a delta twice
    /// or misses one.
    in_flight: Mutex<HashMap<String, Delta>>,
    /// Recalls to log, not yet taken by the flusher (bounded: see [`MAX_PENDING_LOG`]).
    pending_log: Mutex<Vec<crate::recall_log::NewEntry>>,
    /// Log entries taken by the flusher and not yet committed (kept for the next tick on failure).
    in_flight_log: Mutex<Vec<crate::recall_log::NewEntry>>,
    control: Mutex<Control>,
    wake: Condvar,
}

#[derive(Default)]
struct Control {
    stop: bool,
    flushes: u64,
    failures: u64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// At most this many recall-log entries wait in memory; when the file cannot be written for
/// long, the oldest waiting ones are dropped (the log is bounded anyway, statistics are not).
pub const MAX_PENDING_LOG: usize = 10_000;

/// The coalescing buffer with its fixed-interval flusher thread.
pub struct MetaBuffer {
    shared: Arc<Shared>,
    worker: Option<JoinHandle<()>>,
    interval: Duration,
}

impl MetaBuffer {
    /// Starts a flusher with its own connection to `path`.
    pub fn start(path: impl Into<PathBuf>, interval: Duration) -> Result<MetaBuffer> {
        let path = path.into();
        let mut conn = store::open(&path)?;
        let shared: Arc<Shared> = Arc::default();
        let s2 = Arc::clone(&shared);
        let worker = std::thread::Builder::new()
            .name("lethe-meta-flusher".into())
            .spawn(move || flusher(&s2, &mut conn, interval))?;
        Ok(MetaBuffer { shared, worker: Some(worker), interval })
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Records one recall hit ([`Delta::of_hit`]).
    pub fn record_hit(&self, memory_id: &str, score: f64, now: Instant) {
        let d = Delta::of_hit(score, &time::format(now));
        lock(&self.shared.pending).entry(memory_id.to_string()).or_default().add(&d);
    }

    /// Queues one recall for the recall log; the flusher writes it with the next tick's
    /// statistics. Never blocks on the file.
    pub fn record_recall(&self, entry: crate::recall_log::NewEntry) {
        let mut log = lock(&self.shared.pending_log);
        if log.len() >= MAX_PENDING_LOG {
            log.remove(0);
        }
        log.push(entry);
    }

    /// Stored statistics plus what is still buffered.
    pub fn read(&self, conn: &Connection, memory_id: &str) -> Result<MetaStats> {
        let in_flight = lock(&self.shared.in_flight);
        let stored = read_stored(conn, memory_id)?
            .unwrap_or(MetaStats { memory_id: memory_id.to_string(), ..Default::default() });
        let mut extra = in_flight.get(memory_id).cloned().unwrap_or_default();
        if let Some(d) = lock(&self.shared.pending).get(memory_id) {
            extra.add(d);
        }
        Ok(merge(stored, &extra))
    }

    /// [`overview`] with what is still buffered counted, read under the flusher's lock so
    /// that no delta is counted twice or missed.
    pub fn overview(&self, conn: &Connection, ids: Option<&[String]>) -> Result<MetaOverview> {
        let in_flight = lock(&self.shared.in_flight);
        let mut extra = in_flight.clone();
        for (k, d) in lock(&self.shared.pending).iter() {
            extra.entry(k.clone()).or_default().add(d);
        }
        overview(conn, ids, &extra)
    }

    /// (flush transactions committed, failed attempts) so far.
    pub fn counters(&self) -> (u64, u64) {
        let c = lock(&self.shared.control);
        (c.flushes, c.failures)
    }

    /// Flushes everything and stops the flusher.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        lock(&self.shared.control).stop = true;
        self.shared.wake.notify_all();
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

impl Drop for MetaBuffer {
    fn drop(&mut self) {
        self.stop();
    }
}

pub fn merge(mut stored: MetaStats, extra: &Delta) -> MetaStats {
    if extra.count == 0 {
        return stored;
    }
    let prev_sum = stored.avg_confidence.unwrap_or(0.0) * stored.recall_count as f64;
    stored.recall_count += extra.count;
    stored.success_count += extra.success;
    stored.failure_count += extra.failure;
    stored.avg_confidence = Some((prev_sum + extra.confidence_sum) / stored.recall_count as f64);
    if extra.last_recalled_at > stored.last_recalled_at {
        stored.last_recalled_at.clone_from(&extra.last_recalled_at);
    }
    stored
}

fn flusher(shared: &Shared, conn: &mut Connection, interval: Duration) {
    loop {
        // Fixed interval, not a debounce: a steady stream still flushes every tick.
        let stop = {
            let c = lock(&shared.control);
            let (c, _) = shared.wake.wait_timeout_while(c, interval, |c| !c.stop).unwrap_or_else(|e| e.into_inner());
            c.stop
        };
        let mut in_flight = lock(&shared.in_flight);
        for (k, d) in std::mem::take(&mut *lock(&shared.pending)) {
            in_flight.entry(k).or_default().add(&d);
        }
        let mut log = lock(&shared.in_flight_log);
        log.append(&mut lock(&shared.pending_log));
        let result = write_batch(conn, &in_flight, &log);
        let mut c = lock(&shared.control);
        match result {
            Ok(()) => {
                if !in_flight.is_empty() || !log.is_empty() {
                    c.flushes += 1;
                }
                in_flight.clear();
                log.clear();
            }
            // Keep the deltas and entries for the next tick: added back, never lost.
            Err(_) => c.failures += 1,
        }
        let drained = in_flight.is_empty()
            && log.is_empty()
            && lock(&shared.pending).is_empty()
            && lock(&shared.pending_log).is_empty();
        if stop && (drained || c.failures > 100) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(id: &str, count: i64, avg: Option<f64>) -> MetaStats {
        MetaStats { memory_id: id.into(), recall_count: count, avg_confidence: avg, ..Default::default() }
    }

    #[test]
    fn overview_counts_weights_and_ranks() {
        let o = overview_of(vec![
            stats("a", 3, Some(0.8)),
            stats("b", 1, Some(0.2)),
            stats("c", 2, Some(0.4)),
            stats("d", 0, None),
        ]);
        assert_eq!((o.memories, o.recalled_memories, o.total_recalls, o.never_recalled), (4, 3, 6, 1));
        // Weighted by recall count: (3·0.8 + 1·0.2 + 2·0.4) / 6.
        assert!((o.avg_confidence.unwrap() - 3.4 / 6.0).abs() < 1e-12);
        let ids = |v: &[MetaStats]| v.iter().map(|m| m.memory_id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&o.lowest_confidence), ["b", "c"], "below 0.5 only, lowest first");
        assert_eq!(ids(&o.most_recalled), ["a", "c", "b"], "never-recalled memories are not listed");
        assert_eq!(overview_of(Vec::new()).avg_confidence, None);
    }

    #[test]
    fn overview_adds_pending_deltas_and_keeps_to_active_memories() {
        let dir = std::env::temp_dir().join(format!("lethe-meta-overview-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.db");
        let _ = std::fs::remove_file(&path);
        let mut conn = store::open(&path).unwrap();
        let now = time::parse("2026-06-01T00:00:00Z").unwrap();
        let mut ids = Vec::new();
        for text in ["first memory about caching", "second memory about queues"] {
            let m = crate::lifecycle::NewMemory::new(crate::Tier::Semantic, text);
            ids.push(crate::lifecycle::remember(&mut conn, &m, "user", now).unwrap().id().unwrap().to_string());
        }
        let stored: HashMap<String, Delta> =
            [(ids[0].clone(), Delta { count: 2, success: 2, failure: 0, confidence_sum: 1.2, last_recalled_at: None })]
                .into();
        write_deltas(&mut conn, &stored).unwrap();
        let pending: HashMap<String, Delta> =
            [(ids[0].clone(), Delta { count: 1, success: 0, failure: 1, confidence_sum: 0.3, last_recalled_at: None })]
                .into();
        let all = overview(&conn, None, &pending).unwrap();
        assert_eq!((all.memories, all.recalled_memories, all.total_recalls, all.never_recalled), (2, 1, 3, 1));
        assert!((all.avg_confidence.unwrap() - 0.5).abs() < 1e-12, "(1.2 + 0.3) / 3");
        let one = overview(&conn, Some(&[ids[1].clone(), ids[1].clone(), "mem_gone".into()]), &pending).unwrap();
        assert_eq!((one.memories, one.total_recalls), (1, 0), "duplicates and unknown ids count once / not at all");
        crate::lifecycle::soft_delete(&mut conn, &ids[0], None, "user", now).unwrap();
        assert_eq!(overview(&conn, None, &pending).unwrap().memories, 1, "quarantined memories are left out");
    }

    #[test]
    fn logged_recalls_go_out_with_the_statistics_through_the_flusher() {
        let dir = std::env::temp_dir().join(format!("lethe-meta-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log.db");
        let _ = std::fs::remove_file(&path);
        let conn = store::open(&path).unwrap();
        let now = time::parse("2026-06-01T00:00:00Z").unwrap();
        let buffer = MetaBuffer::start(&path, Duration::from_millis(20)).unwrap();
        let q = crate::recall::RecallQuery { text: "alpha".into(), project: Some("p".into()), ..Default::default() };
        buffer.record_hit("mem_a", 0.7, now);
        buffer.record_recall(crate::recall_log::NewEntry::of("agent:x", "2026-06-01T00:00:00.000Z", &q, &[]));
        let listed = |conn: &Connection| crate::recall_log::list(conn, &Default::default()).unwrap();
        let start = std::time::Instant::now();
        while listed(&conn).is_empty() && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let log = listed(&conn);
        assert_eq!(log.len(), 1, "the flusher wrote the entry on its tick, not at shutdown");
        assert_eq!((log[0].actor.as_str(), log[0].context.project.as_deref()), ("agent:x", Some("p")));
        assert_eq!(read_stored(&conn, "mem_a").unwrap().unwrap().recall_count, 1, "with the statistics");
        buffer.record_recall(crate::recall_log::NewEntry::of("agent:y", "2026-06-01T00:00:01.000Z", &q, &[]));
        buffer.shutdown();
        assert_eq!(listed(&conn).len(), 2, "what is still buffered is flushed at shutdown");
    }
}
