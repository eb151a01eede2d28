//! Similarity: when two memories say the same thing. Same words (`dedup`: shingles, MinHash
//! band keys, Jaccard), same meaning (`embed`: the local potion-base-8M model; `semantic`:
//! stored vectors, the exact scan, cosine → duplication; `lexical`: recall's stemmed BM25 in
//! memory, FTS5's index and scores without its per-row cost), and the stored neighbour lists
//! both feed (`neighbours`), which duplication and the duplicates review read.

pub mod dedup;
pub mod embed;
pub mod lexical;
pub mod neighbours;
pub mod sameness;
pub mod semantic;

/// From what size the data-parallel passes (on rayon's pool: as many threads as cores) split
/// their work, and how much one step of the neighbour search holds at once. The results never
/// depend on them: a pass split into any number of parts gives what one pass gives. Tests pass
/// [`Passes::always`] so that small inputs take the path large ones take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Passes {
    /// Rows from which a snapshot load reads the stored lists and the last rows on a second
    /// connection, beside the first rows.
    pub second_reader_from: usize,
    /// Links per part of the links and duplication passes (at most one part per thread).
    pub links_per_part: usize,
    /// Memories per part of the neighbour search's candidates and comparisons.
    pub search_per_part: usize,
    /// Memories whose candidates one step of the neighbour search gathers and compares (only
    /// one step's candidates, up to 1 KB a memory, are held at once).
    pub search_chunk: usize,
    /// Memories whose own lists a long neighbour search stores between two checkpoints, so
    /// that a search cut short (the window closed, the process stopped) resumes there; a
    /// search of fewer than two checkpoints' worth is not kept part way.
    pub checkpoint_every: usize,
}

impl Default for Passes {
    fn default() -> Self {
        Passes {
            second_reader_from: 50_000,
            links_per_part: 100_000,
            search_per_part: 1_000,
            search_chunk: 65_536,
            checkpoint_every: 8_192,
        }
    }
}

impl Passes {
    /// Every pass split as finely as it goes, and the search in steps of a few hundred.
    pub fn always() -> Self {
        Passes { second_reader_from: 0, links_per_part: 1, search_per_part: 1, search_chunk: 500, checkpoint_every: 64 }
    }

    /// Row ranges of `0..rows` for a pass over `links` links, in order: one per
    /// [`Passes::links_per_part`] links, at most one per thread (at least two when split).
    pub fn link_parts(&self, rows: usize, links: usize) -> Vec<std::ops::Range<usize>> {
        let threads = rayon::current_num_threads().max(2);
        let parts = (links / self.links_per_part.max(1)).clamp(1, threads).min(rows.max(1));
        let per = rows.div_ceil(parts).max(1);
        (0..parts).map(|p| (p * per).min(rows)..((p + 1) * per).min(rows)).collect()
    }
}
