//! Content similarity for the duplication feature D (docs/scores.md): Jaccard similarity of word
//! shingles, with MinHash signatures banded for locality-sensitive hashing so that finding
//! near-copies stays sub-quadratic. Signatures are computed at write time and stored.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use sha2::{Digest, Sha256};

/// 16 bands of 4 rows: pairs with Jaccard ≥ 0.5 become candidates with probability ≥ 0.64,
/// pairs at 0.8 with probability 0.9996; every candidate is then checked exactly.
pub const BANDS: usize = 16;
pub const ROWS: usize = 4;
const HASHES: usize = BANDS * ROWS;

/// Lowercased words of letters and digits.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(|w| w.to_lowercase()).collect()
}

/// The normalised form used for exact-duplicate detection at write time.
pub fn normalized(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for w in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        if w.is_ascii() {
            out.extend(w.bytes().map(|b| char::from(b.to_ascii_lowercase())));
        } else {
            out.push_str(&w.to_lowercase());
        }
    }
    out
}

/// The team store's statement for one signature (`?1` the memory's id, `?2` its content hash,
/// `?3` its band keys): the server's function, which checks that the memory is the caller's
/// team's and never rewrites a stored signature (a change of text drops it first). Lethe's
/// roles hold no write right on the table there.
pub(crate) const SIGNATURE_ON_SERVER: &str =
    "SELECT lethe_signatures_store(json_build_array(json_build_array(?1::TEXT, ?2::TEXT, encode(?3::BYTEA, 'hex')))::TEXT)";

/// Stores the signature of a memory's new content (after the change of content dropped the
/// old one, see migration 006).
pub(crate) fn store_signature(
    tx: &crate::storage::db::Connection,
    id: &str,
    content: &str,
) -> crate::error::Result<()> {
    let sql = if tx.is_postgres() {
        SIGNATURE_ON_SERVER
    } else {
        "INSERT INTO lethe_signature (memory_id, content_hash, bands) VALUES (?1, ?2, ?3) \
         ON CONFLICT(memory_id) DO UPDATE SET content_hash = excluded.content_hash, bands = excluded.bands"
    };
    tx.execute(sql, crate::storage::db::params![id, content_hash(content), band_keys(content)])?;
    Ok(())
}

pub fn content_hash(text: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(normalized(text).as_bytes());
    let mut out = String::with_capacity(64);
    for b in digest.iter() {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 15)]));
    }
    out
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The FNV-1a hash of every word of `text` (as [`words`] splits and lowercases it), without
/// allocating a string per word when the word is ASCII.
fn word_hashes(text: &str) -> Vec<u64> {
    let mut out = Vec::with_capacity(text.len() / 5 + 1);
    for w in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        if w.is_ascii() {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for b in w.bytes() {
                h ^= u64::from(b.to_ascii_lowercase());
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
            out.push(h);
        } else {
            out.push(fnv1a(w.to_lowercase().as_bytes()));
        }
    }
    out
}

/// The shingle hashes of [`shingles`], as a sorted vector without repeats.
fn shingle_vec(text: &str) -> Vec<u64> {
    let w = word_hashes(text);
    let mut out = Vec::with_capacity(w.len());
    if w.len() == 1 {
        out.push(w[0]);
    }
    for pair in w.windows(2) {
        out.push(pair[0] ^ pair[1].rotate_left(17).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Hashed word bigrams (a single word for one-word texts), sorted, without repeats.
pub fn shingles(text: &str) -> Vec<u64> {
    shingle_vec(text)
}

/// Exact Jaccard similarity of two shingle sets as [`shingles`] returns them (sorted, no
/// repeats); 0 when both are empty.
pub fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 0.0;
    }
    // A merge of the two sorted sets without branches on the comparison (the first search
    // after an import runs this some 200 times per memory, and a branch per step is
    // mispredicted about half the time).
    let (mut i, mut j, mut inter) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        inter += usize::from(x == y);
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    let union = a.len() + b.len() - inter;
    inter as f64 / union as f64
}

pub fn similarity(a: &str, b: &str) -> f64 {
    jaccard(&shingles(a), &shingles(b))
}

fn mix(x: u64, seed: u64) -> u64 {
    // splitmix64 finaliser over the shingle xor a per-hash seed: a cheap, well-spread family.
    let mut z = x ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The LSH band keys of a text: `BANDS` 32-bit keys, stored as 64 bytes.
pub fn band_keys(text: &str) -> Vec<u8> {
    let sh = shingle_vec(text);
    let mut mins = [u64::MAX; HASHES];
    for s in &sh {
        for (i, m) in mins.iter_mut().enumerate() {
            *m = (*m).min(mix(*s, i as u64 + 1));
        }
    }
    let mut out = Vec::with_capacity(BANDS * 4);
    for b in 0..BANDS {
        let mut h: u64 = 0x51_7cc1_b727_220a ^ b as u64;
        for r in 0..ROWS {
            h = mix(h ^ mins[b * ROWS + r], 0x2545_f491);
        }
        // An empty text gets no useful keys; make them unique-ish so they match nothing real.
        let key = if sh.is_empty() { 0 } else { (h >> 32) as u32 | 1 };
        out.extend_from_slice(&key.to_le_bytes());
    }
    out
}

pub fn band_key(bands: &[u8], band: usize) -> u32 {
    let i = band * 4;
    if bands.len() < i + 4 {
        return 0;
    }
    u32::from_le_bytes([bands[i], bands[i + 1], bands[i + 2], bands[i + 3]])
}

/// A band bucket with more members than this is split further (see [`candidate_pairs`]).
pub const BUCKET_CAP: usize = 1024;

/// Signatures from which [`candidate_pairs`] pairs the bands on every core.
const PARALLEL_FROM: usize = 50_000;

/// Candidate pairs (indices into `sigs`) sharing at least one band key. Works band by band on
/// a sorted vector, so memory stays linear and time O(n log n) per band.
///
/// Whether two memories are candidates depends on the two of them only (so deleting other
/// memories never creates new pairs and the policy batch stays idempotent), except in a
/// bucket of more than [`BUCKET_CAP`] members: there only members that also share the next
/// band's key are paired, so that a degenerate text shared by thousands of rows cannot make
/// the batch quadratic. (The reference workload's largest bucket at 1,000,000 memories has
/// 701 members.)
pub fn candidate_pairs(sigs: &[&[u8]]) -> Vec<(u32, u32)> {
    // Bands are independent: on every core when there is enough to do (the pairs are sorted
    // afterwards, so the order they come in does not matter).
    let bands: Vec<usize> = (0..BANDS).collect();
    let mut pairs: Vec<(u32, u32)> = if sigs.len() >= PARALLEL_FROM {
        use rayon::prelude::*;
        bands.par_iter().flat_map_iter(|&b| band_pairs(sigs, &[b])).collect()
    } else {
        band_pairs(sigs, &bands)
    };
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

fn band_pairs(sigs: &[&[u8]], bands: &[usize]) -> Vec<(u32, u32)> {
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    let mut keyed: Vec<(u32, u32)> = Vec::with_capacity(sigs.len());
    let mut sub: Vec<(u32, u32)> = Vec::new();
    let push_all = |pairs: &mut Vec<(u32, u32)>, bucket: &[(u32, u32)]| {
        for i in 0..bucket.len() {
            for j in (i + 1)..bucket.len() {
                let (a, b) = (bucket[i].1, bucket[j].1);
                pairs.push((a.min(b), a.max(b)));
            }
        }
    };
    for &band in bands {
        keyed.clear();
        keyed.extend(sigs.iter().enumerate().map(|(i, s)| (band_key(s, band), i as u32)).filter(|(k, _)| *k != 0));
        keyed.sort_unstable();
        for bucket in keyed.chunk_by(|x, y| x.0 == y.0) {
            if bucket.len() <= BUCKET_CAP {
                push_all(&mut pairs, bucket);
                continue;
            }
            let next = (band + 1) % BANDS;
            sub.clear();
            sub.extend(bucket.iter().map(|&(_, i)| (band_key(sigs[i as usize], next), i)).filter(|(k, _)| *k != 0));
            sub.sort_unstable();
            for group in sub.chunk_by(|x, y| x.0 == y.0) {
                // Members sharing two band keys are near-identical; a group this large is
                // the same text thousands of times, and its first members stand for it.
                push_all(&mut pairs, &group[..group.len().min(BUCKET_CAP)]);
            }
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn near_copies_share_a_band_and_score_high() {
        let a = "Deploy rollback: run kubectl rollout undo on the api deployment, then check the health endpoint";
        let b = "Deploy rollback: run kubectl rollout undo on the api deployment and then check the health endpoint";
        let s = similarity(a, b);
        assert!(s > 0.7, "near copies are similar, got {s}");
        let sa = band_keys(a);
        let sb = band_keys(b);
        let pairs = candidate_pairs(&[&sa, &sb]);
        assert_eq!(pairs, vec![(0, 1)], "LSH finds the near copy");
    }

    #[test]
    fn unrelated_texts_are_not_candidates() {
        let a = band_keys("The auth service signs tokens with Ed25519 keys rotated monthly");
        let b = band_keys("Docker volumes need the uid of the container user to be writable");
        assert!(candidate_pairs(&[&a, &b]).is_empty());
        assert!(similarity("the auth service", "docker volumes need") < 0.01);
    }

    #[test]
    fn exact_hash_ignores_case_and_punctuation() {
        assert_eq!(content_hash("Auth uses Ed25519."), content_hash("auth  uses ed25519"));
        assert_ne!(content_hash("auth uses ed25519"), content_hash("auth uses rsa"));
    }

    /// The implementation before the allocation-free rewrite; signatures stored in existing
    /// files were computed with it, so the new one must agree byte for byte.
    mod reference {
        use super::super::{fnv1a, mix, words, BANDS, HASHES, ROWS};
        use sha2::{Digest, Sha256};
        use std::collections::HashSet;

        pub fn content_hash(text: &str) -> String {
            let digest = Sha256::digest(words(text).join(" ").as_bytes());
            digest.iter().map(|b| format!("{b:02x}")).collect()
        }

        pub fn shingles(text: &str) -> HashSet<u64> {
            let w = words(text);
            let mut out = HashSet::with_capacity(w.len());
            if w.len() == 1 {
                out.insert(fnv1a(w[0].as_bytes()));
            }
            for pair in w.windows(2) {
                let mut h = fnv1a(pair[0].as_bytes());
                h ^= fnv1a(pair[1].as_bytes()).rotate_left(17).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                out.insert(h);
            }
            out
        }

        pub fn band_keys(text: &str) -> Vec<u8> {
            let sh = shingles(text);
            let mut mins = [u64::MAX; HASHES];
            for s in &sh {
                for (i, m) in mins.iter_mut().enumerate() {
                    let h = mix(*s, i as u64 + 1);
                    if h < *m {
                        *m = h;
                    }
                }
            }
            let mut out = Vec::with_capacity(BANDS * 4);
            for b in 0..BANDS {
                let mut h: u64 = 0x51_7cc1_b727_220a ^ b as u64;
                for r in 0..ROWS {
                    h = mix(h ^ mins[b * ROWS + r], 0x2545_f491);
                }
                let key = if sh.is_empty() { 0 } else { (h >> 32) as u32 | 1 };
                out.extend_from_slice(&key.to_le_bytes());
            }
            out
        }
    }

    #[test]
    fn signatures_match_the_reference_implementation() {
        // 2,000 texts of 8–19 words from a small vocabulary (the reference workload's shape,
        // made here: the workloads live in lethe-testkit, outside the engine).
        const WORDS: [&str; 24] = [
            "deploy",
            "rollback",
            "billing",
            "database",
            "nightly",
            "backup",
            "staging",
            "ledger",
            "alert",
            "on-call",
            "restore",
            "snapshot",
            "cache",
            "latency",
            "token",
            "schema",
            "migration",
            "queue",
            "retry",
            "timeout",
            "kubectl",
            "Straße",
            "café",
            "naïve",
        ];
        let mut seed: u32 = 42;
        let mut rnd = move || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            seed as usize
        };
        let mut texts: Vec<String> = (0..2_000)
            .map(|i| {
                let n = 8 + rnd() % 12;
                let words: Vec<&str> = (0..n).map(|_| WORDS[rnd() % WORDS.len()]).collect();
                format!("{} note {i}", words.join(" "))
            })
            .collect();
        texts.extend(
            [
                "",
                "   ",
                "one",
                "ÄRGER über Straße, ÉCOLE — naïve café",
                "Deploy rollback: run kubectl rollout undo; THEN check /health",
                "a a a a a",
                "İstanbul ǅemal ß ﬁ",
                "x1 y2 z3 x1 y2",
            ]
            .map(String::from),
        );
        for t in &texts {
            assert_eq!(band_keys(t), reference::band_keys(t), "band keys of {t:?}");
            assert_eq!(content_hash(t), reference::content_hash(t), "hash of {t:?}");
            assert_eq!(shingles(t).into_iter().collect::<HashSet<u64>>(), reference::shingles(t), "shingles of {t:?}");
        }
    }

    fn cluster(n: usize) -> Vec<String> {
        let base = "when the nightly backup of the billing database fails the on call engineer restores the last \
                    snapshot into staging verifies row counts against the ledger and only then promotes it";
        (0..n).map(|i| format!("{base} ticket {i}")).collect()
    }

    #[test]
    fn candidates_do_not_depend_on_who_else_is_in_the_bucket() {
        // 150 near-copies: buckets of well over 64 members (the old cap that paired only a
        // bucket's first 64, so that deleting some members created new pairs).
        let sigs: Vec<Vec<u8>> = cluster(150).iter().map(|t| band_keys(t)).collect();
        let refs: Vec<&[u8]> = sigs.iter().map(|s| s.as_slice()).collect();
        let all = candidate_pairs(&refs);
        let biggest = (0..BANDS)
            .map(|b| {
                let mut keys: Vec<u32> = sigs.iter().map(|s| band_key(s, b)).collect();
                keys.sort_unstable();
                keys.chunk_by(|x, y| x == y).map(<[u32]>::len).max().unwrap()
            })
            .max()
            .unwrap();
        assert!(biggest > 64, "the test needs a large bucket, got {biggest}");
        // Drop every third memory: the pairs among the rest are exactly the old pairs among them.
        let kept: Vec<u32> = (0..150u32).filter(|i| i % 3 != 0).collect();
        let sub: Vec<&[u8]> = kept.iter().map(|&i| refs[i as usize]).collect();
        let mut from_sub: Vec<(u32, u32)> =
            candidate_pairs(&sub).into_iter().map(|(a, b)| (kept[a as usize], kept[b as usize])).collect();
        from_sub.sort_unstable();
        let restricted: Vec<(u32, u32)> = all.iter().copied().filter(|(a, b)| a % 3 != 0 && b % 3 != 0).collect();
        assert_eq!(from_sub, restricted);
    }

    #[test]
    fn an_oversized_bucket_is_split_by_the_next_band() {
        // 1,100 members share band 0 (more than BUCKET_CAP); band 1 puts them in groups of 10;
        // every other band is unique. Only members of the same group are paired.
        let n = 1_100u32;
        let sigs: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                let mut s = Vec::with_capacity(BANDS * 4);
                for b in 0..BANDS {
                    let key: u32 = match b {
                        0 => 7,
                        1 => 1_000 + i / 10,
                        _ => 100_000 + i * 16 + b as u32,
                    };
                    s.extend_from_slice(&key.to_le_bytes());
                }
                s
            })
            .collect();
        let refs: Vec<&[u8]> = sigs.iter().map(|s| s.as_slice()).collect();
        let pairs = candidate_pairs(&refs);
        assert_eq!(pairs.len(), 110 * 45);
        assert!(pairs.iter().all(|(a, b)| a / 10 == b / 10));
    }

    #[test]
    fn jaccard_on_sorted_shingles_matches_the_set_definition() {
        let texts = cluster(5);
        let sets: Vec<HashSet<u64>> = texts.iter().map(|t| shingles(t).into_iter().collect()).collect();
        for (i, a) in texts.iter().enumerate() {
            for (j, b) in texts.iter().enumerate() {
                let inter = sets[i].intersection(&sets[j]).count() as f64;
                let union = sets[i].union(&sets[j]).count() as f64;
                assert_eq!(similarity(a, b), inter / union);
            }
        }
        assert_eq!(jaccard(&[1, 2, 3], &[2, 3, 4]), 0.5);
        assert_eq!(jaccard(&[], &[5]), 0.0);
    }

    #[test]
    fn identical_text_has_similarity_one() {
        assert_eq!(similarity("a b c d", "a b c d"), 1.0);
        assert_eq!(similarity("", ""), 0.0);
    }
}
