//! What the snapshot shows without writing: pages of memories, statistics, the quarantine,
//! and what another policy would forget.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use super::*;

/// Sort orders of [`list`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename_all = "lowercase"))]
pub enum SortBy {
    #[default]
    Created,
    Importance,
    Score,
    /// By who wrote it first (the audit's `remember`), A to Z; memories whose writer the
    /// audit does not name last; the newest first within one writer.
    #[cfg_attr(feature = "ts", ts(rename = "written_by"))]
    WrittenBy,
    /// The most recently used first (the later of its last view or cite and its last
    /// recall); memories never used last, the newest first among them.
    #[cfg_attr(feature = "ts", ts(rename = "last_used"))]
    LastUsed,
}

impl std::str::FromStr for SortBy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "created" => Ok(SortBy::Created),
            "importance" => Ok(SortBy::Importance),
            "score" => Ok(SortBy::Score),
            "written_by" => Ok(SortBy::WrittenBy),
            "last_used" => Ok(SortBy::LastUsed),
            o => Err(Error::invalid(format!(
                "unknown sort {o:?} (expected score, created, importance, written_by or last_used)"
            ))),
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
    /// Only memories with this `source` (`claude-code`, `tool`…), compared exactly.
    pub source: Option<String>,
    /// Only these memories (a list another part of the engine chose, such as a health list).
    pub only: Option<HashSet<String>>,
    pub limit: usize,
    pub offset: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Page {
    pub total: usize,
    pub items: Vec<MemoryRow>,
}

/// Pages of memories, filtered and sorted, each item with its score at `now`.
pub fn list(conn: &Connection, snap: &Snapshot, q: &ListQuery, s: &Settings, now: Instant) -> Result<Page> {
    // Every row's score only when the filter or the order needs it; otherwise the page's rows
    // are scored one by one (a scroll of the Memories view at 100k: ~35 ms less per page).
    let all = q.sort == SortBy::Score || q.min_score.is_some() || q.max_score.is_some();
    let scores = if all { snap.scores(s, now) } else { Vec::new() };
    let filter = Filter::read(conn, q)?;
    let mut idx: Vec<usize> = (0..snap.rows.len()).filter(|&i| filter.keeps(q, &snap.rows[i], i, &scores)).collect();
    let order = Order::read(conn, q.sort, &snap.rows)?;
    let total = idx.len();
    let limit = if q.limit == 0 { 50 } else { q.limit.min(10_000) };
    let page = page_of(&mut idx, q.offset, limit, |a, b| order.cmp(&snap.rows, &scores, *a, *b));
    let score = |i: usize| if all { scores[i] } else { snap.score_at(i, s, now) };
    let items = page_rows(conn, &snap.rows, page, score, s)?;
    Ok(Page { total, items })
}

/// What a list's filter reads besides the snapshot: the sets of memories a filter names.
struct Filter {
    redacted: Option<HashSet<i64>>,
    dialogue: Option<HashSet<i64>>,
    written: Option<HashSet<String>>,
    source: Option<HashSet<i64>>,
}

impl Filter {
    fn read(conn: &Connection, q: &ListQuery) -> Result<Filter> {
        let redacted = match q.redacted {
            Some(true) => Some(crate::scan::redacted_rowids(conn)?),
            _ => None,
        };
        let dialogue = match q.needs_extraction {
            Some(true) => Some(crate::dialogue::flagged_rowids(conn)?),
            _ => None,
        };
        let written = match q.written_by.as_deref() {
            Some(actor) => Some(
                conn.prepare_cached(
                    "SELECT memory_id FROM lethe_action WHERE action = 'remember' AND actor = ?1 AND memory_id IS NOT NULL",
                )?
                .query_map([actor], |r| r.get(0))?
                .collect::<std::result::Result<_, _>>()?,
            ),
            None => None,
        };
        let source = match q.source.as_deref() {
            Some(source) => Some(
                conn.prepare_cached("SELECT rowid FROM memory_item WHERE source = ?1")?
                    .query_map([source], |r| r.get(0))?
                    .collect::<std::result::Result<_, _>>()?,
            ),
            None => None,
        };
        Ok(Filter { redacted, dialogue, written, source })
    }

    /// Whether row `i` (`r`) passes `q`; `scores` holds every row's score when `q` filters by it.
    fn keeps(&self, q: &ListQuery, r: &Row, i: usize, scores: &[f64]) -> bool {
        r.is_deleted == q.deleted.unwrap_or(false)
            && q.tier.is_none_or(|t| t == r.tier)
            && q.pinned.is_none_or(|p| p == r.pinned)
            && q.session.as_deref().is_none_or(|v| r.session_id.as_deref() == Some(v))
            && q.project.as_deref().is_none_or(|v| r.project_id.as_deref() == Some(v))
            && q.min_score.is_none_or(|m| scores[i] >= m)
            && q.max_score.is_none_or(|m| scores[i] <= m)
            && self.redacted.as_ref().is_none_or(|set| set.contains(&r.rowid))
            && self.dialogue.as_ref().is_none_or(|set| set.contains(&r.rowid))
            && self.written.as_ref().is_none_or(|set| set.contains(&r.id))
            && self.source.as_ref().is_none_or(|set| set.contains(&r.rowid))
            && q.only.as_ref().is_none_or(|set| set.contains(&r.id))
    }
}

/// A list's order with what it reads besides the snapshot: the writers and last uses of every
/// memory, read once when the order needs them.
struct Order {
    by: SortBy,
    writers: HashMap<String, String>,
    used: Vec<Option<Instant>>,
}

impl Order {
    fn read(conn: &Connection, by: SortBy, rows: &[Row]) -> Result<Order> {
        let writers = if by == SortBy::WrittenBy { first_writers(conn)? } else { HashMap::new() };
        let used = if by == SortBy::LastUsed {
            let recalled = last_recalls(conn)?;
            rows.iter().map(|r| r.last_accessed.into_iter().chain(recalled.get(&r.id).copied()).max()).collect()
        } else {
            Vec::new()
        };
        Ok(Order { by, writers, used })
    }

    /// Each order is total (ties go by rowid), so the page is the same as after a full sort.
    fn cmp(&self, rows: &[Row], scores: &[f64], a: usize, b: usize) -> std::cmp::Ordering {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let newest = || rows[b].created_at.cmp(&rows[a].created_at).then(rows[b].rowid.cmp(&rows[a].rowid));
        match self.by {
            SortBy::Score => scores[b].total_cmp(&scores[a]).then(rows[a].rowid.cmp(&rows[b].rowid)),
            SortBy::Created => newest(),
            SortBy::Importance => {
                rows[b].importance.total_cmp(&rows[a].importance).then(rows[a].rowid.cmp(&rows[b].rowid))
            }
            // `None` last in both: a known writer or use before an unknown one.
            SortBy::WrittenBy => match (self.writers.get(&rows[a].id), self.writers.get(&rows[b].id)) {
                (Some(x), Some(y)) => x.cmp(y),
                (Some(_), None) => Less,
                (None, Some(_)) => Greater,
                (None, None) => Equal,
            }
            .then_with(newest),
            SortBy::LastUsed => match (self.used[a], self.used[b]) {
                (Some(x), Some(y)) => y.cmp(&x),
                (Some(_), None) => Less,
                (None, Some(_)) => Greater,
                (None, None) => Equal,
            }
            .then_with(newest),
        }
    }
}

/// The rows of one page as the list shows them: text, writer, last use and score.
fn page_rows(
    conn: &Connection,
    rows: &[Row],
    page: &[usize],
    score: impl Fn(usize) -> f64,
    s: &Settings,
) -> Result<Vec<MemoryRow>> {
    let mut stmt = conn.prepare_cached("SELECT content, workflow_name, tags FROM memory_item WHERE rowid = ?1")?;
    // The page's writers and recalls: one indexed read per row of the page, never per memory.
    let mut writer = conn.prepare_cached(
        "SELECT actor FROM lethe_action WHERE memory_id = ?1 AND action = 'remember' ORDER BY id LIMIT 1",
    )?;
    let mut recalled = conn.prepare_cached("SELECT last_recalled_at FROM meta_memory_stats WHERE memory_id = ?1")?;
    let mut items = Vec::with_capacity(page.len());
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
    Ok(items)
}

/// Who wrote each memory first: the actor of its first `remember` in the audit.
fn first_writers(conn: &Connection) -> Result<HashMap<String, String>> {
    let mut out: HashMap<String, String> = HashMap::new();
    let mut stmt = conn.prepare_cached(
        "SELECT memory_id, actor FROM lethe_action WHERE action = 'remember' AND memory_id IS NOT NULL \
         AND actor IS NOT NULL ORDER BY id",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    for row in rows {
        let (id, actor) = row?;
        out.entry(id).or_insert(actor);
    }
    Ok(out)
}

/// Each recalled memory's last recall.
fn last_recalls(conn: &Connection) -> Result<HashMap<String, Instant>> {
    let mut stmt = conn.prepare_cached(
        "SELECT memory_id, last_recalled_at FROM meta_memory_stats WHERE last_recalled_at IS NOT NULL",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?)))?;
    let mut out = HashMap::new();
    for row in rows {
        let (id, at) = row?;
        if let Some(at) = time::parse_opt(at.as_deref()) {
            out.insert(id, at);
        }
    }
    Ok(out)
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
    /// How many memories the next forget run would quarantine: those at or above the
    /// threshold and the working-memory gate's (what a dry run would list now).
    pub next_run: usize,
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
        next_run: super::batch::next_run_count(snap, &scores, s, now),
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
        let days_left = quarantine_days_left(s, now, deleted_at.as_deref(), event_at.as_deref());
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
            days_left,
            deleted_by,
            policy,
        });
    }
    Ok(out)
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

/// Days left before the purge: the quarantine began at the later of `deleted_at` and the
/// newest soft event, as `audit::quarantined_since` says (the purge counts from the same instant).
pub fn quarantine_days_left(s: &Settings, now: Instant, deleted_at: Option<&str>, event_at: Option<&str>) -> f64 {
    let since = match (time::parse_opt(deleted_at), time::parse_opt(event_at)) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
    .map(|t| time::days_between(t, now))
    .unwrap_or(0.0);
    (s.quarantine_days - since).max(0.0)
}
