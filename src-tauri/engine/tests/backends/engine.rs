//! Engine behaviour end to end on real stores: lifecycle, forgetting, procedures, archive,
//! meta-memory coalescing. On SQLite files, or with `LETHE_TEST_POSTGRES` on a PostgreSQL
//! server (lethe_testkit::backend).

use std::sync::{Arc, Barrier};
use std::time::Duration;

use crate::support::{now, temp_db};
use lethe_engine::forgetting::{self, BatchOptions};
use lethe_engine::lifecycle::{self, NewMemory, ProcedureFields, RememberOutcome};
use lethe_engine::procedural::{self, ProcedurePatch};
use lethe_engine::{archive, audit, meta, store, time, Tier};

fn put(conn: &mut store::Connection, tier: Tier, content: &str) -> String {
    match lifecycle::remember(conn, &NewMemory::new(tier, content), "user", now()).unwrap() {
        RememberOutcome::Stored { id, .. } => id,
        other => panic!("not stored: {other:?}"),
    }
}

fn count(conn: &store::Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// A number that any write to the store changes: SQLite's count of changed rows, or on a
/// server the journal's last entry and the sizes of the append-only and derived tables.
fn writes_so_far(conn: &store::Connection) -> i64 {
    if lethe_testkit::backend::is_postgres() {
        count(
            conn,
            "SELECT (SELECT COALESCE(MAX(seq), 0) FROM lethe_change) + (SELECT COUNT(*) FROM lethe_action) \
             + (SELECT COUNT(*) FROM memory_forgetting_event) + (SELECT COUNT(*) FROM lethe_signature) \
             + (SELECT COUNT(*) FROM lethe_vector) + (SELECT COUNT(*) FROM meta_memory_stats)",
        )
    } else {
        count(conn, "SELECT total_changes()")
    }
}

#[test]
fn restore_gives_back_the_identical_memory_and_both_steps_are_audited() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let id = put(&mut conn, Tier::Semantic, "Auth uses Ed25519");
    let before = lifecycle::get(&conn, &id).unwrap();
    lifecycle::soft_delete(&mut conn, &id, Some("wrong"), "user", now()).unwrap();
    assert!(lifecycle::get(&conn, &id).unwrap().is_deleted);
    lifecycle::restore(&mut conn, &id, "user", now()).unwrap();
    assert_eq!(lifecycle::get(&conn, &id).unwrap(), before, "content, metadata and counters are byte-identical");
    let ev =
        audit::list_events(&conn, &audit::EventFilter { memory_id: Some(id.clone()), ..Default::default() }).unwrap();
    let actions: Vec<&str> = ev.iter().map(|e| e.action.as_str()).collect();
    assert!(actions.contains(&"soft") && actions.contains(&"restore"), "{actions:?}");
}

#[test]
fn hard_delete_needs_confirmation_and_removes_every_trace_but_events() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let id = put(&mut conn, Tier::Episodic, "the deploy failed on migration 42");
    let err = lifecycle::hard_delete(&mut conn, &id, false, None, "user", now()).unwrap_err();
    assert_eq!(err.exit_code(), 5);
    assert!(lifecycle::get(&conn, &id).is_ok(), "nothing deleted without confirmation");
    lifecycle::hard_delete(&mut conn, &id, true, None, "user", now()).unwrap();
    assert_eq!(lifecycle::get(&conn, &id).unwrap_err().exit_code(), 4);
    let fts = if lethe_testkit::backend::is_postgres() {
        "SELECT COUNT(*) FROM memory_item WHERE lethe_fts @@ to_tsquery('english', 'migration')"
    } else {
        "SELECT COUNT(*) FROM memory_item_fts WHERE memory_item_fts MATCH 'migration'"
    };
    assert_eq!(count(&conn, fts), 0, "FTS trace gone");
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM lethe_signature"), 0, "signature gone");
    assert_eq!(
        count(&conn, "SELECT COUNT(*) FROM memory_forgetting_event WHERE action = 'hard'"),
        1,
        "the event stays"
    );
}

#[test]
fn quarantine_names_who_deleted_each_memory_with_its_reason() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let a = put(&mut conn, Tier::Semantic, "the staging cluster runs on arm64 nodes");
    let b = put(&mut conn, Tier::Episodic, "the release train left on Tuesday at noon");
    lifecycle::soft_delete(&mut conn, &a, Some("stale"), "agent:cursor", now()).unwrap();
    lifecycle::soft_delete(&mut conn, &b, None, "user", time::add_days(now(), 1.0)).unwrap();
    let s = lethe_engine::Settings::default();
    let q = forgetting::quarantine(&conn, &s, time::add_days(now(), 2.0)).unwrap();
    let ids: Vec<&str> = q.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, [b.as_str(), a.as_str()], "newest deletion first");
    assert_eq!(q[1].deleted_by.as_deref(), Some("agent:cursor"), "the agent that deleted it");
    assert_eq!(q[1].reason.as_deref(), Some("stale"));
    assert_eq!(q[1].policy.as_deref(), Some("agent"));
    assert_eq!(q[0].deleted_by.as_deref(), Some("user"));
    assert_eq!(q[0].policy.as_deref(), Some("manual"));
    // Two days after the first deletion of a 30-day quarantine: 28 days are left.
    assert!((q[1].days_left - 28.0).abs() < 1e-6, "{}", q[1].days_left);
    assert!((q[0].days_left - 29.0).abs() < 1e-6, "{}", q[0].days_left);
    // The first page is the list's head, with the count of all.
    let page = forgetting::quarantine_page(&conn, &s, time::add_days(now(), 2.0), Some(1)).unwrap();
    assert_eq!(page.total, 2);
    assert_eq!(page.items, q[..1]);
    assert_eq!(forgetting::quarantine_page(&conn, &s, time::add_days(now(), 2.0), None).unwrap().items, q);
}

#[test]
fn the_quarantine_view_searches_filters_sorts_and_pages_in_the_engine() {
    use lethe_engine::quarantine_view::{self, QuarantineQuery, QuarantineSort};
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let texts = [
        "the staging cluster runs on arm64 nodes",
        "the release train left on Tuesday at noon",
        "docker volumes need the uid of the build user",
        "the billing export runs at two in the night",
        "docker compose reads the override file last",
    ];
    let ids: Vec<String> = texts.iter().map(|t| put(&mut conn, Tier::Episodic, t)).collect();
    // Deleted one a day apart (the newest deletion is the last): the agent deletes 0, 2 and 4.
    for (i, id) in ids.iter().enumerate() {
        let (who, why) = if i % 2 == 0 { ("agent:cursor", "stale, duplicate of mem_x") } else { ("user", "wrong") };
        lifecycle::soft_delete(&mut conn, id, Some(why), who, time::add_days(now(), i as f64)).unwrap();
    }
    let s = lethe_engine::Settings::default();
    let at = time::add_days(now(), 10.0);
    let view = |q: QuarantineQuery| quarantine_view::view(&conn, &s, at, &q).unwrap();
    let order = |v: &quarantine_view::QuarantineView| v.items.iter().map(|i| i.id.clone()).collect::<Vec<_>>();

    // A page of two from the second row, newest deletion first, with the counts of all.
    let v = view(QuarantineQuery { offset: Some(1), limit: Some(2), ..Default::default() });
    assert_eq!((v.total, v.matching, v.offset), (5, 5, 1));
    assert_eq!(order(&v), [ids[3].clone(), ids[2].clone()]);
    assert_eq!(v.items[0].preview, texts[3], "the page's rows carry their text");
    assert!(v.ids.is_empty(), "ids only when asked");
    // Who deleted, in words, and the parts of the reasons, most first.
    let by: Vec<(&str, &str, usize)> =
        v.deleted_by.iter().map(|f| (f.value.as_str(), f.label.as_str(), f.count)).collect();
    assert_eq!(by, [("agent:cursor", "agent:cursor", 3), ("user", "a person", 2)]);
    let reasons: Vec<(&str, usize)> = v.reasons.iter().map(|f| (f.value.as_str(), f.count)).collect();
    assert_eq!(reasons, [("duplicate", 3), ("stale", 3), ("wrong", 2)]);

    // Every word of a search, in any case, in the text: two docker notes, newest first.
    let v = view(QuarantineQuery { search: Some("DOCKER the".into()), ..Default::default() });
    assert_eq!((v.total, v.matching), (5, 2));
    assert_eq!(order(&v), [ids[4].clone(), ids[2].clone()]);
    // Filters combine; "select all matching" gets every matching id.
    let v = view(QuarantineQuery {
        deleted_by: Some("agent:cursor".into()),
        reason: Some("duplicate".into()),
        sort: Some(QuarantineSort::DeletedAsc),
        limit: Some(1),
        all_ids: Some(true),
        ..Default::default()
    });
    assert_eq!(v.matching, 3);
    assert_eq!(order(&v), [ids[0].clone()], "oldest deletion first, one row");
    assert_eq!(v.ids, [ids[0].clone(), ids[2].clone(), ids[4].clone()]);
    // Days left: the oldest deletion has fewest; content sorts alphabetically.
    let v = view(QuarantineQuery { sort: Some(QuarantineSort::DaysLeft), limit: Some(1), ..Default::default() });
    assert_eq!(order(&v), [ids[0].clone()]);
    assert!(
        (v.items[0].days_left - 20.0).abs() < 1e-6,
        "30 days from a deletion 10 days ago: {}",
        v.items[0].days_left
    );
    let v = view(QuarantineQuery { sort: Some(QuarantineSort::Content), limit: Some(2), ..Default::default() });
    assert_eq!(order(&v), [ids[4].clone(), ids[2].clone()], "docker compose…, docker volumes…");
    // An offset past the end is an empty page, not an error.
    let v = view(QuarantineQuery { offset: Some(99), ..Default::default() });
    assert_eq!((v.offset, v.items.len()), (5, 0));
}

#[test]
fn the_procedures_page_is_searched_and_grouped_in_the_engine() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let mut add = |goal: &str, steps: &[&str], workflow: Option<&str>, skill: Option<&str>| {
        let m = NewMemory {
            procedure: ProcedureFields {
                task_goal: Some(goal.into()),
                steps: Some(serde_json::json!(steps)),
                workflow_name: workflow.map(str::to_string),
                skill_name: skill.map(str::to_string),
                ..Default::default()
            },
            ..NewMemory::new(Tier::Procedural, format!("{goal}: {}", steps.join("; ")))
        };
        lifecycle::remember(&mut conn, &m, "user", now()).unwrap().id().unwrap().to_string()
    };
    let deploy = add("Deploy the search service", &["build the image", "push it"], Some("release"), None);
    let loose = add("Clean the build cache", &["remove target"], None, None);
    let vault = add("Rotate the vault keys", &["open the vault", "rotate"], None, Some("Security"));
    let sign = add("Sign the release image", &["sign with the release key"], Some("release"), Some("ci"));
    let page = |q: procedural::ProcedureQuery| procedural::page(&conn, &q).unwrap();
    let ids = |p: &procedural::ProcedurePage| p.items.iter().map(|m| m.id.clone()).collect::<Vec<_>>();

    // Groups by name case-insensitively (a skill when there is no workflow), the unnamed last;
    // inside a group, the stored order.
    let p = page(procedural::ProcedureQuery::default());
    assert_eq!((p.total, p.matching), (4, 4));
    let groups: Vec<(Option<&str>, usize)> = p.groups.iter().map(|g| (g.name.as_deref(), g.count)).collect();
    assert_eq!(groups, [(Some("release"), 2), (Some("Security"), 1), (None, 1)]);
    assert_eq!(ids(&p), [deploy.clone(), sign.clone(), vault.clone(), loose.clone()]);
    assert_eq!(p.items[0].steps, Some(serde_json::json!(["build the image", "push it"])), "whole procedures");
    // A page: the third and fourth.
    let p = page(procedural::ProcedureQuery { offset: Some(2), limit: Some(5), ..Default::default() });
    assert_eq!((p.offset, ids(&p)), (2, vec![vault.clone(), loose.clone()]));
    // Every word, in the goal, the steps or the names.
    let p = page(procedural::ProcedureQuery { search: Some("IMAGE release".into()), ..Default::default() });
    assert_eq!((p.total, p.matching), (4, 2));
    assert_eq!(ids(&p), [deploy, sign]);
    let p = page(procedural::ProcedureQuery { search: Some("vault rotate".into()), ..Default::default() });
    assert_eq!(ids(&p), [vault]);
    assert_eq!(p.groups.len(), 1, "only the groups that match");
}

#[test]
fn a_selection_is_restored_in_one_transaction_each_audited_or_not_at_all() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let ids: Vec<String> =
        (0..5).map(|i| put(&mut conn, Tier::Semantic, &format!("service {i} listens on port {}", 8000 + i))).collect();
    let before: Vec<_> = ids.iter().map(|id| lifecycle::get(&conn, id).unwrap()).collect();
    for id in &ids[..4] {
        lifecycle::soft_delete(&mut conn, id, Some("review"), "user", now()).unwrap();
    }
    // One of the selection is not in quarantine: nothing is restored.
    let mixed = vec![ids[0].clone(), ids[4].clone()];
    let writes = writes_so_far(&conn);
    let err = lifecycle::restore_many(&mut conn, &mixed, "user", now()).unwrap_err();
    assert_eq!(err.exit_code(), 2, "{err}");
    assert!(err.to_string().contains(&ids[4]), "the error names the memory: {err}");
    assert_eq!(writes_so_far(&conn), writes, "nothing written");
    assert!(lifecycle::get(&conn, &ids[0]).unwrap().is_deleted, "still in quarantine");
    let twice = vec![ids[0].clone(), ids[0].clone()];
    assert_eq!(lifecycle::restore_many(&mut conn, &twice, "user", now()).unwrap_err().exit_code(), 2);
    assert_eq!(lifecycle::restore_many(&mut conn, &[], "user", now()).unwrap_err().exit_code(), 2);

    let sel: Vec<String> = ids[..3].to_vec();
    let done = lifecycle::restore_many(&mut conn, &sel, "user", now()).unwrap();
    assert_eq!(done.iter().map(|m| m.id.clone()).collect::<Vec<_>>(), sel);
    for (i, id) in sel.iter().enumerate() {
        assert_eq!(lifecycle::get(&conn, id).unwrap(), before[i], "byte-identical after restore");
        let ev = audit::list_events(&conn, &audit::EventFilter { memory_id: Some(id.clone()), ..Default::default() })
            .unwrap();
        assert_eq!(ev.iter().filter(|e| e.action == "restore").count(), 1, "{id}: one restore each");
    }
    assert!(lifecycle::get(&conn, &ids[3]).unwrap().is_deleted, "the unselected one stays");
    let q = forgetting::quarantine(&conn, &lethe_engine::Settings::default(), now()).unwrap();
    assert_eq!(q.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), [ids[3].as_str()]);
}

#[test]
fn a_selection_is_deleted_for_ever_only_by_a_person_with_confirmation() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let a = put(&mut conn, Tier::Episodic, "the deploy failed on migration 42");
    let b = put(&mut conn, Tier::Episodic, "the canary rolled back at 03:10 after alarms");
    let sel = vec![a.clone(), b.clone()];
    assert_eq!(lifecycle::hard_delete_many(&mut conn, &sel, false, "user", now()).unwrap_err().exit_code(), 5);
    assert_eq!(lifecycle::hard_delete_many(&mut conn, &sel, true, "agent:x", now()).unwrap_err().exit_code(), 6);
    let unknown = vec![a.clone(), "mem_nope".to_string()];
    assert_eq!(lifecycle::hard_delete_many(&mut conn, &unknown, true, "user", now()).unwrap_err().exit_code(), 4);
    assert!(lifecycle::get(&conn, &a).is_ok() && lifecycle::get(&conn, &b).is_ok(), "nothing deleted yet");
    let gone = lifecycle::hard_delete_many(&mut conn, &sel, true, "user", now()).unwrap();
    assert_eq!(gone.iter().map(|e| e.memory_id.clone()).collect::<Vec<_>>(), sel);
    for id in &sel {
        assert_eq!(lifecycle::get(&conn, id).unwrap_err().exit_code(), 4, "{id} gone");
    }
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM memory_forgetting_event WHERE action = 'hard'"), 2);
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM lethe_signature"), 0, "signatures gone");
}

#[test]
fn invalid_input_writes_nothing() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let before = writes_so_far(&conn);
    let cases: Vec<NewMemory> = vec![
        NewMemory::new(Tier::Semantic, ""),
        NewMemory::new(Tier::Semantic, "x".repeat(2 * 1024 * 1024)),
        NewMemory { importance: Some(2.0), ..NewMemory::new(Tier::Semantic, "fine") },
        NewMemory { importance: Some(f64::NAN), ..NewMemory::new(Tier::Semantic, "fine") },
        NewMemory {
            procedure: ProcedureFields { steps: Some(serde_json::json!({"not": "an array"})), ..Default::default() },
            ..NewMemory::new(Tier::Procedural, "fine")
        },
        NewMemory {
            created_at: Some(time::add_days(now(), 30.0)),
            ..NewMemory::new(Tier::Semantic, "from the future")
        },
    ];
    for m in cases {
        let e = lifecycle::remember(&mut conn, &m, "user", now()).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
    }
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM memory_item"), 0);
    assert_eq!(writes_so_far(&conn), before, "no row touched");
}

#[test]
fn write_time_filter_skips_trivial_and_exact_duplicates() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let ok = lifecycle::remember(&mut conn, &NewMemory::new(Tier::Episodic, "ok"), "user", now()).unwrap();
    assert!(matches!(ok, RememberOutcome::Skipped { ref reason, .. } if reason.starts_with("trivial")));
    let first = put(&mut conn, Tier::Semantic, "The staging cluster runs in eu-west-1.");
    let again = lifecycle::remember(
        &mut conn,
        &NewMemory::new(Tier::Semantic, "the staging cluster runs in EU-west-1"),
        "user",
        now(),
    )
    .unwrap();
    assert_eq!(
        again,
        RememberOutcome::Skipped {
            stored: false,
            reason: "duplicate: the same content is already stored in the semantic tier".into(),
            existing_id: Some(first)
        }
    );
    // Another tier is another kind of memory: stored.
    assert!(matches!(
        lifecycle::remember(
            &mut conn,
            &NewMemory::new(Tier::Episodic, "The staging cluster runs in eu-west-1."),
            "user",
            now()
        )
        .unwrap(),
        RememberOutcome::Stored { .. }
    ));
}

#[test]
fn near_copies_one_quarantined_as_duplicate_of_the_other_and_batch_is_idempotent() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let old = time::add_days(now(), -20.0);
    let mk = |content: &str| NewMemory {
        created_at: Some(old),
        importance: Some(0.0),
        ..NewMemory::new(Tier::Working, content)
    };
    let a = lifecycle::remember(
        &mut conn,
        &mk("Roll back by running kubectl rollout undo on the api deployment then check health"),
        "user",
        now(),
    )
    .unwrap();
    let b = lifecycle::remember(
        &mut conn,
        &mk("Roll back by running kubectl rollout undo on the api deployment and then check health"),
        "user",
        now(),
    )
    .unwrap();
    let (a, b) = (a.id().unwrap().to_string(), b.id().unwrap().to_string());
    // Disable the working gate so that only the score decides.
    let s = lethe_engine::Settings { working_window_hours: 1e9, ..Default::default() };
    lethe_engine::Settings::store(&mut conn, &s, "user", now()).unwrap();
    // Importance 0, never used, 20 days of working memory: both are old and unused; only the
    // duplication term separates them: a (written first) dominates b.
    let r = forgetting::run_batch(&mut conn, &BatchOptions::new(now(), false)).unwrap();
    assert!(r.soft_deleted.contains(&b), "{r:?}");
    let q = forgetting::quarantine(&conn, &s, now()).unwrap();
    let item = q.iter().find(|i| i.id == b).unwrap();
    assert!(item.reason.as_deref().unwrap().contains(&format!("duplicate of {a}")), "{:?}", item.reason);
    let events = count(&conn, "SELECT COUNT(*) FROM memory_forgetting_event");
    let r2 = forgetting::run_batch(&mut conn, &BatchOptions::new(now(), false)).unwrap();
    assert!(r2.soft_deleted.is_empty() && r2.review.is_empty() && r2.purged.is_empty(), "{r2:?}");
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM memory_forgetting_event"), events, "second run writes no event");
}

#[test]
fn batch_is_idempotent_with_a_cluster_larger_than_any_old_bucket_cap() {
    // 150 near-copies put well over 64 memories in one LSH bucket. Deleting most of them in
    // the first run must not reveal new duplicate pairs to the second run. Each is the text
    // with one filler word put in somewhere (a copy that differs in a value, such as a ticket
    // number, is another memory, not a duplicate).
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let base = "when the nightly backup of the billing database fails the on call engineer restores the last \
                snapshot into staging verifies row counts against the ledger and only then promotes it";
    let words: Vec<&str> = base.split_whitespace().collect();
    for i in 0..150 {
        let mut text = words.clone();
        text.insert(i / 5, ["also", "then", "just", "so", "very"][i % 5]);
        let m = NewMemory {
            created_at: Some(time::add_days(now(), -20.0 - i as f64 / 100.0)),
            importance: Some(0.0),
            ..NewMemory::new(Tier::Working, text.join(" "))
        };
        lifecycle::remember(&mut conn, &m, "user", now()).unwrap();
    }
    let s = lethe_engine::Settings { working_window_hours: 1e9, ..Default::default() };
    lethe_engine::Settings::store(&mut conn, &s, "user", now()).unwrap();
    let r = forgetting::run_batch(&mut conn, &BatchOptions::new(now(), false)).unwrap();
    assert!(r.soft_deleted.len() > 100, "the duplicates are forgotten: {}", r.soft_deleted.len());
    let events = count(&conn, "SELECT COUNT(*) FROM memory_forgetting_event");
    let r2 = forgetting::run_batch(&mut conn, &BatchOptions::new(now(), false)).unwrap();
    assert!(r2.soft_deleted.is_empty() && r2.review.is_empty(), "{r2:?}");
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM memory_forgetting_event"), events, "second run writes no event");
}

#[test]
fn later_now_forgets_more_and_dry_run_writes_nothing() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    for i in 0..30 {
        let m = NewMemory {
            importance: Some(0.0),
            created_at: Some(time::add_days(now(), -(i as f64) * 3.0)),
            ..NewMemory::new(Tier::Episodic, format!("event number {i} happened in sprint {}", i * 7))
        };
        lifecycle::remember(&mut conn, &m, "user", now()).unwrap();
    }
    // Thirty different events (none a duplicate of another): never used and unimportant, they
    // tend to 0.6 and cross a threshold of 0.55 as they age.
    let s = lethe_engine::Settings { threshold: 0.55, ..Default::default() };
    lethe_engine::Settings::store(&mut conn, &s, "user", now()).unwrap();
    let changes = count(&conn, "SELECT COUNT(*) FROM lethe_change");
    let today = forgetting::run_batch(&mut conn, &BatchOptions::new(now(), true)).unwrap();
    let later = forgetting::run_batch(&mut conn, &BatchOptions::new(time::add_days(now(), 200.0), true)).unwrap();
    assert!(
        later.soft_deleted.len() > today.soft_deleted.len(),
        "{} vs {}",
        later.soft_deleted.len(),
        today.soft_deleted.len()
    );
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM lethe_change"), changes, "dry runs write nothing");
}

#[test]
fn review_event_only_on_entering_the_band() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    // Episodic, never used, importance 0: 0.25 + 0.35(1−R); in [0.5, 0.6) for R in (0, 2/7],
    // i.e. from day 54 on (day 70: 0.53).
    let m = NewMemory {
        importance: Some(0.0),
        created_at: Some(time::add_days(now(), -70.0)),
        ..NewMemory::new(Tier::Episodic, "entered the band")
    };
    lifecycle::remember(&mut conn, &m, "user", now()).unwrap();
    let r1 = forgetting::run_batch(&mut conn, &BatchOptions::new(now(), false)).unwrap();
    let r2 = forgetting::run_batch(&mut conn, &BatchOptions::new(time::add_days(now(), 1.0), false)).unwrap();
    assert_eq!((r1.review.len(), r2.review.len()), (1, 0));
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM memory_forgetting_event WHERE action = 'review'"), 1);
}

#[test]
fn expired_quarantine_is_purged_with_a_hard_event() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let id = put(&mut conn, Tier::Semantic, "to be purged");
    lifecycle::soft_delete(&mut conn, &id, None, "user", now()).unwrap();
    let r = forgetting::run_batch(&mut conn, &BatchOptions::new(time::add_days(now(), 31.0), false)).unwrap();
    assert_eq!(r.purged, vec![id.clone()]);
    let policy: String =
        conn.query_row("SELECT policy FROM memory_forgetting_event WHERE action = 'hard'", [], |r| r.get(0)).unwrap();
    assert_eq!(policy, "quarantine-expired");
}

fn procedure(conn: &mut store::Connection) -> String {
    let m = NewMemory {
        procedure: ProcedureFields {
            task_goal: Some("Roll back a deploy".into()),
            steps: Some(serde_json::json!(["freeze", "undo", "verify"])),
            trigger_conditions: Some(serde_json::json!({"when": "deploy fails"})),
            workflow_name: Some("deploy-rollback".into()),
            skill_name: Some("ops".into()),
        },
        ..NewMemory::new(Tier::Procedural, "Deploy rollback procedure")
    };
    lifecycle::remember(conn, &m, "user", now()).unwrap().id().unwrap().to_string()
}

#[test]
fn cas_race_exactly_one_of_sixteen_wins_each_round() {
    let path = temp_db();
    let mut conn = lethe_testkit::backend::open(&path).unwrap();
    let id = procedure(&mut conn);
    for round in 1..=2 {
        let barrier = Arc::new(Barrier::new(16));
        let handles: Vec<_> = (0..16)
            .map(|t| {
                let (path, id, barrier) = (path.to_path_buf(), id.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let mut c = lethe_testkit::backend::open(&path).unwrap();
                    let patch = ProcedurePatch {
                        content: None,
                        fields: ProcedureFields { task_goal: Some(format!("writer {t}")), ..Default::default() },
                    };
                    barrier.wait();
                    procedural::update(&mut c, &id, round, &patch, &format!("agent:w{t}"), now())
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let wins = results.iter().filter(|r| r.is_ok()).count();
        let conflicts = results.iter().filter(|r| matches!(r, Err(e) if e.is_conflict())).count();
        assert_eq!((wins, conflicts), (1, 15), "round {round}");
        assert_eq!(lifecycle::get(&conn, &id).unwrap().version, round + 1);
    }
    let h = procedural::history(&conn, &id).unwrap();
    assert_eq!(h.iter().map(|v| v.version).collect::<Vec<_>>(), vec![1, 2, 3], "every version kept");
    let err = procedural::update(&mut conn, &id, 1, &ProcedurePatch::default(), "user", now()).unwrap_err();
    assert!(err.to_string().contains("current version is 3"), "{err}");
}

#[test]
fn reflection_notes_cap_at_100_and_reject_big_notes() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let id = procedure(&mut conn);
    for i in 0..101 {
        let note = serde_json::json!({"failure_type": "tool_error", "failure_description": format!("failure {i}")});
        procedural::reflect(&mut conn, &id, &note, None, "agent:test", now()).unwrap();
    }
    let notes = procedural::notes(&conn, &id).unwrap();
    assert_eq!(notes.len(), 100);
    assert_eq!(notes[0]["failure_description"], "failure 1", "the first note was dropped");
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM lethe_action WHERE action = 'reflection_dropped'"), 1);
    let big = serde_json::json!({"failure_type": "tool_error", "failure_description": "x".repeat(11 * 1024)});
    assert_eq!(procedural::reflect(&mut conn, &id, &big, None, "agent:test", now()).unwrap_err().exit_code(), 2);
    let bad = serde_json::json!({"failure_type": "vibes", "failure_description": "?"});
    assert_eq!(procedural::reflect(&mut conn, &id, &bad, None, "agent:test", now()).unwrap_err().exit_code(), 2);
}

#[test]
fn archive_round_trip_is_byte_identical_and_protects_other_text() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let payload: String =
        (0..100_000u32).map(|i| char::from(b' ' + (i.wrapping_mul(2_654_435_761) % 94) as u8)).collect();
    let m = NewMemory { source: Some("tool:bash".into()), ..NewMemory::new(Tier::Episodic, payload.clone()) };
    let id = lifecycle::remember(&mut conn, &m, "agent:x", now()).unwrap().id().unwrap().to_string();
    let receipt = archive::archive(&mut conn, &id, "ls -R output of the repo", "agent:x", now()).unwrap();
    assert_eq!(
        lifecycle::get(&conn, &id).unwrap().content,
        format!("[Archive#{}: ls -R output of the repo]", receipt.archive_no)
    );
    assert!(receipt.bytes_saved > 99_000);
    let back = archive::unarchive(&mut conn, receipt.archive_no, "user", now()).unwrap();
    assert_eq!(back.content.as_bytes(), payload.as_bytes());
    let user_text = put(&mut conn, Tier::Semantic, "the user said hello");
    let e = archive::archive(&mut conn, &user_text, "memo", "agent:x", now()).unwrap_err();
    assert!(e.to_string().contains("protected") && e.exit_code() == 2, "{e}");
}

#[test]
fn meta_buffer_counts_exactly_across_threads_and_processes_worth_of_connections() {
    let path = temp_db();
    let mut conn = lethe_testkit::backend::open(&path).unwrap();
    let id = put(&mut conn, Tier::Semantic, "recalled a lot");
    let buf =
        Arc::new(meta::MetaBuffer::start(lethe_testkit::backend::db_arg(&path), Duration::from_millis(100)).unwrap());
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (buf, id) = (buf.clone(), id.clone());
            std::thread::spawn(move || {
                for i in 0..2500 {
                    buf.record_hit(&id, if i % 2 == 0 { 0.8 } else { 0.2 }, now());
                }
            })
        })
        .collect();
    // A second writer on its own connection, as another process would.
    let mut other = lethe_testkit::backend::open(&path).unwrap();
    let mut d = std::collections::HashMap::new();
    d.insert(
        id.clone(),
        meta::Delta { count: 500, success: 500, failure: 0, confidence_sum: 500.0, last_recalled_at: None },
    );
    meta::write_deltas(&mut other, &d).unwrap();
    for h in handles {
        h.join().unwrap();
    }
    let pending = buf.read(&conn, &id).unwrap();
    assert_eq!(pending.recall_count, 10_500, "reads include pending deltas");
    Arc::try_unwrap(buf).ok().unwrap().shutdown();
    let stored = meta::read_stored(&conn, &id).unwrap().unwrap();
    assert_eq!((stored.recall_count, stored.success_count, stored.failure_count), (10_500, 5_500, 5_000));
    let avg = stored.avg_confidence.unwrap();
    assert!((avg - (5000.0 * 0.8 + 5000.0 * 0.2 + 500.0) / 10_500.0).abs() < 1e-9, "{avg}");
}

#[test]
fn ten_thousand_hits_in_one_interval_cost_at_most_two_transactions_and_a_stream_keeps_flushing() {
    let path = temp_db();
    let mut conn = lethe_testkit::backend::open(&path).unwrap();
    let id = put(&mut conn, Tier::Semantic, "hot memory");
    let buf = meta::MetaBuffer::start(lethe_testkit::backend::db_arg(&path), Duration::from_millis(100)).unwrap();
    for _ in 0..10_000 {
        buf.record_hit(&id, 0.9, now());
    }
    std::thread::sleep(Duration::from_millis(350));
    let (flushes, _) = buf.counters();
    assert!((1..=2).contains(&flushes), "10,000 hits → {flushes} transactions");
    // A continuous stream (a hit every 5 ms for 1 s) still flushes about every 100 ms.
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        buf.record_hit(&id, 0.9, now());
        std::thread::sleep(Duration::from_millis(5));
    }
    let (after, _) = buf.counters();
    assert!(after - flushes >= 7, "a steady stream must not starve the flusher: {} flushes in 1 s", after - flushes);
    buf.shutdown();
}

/// The window keeps its scoring snapshot up to date from the change journal; after inserts,
/// edits, soft deletes, restores and hard deletes it must equal a snapshot loaded afresh.
#[test]
fn incremental_snapshot_equals_a_fresh_load() {
    let path = temp_db();
    let mut conn = lethe_testkit::backend::open(&path).unwrap();
    let base = "Roll back by running kubectl rollout undo on the api deployment then check health";
    let a = put(&mut conn, Tier::Semantic, base);
    let b = put(&mut conn, Tier::Episodic, &format!("{base} again"));
    let c = put(&mut conn, Tier::Semantic, "Docker volumes need the uid of the container user");
    for i in 0..30 {
        put(&mut conn, Tier::Episodic, &format!("unrelated note number {i} about sprint {}", i * 3));
    }
    let mut snap = forgetting::Snapshot::load(&conn).unwrap();
    let seq = store::last_change_seq(&conn).unwrap();
    let d = put(&mut conn, Tier::Working, &format!("{base}, again."));
    lifecycle::edit(&mut conn, &c, &format!("{base} again"), "user", now()).unwrap();
    lifecycle::soft_delete(&mut conn, &b, None, "user", now()).unwrap();
    lifecycle::restore(&mut conn, &b, "user", now()).unwrap();
    lifecycle::soft_delete(&mut conn, &a, None, "user", now()).unwrap();
    let e = put(&mut conn, Tier::Semantic, "to be removed for good");
    lifecycle::hard_delete(&mut conn, &e, true, None, "user", now()).unwrap();
    let (_, ids) = store::changes_since(&conn, seq, 100).unwrap();
    snap.apply_changes(&conn, &ids.unwrap()).unwrap();
    let pairs = assert_same_as_fresh(&conn, &snap);
    assert!(pairs.iter().any(|(p, q, _)| [p, q].contains(&&d) && [p, q].contains(&&c)), "the new near-copies pair up");
}

/// The similar pairs of a snapshot by id, after checking that it equals a fresh load: same
/// rows, same pairs, same scores.
fn assert_same_as_fresh(conn: &store::Connection, snap: &forgetting::Snapshot) -> Vec<(String, String, String)> {
    let fresh = forgetting::Snapshot::load(conn).unwrap();
    let key = |s: &forgetting::Snapshot| {
        let mut rows: Vec<String> = s.rows.iter().map(|r| format!("{r:?}")).collect();
        rows.sort();
        let mut pairs: Vec<(String, String, String)> = s
            .pairs()
            .iter()
            .map(|&(x, y, sim, _)| {
                let (p, q) = (s.rows[x as usize].id.clone(), s.rows[y as usize].id.clone());
                (p.clone().min(q.clone()), p.max(q), format!("{sim:.12}"))
            })
            .collect();
        pairs.sort();
        (rows, pairs)
    };
    let (inc, full) = (key(snap), key(&fresh));
    assert_eq!(inc.0, full.0, "same rows");
    assert_eq!(inc.1, full.1, "same similar pairs");
    let s = lethe_engine::Settings::default();
    let by_id = |sn: &forgetting::Snapshot| {
        let mut v: Vec<(String, String)> =
            sn.rows.iter().zip(sn.scores(&s, now())).map(|(r, x)| (r.id.clone(), format!("{x:.12}"))).collect();
        v.sort();
        v
    };
    assert_eq!(by_id(snap), by_id(&fresh), "same scores, duplication included");
    inc.1
}

/// A row another program wrote has no neighbour list: the update searches for it, as a fresh
/// load does, and still equals one.
#[test]
fn incremental_snapshot_with_a_foreign_write_equals_a_fresh_load() {
    let path = temp_db();
    let mut conn = lethe_testkit::backend::open(&path).unwrap();
    let base = "Rotate the signing key of the billing service every ninety days and log the rotation";
    let a = put(&mut conn, Tier::Semantic, base);
    for i in 0..20 {
        put(&mut conn, Tier::Episodic, &format!("standup note {i}: reviewed ticket {}", i * 7));
    }
    let mut snap = forgetting::Snapshot::load(&conn).unwrap();
    let seq = store::last_change_seq(&conn).unwrap();
    conn.execute(
        "INSERT INTO memory_item (id, type, content, created_at, tags) VALUES \
         ('mem_foreign', 'episodic', ?1, '2026-05-01T00:00:00.000Z', '[]')",
        [format!("{base}, said the runbook")],
    )
    .unwrap();
    put(&mut conn, Tier::Episodic, &format!("{base} (copied)"));
    let (_, ids) = store::changes_since(&conn, seq, 100).unwrap();
    snap.apply_changes(&conn, &ids.unwrap()).unwrap();
    let pairs = assert_same_as_fresh(&conn, &snap);
    assert!(
        pairs.iter().any(|(p, q, _)| [p, q].contains(&&a) && [p, q].contains(&&"mem_foreign".to_string())),
        "the foreign near-copy was searched and pairs up: {pairs:?}"
    );
}

/// The window's snapshot is patched for each agent write without reading every memory again
/// (the members and the bucket index it keeps are updated for the changed ones): over many
/// rounds of writes, edits, pins, deletes and restores among clusters of near-copies, it still
/// equals a fresh load after every round.
#[test]
fn a_snapshot_patched_round_after_round_equals_a_fresh_load() {
    let path = temp_db();
    let mut conn = lethe_testkit::backend::open(&path).unwrap();
    let templates = [
        "Deploy of billing v2.{} failed: a missing env var in the staging manifest",
        "Reviewed PR {} adding retry with backoff to the search client",
        "Rate limit on the auth API is {} requests per minute per key",
    ];
    let mut ids = Vec::new();
    for i in 0..600 {
        let text = match i % 4 {
            3 => format!("sprint note {i}: the team discussed topic {} at length", i * 13 % 97),
            k => templates[k].replace("{}", &i.to_string()),
        };
        ids.push(put(&mut conn, if i % 2 == 0 { Tier::Episodic } else { Tier::Semantic }, &text));
    }
    // The lists are stored (as a writer's refresh leaves them), so that a change has only a
    // few memories to search.
    lethe_engine::neighbours::refresh(&mut conn).unwrap();
    let mut snap = forgetting::Snapshot::load(&conn).unwrap();
    let mut seq = store::last_change_seq(&conn).unwrap();
    for round in 0..8 {
        let t = templates[round % 3];
        put(&mut conn, Tier::Working, &t.replace("{}", &format!("{round}0")));
        put(&mut conn, Tier::Semantic, &format!("{} (seen again in round {round})", t.replace("{}", "3")));
        let victim = &ids[round * 7];
        lifecycle::edit(&mut conn, &ids[round * 7 + 1], &t.replace("{}", &format!("{round} edited")), "user", now())
            .unwrap();
        lifecycle::pin(&mut conn, &ids[round * 7 + 2], "user", now()).unwrap();
        lifecycle::soft_delete(&mut conn, victim, None, "user", now()).unwrap();
        if round % 2 == 1 {
            lifecycle::restore(&mut conn, &ids[(round - 1) * 7], "user", now()).unwrap();
        }
        let (at, changed) = store::changes_since(&conn, seq, 100).unwrap();
        seq = at;
        snap.apply_changes(&conn, &changed.unwrap()).unwrap();
        assert!(snap.searched > 0, "round {round}: the new memories were searched by the snapshot");
        assert_same_as_fresh(&conn, &snap);
    }
}

const DEPLOY_FAILED: &str = "Deploy of billing v2.2 failed: a missing env var in the staging manifest";

/// A deploy failure and its near-copy (so that their scores have a duplication part) among 20
/// unrelated notes; returns the two.
fn near_copies_among_others(conn: &mut store::Connection) -> (String, String) {
    let a = put(conn, Tier::Episodic, DEPLOY_FAILED);
    let b = put(conn, Tier::Episodic, &format!("{DEPLOY_FAILED}, again"));
    for i in 0..20 {
        put(conn, Tier::Semantic, &format!("rate limit on service {i} is {} requests per minute", i * 50));
    }
    (a, b)
}

/// The window opens a memory from the snapshot it keeps (patched from the change journal)
/// instead of loading the store: the detail must equal the one that loads its own, after
/// changes, and a memory written after the snapshot was taken is still scored.
#[test]
fn a_detail_scored_from_a_kept_snapshot_equals_one_that_loads_its_own() {
    let path = temp_db();
    let mut conn = lethe_testkit::backend::open(&path).unwrap();
    let (a, b) = near_copies_among_others(&mut conn);
    let base = DEPLOY_FAILED;
    let mut snap = forgetting::Snapshot::load(&conn).unwrap();
    let seq = store::last_change_seq(&conn).unwrap();
    lifecycle::pin(&mut conn, &a, "user", now()).unwrap();
    lifecycle::cite(&mut conn, &b, "user", now()).unwrap();
    let (_, ids) = store::changes_since(&conn, seq, 100).unwrap();
    snap.apply_changes(&conn, &ids.unwrap()).unwrap();
    let later = put(&mut conn, Tier::Episodic, &format!("{base} (third time)"));
    fn json(v: &impl serde::Serialize) -> serde_json::Value {
        serde_json::to_value(v).unwrap()
    }
    for id in [&a, &b, &later] {
        let kept = lethe_engine::detail_in(&conn, &snap, id, now(), None).unwrap();
        let own = lethe_engine::detail(&conn, id, now(), None).unwrap();
        if id == &later {
            // Not in the kept snapshot: scored from a fresh one, as `detail` does.
            assert_eq!(json(&kept), json(&own));
            continue;
        }
        // The snapshot predates `later`, which may change who dominates whom; the memory and
        // its usage are those after the pin and the cite.
        assert_eq!(json(&kept.memory), json(&own.memory));
        assert_eq!(kept.score.features.usage, own.score.features.usage);
        assert_eq!(kept.memory.pinned, id == &a);
        assert_eq!(kept.memory.cite_count, i64::from(id == &b));
    }
    snap.apply_changes(&conn, std::slice::from_ref(&later)).unwrap();
    for id in [&a, &b, &later] {
        let kept = lethe_engine::detail_in(&conn, &snap, id, now(), None).unwrap();
        let own = lethe_engine::detail(&conn, id, now(), None).unwrap();
        assert_eq!(json(&kept), json(&own), "{id}");
    }
    let chart = |s: &forgetting::Snapshot| {
        lethe_engine::projection_chart_in(&conn, s, &b, now(), lethe_engine::chart::Theme::Light, None).unwrap()
    };
    assert_eq!(
        chart(&snap),
        lethe_engine::projection_chart(&conn, &b, now(), lethe_engine::chart::Theme::Light).unwrap()
    );
    assert!(matches!(
        lethe_engine::detail_in(&conn, &snap, "mem_missing", now(), None),
        Err(lethe_engine::Error::NotFound(_))
    ));
}

/// A soft delete scored from a kept snapshot (the window) records the score a delete that
/// loads its own snapshot (CLI, MCP) records, and so does one of a memory written after it.
#[test]
fn a_soft_delete_scored_from_a_kept_snapshot_records_the_same_score() {
    let path = temp_db();
    let mut conn = lethe_testkit::backend::open(&path).unwrap();
    let (a, _) = near_copies_among_others(&mut conn);
    let snap = forgetting::Snapshot::load(&conn).unwrap();
    let later = put(&mut conn, Tier::Working, "scratch: the build cache key is the lockfile hash");
    let settings = lethe_engine::settings::Settings::load(&conn).unwrap();
    let expected: Vec<f64> = [&a, &later]
        .iter()
        .map(|id| forgetting::score_one(&conn, id, &settings, now()).unwrap().forget_score)
        .collect();
    assert!(expected[0] > 0.0, "{expected:?}");
    let kept = lifecycle::soft_delete_in(&mut conn, &snap, &a, None, "user", now()).unwrap();
    assert_eq!(kept.forget_score, Some(expected[0]));
    let fresh = lifecycle::soft_delete_in(&mut conn, &snap, &later, None, "user", now()).unwrap();
    assert_eq!(fresh.forget_score, Some(expected[1]));
    assert!(lifecycle::get(&conn, &a).unwrap().is_deleted);
    assert!(matches!(
        lifecycle::soft_delete_in(&mut conn, &snap, "mem_missing", None, "user", now()),
        Err(lethe_engine::Error::NotFound(_))
    ));
}

/// A load reports how far it has read, ending at the total, and stops when cancelled.
#[test]
fn a_snapshot_load_reports_progress_and_can_be_cancelled() {
    let path = temp_db();
    let mut conn = lethe_testkit::backend::open(&path).unwrap();
    let lines: String = (0..9000)
        .map(|i| format!("{{\"type\":\"episodic\",\"content\":\"deploy {i} of service {} went fine\"}}\n", i % 40))
        .collect();
    lethe_engine::transfer::import(&mut conn, lines.as_bytes(), &lethe_engine::transfer::ImportOptions::new(now()))
        .unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let report =
        |stage: forgetting::LoadStage, done: usize, total: usize| seen.lock().unwrap().push((stage, done, total));
    let job = forgetting::Job { progress: Some(&report), ..Default::default() };
    let snap = forgetting::Snapshot::load_with(&conn, &job).unwrap();
    assert_eq!(snap.rows.len(), 9000);
    let seen = seen.into_inner().unwrap();
    let reading: Vec<(usize, usize)> =
        seen.iter().filter(|s| s.0 == forgetting::LoadStage::Reading).map(|s| (s.1, s.2)).collect();
    assert!(reading.len() >= 3, "a report every few thousand rows: {reading:?}");
    assert!(reading.windows(2).all(|w| w[0].0 <= w[1].0), "progress never goes back: {reading:?}");
    let total = reading[0].1;
    assert!(total >= 9000, "the total is known from the start: {reading:?}");
    assert_eq!(*reading.last().unwrap(), (total, total), "it ends at the total");
    let cancel = std::sync::atomic::AtomicBool::new(true);
    let job = forgetting::Job { cancel: Some(&cancel), ..Default::default() };
    let err = forgetting::Snapshot::load_with(&conn, &job).unwrap_err();
    assert_eq!(err.code(), "cancelled");
}

#[test]
fn many_connections_opening_a_new_file_at_once_all_succeed() {
    // Each open checks that the file is not another program's before migrating it; while one
    // connection's migration commits, the others must not mistake its tables for a foreign
    // program's (that check once ran as separate statements, each its own snapshot). A team
    // server's set-up takes most of a second where a file's takes milliseconds: fewer rounds.
    let rounds = if lethe_testkit::backend::is_postgres() { 20 } else { 150 };
    for round in 0..rounds {
        let path = temp_db();
        let barrier = Arc::new(Barrier::new(12));
        let handles: Vec<_> = (0..12)
            .map(|_| {
                let (path, barrier) = (path.to_path_buf(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    lethe_testkit::backend::open(&path).map(|_| ())
                })
            })
            .collect();
        for h in handles {
            let r = h.join().unwrap();
            assert!(r.is_ok(), "round {round}: {r:?}");
        }
    }
}

#[test]
fn the_scoring_load_names_mistyped_values_as_the_store_check_does() {
    // A PostgreSQL column holds only values of its type: nobody can write these there.
    if lethe_testkit::backend::is_postgres() {
        return;
    }
    let path = temp_db();
    let mut conn = lethe_testkit::backend::open(&path).unwrap();
    let ids: Vec<String> =
        (0..6).map(|i| put(&mut conn, Tier::Semantic, &format!("note {i} about the deploy of {}", i * 11))).collect();
    conn.execute("UPDATE memory_item SET view_count = 1.5, pinned = 'true' WHERE id = ?1", [&ids[1]]).unwrap();
    conn.execute("UPDATE memory_item SET importance = 'high', content = x'00ff' WHERE id = ?1", [&ids[3]]).unwrap();
    conn.execute("UPDATE memory_item SET version = 'two', created_at = x'3137' WHERE id = ?1", [&ids[4]]).unwrap();
    let snap = forgetting::Snapshot::load(&conn).unwrap();
    let from_store = store::mistyped_rows(&conn, 100).unwrap();
    assert_eq!(snap.mistyped, from_store);
    let named: Vec<(&str, &str)> = snap.mistyped.iter().map(|m| (m.id.as_str(), m.column.as_str())).collect();
    assert_eq!(
        named,
        [
            (ids[1].as_str(), "view_count"),
            (ids[1].as_str(), "pinned"),
            (ids[3].as_str(), "importance"),
            (ids[3].as_str(), "content"),
            (ids[4].as_str(), "version"),
            (ids[4].as_str(), "created_at"),
        ]
    );
    assert_eq!(snap.rows.len(), 4, "the rows with an unreadable created_at or a BLOB content are left out of scoring");
}

#[test]
fn a_change_of_content_by_another_program_drops_its_neighbours_and_signature() {
    let path = temp_db();
    let mut conn = lethe_testkit::backend::open(&path).unwrap();
    let base = "Roll back a failed deploy with kubectl rollout undo, then check the health endpoint";
    let a = put(&mut conn, Tier::Semantic, base);
    let b = put(&mut conn, Tier::Semantic, &format!("{base} twice"));
    for i in 0..20 {
        put(&mut conn, Tier::Episodic, &format!("unrelated note {i} about sprint {}", i * 5));
    }
    lethe_engine::neighbours::refresh(&mut conn).unwrap();
    let pair = |snap: &forgetting::Snapshot| {
        snap.pairs().iter().any(|&(x, y, _, _)| {
            let ids = [&snap.rows[x as usize].id, &snap.rows[y as usize].id];
            ids.contains(&&a) && ids.contains(&&b)
        })
    };
    assert!(pair(&forgetting::Snapshot::load(&conn).unwrap()), "the near-copies pair up");
    let rows_of = |conn: &store::Connection, table: &str, key: &str, v: &dyn lethe_engine::storage::db::ToSql| -> i64 {
        conn.query_row(&format!("SELECT COUNT(*) FROM {table} WHERE {key} = ?1"), [v], |r| r.get(0)).unwrap()
    };
    let b_rowid: i64 = conn.query_row("SELECT rowid FROM memory_item WHERE id = ?1", [&b], |r| r.get(0)).unwrap();
    assert_eq!(rows_of(&conn, "lethe_neighbour", "memory_rowid", &b_rowid), 1);
    // memento (or sqlite3) rewrites the content without knowing Lethe's tables.
    conn.execute(
        "UPDATE memory_item SET content = 'Docker volumes need the uid of the container user' WHERE id = ?1",
        [&b],
    )
    .unwrap();
    assert_eq!(rows_of(&conn, "lethe_neighbour", "memory_rowid", &b_rowid), 0, "its list is dropped");
    assert_eq!(rows_of(&conn, "lethe_signature", "memory_id", &b), 0, "its signature is dropped");
    // The next load searches it again for what it says now: no longer a copy of the rule.
    let snap = forgetting::Snapshot::load(&conn).unwrap();
    assert!(!pair(&snap), "the stale pair is gone");
    snap.persist(&mut conn).unwrap();
    assert_eq!(rows_of(&conn, "lethe_signature", "memory_id", &b), 1, "a new signature is stored");
    assert!(!pair(&forgetting::Snapshot::load(&conn).unwrap()), "and stays gone on the stored lists");
}

/// Every decision of the batch lands with its row change, its review-table entry or exit and
/// one event with its fields, on either backend (a team server writes a chunk's decisions in
/// one statement, a file one by one): forget and working gate (soft, 30-day TTL, actor
/// `policy`), entering the band (review), a memory in the band that is then forgotten (its
/// band entry goes), and one that leaves the band (pinned meanwhile: no event).
#[test]
fn the_batch_records_every_decision_with_its_fields() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let old = |days: f64, tier: Tier, text: &str| NewMemory {
        importance: Some(0.0),
        created_at: Some(time::add_days(now(), -days)),
        ..NewMemory::new(tier, text)
    };
    let mut ids = Vec::new();
    for m in [
        old(70.0, Tier::Episodic, "the band: a retro about the search latency spike"),
        old(400.0, Tier::Episodic, "forgotten: the office moved to the fourth floor"),
        old(20.0, Tier::Working, "gated: scratch note about a flaky test in checkout"),
        old(70.0, Tier::Episodic, "the band, then pinned: the oncall rotation changed in March"),
    ] {
        ids.push(lifecycle::remember(&mut conn, &m, "user", now()).unwrap().id().unwrap().to_string());
    }
    let (band, forgot, gated, pinned) = (&ids[0], &ids[1], &ids[2], &ids[3]);
    // Unused, importance 0, episodic: 0.25 + 0.35(1 − R), at most 0.6 whatever the age, so the
    // threshold comes down to let the oldest be forgotten (the band is [0.5, threshold)).
    let s = lethe_engine::Settings { threshold: 0.55, ..lethe_engine::Settings::load(&conn).unwrap() };
    lethe_engine::Settings::store(&mut conn, &s, "user", now()).unwrap();
    type Event = (String, Option<String>, Option<String>, Option<f64>, Option<i64>, String, Option<String>);
    let events = |conn: &store::Connection, id: &str| -> Vec<Event> {
        conn.prepare(
            "SELECT action, reason, policy, forget_score, ttl_days, created_at, metadata_json \
             FROM memory_forgetting_event WHERE memory_id = ?1 ORDER BY rowid",
        )
        .unwrap()
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    };
    let in_band = |conn: &store::Connection, id: &str| -> Option<String> {
        conn.prepare("SELECT entered_at FROM lethe_review WHERE memory_id = ?1")
            .unwrap()
            .query_map([id], |r| r.get(0))
            .unwrap()
            .next()
            .map(|r| r.unwrap())
    };
    let deleted_at = |conn: &store::Connection, id: &str| -> Option<String> {
        conn.query_row("SELECT deleted_at FROM memory_item WHERE id = ?1 AND is_deleted = 1", [id], |r| r.get(0)).ok()
    };

    let r = forgetting::run_batch(&mut conn, &BatchOptions::new(now(), false)).unwrap();
    let at = time::format(now());
    assert_eq!(r.soft_deleted, vec![forgot.clone()], "{r:?}");
    assert_eq!(r.working_gate, vec![gated.clone()], "{r:?}");
    let mut review = r.review.clone();
    review.sort();
    let mut expected = vec![band.clone(), pinned.clone()];
    expected.sort();
    assert_eq!(review, expected, "{r:?}");
    for (id, policy) in [(forgot, "forget-score"), (gated, "working-gate")] {
        let ev = events(&conn, id);
        assert_eq!(ev.len(), 1, "one event for {id}: {ev:?}");
        let (action, reason, pol, score, ttl, created, meta) = &ev[0];
        assert_eq!((action.as_str(), pol.as_deref(), *ttl, created), ("soft", Some(policy), Some(30), &at));
        assert!(reason.as_deref().is_some_and(|r| !r.is_empty()), "{ev:?}");
        assert!(score.is_some_and(|s| (0.0..=1.0).contains(&s)), "{ev:?}");
        let meta: serde_json::Value = serde_json::from_str(meta.as_deref().unwrap()).unwrap();
        assert_eq!(meta["actor"], "policy");
        assert_eq!(deleted_at(&conn, id).as_deref(), Some(at.as_str()), "{id} in quarantine since the batch");
    }
    for id in [band, pinned] {
        let ev = events(&conn, id);
        assert_eq!(ev.len(), 1, "{ev:?}");
        let (action, reason, pol, score, ttl, created, meta) = &ev[0];
        assert_eq!(
            (action.as_str(), reason.as_deref(), pol.as_deref(), *ttl, created, meta),
            ("review", Some("entered the review band"), Some("review-band"), None, &at, &None)
        );
        assert!(score.is_some_and(|s| (0.5..0.55).contains(&s)), "{ev:?}");
        assert_eq!(in_band(&conn, id).as_deref(), Some(at.as_str()));
        assert_eq!(deleted_at(&conn, id), None);
    }

    // A person pins one; a lower threshold forgets the other, which leaves the band with it.
    lifecycle::pin(&mut conn, pinned, "user", now()).unwrap();
    let s = lethe_engine::Settings { threshold: 0.52, ..lethe_engine::Settings::load(&conn).unwrap() };
    lethe_engine::Settings::store(&mut conn, &s, "user", now()).unwrap();
    let later = time::add_days(now(), 1.0);
    let r = forgetting::run_batch(&mut conn, &BatchOptions::new(later, false)).unwrap();
    assert_eq!(r.soft_deleted, vec![band.clone()], "{r:?}");
    let ev = events(&conn, band);
    assert_eq!(ev.iter().map(|e| e.0.as_str()).collect::<Vec<_>>(), vec!["review", "soft"], "{ev:?}");
    assert_eq!(in_band(&conn, band), None, "a forgotten memory leaves the band");
    assert_eq!(in_band(&conn, pinned), None, "a pinned memory leaves the band");
    assert_eq!(events(&conn, pinned).len(), 1, "leaving the band writes no event");
    let total = count(&conn, "SELECT COUNT(*) FROM memory_forgetting_event");
    forgetting::run_batch(&mut conn, &BatchOptions::new(later, false)).unwrap();
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM memory_forgetting_event"), total, "a rerun writes nothing");
}

/// A large import is checked on every core, and each chunk's signatures and vectors are made
/// while the chunk before it is written: bad lines are still named in line order, the counts
/// add up over the cores, every row gets its signature (and vector, with the model), and
/// importing the lines with ids again prepares nothing and writes nothing.
#[test]
fn a_large_import_checks_on_every_core_and_keeps_line_order() {
    use lethe_engine::transfer::{self, ImportOptions};
    let path = temp_db();
    let mut conn = lethe_testkit::backend::open(&path).unwrap();
    // More than one batch of checks and many chunks (fewer on a server, where rows are slow).
    let n = if lethe_testkit::backend::is_postgres() { 3_011 } else { 20_011 };
    let line = |i: usize| {
        match i % 500 {
        // A secret every 500 lines, a filler phrase every 500, a given id every other line.
        7 => format!("{{\"type\":\"episodic\",\"content\":\"run {i}: token ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5\"}}"),
        9 => "{\"type\":\"episodic\",\"content\":\"ok\"}".to_string(),
        _ if i.is_multiple_of(2) => format!(
            "{{\"id\":\"mem_bulk-{i}\",\"type\":\"semantic\",\"content\":\"service {} limit is {} requests per minute\"}}",
            i % 97,
            i
        ),
        _ => format!("{{\"type\":\"episodic\",\"content\":\"deploy {i} of service {} went fine\"}}", i % 40),
    }
    };
    let mut lines: Vec<String> = (0..n).map(line).collect();
    // Two bad lines far apart: both named, in order, nothing written.
    let good = lines.clone();
    let late = n - 1_010;
    lines[5] = "{\"type\":\"episodic\"}".into();
    lines[late] = "{\"content\":\"no type\"}".into();
    let text = lines.join("\n");
    let err = transfer::import(&mut conn, text.as_bytes(), &ImportOptions::new(now())).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("2 bad lines"), "{msg}");
    let (a, b) = (msg.find("line 6: ").expect(&msg), msg.find(&format!("line {}: ", late + 1)).expect(&msg));
    assert!(a < b, "named in line order: {msg}");
    let rows = |conn: &lethe_engine::storage::db::Connection, sql: &str| -> i64 {
        conn.query_row(sql, [], |r| r.get(0)).unwrap()
    };
    assert_eq!(rows(&conn, "SELECT COUNT(*) FROM memory_item"), 0, "nothing written");

    let text = good.join("\n");
    let report = transfer::import(&mut conn, text.as_bytes(), &ImportOptions::new(now())).unwrap();
    let secrets = (0..n).filter(|i| i % 500 == 7).count();
    let fillers: Vec<usize> = (0..n).filter(|i| i % 500 == 9).map(|i| i + 1).collect();
    let given_ids = (0..n).filter(|i| i.is_multiple_of(2) && !matches!(i % 500, 7 | 9)).count();
    assert_eq!(report.read, n);
    assert_eq!(report.imported, n - fillers.len());
    assert_eq!(report.trivial_lines, fillers, "filler lines listed in order");
    assert_eq!(report.generated_ids, n - fillers.len() - given_ids);
    assert_eq!((report.redacted_spans, report.redacted_memories), (secrets, secrets));
    assert_eq!(report.chunks, report.imported.div_ceil(transfer::CHUNK));
    let stored = rows(&conn, "SELECT COUNT(*) FROM memory_item") as usize;
    assert_eq!(stored, report.imported);
    assert_eq!(rows(&conn, "SELECT COUNT(*) FROM lethe_signature") as usize, stored, "a signature per row");
    if lethe_engine::embed::shared().is_some() {
        assert_eq!(rows(&conn, "SELECT COUNT(*) FROM lethe_vector") as usize, stored, "a vector per row");
    }
    assert_eq!(rows(&conn, "SELECT COUNT(*) FROM memory_item WHERE content LIKE '%ghp_%'"), 0, "secrets redacted");
    let kept: String =
        conn.query_row("SELECT content FROM memory_item WHERE id = 'mem_bulk-3000'", [], |r| r.get(0)).unwrap();
    assert_eq!(kept, "service 90 limit is 3000 requests per minute");

    // Again, the lines that name their id (a line without one is a new memory each time).
    let with_ids: Vec<&str> = good.iter().map(String::as_str).filter(|l| l.starts_with("{\"id\"")).collect();
    assert_eq!(with_ids.len(), given_ids);
    let again = transfer::import(&mut conn, with_ids.join("\n").as_bytes(), &ImportOptions::new(now())).unwrap();
    assert_eq!((again.imported, again.skipped_existing, again.chunks), (0, given_ids, 0), "{again:?}");
    assert_eq!(rows(&conn, "SELECT COUNT(*) FROM memory_item") as usize, stored, "nothing written twice");
    if let Some(c) = conn.sqlite() {
        let pages: i64 = c.query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0)).unwrap();
        assert_eq!(pages, 1000, "the connection's checkpoint setting is given back");
    }
}

/// The snapshot keeps the last scores for one instant and one set of settings (the pages of a
/// list and the Overview's parts share them); another instant, other settings or a patch for
/// a change score again, and always equal a snapshot loaded afresh.
#[test]
fn kept_scores_are_those_of_the_same_instant_settings_and_data() {
    let path = temp_db();
    let mut conn = lethe_testkit::backend::open(&path).unwrap();
    let ids: Vec<String> = (0..40)
        .map(|i| {
            let mut m =
                NewMemory::new(Tier::Episodic, format!("deploy of billing v2.{} failed: missing env var {i}", i % 7));
            m.created_at = Some(time::add_days(now(), -3.0 * f64::from(i)));
            match lifecycle::remember(&mut conn, &m, "user", now()).unwrap() {
                RememberOutcome::Stored { id, .. } => id,
                other => panic!("not stored: {other:?}"),
            }
        })
        .collect();
    let s = lethe_engine::Settings::default();
    let fresh = |conn: &store::Connection, s: &lethe_engine::Settings, at: time::Instant| {
        let snap = forgetting::Snapshot::load(conn).unwrap();
        let by_id: std::collections::HashMap<String, f64> =
            snap.rows.iter().map(|r| r.id.clone()).zip(snap.scores(s, at)).collect();
        by_id
    };
    let mut snap = forgetting::Snapshot::load(&conn).unwrap();
    let scores_of = |snap: &forgetting::Snapshot, s: &lethe_engine::Settings, at: time::Instant| {
        snap.rows.iter().map(|r| r.id.clone()).zip(snap.scores(s, at)).collect::<std::collections::HashMap<_, _>>()
    };
    let first = scores_of(&snap, &s, now());
    assert_eq!(scores_of(&snap, &s, now()), first, "the same instant and settings");
    let later = time::add_days(now(), 40.0);
    assert_eq!(scores_of(&snap, &s, later), fresh(&conn, &s, later), "another instant");
    assert_ne!(scores_of(&snap, &s, later), first);
    let mut heavier = s.clone();
    heavier.weights.recency = 0.9;
    assert_eq!(scores_of(&snap, &heavier, now()), fresh(&conn, &heavier, now()), "other settings");
    assert_ne!(scores_of(&snap, &heavier, now()), first);
    assert_eq!(scores_of(&snap, &s, now()), first, "back to the first");
    lifecycle::set_importance(&mut conn, &ids[3], 1.0, "user", now()).unwrap();
    lifecycle::pin(&mut conn, &ids[5], "user", now()).unwrap();
    snap.apply_changes(&conn, &[ids[3].clone(), ids[5].clone()]).unwrap();
    let patched = scores_of(&snap, &s, now());
    assert_eq!(patched, fresh(&conn, &s, now()), "a patch scores again");
    assert_ne!(patched[&ids[3]], first[&ids[3]]);
}

#[test]
fn a_period_the_query_names_ranks_that_time_first_on_every_backend() {
    use lethe_engine::recall::{self, RecallQuery};
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let dated = |conn: &mut store::Connection, at: &str, content: &str| {
        let mut m = NewMemory::new(Tier::Episodic, content);
        m.created_at = Some(time::parse(at).unwrap());
        lifecycle::remember(conn, &m, "user", now()).unwrap().id().unwrap().to_string()
    };
    let march = dated(&mut conn, "2026-03-12T10:00:00.000Z", "rotated the vault tokens for the billing service");
    let may = dated(&mut conn, "2026-05-30T10:00:00.000Z", "rotated the vault tokens for the billing service again");
    let ask = |text: &str| {
        let q = RecallQuery { text: text.into(), limit: 2, ..Default::default() };
        let hits = recall::recall(&conn, &q, now()).unwrap();
        let explained = recall::explain(&conn, &q, now(), recall::DECLINED).unwrap();
        assert_eq!(
            hits.iter().map(|h| (&h.id, h.score)).collect::<Vec<_>>(),
            explained.results.iter().map(|r| (&r.hit.id, r.hit.score)).collect::<Vec<_>>()
        );
        (hits, explained.periods)
    };
    let (hits, periods) = ask("vault tokens rotated");
    assert_eq!(hits[0].id, may, "the newest first without a period");
    assert!(periods.is_empty());
    let (hits, periods) = ask("when did we rotate the vault tokens in March 2026");
    assert_eq!(hits[0].id, march);
    assert_eq!((hits[0].breakdown.scene, hits[0].breakdown.recency), (1.0, 1.0));
    assert_eq!(periods.len(), 1);
    assert_eq!(periods[0].said, "March 2026");
}

#[test]
fn a_recall_answer_carries_what_recall_read_of_the_query_for_every_interface() {
    use lethe_engine::recall::{self, RecallQuery};
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let id = put(&mut conn, Tier::Episodic, "rotated the vault tokens for the billing service");
    let ask =
        |text: String| recall::answer(&conn, &RecallQuery { text, limit: 5, ..Default::default() }, now()).unwrap();

    let plain = ask("vault tokens".into());
    assert_eq!(plain.results.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), [id.as_str()]);
    assert_eq!(plain.searched_words, ["vault", "tokens"]);
    assert!(plain.recall_mode.contains("lexical"), "{}", plain.recall_mode);
    let json = serde_json::to_value(&plain).unwrap();
    for absent in ["periods", "dropped_words", "notice"] {
        assert!(json.get(absent).is_none(), "{absent} is left out when there is nothing to say: {json}");
    }

    // A period named, and more words than recall searches: both said, with a sentence.
    let many: Vec<String> = (0..70).map(|i| format!("w{i}")).collect();
    let long = ask(format!("vault tokens in March 2026 {}", many.join(" ")));
    assert_eq!(long.periods.as_ref().unwrap()[0].said, "March 2026");
    let dropped = long.unsearched.dropped_words.unwrap();
    assert_eq!(dropped.last().map(String::as_str), Some("w69"));
    assert_eq!(long.searched_words.len(), recall::MAX_QUERY_WORDS);
    assert!(long.unsearched.notice.unwrap().contains(&format!("the last {} were not searched", dropped.len())));
}

/// A person's pin is a person's decision: an agent may not unpin it, quarantine it, delete it
/// for ever, lower its importance or supersede it; each attempt is `forbidden` (exit 6), changes
/// nothing and leaves one `refused` audit row naming what it attempted. An agent's own pin, a
/// person, and raising the importance pass; an agent may not write a pinned memory at all.
#[test]
fn agents_leave_a_persons_pin_alone_and_each_attempt_is_audited() {
    use lethe_engine::{duplicates, pins};
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let rule = put(&mut conn, Tier::Semantic, "Customer data never leaves the EU region");
    lifecycle::pin(&mut conn, &rule, "user", now()).unwrap();
    lifecycle::set_importance(&mut conn, &rule, 0.8, "user", now()).unwrap();
    let other = put(&mut conn, Tier::Semantic, "Deploys to staging run every night at 02:00 UTC");
    assert_eq!(pins::pinned_by_person(&conn, &rule).unwrap(), Some(true));
    let before = lifecycle::get(&conn, &rule).unwrap();
    let agent = "agent:cursor";
    type Attempt<'a> = Box<dyn Fn(&mut store::Connection) -> lethe_engine::Result<()> + 'a>;
    let attempts: Vec<(&str, Attempt)> = vec![
        ("unpin", Box::new(|c| lifecycle::unpin(c, &rule, agent, now()).map(|_| ()))),
        ("quarantine", Box::new(|c| lifecycle::soft_delete(c, &rule, Some("stale"), agent, now()).map(|_| ()))),
        ("delete for ever", Box::new(|c| lifecycle::hard_delete(c, &rule, true, None, agent, now()).map(|_| ()))),
        ("lower the importance of", Box::new(|c| lifecycle::set_importance(c, &rule, 0.1, agent, now()).map(|_| ()))),
        (
            "supersede",
            Box::new(|c| {
                let mut m = NewMemory::new(Tier::Semantic, "Customer data may be stored in any region");
                m.supersedes = vec![rule.clone()];
                lifecycle::remember(c, &m, agent, now()).map(|_| ())
            }),
        ),
        ("supersede", Box::new(|c| duplicates::supersede(c, &rule, &other, agent, now()).map(|_| ()))),
    ];
    for (i, (attempted, attempt)) in attempts.iter().enumerate() {
        let e = attempt(&mut conn).unwrap_err();
        assert_eq!((e.code(), e.exit_code()), ("forbidden", 6), "{attempted}: {e}");
        assert!(e.to_string().contains("Customer data never leaves"), "the message names the content: {e}");
        assert_eq!(lifecycle::get(&conn, &rule).unwrap(), before, "{attempted} changed nothing");
        let refused = pins::refused_attempts(&conn, 0, 100).unwrap();
        assert_eq!(refused.len(), i + 1, "one audit row per attempt ({attempted})");
        assert_eq!((refused[0].attempted.as_str(), refused[0].actor.as_str()), (*attempted, agent));
        assert_eq!(refused[0].memory_id.as_deref(), Some(rule.as_str()));
    }
    let seen = pins::refused_attempts(&conn, 0, 100).unwrap()[0].id;
    assert!(pins::refused_attempts(&conn, seen, 100).unwrap().is_empty(), "asked after the newest, none is new");
    assert_eq!(
        count(&conn, &format!("SELECT COUNT(*) FROM lethe_supersede WHERE old_id = '{rule}'")),
        0,
        "no supersede link was written"
    );

    // What stays allowed: raising the importance, the person, an agent's own pin.
    lifecycle::set_importance(&mut conn, &rule, 0.9, agent, now()).unwrap();
    lifecycle::pin(&mut conn, &other, agent, now()).unwrap();
    assert_eq!(pins::pinned_by_person(&conn, &other).unwrap(), Some(false), "the agent pinned it");
    lifecycle::unpin(&mut conn, &other, agent, now()).unwrap();
    lifecycle::unpin(&mut conn, &rule, "user", now()).unwrap();
    lifecycle::soft_delete(&mut conn, &rule, None, agent, now()).unwrap();
    assert_eq!(pins::refused_attempts(&conn, 0, 100).unwrap().len(), 6, "nothing allowed was recorded as refused");

    // An agent may not write a pinned memory; nothing is written.
    let writes = writes_so_far(&conn);
    let mut m = NewMemory::new(Tier::Semantic, "Agents pin their own notes");
    m.pinned = true;
    let e = lifecycle::remember(&mut conn, &m, agent, now()).unwrap_err();
    assert_eq!(e.code(), "forbidden", "{e}");
    assert_eq!(writes_so_far(&conn), writes, "a refused pinned remember writes nothing");
    assert!(lifecycle::remember(&mut conn, &m, "user", now()).unwrap().id().is_some(), "the person may");
}

/// A procedure's text follows its current version: an update of its steps (or goal) alone
/// rewrites the text as `goal: step; step`, so recall and lists say what the procedure now
/// says, and recall carries the steps; a text a person wrote by hand stays theirs.
#[test]
fn a_procedures_text_follows_its_steps_unless_a_person_wrote_it() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let proc = |content: &str| {
        let mut m = NewMemory::new(Tier::Procedural, content);
        m.procedure = ProcedureFields {
            task_goal: Some("Fix Docker volume permission errors".into()),
            steps: Some(serde_json::json!(["Find the container user's uid", "chown the volume to that uid"])),
            ..Default::default()
        };
        m
    };
    let steps3 =
        serde_json::json!(["Find the container user's uid", "chown the volume to that uid", "Restart the container"]);
    let add_step =
        ProcedurePatch { content: None, fields: ProcedureFields { steps: Some(steps3.clone()), ..Default::default() } };
    // An agent's procedure: the text follows the steps, whoever edits them.
    let m = proc("Docker volumes: find the uid, chown it");
    let id = lifecycle::remember(&mut conn, &m, "agent:claude-code", now()).unwrap().id().unwrap().to_string();
    let after = procedural::update(&mut conn, &id, 1, &add_step, "user", now()).unwrap();
    let expected =
        "Fix Docker volume permission errors: Find the container user's uid; chown the volume to that uid; Restart the container";
    assert_eq!(after.content, expected);
    let hits = lethe_engine::recall::recall(
        &conn,
        &lethe_engine::recall::RecallQuery { text: "restart the container".into(), limit: 1, ..Default::default() },
        now(),
    )
    .unwrap();
    assert_eq!((hits[0].id.as_str(), hits[0].content.as_str()), (id.as_str(), expected), "recall finds the new step");
    assert_eq!(hits[0].steps, Some(steps3.clone()), "and carries the steps");
    let history = procedural::history(&conn, &id).unwrap();
    assert_eq!(history[0].content, "Docker volumes: find the uid, chown it", "the old text stays in version 1");

    // A person's own words stay when only the steps change.
    let m = proc("When a mounted volume says EACCES: match the uid (ask Ana if unsure)");
    let mine = lethe_engine::lifecycle::remember(&mut conn, &m, "user", now()).unwrap().id().unwrap().to_string();
    let after = procedural::update(&mut conn, &mine, 1, &add_step, "agent:cursor", now()).unwrap();
    assert_eq!(after.content, "When a mounted volume says EACCES: match the uid (ask Ana if unsure)");
    assert_eq!(after.steps, Some(steps3));
}

/// A forget run can be undone as one: the run has an id, `undo` restores everything it
/// quarantined in one audited action and names what it could not restore (restored by hand
/// since, quarantined again, deleted for ever); a second undo writes nothing.
#[test]
fn a_forget_run_is_undone_as_one_audited_action() {
    use lethe_engine::runs;
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let old = time::add_days(now(), -700.0);
    let mut ids = Vec::new();
    for i in 0..6 {
        let mut m =
            NewMemory::new(Tier::Episodic, format!("Build {i} of the billing service failed on step {}", i * 7));
        m.importance = Some(0.0);
        m.created_at = Some(old);
        ids.push(lifecycle::remember(&mut conn, &m, "agent:ci", old).unwrap().id().unwrap().to_string());
    }
    let keep = put(&mut conn, Tier::Semantic, "The billing service runs on three nodes");
    // Unused memories of importance 0 tend to 0.6 as they age: a threshold of 0.55 forgets them.
    let s = lethe_engine::Settings { threshold: 0.55, ..lethe_engine::Settings::load(&conn).unwrap() };
    lethe_engine::Settings::store(&mut conn, &s, "user", now()).unwrap();
    let report = forgetting::run_batch(&mut conn, &BatchOptions::new(now(), false)).unwrap();
    let run = report.run_id.clone().unwrap_or_else(|| panic!("a run that quarantined memories has an id: {report:?}"));
    assert_eq!(report.soft_deleted.len(), 6, "{report:?}");
    assert!(!report.soft_deleted.contains(&keep));
    let listed = runs::list(&conn, 10).unwrap();
    assert_eq!((listed[0].run_id.as_str(), listed[0].quarantined, listed[0].undone), (run.as_str(), 6, false));

    // Since the run: one restored by hand, one deleted for ever, one quarantined again by a person.
    lifecycle::restore(&mut conn, &ids[0], "user", now()).unwrap();
    lifecycle::hard_delete(&mut conn, &ids[1], true, None, "user", now()).unwrap();
    lifecycle::restore(&mut conn, &ids[2], "user", now()).unwrap();
    lifecycle::soft_delete(&mut conn, &ids[2], Some("wrong"), "user", time::add_days(now(), 0.001)).unwrap();

    let before = count(&conn, "SELECT COUNT(*) FROM lethe_action WHERE action = 'undo_forget_run'");
    let undo = runs::undo(&mut conn, &run, "user", time::add_days(now(), 0.01)).unwrap();
    let names = |v: &[runs::UndoItem]| v.iter().map(|i| i.id.clone()).collect::<Vec<_>>();
    assert_eq!(names(&undo.restored), ids[3..].to_vec());
    assert_eq!(names(&undo.already_restored), vec![ids[0].clone()]);
    assert_eq!(names(&undo.deleted_for_ever), vec![ids[1].clone()]);
    assert_eq!(names(&undo.quarantined_again), vec![ids[2].clone()]);
    assert!(undo.restored[0].preview.as_deref().unwrap().starts_with("Build 3 of the billing"), "named by text");
    assert!(undo.restored[0].reason.as_deref().unwrap().contains("old"), "with the run's reason");
    assert_eq!(undo.deleted_for_ever[0].preview, None);
    for id in &ids[3..] {
        assert!(!lifecycle::get(&conn, id).unwrap().is_deleted, "{id} is back");
    }
    assert!(lifecycle::get(&conn, &ids[2]).unwrap().is_deleted, "the person's later quarantine stands");
    assert_eq!(
        count(&conn, "SELECT COUNT(*) FROM lethe_action WHERE action = 'undo_forget_run'"),
        before + 1,
        "one audit action for the whole run"
    );
    assert!(runs::list(&conn, 10).unwrap()[0].undone);

    let writes = writes_so_far(&conn);
    let again = runs::undo(&mut conn, &run, "user", now()).unwrap();
    assert!(again.restored.is_empty() && again.already_restored.len() == 4, "{again:?}");
    assert_eq!(writes_so_far(&conn), writes, "a second undo writes nothing");
    assert_eq!(runs::undo(&mut conn, "run_x", "user", now()).unwrap_err().code(), "invalid_input");
    let unknown = format!("run_{}", "0".repeat(32));
    assert_eq!(runs::undo(&mut conn, &unknown, "user", now()).unwrap_err().code(), "not_found");
}

/// Who wrote what: each listed memory names the actor of its first write and when it was last
/// used, and the list filters by that writer.
#[test]
fn lists_name_who_wrote_each_memory_and_filter_by_the_writer() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let by = |conn: &mut store::Connection, actor: &str, text: &str| {
        lifecycle::remember(conn, &NewMemory::new(Tier::Semantic, text), actor, now())
            .unwrap()
            .id()
            .unwrap()
            .to_string()
    };
    let a = by(&mut conn, "agent:claude-code", "The CI cache lives in the build-cache bucket");
    let b = by(&mut conn, "agent:cursor", "Lint with ruff before every commit");
    let c = by(&mut conn, "user", "Ana owns the billing service");
    // An edit by another actor does not change who wrote it first.
    lifecycle::edit(&mut conn, &a, "The CI cache lives in the build-cache-2 bucket", "agent:cursor", now()).unwrap();
    lifecycle::cite(&mut conn, &b, "agent:claude-code", time::add_days(now(), 1.0)).unwrap();
    let snap = forgetting::Snapshot::load(&conn).unwrap();
    let s = lethe_engine::Settings::load(&conn).unwrap();
    let page = |by: Option<&str>| {
        let q = lifecycle::ListQuery { written_by: by.map(str::to_string), limit: 10, ..Default::default() };
        forgetting::list(&conn, &snap, &q, &s, time::add_days(now(), 2.0)).unwrap()
    };
    let all = page(None);
    let writer = |id: &str| all.items.iter().find(|r| r.id == id).unwrap().written_by.clone();
    assert_eq!(writer(&a).as_deref(), Some("agent:claude-code"));
    assert_eq!(writer(&b).as_deref(), Some("agent:cursor"));
    assert_eq!(writer(&c).as_deref(), Some("user"));
    let used = all.items.iter().find(|r| r.id == b).unwrap().last_used.clone();
    assert_eq!(used.as_deref(), Some(time::format(time::add_days(now(), 1.0)).as_str()), "the cite is its last use");
    let mine = page(Some("agent:claude-code"));
    assert_eq!((mine.total, mine.items[0].id.as_str()), (1, a.as_str()), "only that agent's memories");
    assert_eq!(page(Some("agent:nobody")).total, 0);
}

/// Memories sorted by who wrote them and by their last use, and filtered by source, in the
/// engine's paging (the window never loads every row to sort them).
#[test]
fn lists_sort_by_writer_and_last_use_and_filter_by_source() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let by = |conn: &mut store::Connection, actor: &str, source: &str, text: &str| {
        let mut m = NewMemory::new(Tier::Semantic, text);
        m.source = Some(source.to_string());
        lifecycle::remember(conn, &m, actor, now()).unwrap().id().unwrap().to_string()
    };
    let c = by(&mut conn, "user", "window", "Ana owns the billing service");
    let a = by(&mut conn, "agent:claude-code", "claude-code", "The CI cache lives in the build-cache bucket");
    let b = by(&mut conn, "agent:cursor", "cursor", "Lint with ruff before every commit");
    let d = by(&mut conn, "agent:claude-code", "claude-code", "Staging deploys need the vpn profile called blue");
    lifecycle::cite(&mut conn, &b, "agent:claude-code", time::add_days(now(), 1.0)).unwrap();
    lifecycle::cite(&mut conn, &c, "agent:claude-code", time::add_days(now(), 0.5)).unwrap();
    let snap = forgetting::Snapshot::load(&conn).unwrap();
    let s = lethe_engine::Settings::load(&conn).unwrap();
    let ids = |q: lifecycle::ListQuery| -> Vec<String> {
        let q = lifecycle::ListQuery { limit: 10, ..q };
        forgetting::list(&conn, &snap, &q, &s, time::add_days(now(), 2.0))
            .unwrap()
            .items
            .into_iter()
            .map(|r| r.id)
            .collect()
    };
    let sort = |name: &str| lifecycle::ListQuery { sort: name.parse().unwrap(), ..Default::default() };
    // Writers A to Z (agent:claude-code, agent:cursor, user); the newest first within one.
    assert_eq!(ids(sort("written_by")), [d.clone(), a.clone(), b.clone(), c.clone()]);
    // The latest use first (b cited a day later, c half a day); never used last, newest first.
    assert_eq!(ids(sort("last_used")), [b.clone(), c.clone(), d.clone(), a.clone()]);
    let from = |src: &str| lifecycle::ListQuery {
        source: Some(src.into()),
        sort: "created".parse().unwrap(),
        ..Default::default()
    };
    assert_eq!(ids(from("claude-code")), [d.clone(), a.clone()], "only that source, in the asked order");
    assert!(ids(from("nowhere")).is_empty());
    // A page inside a sort is the same slice as after a full sort.
    let q = lifecycle::ListQuery { sort: "written_by".parse().unwrap(), offset: 1, limit: 2, ..Default::default() };
    let page = forgetting::list(&conn, &snap, &q, &s, now()).unwrap();
    assert_eq!((page.total, page.items.iter().map(|r| r.id.clone()).collect::<Vec<_>>()), (4, vec![a, b]));
    assert_eq!("writer".parse::<forgetting::SortBy>().unwrap_err().code(), "invalid_input");
}

/// A planned run reviewed item by item: the run quarantines only the approved memories, the
/// kept ones stay active, and the statistics' "next run" number is what the dry run lists.
#[test]
fn a_reviewed_forget_run_quarantines_only_the_approved_memories() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let old = time::add_days(now(), -700.0);
    let mut ids = Vec::new();
    for i in 0..5 {
        let mut m =
            NewMemory::new(Tier::Episodic, format!("Nightly export {i} of the invoices stopped at row {}", i * 13));
        m.importance = Some(0.0);
        m.created_at = Some(old);
        ids.push(lifecycle::remember(&mut conn, &m, "agent:ci", old).unwrap().id().unwrap().to_string());
    }
    let fresh = put(&mut conn, Tier::Semantic, "Invoices are exported every night at two");
    let s = lethe_engine::Settings { threshold: 0.55, ..lethe_engine::Settings::load(&conn).unwrap() };
    lethe_engine::Settings::store(&mut conn, &s, "user", now()).unwrap();

    let snap = forgetting::Snapshot::load(&conn).unwrap();
    let stats = forgetting::stats(&conn, &snap, &s, now()).unwrap();
    let plan = forgetting::run_batch(&mut conn, &BatchOptions::new(now(), true)).unwrap();
    assert_eq!(plan.soft_deleted.len() + plan.working_gate.len(), 5, "{plan:?}");
    assert_eq!(stats.next_run, 5, "the one number is what the dry run lists");

    // The person keeps two; a memory that was not in the reviewed list is never quarantined
    // by the reviewed run even when approved by mistake (`fresh` is below the threshold).
    let approved: std::collections::HashSet<String> = ids[2..].iter().cloned().chain([fresh.clone()]).collect();
    let mut opts = BatchOptions::new(now(), false);
    opts.only = Some(&approved);
    let run = forgetting::run_batch(&mut conn, &opts).unwrap();
    let mut got = run.soft_deleted.clone();
    got.sort();
    let mut want = ids[2..].to_vec();
    want.sort();
    assert_eq!(got, want, "only the approved ones ran");
    assert!(run.run_id.is_some(), "the reviewed run is a run like any other (undoable, audited)");
    for id in &ids[..2] {
        assert!(!lifecycle::get(&conn, id).unwrap().is_deleted, "kept {id} stays active");
    }
    for id in &ids[2..] {
        assert!(lifecycle::get(&conn, id).unwrap().is_deleted, "approved {id} is quarantined");
    }
    assert!(!lifecycle::get(&conn, &fresh).unwrap().is_deleted);
    let snap = forgetting::Snapshot::load(&conn).unwrap();
    assert_eq!(forgetting::stats(&conn, &snap, &s, now()).unwrap().next_run, 2, "the kept two are still due");
}

/// Health's "and N more" leads to the whole list in the Memories paging: only the list's
/// members, the other filters applying within it; an unknown list is invalid input.
#[test]
fn a_health_list_pages_like_memories() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let old = time::add_days(now(), -90.0);
    let mut never = Vec::new();
    for i in 0..3 {
        let mut m = NewMemory::new(Tier::Semantic, format!("Runbook {i}: restart the queue worker number {}", i * 5));
        m.created_at = Some(old);
        never.push(lifecycle::remember(&mut conn, &m, "user", old).unwrap().id().unwrap().to_string());
    }
    let recent = put(&mut conn, Tier::Semantic, "The queue worker restarts itself after an hour");
    let snap = forgetting::Snapshot::load(&conn).unwrap();
    let s = lethe_engine::Settings::load(&conn).unwrap();
    let q = lifecycle::ListQuery { limit: 2, ..Default::default() };
    let page = lethe_engine::health::list_page(&conn, &snap, "never_recalled", &q, &s, now()).unwrap();
    let whole = lethe_engine::health::health(&conn, &snap, &s, now()).unwrap();
    let listed = whole.lists.iter().find(|l| l.name == "never_recalled").unwrap();
    assert_eq!((page.total, listed.total), (3, 3), "the same members as the Overview counts");
    assert_eq!(page.items.len(), 2, "paged");
    assert!(page.items.iter().all(|r| never.contains(&r.id) && r.id != recent));
    let err = lethe_engine::health::list_page(&conn, &snap, "everything", &q, &s, now()).unwrap_err();
    assert_eq!(err.code(), "invalid_input");
}

/// A fresh demo has its agents' recalls: the recall log lists both agents' queries with what
/// came back, and the recalled memories count them in their statistics.
#[test]
fn the_demo_has_agents_recalls_in_its_log() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let counts = lethe_engine::demo::load(&mut conn, 7, 60, now()).unwrap();
    assert_eq!(counts.recalls, 8);
    let log = lethe_engine::recall_log::list(&conn, &Default::default()).unwrap();
    assert_eq!(log.len(), 8, "one entry per recall");
    for agent in ["agent:claude-code", "agent:cursor"] {
        assert!(log.iter().any(|e| e.actor == agent), "{agent} recalled");
    }
    assert!(log.iter().all(|e| !e.results.is_empty()), "each demo query finds something: {log:?}");
    let rollback = log.iter().find(|e| e.query == "roll back a failed deploy").unwrap();
    let first = lifecycle::get(&conn, &rollback.results[0].id).unwrap();
    assert!(first.content.contains("Roll back a failed deploy"), "the procedure answers it: {}", first.content);
    let recalled = count(&conn, "SELECT COUNT(*) FROM meta_memory_stats WHERE recall_count > 0");
    assert!(recalled >= 8, "the hits are counted: {recalled}");
    // The log is dated over the last two weeks, not at the moment the demo was loaded.
    assert!(log.iter().all(|e| e.at.as_str() < time::format(now()).as_str()));
}
