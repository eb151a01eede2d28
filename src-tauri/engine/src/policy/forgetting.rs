//! Scoring every memory at once (with duplication from LSH candidates), the policy batch
//! (docs/lifecycle.md), quarantine, listing and statistics built on it.

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
use crate::ops::rows;
use crate::settings::Settings;
use crate::store::write_tx;
use crate::time::{self, Instant};

/// Sort orders of [`list`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename_all = "lowercase"))]
pub enum SortBy {
    #[default]
    Created,
    Importance,
    Score,
}

impl std::str::FromStr for SortBy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "created" => Ok(SortBy::Created),
            "importance" => Ok(SortBy::Importance),
            "score" => Ok(SortBy::Score),
            o => Err(Error::invalid(format!("unknown sort {o:?} (expected score, created or importance)"))),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub tier: Option<Tier>,
    /// Some(true): quarantine only; Some(false) or None: active only.
    pub deleted: Option<bool>,
    pub pinned: Option<bool>,
    pub sort: SortBy,
    pub min_score: Option<f64>,
    pub max_score: Option<f64>,
    pub session: Option<String>,
    pub project: Option<String>,
    /// Some(true): only memories whose text holds a `[REDACTED:` placeholder.
    pub redacted: Option<bool>,
    /// Some(true): only semantic and procedural memories that read like dialogue.
    pub needs_extraction: Option<bool>,
    /// Only memories whose first write (their `remember` in the audit) was by this actor
    /// (`agent:claude-code`, `user`).
    pub written_by: Option<String>,
    pub limit: usize,
    pub offset: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct MemoryRow {
    pub id: String,
    #[serde(rename = "type")]
    pub tier: Tier,
    pub preview: String,
    pub importance: f64,
    pub pinned: bool,
    pub created_at: String,
    pub last_accessed: Option<String>,
    pub is_deleted: bool,
    pub deleted_at: Option<String>,
    pub forget_score: f64,
    pub would_forget: bool,
    pub session_id: Option<String>,
    pub project_id: Option<String>,
    pub workflow_name: Option<String>,
    pub tags: Vec<String>,
    /// The text holds a `[REDACTED:<kind>]` placeholder (the window's "redacted" badge).
    pub redacted: bool,
    /// A semantic or procedural memory that reads like dialogue (the lint flags it).
    pub needs_extraction: bool,
    /// Who wrote it first: the actor of its `remember` in the audit (`agent:<name>` or the
    /// person); `None` when the audit does not say (imported, or written by another program).
    pub written_by: Option<String>,
    /// When it was last used: the later of its last view or cite and its last recall.
    pub last_used: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Page {
    pub total: usize,
    pub items: Vec<MemoryRow>,
}

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
/// [`Error::Cancelled`].
#[derive(Clone, Copy, Default)]
pub struct Job<'a> {
    pub progress: Option<&'a (dyn Fn(LoadStage, usize, usize) + Sync)>,
    pub cancel: Option<&'a AtomicBool>,
}

impl Job<'_> {
    fn report(&self, stage: LoadStage, done: usize, total: usize) {
        if let Some(p) = self.progress {
            p(stage, done, total);
        }
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
    /// Whether an active memory has no list (new, changed, or listed with another model).
    pending: bool,
    mistyped: Vec<crate::store::Mistyped>,
}

/// Rows from which the stored lists are read on a second connection, beside the rows.
const LISTS_BESIDE_FROM: usize = 50_000;

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
        let beside = if crate::split(total.max(0) as usize, LISTS_BESIDE_FROM) {
            crate::store::second_reader(conn)
        } else {
            None
        };
        let lists_job = Job { progress: None, cancel: job.cancel };
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
        let (mut at, mut pending) = (0usize, false);
        for row in &rows {
            while at < rowids.len() && rowids[at] < row.rowid {
                at += 1;
            }
            if at < rowids.len() && rowids[at] == row.rowid {
                spans.push((if at == 0 { 0 } else { ends[at - 1] }, ends[at]));
            } else {
                pending |= !row.is_deleted;
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
        // One read transaction: a consistent view of the file.
        crate::store::read_tx(conn, || {
            let mut snap = match Self::scan(conn, job)? {
                Ok(snap) => snap,
                Err(scanned) => Self::search(conn, job, scanned)?,
            };
            snap.drop_dismissed(conn)?;
            Ok(snap)
        })
    }

    /// [`Snapshot::load`] by a process that may write, leaving the file so that the next load
    /// reads what this one had to compute. Memories to be searched for neighbours that have
    /// no vector of the loaded model (written by another program, by a build without the
    /// model, or under another model) are embedded first: a list searched without the
    /// vector is not stored, so every read would search it again. Then the lists it searched
    /// are stored.
    pub fn load_and_keep(conn: &mut Connection) -> Result<Snapshot> {
        Self::load_and_keep_with(conn, &Job::default())
    }

    /// [`Snapshot::load_and_keep`] that reports its progress and can be cancelled: what an
    /// import or a push runs after writing, so that the first read after it finds every
    /// signature and neighbour list stored instead of searching them.
    pub fn load_and_keep_with(conn: &mut Connection, job: &Job<'_>) -> Result<Snapshot> {
        let job = *job;
        let first = crate::store::read_tx(conn, || {
            let mut snap = match Self::scan(conn, &job)? {
                Ok(snap) => snap,
                Err(scanned) => {
                    if let Some(e) = crate::embed::shared() {
                        if crate::semantic::pending(conn, e)? > 0 {
                            return Ok(None);
                        }
                    }
                    Self::search(conn, &job, scanned)?
                }
            };
            snap.drop_dismissed(conn)?;
            Ok(Some(snap))
        })?;
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
        if sc.pending {
            return Ok(Err(sc));
        }
        let Scanned { rows, raw, spans, mistyped, .. } = sc;
        // Every active memory has its neighbours: the links come straight from the lists,
        // and the members (band keys, for a search) are read only if a change needs them.
        let lists = spans.iter().map(|&(s, e)| &raw[s as usize..e as usize]);
        let links = links_of(&rows, lists);
        Ok(Ok(Snapshot { rows, links, mistyped, ..Default::default() }))
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
        let derived = neighbours::derive_kept(conn, &members, &mut buckets, &[], job.progress.map(|_| &report as _))?;
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
        self.links = links_of(&self.rows, lists);
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
            if let Some(links) = stored_links(conn, &self.rows)? {
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
            Some(dirty) => neighbours::derive_kept(conn, &members, &mut self.buckets, &dirty, None)?,
            None => {
                members = neighbours::members(conn)?;
                self.buckets = None;
                neighbours::derive_kept(conn, &members, &mut self.buckets, &[], None)?
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
        // Over many links, the rows' two halves on the two cores; taking the second half's
        // offers after the first's gives what one pass in row order gives.
        let d = if crate::split(self.links.to.len(), PARALLEL_LINKS) {
            std::thread::scope(|scope| {
                let second = scope.spawn(|| pass(n / 2..n));
                let mut d = pass(0..n / 2);
                for (slot, offer) in d.iter_mut().zip(second.join().expect("duplication thread panicked")) {
                    slot.take_if_better(offer);
                }
                d
            })
        } else {
            pass(0..n)
        };
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
fn stored_links(conn: &Connection, rows: &[Row]) -> Result<Option<Links>> {
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
    Ok(Some(links_of(rows, lists.into_iter())))
}

/// Each row's links, from its neighbour list (`lists` in the order of `rows`): a neighbour
/// counts when it is an active row with the id it was found with (a reused rowid is not it).
fn links_of<'a>(rows: &[Row], lists: impl Iterator<Item = &'a [neighbours::Neighbour]>) -> Links {
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
    let parts = if crate::split(lists.iter().map(|l| l.len()).sum::<usize>(), PARALLEL_LINKS) {
        std::thread::scope(|scope| {
            let second = scope.spawn(|| part(n / 2..n));
            vec![part(0..n / 2), second.join().expect("links thread panicked")]
        })
    } else {
        vec![part(0..n)]
    };
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

/// Links above which [`Snapshot::duplication`] runs on both cores.
const PARALLEL_LINKS: usize = 200_000;

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

/// Pages of memories, filtered and sorted, each item with its score at `now`.
pub fn list(conn: &Connection, snap: &Snapshot, q: &ListQuery, s: &Settings, now: Instant) -> Result<Page> {
    // Every row's score only when the filter or the order needs it; otherwise the page's rows
    // are scored one by one (a scroll of the Memories view at 100k: ~35 ms less per page).
    let all = q.sort == SortBy::Score || q.min_score.is_some() || q.max_score.is_some();
    let scores = if all { snap.scores(s, now) } else { Vec::new() };
    let score = |i: usize| if all { scores[i] } else { snap.score_at(i, s, now) };
    let want_deleted = q.deleted.unwrap_or(false);
    let redacted_rows = match q.redacted {
        Some(true) => Some(crate::scan::redacted_rowids(conn)?),
        _ => None,
    };
    let dialogue_rows = match q.needs_extraction {
        Some(true) => Some(crate::dialogue::flagged_rowids(conn)?),
        _ => None,
    };
    let written_rows: Option<HashSet<String>> = match q.written_by.as_deref() {
        Some(actor) => Some(
            conn.prepare_cached(
                "SELECT memory_id FROM lethe_action WHERE action = 'remember' AND actor = ?1 AND memory_id IS NOT NULL",
            )?
            .query_map([actor], |r| r.get(0))?
            .collect::<std::result::Result<_, _>>()?,
        ),
        None => None,
    };
    let mut idx: Vec<usize> = (0..snap.rows.len())
        .filter(|&i| {
            let r = &snap.rows[i];
            r.is_deleted == want_deleted
                && q.tier.is_none_or(|t| t == r.tier)
                && q.pinned.is_none_or(|p| p == r.pinned)
                && q.session.as_deref().is_none_or(|v| r.session_id.as_deref() == Some(v))
                && q.project.as_deref().is_none_or(|v| r.project_id.as_deref() == Some(v))
                && q.min_score.is_none_or(|m| scores[i] >= m)
                && q.max_score.is_none_or(|m| scores[i] <= m)
                && redacted_rows.as_ref().is_none_or(|set| set.contains(&r.rowid))
                && dialogue_rows.as_ref().is_none_or(|set| set.contains(&r.rowid))
                && written_rows.as_ref().is_none_or(|set| set.contains(&r.id))
        })
        .collect();
    let rows = &snap.rows;
    // Each order is total (ties go by rowid), so the page is the same as after a full sort.
    let order = |&a: &usize, &b: &usize| match q.sort {
        SortBy::Score => scores[b].total_cmp(&scores[a]).then(rows[a].rowid.cmp(&rows[b].rowid)),
        SortBy::Created => rows[b].created_at.cmp(&rows[a].created_at).then(rows[b].rowid.cmp(&rows[a].rowid)),
        SortBy::Importance => rows[b].importance.total_cmp(&rows[a].importance).then(rows[a].rowid.cmp(&rows[b].rowid)),
    };
    let total = idx.len();
    let limit = if q.limit == 0 { 50 } else { q.limit.min(10_000) };
    let page = page_of(&mut idx, q.offset, limit, order);
    let mut stmt = conn.prepare_cached("SELECT content, workflow_name, tags FROM memory_item WHERE rowid = ?1")?;
    // The page's writers and recalls: one indexed read per row of the page, never per memory.
    let mut writer = conn.prepare_cached(
        "SELECT actor FROM lethe_action WHERE memory_id = ?1 AND action = 'remember' ORDER BY id LIMIT 1",
    )?;
    let mut recalled = conn.prepare_cached("SELECT last_recalled_at FROM meta_memory_stats WHERE memory_id = ?1")?;
    let mut items = Vec::new();
    for &i in page {
        let r = &rows[i];
        let score = score(i);
        let (content, workflow_name, tags): (String, Option<String>, Option<String>) =
            stmt.query_row([r.rowid], |x| Ok((x.get(0)?, x.get(1)?, x.get(2)?)))?;
        let written_by: Option<String> = writer.query_row([&r.id], |x| x.get(0)).optional()?;
        let last_recalled: Option<String> = recalled.query_row([&r.id], |x| x.get(0)).optional()?.flatten();
        let last_used =
            r.last_accessed.into_iter().chain(time::parse_opt(last_recalled.as_deref())).max().map(time::format);
        items.push(MemoryRow {
            id: r.id.clone(),
            tier: r.tier,
            preview: model::preview(&content, 200),
            importance: r.importance,
            pinned: r.pinned,
            created_at: time::format(r.created_at),
            last_accessed: r.last_accessed.map(time::format),
            is_deleted: r.is_deleted,
            deleted_at: r.deleted_at.clone(),
            forget_score: score,
            would_forget: decay::would_forget(score, s),
            session_id: r.session_id.clone(),
            project_id: r.project_id.clone(),
            workflow_name,
            tags: model::parse_tags(tags.as_deref()),
            redacted: crate::scan::is_redacted(&content),
            needs_extraction: crate::dialogue::applies_to(r.tier) && crate::dialogue::lint(&content).flagged,
            written_by,
            last_used,
        });
    }
    Ok(Page { total, items })
}

/// Items `offset..offset + limit` of `idx` in `order`, as a full sort would put them, without
/// sorting the rest: two selections (linear on average) and a sort of the page.
fn page_of<T>(idx: &mut [T], offset: usize, limit: usize, order: impl Fn(&T, &T) -> std::cmp::Ordering) -> &[T] {
    let n = idx.len();
    let (lo, hi) = (offset.min(n), offset.saturating_add(limit).min(n));
    if hi < n {
        idx.select_nth_unstable_by(hi, &order);
    }
    let head = &mut idx[..hi];
    if lo > 0 && lo < hi {
        head.select_nth_unstable_by(lo, &order);
    }
    head[lo..].sort_by(&order);
    &head[lo..]
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TierCounts {
    /// Active memories.
    pub active: usize,
    /// Memories in quarantine.
    pub quarantined: usize,
    /// Pinned active memories.
    pub pinned: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Stats {
    /// The counts of each tier.
    pub tiers: std::collections::BTreeMap<String, TierCounts>,
    /// Active memories.
    pub total_active: usize,
    /// Memories in quarantine.
    pub total_quarantined: usize,
    /// Active memories at or above the lower edge of the review band.
    pub at_risk: usize,
    /// Active memories the batch would forget now.
    pub would_forget: usize,
    /// The recall statistics' summary.
    pub meta: crate::meta::MetaSummary,
}

pub fn stats(conn: &Connection, snap: &Snapshot, s: &Settings, now: Instant) -> Result<Stats> {
    let scores = snap.scores(s, now);
    let mut tiers: std::collections::BTreeMap<String, TierCounts> =
        Tier::ALL.iter().map(|t| (t.to_string(), TierCounts::default())).collect();
    let (mut active, mut quarantined, mut at_risk, mut forget) = (0, 0, 0, 0);
    for (r, sc) in snap.rows.iter().zip(&scores) {
        let c = tiers.get_mut(r.tier.as_str()).expect("every tier has an entry");
        if r.is_deleted {
            c.quarantined += 1;
            quarantined += 1;
        } else {
            c.active += 1;
            active += 1;
            if r.pinned {
                c.pinned += 1;
            }
            if *sc >= s.review_band_low - decay::EPS {
                at_risk += 1;
            }
            if decay::would_forget(*sc, s) {
                forget += 1;
            }
        }
    }
    Ok(Stats {
        tiers,
        total_active: active,
        total_quarantined: quarantined,
        at_risk,
        would_forget: forget,
        meta: crate::meta::summary(conn)?,
    })
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct QuarantineItem {
    pub id: String,
    #[serde(rename = "type")]
    pub tier: Tier,
    pub preview: String,
    pub reason: Option<String>,
    pub forget_score: Option<f64>,
    pub deleted_at: Option<String>,
    pub days_left: f64,
    /// Who moved it to quarantine, from its newest `soft` event: `policy` (the batch), `user`
    /// or `agent:<name>`; none when no event says (another program deleted it).
    pub deleted_by: Option<String>,
    /// The event's policy: `threshold`, `working-gate`, `manual`, `agent`…
    pub policy: Option<String>,
}

/// Every quarantined memory, newest deletion first, with its newest `soft` event (reason,
/// score, who) read in the same statement: one index lookup per memory instead of two
/// queries, so a quarantine of 100,000 memories is one scan.
pub fn quarantine(conn: &Connection, s: &Settings, now: Instant) -> Result<Vec<QuarantineItem>> {
    quarantine_first(conn, s, now, None)
}

/// How many memories are in quarantine, and the first `limit` of them as [`quarantine`] lists
/// them: what a window paints before the whole list has arrived.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct QuarantinePage {
    pub total: usize,
    pub items: Vec<QuarantineItem>,
}

pub fn quarantine_page(conn: &Connection, s: &Settings, now: Instant, limit: Option<usize>) -> Result<QuarantinePage> {
    let total: i64 =
        conn.query_row("SELECT COUNT(*) FROM memory_item WHERE COALESCE(is_deleted, 0) = 1", [], |r| r.get(0))?;
    Ok(QuarantinePage { total: total.max(0) as usize, items: quarantine_first(conn, s, now, limit)? })
}

fn quarantine_first(
    conn: &Connection,
    s: &Settings,
    now: Instant,
    limit: Option<usize>,
) -> Result<Vec<QuarantineItem>> {
    let mut stmt = conn.prepare(
        "SELECT m.id, m.type, m.content, m.deleted_at, e.reason, e.forget_score, e.created_at, e.policy, e.metadata_json \
         FROM memory_item m LEFT JOIN memory_forgetting_event e ON e.id = ( \
           SELECT f.id FROM memory_forgetting_event f WHERE f.memory_id = m.id AND f.action = 'soft' \
           ORDER BY f.created_at DESC, f.rowid DESC LIMIT 1) \
         WHERE COALESCE(m.is_deleted, 0) = 1 ORDER BY m.deleted_at DESC, m.rowid DESC LIMIT ?1",
    )?;
    // No limit is the largest one (PostgreSQL refuses SQLite's negative "no limit").
    let limit: i64 = limit.map_or(i64::MAX, |n| n.min(i64::MAX as usize) as i64);
    type Row = (
        String,
        String,
        String,
        Option<String>,
        Option<String>,
        Option<f64>,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let rows: Vec<Row> = stmt
        .query_map([limit], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?))
        })?
        .collect::<std::result::Result<_, _>>()?;
    let mut out = Vec::with_capacity(rows.len());
    for (id, tier, content, deleted_at, reason, score, event_at, policy, metadata) in rows {
        let Ok(tier) = tier.parse::<Tier>() else { continue };
        // The quarantine began at the later of `deleted_at` and the newest soft event, as
        // `audit::quarantined_since` says (the purge counts from the same instant).
        let since = match (time::parse_opt(deleted_at.as_deref()), time::parse_opt(event_at.as_deref())) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
        .map(|t| time::days_between(t, now))
        .unwrap_or(0.0);
        let deleted_by = metadata
            .as_deref()
            .and_then(|m| serde_json::from_str::<serde_json::Value>(m).ok())
            .and_then(|m| m.get("actor").and_then(|a| a.as_str()).map(str::to_string));
        out.push(QuarantineItem {
            id,
            tier,
            preview: model::preview(&content, 200),
            reason,
            forget_score: score,
            deleted_at,
            days_left: (s.quarantine_days - since).max(0.0),
            deleted_by,
            policy,
        });
    }
    Ok(out)
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct BatchReport {
    pub scanned: usize,
    pub soft_deleted: Vec<String>,
    pub review: Vec<String>,
    pub working_gate: Vec<String>,
    pub purged: Vec<String>,
    /// Planned but left alone because a person or agent changed the memory (pinned it,
    /// edited it, restored it…) while the batch ran; the next run judges them afresh.
    pub changed_since_plan: Vec<String>,
    pub elapsed_ms: f64,
    pub dry_run: bool,
    /// The run's id (`run_<uuid>`) when it quarantined anything: every soft event it wrote
    /// names it, `lethe forget --undo RUN` restores them, and `lethe events` lists the run
    /// (action `forget_run`). `None` for a dry run or a run that quarantined nothing.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// What goes (or went) to quarantine grouped by its reason, the largest group first, so
    /// a person reviews the run by why: each group's reason and its memories' ids.
    pub by_reason: Vec<ReasonGroup>,
}

/// The memories a run quarantines for one reason.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ReasonGroup {
    /// The reasons as the soft event records them ("old, unused, low importance, not pinned",
    /// "working gate: older than 48 h").
    pub reason: String,
    pub ids: Vec<String>,
}

/// Groups (reason, id) pairs by reason, the largest group first, then by reason. "duplicate of
/// <id> (…)" counts as one reason whichever memory it names, so that the duplicates of
/// different memories are one group ("duplicate of another memory").
fn group_by_reason<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<ReasonGroup> {
    let mut groups: HashMap<String, Vec<String>> = HashMap::new();
    for (reason, id) in pairs {
        let kind: Vec<&str> = reason
            .split(", ")
            .map(|part| if part.starts_with("duplicate of ") { "duplicate of another memory" } else { part })
            .collect();
        groups.entry(kind.join(", ")).or_default().push(id.to_string());
    }
    let mut out: Vec<ReasonGroup> = groups.into_iter().map(|(reason, ids)| ReasonGroup { reason, ids }).collect();
    out.sort_by(|a, b| b.ids.len().cmp(&a.ids.len()).then_with(|| a.reason.cmp(&b.reason)));
    out
}

pub struct BatchOptions<'a> {
    pub dry_run: bool,
    pub now: Instant,
    pub progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
    pub cancel: Option<&'a AtomicBool>,
    /// Actions per write transaction. With the writes in rowid order, 2,000 costs no more than
    /// 10,000 (100k: 0.77 s vs 0.75 s; 1M: 8.9 s vs 9.1 s) and holds the write lock for a
    /// few tens of milliseconds at a time, so agents writing meanwhile barely wait; a crash
    /// loses at most one chunk (never half of one).
    pub chunk: usize,
    /// Reports the snapshot load (`cancel` stops it too).
    pub loading: Option<&'a (dyn Fn(LoadStage, usize, usize) + Sync)>,
    /// A snapshot already loaded, current as of what the journal has seen (the window's
    /// cache): the batch plans from it instead of loading one, and skips what changed after
    /// it as it skips what changes while it runs.
    pub snapshot: Option<(&'a Snapshot, &'a crate::storage::journal::Journal)>,
    /// A dry run stores the signatures and neighbour lists it had to search (as `stats`
    /// does), so that the next read finds them; false for a connection that must not write
    /// (a read-only open, a team store's reader).
    pub keep_derived: bool,
}

impl<'a> BatchOptions<'a> {
    pub fn new(now: Instant, dry_run: bool) -> Self {
        BatchOptions {
            dry_run,
            now,
            progress: None,
            cancel: None,
            chunk: 2000,
            loading: None,
            snapshot: None,
            keep_derived: true,
        }
    }
}

enum Decision {
    Purge(String),
    Gate(String, String, f64),
    Forget(String, String, f64),
    Review(String, f64),
    LeaveBand(String),
}

/// A decision as a set-based write stores it: kind, id, reason, policy, score.
type SetRow<'a> = (&'static str, &'a str, Option<&'a str>, &'static str, Option<f64>);

impl Decision {
    /// What a set-based write stores of the decision (kind, id, reason, policy, score);
    /// `None` for a purge, written on its own.
    fn as_set_row(&self) -> Option<SetRow<'_>> {
        Some(match self {
            Decision::Purge(_) => return None,
            Decision::Gate(id, reason, score) => ("soft", id, Some(reason.as_str()), "working-gate", Some(*score)),
            Decision::Forget(id, reason, score) => ("soft", id, Some(reason.as_str()), "forget-score", Some(*score)),
            Decision::Review(id, score) => ("review", id, Some("entered the review band"), "review-band", Some(*score)),
            Decision::LeaveBand(id) => ("leave", id, None, "", None),
        })
    }

    fn id(&self) -> &str {
        match self {
            Decision::Purge(id)
            | Decision::Gate(id, ..)
            | Decision::Forget(id, ..)
            | Decision::Review(id, _)
            | Decision::LeaveBand(id) => id,
        }
    }
}

/// A decision and the row it is about: the rowid orders the writes (neighbouring rows share
/// pages) and addresses the row without its id index; `in_band` says whether the row has a
/// `lethe_review` entry to remove when it leaves for quarantine.
struct Planned {
    rowid: i64,
    in_band: bool,
    decision: Decision,
}

/// Stores missing similarity signatures (rows written by memento or an old import).
pub fn ensure_signatures(conn: &mut Connection) -> Result<usize> {
    let missing: Vec<(String, String)> = conn
        .prepare(
            "SELECT m.id, CAST(m.content AS TEXT) FROM memory_item m LEFT JOIN lethe_signature s ON s.memory_id = m.id \
             WHERE s.memory_id IS NULL AND m.id IS NOT NULL",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<std::result::Result<_, _>>()?;
    for chunk in missing.chunks(5000) {
        write_tx(conn, |tx| {
            let mut stmt = tx.prepare_cached(
                "INSERT OR IGNORE INTO lethe_signature (memory_id, content_hash, bands) VALUES (?1, ?2, ?3)",
            )?;
            for (id, content) in chunk {
                stmt.execute(params![id, dedup::content_hash(content), dedup::band_keys(content)])?;
            }
            Ok(())
        })?;
    }
    Ok(missing.len())
}

/// One policy run: purge expired quarantine, the working-memory dual gate, soft-delete at
/// or above the threshold, one review event on entering the review band. Writes in chunks
/// of short transactions; safe to interrupt and rerun (idempotent).
pub fn run_batch(conn: &mut Connection, opts: &BatchOptions<'_>) -> Result<BatchReport> {
    run_batch_inner(conn, opts, Clock::now())
}

/// `f` with a 128 MiB page cache: the batch's writes touch rows all over the table and its
/// indexes, and with SQLite's default 2 MiB most of them re-read their pages. Only for the
/// writes: the snapshot's one pass over the table gains nothing from a cache, and filling
/// one costs a dry run a third of its time (page faults of 75 MB).
fn with_large_cache<T>(conn: &mut Connection, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
    // A server keeps its own shared buffers.
    if conn.is_postgres() {
        return f(conn);
    }
    let cache_before: i64 = conn.query_row("PRAGMA cache_size", [], |r| r.get(0))?;
    conn.execute_batch("PRAGMA cache_size = -131072")?;
    let out = f(conn);
    conn.execute_batch(&format!("PRAGMA cache_size = {cache_before}"))?;
    out
}

fn run_batch_inner(conn: &mut Connection, opts: &BatchOptions<'_>, started: Clock) -> Result<BatchReport> {
    let now = opts.now;
    let s = Settings::load(conn)?;
    // Every change to a memory after this point is in the change journal past `seen`; the
    // writes skip those memories (a pin made while the batch runs must win).
    let loaded;
    let (snap, seen) = match opts.snapshot {
        Some((snap, journal)) => (snap, journal.clone()),
        None => {
            let journal = crate::storage::journal::Journal::at(conn)?;
            loaded = Snapshot::load_with(conn, &Job { progress: opts.loading, cancel: opts.cancel })?;
            (&loaded, journal)
        }
    };
    // Signatures and neighbours of memories written since the last run are stored, so the
    // next run (and every read) finds them instead of searching again — by a dry run too,
    // when its connection may write (they are derived data, not a decision).
    if !opts.dry_run || opts.keep_derived {
        snap.persist(conn)?;
    }
    let inputs = snap.inputs(&s, now);
    let in_band: HashSet<String> = conn
        .prepare("SELECT memory_id FROM lethe_review")?
        .query_map([], |r| r.get(0))?
        .collect::<std::result::Result<_, _>>()?;

    let plan = |r: &Row, decision: Decision| Planned { rowid: r.rowid, in_band: in_band.contains(&r.id), decision };
    let mut decisions: Vec<Planned> = Vec::new();
    let mut report = BatchReport { dry_run: opts.dry_run, ..Default::default() };

    // 1. Quarantine past its days is purged for ever — unless rows cannot be deleted in this
    //    file (a memento file with sqlite-vec tables): then it stays in quarantine.
    let can_purge = crate::store::memory_delete_blocked(conn)?.is_none();
    for r in snap.rows.iter().filter(|r| can_purge && r.is_deleted && !r.pinned) {
        if let Some(at) = time::parse_opt(r.deleted_at.as_deref()) {
            // Only rows old enough by `deleted_at` ask the audit (few per run).
            if time::days_between(at, now) > s.quarantine_days {
                let since = audit::quarantined_since(conn, &r.id, r.deleted_at.as_deref())?.unwrap_or(at);
                if time::days_between(since, now) > s.quarantine_days {
                    decisions.push(plan(r, Decision::Purge(r.id.clone())));
                }
            }
        }
    }

    // 2. Working-memory dual gate, per session: older than the window or beyond the last N.
    let mut gated: HashSet<usize> = HashSet::new();
    let mut sessions: HashMap<Option<&str>, Vec<usize>> = HashMap::new();
    for (i, r) in snap.rows.iter().enumerate() {
        if !r.is_deleted && !r.pinned && r.tier == Tier::Working {
            sessions.entry(r.session_id.as_deref()).or_default().push(i);
        }
    }
    for (session, mut idx) in sessions {
        idx.sort_by(|&a, &b| {
            snap.rows[b].created_at.cmp(&snap.rows[a].created_at).then(snap.rows[b].rowid.cmp(&snap.rows[a].rowid))
        });
        for (rank, &i) in idx.iter().enumerate() {
            let r = &snap.rows[i];
            let age_h = time::days_between(r.created_at, now) * 24.0;
            let reason = if age_h > s.working_window_hours {
                Some(format!("working gate: older than {} h", s.working_window_hours))
            } else if session.is_some() && rank as i64 >= s.working_max_turns {
                Some(format!("working gate: beyond the last {} turns of the session", s.working_max_turns))
            } else {
                None
            };
            if let Some(reason) = reason {
                gated.insert(i);
                let score = decay::score_value(&inputs[i], &s, now);
                decisions.push(plan(r, Decision::Gate(r.id.clone(), reason, score)));
            }
        }
    }

    // 3. Scores.
    for (i, r) in snap.rows.iter().enumerate() {
        if i.is_multiple_of(REPORT_EVERY) && opts.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Err(Error::Cancelled);
        }
        if r.is_deleted {
            continue;
        }
        report.scanned += 1;
        if gated.contains(&i) {
            continue;
        }
        // The number alone for every row; the explained score (reasons, projection) only for
        // the rows that are forgotten. `score_value` is the same sum `forget_score` reports.
        let score = decay::score_value(&inputs[i], &s, now);
        if decay::would_forget(score, &s) {
            let f = decay::forget_score(&inputs[i], &s, now);
            decisions.push(plan(r, Decision::Forget(r.id.clone(), f.reasons.join(", "), f.forget_score)));
        } else if score >= s.review_band_low - decay::EPS {
            if !in_band.contains(&r.id) {
                decisions.push(plan(r, Decision::Review(r.id.clone(), score)));
            }
        } else if in_band.contains(&r.id) {
            decisions.push(plan(r, Decision::LeaveBand(r.id.clone())));
        }
    }

    // Every row has at most one decision; writing them in rowid order keeps neighbouring
    // rows (and their index entries) on the same pages.
    decisions.sort_unstable_by_key(|p| p.rowid);
    let total = decisions.len();
    for p in &decisions {
        match &p.decision {
            Decision::Purge(id) => report.purged.push(id.clone()),
            Decision::Gate(id, ..) => report.working_gate.push(id.clone()),
            Decision::Forget(id, ..) => report.soft_deleted.push(id.clone()),
            Decision::Review(id, _) => report.review.push(id.clone()),
            Decision::LeaveBand(_) => {}
        }
    }
    let reasons: HashMap<&str, &str> = decisions
        .iter()
        .filter_map(|p| match &p.decision {
            Decision::Gate(id, reason, _) | Decision::Forget(id, reason, _) => Some((id.as_str(), reason.as_str())),
            _ => None,
        })
        .collect();
    if !opts.dry_run {
        let run = crate::ops::runs::new_run_id();
        with_large_cache(conn, |conn| write_decisions(conn, opts, &decisions, &s, seen, &run, &mut report))?;
        if !report.soft_deleted.is_empty() || !report.working_gate.is_empty() {
            crate::ops::runs::record_run(conn, &run, &report, now)?;
            report.run_id = Some(run);
        }
    }
    // After the writes: what was left alone (changed since the plan) is in no group.
    report.by_reason = group_by_reason(
        report
            .soft_deleted
            .iter()
            .chain(&report.working_gate)
            .filter_map(|id| reasons.get(id.as_str()).map(|r| (*r, id.as_str()))),
    );
    if let Some(p) = opts.progress {
        p(total, total);
    }
    report.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok(report)
}

/// The batch's writes: the decisions in chunked transactions, each skipping the memories
/// changed since the plan (the journal past `seen`), then the purged memories' index
/// entries merged away.
/// The batch's commits between two waits for the checkpoint thread (a chunk of 2,000
/// decisions writes a few MB of pages).
const CHUNKS_PER_WAL: usize = 32;

fn write_decisions(
    conn: &mut Connection,
    opts: &BatchOptions<'_>,
    decisions: &[Planned],
    s: &Settings,
    mut seen: crate::storage::journal::Journal,
    run: &str,
    report: &mut BatchReport,
) -> Result<()> {
    // Every soft event of the run names it (so that the run can be undone as one).
    let metadata = serde_json::json!({ "actor": "policy", "run": run }).to_string();
    let (now, total) = (opts.now, decisions.len());
    {
        let chunk = opts.chunk.max(1);
        let mut changed: HashSet<String> = HashSet::new();
        let mut skipped: Vec<&Planned> = Vec::new();
        // Checkpoints aside when there are several commits to keep them away from.
        let mut checkpoints =
            if total > chunk { crate::store::CheckpointsAside::start(conn, CHUNKS_PER_WAL)? } else { None };
        for (n, part) in decisions.chunks(chunk).enumerate() {
            if opts.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Err(Error::Cancelled);
            }
            let (new_seen, new_changed, part_skipped) = write_tx(conn, |tx| {
                // Inside the write transaction: nobody can change a row between this read and
                // the writes below. The batch's own earlier writes are in the journal too;
                // they concern rows already decided, so they skip nothing.
                // On a team server a number handed out earlier can commit later: the journal
                // re-reads below the highest number it has seen.
                let mut seen_now = seen.clone();
                let fresh = seen_now.read_all(tx)?;
                let is_changed = |id: &str| changed.contains(id) || fresh.contains(id);
                let (part_skipped, to_apply): (Vec<&Planned>, Vec<&Planned>) =
                    part.iter().partition(|p| is_changed(p.decision.id()));
                if tx.is_postgres() {
                    apply_on_server(tx, &to_apply, s, &metadata, now)?;
                } else {
                    apply_in_file(tx, &to_apply, s, &metadata, now)?;
                }
                Ok((seen_now, fresh, part_skipped))
            })?;
            if let Some(c) = &mut checkpoints {
                c.committed();
            }
            seen = new_seen;
            changed.extend(new_changed);
            skipped.extend(part_skipped);
            if let Some(p) = opts.progress {
                p(((n + 1) * chunk).min(total), total);
            }
        }
        if let Some(c) = checkpoints {
            c.finish(conn)?;
        }
        if !skipped.is_empty() {
            let gone: HashSet<&str> = skipped.iter().map(|p| p.decision.id()).collect();
            for list in [&mut report.purged, &mut report.working_gate, &mut report.soft_deleted, &mut report.review] {
                list.retain(|id| !gone.contains(id.as_str()));
            }
            report.changed_since_plan = skipped.iter().map(|p| p.decision.id().to_string()).collect();
        }
        // Purged memories leave no text behind: index entries merged away once
        // per batch, then the WAL truncated.
        if !report.purged.is_empty() {
            write_tx(conn, |tx| crate::store::purge_deleted_index_entries(tx))?;
            crate::store::checkpoint_truncate(conn)?;
        }
    }
    Ok(())
}

fn apply(tx: &crate::storage::db::Transaction, p: &Planned, s: &Settings, now: Instant) -> Result<()> {
    // Each decision re-checks the row's state inside the transaction: an agent may have
    // restored, deleted or purged it since the scan. Such rows are skipped, not errors.
    match &p.decision {
        Decision::Purge(id) => {
            let still: Option<i64> = tx
                .prepare_cached(
                    "SELECT 1 FROM memory_item WHERE rowid = ?1 AND id = ?2 AND is_deleted = 1 AND COALESCE(pinned, 0) = 0",
                )?
                .query_row(params![p.rowid, id], |r| r.get(0))
                .optional()?;
            if still.is_some() {
                rows::hard_delete_tx(
                    tx,
                    id,
                    &format!("quarantine older than {} days", s.quarantine_days),
                    "quarantine-expired",
                    "policy",
                    now,
                )?;
            }
        }
        Decision::Gate(id, reason, score) => soft(tx, p, id, reason, "working-gate", *score, s, now)?,
        Decision::Forget(id, reason, score) => soft(tx, p, id, reason, "forget-score", *score, s, now)?,
        Decision::Review(id, score) => {
            let inserted = tx
                .prepare_cached("INSERT OR IGNORE INTO lethe_review (memory_id, entered_at) VALUES (?1, ?2)")?
                .execute(params![id, time::format(now)])?;
            if inserted > 0 {
                audit::record_event(
                    tx,
                    EventSpec {
                        memory_id: id,
                        action: "review",
                        reason: Some("entered the review band"),
                        policy: Some("review-band"),
                        forget_score: Some(*score),
                        ttl_days: None,
                        metadata: None,
                    },
                    now,
                )?;
            }
        }
        Decision::LeaveBand(id) => rows::leave_review(tx, &[id], false)?,
    }
    Ok(())
}

/// [`apply`] for a chunk of decisions in a file: the decisions go into a temporary table and
/// each kind of write is one statement over it (per decision, the statements' own overhead
/// was half of the batch at 1M memories), with the same checks as [`apply`] and [`soft`]: a
/// row no longer active or now pinned is left alone, a memory already in the band gets no
/// second event. Purges, rare and many statements each, go one by one. The events keep the
/// decisions' order (ids made here in that order, rows inserted in that order).
fn apply_in_file(
    tx: &crate::storage::db::Transaction,
    planned: &[&Planned],
    s: &Settings,
    metadata: &str,
    now: Instant,
) -> Result<()> {
    tx.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS lethe_batch (n INTEGER PRIMARY KEY, kind TEXT NOT NULL, \
             memory_rowid INTEGER NOT NULL, id TEXT NOT NULL, reason TEXT, policy TEXT, score REAL, \
             in_band INTEGER NOT NULL, ev TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0); \
         DELETE FROM temp.lethe_batch;",
    )?;
    {
        let mut put = tx.prepare_cached(
            "INSERT INTO temp.lethe_batch (n, kind, memory_rowid, id, reason, policy, score, in_band, ev) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        for (n, p) in planned.iter().enumerate() {
            let Some((kind, id, reason, policy, score)) = p.decision.as_set_row() else {
                apply(tx, p, s, now)?;
                continue;
            };
            let ev = format!("fev_{}", uuid::Uuid::now_v7());
            put.execute(params![n as i64, kind, p.rowid, id, reason, policy, score, p.in_band, ev])?;
        }
    }
    let at = time::format(now);
    tx.execute_batch(
        "UPDATE temp.lethe_batch SET done = 1 WHERE kind = 'soft' AND EXISTS (SELECT 1 FROM memory_item m \
             WHERE m.rowid = memory_rowid AND m.id = lethe_batch.id \
             AND COALESCE(m.is_deleted, 0) = 0 AND COALESCE(m.pinned, 0) = 0); \
         UPDATE temp.lethe_batch SET done = 1 WHERE kind = 'review' \
             AND NOT EXISTS (SELECT 1 FROM lethe_review r WHERE r.memory_id = lethe_batch.id);",
    )?;
    tx.prepare_cached(
        "UPDATE memory_item SET is_deleted = 1, deleted_at = ?1 \
         WHERE rowid IN (SELECT memory_rowid FROM temp.lethe_batch WHERE kind = 'soft' AND done = 1)",
    )?
    .execute([&at])?;
    tx.execute_batch(
        "DELETE FROM lethe_review WHERE memory_id IN (SELECT id FROM temp.lethe_batch \
             WHERE kind = 'leave' OR (kind = 'soft' AND done = 1 AND in_band = 1));",
    )?;
    tx.prepare_cached(
        "INSERT INTO lethe_review (memory_id, entered_at) \
         SELECT id, ?1 FROM temp.lethe_batch WHERE kind = 'review' AND done = 1 ORDER BY n",
    )?
    .execute([&at])?;
    tx.prepare_cached(
        "INSERT INTO memory_forgetting_event \
             (id, memory_id, action, reason, policy, forget_score, ttl_days, created_at, metadata_json) \
         SELECT ev, id, kind, reason, policy, score, CASE WHEN kind = 'soft' THEN ?1 END, ?2, \
             CASE WHEN kind = 'soft' THEN ?3 END \
         FROM temp.lethe_batch WHERE done = 1 ORDER BY n",
    )?
    .execute(params![s.quarantine_days.round() as i64, at, metadata])?;
    tx.execute_batch("DELETE FROM temp.lethe_batch;")?;
    Ok(())
}

/// [`apply`] for a chunk of decisions on a team server, where every statement is a round trip
/// (2–3 per decision one by one: 28–39 s instead of 9–11 s at 100k): the soft deletes, review
/// entries and exits and their events go in one statement, with the same checks as [`apply`]
/// and [`soft`] (a row no longer active or now pinned is left alone, a memory already in the
/// band gets no second event); purges, rare and many statements each, go one by one. The
/// events keep the decisions' order (ids made here, rows inserted in that order).
fn apply_on_server(
    tx: &crate::storage::db::Transaction,
    planned: &[&Planned],
    s: &Settings,
    metadata: &str,
    now: Instant,
) -> Result<()> {
    let mut batch = Vec::new();
    for (n, p) in planned.iter().enumerate() {
        let Some((kind, id, reason, policy, score)) = p.decision.as_set_row() else {
            apply(tx, p, s, now)?;
            continue;
        };
        let ev = format!("fev_{}", uuid::Uuid::now_v7());
        batch.push(serde_json::json!({
            "n": n, "kind": kind, "rowid": p.rowid, "id": id, "reason": reason, "policy": policy,
            "score": score, "in_band": p.in_band, "ev": ev,
        }));
    }
    if batch.is_empty() {
        return Ok(());
    }
    // Leaving the review band goes through the server's function (Lethe's roles hold no
    // DELETE right): the memories the policy lets go, and those of the band this statement
    // puts in quarantine (a memory the statement leaves active stays in the band).
    let leave: Vec<&str> = batch.iter().filter(|d| d["kind"] == "leave").filter_map(|d| d["id"].as_str()).collect();
    let quarantined: Vec<&str> =
        batch.iter().filter(|d| d["kind"] == "soft" && d["in_band"] == true).filter_map(|d| d["id"].as_str()).collect();
    let leave: Vec<String> = leave.into_iter().map(str::to_string).collect();
    let quarantined: Vec<String> = quarantined.into_iter().map(str::to_string).collect();
    tx.prepare_cached(
        "WITH d AS (
             SELECT * FROM json_to_recordset(?1::TEXT::JSON) AS d(n BIGINT, kind TEXT, rowid BIGINT, id TEXT,
                 reason TEXT, policy TEXT, score DOUBLE PRECISION, in_band BOOLEAN, ev TEXT)),
         soft AS (
             UPDATE memory_item m SET is_deleted = 1, deleted_at = ?2::TEXT
             FROM d WHERE d.kind = 'soft' AND m.rowid = d.rowid AND m.id = d.id
                 AND COALESCE(m.is_deleted, 0) = 0 AND COALESCE(m.pinned, 0) = 0
             RETURNING d.n, d.id, d.in_band),
         review AS (
             INSERT INTO lethe_review (memory_id, entered_at) SELECT d.id, ?2::TEXT FROM d WHERE d.kind = 'review'
             ON CONFLICT DO NOTHING RETURNING memory_id)
         INSERT INTO memory_forgetting_event
             (id, memory_id, action, reason, policy, forget_score, ttl_days, created_at, metadata_json)
         SELECT d.ev, d.id, d.kind, d.reason, d.policy, d.score,
                CASE WHEN d.kind = 'soft' THEN ?3::BIGINT END, ?2::TEXT,
                CASE WHEN d.kind = 'soft' THEN ?4::TEXT END
         FROM d
         WHERE d.n IN (SELECT soft.n FROM soft) OR (d.kind = 'review' AND d.id IN (SELECT memory_id FROM review))
         ORDER BY d.n",
    )?
    .execute(params![
        serde_json::Value::Array(batch).to_string(),
        time::format(now),
        s.quarantine_days.round() as i64,
        metadata
    ])?;
    rows::leave_review(tx, &leave.iter().map(String::as_str).collect::<Vec<_>>(), false)?;
    rows::leave_review(tx, &quarantined.iter().map(String::as_str).collect::<Vec<_>>(), true)?;
    Ok(())
}

/// The batch's soft delete: the same row change and event as [`rows::soft_delete_tx`],
/// addressed by rowid, and a no-op when the row is no longer active (checked by the UPDATE
/// itself instead of a separate query).
#[allow(clippy::too_many_arguments)]
fn soft(
    tx: &crate::storage::db::Transaction,
    p: &Planned,
    id: &str,
    reason: &str,
    policy: &str,
    score: f64,
    s: &Settings,
    now: Instant,
) -> Result<()> {
    let changed = tx
        .prepare_cached(
            "UPDATE memory_item SET is_deleted = 1, deleted_at = ?3 \
             WHERE rowid = ?1 AND id = ?2 AND COALESCE(is_deleted, 0) = 0 AND COALESCE(pinned, 0) = 0",
        )?
        .execute(params![p.rowid, id, time::format(now)])?;
    if changed == 0 {
        return Ok(());
    }
    if p.in_band {
        rows::leave_review(tx, &[id], false)?;
    }
    rows::soft_event(tx, id, reason, policy, Some(score), "policy", s, now)?;
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct WhatIfSide {
    pub count: usize,
    pub ids: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct WhatIf {
    pub current: WhatIfSide,
    pub proposed: WhatIfSide,
    /// Forgotten under the proposal but not now.
    pub newly_forgotten: Vec<String>,
    /// Forgotten now but spared by the proposal.
    pub spared: Vec<String>,
}

/// How many and which active memories each policy would forget (score rule only).
pub fn what_if(snap: &Snapshot, current: &Settings, proposed: &Settings, now: Instant) -> Result<WhatIf> {
    proposed.validate()?;
    let side = |s: &Settings| -> (Vec<bool>, WhatIfSide) {
        let scores = snap.scores(s, now);
        let flags: Vec<bool> =
            snap.rows.iter().zip(&scores).map(|(r, sc)| !r.is_deleted && decay::would_forget(*sc, s)).collect();
        let ids: Vec<String> = snap.rows.iter().zip(&flags).filter(|(_, f)| **f).map(|(r, _)| r.id.clone()).collect();
        (flags, WhatIfSide { count: ids.len(), ids })
    };
    let (cf, c) = side(current);
    let (pf, p) = side(proposed);
    let pick = |a: &[bool], b: &[bool]| -> Vec<String> {
        snap.rows.iter().enumerate().filter(|(i, _)| a[*i] && !b[*i]).map(|(_, r)| r.id.clone()).collect()
    };
    Ok(WhatIf { newly_forgotten: pick(&pf, &cf), spared: pick(&cf, &pf), current: c, proposed: p })
}
