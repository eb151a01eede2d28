//! Stored sentence vectors (`lethe_vector`): written with the memory in the same transaction,
//! back-filled for rows another program (memento, an older Lethe) wrote, scanned exactly for
//! recall and for `similar`. Only vectors of the loaded model's fingerprint are ever read.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::sync::{Arc, Mutex};

use crate::storage::db::{params, Connection, Transaction};
use serde::Serialize;

use crate::embed::{self, Embedder, Vector, DIMS};
use crate::error::{Error, Result};
use crate::model::Tier;

/// Stores the vector of `content` for `memory_id` (in the caller's transaction).
pub fn store(tx: &Transaction, e: &Embedder, memory_id: &str, content: &str) -> Result<()> {
    store_vector(tx, e.fingerprint(), memory_id, &e.embed(content))
}

/// Re-embeds a memory whose content the caller just changed (when a model is loaded).
pub fn refresh(tx: &Transaction, memory_id: &str, content: &str) -> Result<()> {
    match embed::shared() {
        Some(e) => store(tx, e, memory_id, content),
        None => Ok(()),
    }
}

/// The team store's statement for one vector (`?1` the memory's id, `?2` the model, `?3` the
/// bytes): the server's function, which checks that the memory is the caller's team's and the
/// vector the model's size, and never rewrites a stored vector of the same model (a change of
/// text drops it first). Lethe's roles hold no write right on the table there.
pub(crate) const VECTOR_ON_SERVER: &str =
    "SELECT lethe_vectors_store(json_build_array(json_build_array(?1::TEXT, ?2::TEXT, encode(?3::BYTEA, 'hex')))::TEXT)";

pub fn store_vector(tx: &Transaction, fingerprint: &str, memory_id: &str, v: &Vector) -> Result<()> {
    let sql = if tx.is_postgres() {
        VECTOR_ON_SERVER
    } else {
        "INSERT OR REPLACE INTO lethe_vector (memory_id, model, vec) VALUES (?1, ?2, ?3)"
    };
    tx.prepare_cached(sql)?.execute(params![memory_id, fingerprint, v.to_bytes()])?;
    Ok(())
}

/// How many memories have no vector of this model yet (a row without an id, another
/// program's and reported as mistyped, never gets one).
pub fn pending(conn: &Connection, e: &Embedder) -> Result<usize> {
    let n: i64 = conn.query_row(
        "SELECT COUNT(*) FROM memory_item m LEFT JOIN lethe_vector v ON v.memory_id = m.id AND v.model = ?1 \
         WHERE v.memory_id IS NULL AND m.id IS NOT NULL",
        [e.fingerprint()],
        |r| r.get(0),
    )?;
    Ok(n as usize)
}

/// Embeds every memory that has no vector of this model (written by another program, or by
/// Lethe with another model or none), in transactions of `CHUNK` memories, so that an
/// interrupted back-fill resumes where it stopped. `progress(done, total)` after each chunk;
/// returns how many were embedded. Vectors of another model are replaced.
pub fn backfill(
    conn: &mut Connection,
    e: &Embedder,
    mut progress: impl FnMut(usize, usize),
    cancel: &std::sync::atomic::AtomicBool,
) -> Result<usize> {
    const CHUNK: usize = 2_000;
    let total = pending(conn, e)?;
    if total == 0 {
        return Ok(0);
    }
    let mut done = 0;
    // Each chunk starts after the last row of the one before (the rows before it are done),
    // so the back-fill reads every memory once instead of once per chunk.
    let mut after: i64 = i64::MIN;
    loop {
        if cancel.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(done);
        }
        let batch: Vec<(i64, String, String)> = {
            let mut stmt = conn.prepare_cached(
                "SELECT m.rowid, m.id, CAST(m.content AS TEXT) FROM memory_item m \
                 LEFT JOIN lethe_vector v ON v.memory_id = m.id AND v.model = ?1 \
                 WHERE m.rowid > ?3 AND v.memory_id IS NULL AND m.id IS NOT NULL ORDER BY m.rowid LIMIT ?2",
            )?;
            let rows = stmt
                .query_map(params![e.fingerprint(), CHUNK as i64, after], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            rows.collect::<std::result::Result<_, _>>()?
        };
        let Some(last) = batch.last() else { return Ok(done) };
        after = last.0;
        let texts: Vec<String> = batch.iter().map(|(_, _, c)| c.clone()).collect();
        let vecs = e.embed_many(&texts);
        crate::store::write_tx(conn, |tx| {
            for ((_, id, _), v) in batch.iter().zip(&vecs) {
                store_vector(tx, e.fingerprint(), id, v)?;
            }
            Ok(())
        })?;
        done += batch.len();
        progress(done.min(total), total.max(done));
    }
}

/// The active memories' vectors of one model, in memory, for exact scans.
#[derive(Debug, Default, Clone)]
pub struct VectorIndex {
    pub fingerprint: String,
    pub rowids: Vec<i64>,
    pub tiers: Vec<Tier>,
    pub pinned: Vec<bool>,
    pub inv_norms: Vec<f32>,
    /// `rowids.len() × DIMS` bytes.
    pub data: Vec<i8>,
    /// Each row's sign bits (`DIMS / 64` words a row) for the approximate scan of
    /// `remember`'s write-time `similar` ([`top_approx`](Self::top_approx)); built by [`index`]
    /// once a process has scanned one file's index `SIGNS_AFTER` times.
    signs: Option<Vec<u64>>,
    /// Each rowid's position, built on first use by [`position`](Self::position) and dropped
    /// whenever rows move.
    positions: std::sync::OnceLock<rustc_hash::FxHashMap<i64, u32>>,
}

/// The sign bits of a quantised vector. The Hamming distance of two sign sets estimates the
/// angle between the vectors (a random hyperplane separates them with probability θ/π), at a
/// few instructions instead of a 256-component dot product.
type Signs = [u64; DIMS / 64];

fn signs(q: &[i8]) -> Signs {
    let mut s = [0u64; DIMS / 64];
    for (i, &x) in q.iter().enumerate() {
        if x > 0 {
            s[i / 64] |= 1 << (i % 64);
        }
    }
    s
}

/// Rows the Hamming prefilter keeps per wanted neighbour, before the exact rescoring.
pub const PREFILTER_PER_RESULT: usize = 12;
/// Below this many rows the exact scan is cheap enough (≈ 0.1 ms).
pub const SIGNS_MIN: usize = 4096;
/// Scans of one file's index by one process before the sign bits are built: a server, the
/// window or a bulk writer scans again and again; a one-shot CLI command scans once (≈ 3 ms
/// at 100k, exact).
pub const SIGNS_AFTER: usize = 8;

impl VectorIndex {
    pub fn load(conn: &Connection, fingerprint: &str) -> Result<VectorIndex> {
        let mut ix = VectorIndex { fingerprint: fingerprint.to_string(), ..Default::default() };
        // In rowid order on both backends: k-means trains on an evenly spaced sample of the
        // index, so its buckets must not depend on the order a join happens to return.
        let mut stmt = conn.prepare_cached(
            "SELECT m.rowid, m.type, m.pinned, v.vec FROM lethe_vector v JOIN memory_item m ON m.id = v.memory_id \
             WHERE v.model = ?1 AND COALESCE(m.is_deleted, 0) = 0 ORDER BY m.rowid",
        )?;
        let mut rows = stmt.query([fingerprint])?;
        while let Some(r) = rows.next()? {
            let Ok(tier) = r.get_ref(1)?.as_str().unwrap_or("").parse::<Tier>() else { continue };
            let Some(v) = Vector::from_bytes(r.get_ref(3)?.as_blob().unwrap_or(&[])) else { continue };
            ix.rowids.push(r.get(0)?);
            ix.tiers.push(tier);
            ix.pinned.push(crate::model::lenient::flag(&r, 2)?);
            ix.inv_norms.push(v.inv_norm);
            ix.data.extend_from_slice(&v.q);
        }
        Ok(ix)
    }

    pub fn len(&self) -> usize {
        self.rowids.len()
    }

    /// Where the memory at `rowid` is held (`None` when it has no vector of this model or is
    /// deleted).
    pub fn position(&self, rowid: i64) -> Option<usize> {
        let map = self.positions.get_or_init(|| self.rowids.iter().enumerate().map(|(p, &r)| (r, p as u32)).collect());
        map.get(&rowid).map(|&p| p as usize)
    }

    /// Cosine of `q` with the row at `position`.
    pub fn cosine_at(&self, q: &Vector, position: usize) -> f32 {
        embed::cosine_q(&q.q, q.inv_norm, &self.data[position * DIMS..(position + 1) * DIMS], self.inv_norms[position])
    }

    pub fn is_empty(&self) -> bool {
        self.rowids.is_empty()
    }

    /// The `k` rows most similar to `q` (cosine, best first) among those `keep` accepts.
    /// Ties go to the lower position. Rows above a floor are gathered; whenever `2k` are,
    /// the best `k` are selected (`select_nth_unstable`) and the floor rises to the worst of
    /// them. (A heap of the best `k` spent a sixth of a recall at 10k in its pops.)
    pub fn top(&self, q: &Vector, k: usize, keep: impl Fn(usize) -> bool) -> Vec<(usize, f32)> {
        if k == 0 {
            return Vec::new();
        }
        // Best first: higher cosine, then lower position.
        let order = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        let mut dots = Vec::new();
        embed::dots(&q.q, &self.data, &mut dots);
        let full = k.saturating_mul(2);
        let mut best: Vec<(usize, f32)> = Vec::with_capacity(full.min(dots.len()));
        // Once `best` has held k rows, a row must beat the worst of the k best kept then: an
        // equal cosine at a later position never does.
        let mut floor: Option<f32> = None;
        for (i, &d) in dots.iter().enumerate() {
            let c = d as f32 * q.inv_norm * self.inv_norms[i];
            if floor.is_some_and(|f| c.total_cmp(&f).is_le()) || !keep(i) {
                continue;
            }
            best.push((i, c));
            if best.len() == full {
                best.select_nth_unstable_by(k - 1, order);
                best.truncate(k);
                floor = Some(best[k - 1].1);
            }
        }
        best.sort_unstable_by(order);
        best.truncate(k);
        best
    }

    /// Like [`top`](Self::top), but approximate once the sign bits exist (exact before):
    /// only the `PREFILTER_PER_RESULT × k` rows nearest by the Hamming distance of their signs
    /// (and those tied with the last of them) are scored exactly. Measured against the exact
    /// scan in `tests/duplication.rs` (neighbours above the write-time threshold found).
    pub fn top_approx(&self, q: &Vector, k: usize, keep: impl Fn(usize) -> bool) -> Vec<(usize, f32)> {
        let Some(all) = &self.signs else { return self.top(q, k, keep) };
        let mut dist = Vec::new();
        embed::hammings(&signs(&q.q), all, &mut dist);
        let m = k.saturating_mul(PREFILTER_PER_RESULT);
        let mut count = [0usize; DIMS + 1];
        for &d in &dist {
            count[usize::from(d).min(DIMS)] += 1;
        }
        let (mut within, mut cut) = (0, DIMS as u16);
        for (d, n) in count.iter().enumerate() {
            within += n;
            if within >= m {
                cut = d as u16;
                break;
            }
        }
        // In position order, so that ties go to the lower position as in `top`.
        let near = dist.iter().enumerate().filter(|(_, d)| **d <= cut);
        let mut best: Vec<(usize, f32)> = Vec::with_capacity(k + 1);
        for (i, _) in near {
            let row = &self.data[i * DIMS..(i + 1) * DIMS];
            let s = embed::dot_q(&q.q, row) as f32 * q.inv_norm * self.inv_norms[i];
            if (best.len() == k && s <= best[k - 1].1) || !keep(i) {
                continue;
            }
            let at = best.partition_point(|&(_, x)| x >= s);
            best.insert(at, (i, s));
            best.truncate(k);
        }
        best
    }

    pub fn has_signs(&self) -> bool {
        self.signs.is_some()
    }

    /// Builds the sign bits now (when there are at least `SIGNS_MIN` rows).
    pub fn build_signs(&mut self) {
        if self.len() >= SIGNS_MIN {
            self.signs = Some(self.data.chunks_exact(DIMS).flat_map(signs).collect());
        }
    }
}

/// One index per process and file, brought up to date when the file's memories or vectors
/// changed.
struct Cached {
    path: String,
    key: (i64, i64),
    /// On a team store, where the index is in the change journal, late commits included (an
    /// SQLite file hands out its numbers in commit order: the key says it all).
    journal: Option<crate::storage::journal::Journal>,
    index: Arc<VectorIndex>,
    /// Scans served from this file's index so far (see `SIGNS_AFTER`).
    scans: usize,
}

static CACHE: Mutex<Option<Cached>> = Mutex::new(None);

/// What invalidates the index: the change journal (memories written, deleted, restored) and
/// the newest vector row (a back-fill writes vectors without touching memories).
pub(crate) fn cache_key(conn: &Connection) -> Result<(i64, i64)> {
    Ok((
        crate::store::last_change_seq(conn)?,
        conn.prepare_cached("SELECT COALESCE(MAX(rowid), 0) FROM lethe_vector")?.query_row([], |r| r.get(0))?,
    ))
}

impl VectorIndex {
    /// Reloads the rows of the memories in `ids` and of vectors stored after `vector_rowid`.
    fn apply(&mut self, conn: &Connection, ids: &[String], vector_rowid: i64) -> Result<()> {
        let mut rowids: Vec<i64> = Vec::new();
        let mut by_id = conn.prepare_cached("SELECT rowid FROM memory_item WHERE id = ?1")?;
        for id in ids {
            if let Ok(r) = by_id.query_row([id], |r| r.get::<_, i64>(0)) {
                rowids.push(r);
            }
        }
        let mut newer = conn.prepare_cached(
            "SELECT m.rowid FROM lethe_vector v JOIN memory_item m ON m.id = v.memory_id WHERE v.rowid > ?1",
        )?;
        for r in newer.query_map([vector_rowid], |r| r.get::<_, i64>(0))? {
            rowids.push(r?);
        }
        rowids.sort_unstable();
        rowids.dedup();
        self.positions = std::sync::OnceLock::new();
        // Deleted memories' rows are found by position: every row of a changed memory leaves,
        // and the changed memories that are active with a vector come back.
        // A memory written since has a rowid above every row held: nothing of it to remove,
        // so a write costs no pass over the index.
        let newest = self.rowids.iter().copied().max().unwrap_or(i64::MIN);
        let gone: std::collections::HashSet<i64> = rowids.iter().copied().filter(|&r| r <= newest).collect();
        let start = if gone.is_empty() { self.rowids.len() } else { 0 };
        let mut keep = start;
        for i in start..self.rowids.len() {
            if gone.contains(&self.rowids[i]) {
                continue;
            }
            if keep != i {
                self.rowids[keep] = self.rowids[i];
                self.tiers[keep] = self.tiers[i];
                self.pinned[keep] = self.pinned[i];
                self.inv_norms[keep] = self.inv_norms[i];
                self.data.copy_within(i * DIMS..(i + 1) * DIMS, keep * DIMS);
                if let Some(signs) = &mut self.signs {
                    signs.copy_within(i * DIMS / 64..(i + 1) * DIMS / 64, keep * DIMS / 64);
                }
            }
            keep += 1;
        }
        self.rowids.truncate(keep);
        self.tiers.truncate(keep);
        self.pinned.truncate(keep);
        self.inv_norms.truncate(keep);
        self.data.truncate(keep * DIMS);
        if let Some(signs) = &mut self.signs {
            signs.truncate(keep * DIMS / 64);
        }
        let mut one = conn.prepare_cached(
            "SELECT m.type, m.pinned, v.vec FROM lethe_vector v JOIN memory_item m ON m.id = v.memory_id \
             WHERE m.rowid = ?1 AND v.model = ?2 AND COALESCE(m.is_deleted, 0) = 0",
        )?;
        for r in rowids {
            let row = one.query_row(params![r, self.fingerprint], |x| {
                Ok((x.get::<_, String>(0)?, x.get::<_, Option<i64>>(1)?, x.get::<_, Vec<u8>>(2)?))
            });
            let Ok((tier, pinned, vec)) = row else { continue };
            let (Ok(tier), Some(v)) = (tier.parse::<Tier>(), Vector::from_bytes(&vec)) else { continue };
            self.rowids.push(r);
            self.tiers.push(tier);
            self.pinned.push(pinned.unwrap_or(0) != 0);
            self.inv_norms.push(v.inv_norm);
            self.data.extend_from_slice(&v.q);
            if let Some(all) = &mut self.signs {
                all.extend_from_slice(&signs(&v.q));
            }
        }
        Ok(())
    }
}

/// What a writer that just committed one new memory's vector adds to the process cache, so
/// that its own next scan needs no SQL to catch up. `before` / `after` are the cache keys read
/// inside the write transaction before and after its writes: with the write lock held, nothing
/// else changed in between, so a cache that was at `before` is exactly at `after` with this row.
pub struct Written<'a> {
    pub path: &'a str,
    pub before: (i64, i64),
    pub after: (i64, i64),
    pub rowid: i64,
    pub tier: Tier,
    pub pinned: bool,
    pub vector: &'a Vector,
}

pub fn patch_cache(e: &Embedder, w: Written) {
    let Ok(mut cache) = CACHE.lock() else { return };
    let Some(c) = cache.as_mut() else { return };
    if c.path != w.path || c.key != w.before || c.index.fingerprint != e.fingerprint() {
        return;
    }
    let mut ix = Arc::try_unwrap(std::mem::take(&mut c.index)).unwrap_or_else(|shared| (*shared).clone());
    if let Some(map) = ix.positions.get_mut() {
        map.insert(w.rowid, ix.rowids.len() as u32);
    }
    ix.rowids.push(w.rowid);
    ix.tiers.push(w.tier);
    ix.pinned.push(w.pinned);
    ix.inv_norms.push(w.vector.inv_norm);
    ix.data.extend_from_slice(&w.vector.q);
    if let Some(all) = &mut ix.signs {
        all.extend_from_slice(&signs(&w.vector.q));
    }
    c.index = Arc::new(ix);
    c.key = w.after;
}

/// The index for `conn`'s file (or team store, by its address and role), from the process
/// cache, patched for what changed since (files in memory are not cached).
pub fn index(conn: &Connection, e: &Embedder) -> Result<Arc<VectorIndex>> {
    let path = if conn.is_postgres() { conn.describe() } else { conn.path().unwrap_or("").to_string() };
    if path.is_empty() {
        return Ok(Arc::new(VectorIndex::load(conn, e.fingerprint())?));
    }
    crate::store::read_tx(conn, || {
        let key = cache_key(conn)?;
        let mut cache = CACHE.lock().map_err(|_| Error::invalid("vector cache poisoned"))?;
        if let Some(c) = cache.as_mut() {
            if c.path == path && c.index.fingerprint == e.fingerprint() {
                c.scans += 1;
                let signs_due = c.scans >= SIGNS_AFTER && !c.index.has_signs() && c.index.len() >= SIGNS_MIN;
                // On a team store a commit can land below the highest number seen (the
                // journal's documentation): the key alone would not show it.
                let moved = c.key != key || c.journal.as_ref().map_or(Ok(false), |j| j.moved(conn))?;
                if !moved && !signs_due {
                    return Ok(c.index.clone());
                }
                let changed = match (&mut c.journal, moved) {
                    (_, false) => Some(Vec::new()),
                    (Some(j), true) => j.read_up_to(conn, 10_000)?.unwrap_or(Some(Vec::new())),
                    (None, true) => crate::store::changes_since(conn, c.key.0, 10_000)?.1,
                };
                if let Some(ids) = changed {
                    let mut ix =
                        Arc::try_unwrap(std::mem::take(&mut c.index)).unwrap_or_else(|shared| (*shared).clone());
                    if !ids.is_empty() || c.key.1 != key.1 {
                        ix.apply(conn, &ids, c.key.1)?;
                    }
                    if signs_due {
                        ix.build_signs();
                    }
                    c.index = Arc::new(ix);
                    c.key = key;
                    return Ok(c.index.clone());
                }
            }
        }
        let journal = conn.is_postgres().then(|| crate::storage::journal::Journal::at(conn)).transpose()?;
        let index = Arc::new(VectorIndex::load(conn, e.fingerprint())?);
        *cache = Some(Cached { path, key, journal, index: index.clone(), scans: 1 });
        Ok(index)
    })
}

/// A neighbour of a memory, as `similar` and `remember` name it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Similar {
    /// The other memory.
    pub id: String,
    /// How close the two are (the judgment's closeness, in [0, 1]).
    pub similarity: f64,
    /// "duplicate" (the same memory: only this counts in duplication D), "possible update"
    /// (the same statement with another value) or "related" (close in meaning or topic).
    pub kind: &'static str,
    /// Why: what both say and what differs, in plain text.
    pub evidence: crate::sameness::Evidence,
}

/// A candidate's judgment as `similar` lists it, or `None` below `min_similarity` (duplicates
/// and possible updates are always listed).
fn listed(id: String, j: crate::sameness::Judgment, min_similarity: f64) -> Option<Similar> {
    shown(j.kind, j.closeness, min_similarity).then(|| Similar {
        id,
        similarity: j.closeness,
        kind: j.kind.name(),
        evidence: j.evidence,
    })
}

/// Whether a pair of this kind and closeness is listed: a duplicate or a possible update
/// always, a related memory from `min_similarity` on.
fn shown(kind: crate::sameness::Kind, closeness: f64, min_similarity: f64) -> bool {
    kind != crate::sameness::Kind::Related || (closeness >= min_similarity && closeness > 0.0)
}

/// Duplicates first, then possible updates, then related; closest first within each.
fn by_kind_then_closeness(out: &mut [Similar]) {
    let rank = |k: &str| match k {
        "duplicate" => 0,
        "possible update" => 1,
        _ => 2,
    };
    out.sort_by(|a, b| rank(a.kind).cmp(&rank(b.kind)).then(b.similarity.total_cmp(&a.similarity)));
}

/// The active memories most similar to `text` (excluding `exclude`), with similarity ≥
/// `min_similarity`, best first. Exact: every stored vector is compared.
pub fn similar_to_text(
    conn: &Connection,
    text: &str,
    exclude: Option<&str>,
    limit: usize,
    min_similarity: f64,
) -> Result<Vec<Similar>> {
    let limit = limit.min(crate::recall::MAX_LIMIT);
    let Some(e) = embed::shared() else { return similar_lexical(conn, text, exclude, limit, min_similarity) };
    let exclude_rowid: Option<i64> = match exclude {
        Some(id) => conn
            .query_row("SELECT rowid FROM memory_item WHERE id = ?1", [id], |r| r.get(0))
            .map(Some)
            .or_else(|e| if matches!(e, crate::Error::NoRows) { Ok(None) } else { Err(e) })?,
        None => None,
    };
    let q = e.embed(text);
    let ix = index(conn, e)?;
    let keep = |i: usize| Some(ix.rowids[i]) != exclude_rowid;
    let nearest: Vec<(i64, f32)> =
        ix.top(&q, candidates_for(limit), keep).into_iter().map(|(i, c)| (ix.rowids[i], c)).collect();
    drop(ix);
    judge(conn, text, &nearest, limit, min_similarity)
}

/// The first half of `remember`'s write-time neighbours: the nearest rows by meaning
/// (`(rowid, cosine)`), through the index's sign bits once a long-running process has built
/// them (approximate: see [`VectorIndex::top_approx`]). It needs only the process's index:
/// the writer runs it before its transaction begins, on the index taken before the write, which
/// does not hold the memory being written.
pub fn nearest_on_write(ix: &VectorIndex, q: &Vector, limit: usize) -> Vec<(i64, f32)> {
    ix.top_approx(q, candidates_for(limit), |_| true).into_iter().map(|(i, c)| (ix.rowids[i], c)).collect()
}

/// [`nearest_on_write`]'s candidates together with memories written earlier in the same group
/// commit, which the index read before the group does not hold (`(rowid, vector)`), scored as
/// the index scores its rows; the best [`candidates_for`] `limit` of both.
pub fn with_earlier(
    mut nearest: Vec<(i64, f32)>,
    q: &Vector,
    earlier: &[(i64, Vector)],
    limit: usize,
) -> Vec<(i64, f32)> {
    if earlier.is_empty() {
        return nearest;
    }
    for (rowid, v) in earlier {
        let s = embed::dot_q(&q.q, &v.q) as f32 * q.inv_norm * v.inv_norm;
        let at = nearest.partition_point(|&(_, x)| x >= s);
        nearest.insert(at, (*rowid, s));
    }
    nearest.truncate(candidates_for(limit));
    nearest
}

/// `remember`'s write-time neighbours: the candidates of [`nearest_on_write`] judged by their
/// words as well, or without a model (`nearest` is `None`) the lexical neighbours of `text`
/// other than `exclude` (the memory just written).
pub fn similar_on_write(
    conn: &Connection,
    text: &str,
    nearest: Option<&[(i64, f32)]>,
    exclude: &str,
    limit: usize,
    min_similarity: f64,
) -> Result<Vec<Similar>> {
    match nearest {
        Some(nearest) => judge(conn, text, nearest, limit, min_similarity),
        None => similar_lexical(conn, text, Some(exclude), limit, min_similarity),
    }
}

/// Candidates scanned by meaning for `limit` answers: the word overlap of each may raise it
/// above others, so more are looked at than are returned.
fn candidates_for(limit: usize) -> usize {
    limit.max(1) * 4
}

/// The nearest by meaning (`(rowid, cosine)`), then the word overlap of each decides the kind
/// and may raise it; those at `min_similarity` or above, best first. A candidate that is gone
/// by now (another process deleted it since the index was read) is left out.
fn judge(
    conn: &Connection,
    text: &str,
    nearest: &[(i64, f32)],
    limit: usize,
    min_similarity: f64,
) -> Result<Vec<Similar>> {
    use crate::sameness::{self, Kind};
    use crate::storage::db::OptionalExtension;
    // Kept as every candidate's text is: the memory just written is a candidate of the next
    // writes, whose judgments then find its shingles and profile made.
    let me = sameness::known(text);
    let (mine, profile) = (&me.shingles, me.profile());
    // The candidates' texts, in one read transaction (one shared lock for all of them).
    let mut close = crate::store::read_tx(conn, || {
        let mut content = conn.prepare_cached("SELECT id, content FROM memory_item WHERE rowid = ?1")?;
        let mut close = Vec::with_capacity(nearest.len());
        for &(rowid, cos) in nearest {
            let row =
                content.query_row([rowid], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))).optional()?;
            let Some((id, c)) = row else { continue };
            let known = sameness::known(&c);
            let j = crate::dedup::jaccard(mine, &known.shingles);
            let cos = Some(f64::from(cos));
            // Too far to be listed whatever the judgment finds (one template with another value
            // is close in words or meaning too).
            let most = sameness::closeness_at_most(j, cos);
            if most >= min_similarity {
                close.push((most, id, known, j, cos));
            }
        }
        Ok(close)
    })?;
    // The closest are judged (each judgment reads a text): twice as many as are listed. Their
    // kind and closeness order them; the evidence is made for those listed only.
    close.sort_by(|a, b| b.0.total_cmp(&a.0));
    close.truncate(limit.max(1) * 2);
    let rank = |k: Kind| match k {
        Kind::Duplicate => 0,
        Kind::PossibleUpdate => 1,
        Kind::Related => 2,
    };
    // A candidate to list: its verdict, and what its judgment with evidence needs.
    struct Verdict {
        kind: Kind,
        closeness: f64,
        id: String,
        other: std::sync::Arc<sameness::Known>,
        jaccard: f64,
        cosine: Option<f64>,
    }
    let mut judged: Vec<Verdict> = Vec::new();
    for (_, id, other, jaccard, cosine) in close {
        let (kind, closeness) = sameness::verdict(profile, other.profile(), jaccard, cosine);
        if shown(kind, closeness, min_similarity) {
            judged.push(Verdict { kind, closeness, id, other, jaccard, cosine });
        }
    }
    // As `by_kind_then_closeness` orders the listed (a stable sort of the same order).
    judged.sort_by(|a, b| rank(a.kind).cmp(&rank(b.kind)).then(b.closeness.total_cmp(&a.closeness)));
    judged.truncate(limit);
    let out = judged
        .into_iter()
        .filter_map(|v| {
            let full = sameness::judge(profile, v.other.profile(), v.jaccard, v.cosine);
            debug_assert_eq!((full.kind, full.closeness), (v.kind, v.closeness), "the verdict is the judgment's");
            listed(v.id, full, min_similarity)
        })
        .collect();
    Ok(out)
}

/// Without a model: the memories sharing band keys with `text`, by word-bigram Jaccard.
fn similar_lexical(
    conn: &Connection,
    text: &str,
    exclude: Option<&str>,
    limit: usize,
    min_similarity: f64,
) -> Result<Vec<Similar>> {
    let bands = crate::dedup::band_keys(text);
    let keys: std::collections::HashSet<u32> =
        (0..crate::dedup::BANDS).map(|b| crate::dedup::band_key(&bands, b)).filter(|k| *k != 0).collect();
    let mine = crate::dedup::shingles(text);
    let profile = crate::sameness::Profile::of(text);
    let mut stmt = conn.prepare_cached(
        "SELECT s.memory_id, s.bands, m.content FROM lethe_signature s JOIN memory_item m ON m.id = s.memory_id \
         WHERE COALESCE(m.is_deleted, 0) = 0",
    )?;
    let mut out = Vec::new();
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let id: String = r.get(0)?;
        if Some(id.as_str()) == exclude {
            continue;
        }
        let b: Vec<u8> = r.get(1)?;
        if !(0..crate::dedup::BANDS).any(|i| keys.contains(&crate::dedup::band_key(&b, i))) {
            continue;
        }
        let c: String = r.get(2)?;
        let j = crate::dedup::jaccard(&mine, &crate::dedup::shingles(&c));
        if j <= 0.0 {
            continue;
        }
        out.extend(listed(
            id,
            crate::sameness::judge(&profile, &crate::sameness::Profile::of(&c), j, None),
            min_similarity,
        ));
    }
    by_kind_then_closeness(&mut out);
    out.truncate(limit);
    Ok(out)
}

/// `lethe similar ID`: the nearest active memories of a stored memory.
pub fn similar(conn: &Connection, id: &str, limit: usize) -> Result<Vec<Similar>> {
    let content: String =
        conn.query_row("SELECT content FROM memory_item WHERE id = ?1", [id], |r| r.get(0)).map_err(|e| match e {
            Error::NoRows => Error::NotFound(format!("memory {id}")),
            e => e,
        })?;
    similar_to_text(conn, &content, Some(id), limit, 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index of `n` rows cycling through a few distinct vectors, so that many scores tie.
    fn index_with_ties(n: usize) -> VectorIndex {
        let mut ix = VectorIndex::default();
        for i in 0..n {
            let mut v = [0i8; DIMS];
            for (d, x) in v.iter_mut().enumerate() {
                *x = (((i % 7) * 31 + d * 17) % 255) as i8;
            }
            ix.rowids.push(1000 + i as i64 * 3);
            ix.tiers.push(if i % 2 == 0 { Tier::Episodic } else { Tier::Semantic });
            ix.pinned.push(false);
            ix.inv_norms.push(1.0 / (1.0 + (i % 7) as f32));
            ix.data.extend_from_slice(&v);
        }
        ix
    }

    #[test]
    fn top_equals_a_full_sort_ties_going_to_the_lower_position() {
        let ix = index_with_ties(500);
        let mut q = [0i8; DIMS];
        for (d, x) in q.iter_mut().enumerate() {
            *x = (((d * 5) % 200) as i32 - 100) as i8;
        }
        let q = Vector { inv_norm: 0.01, q };
        let even = |i: usize| ix.tiers[i] == Tier::Episodic;
        for k in [0, 1, 5, 70, 499, 503] {
            for only_even in [false, true] {
                let keep = |i: usize| !only_even || even(i);
                let mut all: Vec<(usize, f32)> =
                    (0..ix.len()).filter(|&i| keep(i)).map(|i| (i, ix.cosine_at(&q, i))).collect();
                all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                all.truncate(k);
                assert_eq!(ix.top(&q, k, keep), all, "k = {k}, only even = {only_even}");
            }
        }
    }

    #[test]
    fn position_finds_every_row_and_nothing_else() {
        let ix = index_with_ties(50);
        for (p, &r) in ix.rowids.iter().enumerate() {
            assert_eq!(ix.position(r), Some(p));
            assert!((ix.cosine_at(&Vector { inv_norm: 1.0, q: [1; DIMS] }, p)).is_finite());
        }
        assert_eq!(ix.position(1001), None);
        assert_eq!(ix.position(-1), None);
    }
}
