//! The policy batch: its plan (purge, working gate, scores, review band) and its writes in
//! chunked transactions, in a file and on a team server.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use super::*;

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
    /// A run reviewed item by item: only these memories may be quarantined (the ones a person
    /// approved in the dry run's list); the plan's others stay, and so does a memory planned
    /// only since the review, which nobody has looked at. Purges and the review band are not
    /// affected. `None`: everything the plan quarantines.
    pub only: Option<&'a HashSet<String>>,
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
            only: None,
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
            let mut stmt = tx.prepare_cached(if tx.is_postgres() {
                dedup::SIGNATURE_ON_SERVER
            } else {
                "INSERT OR IGNORE INTO lethe_signature (memory_id, content_hash, bands) VALUES (?1, ?2, ?3)"
            })?;
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
            loaded = Snapshot::load_with(
                conn,
                &Job { progress: opts.loading, cancel: opts.cancel, resumable: true, ..Job::default() },
            )?;
            (&loaded, journal)
        }
    };
    // Signatures and neighbours of memories written since the last run are stored, so the
    // next run (and every read) finds them instead of searching again — by a dry run too,
    // when its connection may write (they are derived data, not a decision).
    if !opts.dry_run || opts.keep_derived {
        snap.persist(conn)?;
    }
    let in_band: HashSet<String> = conn
        .prepare("SELECT memory_id FROM lethe_review")?
        .query_map([], |r| r.get(0))?
        .collect::<std::result::Result<_, _>>()?;
    let mut report = BatchReport { dry_run: opts.dry_run, ..Default::default() };
    let decisions = plan_decisions(conn, snap, &in_band, &s, opts, &mut report)?;
    let total = decisions.len();
    let reasons: HashMap<&str, &str> = decisions
        .iter()
        .filter_map(|p| match &p.decision {
            Decision::Gate(id, reason, _) | Decision::Forget(id, reason, _) => Some((id.as_str(), reason.as_str())),
            _ => None,
        })
        .collect();
    if !opts.dry_run {
        let run = runs::new_run_id();
        with_large_cache(conn, |conn| write_decisions(conn, opts, &decisions, &s, seen, &run, &mut report))?;
        if !report.soft_deleted.is_empty() || !report.working_gate.is_empty() {
            runs::record_run(conn, &run, &report, now)?;
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

/// A decision about a row, with what the writes need of it.
fn planned(r: &Row, in_band: &HashSet<String>, decision: Decision) -> Planned {
    Planned { rowid: r.rowid, in_band: in_band.contains(&r.id), decision }
}

/// The run's decisions, at most one per row, in rowid order (writing them so keeps
/// neighbouring rows and their index entries on the same pages); the report's lists of
/// what each decision is about.
fn plan_decisions(
    conn: &Connection,
    snap: &Snapshot,
    in_band: &HashSet<String>,
    s: &Settings,
    opts: &BatchOptions<'_>,
    report: &mut BatchReport,
) -> Result<Vec<Planned>> {
    let inputs = snap.inputs(s, opts.now);
    let mut decisions = plan_purges(conn, snap, in_band, s, opts.now)?;
    let (gate, gated) = plan_working_gate(snap, &inputs, in_band, s, opts.now);
    decisions.extend(gate);
    decisions.extend(plan_scores(snap, &inputs, &gated, in_band, s, opts, report)?);
    if let Some(only) = opts.only {
        decisions.retain(|p| match &p.decision {
            Decision::Gate(id, ..) | Decision::Forget(id, ..) => only.contains(id),
            _ => true,
        });
    }
    decisions.sort_unstable_by_key(|p| p.rowid);
    for p in &decisions {
        match &p.decision {
            Decision::Purge(id) => report.purged.push(id.clone()),
            Decision::Gate(id, ..) => report.working_gate.push(id.clone()),
            Decision::Forget(id, ..) => report.soft_deleted.push(id.clone()),
            Decision::Review(id, _) => report.review.push(id.clone()),
            Decision::LeaveBand(_) => {}
        }
    }
    Ok(decisions)
}

/// 1. Quarantine past its days is purged for ever — unless rows cannot be deleted in this
///    file (a memento file with sqlite-vec tables): then it stays in quarantine.
fn plan_purges(
    conn: &Connection,
    snap: &Snapshot,
    in_band: &HashSet<String>,
    s: &Settings,
    now: Instant,
) -> Result<Vec<Planned>> {
    let mut decisions = Vec::new();
    let can_purge = crate::store::memory_delete_blocked(conn)?.is_none();
    for r in snap.rows.iter().filter(|r| can_purge && r.is_deleted && !r.pinned) {
        if let Some(at) = time::parse_opt(r.deleted_at.as_deref()) {
            // Only rows old enough by `deleted_at` ask the audit (few per run).
            if time::days_between(at, now) > s.quarantine_days {
                let since = audit::quarantined_since(conn, &r.id, r.deleted_at.as_deref())?.unwrap_or(at);
                if time::days_between(since, now) > s.quarantine_days {
                    decisions.push(planned(r, in_band, Decision::Purge(r.id.clone())));
                }
            }
        }
    }
    Ok(decisions)
}

/// 2. Working-memory dual gate, per session: older than the window or beyond the last N.
///    Also the rows it gates (the scores pass them by).
fn plan_working_gate(
    snap: &Snapshot,
    inputs: &[ScoreInput],
    in_band: &HashSet<String>,
    s: &Settings,
    now: Instant,
) -> (Vec<Planned>, HashSet<usize>) {
    let mut decisions = Vec::new();
    let mut gated: HashSet<usize> = HashSet::new();
    for (i, reason) in working_gate(snap, s, now) {
        let r = &snap.rows[i];
        gated.insert(i);
        let score = decay::score_value(&inputs[i], s, now);
        decisions.push(planned(r, in_band, Decision::Gate(r.id.clone(), reason, score)));
    }
    (decisions, gated)
}

/// The rows the working-memory gate quarantines at `now` (their index in the snapshot) and
/// why: per session, a working memory older than the window or beyond the last N turns.
pub fn working_gate(snap: &Snapshot, s: &Settings, now: Instant) -> Vec<(usize, String)> {
    let mut out = Vec::new();
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
                out.push((i, reason));
            }
        }
    }
    out
}

/// How many memories the next run would quarantine at `now`, given every row's score: the
/// working-memory gate's and the others at or above the threshold — what a dry run's
/// `working_gate` and `soft_deleted` hold.
pub fn next_run_count(snap: &Snapshot, scores: &[f64], s: &Settings, now: Instant) -> usize {
    let gated: HashSet<usize> = working_gate(snap, s, now).into_iter().map(|(i, _)| i).collect();
    let by_score = snap
        .rows
        .iter()
        .zip(scores)
        .enumerate()
        .filter(|(i, (r, sc))| !r.is_deleted && !gated.contains(i) && decay::would_forget(**sc, s))
        .count();
    gated.len() + by_score
}

/// 3. Scores: forget at or above the threshold, enter or leave the review band.
fn plan_scores(
    snap: &Snapshot,
    inputs: &[ScoreInput],
    gated: &HashSet<usize>,
    in_band: &HashSet<String>,
    s: &Settings,
    opts: &BatchOptions<'_>,
    report: &mut BatchReport,
) -> Result<Vec<Planned>> {
    let now = opts.now;
    let mut decisions = Vec::new();
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
        let score = decay::score_value(&inputs[i], s, now);
        if decay::would_forget(score, s) {
            let f = decay::forget_score(&inputs[i], s, now);
            decisions.push(planned(r, in_band, Decision::Forget(r.id.clone(), f.reasons.join(", "), f.forget_score)));
        } else if score >= s.review_band_low - decay::EPS {
            if !in_band.contains(&r.id) {
                decisions.push(planned(r, in_band, Decision::Review(r.id.clone(), score)));
            }
        } else if in_band.contains(&r.id) {
            decisions.push(planned(r, in_band, Decision::LeaveBand(r.id.clone())));
        }
    }
    Ok(decisions)
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
                    apply_on_server(tx, &to_apply, s, run, now)?;
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

/// [`apply`] for a chunk of decisions on a team server: one call of the server's
/// `lethe_forget_chunk`, which checks the role and team once, stamps the server's clock (a
/// Lethe role's rows; the owner's keep `now`, as the triggers let them) and writes the soft deletes, review entries and exits and their events (the soft ones as the
/// policy's, naming `run`), with the same checks as [`apply`] and [`soft`] (a row no longer
/// active or now pinned is left alone, a memory already in the band gets no second event).
/// Every statement is a round trip (2–3 per decision one by one: 28–39 s instead of 9–11 s
/// at 100k). Purges, rare and many statements each, go one by one. The events keep the
/// decisions' order (ids made here, rows inserted in that order).
fn apply_on_server(
    tx: &crate::storage::db::Transaction,
    planned: &[&Planned],
    s: &Settings,
    run: &str,
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
    tx.prepare_cached("SELECT lethe_forget_chunk(?1, ?2, ?3, ?4)")?.query_row(
        params![serde_json::Value::Array(batch).to_string(), s.quarantine_days.round() as i64, run, time::format(now)],
        |r| r.get::<_, i64>(0),
    )?;
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
