//! Recall's stemmed BM25 in memory. FTS5's `bm25()` is an auxiliary function:
//! for every row that matches it looks up the row's size and walks the row's instances, and
//! `ORDER BY bm25(…) LIMIT k` ranks every match. On many-word questions the OR search ranks a
//! large part of the corpus that way (realistic text at 100k: 22k matches, ~20 ms).
//!
//! This index holds what FTS5's `lethe_fts` holds and scores as `bm25()` scores, to the bit:
//! - the tokens come from FTS5's own `porter unicode61` tokenizer, called through its C API
//!   (`fts5_api`), so every token is the one FTS5 stored and every query word the phrase FTS5
//!   would search;
//! - the row count, the token totals, each row's size and each term's document frequency are
//!   FTS5's (checked against its averages record at every use);
//! - a row's score is `bm25()`'s formula with the same operations in the same order (k1 1.2,
//!   b 0.75, IDF floored at 1e-6, column weights [`WEIGHTS`]), summed term at a time into a
//!   dense accumulator; matches are ordered as SQLite orders `ORDER BY bm25(…)`: by score,
//!   ties by rowid.
//!
//! A long-running process (the window, `lethe mcp`, the benchmark) builds it at its
//! [`BUILD_AT`]-th recall of a file (above [`BUILD_INLINE_MAX`] rows on a thread of its own,
//! FTS5 answering meanwhile) and patches it from the change journal, as it does the vector
//! index; a one-shot command asks FTS5. It also keeps what recall reads of each row besides
//! its words ([`Facts`]) and the exclusions from the tables beside `memory_item`. A query word
//! with no token at all, or a team store, is searched by FTS5 / PostgreSQL as before.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{Error, Result};
use crate::recall::Facts;
use crate::storage::db::Connection;

/// `lethe_fts`'s columns, in order, with the weight recall gives each (`LEXICAL_SQL`'s
/// `bm25(lethe_fts, …)` arguments). `context` is the text of the memory's session neighbours
/// (the view `lethe_fts_row`), weighted as the other fields below the memory's own text.
pub const COLUMNS: [&str; 7] = ["content", "tags", "task_goal", "workflow_name", "skill_name", "steps", "context"];
pub const WEIGHTS: [f64; 7] = [1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5];
/// The column of [`COLUMNS`] that holds the session neighbours' text.
pub const CONTEXT_COLUMN: usize = 6;
/// `bm25()`'s constants (fts5_aux.c).
const K1: f64 = 1.2;
const B: f64 = 0.75;
/// FTS5 stores at most this many bytes of a token (`FTS5_MAX_TOKEN_SIZE`).
const MAX_TOKEN: usize = 32768;
/// The recall of a file, counted per process, from which the index is built: the first one
/// (a one-shot command's only one) asks FTS5.
pub const BUILD_AT: usize = 2;
/// Changes the journal may list for a patch; more, and the index is built again.
const MAX_PATCH: usize = 10_000;
/// Up to this many rows the index is built in the recall that needs it (≈ 0.25 s of realistic
/// text); above, on a thread of its own with its own connection, while recall asks FTS5.
pub const BUILD_INLINE_MAX: i64 = 50_000;

pub use tokenizer::Tokenizer;

/// The only unsafe code of the lexical index: FTS5's C API, reached as SQLite documents it.
#[allow(unsafe_code)]
mod tokenizer {
    use std::ffi::{c_char, c_int, c_void};

    use rusqlite::ffi;

    use super::MAX_TOKEN;
    use crate::error::{Error, Result};

    /// FTS5's tokenizer of `lethe_fts` (`porter unicode61`), borrowed from a connection.
    pub struct Tokenizer<'c> {
        api: ffi::fts5_tokenizer,
        tok: *mut ffi::Fts5Tokenizer,
        _conn: std::marker::PhantomData<&'c rusqlite::Connection>,
    }

    impl<'c> Tokenizer<'c> {
        /// FTS5's `porter unicode61` tokenizer on `conn` (which must stay open while it is used:
        /// the borrow says so).
        pub fn new(conn: &'c rusqlite::Connection) -> Result<Tokenizer<'c>> {
            let unavailable = || Error::invalid("FTS5's tokenizer is not available on this connection");
            // SAFETY: the documented way to reach fts5_api (https://sqlite.org/fts5.html, 7.1):
            // the pointer is written through a pointer-typed bind. The statement is finalised
            // before the pointer is used; the api lives as long as the connection.
            unsafe {
                let db = conn.handle();
                let mut api: *mut ffi::fts5_api = std::ptr::null_mut();
                let mut stmt: *mut ffi::sqlite3_stmt = std::ptr::null_mut();
                if ffi::sqlite3_prepare_v2(db, c"SELECT fts5(?1)".as_ptr(), -1, &mut stmt, std::ptr::null_mut())
                    != ffi::SQLITE_OK
                {
                    return Err(unavailable());
                }
                ffi::sqlite3_bind_pointer(
                    stmt,
                    1,
                    (&mut api as *mut *mut ffi::fts5_api).cast::<c_void>(),
                    c"fts5_api_ptr".as_ptr(),
                    None,
                );
                ffi::sqlite3_step(stmt);
                ffi::sqlite3_finalize(stmt);
                if api.is_null() || (*api).iVersion < 2 {
                    return Err(unavailable());
                }
                let find = (*api).xFindTokenizer.ok_or_else(unavailable)?;
                let mut user: *mut c_void = std::ptr::null_mut();
                let mut tokenizer: ffi::fts5_tokenizer = std::mem::zeroed();
                if find(api, c"porter".as_ptr(), &mut user, &mut tokenizer) != ffi::SQLITE_OK {
                    return Err(unavailable());
                }
                let create = tokenizer.xCreate.ok_or_else(unavailable)?;
                let mut args = [c"unicode61".as_ptr()];
                let mut tok: *mut ffi::Fts5Tokenizer = std::ptr::null_mut();
                if create(user, args.as_mut_ptr(), 1, &mut tok) != ffi::SQLITE_OK || tok.is_null() {
                    return Err(unavailable());
                }
                Ok(Tokenizer { api: tokenizer, tok, _conn: std::marker::PhantomData })
            }
        }

        /// Calls `each` with every token of `text`, as FTS5 indexes a document (`query` false) or
        /// parses a query phrase (`query` true).
        pub fn tokens(&mut self, text: &[u8], query: bool, mut each: impl FnMut(&[u8])) -> Result<()> {
            unsafe extern "C" fn callback(
                ctx: *mut c_void,
                _flags: c_int,
                token: *const c_char,
                n: c_int,
                _start: c_int,
                _end: c_int,
            ) -> c_int {
                // SAFETY: `ctx` is the `&mut dyn FnMut` passed below, alive for the call; FTS5
                // hands `n` readable bytes at `token`.
                unsafe {
                    let each = &mut *ctx.cast::<&mut dyn FnMut(&[u8])>();
                    let bytes = std::slice::from_raw_parts(token.cast::<u8>(), (n.max(0) as usize).min(MAX_TOKEN));
                    each(bytes);
                }
                ffi::SQLITE_OK
            }
            let Ok(len) = c_int::try_from(text.len()) else {
                return Err(Error::invalid("text too long for the full-text tokenizer"));
            };
            let mut each: &mut dyn FnMut(&[u8]) = &mut each;
            let flags = if query { ffi::FTS5_TOKENIZE_QUERY } else { ffi::FTS5_TOKENIZE_DOCUMENT };
            let tokenize = self.api.xTokenize.ok_or_else(|| Error::invalid("FTS5 tokenizer without xTokenize"))?;
            // SAFETY: `tok` came from this api's xCreate and is deleted only in Drop.
            let rc = unsafe {
                tokenize(
                    self.tok,
                    (&mut each as *mut &mut dyn FnMut(&[u8])).cast::<c_void>(),
                    flags,
                    text.as_ptr().cast::<c_char>(),
                    len,
                    Some(callback),
                )
            };
            if rc != ffi::SQLITE_OK {
                return Err(Error::invalid(format!("FTS5's tokenizer failed (code {rc})")));
            }
            Ok(())
        }
    }

    impl Drop for Tokenizer<'_> {
        fn drop(&mut self) {
            if let Some(delete) = self.api.xDelete {
                // SAFETY: created by this api's xCreate, deleted once.
                unsafe { delete(self.tok) }
            }
        }
    }
}

/// A row of `lethe_fts` as FTS5 indexed it: each column's tokens, from FTS5's own tokenizer.
/// It answers what a column-filtered MATCH on that one row answers (whether some columns hold
/// a phrase: its tokens at consecutive places of one column) without FTS5's cost: a column
/// filter makes FTS5 walk a term's doclist past the row when the row lacks the term in those
/// columns (≈ 0.15 ms a word at a few thousand memories, more as the store grows).
pub struct IndexedRow {
    columns: Vec<Vec<Vec<u8>>>,
}

impl IndexedRow {
    /// The row at `rowid`, or `None` when there is none (SQLite only).
    pub fn read(conn: &Connection, tokenizer: &mut Tokenizer<'_>, rowid: i64) -> Result<Option<IndexedRow>> {
        let sql = format!("SELECT {} FROM lethe_fts WHERE rowid = ?1", COLUMNS.join(", "));
        let mut stmt = conn.prepare_cached(&sql)?;
        let Some(texts) = stmt
            .query_map([rowid], |r| {
                (0..COLUMNS.len()).map(|i| r.get::<_, Option<String>>(i)).collect::<Result<Vec<_>>>()
            })?
            .next()
            .transpose()?
        else {
            return Ok(None);
        };
        let mut columns = Vec::with_capacity(COLUMNS.len());
        for text in texts {
            let mut tokens = Vec::new();
            if let Some(text) = text {
                tokenizer.tokens(text.as_bytes(), false, |t| tokens.push(t.to_vec()))?;
            }
            columns.push(tokens);
        }
        Ok(Some(IndexedRow { columns }))
    }

    /// Whether one of `columns` (indices into [`COLUMNS`]) holds `phrase` ([`query_phrase`]).
    pub fn holds(&self, columns: std::ops::Range<usize>, phrase: &[Vec<u8>]) -> bool {
        !phrase.is_empty() && self.columns[columns].iter().any(|c| c.windows(phrase.len()).any(|w| w == phrase))
    }
}

/// The phrase FTS5 searches for a quoted query word: its tokens, in order (none for a word
/// FTS5 finds no token in, which matches nothing).
pub fn query_phrase(tokenizer: &mut Tokenizer<'_>, word: &str) -> Result<Vec<Vec<u8>>> {
    let mut phrase = Vec::new();
    tokenizer.tokens(word.as_bytes(), true, |t| phrase.push(t.to_vec()))?;
    Ok(phrase)
}

/// One row's entry in a term's posting list: its slot and the term's weighted frequency
/// (the sum of [`WEIGHTS`] over its instances, exact in an f32: multiples of ½).
#[derive(Debug, Clone, Copy)]
struct Posting {
    slot: u32,
    freq: f32,
}

/// The FTS5 index of `lethe_fts`, in memory. Rows are slots; a changed or deleted row's slot
/// is dead (its postings are skipped) and a changed row gets a new one.
#[derive(Debug, Clone, Default)]
pub struct LexicalIndex {
    terms: HashMap<Box<[u8]>, u32>,
    postings: Vec<Vec<Posting>>,
    /// Live rows holding each term (FTS5's `nHit` of a one-token phrase).
    df: Vec<u32>,
    rowids: Vec<i64>,
    /// Each slot's memory id (empty when the row has none).
    ids: Vec<Box<str>>,
    /// Each slot's session neighbours (before, after) whose text is its context: when one of
    /// them changes, this row is indexed again.
    around: Vec<[Option<i64>; 2]>,
    /// What recall reads of each slot's row besides its words (`None`: a value recall's
    /// statement would refuse; such a row is read from the file).
    facts: Vec<Option<Facts>>,
    /// The live slot of each rowid.
    by_rowid: FxHashMap<i64, u32>,
    /// Each slot's size in tokens, all columns (`xColumnSize(-1)`).
    lens: Vec<u32>,
    alive: Vec<bool>,
    /// Each slot's tokens in order, column after column, each column ended by [`END`]:
    /// `seqs[starts[s]..starts[s + 1]]` (phrases of several tokens are matched on it).
    seqs: Vec<u32>,
    starts: Vec<usize>,
    by_id: HashMap<Box<str>, u32>,
    rows: i64,
    tokens: i64,
    dead: usize,
    /// A word's last live row died since the vocabulary was last pruned.
    emptied: bool,
}

/// Per-thread scratch of a search: an accumulator and a phrase count per slot, and the slots
/// touched (reset after each search).
#[derive(Default)]
struct Scratch {
    score: Vec<f64>,
    hits: Vec<u16>,
    touched: Vec<u32>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// The query's phrases, each its tokens as term ids of an index (`None`: a token no row
/// holds). A word is one phrase; `cdn_base_url` is a phrase of three tokens.
pub type Phrases = Vec<Vec<Option<u32>>>;

/// Ends a column in a slot's token sequence (never a term id).
const END: u32 = u32::MAX;

impl LexicalIndex {
    /// Reads and tokenizes every row of `memory_item`, as FTS5's `rebuild` would.
    pub fn load(conn: &Connection) -> Result<LexicalIndex> {
        let sqlite = conn.sqlite_only("the in-memory lexical index")?;
        let mut tokenizer = Tokenizer::new(sqlite)?;
        let mut ix = LexicalIndex::default();
        let mut stmt = conn.prepare(&row_sql("ORDER BY m.rowid"))?;
        let mut rows = stmt.query([])?;
        let mut scratch = Vec::new();
        while let Some(r) = rows.next()? {
            let rowid: i64 = r.get(0)?;
            let (id, cols) = (crate::model::lenient::text(&r, 1)?, columns_of(&r)?);
            let facts = crate::recall::facts_of(&r, FACTS_AT).ok();
            ix.add(&mut tokenizer, rowid, id, &cols, around_of(&r)?, facts, &mut scratch)?;
        }
        Ok(ix)
    }

    /// What recall reads of the live row at `rowid` besides its words: `None` when the index
    /// does not hold it or could not read it as recall's statement does.
    pub fn facts(&self, rowid: i64) -> Option<&Facts> {
        self.facts[*self.by_rowid.get(&rowid)? as usize].as_ref()
    }

    /// The memory id of the live row at `rowid` ("" when unknown).
    pub fn id(&self, rowid: i64) -> &str {
        self.by_rowid.get(&rowid).map_or("", |&s| &self.ids[s as usize])
    }

    /// Live rows.
    pub fn len(&self) -> usize {
        self.rows as usize
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    // A row's parts as the statement read them, each its own argument.
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        tokenizer: &mut Tokenizer,
        rowid: i64,
        id: Option<String>,
        cols: &[Option<Vec<u8>>; 7],
        around: [Option<i64>; 2],
        facts: Option<Facts>,
        scratch: &mut Vec<(u32, f32)>,
    ) -> Result<()> {
        scratch.clear();
        let slot = self.rowids.len() as u32;
        if self.starts.is_empty() {
            self.starts.push(self.seqs.len());
        }
        let mut len: u32 = 0;
        for (c, text) in cols.iter().enumerate() {
            let Some(text) = text else {
                self.seqs.push(END);
                continue;
            };
            let weight = WEIGHTS[c] as f32;
            let terms = &mut self.terms;
            let postings = &mut self.postings;
            let df = &mut self.df;
            let seqs = &mut self.seqs;
            tokenizer.tokens(text, false, |token| {
                len += 1;
                let term = match terms.get(token) {
                    Some(&t) => t,
                    None => {
                        let t = postings.len() as u32;
                        terms.insert(token.into(), t);
                        postings.push(Vec::new());
                        df.push(0);
                        t
                    }
                };
                scratch.push((term, weight));
                seqs.push(term);
            })?;
            self.seqs.push(END);
        }
        scratch.sort_unstable_by_key(|&(t, _)| t);
        let mut i = 0;
        while i < scratch.len() {
            let term = scratch[i].0;
            let mut freq = 0.0f32;
            while i < scratch.len() && scratch[i].0 == term {
                freq += scratch[i].1;
                i += 1;
            }
            self.postings[term as usize].push(Posting { slot, freq });
            self.df[term as usize] += 1;
        }
        self.starts.push(self.seqs.len());
        self.rowids.push(rowid);
        self.lens.push(len);
        self.alive.push(true);
        self.around.push(around);
        self.facts.push(facts);
        self.by_rowid.insert(rowid, slot);
        match id {
            Some(id) => {
                self.by_id.insert(id.as_str().into(), slot);
                self.ids.push(id.into());
            }
            None => self.ids.push("".into()),
        }
        self.rows += 1;
        self.tokens += i64::from(len);
        Ok(())
    }

    fn remove(&mut self, slot: u32) {
        let s = slot as usize;
        if !self.alive[s] {
            return;
        }
        self.alive[s] = false;
        self.facts[s] = None;
        if self.by_rowid.get(&self.rowids[s]) == Some(&slot) {
            self.by_rowid.remove(&self.rowids[s]);
        }
        let mut distinct: Vec<u32> =
            self.seqs[self.starts[s]..self.starts[s + 1]].iter().copied().filter(|&t| t != END).collect();
        distinct.sort_unstable();
        distinct.dedup();
        for t in distinct {
            self.df[t as usize] -= 1;
            if self.df[t as usize] == 0 {
                self.emptied = true;
            }
        }
        // A deleted memory's words leave the process too, not only the file: its sequence and
        // id are overwritten now, and a word no live row holds any more leaves the vocabulary
        // at the end of the patch (`forget_unused_words`).
        self.seqs[self.starts[s]..self.starts[s + 1]].fill(END);
        self.ids[s] = "".into();
        self.rows -= 1;
        self.tokens -= i64::from(self.lens[s]);
        self.dead += 1;
    }

    /// Drops from the vocabulary every word no live row holds (their postings are dead slots
    /// only; a row that brings the word back gets a new term id).
    fn forget_unused_words(&mut self) {
        if std::mem::take(&mut self.emptied) {
            let df = &self.df;
            self.terms.retain(|_, t| df[*t as usize] > 0);
        }
    }

    /// Brings the rows of the memories `ids` up to date (each id's old slot dies; a row that
    /// still exists is tokenized again), and the rows whose context holds their text: their
    /// session neighbours before the change and after it.
    fn apply(&mut self, conn: &Connection, ids: &[String]) -> Result<()> {
        let sqlite = conn.sqlite_only("the in-memory lexical index")?;
        let mut tokenizer = Tokenizer::new(sqlite)?;
        let mut stmt = conn.prepare_cached(&row_sql("WHERE m.id = ?1"))?;
        let mut scratch = Vec::new();
        let mut redone: FxHashSet<i64> = FxHashSet::default();
        let mut neighbours: Vec<i64> = Vec::new();
        for id in ids {
            if let Some(&slot) = self.by_id.get(id.as_str()) {
                neighbours.extend(self.around[slot as usize].iter().flatten());
                self.remove(slot);
                self.by_id.remove(id.as_str());
            }
            let mut rows = stmt.query([id])?;
            if let Some(r) = rows.next()? {
                let rowid: i64 = r.get(0)?;
                let cols = columns_of(&r)?;
                // A row whose rowid moved to another id leaves its old slot too.
                if let Some(&old) = self.by_rowid.get(&rowid) {
                    neighbours.extend(self.around[old as usize].iter().flatten());
                    self.remove(old);
                }
                let around = around_of(&r)?;
                neighbours.extend(around.iter().flatten());
                let facts = crate::recall::facts_of(&r, FACTS_AT).ok();
                self.add(&mut tokenizer, rowid, Some(id.clone()), &cols, around, facts, &mut scratch)?;
                redone.insert(rowid);
            }
        }
        // A neighbour's context changed with the memory; its own neighbours' did not.
        let mut by_rowid = conn.prepare_cached(&row_sql("WHERE m.rowid = ?1"))?;
        for rowid in neighbours {
            if !redone.insert(rowid) {
                continue;
            }
            let old = self.by_rowid.get(&rowid).copied();
            if let Some(old) = old {
                let old_id = std::mem::take(&mut self.ids[old as usize]);
                self.remove(old);
                self.by_id.remove(&old_id);
            }
            let mut rows = by_rowid.query([rowid])?;
            if let Some(r) = rows.next()? {
                let id = crate::model::lenient::text(&r, 1)?;
                let cols = columns_of(&r)?;
                let facts = crate::recall::facts_of(&r, FACTS_AT).ok();
                self.add(&mut tokenizer, rowid, id, &cols, around_of(&r)?, facts, &mut scratch)?;
            }
        }
        self.forget_unused_words();
        if self.dead > 1024 && self.dead * 4 > self.rowids.len() {
            self.compact();
        }
        Ok(())
    }

    /// Drops the dead slots and their postings; live slots keep their order.
    fn compact(&mut self) {
        let mut new_slot = vec![u32::MAX; self.rowids.len()];
        let mut n = 0u32;
        for (s, &a) in self.alive.iter().enumerate() {
            if a {
                new_slot[s] = n;
                n += 1;
            }
        }
        for list in &mut self.postings {
            list.retain_mut(|p| {
                let to = new_slot[p.slot as usize];
                p.slot = to;
                to != u32::MAX
            });
        }
        let mut seqs = Vec::with_capacity(self.seqs.len());
        let mut starts = vec![0];
        let (mut rowids, mut lens) = (Vec::with_capacity(n as usize), Vec::with_capacity(n as usize));
        let (mut ids, mut facts) = (Vec::with_capacity(n as usize), Vec::with_capacity(n as usize));
        let mut around = Vec::with_capacity(n as usize);
        for s in 0..self.rowids.len() {
            if self.alive[s] {
                seqs.extend_from_slice(&self.seqs[self.starts[s]..self.starts[s + 1]]);
                starts.push(seqs.len());
                rowids.push(self.rowids[s]);
                lens.push(self.lens[s]);
                ids.push(std::mem::take(&mut self.ids[s]));
                around.push(self.around[s]);
                facts.push(self.facts[s].take());
            }
        }
        for slot in self.by_rowid.values_mut() {
            *slot = new_slot[*slot as usize];
        }
        for slot in self.by_id.values_mut() {
            *slot = new_slot[*slot as usize];
        }
        self.by_id.retain(|_, s| *s != u32::MAX);
        self.seqs = seqs;
        self.starts = starts;
        self.rowids = rowids;
        self.lens = lens;
        self.ids = ids;
        self.around = around;
        self.facts = facts;
        self.alive = vec![true; n as usize];
        self.dead = 0;
    }

    /// Whether this index holds what FTS5's averages record says `lethe_fts` holds: its row
    /// count and its token total (a write the journal did not show would change them).
    fn agrees_with_fts(&self, conn: &Connection) -> Result<bool> {
        Ok(fts_totals(conn)? == Some((self.rows, self.tokens)))
    }

    /// The phrases FTS5 would search for these query words, or `None` when a word has no
    /// token at all (left to FTS5).
    pub fn phrases(&self, conn: &Connection, words: &[String]) -> Result<Option<Phrases>> {
        let sqlite = conn.sqlite_only("the in-memory lexical index")?;
        let mut tokenizer = Tokenizer::new(sqlite)?;
        let mut out = Vec::with_capacity(words.len());
        for w in words {
            let mut phrase: Vec<Option<u32>> = Vec::with_capacity(1);
            tokenizer.tokens(w.as_bytes(), true, |t| phrase.push(self.terms.get(t).copied()))?;
            if phrase.is_empty() {
                return Ok(None);
            }
            out.push(phrase);
        }
        Ok(Some(out))
    }

    /// The live rows holding a phrase of several tokens, each with its weighted number of
    /// instances (an instance: the tokens at consecutive places of one column, counted at
    /// every place one starts, as FTS5 counts them).
    fn phrase_postings(&self, phrase: &[Option<u32>]) -> Vec<Posting> {
        let Some(tokens) = phrase.iter().copied().collect::<Option<Vec<u32>>>() else {
            return Vec::new();
        };
        let rarest = *tokens.iter().min_by_key(|&&t| self.df[t as usize]).expect("two tokens or more");
        let mut out = Vec::new();
        for p in &self.postings[rarest as usize] {
            let s = p.slot as usize;
            if !self.alive[s] {
                continue;
            }
            let seq = &self.seqs[self.starts[s]..self.starts[s + 1]];
            let (mut column, mut freq) = (0usize, 0.0f32);
            for (i, &t) in seq.iter().enumerate() {
                if t == END {
                    column += 1;
                } else if seq[i..].starts_with(&tokens) {
                    freq += WEIGHTS[column] as f32;
                }
            }
            if freq > 0.0 {
                out.push(Posting { slot: p.slot, freq });
            }
        }
        out
    }

    /// The rows matching every phrase (`all`) or any, each with its `bm25()` as FTS5 gives it
    /// (negative; lower is better), unordered.
    pub fn search(&self, phrases: &[Vec<Option<u32>>], all: bool) -> Vec<(i64, f64)> {
        let need = if all { phrases.len() } else { 1 };
        self.search_counted(phrases).into_iter().filter(|m| usize::from(m.2) >= need).map(|(r, s, _)| (r, s)).collect()
    }

    /// The rows matching any phrase, each with its `bm25()` and the number of phrases it
    /// matches: both of recall's searches (every word, then any) from one pass, since
    /// `bm25()` sums over all the query's phrases under either.
    pub fn search_counted(&self, phrases: &[Vec<Option<u32>>]) -> Vec<(i64, f64, u16)> {
        if phrases.is_empty() || self.rows == 0 {
            return Vec::new();
        }
        let avgdl = self.tokens as f64 / self.rows as f64;
        SCRATCH.with(|cell| {
            let mut s = cell.borrow_mut();
            let Scratch { score, hits, touched } = &mut *s;
            if score.len() < self.rowids.len() {
                score.resize(self.rowids.len(), 0.0);
                hits.resize(self.rowids.len(), 0);
            }
            for phrase in phrases {
                let built;
                let list: &[Posting] = match phrase.as_slice() {
                    [Some(term)] => &self.postings[*term as usize],
                    [None] => &[],
                    _ => {
                        built = self.phrase_postings(phrase);
                        &built
                    }
                };
                let n_hit = match phrase.as_slice() {
                    [Some(term)] => i64::from(self.df[*term as usize]),
                    _ => list.len() as i64,
                };
                // fts5Bm25GetData: log((nRow - nHit + 0.5) / (nHit + 0.5)), at least 1e-6.
                let mut idf = (((self.rows - n_hit) as f64 + 0.5) / (n_hit as f64 + 0.5)).ln();
                if idf <= 0.0 {
                    idf = 1e-6;
                }
                for p in list {
                    let slot = p.slot as usize;
                    if !self.alive[slot] {
                        continue;
                    }
                    let f = f64::from(p.freq);
                    let d = f64::from(self.lens[slot]);
                    // fts5Bm25Function, term by term in the query's order.
                    score[slot] += idf * ((f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * d / avgdl)));
                    if hits[slot] == 0 {
                        touched.push(p.slot);
                    }
                    hits[slot] += 1;
                }
            }
            let mut out = Vec::with_capacity(touched.len());
            for &slot in touched.iter() {
                let s = slot as usize;
                out.push((self.rowids[s], -score[s], hits[s]));
                score[s] = 0.0;
                hits[s] = 0;
            }
            touched.clear();
            out
        })
    }
}

/// Puts the best `n` matches (all when `None`) first, in `ORDER BY bm25(…)`'s order, and
/// drops the rest: lower `bm25()` first, ties by rowid (FTS5 visits rows by rowid and
/// SQLite's sorter keeps equal keys in the order met).
pub fn best(matches: &mut Vec<(i64, f64)>, n: Option<usize>) {
    let k = best_first(matches, n);
    matches.truncate(k);
}

/// [`best`] in place: the best `n` (all when `None`) come first, in order, and their number
/// is returned; the rest stay behind them in no order (so that a caller can ask again for
/// more without a copy of all the matches).
pub fn best_first(matches: &mut [(i64, f64)], n: Option<usize>) -> usize {
    let order = |a: &(i64, f64), b: &(i64, f64)| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0));
    let n = n.unwrap_or(matches.len()).min(matches.len());
    if n == 0 {
        return 0;
    }
    if n < matches.len() {
        matches.select_nth_unstable_by(n - 1, order);
    }
    matches[..n].sort_unstable_by(order);
    n
}

/// FTS5's row count and token total of `lethe_fts`, from its averages record (`None` when the
/// record cannot be read; `(0, 0)` for an index never written).
fn fts_totals(conn: &Connection) -> Result<Option<(i64, i64)>> {
    let block: Option<Vec<u8>> = conn
        .prepare_cached("SELECT block FROM lethe_fts_data WHERE id = 1")?
        .query_map([], |r| r.get(0))?
        .next()
        .transpose()?;
    let Some(block) = block else { return Ok(Some((0, 0))) };
    let mut at = 0;
    let mut next = || -> Option<i64> {
        let (v, n) = varint(block.get(at..)?)?;
        at += n;
        Some(v as i64)
    };
    let Some(rows) = next() else { return Ok(None) };
    let mut tokens = 0i64;
    for _ in 0..COLUMNS.len() {
        let Some(t) = next() else { return Ok(None) };
        tokens += t;
    }
    Ok(Some((rows, tokens)))
}

/// SQLite's varint (1–9 bytes, big-endian, 7 bits a byte, the ninth all 8).
fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    for i in 0..9 {
        let byte = *b.get(i)?;
        if i == 8 {
            return Some(((v << 8) | u64::from(byte), 9));
        }
        v = (v << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// A row's indexed columns as the bytes FTS5 tokenizes (`CAST(… AS TEXT)`: text or NULL; the
/// bytes as stored, valid UTF-8 or not).
fn columns_of(r: &crate::storage::db::Row) -> Result<[Option<Vec<u8>>; 7]> {
    use crate::storage::db::ValueRef;
    let mut cols: [Option<Vec<u8>>; 7] = Default::default();
    for (i, c) in cols.iter_mut().enumerate() {
        *c = match r.get_ref(2 + i)? {
            ValueRef::Text(t) | ValueRef::Blob(t) => Some(t.to_vec()),
            _ => None,
        };
    }
    Ok(cols)
}

/// The statement that reads rows as FTS5 reads them (each column's text as `sqlite3_value_text`
/// gives it), with a tail (`WHERE …` / `ORDER BY …`).
fn row_sql(tail: &str) -> String {
    let cols: Vec<String> = COLUMNS.iter().map(|c| format!("CAST(f.{c} AS TEXT)")).collect();
    format!(
        "SELECT m.rowid, m.id, {}, {}, f.before_rowid, f.after_rowid FROM memory_item m \
         JOIN lethe_fts_row f ON f.memory_rowid = m.rowid {tail}",
        cols.join(", "),
        crate::recall::FACT_COLUMNS
    )
}

/// Where [`row_sql`]'s fact columns start.
const FACTS_AT: usize = 2 + COLUMNS.len();

/// A row's session neighbours, as [`row_sql`] reads them after the facts.
fn around_of(r: &crate::storage::db::Row) -> Result<[Option<i64>; 2]> {
    let at = FACTS_AT + crate::recall::FACT_COLUMN_COUNT;
    Ok([r.get(at)?, r.get(at + 1)?])
}

/// What leaves recall besides a row's own state, from the tables beside `memory_item`:
/// superseded memories, archived payloads (not restored) and task logs with their kind.
#[derive(Debug, Default)]
pub struct Exclusions {
    superseded: FxHashSet<String>,
    archived: FxHashSet<String>,
    task_kinds: FxHashMap<String, Option<String>>,
}

impl Exclusions {
    fn load(conn: &Connection) -> Result<Exclusions> {
        let strings = |sql: &str| -> Result<FxHashSet<String>> {
            conn.prepare(sql)?.query_map([], |r| r.get::<_, String>(0))?.collect()
        };
        let mut task_kinds = FxHashMap::default();
        if crate::session::has_tables(conn)? {
            let mut stmt = conn.prepare("SELECT memory_id, task_kind FROM lethe_task_log ORDER BY rowid")?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                // The first row of a memory, as recall's scalar subquery reads it.
                task_kinds.entry(r.get::<_, String>(0)?).or_insert(r.get::<_, Option<String>>(1)?);
            }
        }
        Ok(Exclusions {
            superseded: strings("SELECT old_id FROM lethe_supersede")?,
            archived: strings("SELECT memory_id FROM lethe_archive WHERE restored_at IS NULL")?,
            task_kinds,
        })
    }

    /// Whether the memory `id` is superseded or archived, and its task kind when it is a
    /// task log.
    pub fn of(&self, id: &str) -> (bool, Option<String>) {
        (self.superseded.contains(id) || self.archived.contains(id), self.task_kinds.get(id).cloned().flatten())
    }
}

/// What changes when the tables [`Exclusions`] reads change: their sizes and newest rows.
fn exclusions_key(conn: &Connection) -> Result<[i64; 6]> {
    let task = if crate::session::has_tables(conn)? {
        "(SELECT COUNT(*) FROM lethe_task_log), (SELECT COALESCE(MAX(rowid), 0) FROM lethe_task_log)"
    } else {
        "0, 0"
    };
    conn.prepare_cached(&format!(
        "SELECT (SELECT COUNT(*) FROM lethe_supersede), (SELECT COALESCE(MAX(rowid), 0) FROM lethe_supersede), \
         (SELECT COUNT(*) FROM lethe_archive WHERE restored_at IS NULL), (SELECT COALESCE(MAX(rowid), 0) FROM lethe_archive), {task}"
    ))?
    .query_row([], |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?]))
}

/// A long-running process's copy of what recall reads: the lexical index with each row's
/// facts, and the exclusions.
#[derive(Debug, Clone)]
pub struct Kept {
    pub index: Arc<LexicalIndex>,
    pub exclusions: Arc<Exclusions>,
}

/// One index per process: the last file recalled from.
struct Cached {
    path: String,
    seq: i64,
    recalls: usize,
    index: Option<Arc<LexicalIndex>>,
    exclusions: Option<([i64; 6], Arc<Exclusions>)>,
    /// A build runs on its own thread.
    building: bool,
    /// A build on its own thread failed: this process leaves the file's recall to FTS5.
    failed: bool,
}

static CACHE: Mutex<Option<Cached>> = Mutex::new(None);

/// The index of `conn`'s file, up to date in the caller's read transaction, once this process
/// has recalled from the file [`BUILD_AT`] times and, for a file of more than
/// [`BUILD_INLINE_MAX`] rows, once the build on the side has finished; `None` before, on a
/// team store and for a file in memory (those ask FTS5 or PostgreSQL).
pub fn index(conn: &Connection) -> Result<Option<Kept>> {
    index_with(conn, BUILD_INLINE_MAX)
}

/// [`index`] with another limit for building in the recall itself (tests and the benchmark
/// use 0 to build on the side).
pub fn index_with(conn: &Connection, inline_max: i64) -> Result<Option<Kept>> {
    if conn.is_postgres() {
        return Ok(None);
    }
    let path = conn.path().unwrap_or("").to_string();
    if path.is_empty() {
        return Ok(None);
    }
    let mut cache = CACHE.lock().map_err(|_| Error::invalid("lexical index cache poisoned"))?;
    let seq = crate::store::last_change_seq(conn)?;
    let c = match cache.as_mut() {
        Some(c) if c.path == path => c,
        _ => {
            *cache =
                Some(Cached { path, seq, recalls: 0, index: None, exclusions: None, building: false, failed: false });
            cache.as_mut().expect("just set")
        }
    };
    c.recalls = c.recalls.saturating_add(1);
    if c.index.is_none() && c.recalls < BUILD_AT {
        return Ok(None);
    }
    if c.index.is_some() && c.seq != seq {
        // Taken out first: a patch that cannot read its rows leaves no index, and this
        // process leaves the file's recall to FTS5 (`failed`; the same rows read by recall's
        // own statement give the same answers, or its error).
        let held = c.index.take().expect("checked");
        c.index = match crate::store::changes_since(conn, c.seq, MAX_PATCH)?.1 {
            Some(ids) => {
                let mut ix = Arc::try_unwrap(held).unwrap_or_else(|shared| (*shared).clone());
                match ix.apply(conn, &ids) {
                    Ok(()) => Some(Arc::new(ix)),
                    Err(_) => {
                        c.failed = true;
                        None
                    }
                }
            }
            None => None,
        };
        c.seq = seq;
    }
    let index = match &c.index {
        Some(ix) if ix.agrees_with_fts(conn)? => ix.clone(),
        _ => {
            c.index = None;
            if c.building || c.failed {
                return Ok(None);
            }
            let rows = fts_totals(conn)?.map_or(i64::MAX, |t| t.0);
            if rows > inline_max {
                c.building = build_aside(c.path.clone());
                c.failed = !c.building;
                return Ok(None);
            }
            let Ok(ix) = LexicalIndex::load(conn) else {
                c.failed = true;
                return Ok(None);
            };
            let ix = Arc::new(ix);
            c.seq = seq;
            c.index = Some(ix.clone());
            ix
        }
    };
    let key = exclusions_key(conn)?;
    let exclusions = match &c.exclusions {
        Some((k, e)) if *k == key => e.clone(),
        _ => {
            let Ok(e) = Exclusions::load(conn) else {
                (c.failed, c.index) = (true, None);
                return Ok(None);
            };
            let e = Arc::new(e);
            c.exclusions = Some((key, e.clone()));
            e
        }
    };
    Ok(Some(Kept { index, exclusions }))
}

/// Builds the index of the file at `path` on a thread of its own, with its own read-only
/// connection and read transaction, and hands it to the process cache with the journal
/// position it was read at (the next recall patches it from there).
fn build_aside(path: String) -> bool {
    std::thread::Builder::new()
        .name("lethe-lexical-index".into())
        .spawn(move || {
            let built = crate::store::open_read_only(&path).and_then(|conn| {
                crate::store::read_tx(&conn, || Ok((crate::store::last_change_seq(&conn)?, LexicalIndex::load(&conn)?)))
            });
            let Ok(mut cache) = CACHE.lock() else { return };
            let Some(c) = cache.as_mut().filter(|c| c.path == path) else { return };
            c.building = false;
            match built {
                Ok((seq, ix)) => {
                    c.index = Some(Arc::new(ix));
                    c.seq = seq;
                }
                Err(_) => c.failed = true,
            }
        })
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_read_as_sqlite_writes_them() {
        assert_eq!(varint(&[0x05]), Some((5, 1)));
        assert_eq!(varint(&[0x81, 0x00]), Some((128, 2)));
        assert_eq!(varint(&[0x83, 0xff, 0x7f]), Some(((3 << 14) | (0x7f << 7) | 0x7f, 3)));
        assert_eq!(varint(&[0xff; 9]), Some((u64::MAX, 9)));
        assert_eq!(varint(&[0x80]), None);
    }

    #[test]
    fn an_indexed_row_holds_a_word_where_a_column_filtered_match_finds_it() {
        let conn = crate::storage::sqlite::open_in_memory().unwrap();
        let rows: [[&str; 7]; 4] = [
            ["Rotated the e-mail token", "Ops", "", "", "", "", "the deploy went ÉCOLE"],
            ["", "", "goal: rotating keys", "", "", "step one", ""],
            ["mail e", "", "", "", "", "", "tokens e-mail"],
            ["nothing here", "", "", "", "", "", "rotation of emails"],
        ];
        for (i, r) in rows.iter().enumerate() {
            let sql = format!(
                "INSERT INTO lethe_fts (rowid, {}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                COLUMNS.join(", ")
            );
            conn.execute(&sql, crate::storage::db::params![i as i64 + 1, r[0], r[1], r[2], r[3], r[4], r[5], r[6]])
                .unwrap();
        }
        let words =
            ["rotate", "rotated", "e-mail", "email", "mail", "ecole", "TOKEN", "ops", "keys", "step", "absent", "--"];
        let parts = [0..CONTEXT_COLUMN, CONTEXT_COLUMN..CONTEXT_COLUMN + 1, 0..1, 2..3];
        let mut tokenizer = Tokenizer::new(conn.sqlite().unwrap()).unwrap();
        let mut found = 0;
        for rowid in 1..=rows.len() as i64 {
            let row = IndexedRow::read(&conn, &mut tokenizer, rowid).unwrap().unwrap();
            for part in &parts {
                let names = COLUMNS[part.clone()].join(" ");
                for w in words {
                    let fts: bool = conn
                        .query_row(
                            "SELECT EXISTS (SELECT 1 FROM lethe_fts WHERE lethe_fts MATCH ?1 AND rowid = ?2)",
                            crate::storage::db::params![format!("{{{names}}} : \"{w}\""), rowid],
                            |r| r.get(0),
                        )
                        .unwrap_or(false);
                    let phrase = query_phrase(&mut tokenizer, w).unwrap();
                    assert_eq!(row.holds(part.clone(), &phrase), fts, "row {rowid}, {names}, {w:?}");
                    found += usize::from(fts);
                }
            }
        }
        assert!(found >= 15, "the rows hold words in several columns ({found})");
        assert!(IndexedRow::read(&conn, &mut tokenizer, 99).unwrap().is_none());
    }

    #[test]
    fn best_orders_by_score_then_rowid_and_keeps_the_first_n() {
        let mut m = vec![(5, -1.0), (3, -2.0), (4, -1.0), (1, -0.5), (2, -2.0)];
        best(&mut m, Some(3));
        assert_eq!(m, vec![(2, -2.0), (3, -2.0), (4, -1.0)]);
        let mut all = vec![(5, -1.0), (3, -2.0), (4, -1.0), (1, -0.5), (2, -2.0)];
        best(&mut all, None);
        assert_eq!(all.iter().map(|x| x.0).collect::<Vec<_>>(), vec![2, 3, 4, 5, 1]);
    }
}
