//! Bad input never panics and never writes: property tests over every field an agent or a
//! person can hand the engine (remember, procedure updates, reflection notes, recall, settings,
//! JSONL import, timestamps). Each case must end in success or a typed error whose code is
//! not `internal`; on error, every table of the file is exactly as before (row counts, the
//! full export and the connection's `total_changes()`).
//!
//! Case counts are modest so that a debug build runs this in seconds; `LETHE_LONG=1`
//! multiplies them by 16.
//!
//! On a PostgreSQL test server (`LETHE_TEST_POSTGRES`) every case works on its own
//! copy of one fixture database, and the witness that nothing was even attempted is the
//! server's count of rows inserted, updated or deleted in that database, aborted attempts
//! included (`lethe_testkit::backend::rows_ever_changed`).

use std::io::Cursor;
use std::sync::OnceLock;

use crate::support::now;
use chrono::{DateTime, Utc};
use lethe_engine::lifecycle::{self, NewMemory, ProcedureFields, RememberOutcome};
use lethe_engine::procedural::{self, ProcedurePatch};
use lethe_engine::recall::{self, RecallQuery};
use lethe_engine::{store, time, transfer, Error, Settings, Tier};
use lethe_testkit::backend;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};
use serde_json::{json, Value};

fn cases(n: u32) -> Config {
    let long = std::env::var("LETHE_LONG").is_ok_and(|v| v == "1");
    Config {
        cases: if long { n * 16 } else { n },
        // A failing case is printed with its minimal input; no regression files in the tree.
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    }
}

/// Everything a failed call could have touched: every table's row count, every memory field
/// for field, and the number of rows the store ever changed (which also counts writes rolled
/// back later, so an error must not even have tried to write).
#[derive(Debug, PartialEq)]
struct Digest {
    counts: Vec<(String, i64)>,
    export: Vec<u8>,
    total_changes: u64,
}

fn digest(conn: &store::Connection) -> Digest {
    let tables = backend::tables(conn).unwrap();
    let counts = tables
        .into_iter()
        .map(|t| {
            let n: i64 = conn.query_row(&format!("SELECT COUNT(*) FROM \"{t}\""), [], |r| r.get(0)).unwrap();
            (t, n)
        })
        .collect();
    let mut export = Vec::new();
    transfer::export(conn, &mut export).unwrap();
    Digest { counts, export, total_changes: backend::rows_ever_changed(conn).unwrap() }
}

/// The fixture every property works on: a store with one memory of each tier, a procedure
/// among them, and one memory in quarantine.
struct Fixture {
    conn: store::Connection,
    ids: Vec<String>,
    procedure: String,
    /// On PostgreSQL, the database `conn` works on, dropped after `conn` is closed.
    _copy: Option<backend::Copy>,
}

/// A fresh fixture: an SQLite file in memory, or a copy of the fixture database on the server.
fn fixture() -> Fixture {
    if !backend::is_postgres() {
        let mut conn = store::open_in_memory().unwrap();
        let (ids, procedure) = fill(&mut conn);
        return Fixture { conn, ids, procedure, _copy: None };
    }
    static TEMPLATE: OnceLock<(String, Vec<String>, String)> = OnceLock::new();
    let (template, ids, procedure) = TEMPLATE.get_or_init(|| {
        let mut filled = None;
        let name = backend::template("fuzz", |conn| filled = Some(fill(conn)));
        let (ids, procedure) = filled.expect("the template was built in this process");
        (name, ids, procedure)
    });
    let copy = backend::copy_of(template).unwrap();
    let conn = store::open(copy.url()).unwrap();
    Fixture { conn, ids: ids.clone(), procedure: procedure.clone(), _copy: Some(copy) }
}

/// Writes the fixture's memories; their ids, and the procedure's.
fn fill(conn: &mut store::Connection) -> (Vec<String>, String) {
    let mut ids = Vec::new();
    for (tier, content) in [
        (Tier::Working, "the build is red on main"),
        (Tier::Episodic, "yesterday the deploy failed with a docker error"),
        (Tier::Semantic, "auth tokens are signed with Ed25519"),
        (Tier::Semantic, "the staging database lives in eu-west-1"),
    ] {
        // One session: each is the others' recall context, and the quarantined one must lend
        // its words to none of them.
        let m = NewMemory { session_id: Some("fuzz-chat".into()), ..NewMemory::new(tier, content) };
        let out = lifecycle::remember(conn, &m, "user", now()).unwrap();
        ids.push(out.id().unwrap().to_string());
    }
    let proc = NewMemory {
        procedure: ProcedureFields {
            task_goal: Some("ship a release".into()),
            steps: Some(json!(["build", "test", "tag"])),
            trigger_conditions: Some(json!({"branch": "main"})),
            workflow_name: Some("release".into()),
            skill_name: Some("ship".into()),
        },
        ..NewMemory::new(Tier::Procedural, "how to ship a release")
    };
    let procedure = lifecycle::remember(conn, &proc, "user", now()).unwrap().id().unwrap().to_string();
    ids.push(procedure.clone());
    lifecycle::soft_delete(conn, &ids[3], Some("fixture"), "user", now()).unwrap();
    (ids, procedure)
}

/// The check every property ends with: a typed error that is not an internal one leaves the
/// file untouched. An `internal` code for bad input would mean SQLite (a CHECK constraint, a
/// type) rejected what validation let through.
fn assert_typed_and_untouched<T: std::fmt::Debug>(
    what: &str,
    result: &Result<T, Error>,
    before: &Digest,
    conn: &store::Connection,
) -> Result<(), TestCaseError> {
    if let Err(e) = result {
        prop_assert!(
            matches!(e.code(), "invalid_input" | "conflict" | "not_found"),
            "{what}: bad input must give a typed error, got {} ({e})",
            e.code()
        );
        prop_assert!(!e.to_string().is_empty(), "{what}: the error has a message");
        let after = digest(conn);
        prop_assert_eq!(&after, before, "{}: nothing is written on error ({})", what, e);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Strategies.

/// Text as agents send it: anything printable, control characters, NUL, and sizes around the
/// 10 KB note limit.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => any::<String>(),
        4 => "[a-z ]{0,40}",
        3 => "[\\x00-\\x1f\\x7f a-z\"*^:()+-]{0,24}",
        2 => proptest::collection::vec(any::<u8>(), 0..64).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        1 => (0usize..4).prop_map(|k| "é".repeat(5 * 1024 - 2 + k)),
        1 => prop::sample::select(vec!["", " ", "\n\t", "ok", "Thanks!", "\u{feff}", "\u{0}", "a\u{0}b"])
            .prop_map(str::to_string),
    ]
}

/// Memory content: [`text`], plus sizes around the 1 MiB content limit and far beyond it
/// (sampled rarely: hashing a megabyte takes a while in a debug build).
fn content() -> impl Strategy<Value = String> {
    prop_oneof![
        30 => text(),
        1 => (0usize..4).prop_map(|k| "é".repeat(512 * 1024 - 2 + k)),
        1 => Just("x".repeat(10 * 1024 * 1024)),
    ]
}

fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => 0.0..=1.0f64,
        2 => any::<f64>(),
        1 => prop::sample::select(vec![
            f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, -1e-300, 1.0 + f64::EPSILON, f64::MAX, f64::MIN,
            f64::MIN_POSITIVE,
        ]),
    ]
}

/// Any instant chrono can represent, weighted towards the present, the far past and the far
/// future.
fn instant() -> impl Strategy<Value = time::Instant> {
    let min = DateTime::<Utc>::MIN_UTC.timestamp();
    let max = DateTime::<Utc>::MAX_UTC.timestamp();
    let now = now().timestamp();
    prop_oneof![
        3 => now - 10 * 365 * 86_400..now + 3 * 86_400,
        2 => min..=max,
        1 => prop::sample::select(vec![min, max, 0, -1, 253_402_300_799, 253_402_300_800, -62_135_596_800, -62_135_596_801]),
    ]
    .prop_map(|s| DateTime::from_timestamp(s, 0).unwrap())
}

/// Arbitrary JSON, nested a few levels.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        text_small().prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            proptest::collection::btree_map(text_small(), inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn text_small() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-z_]{0,12}",
        Just("failure_type".to_string()),
        Just("timestamp".to_string()),
        // NUL, which PostgreSQL's text cannot hold, in a label, a tag, a key or a JSON string.
        "[a-z]{0,3}\\x00[a-z]{0,3}",
    ]
}

/// A value nested `depth` levels deep (arrays and objects alternating), built without
/// recursion so that building it cannot be what overflows.
fn deep(depth: usize) -> Value {
    let mut v = json!("bottom");
    for i in 0..depth {
        // Not `json!`, which serialises its argument again (recursively, and in quadratic time).
        v = if i % 2 == 0 { Value::Array(vec![v]) } else { object("k", v) };
    }
    v
}

fn object(key: &str, v: Value) -> Value {
    let mut m = serde_json::Map::new();
    m.insert(key.to_string(), v);
    Value::Object(m)
}

/// JSON as it reaches the engine: arbitrary, deeply nested, or shaped like the real thing.
fn json_input() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => json_value(),
        // Deeper than any transport passes on (serde_json stops at 128), to show the engine
        // itself does not depend on that limit.
        1 => (30usize..600).prop_map(deep),
        2 => proptest::collection::vec(text(), 0..6).prop_map(|v| json!(v)),
        2 => (text(), json_value()).prop_map(|(k, v)| json!({ k: v })),
    ]
}

fn note() -> impl Strategy<Value = Value> {
    let failure_type = prop_oneof![
        Just(json!("tool_error")),
        Just(json!("user_feedback")),
        Just(json!("metric_failure")),
        json_value(),
    ];
    let shaped = (
        failure_type,
        text(),
        proptest::option::of(text()),
        proptest::option::of(prop_oneof![text(), instant().prop_map(time::format)]),
        proptest::option::of((text_small(), json_value())),
    )
        .prop_map(|(ft, desc, lessons, ts, extra)| {
            let mut n = json!({ "failure_type": ft, "failure_description": desc });
            if let Some(l) = lessons {
                n["lessons_learned"] = json!(l);
            }
            if let Some(t) = ts {
                n["timestamp"] = json!(t);
            }
            if let Some((k, v)) = extra {
                n[k] = v;
            }
            n
        });
    prop_oneof![3 => shaped, 2 => json_input()]
}

fn tier() -> impl Strategy<Value = Tier> {
    prop::sample::select(Tier::ALL.to_vec())
}

fn label() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(prop_oneof![text_small(), "[a-z]{1,12}"])
}

fn procedure_fields() -> impl Strategy<Value = ProcedureFields> {
    (
        proptest::option::of(text()),
        proptest::option::of(json_input()),
        proptest::option::of(json_input()),
        label(),
        label(),
    )
        .prop_map(|(task_goal, steps, trigger_conditions, workflow_name, skill_name)| ProcedureFields {
            task_goal,
            steps,
            trigger_conditions,
            workflow_name,
            skill_name,
        })
}

// ---------------------------------------------------------------------------------------------
// Properties.

proptest! {
    #![proptest_config(cases(192))]

    #[test]
    fn remember_takes_any_input_without_panic_or_partial_write(
        tier in tier(),
        content in content(),
        importance in proptest::option::of(number()),
        tags in proptest::collection::vec(text_small(), 0..70),
        source in label(),
        session in label(),
        project in label(),
        privacy in proptest::option::of(prop_oneof![Just("team".to_string()), text_small()]),
        created_at in proptest::option::of(instant()),
        procedure in prop_oneof![3 => Just(ProcedureFields::default()), 2 => procedure_fields()],
        supersedes in proptest::collection::vec(0usize..7, 0..3),
        actor in prop_oneof![4 => Just("agent:fuzz".to_string()), 1 => text_small()],
    ) {
        let mut f = fixture();
        let supersedes = supersedes
            .into_iter()
            .map(|i| f.ids.get(i).cloned().unwrap_or_else(|| format!("mem_missing_{i}")))
            .collect();
        let m = NewMemory {
            tier, content, importance, tags, source, pinned: false, privacy_scope: privacy, owner_id: None,
            session_id: session, project_id: project, created_at, procedure, supersedes,
        };
        let before = digest(&f.conn);
        let out = lifecycle::remember(&mut f.conn, &m, &actor, now());
        assert_typed_and_untouched("remember", &out, &before, &f.conn)?;
        if let Ok(RememberOutcome::Stored { id, .. }) = &out {
            // What was accepted must read back, score and explain: a value stored that later
            // fails every read would be worse than a refusal.
            let detail = lethe_engine::detail(&f.conn, id, now(), None);
            prop_assert!(detail.is_ok(), "stored {id} must be readable: {:?}", detail.err());
            let back = lifecycle::get(&f.conn, id).unwrap();
            prop_assert_eq!(&back.content, &m.content, "content is stored byte for byte");
            let snap = lethe_engine::forgetting::Snapshot::load(&f.conn).unwrap();
            prop_assert!(snap.rows.iter().any(|r| &r.id == id), "a stored memory takes part in scoring");
        }
    }

    #[test]
    fn procedure_updates_take_any_input(
        fields in procedure_fields(),
        content in proptest::option::of(content()),
        expected in prop_oneof![Just(1i64), any::<i64>()],
        target in 0usize..6,
    ) {
        let mut f = fixture();
        let id = f.ids.get(target).cloned().unwrap_or_else(|| "mem_missing".into());
        let before = digest(&f.conn);
        let out = procedural::update(&mut f.conn, &id, expected, &ProcedurePatch { content, fields }, "agent:fuzz", now());
        assert_typed_and_untouched("procedure update", &out, &before, &f.conn)?;
        if out.is_ok() {
            prop_assert_eq!(procedural::history(&f.conn, &id).unwrap().len(), 2, "one snapshot per update");
        }
    }

    #[test]
    fn reflection_notes_take_any_json(
        note in note(),
        expected in proptest::option::of(prop_oneof![Just(1i64), any::<i64>()]),
        on_procedure in prop::bool::weighted(0.85),
    ) {
        let mut f = fixture();
        let id = if on_procedure { f.procedure.clone() } else { f.ids[1].clone() };
        let before = digest(&f.conn);
        let out = procedural::reflect(&mut f.conn, &id, &note, expected, "agent:fuzz", now());
        assert_typed_and_untouched("reflect", &out, &before, &f.conn)?;
        if out.is_ok() {
            prop_assert_eq!(procedural::notes(&f.conn, &id).unwrap().len(), 1);
            // The FTS triggers normalise the notes on every later write: that must still work.
            prop_assert!(lifecycle::edit(&mut f.conn, &id, "how to ship a release, edited", "user", now()).is_ok());
        }
    }

    #[test]
    fn recall_takes_any_query_text(
        text in prop_oneof![
            4 => any::<String>(),
            3 => "[\"*^:()+\\-{}\\[\\] ,.a-zA-Z0-9]{0,40}",
            2 => prop::sample::select(vec![
                "NEAR(a b)", "a OR", "AND", "NOT x", "\"", "\"\"", "*", "a*", "^a", "col:x", "(", ")",
                "memory_item_fts:x", "rank MATCH", "'; DROP TABLE memory_item; --", "\u{0}", "🦀 ünïcödé",
            ]).prop_map(str::to_string),
            1 => Just("word ".repeat(10_000)),
        ],
        tier in proptest::option::of(tier()),
        tags in proptest::collection::vec(text_small(), 0..4),
        session in label(),
        weights in proptest::option::of(text_small()),
        limit in prop_oneof![Just(0usize), 1usize..50, Just(usize::MAX)],
    ) {
        let f = fixture();
        let before = digest(&f.conn);
        let weights = match weights.as_deref().map(recall::parse_weights) {
            None => None,
            Some(Ok(w)) => Some(w),
            Some(Err(e)) => {
                prop_assert_eq!(e.code(), "invalid_input");
                None
            }
        };
        let q = RecallQuery { text, limit, tier, session, tags, weights, ..Default::default() };
        let hits = recall::recall(&f.conn, &q, now());
        // Any text is a safe query: FTS syntax is quoted away, so there is no error to return.
        prop_assert!(hits.is_ok(), "recall failed: {:?}", hits.err());
        let hits = hits.unwrap();
        prop_assert!(!hits.iter().any(|h| h.id == f.ids[3]), "quarantined memories never come back");
        if !hits.is_empty() {
            let e = recall::explain(&f.conn, &q, now(), 0).unwrap();
            prop_assert!(
                e.results.iter().all(|r| r.context_matches.iter().all(|c| c.neighbour != f.ids[3])),
                "nor match through a neighbour's context"
            );
        }
        prop_assert!(hits.iter().all(|h| h.score.is_finite()), "scores are numbers");
        prop_assert_eq!(digest(&f.conn), before, "recall itself writes nothing");
    }

    #[test]
    fn edits_and_deletes_take_any_text(
        content in content(),
        reason in proptest::option::of(text()),
        target in 0usize..6,
        action in 0u8..3,
    ) {
        let mut f = fixture();
        let id = f.ids.get(target).cloned().unwrap_or_else(|| "mem_missing".into());
        let before = digest(&f.conn);
        let (what, out) = match action {
            0 => ("edit", lifecycle::edit(&mut f.conn, &id, &content, "agent:fuzz", now()).map(|_| ())),
            1 => ("delete", lifecycle::soft_delete(&mut f.conn, &id, reason.as_deref(), "agent:fuzz", now()).map(|_| ())),
            _ => ("delete --hard", lifecycle::hard_delete(&mut f.conn, &id, true, reason.as_deref(), "user", now()).map(|_| ())),
        };
        assert_typed_and_untouched(what, &out, &before, &f.conn)?;
        if out.is_ok() && action == 0 {
            prop_assert_eq!(&lifecycle::get(&f.conn, &id).unwrap().content, &content, "the edit reads back");
        }
    }
}

proptest! {
    // Each case validates up to six lines, some of a megabyte: fewer cases.
    #![proptest_config(cases(96))]

    #[test]
    fn jsonl_import_is_all_or_nothing_on_bad_lines(
        lines in proptest::collection::vec(prop_oneof![
            3 => json_input().prop_map(|v| v.to_string()),
            2 => text(),
            2 => (content(), number(), instant(), tier()).prop_map(|(c, i, at, t)| json!({
                "id": format!("mem_fuzz_{}", uuid::Uuid::new_v4()), "type": t, "content": c,
                "importance": if i.is_finite() { json!(i) } else { json!(i.to_string()) },
                "privacy_scope": "private", "created_at": time::format(at), "last_accessed": null,
                "pinned": false, "tags": [], "source": null, "view_count": 0, "cite_count": 0,
                "edit_count": 0, "task_goal": null, "steps": null, "reflection_notes": null,
                "workflow_name": null, "skill_name": null, "trigger_conditions": null, "version": 1,
                "owner_id": null, "session_id": null, "project_id": null, "is_deleted": false,
                "deleted_at": null,
            }).to_string()),
        ], 1..6),
    ) {
        let mut f = fixture();
        let before = digest(&f.conn);
        let input = lines.join("\n");
        let out = transfer::import(&mut f.conn, Cursor::new(input.into_bytes()), &transfer::ImportOptions::new(now()));
        assert_typed_and_untouched("import", &out, &before, &f.conn)?;
        if let Ok(report) = out {
            // Whatever was imported reads back and is scored.
            let snap = lethe_engine::forgetting::Snapshot::load(&f.conn).unwrap();
            prop_assert_eq!(snap.rows.len(), 5 + report.imported, "every imported row is scored");
        }
    }

    #[test]
    fn settings_take_any_key_and_value(key in prop_oneof![
            Just("threshold".to_string()), Just("weights.recency".to_string()),
            Just("max_content_bytes".to_string()), Just("trivial_phrases".to_string()), text_small(),
        ],
        value in prop_oneof![text_small(), number().prop_map(|n| n.to_string()), json_input().prop_map(|v| v.to_string())],
    ) {
        let mut f = fixture();
        let before = digest(&f.conn);
        let out = Settings::load(&f.conn)
            .and_then(|s| s.with_value(&key, &value))
            .and_then(|s| Settings::store(&mut f.conn, &s, "user", now()));
        assert_typed_and_untouched("settings", &out, &before, &f.conn)?;
    }

    #[test]
    fn timestamps_parse_or_refuse(raw in prop_oneof![
        any::<String>(),
        "[0-9+\\-]{1,8}-[0-9]{1,2}-[0-9]{1,2}([T ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\\.[0-9]{1,9})?Z?)?",
        instant().prop_map(time::format),
    ]) {
        // Whatever parses formats back and survives date arithmetic in both directions.
        if let Ok(t) = time::parse(&raw) {
            let again = time::parse(&time::format(t));
            prop_assert!(again.is_ok(), "{raw:?} parsed to {t:?}, whose formatted form does not parse");
        }
    }
}

/// The JSON nesting the CLI and MCP refuse (serde_json's limit of 128) is also refused by the
/// engine itself when a caller builds the value in Rust. Beyond ~1,000 levels serde_json's own
/// recursive `clone`/`drop`/`to_string` overflow a 2 MiB debug thread in the caller's code
/// already, so deeper values are out of scope (every transport stops at 128).
#[test]
fn deeply_nested_json_is_refused_without_overflowing() {
    let mut f = fixture();
    let before = digest(&f.conn);
    for depth in [33, 129, 1_000] {
        let v = deep(depth);
        let fields = ProcedureFields { trigger_conditions: Some(object("k", v.clone())), ..Default::default() };
        let out = procedural::update(
            &mut f.conn,
            &f.procedure.clone(),
            1,
            &ProcedurePatch { content: None, fields },
            "user",
            now(),
        );
        assert_eq!(out.as_ref().err().map(Error::code), Some("invalid_input"), "depth {depth}: {out:?}");
        let out = procedural::reflect(&mut f.conn, &f.procedure.clone(), &v, None, "user", now());
        assert_eq!(out.as_ref().err().map(Error::code), Some("invalid_input"), "depth {depth}: {out:?}");
        // Dropping a deep value recurses; keep it on this thread's stack where it was built.
        drop(v);
    }
    assert_eq!(digest(&f.conn), before, "nothing written");
}

/// The witness of "nothing was even attempted" is not vacuous: it counts a write, and a write
/// that was rolled back, on either backend.
#[test]
fn the_witness_counts_writes_even_rolled_back() {
    let mut f = fixture();
    let before = digest(&f.conn);
    let tx = f.conn.transaction().unwrap();
    tx.execute("UPDATE memory_item SET importance = 0.25", []).unwrap();
    tx.rollback().unwrap();
    let after = digest(&f.conn);
    assert_eq!(after.counts, before.counts, "rolled back");
    assert_eq!(after.export, before.export, "rolled back");
    assert!(after.total_changes > before.total_changes, "the attempt is counted: {after:?}");
    lifecycle::remember(&mut f.conn, &NewMemory::new(Tier::Semantic, "one more memory"), "user", now()).unwrap();
    assert!(digest(&f.conn).total_changes > after.total_changes, "a write is counted");
}
