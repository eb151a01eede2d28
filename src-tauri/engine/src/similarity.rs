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
