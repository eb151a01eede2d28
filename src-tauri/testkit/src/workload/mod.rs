//! The reference benchmark workload (its rules in BENCHMARKS.md): a deterministic
//! stream of memories and queries, so that Lethe's figures can be set side by side with the
//! reference engine's and with Lethe's own earlier runs.
//!
//! One 32-bit LCG (`seed = seed · 1664525 + 1013904223 mod 2³²`, seed 42, `rnd() = seed / 2³²`
//! after the step) drives everything, in this order:
//! 1. the contents of all N memories (`8 + ⌊rnd·12⌋` picked words, then ` note i`, i from 0);
//! 2. per memory: type, two tags, importance (rounded to 2 decimals);
//! 3. per memory: age (days), accessed (< 0.3), offset (days, drawn always), view count;
//! 4. the queries (`2 + ⌊rnd·2⌋` picked words, limit 10).
//!
//! [`Generator`] streams the memories without holding N of them: phases 2–4 start at LCG
//! states found by a first pass that only counts the draws of phase 1 (phases 2 and 3 take a
//! fixed four draws per memory). [`generate`] collects the stream when a vector is handier.
//!
//! [`realistic`] is a second workload beside this one: templated notes in heavy-tailed clusters
//! of near-copies plus dialogue turns, the shape real agent memory has.

use lethe_engine::model::{Memory, Tier};
use lethe_engine::time::{self, Instant};

pub mod realistic;

/// The vocabulary, in the order the workload document lists it. The document calls it "60
/// words" but lists 69; the list is what is generated from (see BENCHMARKS.md).
pub const VOCABULARY: [&str; 69] = [
    "react",
    "hooks",
    "state",
    "effect",
    "typescript",
    "generics",
    "docker",
    "container",
    "kubernetes",
    "deploy",
    "sqlite",
    "index",
    "query",
    "vector",
    "embedding",
    "search",
    "ranking",
    "memory",
    "agent",
    "recall",
    "forget",
    "decay",
    "schedule",
    "review",
    "cache",
    "latency",
    "throughput",
    "rust",
    "tauri",
    "desktop",
    "inspector",
    "procedure",
    "workflow",
    "skill",
    "trigger",
    "reflection",
    "version",
    "conflict",
    "migration",
    "backup",
    "token",
    "budget",
    "prompt",
    "injection",
    "session",
    "project",
    "owner",
    "relation",
    "graph",
    "anchor",
    "semantic",
    "episodic",
    "procedural",
    "working",
    "python",
    "java",
    "golang",
    "compiler",
    "parser",
    "lexer",
    "network",
    "socket",
    "http",
    "json",
    "schema",
    "validation",
    "error",
    "retry",
    "timeout",
];

/// `pick` list of the memory type (two episodic, two semantic).
pub const TYPES: [Tier; 6] =
    [Tier::Working, Tier::Episodic, Tier::Episodic, Tier::Semantic, Tier::Semantic, Tier::Procedural];

pub const SEED: u32 = 42;
/// Results per query.
pub const QUERY_LIMIT: usize = 10;

/// The workload's 32-bit linear congruential generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lcg {
    pub seed: u32,
}

impl Lcg {
    pub fn new(seed: u32) -> Self {
        Lcg { seed }
    }

    /// Steps the state, then returns `seed / 2³²` in [0, 1).
    pub fn rnd(&mut self) -> f64 {
        self.seed = self.seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        f64::from(self.seed) / 4_294_967_296.0
    }

    /// `⌊rnd · len⌋` (an index into a list of `len`).
    pub fn index(&mut self, len: usize) -> usize {
        ((self.rnd() * len as f64).floor() as usize).min(len.saturating_sub(1))
    }

    pub fn pick<T: Copy>(&mut self, list: &[T]) -> T {
        list[self.index(list.len())]
    }

    fn skip(&mut self, draws: u64) {
        for _ in 0..draws {
            self.rnd();
        }
    }
}

/// One generated memory with its workload facts.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkItem {
    pub index: usize,
    pub content: String,
    pub tier: Tier,
    pub tags: [&'static str; 2],
    pub importance: f64,
    /// Created this many whole days before `now`.
    pub age_days: u32,
    pub accessed: bool,
    /// Last accessed this many days before `now` (only meaningful when `accessed`).
    pub offset_days: u32,
    pub view_count: i64,
}

/// A deterministic memory id for item `i` (uuid-shaped like `model::new_memory_id`, so that
/// index and row sizes match real files).
pub fn memory_id(i: usize) -> String {
    format!("mem_00000000-0000-4000-8000-{i:012x}")
}

impl WorkItem {
    pub fn id(&self) -> String {
        memory_id(self.index)
    }

    pub fn created_at(&self, now: Instant) -> Instant {
        time::add_days(now, -f64::from(self.age_days))
    }

    pub fn last_accessed(&self, now: Instant) -> Option<Instant> {
        self.accessed.then(|| time::add_days(now, -f64::from(self.offset_days)))
    }

    pub fn tags(&self) -> Vec<String> {
        self.tags.iter().map(|t| t.to_string()).collect()
    }

    /// The full row (what the bulk-loaded database holds): ages, access and views included.
    pub fn to_memory(&self, now: Instant) -> Memory {
        Memory {
            id: self.id(),
            tier: self.tier,
            content: self.content.clone(),
            importance: self.importance,
            privacy_scope: "private".into(),
            created_at: time::format(self.created_at(now)),
            last_accessed: self.last_accessed(now).map(time::format),
            pinned: false,
            tags: self.tags(),
            source: None,
            view_count: self.view_count,
            cite_count: 0,
            edit_count: 0,
            task_goal: None,
            steps: None,
            reflection_notes: None,
            workflow_name: None,
            skill_name: None,
            trigger_conditions: None,
            version: 1,
            owner_id: None,
            session_id: None,
            project_id: None,
            is_deleted: false,
            deleted_at: None,
        }
    }

    /// What an agent would pass to `remember` (created_at = now − age; access and views
    /// cannot be given to remember, they are usage that happens later).
    pub fn to_new_memory(&self, now: Instant) -> lethe_engine::lifecycle::NewMemory {
        let mut m = lethe_engine::lifecycle::NewMemory::new(self.tier, self.content.clone());
        m.importance = Some(self.importance);
        m.tags = self.tags();
        m.created_at = Some(self.created_at(now));
        m
    }
}

/// Streams the N memories of the workload in insertion order, then the queries.
#[derive(Debug, Clone)]
pub struct Generator {
    n: usize,
    next: usize,
    content: Lcg,
    meta: Lcg,
    access: Lcg,
    queries: Lcg,
}

impl Generator {
    pub fn new(n: usize) -> Self {
        let content = Lcg::new(SEED);
        // First pass: count the draws of the content phase (1 for the length + 1 per word).
        let mut probe = content;
        for _ in 0..n {
            let words = 8 + probe.index(12);
            probe.skip(words as u64);
        }
        let meta = probe;
        let mut access = meta;
        access.skip(4 * n as u64);
        let mut queries = access;
        queries.skip(4 * n as u64);
        Generator { n, next: 0, content, meta, access, queries }
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The first `count` queries of the workload (they follow all memory draws).
    pub fn queries(&self, count: usize) -> Vec<String> {
        let mut g = self.queries;
        (0..count)
            .map(|_| {
                let words = 2 + g.index(2);
                (0..words).map(|_| g.pick(&VOCABULARY)).collect::<Vec<_>>().join(" ")
            })
            .collect()
    }
}

impl Iterator for Generator {
    type Item = WorkItem;

    fn next(&mut self) -> Option<WorkItem> {
        if self.next >= self.n {
            return None;
        }
        let i = self.next;
        self.next += 1;
        let words = 8 + self.content.index(12);
        let mut content = String::with_capacity(words * 9 + 16);
        for w in 0..words {
            if w > 0 {
                content.push(' ');
            }
            content.push_str(self.content.pick(&VOCABULARY));
        }
        content.push_str(&format!(" note {i}"));
        let m = &mut self.meta;
        let tier = m.pick(&TYPES);
        let tags = [m.pick(&VOCABULARY), m.pick(&VOCABULARY)];
        let importance = (m.rnd() * 100.0).round() / 100.0;
        let a = &mut self.access;
        let age_days = a.index(365) as u32;
        let accessed = a.rnd() < 0.3;
        let offset_days = (a.rnd() * f64::from(age_days)).floor() as u32;
        let view_count = a.index(5) as i64;
        Some(WorkItem { index: i, content, tier, tags, importance, age_days, accessed, offset_days, view_count })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.n - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Generator {}

/// The whole workload in memory: N memories and `queries` queries.
pub fn generate(n: usize, queries: usize) -> (Vec<WorkItem>, Vec<String>) {
    let g = Generator::new(n);
    let q = g.queries(queries);
    (g.collect(), q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lcg_steps_before_returning() {
        // 42 · 1664525 + 1013904223 = 1083814273 (< 2³²); then 378494188, 2479403867.
        let mut g = Lcg::new(42);
        assert_eq!(g.rnd(), 1_083_814_273.0 / 4_294_967_296.0);
        assert_eq!(g.seed, 1_083_814_273);
        g.rnd();
        assert_eq!(g.seed, 378_494_188);
        g.rnd();
        assert_eq!(g.seed, 2_479_403_867);
    }

    #[test]
    fn vocabulary_is_the_documented_list_in_order() {
        assert_eq!(VOCABULARY.len(), 69);
        assert_eq!(&VOCABULARY[..3], &["react", "hooks", "state"]);
        assert_eq!(VOCABULARY[10], "sqlite");
        assert_eq!(VOCABULARY[68], "timeout");
        let mut sorted = VOCABULARY.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 69, "no word twice");
    }

    // Expected values computed independently (a 20-line Python transcription of the
    // workload document), not by this module. rnd₁ = 0.2523… → 8 + ⌊3.03⌋ = 11 words.
    #[test]
    fn first_memories_are_pinned() {
        let (items, queries) = generate(3, 3);
        assert_eq!(
            items[0].content,
            "docker backup search latency hooks inspector kubernetes network timeout parser trigger note 0"
        );
        assert_eq!(items[0].tier, Tier::Working);
        assert_eq!(items[0].tags, ["vector", "inspector"]);
        assert_eq!(items[0].importance, 0.13);
        assert_eq!(
            (items[0].age_days, items[0].accessed, items[0].offset_days, items[0].view_count),
            (121, false, 115, 0)
        );

        assert_eq!(
            items[1].content,
            "lexer budget docker deploy validation json socket conflict query conflict memory validation golang sqlite compiler note 1"
        );
        assert_eq!((items[1].tier, items[1].tags, items[1].importance), (Tier::Semantic, ["token", "java"], 0.39));
        assert_eq!(
            (items[1].age_days, items[1].accessed, items[1].offset_days, items[1].view_count),
            (318, false, 107, 1)
        );

        assert_eq!(
            items[2].content,
            "typescript hooks conflict compiler parser owner throughput token graph anchor anchor timeout procedure note 2"
        );
        assert_eq!((items[2].tier, items[2].tags, items[2].importance), (Tier::Episodic, ["agent", "hooks"], 0.28));
        assert_eq!(
            (items[2].age_days, items[2].accessed, items[2].offset_days, items[2].view_count),
            (47, false, 4, 4)
        );

        assert_eq!(queries, vec!["desktop graph decay", "reflection kubernetes", "budget graph"]);
    }

    #[test]
    fn streaming_equals_the_documented_order() {
        // The streamed phases must start where a single sequential pass would be.
        let n = 50;
        let mut g = Lcg::new(SEED);
        let mut contents = Vec::new();
        for i in 0..n {
            let k = 8 + g.index(12);
            let words: Vec<&str> = (0..k).map(|_| g.pick(&VOCABULARY)).collect();
            contents.push(format!("{} note {i}", words.join(" ")));
        }
        let metas: Vec<(Tier, [&str; 2], f64)> = (0..n)
            .map(|_| (g.pick(&TYPES), [g.pick(&VOCABULARY), g.pick(&VOCABULARY)], (g.rnd() * 100.0).round() / 100.0))
            .collect();
        let access: Vec<(u32, bool, u32, i64)> = (0..n)
            .map(|_| {
                let age = g.index(365) as u32;
                let acc = g.rnd() < 0.3;
                let off = (g.rnd() * f64::from(age)).floor() as u32;
                (age, acc, off, g.index(5) as i64)
            })
            .collect();
        let first_query_words = 2 + g.index(2);
        let (items, queries) = generate(n, 1);
        for (i, it) in items.iter().enumerate() {
            assert_eq!(it.content, contents[i]);
            assert_eq!((it.tier, it.tags, it.importance), metas[i]);
            assert_eq!((it.age_days, it.accessed, it.offset_days, it.view_count), access[i]);
        }
        assert_eq!(queries[0].split(' ').count(), first_query_words);
    }

    #[test]
    fn items_become_rows_with_their_ages() {
        let now = time::parse("2026-06-01T00:00:00Z").unwrap();
        let (items, _) = generate(3, 0);
        let m = items[0].to_memory(now);
        assert_eq!(m.id, "mem_00000000-0000-4000-8000-000000000000");
        assert_eq!(m.created_at, "2026-01-31T00:00:00.000Z", "121 days before");
        assert_eq!(m.last_accessed, None, "not accessed");
        assert_eq!(m.tags, vec!["vector", "inspector"]);
        let nm = items[1].to_new_memory(now);
        assert_eq!(nm.created_at, Some(time::parse("2025-07-18T00:00:00Z").unwrap()), "318 days before");
        assert_eq!(nm.importance, Some(0.39));
    }

    #[test]
    fn a_share_of_memories_is_accessed() {
        let (items, _) = generate(10_000, 0);
        let accessed = items.iter().filter(|i| i.accessed).count();
        assert!((2_700..3_300).contains(&accessed), "about 30 % accessed, got {accessed}");
        let now = time::parse("2026-06-01T00:00:00Z").unwrap();
        for it in items.iter().filter(|i| i.accessed).take(50) {
            assert!(it.last_accessed(now).unwrap() >= it.created_at(now), "accessed after it was created");
        }
    }
}
