//! The duplicates review: clusters of near-duplicates for a person to judge, and
//! the two decisions that are not a plain delete — keep both (dismiss the pair) and supersede
//! (the older by the newer).
//!
//! Clusters come from the scoring snapshot's links (the stored neighbour lists, docs/scores.md):
//! two active memories are near-duplicates when their similarity is above the setting
//! `duplicate_reason_above` (the same line above which a ForgetScore says "duplicate of"), and
//! a cluster is a connected group of such pairs. A memory superseded by another leaves recall,
//! so it leaves the review too. Its dominant member is the one the dominance rule keeps (it
//! carries no duplication): pinned, else more important, else more used, else older, else
//! written first.
//!
//! A dismissed pair (`lethe_dismissed_pair`, migration 008) is dropped from the snapshot's links
//! ([`crate::forgetting::Snapshot`]), so it is neither a cluster edge nor part of either
//! memory's duplication D any more: "keep both" means the policy stops counting one against the
//! other. `similar` still names the pair — it says what is alike, not what a person decided.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::collections::HashSet;

use crate::storage::db::{params, Connection, OptionalExtension};
use serde::Serialize;

use crate::audit;
use crate::error::{Error, Result};
use crate::forgetting::{self, Snapshot};
use crate::model::{self, Tier};
use crate::neighbours;
use crate::settings::Settings;
use crate::store::write_tx;
use crate::time::{self, Instant};

/// Clusters a review lists by default, and members shown per cluster.
pub const DEFAULT_LIMIT: usize = 50;
pub const MEMBERS_SHOWN: usize = 8;
/// Characters of each member's text in the review (the whole text is in the memory's detail).
pub const TEXT_CHARS: usize = 1200;

/// One memory of a cluster as the review shows it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ClusterMember {
    pub id: String,
    #[serde(rename = "type")]
    pub tier: Tier,
    /// The text, on one line, at most [`TEXT_CHARS`] characters.
    pub text: String,
    pub created_at: String,
    pub importance: f64,
    pub pinned: bool,
    pub forget_score: f64,
    pub would_forget: bool,
    /// Whether the dominance rule keeps this one (exactly one per cluster).
    pub dominant: bool,
    /// Similarity to the dominant member (its strongest link into the cluster when it has no
    /// direct link to the dominant one), and that link's kind: "same words" or "same meaning".
    pub similarity: f64,
    pub kind: String,
    /// Why it is a duplicate of the dominant member: the values and words both hold (plain
    /// text; `None` for the dominant member).
    pub evidence: Option<crate::sameness::Evidence>,
}

/// A connected group of near-duplicates.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Cluster {
    /// The dominant member's id (also `members[0]`).
    pub dominant: String,
    /// The largest similarity between two members.
    pub similarity: f64,
    /// How many memories the cluster has (members lists at most [`MEMBERS_SHOWN`]).
    pub size: usize,
    /// The dominant member first, then the others by similarity to it, most similar first.
    pub members: Vec<ClusterMember>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Clusters {
    /// Clusters in the file (the list holds at most the requested number).
    pub total: usize,
    /// The similarity a pair must be above (the setting `duplicate_reason_above`).
    pub threshold: f64,
    /// Most similar first; of equal ones, by the dominant member's id.
    pub items: Vec<Cluster>,
    /// Pairs that are alike but not the same memory, for a person to look at: never counted
    /// in duplication D, never acted on by the policy.
    pub related: RelatedPairs,
}

/// Memories compared pair by pair for the "related, not duplicates" list: the most recently
/// written active ones (a bounded window, so the review costs the same at any size).
pub const RELATED_WINDOW: usize = 200;
/// Closeness from which a pair that is not a duplicate is listed as related.
pub const RELATED_AT: f64 = 0.5;
/// Related pairs listed at most.
pub const RELATED_SHOWN: usize = 50;

/// One memory of a related pair.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RelatedMember {
    pub id: String,
    #[serde(rename = "type")]
    pub tier: Tier,
    /// The text, on one line, at most [`TEXT_CHARS`] characters.
    pub text: String,
    pub created_at: String,
    pub importance: f64,
    pub pinned: bool,
    /// Its ForgetScore at the review's instant: no part of it comes from the related pair.
    pub forget_score: f64,
    pub would_forget: bool,
}

/// Two memories close in meaning or words that the judgment does not call the same memory:
/// a possible update (the same statement with another value) or merely related.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RelatedPair {
    /// The one written first.
    pub older: RelatedMember,
    pub newer: RelatedMember,
    /// "possible update" or "related".
    pub kind: String,
    /// How close the two are (the judgment's closeness).
    pub closeness: f64,
    /// What both say and what differs (older → newer), in plain text.
    pub evidence: crate::sameness::Evidence,
}

/// The "related, not duplicates" list.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RelatedPairs {
    /// Memories compared (the most recently written active ones, at most [`RELATED_WINDOW`]).
    pub scanned: usize,
    /// Pairs found among them (the list holds at most [`RELATED_SHOWN`]).
    pub total: usize,
    /// The closeness a pair must reach.
    pub threshold: f64,
    /// Which judgment made them (with the sentence model, or words and values only).
    pub judgment: String,
    /// Possible updates first, then related; closest first within each.
    pub items: Vec<RelatedPair>,
}

/// A member's link: the other row, the similarity and its kind.
type Link = (u32, f64, u8);

/// The clusters of near-duplicates at `now` (dominance depends on usage, which decays), at most
/// `limit`. Reads only; the same snapshot and settings give the same clusters in the same order.
pub fn clusters(conn: &Connection, snap: &Snapshot, s: &Settings, now: Instant, limit: usize) -> Result<Clusters> {
    let threshold = s.duplicate_reason_above;
    let superseded = superseded_rows(conn, snap)?;
    let pairs: Vec<forgetting::Pair> = snap
        .pairs_above(threshold)
        .into_iter()
        .filter(|p| !superseded.contains(&p.0) && !superseded.contains(&p.1))
        .collect();
    let mut links = Links::of(snap.rows.len(), &pairs);
    let rows = &snap.rows;
    let groups = links.groups();
    let mut found: Vec<Ranked> = groups.into_iter().map(|g| links.ranked(rows, g, s, now)).collect();
    found.sort_by(|x, y| y.1.total_cmp(&x.1).then_with(|| rows[x.0 as usize].id.cmp(&rows[y.0 as usize].id)));
    let total = found.len();
    let scores = if total == 0 { Vec::new() } else { snap.scores(s, now) };
    let items = shown(conn, snap, s, &scores, found, limit)?;
    let related = related(conn, snap, s, now, &superseded)?;
    Ok(Clusters { total, threshold, items, related })
}

/// A cluster before it is read for people: its dominant row, its best similarity, and its
/// members as links to the dominant (the dominant first).
type Ranked = (u32, f64, Vec<Link>);

/// The pairs above the threshold as a graph: each row's links, and the cluster it falls in.
struct Links {
    /// Each row's links above the threshold, in one allocation (`adj[start[r]..start[r + 1]]`).
    start: Vec<u32>,
    adj: Vec<Link>,
    /// Union-find over row indices (vectors, not maps: at 100k memories the pairs above the
    /// threshold are in the hundreds of thousands).
    parent: Vec<u32>,
}

impl Links {
    fn of(n: usize, pairs: &[forgetting::Pair]) -> Links {
        let mut parent: Vec<u32> = (0..n as u32).collect();
        let mut degree = vec![0u32; n + 1];
        for &(a, b, _, _) in pairs {
            degree[a as usize + 1] += 1;
            degree[b as usize + 1] += 1;
            let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
            if ra != rb {
                parent[ra.max(rb) as usize] = ra.min(rb);
            }
        }
        for i in 0..n {
            degree[i + 1] += degree[i];
        }
        let start = degree;
        let mut fill = start.clone();
        let mut adj: Vec<Link> = vec![(0, 0.0, 0); pairs.len() * 2];
        for &(a, b, sim, kind) in pairs {
            adj[fill[a as usize] as usize] = (b, sim, kind);
            fill[a as usize] += 1;
            adj[fill[b as usize] as usize] = (a, sim, kind);
            fill[b as usize] += 1;
        }
        Links { start, adj, parent }
    }

    fn links_of(&self, r: u32) -> &[Link] {
        &self.adj[self.start[r as usize] as usize..self.start[r as usize + 1] as usize]
    }

    /// The rows with a link, grouped by cluster (clusters by their smallest row, members in
    /// row order).
    fn groups(&mut self) -> Vec<Vec<u32>> {
        let n = self.start.len() - 1;
        let mut grouped: Vec<(u32, u32)> = (0..n as u32)
            .filter(|&r| self.start[r as usize] != self.start[r as usize + 1])
            .map(|r| (find(&mut self.parent, r), r))
            .collect();
        grouped.sort_unstable();
        grouped.chunk_by(|x, y| x.0 == y.0).map(|g| g.iter().map(|&(_, r)| r).collect()).collect()
    }

    /// One group with the member that dominates the others first; each other member with its
    /// link to the dominant (or its strongest link when it has none), closest first.
    fn ranked(&self, rows: &[forgetting::Row], members: Vec<u32>, s: &Settings, now: Instant) -> Ranked {
        let dominant = members
            .iter()
            .copied()
            .reduce(|w, x| if forgetting::dominates(&rows[x as usize], &rows[w as usize], s, now) { x } else { w })
            .expect("a group has members");
        let mut best = 0.0f64;
        let mut list: Vec<Link> = members
            .iter()
            .filter(|&&m| m != dominant)
            .map(|&m| {
                let e = self.links_of(m);
                best = e.iter().fold(best, |b, x| b.max(x.1));
                let direct = e.iter().filter(|x| x.0 == dominant).max_by(|x, y| x.1.total_cmp(&y.1));
                let strongest = e.iter().max_by(|x, y| x.1.total_cmp(&y.1)).expect("a member has a link");
                let (_, sim, kind) = *direct.unwrap_or(strongest);
                (m, sim, kind)
            })
            .collect();
        list.sort_by(|x, y| y.1.total_cmp(&x.1).then_with(|| rows[x.0 as usize].id.cmp(&rows[y.0 as usize].id)));
        list.insert(0, (dominant, 1.0, neighbours::SAME_WORDS));
        (dominant, best, list)
    }
}

fn find(parent: &mut [u32], mut x: u32) -> u32 {
    while parent[x as usize] != x {
        let up = parent[parent[x as usize] as usize];
        parent[x as usize] = up;
        x = up;
    }
    x
}

/// The first `limit` clusters as people see them: each member's text, score and the evidence
/// of its sameness with the dominant. A memory deleted since the snapshot is left out, and a
/// cluster left with fewer than two members (or without its dominant) is not shown.
fn shown(
    conn: &Connection,
    snap: &Snapshot,
    s: &Settings,
    scores: &[f64],
    found: Vec<Ranked>,
    limit: usize,
) -> Result<Vec<Cluster>> {
    let rows = &snap.rows;
    let mut stmt = conn.prepare_cached(
        "SELECT content, created_at FROM memory_item WHERE rowid = ?1 AND id = ?2 AND COALESCE(is_deleted, 0) = 0",
    )?;
    let mut items = Vec::with_capacity(limit.min(found.len()));
    for (dominant, similarity, list) in found.into_iter().take(limit) {
        let size = list.len();
        let mut members = Vec::with_capacity(size.min(MEMBERS_SHOWN));
        let mut dominant_text: Option<String> = None;
        for (k, &(i, sim, kind)) in list.iter().take(MEMBERS_SHOWN).enumerate() {
            let r = &rows[i as usize];
            // Read in its own statement: a memory deleted since the snapshot is left out.
            let Some((content, created_at)) = stmt
                .query_row(params![r.rowid, r.id], |q| {
                    Ok((
                        model::lenient::text(q, 0)?.unwrap_or_default(),
                        model::lenient::text(q, 1)?.unwrap_or_default(),
                    ))
                })
                .optional()?
            else {
                continue;
            };
            let evidence = match &dominant_text {
                Some(d) if k > 0 => Some(crate::sameness::judge_texts(d, &content, None).evidence),
                _ => None,
            };
            if k == 0 {
                dominant_text = Some(content.clone());
            }
            members.push(ClusterMember {
                evidence,
                id: r.id.clone(),
                tier: r.tier,
                text: model::preview(&content, TEXT_CHARS),
                created_at,
                importance: r.importance,
                pinned: r.pinned,
                forget_score: scores[i as usize],
                would_forget: crate::decay::would_forget(scores[i as usize], s),
                dominant: k == 0,
                similarity: if k == 0 { 1.0 } else { sim },
                kind: if k == 0 { String::new() } else { neighbours::kind_name(kind).to_string() },
            });
        }
        if members.len() < 2 || !members[0].dominant {
            continue;
        }
        items.push(Cluster { dominant: rows[dominant as usize].id.clone(), similarity, size, members });
    }
    Ok(items)
}

/// The pairs among the most recently written active memories that are alike (closeness at
/// least [`RELATED_AT`]) and yet not the same memory. Superseded memories left recall and are
/// left out. Each pair is judged as `similar` judges it: word-bigram Jaccard, the cosine of the
/// stored vectors when the model is there, then the sameness judgment for the evidence.
fn related(
    conn: &Connection,
    snap: &Snapshot,
    s: &Settings,
    now: Instant,
    superseded: &HashSet<u32>,
) -> Result<RelatedPairs> {
    let mut window: Vec<u32> =
        (0..snap.rows.len() as u32).filter(|i| !snap.rows[*i as usize].is_deleted && !superseded.contains(i)).collect();
    window.sort_by_key(|&i| std::cmp::Reverse(snap.rows[i as usize].rowid));
    window.truncate(RELATED_WINDOW);
    let mut stmt = conn.prepare_cached(
        "SELECT content, created_at FROM memory_item WHERE rowid = ?1 AND id = ?2 AND COALESCE(is_deleted, 0) = 0",
    )?;
    // (row, content, created_at, shingles)
    let mut read: Vec<(u32, String, String, Vec<u64>)> = Vec::with_capacity(window.len());
    for &i in &window {
        let r = &snap.rows[i as usize];
        let got = stmt
            .query_row(params![r.rowid, r.id], |q| {
                Ok((model::lenient::text(q, 0)?.unwrap_or_default(), model::lenient::text(q, 1)?.unwrap_or_default()))
            })
            .optional()?;
        if let Some((content, created_at)) = got {
            let sh = crate::dedup::shingles(&content);
            read.push((i, content, created_at, sh));
        }
    }
    let ix = match crate::embed::shared() {
        Some(e) => Some(crate::semantic::index(conn, e)?),
        None => None,
    };
    let vector_of = |i: u32| -> Option<(&[i8], f32)> {
        let ix = ix.as_deref()?;
        let p = ix.position(snap.rows[i as usize].rowid)?;
        Some((&ix.data[p * crate::embed::DIMS..(p + 1) * crate::embed::DIMS], ix.inv_norms[p]))
    };
    let vectors: Vec<Option<(&[i8], f32)>> = read.iter().map(|x| vector_of(x.0)).collect();
    let mut found: Vec<(usize, usize, crate::sameness::Judgment)> = Vec::new();
    for a in 0..read.len() {
        for b in (a + 1)..read.len() {
            let j = crate::dedup::jaccard(&read[a].3, &read[b].3);
            let cos = match (vectors[a], vectors[b]) {
                (Some((qa, ia)), Some((qb, ib))) => Some(f64::from(crate::embed::cosine_q(qa, ia, qb, ib))),
                _ => None,
            };
            if crate::sameness::closeness_at_most(j, cos) < RELATED_AT {
                continue;
            }
            // Older first: the window is newest first, so `b` was written before `a`.
            let judged = crate::sameness::judge(
                crate::sameness::known(&read[b].1).profile(),
                crate::sameness::known(&read[a].1).profile(),
                j,
                cos,
            );
            if judged.kind != crate::sameness::Kind::Duplicate && judged.closeness >= RELATED_AT {
                found.push((b, a, judged));
            }
        }
    }
    let rank = |k: crate::sameness::Kind| u8::from(k != crate::sameness::Kind::PossibleUpdate);
    let rows = &snap.rows;
    found.sort_by(|x, y| {
        rank(x.2.kind)
            .cmp(&rank(y.2.kind))
            .then(y.2.closeness.total_cmp(&x.2.closeness))
            .then_with(|| rows[read[x.0].0 as usize].id.cmp(&rows[read[y.0].0 as usize].id))
            .then_with(|| rows[read[x.1].0 as usize].id.cmp(&rows[read[y.1].0 as usize].id))
    });
    let total = found.len();
    let scores = if total == 0 { Vec::new() } else { snap.scores(s, now) };
    let member = |k: usize| {
        let (i, content, created_at, _) = &read[k];
        let r = &rows[*i as usize];
        let score = scores[*i as usize];
        RelatedMember {
            id: r.id.clone(),
            tier: r.tier,
            text: model::preview(content, TEXT_CHARS),
            created_at: created_at.clone(),
            importance: r.importance,
            pinned: r.pinned,
            forget_score: score,
            would_forget: crate::decay::would_forget(score, s),
        }
    };
    let items = found
        .into_iter()
        .take(RELATED_SHOWN)
        .map(|(older, newer, j)| RelatedPair {
            older: member(older),
            newer: member(newer),
            kind: j.kind.name().to_string(),
            closeness: j.closeness,
            evidence: j.evidence,
        })
        .collect();
    Ok(RelatedPairs { scanned: read.len(), total, threshold: RELATED_AT, judgment: crate::sameness::judgment(), items })
}

/// Rows of the snapshot that another memory supersedes (they left recall).
fn superseded_rows(conn: &Connection, snap: &Snapshot) -> Result<HashSet<u32>> {
    let mut stmt = conn.prepare_cached("SELECT DISTINCT old_id FROM lethe_supersede")?;
    let old: HashSet<String> = stmt.query_map([], |r| r.get(0))?.collect::<std::result::Result<_, _>>()?;
    if old.is_empty() {
        return Ok(HashSet::new());
    }
    Ok(snap.rows.iter().enumerate().filter(|(_, r)| old.contains(&r.id)).map(|(i, _)| i as u32).collect())
}

/// The ordered key of a pair.
fn ordered<'a>(a: &'a str, b: &'a str) -> (&'a str, &'a str) {
    if a < b {
        (a, b)
    } else {
        (b, a)
    }
}

/// What "keep both" did.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Dismissal {
    /// The pair, ordered (`a < b`).
    pub a: String,
    pub b: String,
    /// False when the pair was already dismissed (nothing was written).
    pub dismissed: bool,
    pub actor: String,
    pub at: String,
}

/// Checks that `id` names a memory in the file and returns whether it is active.
fn existing(conn: &Connection, id: &str) -> Result<bool> {
    let deleted: Option<bool> = conn
        .prepare_cached("SELECT COALESCE(is_deleted, 0) FROM memory_item WHERE id = ?1")?
        .query_row([id], |r| model::lenient::flag(r, 0))
        .optional()?;
    match deleted {
        None => Err(Error::NotFound(format!("memory {id}"))),
        Some(d) => Ok(!d),
    }
}

fn distinct(a: &str, b: &str) -> Result<()> {
    if a == b {
        return Err(Error::invalid(format!("a pair needs two different memories, got {a} twice")));
    }
    Ok(())
}

/// Marks the change of both memories in the change journal, so every window (and the scoring
/// snapshot it caches) reads them again.
/// On a team store the journal is written by the server's function only (it checks that the
/// memory is the caller's team's).
fn journal(tx: &Connection, ids: [&str; 2], kind: &str) -> Result<()> {
    if tx.is_postgres() {
        let mut stmt = tx.prepare_cached("SELECT lethe_journal(?1, ?2)::TEXT")?;
        for id in ids {
            stmt.query_row(params![id, kind], |r| r.get::<_, Option<String>>(0))?;
        }
        return Ok(());
    }
    let mut stmt = tx.prepare_cached("INSERT INTO lethe_change (memory_id, kind) VALUES (?1, ?2)")?;
    for id in ids {
        stmt.execute(params![id, kind])?;
    }
    Ok(())
}

/// "Keep both": the pair is no longer a near-duplicate for the review or for duplication D.
/// Idempotent (a second call writes nothing and says so); audited on both memories as
/// `keep_both`. An unknown id is `not_found` and the same id twice `invalid_input`, with
/// nothing written.
pub fn dismiss(conn: &mut Connection, a: &str, b: &str, actor: &str, now: Instant) -> Result<Dismissal> {
    model::validate_actor(actor)?;
    distinct(a, b)?;
    let (a, b) = ordered(a, b);
    write_tx(conn, |tx| {
        existing(tx, a)?;
        existing(tx, b)?;
        let at = time::format(now);
        let n = if tx.is_postgres() {
            // The team store's function writes the pair, its `keep_both` actions and the journal,
            // under the role's name at the server's clock.
            crate::ops::rows::server_write(
                tx,
                "SELECT lethe_pair_dismiss(?1, ?2, ?3, ?4, ?5)",
                params![a, b, actor, crate::actor::via_of(actor), at],
            )? as usize
        } else {
            tx.prepare_cached(
                "INSERT OR IGNORE INTO lethe_dismissed_pair (a_id, b_id, actor, created_at) VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![a, b, actor, at])?
        };
        if n > 0 && tx.is_postgres() {
            return Ok(Dismissal { a: a.into(), b: b.into(), dismissed: true, actor: actor.into(), at });
        }
        if n == 0 {
            let (actor, at): (String, String) = tx.query_row(
                "SELECT actor, created_at FROM lethe_dismissed_pair WHERE a_id = ?1 AND b_id = ?2",
                [a, b],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            return Ok(Dismissal { a: a.into(), b: b.into(), dismissed: false, actor, at });
        }
        for (id, other) in [(a, b), (b, a)] {
            audit::record_action(
                tx,
                Some(id),
                "keep_both",
                actor,
                None,
                Some(&serde_json::json!({ "kept_with": other })),
                now,
            )?;
        }
        journal(tx, [a, b], "dismiss")?;
        Ok(Dismissal { a: a.into(), b: b.into(), dismissed: true, actor: actor.into(), at })
    })
}

/// The dismissed pairs of the file (empty before migration 008 ran, e.g. read-only).
pub fn dismissed_pairs(conn: &Connection) -> Result<Vec<(String, String)>> {
    if !crate::store::table_exists(conn, "lethe_dismissed_pair")? {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare_cached("SELECT a_id, b_id FROM lethe_dismissed_pair ORDER BY a_id, b_id")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect::<std::result::Result<_, _>>()
}

/// What "supersede" did: `old` (the older of the two) is superseded by `new`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Superseded {
    pub old: String,
    pub new: String,
    /// False when `new` already superseded `old` (nothing was written).
    pub superseded: bool,
}

/// The order of age of a memory: created first, else written first.
fn age_order(conn: &Connection, id: &str) -> Result<(i64, i64)> {
    let (created, rowid): (Option<String>, i64) =
        conn.query_row("SELECT created_at, rowid FROM memory_item WHERE id = ?1", [id], |r| {
            Ok((model::lenient::text(r, 0)?, r.get(1)?))
        })?;
    let ms = time::parse_opt(created.as_deref()).map_or(i64::MAX, |t| t.timestamp_millis());
    Ok((ms, rowid))
}

/// Supersedes the older of two active memories by the newer (older: created first, else
/// written first), through the one supersede path (`remember --supersedes` writes the same
/// link and audit row): the older leaves recall and stays visible with the link. Both must be
/// active; an unknown id is `not_found`, a quarantined one or the same id twice
/// `invalid_input`, and nothing is written then.
pub fn supersede(conn: &mut Connection, a: &str, b: &str, actor: &str, now: Instant) -> Result<Superseded> {
    model::validate_actor(actor)?;
    distinct(a, b)?;
    // An agent may not supersede a memory a person pinned: the older of the two, checked
    // before the write (a refusal is audited in a transaction of its own).
    if let (false, Ok(age_a), Ok(age_b)) = (crate::actor::is_person(actor), age_order(conn, a), age_order(conn, b)) {
        let older = if age_a <= age_b { a } else { b };
        crate::ops::pins::refuse_agent_on_person_pin(conn, older, actor, crate::ops::pins::Attempt::Supersede, now)?;
    }
    write_tx(conn, |tx| {
        for id in [a, b] {
            if !existing(tx, id)? {
                return Err(Error::invalid(format!(
                    "memory {id} is in quarantine and cannot take part in a supersede"
                )));
            }
        }
        let (old, new) = if age_order(tx, a)? <= age_order(tx, b)? { (a, b) } else { (b, a) };
        let already: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM lethe_supersede WHERE old_id = ?1 AND new_id = ?2)",
            [old, new],
            |r| r.get(0),
        )?;
        if already {
            return Ok(Superseded { old: old.into(), new: new.into(), superseded: false });
        }
        let cycle: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM lethe_supersede WHERE old_id = ?1 AND new_id = ?2)",
            [new, old],
            |r| r.get(0),
        )?;
        if cycle {
            return Err(Error::invalid(format!("memory {old} already supersedes {new}")));
        }
        crate::lifecycle::link_supersede_tx(tx, old, new, actor, now)?;
        journal(tx, [old, new], "supersede")?;
        Ok(Superseded { old: old.into(), new: new.into(), superseded: true })
    })
}
