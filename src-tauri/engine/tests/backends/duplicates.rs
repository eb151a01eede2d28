//! The duplicates review and the health lists on real SQLite files: clusters from
//! the stored neighbour lists, keep both (a dismissed pair), supersede from the review, and the
//! four Overview health lists.

use std::collections::HashMap;

use crate::support::{now, temp_db};
use lethe_engine::duplicates;
use lethe_engine::forgetting::Snapshot;
use lethe_engine::health;
use lethe_engine::lifecycle::{self, NewMemory, RememberOutcome};
use lethe_engine::meta::{self, Delta};
use lethe_engine::recall::{self, RecallQuery};
use lethe_engine::{audit, store, time, Settings, Tier};

fn days_ago(d: f64) -> time::Instant {
    time::add_days(now(), -d)
}

fn put(conn: &mut store::Connection, m: NewMemory) -> String {
    match lifecycle::remember(conn, &m, "user", now()).unwrap() {
        RememberOutcome::Stored { id, .. } => id,
        other => panic!("not stored: {other:?}"),
    }
}

fn count(conn: &store::Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

const TEXT: &str = "the staging deploy of the billing service needs the feature flag turned off before the \
                    database migration runs, otherwise the workers crash on start";
const NEAR: &str = "The staging deploy of the billing service needs the feature flag turned off before the \
                    database migration runs, otherwise the workers crash on start again";

/// A file with one near-copy pair (the older one more important: it dominates) and one
/// unrelated memory. Returns (file, older id, newer id, unrelated id).
fn pair_file() -> (store::Connection, String, String, String) {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let old = put(
        &mut conn,
        NewMemory { importance: Some(0.8), created_at: Some(days_ago(20.0)), ..NewMemory::new(Tier::Semantic, TEXT) },
    );
    let new = put(
        &mut conn,
        NewMemory { importance: Some(0.4), created_at: Some(days_ago(2.0)), ..NewMemory::new(Tier::Semantic, NEAR) },
    );
    let other = put(&mut conn, NewMemory::new(Tier::Semantic, "kafka topics are partitioned by tenant id"));
    (conn, old, new, other)
}

fn clusters(conn: &store::Connection) -> duplicates::Clusters {
    let snap = Snapshot::load(conn).unwrap();
    duplicates::clusters(conn, &snap, &Settings::load(conn).unwrap(), now(), 50).unwrap()
}

fn duplication(conn: &store::Connection, id: &str) -> f64 {
    let s = Settings::load(conn).unwrap();
    lethe_engine::forgetting::score_one(conn, id, &s, now()).unwrap().features.duplication
}

fn actions(conn: &store::Connection, id: &str, action: &str) -> usize {
    let f = audit::EventFilter { memory_id: Some(id.into()), action: Some(action.into()), ..Default::default() };
    audit::list_events(conn, &f).unwrap().len()
}

#[test]
fn a_near_copy_pair_is_one_cluster_with_the_dominant_member_first_and_deterministic() {
    let (conn, old, new, other) = pair_file();
    let c = clusters(&conn);
    assert_eq!(c.total, 1, "one pair above the threshold: {c:?}");
    let cl = &c.items[0];
    assert_eq!(cl.dominant, old, "the more important memory dominates");
    assert_eq!(cl.size, 2);
    let ids: Vec<&str> = cl.members.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, vec![old.as_str(), new.as_str()], "the unrelated memory {other} is in no cluster");
    assert!(cl.members[0].dominant && !cl.members[1].dominant, "exactly the first is marked dominant");
    assert!(cl.members[1].similarity > c.threshold, "the pair is above the threshold");
    assert!(["same words", "same meaning"].contains(&cl.members[1].kind.as_str()), "{}", cl.members[1].kind);
    assert_eq!(cl.members[1].text, NEAR.split_whitespace().collect::<Vec<_>>().join(" "));
    let again = clusters(&conn);
    assert_eq!(serde_json::to_value(&c).unwrap(), serde_json::to_value(&again).unwrap(), "same file, same clusters");
}

#[test]
fn keep_both_dismisses_the_pair_once_audits_it_and_stops_its_duplication() {
    let (mut conn, old, new, _) = pair_file();
    assert!(duplication(&conn, &new) > 0.7, "before: the newer carries the duplication");
    let d = duplicates::dismiss(&mut conn, &new, &old, "user", now()).unwrap();
    assert!(d.dismissed);
    assert_eq!(
        (d.a.as_str(), d.b.as_str()),
        if old < new { (old.as_str(), new.as_str()) } else { (new.as_str(), old.as_str()) }
    );
    assert_eq!(clusters(&conn).total, 0, "a dismissed pair is no cluster");
    assert_eq!(duplication(&conn, &new), 0.0, "a dismissed pair counts in no duplication");
    assert_eq!((actions(&conn, &old, "keep_both"), actions(&conn, &new, "keep_both")), (1, 1), "audited on both");
    let changes = count(&conn, "SELECT COUNT(*) FROM lethe_change");
    let again = duplicates::dismiss(&mut conn, &old, &new, "user", now()).unwrap();
    assert!(!again.dismissed, "the second time it was already dismissed");
    assert_eq!(again.at, d.at, "the first decision stands");
    assert_eq!((actions(&conn, &old, "keep_both"), actions(&conn, &new, "keep_both")), (1, 1), "no second audit row");
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM lethe_change"), changes, "nothing written the second time");
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM lethe_dismissed_pair"), 1);
    // Lists judged again on open (as after a change of the duplicate judgment) keep it.
    conn.execute("UPDATE lethe_neighbour SET model = 'an earlier judgment'", []).unwrap();
    let snap = Snapshot::load_and_keep(&mut conn).unwrap();
    assert!(snap.searched > 0, "the lists were searched again");
    assert_eq!(duplication(&conn, &new), 0.0, "keep both still stands");
    assert_eq!(clusters(&conn).total, 0);
}

#[test]
fn a_cached_snapshot_patched_from_the_journal_sees_the_dismissal() {
    // The window keeps its snapshot and patches it for the memories the change journal names.
    let (mut conn, old, new, _) = pair_file();
    let mut snap = Snapshot::load(&conn).unwrap();
    let seq = store::last_change_seq(&conn).unwrap();
    duplicates::dismiss(&mut conn, &old, &new, "user", now()).unwrap();
    let (_, ids) = store::changes_since(&conn, seq, 200).unwrap();
    let ids = ids.expect("few changes");
    assert!(ids.contains(&old) && ids.contains(&new), "the journal names both: {ids:?}");
    snap.apply_changes(&conn, &ids).unwrap();
    let s = Settings::load(&conn).unwrap();
    assert_eq!(duplicates::clusters(&conn, &snap, &s, now(), 50).unwrap().total, 0);
    assert_eq!(snap.score_of(&new, &s, now()).unwrap().features.duplication, 0.0);
}

#[test]
fn dismissing_bad_ids_is_a_typed_error_that_writes_nothing() {
    let (mut conn, old, _, _) = pair_file();
    let before = |c: &store::Connection| {
        ["lethe_dismissed_pair", "lethe_action", "lethe_change"].map(|t| count(c, &format!("SELECT COUNT(*) FROM {t}")))
    };
    let start = before(&conn);
    let e = duplicates::dismiss(&mut conn, &old, "mem_nope", "user", now()).unwrap_err();
    assert_eq!(e.code(), "not_found", "{e}");
    let e = duplicates::dismiss(&mut conn, &old, &old, "user", now()).unwrap_err();
    assert_eq!(e.code(), "invalid_input", "{e}");
    let e = duplicates::dismiss(&mut conn, &old, "mem_other", "not an actor", now()).unwrap_err();
    assert_eq!(e.code(), "invalid_input", "{e}");
    let e = duplicates::supersede(&mut conn, "mem_nope", &old, "user", now()).unwrap_err();
    assert_eq!(e.code(), "not_found", "{e}");
    assert_eq!(before(&conn), start, "no row written by a refused call");
}

#[test]
fn supersede_from_the_review_replaces_the_older_by_the_newer_and_recall_drops_it() {
    let (mut conn, old, new, _) = pair_file();
    let q = RecallQuery { text: "billing feature flag migration".into(), limit: 10, ..Default::default() };
    let hits = |c: &store::Connection| -> Vec<String> {
        recall::recall(c, &q, now()).unwrap().into_iter().map(|h| h.id).collect()
    };
    assert!(hits(&conn).contains(&old), "before: recall finds the older");
    // Named in either order, the older one is superseded.
    let s = duplicates::supersede(&mut conn, &old, &new, "user", now()).unwrap();
    assert_eq!((s.old.as_str(), s.new.as_str(), s.superseded), (old.as_str(), new.as_str(), true));
    assert!(!hits(&conn).contains(&old), "the superseded one leaves recall");
    assert!(hits(&conn).contains(&new), "the newer stays");
    assert_eq!(actions(&conn, &old, "superseded"), 1, "audited as remember --supersedes audits it");
    let d = lethe_engine::detail(&conn, &old, now(), None).unwrap();
    assert_eq!(d.superseded_by, vec![new.clone()], "stays visible with the link");
    assert_eq!(clusters(&conn).total, 0, "a superseded memory leaves the review");
    let again = duplicates::supersede(&mut conn, &new, &old, "user", now()).unwrap();
    assert!(!again.superseded, "already superseded: nothing written");
    assert_eq!(actions(&conn, &old, "superseded"), 1);
}

#[test]
fn supersede_refuses_a_quarantined_memory_and_writes_nothing() {
    let (mut conn, old, new, _) = pair_file();
    lifecycle::soft_delete(&mut conn, &new, None, "user", now()).unwrap();
    let links = count(&conn, "SELECT COUNT(*) FROM lethe_supersede");
    let e = duplicates::supersede(&mut conn, &old, &new, "user", now()).unwrap_err();
    assert_eq!(e.code(), "invalid_input", "{e}");
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM lethe_supersede"), links);
    assert_eq!(actions(&conn, &old, "superseded"), 0);
}

#[test]
fn a_hard_delete_removes_the_memorys_dismissals() {
    let (mut conn, old, new, _) = pair_file();
    duplicates::dismiss(&mut conn, &old, &new, "user", now()).unwrap();
    lifecycle::hard_delete(&mut conn, &new, true, None, "user", now()).unwrap();
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM lethe_dismissed_pair"), 0, "no trace of the deleted memory's id");
}

#[test]
fn health_lists_name_the_memories_people_should_look_at() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let mk = |content: &str, age: f64| NewMemory {
        created_at: Some(days_ago(age)),
        ..NewMemory::new(Tier::Episodic, content)
    };
    let old_unrecalled = put(&mut conn, mk("grafana alert routing goes to the oncall channel", 90.0));
    let young = put(&mut conn, mk("the new intern starts on monday with laptop setup", 3.0));
    let pinned = put(
        &mut conn,
        NewMemory {
            pinned: true,
            created_at: Some(days_ago(5.0)),
            ..NewMemory::new(Tier::Semantic, "never force push to main")
        },
    );
    let shaky = put(&mut conn, mk("the vpn config lives in the infra repo under vpn dir", 40.0));
    // An episodic memory (half-life 30 d) at low importance crosses 0.6 at some age: find one
    // that is just below it now and above it a week later.
    // A low importance keeps the asymptote (0.6 − 0.15·I) below the default threshold, so the
    // lists are asked under a threshold of 0.55.
    let s = Settings { threshold: 0.55, ..Settings::load(&conn).unwrap() };
    let soon_age = (2..800)
        .map(|h| f64::from(h) / 2.0)
        .find(|&age| {
            let score_at = |t: time::Instant| {
                let input = lethe_engine::decay::ScoreInput {
                    tier: Tier::Episodic,
                    created_at: days_ago(age),
                    last_accessed: None,
                    views: 0,
                    cites: 0,
                    edits: 0,
                    importance: 0.1,
                    pinned: false,
                    duplication: 0.0,
                    duplicate_of: None,
                    duplicate_kind: None,
                    task_log: false,
                };
                lethe_engine::decay::score_value(&input, &s, t)
            };
            score_at(now()) < s.threshold - 0.002 && score_at(time::add_days(now(), 6.0)) >= s.threshold
        })
        .expect("an age that crosses within the week");
    let soon = put(
        &mut conn,
        NewMemory { importance: Some(0.1), ..mk("rotate the staging tls certificate before it expires", soon_age) },
    );
    let mut deltas = HashMap::new();
    deltas.insert(
        shaky.clone(),
        Delta { count: 4, success: 0, failure: 4, confidence_sum: 4.0 * 0.3, last_recalled_at: None },
    );
    deltas
        .insert(soon.clone(), Delta { count: 1, success: 1, failure: 0, confidence_sum: 0.9, last_recalled_at: None });
    meta::write_deltas(&mut conn, &deltas).unwrap();

    let snap = Snapshot::load(&conn).unwrap();
    let h = health::health(&conn, &snap, &s, now()).unwrap();
    let list = |name: &str| -> Vec<String> {
        h.lists.iter().find(|l| l.name == name).unwrap().items.iter().map(|i| i.id.clone()).collect()
    };
    assert_eq!(
        list("never_recalled"),
        vec![old_unrecalled.clone()],
        "older than 30 days and never recalled; {young} is young, {shaky} and {soon} were recalled"
    );
    assert_eq!(list("forget_soon"), vec![soon.clone()]);
    let crossing = h.lists[1].items[0].crosses_in_days.unwrap();
    assert!(crossing > 0.0 && crossing <= 7.0, "crosses within the week: {crossing}");
    assert_eq!(list("pinned_never_recalled"), vec![pinned]);
    assert_eq!(list("low_confidence"), vec![shaky.clone()], "recalled 4 times at 0.3");
    let item = &h.lists[3].items[0];
    assert_eq!((item.recall_count, item.avg_confidence.map(|c| (c * 1000.0).round())), (4, Some(300.0)));
    assert_eq!(h.lists.iter().map(|l| l.total).collect::<Vec<_>>(), vec![1, 1, 1, 1]);
    // Quarantined memories are in no list.
    lifecycle::soft_delete(&mut conn, &old_unrecalled, None, "user", now()).unwrap();
    let snap = Snapshot::load(&conn).unwrap();
    let h = health::health(&conn, &snap, &s, now()).unwrap();
    assert_eq!(h.lists[0].total, 0);
}

/// What `remember` answers for `b` stored after `a` (the older, more important one), and b's
/// duplication.
fn second_of(a: &str, b: &str) -> (String, String, Vec<lethe_engine::semantic::Similar>, f64) {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let first = put(
        &mut conn,
        NewMemory { importance: Some(0.6), created_at: Some(days_ago(3.0)), ..NewMemory::new(Tier::Semantic, a) },
    );
    let out = lifecycle::remember(
        &mut conn,
        &NewMemory { importance: Some(0.3), ..NewMemory::new(Tier::Semantic, b) },
        "agent:test",
        now(),
    )
    .unwrap();
    let RememberOutcome::Stored { id, similar, .. } = out else { panic!("stored") };
    let d = duplication(&conn, &id);
    (first, id, similar, d)
}

#[test]
fn opposite_outcomes_and_states_are_never_duplicates() {
    for (a, b) in [
        ("build 20261201.4 passed on runner ci-7", "build 20261203.1 failed on runner ci-2"),
        ("The nightly backup job passed.", "The nightly backup job failed."),
        ("Push notifications are enabled in the beta build.", "Push notifications are disabled in the beta build."),
    ] {
        let (first, _, similar, d) = second_of(a, b);
        assert_eq!(d, 0.0, "{a:?} / {b:?} are two memories, D must be 0");
        let named = similar.iter().find(|s| s.id == first).expect("the older one is named as related");
        assert_ne!(named.kind, "duplicate", "{named:?}");
        assert!(!named.evidence.differing.is_empty(), "the answer says what differs: {named:?}");
    }
}

#[test]
fn a_changed_value_is_a_possible_update_naming_the_older_memory_and_both_values() {
    let (first, _, similar, d) =
        second_of("Retry limit for the email sender is 3 attempts.", "Retry limit for the email sender is 5 attempts.");
    assert_eq!(d, 0.0, "another value is not a duplicate");
    let named = similar.first().expect("the older memory is named");
    assert_eq!((named.id.as_str(), named.kind), (first.as_str(), "possible update"));
    let diff = &named.evidence.differing[0];
    assert_eq!((diff.this.as_str(), diff.other.as_str()), ("5", "3"), "the new value, then the older one's");
}

#[test]
fn a_date_written_two_ways_is_still_a_duplicate() {
    let (first, _, similar, d) = second_of(
        "The quarterly access review for the finance systems was completed on 2024-07-15.",
        "The quarterly access review for the finance systems was completed on July 15, 2024.",
    );
    assert!(d >= 0.7, "one date written two ways is the same memory: D = {d}");
    assert_eq!(similar[0].kind, "duplicate", "{similar:?}");
    assert_eq!(similar[0].id, first);
}

#[test]
fn five_random_hex_memories_carry_no_duplication() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut ids = Vec::new();
    for _ in 0..5 {
        let words: Vec<String> = (0..10)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                format!("{:010x}", seed & 0xff_ffff_ffff)
            })
            .collect();
        ids.push(put(&mut conn, NewMemory::new(Tier::Semantic, words.join(" "))));
    }
    for id in &ids {
        assert_eq!(duplication(&conn, id), 0.0, "random identifiers are different memories");
    }
}

#[test]
fn the_demos_rename_requests_are_not_duplicates_and_its_near_copies_still_are() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    lethe_engine::demo::load(&mut conn, 7, 400, now()).unwrap();
    let cl = clusters(&conn);
    assert!(cl.total >= 1, "the demo keeps clusters of real near-copies");
    for c in &cl.items {
        let renames = c.members.iter().filter(|m| m.text.contains("asked to rename")).count();
        assert!(renames < 2, "rename requests for different tabs are different memories: {c:?}");
        for m in c.members.iter().skip(1) {
            assert!(m.evidence.as_ref().is_some_and(|e| e.differing.is_empty() && !e.matching.is_empty()), "{m:?}");
        }
    }
}

#[test]
fn a_duplicates_detail_says_what_it_shares_with_the_one_it_duplicates() {
    let (conn, old, new, _) = pair_file();
    let d = lethe_engine::detail(&conn, &new, now(), None).unwrap();
    let ev = d.duplicate_evidence.expect("a duplicate carries its evidence");
    assert!(ev.differing.is_empty() && ev.matching.contains(&"billing".to_string()), "{ev:?}");
    let reason = d.score.reasons.iter().find(|r| r.starts_with(&format!("duplicate of {old}"))).expect("the reason");
    assert!(reason.contains("same: "), "the reason says why: {reason}");
    assert!(lethe_engine::detail(&conn, &old, now(), None).unwrap().duplicate_evidence.is_none());
}

#[test]
fn related_pairs_are_listed_apart_from_duplicates_with_their_evidence_and_never_in_d() {
    let (mut conn, old, new, _) = pair_file();
    let retry3 = put(
        &mut conn,
        NewMemory {
            created_at: Some(days_ago(5.0)),
            ..NewMemory::new(Tier::Semantic, "Retry limit for the email sender is 3 attempts.")
        },
    );
    let retry5 = put(&mut conn, NewMemory::new(Tier::Semantic, "Retry limit for the email sender is 5 attempts."));
    let passed = put(&mut conn, NewMemory::new(Tier::Episodic, "The nightly backup job passed."));
    let failed = put(&mut conn, NewMemory::new(Tier::Episodic, "The nightly backup job failed."));
    let cl = clusters(&conn);
    let pair_of = |a: &str, b: &str| {
        cl.related.items.iter().find(|p| (p.older.id == a && p.newer.id == b) || (p.older.id == b && p.newer.id == a))
    };
    // The duplicate pair is a cluster, not a related pair.
    assert_eq!(cl.items.len(), 1, "{cl:?}");
    assert!(pair_of(&old, &new).is_none(), "a duplicate is never listed as merely related: {:?}", cl.related);
    // A changed value: a possible update, older first, with both values.
    let update = pair_of(&retry3, &retry5).expect("the changed retry limit is listed");
    assert_eq!((update.kind.as_str(), update.older.id.as_str()), ("possible update", retry3.as_str()), "{update:?}");
    let diff = &update.evidence.differing[0];
    assert_eq!((diff.this.as_str(), diff.other.as_str()), ("3", "5"), "older value, then newer: {update:?}");
    assert!(update.evidence.summary.contains("3 → 5"), "{update:?}");
    // Opposite outcomes: listed, with what differs, and not a duplicate.
    let outcome = pair_of(&passed, &failed).expect("passed / failed is listed as alike");
    assert_ne!(outcome.kind, "duplicate");
    assert!(!outcome.evidence.differing.is_empty(), "{outcome:?}");
    assert!(cl.related.items.iter().all(|p| p.closeness >= duplicates::RELATED_AT && p.kind != "duplicate"));
    assert!(cl.related.items.first().is_some_and(|p| p.kind == "possible update"), "updates first: {:?}", cl.related);
    assert_eq!(cl.related.scanned, 7);
    assert!(!cl.related.judgment.is_empty());
    // None of them counts in D, and none is a cluster member.
    for id in [&retry3, &retry5, &passed, &failed] {
        assert_eq!(duplication(&conn, id), 0.0, "a related memory carries no duplication: {id}");
        assert!(cl.items.iter().all(|c| c.members.iter().all(|m| &m.id != id)), "{id} is in no cluster");
    }
    // A superseded memory left recall, so it leaves the list.
    duplicates::supersede(&mut conn, &retry3, &retry5, "user", now()).unwrap();
    assert!(clusters(&conn).related.items.iter().all(|p| p.older.id != retry3 && p.newer.id != retry3));
}
