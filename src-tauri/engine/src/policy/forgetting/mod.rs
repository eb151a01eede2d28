//! Scoring every memory at once (with duplication from LSH candidates), the policy batch
//! (docs/lifecycle.md), quarantine, listing and statistics built on it.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant as Clock;

use crate::model::lenient;
use crate::storage::db::{params, Connection, OptionalExtension, ValueRef};
use serde::Serialize;

use crate::audit::{self, EventSpec};
use crate::decay::{self, ForgetScore, ScoreInput};
use crate::dedup;
use crate::error::{Error, Result};
use crate::model::{self, Tier};
use crate::neighbours;
use crate::ops::{rows, runs};
use crate::settings::Settings;
use crate::similarity::Passes;
use crate::store::write_tx;
use crate::time::{self, Instant};
use rayon::prelude::*;

/// One memory as the scorer sees it (no content).
#[derive(Debug, Clone)]
pub struct Row {
    pub rowid: i64,
    pub id: String,
    pub tier: Tier,
    pub created_at: Instant,
    pub last_accessed: Option<Instant>,
    pub views: i64,
    pub cites: i64,
    pub edits: i64,
    pub importance: f64,
    pub pinned: bool,
    pub session_id: Option<String>,
    pub project_id: Option<String>,
    pub deleted_at: Option<String>,
    pub is_deleted: bool,
    /// A task log (its recency uses the task-log half-life).
    pub task_log: bool,
}

/// A similar pair of active memories: indices into `rows`, similarity, kind
/// ([`neighbours::SAME_WORDS`] or [`neighbours::SAME_MEANING`]).
pub type Pair = (u32, u32, f64, u8);

/// The neighbours of every row as rows, in one allocation: row `a`'s are
/// `to[offsets[a]..offsets[a + 1]]` (with `sim` and `kind` alike). A pair found from both sides
/// is there twice, which changes nothing: duplication takes a maximum.
#[derive(Debug, Clone, Default)]
struct Links {
    offsets: Vec<u32>,
    to: Vec<u32>,
    sim: Vec<f32>,
    kind: Vec<u8>,
    /// The links that point at each row, built on first use: row `b`'s are
    /// `incoming.1[incoming.0[b]..incoming.0[b + 1]]`, indices into `to`, in increasing order.
    /// A `Links` is never changed in place (a patch builds a new one), so it stays true.
    incoming: std::sync::OnceLock<(Vec<u32>, Vec<u32>)>,
}

impl Links {
    fn of(&self, a: usize) -> std::ops::Range<usize> {
        self.offsets[a] as usize..self.offsets[a + 1] as usize
    }

    /// The links `k` with `to[k] == b`, in increasing order.
    fn pointing_at(&self, b: usize) -> &[u32] {
        let (starts, links) = self.incoming.get_or_init(|| {
            let rows = self.offsets.len().saturating_sub(1);
            let mut starts = vec![0u32; rows + 1];
            for &t in &self.to {
                starts[t as usize + 1] += 1;
            }
            for i in 0..rows {
                starts[i + 1] += starts[i];
            }
            let mut next = starts.clone();
            let mut links = vec![0u32; self.to.len()];
            for (k, &t) in self.to.iter().enumerate() {
                links[next[t as usize] as usize] = k as u32;
                next[t as usize] += 1;
            }
            (starts, links)
        });
        &links[starts[b] as usize..starts[b + 1] as usize]
    }

    /// The row link `k` starts from.
    fn source_of(&self, k: usize) -> usize {
        self.offsets.partition_point(|&o| o as usize <= k) - 1
    }
}

/// What a snapshot load is doing, for a progress bar: reading the rows (`done` of `total`
/// rowids), or searching neighbours for the memories that have none stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum LoadStage {
    Reading,
    Similar,
}

/// How a long load reports where it is and is stopped (the window's dry run and what-if):
/// `progress` is called every few thousand rows; `cancel` set makes the load return
/// [`Error::Cancelled`]; `passes` says from what size its passes split over the cores (the
/// snapshot keeps it for the passes it runs later).
#[derive(Clone, Copy, Default)]
pub struct Job<'a> {
    pub progress: Option<&'a (dyn Fn(LoadStage, usize, usize) + Sync)>,
    pub cancel: Option<&'a AtomicBool>,
    pub passes: Passes,
    /// Whether a long neighbour search keeps each step's lists on the load's connection as it
    /// goes ([`neighbours::search_resumably`]), so that a load cut short resumes where it
    /// stopped: for a process that may write.
    pub resumable: bool,
}

impl Job<'_> {
    fn report(&self, stage: LoadStage, done: usize, total: usize) {
        if let Some(p) = self.progress {
            p(stage, done, total);
        }
    }

    /// Whether the search a scan needs is kept part way as it goes: on a writer's load, when
    /// it is long ([`crate::similarity::Passes::checkpoint_every`]).
    fn keeps_part_way(&self, scanned: &Scanned) -> bool {
        self.resumable && scanned.pending >= 2 * self.passes.checkpoint_every.max(1)
    }

    fn check(&self) -> Result<()> {
        if self.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Err(Error::Cancelled);
        }
        Ok(())
    }
}

/// Rows between two progress reports (and cancel checks) of a load.
const REPORT_EVERY: usize = 4096;

/// All memories of a file with the similar pairs among the active ones. Time- and
/// settings-independent, so it can be cached until the data changes and scored at any `now`.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub rows: Vec<Row>,
    /// Rows whose similarity signature is not stored (written by memento or an old import);
    /// it was computed for this snapshot, and a real policy run stores it.
    pub unsigned: usize,
    /// Memories whose neighbours were searched for this snapshot because none were stored
    /// for their content (a writer's [`neighbours::refresh`] stores them).
    pub searched: usize,
    /// Each row's similar active rows (its neighbour list, resolved to rows).
    links: Links,
    /// Values of the wrong type the load found (at most [`MISTYPED_LIMIT`]), as
    /// [`crate::store::mistyped_rows`] reports them.
    pub mistyped: Vec<crate::store::Mistyped>,
    /// Every memory as the neighbour search sees it; read when a search is needed.
    members: Option<Vec<neighbours::Member>>,
    /// The bucket index of the last search over `members`, patched by the next.
    buckets: Option<neighbours::Buckets>,
    lists: HashMap<usize, neighbours::Entry>,
    trained: Option<Vec<f32>>,
    /// The last [`Snapshot::scores`], for the same settings and instant.
    scored: ScoreCache,
    /// From what size its passes split over the cores (the loading job's).
    passes: Passes,
}

/// The scores of a snapshot's rows at one instant under one set of settings: the pages of a
/// list, the parts of the Overview and a what-if at one instant score every row once
/// (≈ 35 ms each at 100k). Emptied by every change of the snapshot; a clone starts empty.
#[derive(Debug, Default)]
struct ScoreCache(std::sync::Mutex<Option<Scored>>);

/// Scores with the instant and settings they were computed for.
type Scored = (Instant, Settings, std::sync::Arc<[f64]>);

impl Clone for ScoreCache {
    fn clone(&self) -> Self {
        ScoreCache::default()
    }
}

impl ScoreCache {
    fn get(&self, s: &Settings, now: Instant) -> Option<std::sync::Arc<[f64]>> {
        let kept = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.as_ref().filter(|(t, k, _)| *t == now && k == s).map(|(_, _, v)| std::sync::Arc::clone(v))
    }

    fn put(&self, s: &Settings, now: Instant, scores: &[f64]) {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some((now, s.clone(), scores.into()));
    }

    fn clear(&mut self) {
        *self.0.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }
}

macro_rules! row_columns {
    () => {
        "SELECT m.rowid, m.id, m.type, m.created_at, m.last_accessed, m.view_count, m.cite_count, m.edit_count, \
        m.importance, m.pinned, m.session_id, m.project_id, m.is_deleted, m.deleted_at"
    };
}
const ROW_SQL: &str = concat!(row_columns!(), ", m.id IN (SELECT memory_id FROM lethe_task_log) FROM memory_item m");
/// The same for a file without migration 5's task-log table (see `session::has_tables`).
const ROW_SQL_NO_TASK_LOGS: &str = concat!(row_columns!(), ", 0 FROM memory_item m");
/// The rows in rowid order with the `typeof` of the two typed columns they do not read.
const ROW_SCAN_SQL: &str = concat!(
    row_columns!(),
    ", m.id IN (SELECT memory_id FROM lethe_task_log), typeof(m.version), typeof(m.content) FROM memory_item m \
     WHERE m.rowid > ?1 AND m.rowid <= ?2 ORDER BY m.rowid"
);
const ROW_SCAN_SQL_NO_TASK_LOGS: &str = concat!(
    row_columns!(),
    ", 0, typeof(m.version), typeof(m.content) FROM memory_item m WHERE m.rowid > ?1 AND m.rowid <= ?2 ORDER BY m.rowid"
);

fn row_sql(conn: &Connection) -> Result<&'static str> {
    Ok(if crate::session::has_tables(conn)? { ROW_SQL } else { ROW_SQL_NO_TASK_LOGS })
}
/// The stored neighbour lists of the model `?1`, in rowid order (merged with the rows).
const LIST_SCAN_SQL: &str = "SELECT memory_rowid, list FROM lethe_neighbour WHERE model = ?1 ORDER BY memory_rowid";

/// How many values of the wrong type a load reports.
pub const MISTYPED_LIMIT: usize = 100;

/// Columns of [`ROW_SCAN_SQL`].
const SCAN_COLUMNS: usize = 17;

/// The values of the wrong type in a row of [`ROW_SCAN_SQL`], in the order of
/// [`crate::store::TYPED_COLUMNS`]; the same findings as [`crate::store::mistyped_rows`]
/// without a scan of its own.
fn mistyped_in(v: &[ValueRef<'_>; SCAN_COLUMNS], out: &mut Vec<crate::store::Mistyped>) {
    // An id that is not text (memento's `id TEXT PRIMARY KEY` takes NULL): the row cannot be
    // named, so it is reported with an empty id and left out.
    if !matches!(v[1], ValueRef::Text(_)) && out.len() < MISTYPED_LIMIT {
        out.push(crate::store::Mistyped {
            id: lenient::text_of(v[1]).unwrap_or_default(),
            column: "id".into(),
            found: v[1].type_name().to_string(),
        });
    }
    for ((col, ok), at) in crate::store::TYPED_COLUMNS.iter().zip(COLUMN_AT) {
        let found = match v[at] {
            // `typeof(…)` of the two columns the scan does not read.
            ValueRef::Text(t) if at >= 15 => std::str::from_utf8(t).unwrap_or("null"),
            v => v.type_name(),
        };
        if found != "null" && !ok.contains(&found) && out.len() < MISTYPED_LIMIT {
            let id = lenient::text_of(v[1]).unwrap_or_default();
            out.push(crate::store::Mistyped { id, column: col.to_string(), found: found.to_string() });
        }
    }
}

/// Where [`ROW_SCAN_SQL`] puts each of [`crate::store::TYPED_COLUMNS`] (their `typeof` for
/// version and content, which the scan does not read).
const COLUMN_AT: [usize; 11] = [5, 6, 7, 15, 8, 9, 12, 16, 3, 4, 13];

/// A scorer row (None if unreadable).
type RawRow = Option<Row>;

/// A row of [`ROW_SQL`] or [`ROW_SCAN_SQL`].
fn read_row(r: &crate::storage::db::Row<'_>) -> Result<RawRow> {
    let mut v = [ValueRef::Null; SCAN_COLUMNS];
    for (i, x) in v.iter_mut().enumerate().take(ROW_COLUMNS) {
        *x = r.get_ref(i)?;
    }
    row_of(&v)
}

/// Columns of [`ROW_SQL`], the first of [`ROW_SCAN_SQL`].
const ROW_COLUMNS: usize = 15;

/// [`read_row`] from the row's values, each column read once.
fn row_of(v: &[ValueRef<'_>; SCAN_COLUMNS]) -> Result<RawRow> {
    let tier = lenient::text_ref_of(v[2]).unwrap_or_default();
    let created = lenient::text_ref_of(v[3]);
    let last = lenient::text_ref_of(v[4]);
    let (Ok(tier), Some(created_at)) = (tier.parse::<Tier>(), time::parse_opt(created.as_deref())) else {
        // A row another program wrote with an unknown tier or date is left out of scoring
        // rather than failing the whole file.
        return Ok(None);
    };
    // Likewise a row without a text id (nothing could name it) or whose content is not text
    // (`typeof(content)`, read by the scan only): reported as mistyped, not scored.
    if matches!(v[16], ValueRef::Text(t) if t != b"text" && t != b"null") {
        return Ok(None);
    }
    let ValueRef::Text(id) = v[1] else { return Ok(None) };
    let ValueRef::Integer(rowid) = v[0] else {
        return Err(Error::column(format!("a memory's rowid is {}", v[0].type_name())));
    };
    Ok(Some(Row {
        rowid,
        id: std::str::from_utf8(id).map_err(|e| Error::column(format!("a memory id is not UTF-8: {e}")))?.to_string(),
        tier,
        created_at,
        last_accessed: time::parse_opt(last.as_deref()),
        views: lenient::int_of(v[5]).unwrap_or(0),
        cites: lenient::int_of(v[6]).unwrap_or(0),
        edits: lenient::int_of(v[7]).unwrap_or(0),
        importance: lenient::real_of(v[8]).unwrap_or(0.5).clamp(0.0, 1.0),
        pinned: lenient::flag_of(v[9]),
        session_id: lenient::text_of(v[10]),
        project_id: lenient::text_of(v[11]),
        is_deleted: lenient::flag_of(v[12]),
        deleted_at: lenient::text_of(v[13]),
        task_log: lenient::flag_of(v[14]),
    }))
}

/// One scan of the memories with their stored neighbour lists of one model.
struct Scanned {
    rows: Vec<Row>,
    /// The lists as stored, back to back: row i's are `raw[spans[i].0..spans[i].1]`.
    raw: Vec<neighbours::Neighbour>,
    spans: Vec<(u32, u32)>,
    /// Active memories without a list (new, changed, or listed with another model).
    pending: usize,
    mistyped: Vec<crate::store::Mistyped>,
}

/// The share of the rows (by rowid, in percent) the second connection reads after the lists.
const ROWS_BESIDE_PERCENT: i64 = 35;

/// The stored neighbour lists of one model, in rowid order, back to back.
#[derive(Default)]
struct StoredLists {
    rowids: Vec<i64>,
    ends: Vec<u32>,
    raw: Vec<neighbours::Neighbour>,
}

impl StoredLists {
    fn read(conn: &Connection, model: &str, job: &Job<'_>) -> Result<StoredLists> {
        let mut stmt = conn.prepare_cached(LIST_SCAN_SQL)?;
        let mut q = stmt.query([model])?;
        let mut out = StoredLists::default();
        let mut seen = 0usize;
        while let Some(r) = q.next()? {
            seen += 1;
            if seen.is_multiple_of(REPORT_EVERY) {
                job.check()?;
            }
            // A value that is not a list counts as none: that memory is searched again.
            if let crate::storage::db::ValueRef::Blob(b) = r.get_ref(1)? {
                neighbours::decode_into(b, &mut out.raw);
                out.rowids.push(r.get(0)?);
                out.ends.push(out.raw.len() as u32);
            }
        }
        Ok(out)
    }
}

impl Scanned {
    /// A list is current while it exists: a change of content drops it (trigger
    /// `lethe_derived_au`). In a large file the lists are read on a second connection, on
    /// the other core, while this one reads the rows. (The two reads can see the file a
    /// commit apart; lists are checked against the rows they name, and one the rows do not
    /// match is left out or searched again, as for any change.)
    fn read(conn: &Connection, model: &str, job: &Job<'_>) -> Result<Scanned> {
        // The largest rowid stands for the number of rows (purged rows leave gaps): the
        // progress is the rowid reached.
        let total: i64 = conn.query_row("SELECT COALESCE(MAX(rowid), 0) FROM memory_item", [], |r| r.get(0))?;
        let beside = if total.max(0) as usize >= job.passes.second_reader_from {
            crate::store::second_reader(conn)
        } else {
            None
        };
        let lists_job = Job { progress: None, ..*job };
        // The second connection reads the lists and then the last rows (from `split`): the
        // lists take about a third of the rows' time, so the two cores finish together.
        let split = total - total * ROWS_BESIDE_PERCENT / 100;
        let (rows, mistyped, lists) = std::thread::scope(|scope| -> Result<_> {
            let beside = beside.map(|c| {
                scope.spawn(move || -> Result<_> {
                    let lists = StoredLists::read(&c, model, &lists_job)?;
                    let (rows, mistyped) = Self::read_rows(&c, (split, i64::MAX), total, &lists_job)?;
                    Ok((lists, rows, mistyped))
                })
            });
            let (mut rows, mut mistyped) =
                Self::read_rows(conn, (i64::MIN, if beside.is_some() { split } else { i64::MAX }), total, job)?;
            let lists = match beside {
                Some(h) => {
                    let (lists, last, last_mistyped) =
                        h.join().unwrap_or_else(|_| Err(Error::column("the second reader stopped")))?;
                    rows.extend(last);
                    // What one scan would report: rows are looked at until the limit is reached.
                    for one_row in last_mistyped.chunk_by(|a, b| a.id == b.id) {
                        if mistyped.len() >= MISTYPED_LIMIT {
                            break;
                        }
                        mistyped.extend_from_slice(one_row);
                    }
                    lists
                }
                None => StoredLists::read(conn, model, job)?,
            };
            Ok((rows, mistyped, lists))
        })?;
        // Both are in rowid order: one walk gives each row its list.
        let StoredLists { rowids, ends, raw } = lists;
        let mut spans = Vec::with_capacity(rows.len());
        let (mut at, mut pending) = (0usize, 0usize);
        for row in &rows {
            while at < rowids.len() && rowids[at] < row.rowid {
                at += 1;
            }
            if at < rowids.len() && rowids[at] == row.rowid {
                spans.push((if at == 0 { 0 } else { ends[at - 1] }, ends[at]));
            } else {
                pending += usize::from(!row.is_deleted);
                spans.push((0, 0));
            }
        }
        Ok(Scanned { rows, raw, spans, pending, mistyped })
    }

    /// The rows with `range.0 < rowid <= range.1`, in rowid order.
    fn read_rows(
        conn: &Connection,
        range: (i64, i64),
        total: i64,
        job: &Job<'_>,
    ) -> Result<(Vec<Row>, Vec<crate::store::Mistyped>)> {
        job.report(LoadStage::Reading, 0, total as usize);
        let sql = if crate::session::has_tables(conn)? { ROW_SCAN_SQL } else { ROW_SCAN_SQL_NO_TASK_LOGS };
        let mut stmt = conn.prepare_cached(sql)?;
        let expected = range.1.min(total).saturating_sub(range.0.max(0)).clamp(0, 1 << 24) as usize;
        let (mut rows, mut mistyped) = (Vec::with_capacity(expected), Vec::new());
        let mut iter = stmt.query(crate::storage::db::params![range.0, range.1])?;
        let mut seen = 0usize;
        while let Some(r) = iter.next()? {
            seen += 1;
            if seen.is_multiple_of(REPORT_EVERY) {
                job.check()?;
                job.report(LoadStage::Reading, r.get::<_, i64>(0)?.clamp(0, total) as usize, total as usize);
            }
            let mut v = [ValueRef::Null; SCAN_COLUMNS];
            for (i, x) in v.iter_mut().enumerate() {
                *x = r.get_ref(i)?;
            }
            if mistyped.len() < MISTYPED_LIMIT {
                mistyped_in(&v, &mut mistyped);
            }
            if let Some(row) = row_of(&v)? {
                rows.push(row);
            }
        }
        job.report(LoadStage::Reading, total as usize, total as usize);
        Ok((rows, mistyped))
    }
}

impl Snapshot {
    pub fn load(conn: &Connection) -> Result<Snapshot> {
        Self::load_with(conn, &Job::default())
    }

    /// [`Snapshot::load`] that reports its progress and can be cancelled.
    pub fn load_with(conn: &Connection, job: &Job<'_>) -> Result<Snapshot> {
        let mut kept = false;
        loop {
            // One read transaction: a consistent view of the file.
            let snap = crate::store::read_tx(conn, || {
                let mut snap = match Self::scan(conn, job)? {
                    Ok(snap) => snap,
                    Err(scanned) if !kept && job.keeps_part_way(&scanned) => return Ok(None),
                    Err(scanned) => Self::search(conn, job, scanned)?,
                };
                snap.drop_dismissed(conn)?;
                Ok(Some(snap))
            })?;
            match snap {
                Some(snap) => return Ok(snap),
                None => kept = Self::search_resumably(conn, job)?,
            }
        }
    }

    /// A long neighbour search run step by step before the load's own transaction, each step's
    /// lists kept as it goes ([`neighbours::search_resumably`]); the load then takes them up.
    /// Always `true`: whatever it could not keep, the load searches.
    fn search_resumably(conn: &Connection, job: &Job<'_>) -> Result<bool> {
        let report = |done: usize, total: usize| job.report(LoadStage::Similar, done, total);
        neighbours::search_resumably(conn, job.progress.map(|_| &report as _), job.cancel, job.passes)?;
        Ok(true)
    }

    /// [`Snapshot::load`] by a process that may write, leaving the file so that the next load
    /// reads what this one had to compute. Memories to be searched for neighbours that have
    /// no vector of the loaded model (written by another program, by a build without the
    /// model, or under another model) are embedded first: a list searched without the
    /// vector is not stored, so every read would search it again. Then the lists it searched
    /// are stored.
    pub fn load_and_keep(conn: &mut Connection) -> Result<Snapshot> {
        Self::load_and_keep_with(conn, &Job { resumable: true, ..Job::default() })
    }

    /// [`Snapshot::load_and_keep`] that reports its progress and can be cancelled: what an
    /// import or a push runs after writing, so that the first read after it finds every
    /// signature and neighbour list stored instead of searching them.
    pub fn load_and_keep_with(conn: &mut Connection, job: &Job<'_>) -> Result<Snapshot> {
        let job = *job;
        let mut kept = false;
        let first = loop {
            let first = crate::store::read_tx(conn, || {
                let mut snap = match Self::scan(conn, &job)? {
                    Ok(snap) => snap,
                    Err(scanned) => {
                        if let Some(e) = crate::embed::shared() {
                            if crate::semantic::pending(conn, e)? > 0 {
                                return Ok(Err(true));
                            }
                        }
                        if !kept && job.keeps_part_way(&scanned) {
                            return Ok(Err(false));
                        }
                        Self::search(conn, &job, scanned)?
                    }
                };
                snap.drop_dismissed(conn)?;
                Ok(Ok(snap))
            })?;
            match first {
                Err(false) => kept = Self::search_resumably(conn, &job)?,
                Ok(snap) => break Some(snap),
                Err(true) => break None,
            }
        };
        let snap = match first {
            Some(snap) => snap,
            None => {
                if let Some(e) = crate::embed::shared() {
                    crate::semantic::backfill(conn, e, |_, _| {}, &AtomicBool::new(false))?;
                }
                Self::load_with(conn, &job)?
            }
        };
        snap.persist(conn)?;
        Ok(snap)
    }

    /// [`Snapshot::load_and_keep`] for a process that may write, [`Snapshot::load`] (which
    /// stores nothing) for one that must not: a read-only open, a team store's reader role.
    pub fn load_for(conn: &mut Connection, may_write: bool) -> Result<Snapshot> {
        if may_write {
            Self::load_and_keep(conn)
        } else {
            Self::load(conn)
        }
    }

    /// The rows and their stored lists; the snapshot when every active memory has its list,
    /// else the scan for [`Snapshot::search`].
    fn scan(conn: &Connection, job: &Job<'_>) -> Result<std::result::Result<Snapshot, Scanned>> {
        // Verifying the model's files (reading and hashing 30 MB) runs beside the scan, which
        // assumes the pinned model; if the files turn out to be missing or another model, the
        // scan is done again for the model there is.
        let expected = neighbours::made_with(&crate::embed::pinned_fingerprint());
        let verifying = std::thread::spawn(neighbours::fingerprint);
        let mut sc = Scanned::read(conn, &expected, job)?;
        let fp = verifying.join().unwrap_or_else(|_| neighbours::fingerprint());
        if fp != expected {
            sc = Scanned::read(conn, fp, job)?;
        }
        if sc.pending > 0 {
            return Ok(Err(sc));
        }
        let Scanned { rows, raw, spans, mistyped, .. } = sc;
        // Every active memory has its neighbours: the links come straight from the lists,
        // and the members (band keys, for a search) are read only if a change needs them.
        let lists = spans.iter().map(|&(s, e)| &raw[s as usize..e as usize]);
        let links = links_of(&rows, lists, &job.passes);
        Ok(Ok(Snapshot { rows, links, mistyped, passes: job.passes, ..Default::default() }))
    }

    /// The snapshot of a scan where some active memories have no list: theirs are searched.
    fn search(conn: &Connection, job: &Job<'_>, sc: Scanned) -> Result<Snapshot> {
        let Scanned { rows, mistyped, .. } = sc;
        job.check()?;
        let members = neighbours::members(conn)?;
        let unsigned = members.iter().filter(|m| !m.signed).count();
        let pending = members.iter().filter(|m| m.active && m.derived.is_none()).count();
        job.report(LoadStage::Similar, 0, pending);
        job.check()?;
        let report = |done: usize, total: usize| job.report(LoadStage::Similar, done, total);
        let mut buckets = None;
        let derived =
            neighbours::derive_kept(conn, &members, &mut buckets, &[], job.progress.map(|_| &report as _), job.passes)?;
        job.report(LoadStage::Similar, pending, pending);
        let mut snap = Snapshot {
            rows,
            unsigned,
            searched: 0,
            links: Links::default(),
            mistyped,
            members: Some(members),
            buckets,
            lists: derived.lists,
            trained: derived.trained,
            scored: ScoreCache::default(),
            passes: job.passes,
        };
        snap.rebuild_pairs();
        Ok(snap)
    }

    /// The pairs among active rows from every member's neighbours (stored, or searched for
    /// this snapshot).
    fn rebuild_pairs(&mut self) {
        self.scored.clear();
        let Some(members) = &self.members else { return };
        self.searched = self.lists.keys().filter(|&&i| members[i].derived.is_none()).count();
        let empty: &[neighbours::Neighbour] = &[];
        // Members and rows are both in rowid order (rows are a subset): one walk pairs them.
        let mut at = 0usize;
        let lists = self.rows.iter().map(|r| {
            while at < members.len() && members[at].rowid < r.rowid {
                at += 1;
            }
            if at == members.len() || members[at].rowid != r.rowid {
                at = members.partition_point(|m| m.rowid < r.rowid);
                if at == members.len() || members[at].rowid != r.rowid {
                    return empty;
                }
            }
            let i = at;
            match self.lists.get(&i) {
                Some((_, l)) => l.as_slice(),
                None => members[i].derived.as_ref().map_or(empty, |(_, l)| l.as_slice()),
            }
        });
        self.links = links_of(&self.rows, lists, &self.passes);
    }

    /// The similar pairs among active rows, each once with its larger similarity, sorted.
    pub fn pairs(&self) -> Vec<Pair> {
        self.pairs_above(f64::NEG_INFINITY)
    }

    /// [`Snapshot::pairs`] with a similarity above `min` (the duplicates review asks for the few
    /// above its threshold without sorting every link).
    pub fn pairs_above(&self, min: f64) -> Vec<Pair> {
        let mut pairs: Vec<Pair> = Vec::new();
        for a in 0..self.rows.len() {
            for k in self.links.of(a) {
                let sim = f64::from(self.links.sim[k]);
                if sim <= min {
                    continue;
                }
                let (a, b) = (a as u32, self.links.to[k]);
                pairs.push((a.min(b), a.max(b), sim, self.links.kind[k]));
            }
        }
        pairs.sort_unstable_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)).then(y.2.total_cmp(&x.2)).then(x.3.cmp(&y.3)));
        pairs.dedup_by(|x, y| x.0 == y.0 && x.1 == y.1);
        pairs
    }

    /// Brings the snapshot up to date for the memories in `ids` (from the change journal):
    /// their rows and neighbour entries are reloaded, neighbours searched for those that need
    /// them, and the pairs rebuilt from the lists. Equals a fresh [`Snapshot::load`] up to the
    /// order of rows (changed rows move to the end).
    pub fn apply_changes(&mut self, conn: &Connection, ids: &[String]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.scored.clear();
        crate::store::read_tx(conn, || {
            self.reload_changed(conn, ids)?;
            self.drop_dismissed(conn)
        })
    }

    /// [`Snapshot::apply_changes`] before the dismissed pairs are dropped.
    fn reload_changed(&mut self, conn: &Connection, ids: &[String]) -> Result<()> {
        self.scored.clear();
        let changed: HashSet<&str> = ids.iter().map(String::as_str).collect();
        self.rows.retain(|r| !changed.contains(r.id.as_str()));
        let mut stmt = conn.prepare_cached(&format!("{} WHERE m.id = ?1", row_sql(conn)?))?;
        let mut done: HashSet<&str> = HashSet::with_capacity(changed.len());
        for id in ids {
            if !done.insert(id.as_str()) {
                continue;
            }
            if let Some(Some(row)) = stmt.query_row([id], read_row).optional()? {
                self.rows.push(row);
            }
        }
        // In rowid order, as a load reads them (a stable sort of two sorted runs is a merge).
        if !self.rows.is_sorted_by_key(|r| r.rowid) {
            self.rows.sort_by_key(|r| r.rowid);
        }
        // A Lethe writer stores the list of what it writes (and hands it to the lists of its
        // candidates): when every active row has a stored list, the links come from the
        // lists alone, as in a fresh load, without reading the members or searching.
        if self.members.is_none() {
            if let Some(links) = stored_links(conn, &self.rows, &self.passes)? {
                self.links = links;
                self.searched = 0;
                return Ok(());
            }
        }
        // The members read before, brought up to date for the changed ones (and for those
        // still without stored neighbours), and the bucket index patched for them; when that
        // cannot equal a fresh read, all are read again.
        let mut members = self.members.take().unwrap_or_default();
        let dirty = if members.is_empty() { None } else { neighbours::update_members(conn, &mut members, ids)? };
        let d = match dirty {
            Some(dirty) => neighbours::derive_kept(conn, &members, &mut self.buckets, &dirty, None, self.passes)?,
            None => {
                members = neighbours::members(conn)?;
                self.buckets = None;
                neighbours::derive_kept(conn, &members, &mut self.buckets, &[], None, self.passes)?
            }
        };
        self.members = Some(members);
        self.lists = d.lists;
        self.trained = d.trained;
        self.rebuild_pairs();
        Ok(())
    }

    /// Drops the links of the pairs a person dismissed ("keep both" in the duplicates review,
    /// [`crate::duplicates::dismiss`]): such a pair is no near-duplicate any more, so it counts
    /// neither in the review nor in either memory's duplication.
    fn drop_dismissed(&mut self, conn: &Connection) -> Result<()> {
        self.scored.clear();
        let pairs = crate::duplicates::dismissed_pairs(conn)?;
        if pairs.is_empty() || self.links.offsets.len() != self.rows.len() + 1 {
            return Ok(());
        }
        let wanted: HashSet<&str> = pairs.iter().flat_map(|(a, b)| [a.as_str(), b.as_str()]).collect();
        let index: HashMap<&str, u32> = self
            .rows
            .iter()
            .enumerate()
            .filter(|(_, r)| wanted.contains(r.id.as_str()))
            .map(|(i, r)| (r.id.as_str(), i as u32))
            .collect();
        let dropped: HashSet<(u32, u32)> = pairs
            .iter()
            .filter_map(|(a, b)| {
                let (x, y) = (*index.get(a.as_str())?, *index.get(b.as_str())?);
                Some((x.min(y), x.max(y)))
            })
            .collect();
        if dropped.is_empty() {
            return Ok(());
        }
        let old = std::mem::take(&mut self.links);
        let mut links = Links { offsets: Vec::with_capacity(old.offsets.len()), ..Default::default() };
        links.offsets.push(0);
        for a in 0..self.rows.len() {
            for k in old.of(a) {
                let b = old.to[k];
                if dropped.contains(&((a as u32).min(b), (a as u32).max(b))) {
                    continue;
                }
                links.to.push(b);
                links.sim.push(old.sim[k]);
                links.kind.push(old.kind[k]);
            }
            links.offsets.push(links.to.len() as u32);
        }
        self.links = links;
        Ok(())
    }

    /// Stores what this load computed and the file lacks (signatures, the neighbours it
    /// searched, trained centroids), so the next load reads them. Returns the lists written.
    pub fn persist(&self, conn: &mut Connection) -> Result<usize> {
        if self.unsigned > 0 {
            ensure_signatures(conn)?;
        }
        if self.searched == 0 && self.trained.is_none() {
            return Ok(0);
        }
        let Some(members) = &self.members else { return Ok(0) };
        let fresh: HashMap<usize, neighbours::Entry> = self.lists.clone();
        let d = neighbours::Derived { lists: fresh, trained: self.trained.clone() };
        neighbours::store(conn, members, &d)?;
        Ok(d.lists.len())
    }

    /// Duplication, its source and kind per row at `now` (docs/scores.md dominance rule).
    pub fn duplication(&self, s: &Settings, now: Instant) -> Vec<(f64, Option<u32>, u8)> {
        // Dominance is a total order at `now` (its last key is the rowid), so each pair is
        // decided by comparing its two rows; what decides it is computed once per row into a
        // small array, so that a link reads one entry of it rather than two whole rows.
        // (Sorting every row by dominance first cost more than the pairs: at 1M memories the
        // sort was a sixth of `lethe stats`.)
        let keys: Vec<Dominance> = self.rows.iter().map(|r| Dominance::of(r, s, now)).collect();
        let n = self.rows.len();
        // The best dominating neighbour of each row among the links of rows `from`.
        let pass = |from: std::ops::Range<usize>| -> Vec<Slot> {
            let mut d = vec![Slot::EMPTY; n];
            for a in from {
                for k in self.links.of(a) {
                    let b = self.links.to[k] as usize;
                    let (winner, loser) = if keys[a].dominates(&keys[b]) { (a, b) } else { (b, a) };
                    let offer = Slot {
                        sim: f64::from(self.links.sim[k]),
                        of: winner as u32,
                        of_rowid: keys[winner].rowid,
                        kind: self.links.kind[k],
                    };
                    d[loser].take_if_better(offer);
                }
            }
            d
        };
        // Over many links, parts of the rows on every core (each part an array of every row,
        // so at most one part per thread); taking each part's offers after those of the parts
        // before it gives what one pass in row order gives.
        let parts: Vec<Vec<Slot>> = self.passes.link_parts(n, self.links.to.len()).into_par_iter().map(pass).collect();
        let mut parts = parts.into_iter();
        let mut d = parts.next().unwrap_or_default();
        for part in parts {
            for (slot, offer) in d.iter_mut().zip(part) {
                slot.take_if_better(offer);
            }
        }
        d.into_iter().map(|x| (x.sim, (x.of != Slot::NONE).then_some(x.of), x.kind)).collect()
    }

    /// [`Snapshot::duplication`] of one row, from its own links and the links to it (one pass
    /// over the links, no ordering of every row).
    fn duplication_of(&self, i: usize, s: &Settings, now: Instant) -> (f64, Option<u32>, u8) {
        let ui = row_usage(&self.rows[i], s, now);
        let mut slot: (f64, Option<u32>, u8) = (0.0, None, 0);
        let mut consider = |w: usize, sim: f32, kind: u8| {
            let (rw, ri) = (&self.rows[w], &self.rows[i]);
            if !dominates_given(rw, row_usage(rw, s, now), ri, ui) {
                return;
            }
            let sim = f64::from(sim);
            let earlier = |v: u32| rw.rowid < self.rows[v as usize].rowid;
            if sim > slot.0 || (sim == slot.0 && slot.1.is_some_and(earlier)) {
                slot = (sim, Some(w as u32), kind);
            }
        };
        for k in self.links.of(i) {
            consider(self.links.to[k] as usize, self.links.sim[k], self.links.kind[k]);
        }
        for &k in self.links.pointing_at(i) {
            let k = k as usize;
            consider(self.links.source_of(k), self.links.sim[k], self.links.kind[k]);
        }
        slot
    }

    /// The ForgetScore of row `i` at `now`, equal to `scores(s, now)[i]`, at the cost of its
    /// own links only (a page of a list sorted by date needs a hundred, not every row's).
    pub fn score_at(&self, i: usize, s: &Settings, now: Instant) -> f64 {
        let (dup, _, _) = self.duplication_of(i, s, now);
        decay::score_value(&input_of(&self.rows[i], dup, None), s, now)
    }

    /// The explained score of every row at `now`, in the order of `rows`.
    pub fn forget_scores(&self, s: &Settings, now: Instant) -> Vec<ForgetScore> {
        self.inputs(s, now).iter().map(|input| decay::forget_score(input, s, now)).collect()
    }

    /// Score inputs for every row at `now`.
    pub fn inputs(&self, s: &Settings, now: Instant) -> Vec<ScoreInput> {
        let d = self.duplication(s, now);
        self.rows
            .iter()
            .zip(d)
            .map(|(r, (dup, of, kind))| {
                let mut input = input_of(r, dup, of.map(|i| self.rows[i as usize].id.clone()));
                input.duplicate_kind = of.map(|_| neighbours::kind_name(kind));
                input
            })
            .collect()
    }

    /// Just the numbers, for listings, what-if and the batch.
    pub fn scores(&self, s: &Settings, now: Instant) -> Vec<f64> {
        if let Some(kept) = self.scored.get(s, now) {
            return kept.to_vec();
        }
        let d = self.duplication(s, now);
        let scores: Vec<f64> = self
            .rows
            .iter()
            .zip(d)
            .map(|(r, (dup, _, _))| decay::score_value(&input_of(r, dup, None), s, now))
            .collect();
        self.scored.put(s, now, &scores);
        scores
    }

    /// The explained score of one row at `now`.
    pub fn score_of(&self, id: &str, s: &Settings, now: Instant) -> Option<ForgetScore> {
        let i = self.rows.iter().position(|r| r.id == id)?;
        let (dup, of, kind) = self.duplication_of(i, s, now);
        let mut input = input_of(&self.rows[i], dup, of.map(|j| self.rows[j as usize].id.clone()));
        input.duplicate_kind = of.map(|_| neighbours::kind_name(kind));
        Some(decay::forget_score(&input, s, now))
    }
}

/// The links of `rows` from the stored neighbour lists of the current model, or `None` when
/// an active row has none (it needs a search).
fn stored_links(conn: &Connection, rows: &[Row], passes: &Passes) -> Result<Option<Links>> {
    let mut stmt = conn.prepare_cached(LIST_SCAN_SQL)?;
    let mut q = stmt.query([neighbours::fingerprint()])?;
    let (mut raw, mut at): (Vec<neighbours::Neighbour>, Vec<(i64, u32, u32)>) = (Vec::new(), Vec::new());
    while let Some(r) = q.next()? {
        if let crate::storage::db::ValueRef::Blob(b) = r.get_ref(1)? {
            let start = raw.len() as u32;
            neighbours::decode_into(b, &mut raw);
            at.push((r.get(0)?, start, raw.len() as u32));
        }
    }
    let mut lists: Vec<&[neighbours::Neighbour]> = Vec::with_capacity(rows.len());
    for r in rows {
        match at.binary_search_by_key(&r.rowid, |a| a.0) {
            Ok(k) => lists.push(&raw[at[k].1 as usize..at[k].2 as usize]),
            Err(_) if r.is_deleted => lists.push(&[]),
            Err(_) => return Ok(None),
        }
    }
    Ok(Some(links_of(rows, lists.into_iter(), passes)))
}

/// Each row's links, from its neighbour list (`lists` in the order of `rows`): a neighbour
/// counts when it is an active row with the id it was found with (a reused rowid is not it).
fn links_of<'a>(rows: &[Row], lists: impl Iterator<Item = &'a [neighbours::Neighbour]>, passes: &Passes) -> Links {
    /// What a neighbour is checked against, one entry per row in rowid order, so that each
    /// neighbour reads one entry.
    #[derive(Clone, Copy)]
    struct Target {
        rowid: i64,
        at: u32,
        id_hash: u32,
        deleted: bool,
    }
    let mut targets: Vec<Target> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| Target {
            rowid: r.rowid,
            at: i as u32,
            id_hash: neighbours::id_hash(&r.id),
            deleted: r.is_deleted,
        })
        .collect();
    // Rows are in rowid order after a load (changed rows move to the end after an update):
    // look at rowid − first, else search the sorted rowids.
    if !targets.is_sorted_by_key(|t| t.rowid) {
        targets.sort_unstable_by_key(|t| t.rowid);
    }
    let first = targets.first().map_or(0, |t| t.rowid);
    let find = |rowid: i64| -> Option<&Target> {
        let guess = usize::try_from(rowid - first).ok().filter(|&g| g < targets.len() && targets[g].rowid == rowid);
        let at = guess.or_else(|| targets.binary_search_by_key(&rowid, |t| t.rowid).ok())?;
        Some(&targets[at])
    };
    let lists: Vec<&[neighbours::Neighbour]> = lists.collect();
    // The links of rows `from`, with each row's count.
    let part = |from: std::ops::Range<usize>| -> Links {
        let mut links = Links { offsets: Vec::with_capacity(from.len()), ..Default::default() };
        for a in from {
            if !rows[a].is_deleted {
                for n in lists[a] {
                    let Some(t) = find(n.rowid) else { continue };
                    if t.deleted || t.id_hash != n.id_hash || a as u32 == t.at {
                        continue;
                    }
                    links.to.push(t.at);
                    links.sim.push(n.sim);
                    links.kind.push(n.kind);
                }
            }
            links.offsets.push(links.to.len() as u32);
        }
        links
    };
    let n = rows.len();
    // Parts of the rows on every core, put together in row order.
    let parts: Vec<Links> =
        passes.link_parts(n, lists.iter().map(|l| l.len()).sum::<usize>()).into_par_iter().map(part).collect();
    let mut links = Links { offsets: Vec::with_capacity(n + 1), ..Default::default() };
    links.offsets.push(0);
    for p in parts {
        let base = links.to.len() as u32;
        links.offsets.extend(p.offsets.iter().map(|o| o + base));
        links.to.extend(p.to);
        links.sim.extend(p.sim);
        links.kind.extend(p.kind);
    }
    links
}

fn input_of(r: &Row, duplication: f64, duplicate_of: Option<String>) -> ScoreInput {
    ScoreInput {
        tier: r.tier,
        created_at: r.created_at,
        last_accessed: r.last_accessed,
        views: r.views,
        cites: r.cites,
        edits: r.edits,
        importance: r.importance,
        pinned: r.pinned,
        duplication,
        duplicate_of,
        duplicate_kind: None,
        task_log: r.task_log,
    }
}

fn row_usage(r: &Row, s: &Settings, now: Instant) -> f64 {
    decay::usage(r.last_accessed.map(|t| time::days_between(t, now)), r.views, r.cites, r.edits, s.access_decay_days)
}

/// What decides dominance between two rows at one instant ([`dominates`]).
struct Dominance {
    pinned: bool,
    importance: f64,
    usage: f64,
    created_at: Instant,
    rowid: i64,
}

impl Dominance {
    fn of(r: &Row, s: &Settings, now: Instant) -> Dominance {
        Dominance {
            pinned: r.pinned,
            importance: r.importance,
            usage: row_usage(r, s, now),
            created_at: r.created_at,
            rowid: r.rowid,
        }
    }

    /// [`dominates_given`] on the two rows these were taken from.
    fn dominates(&self, b: &Dominance) -> bool {
        if self.pinned != b.pinned {
            return self.pinned;
        }
        if self.importance != b.importance {
            return self.importance > b.importance;
        }
        if self.usage != b.usage {
            return self.usage > b.usage;
        }
        if self.created_at != b.created_at {
            return self.created_at < b.created_at;
        }
        self.rowid < b.rowid
    }
}

/// A row's most similar dominating neighbour so far.
#[derive(Clone, Copy)]
struct Slot {
    sim: f64,
    of: u32,
    of_rowid: i64,
    kind: u8,
}

impl Slot {
    const NONE: u32 = u32::MAX;
    const EMPTY: Slot = Slot { sim: 0.0, of: Slot::NONE, of_rowid: 0, kind: 0 };

    /// The most similar dominating memory; of equals, the first written; of the same one,
    /// the first offered.
    fn take_if_better(&mut self, offer: Slot) {
        if offer.of == Slot::NONE {
            return;
        }
        if offer.sim > self.sim || (offer.sim == self.sim && self.of != Slot::NONE && offer.of_rowid < self.of_rowid) {
            *self = offer;
        }
    }
}

/// Whether `a` dominates `b`: pinned, else more important, else more used, else older, else
/// written first. Total, so of two near-copies exactly one carries the duplication.
pub fn dominates(a: &Row, b: &Row, s: &Settings, now: Instant) -> bool {
    dominates_given(a, row_usage(a, s, now), b, row_usage(b, s, now))
}

/// [`dominates`] with the two usages already computed.
fn dominates_given(a: &Row, ua: f64, b: &Row, ub: f64) -> bool {
    if a.pinned != b.pinned {
        return a.pinned;
    }
    if a.importance != b.importance {
        return a.importance > b.importance;
    }
    if ua != ub {
        return ua > ub;
    }
    if a.created_at != b.created_at {
        return a.created_at < b.created_at;
    }
    a.rowid < b.rowid
}

/// The explained score of one memory, with duplication against the other active memories.
pub fn score_one(conn: &Connection, id: &str, s: &Settings, now: Instant) -> Result<ForgetScore> {
    score_from(conn, &Snapshot::load(conn)?, id, s, now)
}

/// [`score_one`] from a snapshot the caller keeps; a memory written after that snapshot was
/// taken is scored from a fresh one.
pub fn score_in(conn: &Connection, snap: &Snapshot, id: &str, s: &Settings, now: Instant) -> Result<ForgetScore> {
    match snap.score_of(id, s, now) {
        Some(f) => Ok(f),
        None => score_one(conn, id, s, now),
    }
}

fn score_from(conn: &Connection, snap: &Snapshot, id: &str, s: &Settings, now: Instant) -> Result<ForgetScore> {
    if let Some(f) = snap.score_of(id, s, now) {
        return Ok(f);
    }
    let found: bool = conn.query_row("SELECT EXISTS (SELECT 1 FROM memory_item WHERE id = ?1)", [id], |r| r.get(0))?;
    Err(if found {
        Error::invalid(format!("memory {id} has an unreadable type or created_at"))
    } else {
        Error::NotFound(format!("memory {id}"))
    })
}

mod batch;
mod projection;

pub use batch::*;
pub use projection::*;
