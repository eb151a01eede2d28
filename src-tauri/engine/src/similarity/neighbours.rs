//! The similar pairs behind duplication D (docs/scores.md), kept per memory in `lethe_neighbour`.
//!
//! A memory's neighbours are found once, when it is new or its content changed: candidates
//! are the memories sharing one of its buckets — a MinHash band key of its word bigrams
//! (same words) or one of its two nearest semantic centroids (same meaning) — and of each
//! bucket only the [`WINDOW`] members nearest to it in write order are compared, so the cost
//! per memory is bounded however alike the memories are. It keeps its [`K`] most similar
//! candidates, and hands itself to a candidate whose list has room for something that
//! similar (up to `2·K`). Scoring then only walks these lists: no pass over all similar
//! pairs, and deleting memories never creates a pair (the batch stays idempotent).
//!
//! A list keeps only duplicates (near-copies and true paraphrases, [`crate::sameness`]): a
//! pair that differs in a value or polarity, or is merely related, is not stored, so that
//! duplication D never counts it. The similarity stored is the pair's closeness; the kind says
//! whether word overlap or meaning made it close.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::collections::{HashMap, HashSet};

use crate::storage::db::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::embed::{self, Embedder, Vector, DIMS};
use crate::error::Result;
use crate::similarity::Passes;
use crate::{dedup, sameness, semantic};
use rayon::prelude::*;

/// Neighbours kept per memory from its own search.
pub const K: usize = 8;
/// Members of one bucket compared with a memory: the nearest in write (rowid) order.
pub const WINDOW: usize = 128;
/// Candidates compared exactly with a memory: those sharing the most buckets with it.
pub const CANDIDATES: usize = 256;
/// Semantic centroids, and how many of the nearest give a vector its keys.
pub const CENTROIDS: usize = 128;
pub const PROBES: usize = 2;
/// Vectors k-means is trained on (an evenly spaced sample), and its iterations.
const SAMPLE: usize = 4096;
const ITERATIONS: usize = 8;
/// Below this many vectors every vector shares one semantic bucket (compared with all).
pub const SMALL: usize = 2 * CENTROIDS;

pub const SAME_WORDS: u8 = 0;
pub const SAME_MEANING: u8 = 1;

pub fn kind_name(kind: u8) -> &'static str {
    if kind == SAME_MEANING {
        "same meaning"
    } else {
        "same words"
    }
}

/// One neighbour: the other memory's rowid, a hash of its id (so that a reused rowid is never
/// mistaken for it), the similarity and its kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Neighbour {
    pub rowid: i64,
    pub id_hash: u32,
    pub sim: f32,
    pub kind: u8,
}

const ENTRY: usize = 8 + 4 + 4 + 1;

pub fn id_hash(id: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in id.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

pub fn encode(list: &[Neighbour]) -> Vec<u8> {
    let mut out = Vec::with_capacity(list.len() * ENTRY);
    for n in list {
        out.extend_from_slice(&n.rowid.to_le_bytes());
        out.extend_from_slice(&n.id_hash.to_le_bytes());
        out.extend_from_slice(&n.sim.to_le_bytes());
        out.push(n.kind);
    }
    out
}

pub fn decode(b: &[u8]) -> Vec<Neighbour> {
    let mut out = Vec::with_capacity(b.len() / ENTRY);
    decode_into(b, &mut out);
    out
}

/// [`decode`], appending to `out`.
pub fn decode_into(b: &[u8], out: &mut Vec<Neighbour>) {
    out.extend(b.chunks_exact(ENTRY).map(|c| Neighbour {
        rowid: i64::from_le_bytes(c[0..8].try_into().expect("8 bytes")),
        id_hash: u32::from_le_bytes(c[8..12].try_into().expect("4 bytes")),
        sim: f32::from_le_bytes(c[12..16].try_into().expect("4 bytes")),
        kind: c[16],
    }));
}

fn encode_keys(keys: &[u16]) -> Vec<u8> {
    keys.iter().flat_map(|k| k.to_le_bytes()).collect()
}

fn decode_keys(b: &[u8]) -> Vec<u16> {
    b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()
}

/// The version of the duplicate judgment: lists stored under another one are searched again
/// when a file is opened (resumably, see [`search_resumably`]).
pub const JUDGMENT: &str = "sameness-1";

/// What a stored list was made with: the judgment and the model whose vectors take part
/// (none when duplication is by words only).
pub fn fingerprint() -> &'static str {
    static WITH_MODEL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    match embed::shared() {
        Some(e) => WITH_MODEL.get_or_init(|| made_with(e.fingerprint())),
        None => JUDGMENT,
    }
}

/// [`fingerprint`] for the vectors of the model `model`.
pub fn made_with(model: &str) -> String {
    format!("{JUDGMENT}/{model}")
}

/// One memory as the neighbour search sees it.
#[derive(Debug, Clone)]
pub struct Member {
    pub rowid: i64,
    pub id: String,
    pub active: bool,
    pub bands: Vec<u8>,
    /// Whether its band keys are stored (else computed from its content for this load).
    pub signed: bool,
    /// The hash of the content it was read with (stored, or computed with its band keys):
    /// a list searched for this member is stored as current for this content only.
    pub hash: Option<String>,
    /// What dominance looks at apart from usage: pinned, importance, created (ms), rowid.
    pub rank: (bool, f64, i64),
    /// Stored neighbours and semantic keys, when they are current for this content and model.
    pub derived: Option<Entry>,
}

impl Member {
    /// Whether `self` dominates `other` when their usage is equal (docs/scores.md: pinned, else
    /// more important, else older, else written first).
    pub fn outranks(&self, other: &Member) -> bool {
        let (a, b) = (&self.rank, &other.rank);
        if a.0 != b.0 {
            return a.0;
        }
        if a.1 != b.1 {
            return a.1 > b.1;
        }
        if a.2 != b.2 {
            return a.2 < b.2;
        }
        self.rowid < other.rowid
    }
}

/// What [`members`] reads per memory (a `WHERE` or `ORDER BY` follows).
const MEMBER_SQL: &str =
    "SELECT m.rowid, m.id, COALESCE(m.is_deleted, 0), s.bands, s.content_hash, n.model, n.hash, n.keys, n.list, \
     CASE WHEN s.bands IS NULL THEN m.content END, COALESCE(m.pinned, 0), COALESCE(m.importance, 0.5), m.created_at \
     FROM memory_item m LEFT JOIN lethe_signature s ON s.memory_id = m.id \
     LEFT JOIN lethe_neighbour n ON n.memory_rowid = m.rowid \
     WHERE typeof(m.id) = 'text'";

/// Loads every memory with its band keys and its stored neighbours (current or not). A row
/// without a text id (another program's; reported as mistyped) is not a member.
pub fn members(conn: &Connection) -> Result<Vec<Member>> {
    let fp = fingerprint();
    let mut stmt = conn.prepare_cached(&format!("{MEMBER_SQL} ORDER BY m.rowid"))?;
    let mut out = Vec::new();
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        out.push(member_of_row(&r, fp)?);
    }
    Ok(out)
}

fn member_of_row(r: &crate::storage::db::Row<'_>, fp: &str) -> Result<Member> {
    let bands: Option<Vec<u8>> = r.get(3)?;
    let hash: Option<String> = r.get(4)?;
    let model: Option<String> = r.get(5)?;
    let nhash: Option<String> = r.get(6)?;
    let current = match (model.as_deref(), nhash.as_deref(), &hash) {
        (Some(model), Some(h), Some(hash)) => model == fp && h == hash,
        _ => false,
    };
    let derived = if current {
        let keys: Vec<u8> = r.get(7)?;
        let list: Vec<u8> = r.get(8)?;
        Some((decode_keys(&keys), decode(&list)))
    } else {
        None
    };
    let signed = bands.is_some();
    let (bands, hash) = match bands {
        Some(b) => (b, hash),
        None => {
            let content = crate::model::lenient::text(r, 9)?.unwrap_or_default();
            (dedup::band_keys(&content), Some(dedup::content_hash(&content)))
        }
    };
    use crate::model::lenient;
    let created = lenient::text(r, 12)?;
    let created = crate::time::parse_opt(created.as_deref()).map_or(i64::MAX, |t| t.timestamp_millis());
    let rank = (lenient::flag(r, 10)?, lenient::real(r, 11)?.unwrap_or(0.5), created);
    Ok(Member { rowid: r.get(0)?, id: r.get(1)?, active: !lenient::flag(r, 2)?, bands, signed, hash, rank, derived })
}

/// Brings `members` (as [`members`] read them) up to date for the memories in `ids` and for
/// those without current neighbours (another process may have stored theirs), reading only
/// these. Returns the indices re-read or added, or `None` when the update would not equal
/// a fresh [`members`] by appending and replacing alone (a memory removed for good, or one
/// whose rowid falls among the existing ones); the caller then reads them all.
pub fn update_members(conn: &Connection, members: &mut Vec<Member>, ids: &[String]) -> Result<Option<Vec<usize>>> {
    let fp = fingerprint();
    let changed: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
    // Where each changed memory is now, and every memory still waiting for its neighbours.
    let mut at: HashMap<&str, usize> = HashMap::with_capacity(changed.len());
    let mut dirty: Vec<usize> = Vec::new();
    for (i, m) in members.iter().enumerate() {
        if let Some(&id) = changed.get(m.id.as_str()) {
            at.insert(id, i);
        } else if m.active && m.derived.is_none() {
            dirty.push(i);
        }
    }
    if (dirty.len() + changed.len()) * 8 > members.len() {
        // Reading most of them one by one costs more than reading all in one scan.
        return Ok(None);
    }
    let mut stmt = conn.prepare_cached(&format!("{MEMBER_SQL} AND m.rowid = ?1"))?;
    for &i in &dirty {
        let Some(m) = stmt.query_row([members[i].rowid], |r| Ok(member_of_row(r, fp))).optional()? else {
            return Ok(None);
        };
        members[i] = m?;
    }
    let mut by_id = conn.prepare_cached(&format!("{MEMBER_SQL} AND m.id = ?1"))?;
    let mut new: Vec<Member> = Vec::new();
    for &id in &changed {
        let fresh = by_id.query_row([id], |r| Ok(member_of_row(r, fp))).optional()?.transpose()?;
        match (fresh, at.get(id)) {
            (None, None) => {}
            (Some(m), Some(&i)) if m.rowid == members[i].rowid => {
                members[i] = m;
                dirty.push(i);
            }
            (Some(m), None) => new.push(m),
            _ => return Ok(None),
        }
    }
    // New memories go after the others, in rowid order (the journal's order is another).
    new.sort_by_key(|m| m.rowid);
    if new.first().zip(members.last()).is_some_and(|(f, l)| f.rowid <= l.rowid) {
        return Ok(None);
    }
    for m in new {
        members.push(m);
        dirty.push(members.len() - 1);
    }
    dirty.sort_unstable();
    dirty.dedup();
    Ok(Some(dirty))
}

/// K-means centroids (unit vectors) on an evenly spaced sample of the index, deterministic
/// for a given index.
fn train(ix: &semantic::VectorIndex) -> Vec<f32> {
    let n = ix.len();
    let step = (n / SAMPLE).max(1);
    let sample: Vec<Vec<f32>> = (0..n)
        .step_by(step)
        .take(SAMPLE)
        .map(|i| {
            let q = &ix.data[i * DIMS..(i + 1) * DIMS];
            q.iter().map(|&x| f32::from(x) * ix.inv_norms[i]).collect()
        })
        .collect();
    let c = CENTROIDS.min(sample.len());
    let mut cent: Vec<f32> = Vec::with_capacity(CENTROIDS * DIMS);
    for k in 0..c {
        cent.extend_from_slice(&sample[k * sample.len() / c]);
    }
    let mut dots = Vec::with_capacity(CENTROIDS);
    for _ in 0..ITERATIONS {
        let mut sums = vec![0.0_f32; c * DIMS];
        let mut counts = vec![0usize; c];
        for v in &sample {
            let best = nearest(&cent, v, 1, &mut dots)[0];
            counts[best as usize] += 1;
            for (s, x) in sums[best as usize * DIMS..(best as usize + 1) * DIMS].iter_mut().zip(v) {
                *s += x;
            }
        }
        for k in 0..c {
            if counts[k] == 0 {
                continue;
            }
            let s = &sums[k * DIMS..(k + 1) * DIMS];
            let norm = s.iter().map(|x| x * x).sum::<f32>().sqrt();
            if norm > 0.0 {
                for (o, x) in cent[k * DIMS..(k + 1) * DIMS].iter_mut().zip(s) {
                    *o = x / norm;
                }
            }
        }
    }
    cent
}

/// The candidates of member `x` (one entry per shared bucket) that share the most buckets with
/// it, a MinHash estimate of similarity, at most [`CANDIDATES`], in member order; the nearer
/// in member order first among equals. The result holds exactly its length: a million
/// pending memories keep one list each until they are compared, and a list collected in
/// place from the counted pairs kept their whole capacity (18 KB each, 18 GB at 1M).
fn top_candidates(mut cands: Vec<u32>, x: usize) -> Vec<u32> {
    cands.sort_unstable();
    let mut counted: Vec<(u32, u32)> = cands.chunk_by(|a, b| a == b).map(|g| (g.len() as u32, g[0])).collect();
    if counted.len() > CANDIDATES {
        counted.sort_unstable_by(|a, b| {
            b.0.cmp(&a.0).then((a.1 as i64 - x as i64).abs().cmp(&(b.1 as i64 - x as i64).abs()))
        });
        counted.truncate(CANDIDATES);
    }
    let mut out = Vec::with_capacity(counted.len());
    out.extend(counted.iter().map(|&(_, i)| i));
    out.sort_unstable();
    out
}

/// The `p` centroids nearest to `v`, nearest first (`dots`: room for the dot products, reused).
fn nearest(cent: &[f32], v: &[f32], p: usize, dots: &mut Vec<f32>) -> Vec<u16> {
    let mut best: Vec<(f32, u16)> = Vec::with_capacity(p + 1);
    embed::dots_f32(v, cent, dots);
    for (k, &d) in dots.iter().enumerate() {
        let at = best.partition_point(|&(s, _)| s >= d);
        if at < p {
            best.insert(at, (d, k as u16));
            best.truncate(p);
        }
    }
    best.into_iter().map(|(_, k)| k).collect()
}

/// The `PROBES` nearest centroids of a quantised vector, by integer dot products with the
/// quantised centroids (a vector's own scale does not change which centroids are nearest).
fn semantic_keys(cent_q: &[i8], v: &Vector) -> Vec<u16> {
    let mut best: Vec<(i32, u16)> = Vec::with_capacity(PROBES + 1);
    for (k, c) in cent_q.chunks_exact(DIMS).enumerate() {
        let d = embed::dot_q(c, &v.q);
        let at = best.partition_point(|&(s, _)| s >= d);
        if at < PROBES {
            best.insert(at, (d, k as u16));
            best.truncate(PROBES);
        }
    }
    best.into_iter().map(|(_, k)| k).collect()
}

fn quantize_centroids(cent: &[f32]) -> Vec<i8> {
    cent.chunks_exact(DIMS).flat_map(|c| Vector::quantize(c).q).collect()
}

/// The centroids this file stores for this model (`lethe_centroid`), if any.
fn stored_centroids(conn: &Connection, e: &Embedder) -> Result<Option<Vec<f32>>> {
    let stored: Option<Vec<u8>> = conn
        .query_row("SELECT data FROM lethe_centroid WHERE model = ?1", [e.fingerprint()], |r| r.get(0))
        .map(Some)
        .or_else(|err| if matches!(err, crate::Error::NoRows) { Ok(None) } else { Err(err) })?;
    Ok(stored.map(|b| b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()))
}

/// The centroids of this model: stored ones, else trained now (and stored when `store`).
fn centroids(conn: &Connection, e: &Embedder, ix: &semantic::VectorIndex) -> Result<Option<Vec<f32>>> {
    if let Some(c) = stored_centroids(conn, e)? {
        return Ok(Some(c));
    }
    if ix.len() < SMALL {
        return Ok(None);
    }
    Ok(Some(train(ix)))
}

/// A member's semantic keys and neighbours.
pub type Entry = (Vec<u16>, Vec<Neighbour>);
/// What the search found for one memory: its list, and its offers to candidates.
type Found = (usize, Vec<Neighbour>, Vec<(u32, Neighbour)>);

/// The result of a neighbour search: new lists for the memories that needed one, and the
/// lists of others that gained a neighbour, by index into the members; plus the centroids
/// when they were trained by this search (to be stored with the lists).
#[derive(Debug, Default)]
pub struct Derived {
    pub lists: HashMap<usize, Entry>,
    pub trained: Option<Vec<f32>>,
}

/// Finds neighbours for every active member without current ones.
pub fn derive(conn: &Connection, members: &[Member]) -> Result<Derived> {
    derive_with(conn, members, None, Passes::default())
}

/// Memories searched between two reports of [`derive_with`].
const REPORT_EVERY: usize = 512;

/// [`derive`] that reports `(searched, to search)` every [`REPORT_EVERY`] memories, its
/// passes split as `passes` says.
pub fn derive_with(
    conn: &Connection,
    members: &[Member],
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
    passes: Passes,
) -> Result<Derived> {
    derive_in(conn, members, None, progress, passes)
}

/// The bucket index of a search: every active member's keys (band keys, semantic keys) with
/// its index, sorted, and what they were made with. A snapshot that is kept up to date keeps
/// it between searches, so that a change of a few memories costs in proportion to them.
#[derive(Debug, Clone, Default)]
pub struct Buckets {
    keyed: Vec<(u64, u32)>,
    /// Per member it was made for, whether that member had a vector.
    had_vector: Vec<bool>,
    fingerprint: String,
    small: bool,
    centroids: Option<Vec<f32>>,
}

/// [`derive`] with the bucket index `kept` from an earlier search on the same members, of
/// which those at `dirty` (and any appended since) changed, as [`update_members`] says: the
/// index is patched for them instead of built again, and kept for the next search. The
/// result equals [`derive`]'s.
pub fn derive_kept(
    conn: &Connection,
    members: &[Member],
    kept: &mut Option<Buckets>,
    dirty: &[usize],
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
    passes: Passes,
) -> Result<Derived> {
    derive_in(conn, members, Some((kept, dirty)), progress, passes)
}

fn derive_in(
    conn: &Connection,
    members: &[Member],
    kept: Option<(&mut Option<Buckets>, &[usize])>,
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
    passes: Passes,
) -> Result<Derived> {
    let Some(search) = Search::new(conn, members, progress, passes)? else {
        if let Some((kept, _)) = kept {
            // Not patched for this change: built again by the next search that needs it.
            *kept = None;
        }
        return Ok(Derived::default());
    };
    if search.to_search.is_empty() {
        // Every list was kept by a search cut short: nothing to bucket.
        if let Some((kept, _)) = kept {
            *kept = None;
        }
        return Ok(search.finish(Vec::new()));
    }
    let (buckets, slot) = match kept {
        Some((slot, dirty)) => (search.buckets(slot.take(), dirty), Some(slot)),
        None => (search.buckets(None, &[]), None),
    };
    let found = search.search_all(conn, &buckets);
    // The index is kept for the next search even when this one failed: it describes the
    // members, not what was found.
    if let Some(slot) = slot {
        *slot = Some(buckets);
    }
    Ok(search.finish(found?))
}

/// One neighbour search over `members`: the memories without current lists (`pending`), the
/// vector index and centroids that give the semantic buckets, and the semantic keys.
struct Search<'a> {
    members: &'a [Member],
    pending: Vec<usize>,
    /// The pending members still to search: those whose own list an interrupted search of the
    /// same members stored ([`Search::resume`]) are not searched again.
    to_search: Vec<usize>,
    /// What the interrupted search found for the others.
    resumed: Vec<Found>,
    ix: Option<std::sync::Arc<semantic::VectorIndex>>,
    /// Member index → position in the vector index, looked up once.
    pos: Vec<Option<u32>>,
    cent: Option<Vec<f32>>,
    /// The centroids when this search trained them (to be stored with the lists).
    trained: Option<Vec<f32>>,
    /// Semantic keys computed for the pending members (the others' are stored).
    computed: Vec<Vec<u16>>,
    /// Whether every vector shares one semantic bucket (too few to train centroids).
    small: bool,
    progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
    searched_so_far: std::sync::atomic::AtomicUsize,
    passes: Passes,
}

/// The contents of the members a search compares, read once: word-bigram shingles, texts (for
/// the judgment of the pairs close enough to be duplicates) and their profiles (made on first
/// use).
struct Texts {
    shingles: Vec<Vec<u64>>,
    texts: Vec<String>,
    profiles: Vec<std::sync::OnceLock<sameness::Profile>>,
    read: Vec<bool>,
    /// Whether something [`sameness::differs`] in the pairs [`sameness::settled`] leaves open,
    /// by (lower, higher) member index: looked for once, from the lower member's side, and
    /// shared with the other side's search (which takes it out).
    differs: Vec<std::sync::Mutex<rustc_hash::FxHashMap<(u32, u32), bool>>>,
}

/// Parts the shared answers are split in, so that threads seldom wait for one another.
const DIFFERS_PARTS: usize = 64;

impl<'a> Search<'a> {
    /// The search's set-up, or `None` when no member needs a search.
    fn new(
        conn: &'a Connection,
        members: &'a [Member],
        progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
        passes: Passes,
    ) -> Result<Option<Search<'a>>> {
        let pending: Vec<usize> =
            (0..members.len()).filter(|&i| members[i].active && members[i].derived.is_none()).collect();
        if pending.is_empty() {
            return Ok(None);
        }
        let e = embed::shared();
        let ix = match e {
            Some(e) => Some(semantic::index(conn, e)?),
            None => None,
        };
        let (cent, trained) = match (e, &ix) {
            (Some(e), Some(ix)) => {
                let had: bool = conn.query_row(
                    "SELECT EXISTS (SELECT 1 FROM lethe_centroid WHERE model = ?1)",
                    [e.fingerprint()],
                    |r| r.get(0),
                )?;
                let c = centroids(conn, e, ix)?;
                let trained = if had { None } else { c.clone() };
                (c, trained)
            }
            _ => (None, None),
        };
        let pos: Vec<Option<u32>> = match &ix {
            Some(ix) => members.iter().map(|m| ix.position(m.rowid).map(|p| p as u32)).collect(),
            None => vec![None; members.len()],
        };
        let small = ix.as_ref().is_some_and(|_| cent.is_none());
        let mut search = Search {
            members,
            to_search: pending.clone(),
            resumed: Vec::new(),
            pending,
            ix,
            pos,
            cent,
            trained,
            computed: vec![Vec::new(); members.len()],
            small,
            progress,
            searched_so_far: std::sync::atomic::AtomicUsize::new(0),
            passes,
        };
        search.resume(conn)?;
        search.compute_semantic_keys();
        Ok(Some(search))
    }

    /// Whether this search is long enough to be kept part way ([`search_resumably`]).
    fn checkpointed(&self) -> bool {
        self.pending.len() >= 2 * self.passes.checkpoint_every.max(1)
    }

    /// What the lists of this search depend on besides each memory's content, as the `model`
    /// its own lists are kept under part way: the judgment and model, every member (rowid,
    /// id, content hash, whether active, what dominance reads, its stored list, whether it has
    /// a vector) and the centroids. Lists kept under another digest were searched among other
    /// memories and are not resumed.
    fn partial_model(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(fingerprint().as_bytes());
        h.update((self.members.len() as u64).to_le_bytes());
        for (i, m) in self.members.iter().enumerate() {
            h.update(m.rowid.to_le_bytes());
            h.update((m.id.len() as u64).to_le_bytes());
            h.update(m.id.as_bytes());
            h.update(m.hash.as_deref().unwrap_or("-").as_bytes());
            h.update([u8::from(m.active), u8::from(m.rank.0), u8::from(self.pos[i].is_some())]);
            h.update(m.rank.1.to_bits().to_le_bytes());
            h.update(m.rank.2.to_le_bytes());
            match &m.derived {
                Some((keys, list)) => {
                    h.update([1]);
                    h.update(encode_keys(keys));
                    h.update(encode(list));
                }
                None => h.update([0]),
            }
        }
        for c in self.cent.iter().flatten() {
            h.update(c.to_le_bytes());
        }
        h.update([u8::from(self.small)]);
        let digest = h.finalize();
        let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
        format!("{}{PARTIAL}{hex}", fingerprint())
    }

    /// Takes up what an interrupted search of the same members kept: the own lists stored
    /// under this search's [`Search::partial_model`] for members still pending with the same
    /// content are not searched again.
    fn resume(&mut self, conn: &Connection) -> Result<()> {
        if !self.checkpointed() {
            return Ok(());
        }
        let model = self.partial_model();
        let members = self.members;
        let index_of = |rowid: i64| members.binary_search_by_key(&rowid, |m| m.rowid).ok();
        let mut stmt = conn.prepare("SELECT memory_rowid, hash, keys, list FROM lethe_neighbour WHERE model = ?1")?;
        let mut rows = stmt.query([&model])?;
        let mut taken = vec![false; members.len()];
        while let Some(r) = rows.next()? {
            let Some(x) = index_of(r.get(0)?) else { continue };
            let m = &members[x];
            let hash: String = r.get(1)?;
            if !m.active || m.derived.is_some() || m.hash.as_deref() != Some(hash.as_str()) || taken[x] {
                continue;
            }
            let keys: Vec<u8> = r.get(2)?;
            let list = decode(&r.get::<_, Vec<u8>>(3)?);
            // The offers are those of the search that found the list (see `search_one`).
            let me = Neighbour { rowid: m.rowid, id_hash: id_hash(&m.id), sim: 0.0, kind: 0 };
            let Some(offers) = list
                .iter()
                .map(|n| index_of(n.rowid).map(|c| (c as u32, Neighbour { sim: n.sim, kind: n.kind, ..me })))
                .collect::<Option<Vec<_>>>()
            else {
                continue;
            };
            self.computed[x] = decode_keys(&keys);
            taken[x] = true;
            self.resumed.push((x, list, offers));
        }
        self.to_search.retain(|&x| !taken[x]);
        Ok(())
    }

    /// Semantic keys of the members to search: stored for the others.
    fn compute_semantic_keys(&mut self) {
        let Some(c) = self.cent.as_deref().map(quantize_centroids) else { return };
        for &i in &self.to_search {
            if let Some((q, inv)) = self.vector_of(i) {
                let mut v = Vector { inv_norm: inv, q: [0; DIMS] };
                v.q.copy_from_slice(q);
                self.computed[i] = semantic_keys(&c, &v);
            }
        }
    }

    fn vector_of(&self, i: usize) -> Option<(&[i8], f32)> {
        let ix = self.ix.as_ref()?;
        let p = self.pos[i]? as usize;
        Some((&ix.data[p * DIMS..(p + 1) * DIMS], ix.inv_norms[p]))
    }

    fn sem_keys(&self, i: usize) -> &[u16] {
        match &self.members[i].derived {
            Some((k, _)) => k,
            None => &self.computed[i],
        }
    }

    /// Member `i`'s bucket keys with its index. Semantic keys live above the 32-bit band keys;
    /// a small file has one semantic bucket.
    fn keys_into(&self, i: usize, out: &mut Vec<(u64, u32)>) {
        let m = &self.members[i];
        if !m.active {
            return;
        }
        for b in 0..dedup::BANDS {
            let k = dedup::band_key(&m.bands, b);
            if k != 0 {
                out.push(((b as u64) << 32 | u64::from(k), i as u32));
            }
        }
        if self.small && self.vector_of(i).is_some() {
            out.push((1 << 40, i as u32));
        }
        for &c in self.sem_keys(i) {
            out.push(((1 << 40) | (1 << 20) | u64::from(c), i as u32));
        }
    }

    /// The bucket index: `kept` patched for the members at `dirty` (and those whose vector
    /// came or went) when it was made with the same model and centroids, else built anew.
    fn buckets(&self, kept: Option<Buckets>, dirty: &[usize]) -> Buckets {
        let fp = fingerprint();
        let members = self.members;
        let had_vector: Vec<bool> = self.pos.iter().map(Option::is_some).collect();
        let reusable = |b: &Buckets| {
            b.fingerprint == fp
                && b.small == self.small
                && b.centroids == self.cent
                && b.had_vector.len() <= members.len()
        };
        match kept.filter(reusable) {
            Some(mut b) => {
                // Patched: the entries of changed members go, their new ones are merged in.
                let mut again = vec![false; members.len()];
                for &i in dirty {
                    again[i] = true;
                }
                for (i, flag) in again.iter_mut().enumerate() {
                    *flag |= b.had_vector.get(i) != Some(&had_vector[i]);
                }
                let mut fresh: Vec<(u64, u32)> = Vec::new();
                for (i, _) in again.iter().enumerate().filter(|(_, &a)| a) {
                    self.keys_into(i, &mut fresh);
                }
                fresh.sort_unstable();
                let old = std::mem::take(&mut b.keyed);
                let mut keyed = Vec::with_capacity(old.len() + fresh.len());
                let mut fresh = fresh.into_iter().peekable();
                for e in old.into_iter().filter(|&(_, i)| !again[i as usize]) {
                    while let Some(f) = fresh.next_if(|f| *f < e) {
                        keyed.push(f);
                    }
                    keyed.push(e);
                }
                keyed.extend(fresh);
                b.keyed = keyed;
                b.had_vector = had_vector;
                b
            }
            None => {
                let mut keyed: Vec<(u64, u32)> = Vec::new();
                for i in 0..members.len() {
                    self.keys_into(i, &mut keyed);
                }
                keyed.sort_unstable();
                Buckets {
                    keyed,
                    had_vector,
                    fingerprint: fp.to_string(),
                    small: self.small,
                    centroids: self.cent.clone(),
                }
            }
        }
    }

    /// The candidates of member `x`: of each of its buckets, the [`WINDOW`] members nearest to
    /// it in member order, then those sharing the most buckets with it. (`ks`: room for its
    /// keys, reused from one member to the next.)
    fn gather(&self, buckets: &Buckets, ks: &mut Vec<(u64, u32)>, x: usize) -> (usize, Vec<u32>) {
        let keyed = &buckets.keyed;
        let bucket_of = |key: u64| -> &[(u64, u32)] {
            let lo = keyed.partition_point(|&(k, _)| k < key);
            let hi = keyed.partition_point(|&(k, _)| k <= key);
            &keyed[lo..hi]
        };
        let mut cands: Vec<u32> = Vec::new();
        ks.clear();
        self.keys_into(x, ks);
        for &(key, _) in ks.iter() {
            let bucket = bucket_of(key);
            let at = bucket.partition_point(|&(_, i)| (i as usize) < x);
            let lo = at.saturating_sub(WINDOW / 2);
            let hi = (lo + WINDOW + 1).min(bucket.len());
            let lo = hi.saturating_sub(WINDOW + 1);
            cands.extend(bucket[lo..hi].iter().map(|&(_, i)| i).filter(|&i| i as usize != x));
        }
        (x, top_candidates(cands, x))
    }

    /// Searched in chunks, so that only one chunk's candidates (up to 1 KB a memory) are held
    /// at once; what each search keeps is a few neighbours and the offers to them. Within a
    /// chunk, candidates and comparisons run on every core, in parts of
    /// [`Passes::search_per_part`] memories; the results come back in member order.
    fn search_all(&self, conn: &Connection, buckets: &Buckets) -> Result<Vec<Found>> {
        let mut found: Vec<Found> = Vec::with_capacity(self.to_search.len());
        if self.to_search.is_empty() {
            return Ok(found);
        }
        let mut texts = self.texts(conn)?;
        for chunk in self.to_search.chunks(self.passes.search_chunk.max(1)) {
            self.search_chunk(conn, buckets, &mut texts, chunk, &mut found)?;
        }
        Ok(found)
    }

    /// Searches the members at `chunk`, appending what it finds to `found`: candidates and
    /// comparisons on every core, in parts of [`Passes::search_per_part`] memories, the
    /// results in member order.
    fn search_chunk(
        &self,
        conn: &Connection,
        buckets: &Buckets,
        texts: &mut Texts,
        chunk: &[usize],
        found: &mut Vec<Found>,
    ) -> Result<()> {
        let per_part = self.passes.search_per_part.max(1);
        let cands_of: Vec<(usize, Vec<u32>)> =
            chunk.par_iter().with_min_len(per_part).map_init(Vec::new, |ks, &x| self.gather(buckets, ks, x)).collect();
        texts.read_for(conn, self.members, &cands_of)?;
        let texts = &*texts;
        found
            .par_extend(cands_of.par_iter().with_min_len(per_part).map(|(x, cands)| self.search_one(texts, *x, cands)));
        Ok(())
    }

    /// The members' texts: in one scan of the table when most memories are searched, otherwise
    /// none yet (read by rowid, chunk by chunk, for the memories a chunk compares).
    fn texts(&self, conn: &Connection) -> Result<Texts> {
        let n = self.members.len();
        let mut t = Texts {
            shingles: vec![Vec::new(); n],
            texts: vec![String::new(); n],
            profiles: (0..n).map(|_| std::sync::OnceLock::new()).collect(),
            read: vec![false; n],
            differs: (0..DIFFERS_PARTS).map(|_| Default::default()).collect(),
        };
        let active = self.members.iter().filter(|m| m.active).count();
        if self.to_search.len() * 4 >= active {
            let member_of: HashMap<i64, usize> = self.members.iter().enumerate().map(|(i, m)| (m.rowid, i)).collect();
            let mut all = conn.prepare("SELECT rowid, content FROM memory_item WHERE COALESCE(is_deleted, 0) = 0")?;
            let mut rows = all.query([])?;
            while let Some(r) = rows.next()? {
                if let Some(&i) = member_of.get(&r.get::<_, i64>(0)?) {
                    let text = r.get_ref(1)?.as_str().unwrap_or("");
                    t.shingles[i] = dedup::shingles(text);
                    t.texts[i] = text.to_string();
                    t.read[i] = true;
                }
            }
        }
        Ok(t)
    }

    /// What a pair's word overlap and cosine say before the judgment: its kind, and the most
    /// its duplication can be (as stored), or `None` when it cannot be a duplicate. Most
    /// candidates are far from it by these alone, and are not judged.
    ///
    /// A pair whose values or negations differ is never a duplicate ([`sameness::apart`]):
    /// most templated candidates are such pairs, and their profiles (made once per memory)
    /// tell it for less than their word overlap and cosine cost; leaving them out here keeps
    /// what [`Search::duplicates_of`] keeps, as their judgment would leave them out.
    fn closeness(&self, t: &Texts, a: usize, b: usize) -> Option<(f32, u8, f64, Option<f64>)> {
        if sameness::apart(t.profile(a), t.profile(b)) {
            return None;
        }
        let j = dedup::jaccard(&t.shingles[a], &t.shingles[b]);
        let cos = match (self.vector_of(a), self.vector_of(b)) {
            (Some((qa, ia)), Some((qb, ib))) => Some(f64::from(embed::cosine_q(qa, ia, qb, ib))),
            _ => None,
        };
        let kind = if cos.is_none_or(|c| j >= sameness::semantic(c)) { SAME_WORDS } else { SAME_MEANING };
        let at_most = sameness::closeness_at_most(j, cos);
        if at_most < sameness::DUPLICATE_AT {
            return None;
        }
        // The judgment's closeness is at most `at_most`, capped at 1 and rounded to three
        // decimals (up by at most 0.0005); a cap of exactly 1 stays 1, so that near-copies tie.
        let bound = if at_most >= 1.0 { 1.0 } else { at_most + 0.0005 };
        Some((bound as f32, kind, j, cos))
    }

    /// The duplication of a pair [`Search::closeness`] kept: its closeness when the judgment
    /// calls it a duplicate, else 0.
    /// What differs in a pair the values, a negation and the closeness leave open is looked
    /// for once, from the lower member's side, whichever side asks first, and the other side
    /// takes that answer; each side's closeness is its own (the quantised cosine of a pair can
    /// differ in its last bit between the two sides).
    fn judged(&self, t: &Texts, a: usize, b: usize, j: f64, cos: Option<f64>) -> f32 {
        let (pa, pb) = (t.profile(a), t.profile(b));
        // The pair is not apart ([`Search::closeness`] left those out): the rest of
        // `sameness::settled`.
        if sameness::too_far(pa, j, cos) {
            return 0.0;
        }
        let ((lo, plo), (hi, phi)) = if a < b { ((a, pa), (b, pb)) } else { ((b, pb), (a, pa)) };
        let key = (lo as u32, hi as u32);
        let part = &t.differs[(lo ^ hi.rotate_left(7)) % DIFFERS_PARTS];
        let shared = part.lock().ok().and_then(|mut m| m.remove(&key));
        let differs = shared.unwrap_or_else(|| {
            let d = sameness::differs(plo, phi);
            // Kept only for a side still to search (a memory with a stored list asks nothing).
            let searched = |i: usize| self.members[i].active && self.members[i].derived.is_none();
            if searched(lo) && searched(hi) {
                if let Ok(mut m) = part.lock() {
                    m.insert(key, d);
                }
            }
            d
        });
        if differs {
            0.0
        } else {
            sameness::close_enough(pa, j, cos) as f32
        }
    }

    /// The entries (member index, neighbour) of `x`'s candidates that the judgment calls
    /// duplicates, leaving out only those that [`select_entries`] could not keep: candidates are
    /// judged from the closest bound down, and one is skipped when `K` duplicates already found
    /// come before it in the list's order (higher similarity, or equal and written first)
    /// whatever its judgment — and, when it outranks `x`, `K` that also outrank `x`. What is
    /// kept is then what judging every candidate keeps.
    fn duplicates_of(&self, t: &Texts, x: usize, cands: &[u32]) -> Vec<(usize, Neighbour)> {
        let members = self.members;
        let mut close: Vec<(f32, i64, usize, u8, f64, Option<f64>)> = cands
            .iter()
            .filter_map(|&c| {
                let c = c as usize;
                let (bound, kind, j, cos) = self.closeness(t, x, c)?;
                Some((bound, members[c].rowid, c, kind, j, cos))
            })
            .collect();
        close.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        // The best `K` found so far, and the best `K` of those that outrank `x`, as (similarity,
        // rowid) in the list's order.
        let mut best: Vec<(f32, i64)> = Vec::with_capacity(K + 1);
        let mut best_above: Vec<(f32, i64)> = Vec::with_capacity(K + 1);
        let before = |top: &[(f32, i64)], bound: f32, rowid: i64| {
            top.len() >= K && top[K - 1].0 >= bound && (top[K - 1].0 > bound || top[K - 1].1 < rowid)
        };
        let add = |top: &mut Vec<(f32, i64)>, e: (f32, i64)| {
            let at = top.partition_point(|&(s, r)| s > e.0 || (s == e.0 && r < e.1));
            if at < K {
                top.insert(at, e);
                top.truncate(K);
            }
        };
        let mut entries: Vec<(usize, Neighbour)> = Vec::new();
        for (bound, rowid, c, kind, j, cos) in close {
            let above = members[c].outranks(&members[x]);
            if before(&best, bound, rowid) && (!above || before(&best_above, bound, rowid)) {
                continue;
            }
            let sim = self.judged(t, x, c, j, cos);
            if sim <= 0.0 {
                continue;
            }
            add(&mut best, (sim, rowid));
            if above {
                add(&mut best_above, (sim, rowid));
            }
            // The id hash is filled in for the entries kept (choosing does not look at it).
            entries.push((c, Neighbour { rowid, id_hash: 0, sim, kind }));
        }
        entries
    }

    /// Member `x`'s list from its candidates, and its offers to the memories it keeps.
    fn search_one(&self, t: &Texts, x: usize, cands: &[u32]) -> Found {
        let members = self.members;
        if let Some(p) = self.progress {
            let n = self.searched_so_far.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            if n.is_multiple_of(REPORT_EVERY) {
                p(self.resumed.len() + n, self.pending.len());
            }
        }
        let entries = self.duplicates_of(t, x, cands);
        let mut kept = select_entries(members, x, entries);
        for (c, n) in &mut kept {
            n.id_hash = id_hash(&members[*c].id);
        }
        // The memories it keeps are offered it in return (and only those: offering it to
        // every candidate costs memory and time in clusters of thousands).
        let me = Neighbour { rowid: members[x].rowid, id_hash: id_hash(&members[x].id), sim: 0.0, kind: 0 };
        let offers: Vec<(u32, Neighbour)> =
            kept.iter().map(|(c, n)| (*c as u32, Neighbour { sim: n.sim, kind: n.kind, ..me })).collect();
        // Collected by reference, so that the list holds exactly its entries: collected from
        // `kept` by value, it would reuse `kept`'s allocation, sized for every scored candidate
        // (≈ 7 KB a memory, 5.5 GB over a million).
        let list: Vec<Neighbour> = kept.iter().map(|(_, n)| *n).collect();
        (x, list, offers)
    }

    /// The lists found, the stored lists that named a memory searched again (without it), and
    /// the offers taken by the lists with room for them.
    fn finish(mut self, found: Vec<Found>) -> Derived {
        let members = self.members;
        let mut out = Derived { trained: self.trained.clone(), ..Default::default() };
        let mut offers: Vec<(u32, usize, Neighbour)> = Vec::new();
        let resumed = std::mem::take(&mut self.resumed);
        for (x, list, o) in resumed.into_iter().chain(found) {
            offers.extend(o.into_iter().map(|(c, n)| (c, x, n)));
            // A memory still waiting for its vector is searched again once it has one.
            if self.ix.is_some() && self.vector_of(x).is_none() {
                continue;
            }
            out.lists.insert(x, (self.sem_keys(x).to_vec(), list));
        }
        // What others' lists say about a memory searched again is about its old content: those
        // entries go (the offers below put it back where it is still similar).
        // (Pending members are in rowid order: a binary search is cheaper than hashing each entry.)
        let searched: Vec<i64> = self.pending.iter().map(|&i| members[i].rowid).collect();
        let was_searched = |rowid: i64| searched.binary_search(&rowid).is_ok();
        for (i, m) in members.iter().enumerate() {
            if out.lists.contains_key(&i) {
                continue;
            }
            if let Some((keys, list)) = &m.derived {
                if list.iter().any(|n| was_searched(n.rowid)) {
                    let kept: Vec<Neighbour> = list.iter().filter(|n| !was_searched(n.rowid)).copied().collect();
                    out.lists.insert(i, (keys.clone(), kept));
                }
            }
        }
        take_offers(members, &mut out, offers);
        out
    }
}

impl Texts {
    /// Member `i`'s profile, made on first use.
    fn profile(&self, i: usize) -> &sameness::Profile {
        self.profiles[i].get_or_init(|| sameness::Profile::of(&self.texts[i]))
    }

    /// Reads the members a chunk compares (each memory of `cands_of` and its candidates) that
    /// are not read yet.
    fn read_for(&mut self, conn: &Connection, members: &[Member], cands_of: &[(usize, Vec<u32>)]) -> Result<()> {
        let mut wanted: Vec<u32> = cands_of
            .iter()
            .flat_map(|(x, c)| c.iter().copied().chain([*x as u32]))
            .filter(|&i| !self.read[i as usize])
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut content = conn.prepare_cached("SELECT content FROM memory_item WHERE rowid = ?1")?;
        for &i in &wanted {
            let c: String = content.query_row([members[i as usize].rowid], |r| r.get(0))?;
            self.shingles[i as usize] = dedup::shingles(&c);
            self.texts[i as usize] = c;
            self.read[i as usize] = true;
        }
        Ok(())
    }
}

/// Offers to others, in member order so the outcome does not depend on the threads: a
/// candidate takes the new memory when its list has room for something that similar.
fn take_offers(members: &[Member], out: &mut Derived, mut offers: Vec<(u32, usize, Neighbour)>) {
    offers.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let member_of = |rowid: i64| members.binary_search_by_key(&rowid, |m| m.rowid).ok();
    for (c, x, n) in offers {
        let c = c as usize;
        let entry = match out.lists.entry(c) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => match &members[c].derived {
                Some(d) => v.insert(d.clone()),
                None => continue,
            },
        };
        if entry.1.iter().any(|m| m.rowid == n.rowid) {
            continue;
        }
        let mut entries: Vec<(usize, Neighbour)> =
            entry.1.iter().filter_map(|m| member_of(m.rowid).map(|i| (i, *m))).collect();
        entries.push((x, n));
        entry.1 = select(members, c, entries);
    }
}

/// The neighbours `x` keeps of `entries` (member index, neighbour): its `K` most similar,
/// and its `K` most similar among those that outrank it (so that the one that dominates it is
/// kept even in a cluster of thousands of near-copies), best first.
fn select(members: &[Member], x: usize, entries: Vec<(usize, Neighbour)>) -> Vec<Neighbour> {
    // By reference: by value it would keep the room of every entry it was chosen from.
    select_entries(members, x, entries).iter().map(|(_, n)| *n).collect()
}

fn select_entries(members: &[Member], x: usize, mut entries: Vec<(usize, Neighbour)>) -> Vec<(usize, Neighbour)> {
    entries.sort_by(|a, b| b.1.sim.total_cmp(&a.1.sim).then(a.1.rowid.cmp(&b.1.rowid)));
    let mut dominating = 0;
    entries
        .into_iter()
        .enumerate()
        .filter(|(rank, (i, _))| {
            let keep_dom = members[*i].outranks(&members[x]) && dominating < K;
            if keep_dom {
                dominating += 1;
            }
            *rank < K || keep_dom
        })
        .map(|(_, e)| e)
        .collect()
}

/// Lists on the team store per call of its function (one call per list costs the server
/// about four times as much).
const LISTS_PER_CALL: usize = 5_000;

/// Stores lists (`[rowid, model, hash, keys, list]` each), replacing a memory's row: on the
/// team store through its function, in calls of [`LISTS_PER_CALL`] (Lethe's roles hold no write
/// right on the table there; a memory the team no longer holds is left out).
fn put_lists(conn: &Connection, rows: &[[crate::storage::db::Value; 5]]) -> Result<()> {
    if conn.is_postgres() {
        for chunk in rows.chunks(LISTS_PER_CALL) {
            crate::storage::postgres::store_derived(conn, "lethe_neighbours_store", chunk.iter().map(|r| &r[..]))?;
        }
        return Ok(());
    }
    let mut stmt = conn.prepare_cached(
        "INSERT OR REPLACE INTO lethe_neighbour (memory_rowid, model, hash, keys, list) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for r in rows {
        stmt.execute(r)?;
    }
    Ok(())
}

/// One row for [`put_lists`].
fn list_row(rowid: i64, model: &str, hash: &str, keys: &[u16], list: &[Neighbour]) -> [crate::storage::db::Value; 5] {
    use crate::storage::db::Value;
    [
        Value::Integer(rowid),
        Value::Text(model.to_string()),
        Value::Text(hash.to_string()),
        Value::Blob(encode_keys(keys)),
        Value::Blob(encode(list)),
    ]
}

/// The statement that stores a model's centroids unless some are stored.
fn put_centroids_sql(conn: &Connection) -> &'static str {
    if conn.is_postgres() {
        "SELECT lethe_centroid_store(?1, ?2)"
    } else {
        "INSERT OR IGNORE INTO lethe_centroid (model, data) VALUES (?1, ?2)"
    }
}

/// What separates the judgment and model from the digest of the members in the `model` of a
/// list kept part way by [`search_resumably`] (never a current list's `model`).
const PARTIAL: &str = "#partial/";

/// Searches the neighbours of every memory without current ones, in steps of
/// [`Passes::checkpoint_every`] memories, storing after each step the lists its memories
/// found themselves (before the offers of memories searched after them), under a `model` that
/// names the members searched among ([`Search::partial_model`]). A search cut short — cancelled
/// through `cancel`, or the process stopped — thus resumes where it stopped: the next search
/// of the same members takes those lists up and searches only the rest, and gives exactly the
/// lists one uninterrupted search gives. The final lists are then found and stored by the
/// caller's usual load, which finds nothing left to search. Runs outside any transaction (each
/// step reads, then writes its lists in a transaction of its own); a search too short to be
/// worth keeping part way, or on a connection that may not write, leaves everything to the
/// caller. Returns whether every list was kept.
pub fn search_resumably(
    conn: &Connection,
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
    cancel: Option<&std::sync::atomic::AtomicBool>,
    passes: Passes,
) -> Result<bool> {
    if !conn.is_autocommit() {
        return Ok(false);
    }
    let members = crate::store::read_tx(conn, || members(conn))?;
    let Some(search) = crate::store::read_tx(conn, || Search::new(conn, &members, progress, passes))? else {
        return Ok(true);
    };
    if !search.checkpointed() {
        return Ok(false);
    }
    if search.to_search.is_empty() {
        return Ok(true);
    }
    let model = search.partial_model();
    let buckets = search.buckets(None, &[]);
    let mut texts = crate::store::read_tx(conn, || search.texts(conn))?;
    let (mut first, mut all) = (true, true);
    for chunk in search.to_search.chunks(passes.checkpoint_every.max(1)) {
        if cancel.is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed)) {
            return Err(crate::Error::Cancelled);
        }
        let mut found = Vec::with_capacity(chunk.len());
        crate::store::read_tx(conn, || search.search_chunk(conn, &buckets, &mut texts, chunk, &mut found))?;
        match keep_partial(conn, &search, &model, first, &found) {
            Ok(()) => first = false,
            // Not allowed to write (a reader, a file that cannot be written): the caller's
            // load searches it all, and nothing is kept part way.
            Err(_) if first => return Ok(false),
            // A step that could not be kept (the file busy for longer than the wait): the
            // caller's load searches its memories again.
            Err(_) => all = false,
        }
    }
    Ok(all)
}

/// Stores the own lists of one step of [`search_resumably`] under `model` (and, with the
/// first step, the centroids the search trained, so that a resumed search buckets as this one
/// did), in one transaction.
fn keep_partial(conn: &Connection, search: &Search<'_>, model: &str, first: bool, found: &[Found]) -> Result<()> {
    conn.begin(TransactionBehavior::Immediate)?;
    let out = keep_partial_in(conn, search, model, first, found).and_then(|()| conn.commit());
    if out.is_err() && !conn.is_autocommit() {
        let _ = conn.rollback();
    }
    out
}

fn keep_partial_in(conn: &Connection, search: &Search<'_>, model: &str, first: bool, found: &[Found]) -> Result<()> {
    let tx = conn;
    if first {
        if let (Some(c), Some(e)) = (&search.trained, embed::shared()) {
            let bytes: Vec<u8> = c.iter().flat_map(|x| x.to_le_bytes()).collect();
            tx.execute(put_centroids_sql(tx), params![e.fingerprint(), bytes])?;
        }
    }
    let rows: Vec<_> = found
        .iter()
        // As `finish` does: a memory still waiting for its vector is searched again.
        .filter(|(x, _, _)| search.ix.is_none() || search.vector_of(*x).is_some())
        .filter_map(|(x, list, _)| {
            let m = &search.members[*x];
            Some(list_row(m.rowid, model, m.hash.as_ref()?, search.sem_keys(*x), list))
        })
        .collect();
    put_lists(tx, &rows)
}

/// Stores what [`derive`] found, in one transaction.
pub fn store(conn: &mut Connection, members: &[Member], d: &Derived) -> Result<()> {
    let fp = fingerprint().to_string();
    // A list is stored only while the content it was searched for is the memory's content
    // (its signature's hash): an edit since drops the signature or stores another, and the
    // edited memory is searched again rather than listed with its old content's neighbours.
    let current: HashSet<usize> = {
        let mut stmt = conn.prepare_cached("SELECT content_hash FROM lethe_signature WHERE memory_id = ?1")?;
        let mut out = HashSet::new();
        for &i in d.lists.keys() {
            let stored = stmt.query_row([&members[i].id], |r| r.get::<_, String>(0)).optional()?;
            if stored.is_some() && stored == members[i].hash {
                out.insert(i);
            }
        }
        out
    };
    if let (Some(c), Some(e)) = (&d.trained, embed::shared()) {
        let bytes: Vec<u8> = c.iter().flat_map(|x| x.to_le_bytes()).collect();
        crate::store::write_tx(conn, |tx| {
            tx.execute(put_centroids_sql(tx), params![e.fingerprint(), bytes])?;
            Ok(())
        })?;
    }
    let mut items: Vec<(&usize, &Entry)> = d.lists.iter().collect();
    items.sort_by_key(|(i, _)| **i);
    // One transaction: the lists of one search hold each other's entries (a memory's list
    // took the offers of those searched after it), so a reader that found some stored and
    // searched the rest would drop what the stored ones say about the rest as being about an
    // old content, and end with other lists than one search (measured: 20k realistic with the
    // first 5,000 stored). A store cut short leaves nothing, and the next load searches again.
    // Stored with the hash of the content it was searched for: if the content changed since,
    // the list is not current for the new one and is searched again.
    let rows: Vec<_> = items
        .iter()
        .filter_map(|(i, (keys, list))| {
            let h = members[**i].hash.as_ref().filter(|_| current.contains(*i))?;
            Some(list_row(members[**i].rowid, &fp, h, keys, list))
        })
        .collect();
    crate::store::write_tx(conn, |tx| put_lists(tx, &rows))?;
    Ok(())
}

/// Finds and stores neighbours for every memory that needs them (new, changed, or found with
/// another model); returns how many lists were written.
pub fn refresh(conn: &mut Connection) -> Result<usize> {
    crate::forgetting::ensure_signatures(conn)?;
    let members = crate::store::read_tx(conn, || members(conn))?;
    let d = crate::store::read_tx(conn, || derive(conn, &members))?;
    store(conn, &members, &d)?;
    Ok(d.lists.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_round_trip() {
        let l = vec![
            Neighbour { rowid: 7, id_hash: id_hash("mem_a"), sim: 0.75, kind: SAME_WORDS },
            Neighbour { rowid: i64::MAX, id_hash: 1, sim: 1.0, kind: SAME_MEANING },
        ];
        assert_eq!(decode(&encode(&l)), l);
        assert_eq!(decode_keys(&encode_keys(&[3, 65535])), vec![3, 65535]);
    }

    #[test]
    fn top_candidates_keeps_the_most_shared_and_no_spare_room() {
        // Member 5000's candidates: 3000 others once each, 2000..2300 twice (they share two
        // buckets with it), 100 three times.
        let mut cands: Vec<u32> = (0..3000).collect();
        cands.extend(2000..2300);
        cands.extend([100, 100]);
        let top = top_candidates(cands, 5000);
        assert_eq!(top.len(), CANDIDATES);
        assert_eq!(top.capacity(), CANDIDATES, "the list holds no more than its entries");
        assert!(top.contains(&100), "the most shared bucket count comes first");
        assert!(top.windows(2).all(|w| w[0] < w[1]), "in member order");
        // The rest of the room goes to the twice-shared nearest to 5000 in member order.
        assert!(top.iter().filter(|&&c| c != 100).all(|&c| (2045..2300).contains(&c)), "{top:?}");
        // Few candidates: all of them, once each.
        let few = top_candidates(vec![9, 3, 9, 4], 0);
        assert_eq!(few, vec![3, 4, 9]);
        assert_eq!(few.capacity(), 3);
    }
}
