//! Issue #21, the seeds' remaining pieces: batch archive and partial restore,
//! end of a session into task logs and rules, and the reads-like-dialogue lint.

use lethe_engine::archive::{self, Span};
use lethe_engine::lifecycle::{self, NewMemory, RememberOutcome};
use lethe_engine::{store, time, Tier};
use sha2::{Digest, Sha256};

fn put(conn: &mut store::Connection, m: NewMemory) -> String {
    match lifecycle::remember(conn, &m, "user", now()).unwrap() {
        RememberOutcome::Stored { id, .. } => id,
        other => panic!("not stored: {other:?}"),
    }
}

fn observation(conn: &mut store::Connection, content: &str) -> String {
    let mut m = NewMemory::new(Tier::Episodic, content);
    m.source = Some("tool:bash".into());
    put(conn, m)
}

fn count(conn: &store::Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn sha_hex(b: &[u8]) -> String {
    Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

/// What the rows of the tables a batch archive writes look like (counts and contents).
fn archive_state(conn: &store::Connection) -> (i64, i64, String) {
    let archives = count(conn, "SELECT COUNT(*) FROM lethe_archive");
    let actions = count(conn, "SELECT COUNT(*) FROM lethe_action");
    let contents: Vec<String> = conn
        .prepare("SELECT content FROM memory_item ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let contents = contents.join("|");
    (archives, actions, contents)
}

#[test]
fn batch_archive_of_100_is_all_or_nothing() {
    let path = temp_db();
    let mut conn = lethe_testkit::backend::open(&path).unwrap();
    let ids: Vec<String> =
        (0..100).map(|i| observation(&mut conn, &format!("output of run {i}\nline two of {i}\n"))).collect();
    let before = archive_state(&conn);
    store::checkpoint_truncate(&conn).unwrap();
    let wal = path.with_extension("db-wal");
    // The file's own bytes (SQLite); a server's files are not the test's to read.
    let files = || {
        if lethe_testkit::backend::is_postgres() {
            return (Vec::new(), Vec::new());
        }
        (std::fs::read(&path).unwrap(), std::fs::read(&wal).unwrap_or_default())
    };
    let file_before = files();
    // The 100th names a memory that does not exist: nothing of the 99 before it is written.
    let mut items: Vec<(String, String)> = ids.iter().map(|id| (id.clone(), format!("memo of {id}"))).collect();
    items[99].0 = "mem_does_not_exist".into();
    let err = archive::archive_batch(&mut conn, &items, "agent:x", now()).unwrap_err();
    assert_eq!(err.code(), "not_found", "{err}");
    assert_eq!(archive_state(&conn), before, "a failure in the 100th writes nothing");
    assert!(files() == file_before, "the database file and its WAL are unchanged");
    // A protected text as the 100th fails the same way.
    let user = put(&mut conn, NewMemory::new(Tier::Semantic, "the user said: always ask before deploying"));
    items[99].0 = user;
    assert_eq!(archive::archive_batch(&mut conn, &items, "agent:x", now()).unwrap_err().code(), "invalid_input");
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM lethe_archive"), 0);
    // All valid: one call, 100 memos in place, each restorable byte for byte.
    items[99].0 = ids[99].clone();
    let receipts = archive::archive_batch(&mut conn, &items, "agent:x", now()).unwrap();
    assert_eq!(receipts.len(), 100);
    for (r, id) in receipts.iter().zip(&ids) {
        assert_eq!(&r.memory_id, id, "receipts in the order given");
        let m = lifecycle::get(&conn, id).unwrap();
        assert_eq!(m.content, format!("[Archive#{}: memo of {id}]", r.archive_no), "memo in place");
    }
    let back = archive::unarchive(&mut conn, receipts[42].archive_no, "user", now()).unwrap();
    assert_eq!(back.content, "output of run 42\nline two of 42\n", "full restore stays byte-exact");
}

#[test]
fn batch_archive_in_one_transaction_counts_one_write() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let ids: Vec<String> = (0..100).map(|i| observation(&mut conn, &format!("payload {i}"))).collect();
    let items: Vec<(String, String)> = ids.iter().map(|id| (id.clone(), "done".to_string())).collect();
    let version_before = count(&conn, "SELECT COUNT(*) FROM lethe_action");
    archive::archive_batch(&mut conn, &items, "agent:x", now()).unwrap();
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM lethe_action") - version_before, 100, "one audit row each");
    // The same id twice fails (the second sees the first's archive in the same transaction).
    let again = vec![(ids[0].clone(), "x".to_string())];
    assert_eq!(archive::archive_batch(&mut conn, &again, "agent:x", now()).unwrap_err().code(), "invalid_input");
}

#[test]
fn partial_restore_returns_exactly_the_span_and_restores_nothing() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let original = "line one\nzwei – ünïcode\nthree\nfour without newline";
    let id = observation(&mut conn, original);
    let r = archive::archive(&mut conn, &id, "four lines", "agent:x", now()).unwrap();
    let memo = lifecycle::get(&conn, &id).unwrap().content;
    let lines: Vec<&str> = original.split_inclusive('\n').collect();
    for (a, b) in [(1, 1), (2, 3), (1, 4), (4, 4)] {
        let s = archive::read_span(&conn, r.archive_no, Span::Lines(a, b)).unwrap();
        let want: String = lines[a - 1..b].concat();
        assert_eq!(s.text, want, "lines {a}:{b}");
        assert_eq!(&original.as_bytes()[s.start..s.end], want.as_bytes());
        assert_eq!(s.sha256, sha_hex(want.as_bytes()), "the span's hash is the hash of the slice of the original");
    }
    let s = archive::read_span(&conn, r.archive_no, Span::Bytes(5, 20)).unwrap();
    assert_eq!(s.text.as_bytes(), &original.as_bytes()[5..20]);
    assert_eq!(s.sha256, sha_hex(&original.as_bytes()[5..20]));
    assert_eq!(lifecycle::get(&conn, &id).unwrap().content, memo, "the memory keeps its memo");
    assert!(archive::is_archived(&conn, &id).unwrap());
    for bad in [Span::Lines(0, 1), Span::Lines(2, 1), Span::Lines(1, 5), Span::Bytes(3, 2), Span::Bytes(0, 999)] {
        assert_eq!(archive::read_span(&conn, r.archive_no, bad).unwrap_err().code(), "invalid_input", "{bad:?}");
    }
    // A byte span splitting 'ü' (two bytes) is refused rather than returning other bytes.
    let u = original.find('ü').unwrap();
    assert_eq!(archive::read_span(&conn, r.archive_no, Span::Bytes(u, u + 1)).unwrap_err().code(), "invalid_input");
    assert_eq!(archive::read_span(&conn, 999, Span::Lines(1, 1)).unwrap_err().code(), "not_found");
    assert_eq!(Span::parse("lines", "2:3").unwrap(), Span::Lines(2, 3));
    assert_eq!(Span::parse("bytes", "x").unwrap_err().code(), "invalid_input");
    let back = archive::unarchive(&mut conn, r.archive_no, "user", now()).unwrap();
    assert_eq!(back.content, original, "full restore stays byte-exact");
}

// ---- End of a session: task logs and rules ----

use crate::support::{now, temp_db};
use lethe_engine::recall::{self, RecallQuery};
use lethe_engine::session::{self, Rule};
use lethe_engine::{audit, forgetting};

fn working(conn: &mut store::Connection, session: &str, content: &str) -> String {
    let mut m = NewMemory::new(Tier::Working, content);
    m.session_id = Some(session.into());
    put(conn, m)
}

fn recalled(conn: &store::Connection, text: &str, task_kind: Option<&str>) -> Vec<String> {
    let q = RecallQuery { text: text.into(), limit: 50, task_kind: task_kind.map(String::from), ..Default::default() };
    recall::recall(conn, &q, now()).unwrap().into_iter().map(|h| h.id).collect()
}

fn rule(content: &str) -> Rule {
    Rule { content: content.into(), importance: Some(0.8), tags: vec!["deploy".into()], supersedes: vec![] }
}

#[test]
fn end_session_moves_working_memories_to_task_logs_and_rules_to_semantic() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let old_rule = put(&mut conn, NewMemory::new(Tier::Semantic, "Deploys to the canary cluster take ten minutes"));
    let a = working(&mut conn, "s1", "tried the canary deploy, the health check timed out twice");
    let b = working(&mut conn, "s1", "the canary deploy passed after raising the health check timeout");
    let other = working(&mut conn, "s2", "canary deploy notes from another session");
    let before_a = lifecycle::get(&conn, &a).unwrap();
    assert!(recalled(&conn, "canary deploy", None).contains(&a), "a working memory is recalled before the end");

    let mut r1 = rule("Canary deploys need a health check timeout of at least 60 seconds");
    r1.supersedes = vec![old_rule.clone()];
    let rules = vec![r1, rule("Roll back a canary after two failed health checks")];
    let out = session::end_session(&mut conn, "s1", "deploy", &rules, "agent:claude", now()).unwrap();
    assert!(!out.already_ended);
    assert_eq!(out.task_logs, vec![a.clone(), b.clone()], "the session's working memories, oldest first");
    assert_eq!(out.rules.len(), 2);
    assert!(out.rules.iter().all(|r| r.stored), "{:?}", out.rules);

    // Task logs: episodic, same content and counters, marked with the kind.
    let after_a = lifecycle::get(&conn, &a).unwrap();
    assert_eq!(after_a.tier, Tier::Episodic);
    assert_eq!(after_a.content, before_a.content);
    assert_eq!(after_a.session_id.as_deref(), Some("s1"), "the session still names what it wrote");
    assert_eq!(session::task_kind_of(&conn, &a).unwrap().as_deref(), Some("deploy"));
    assert_eq!(lifecycle::get(&conn, &other).unwrap().tier, Tier::Working, "another session is untouched");

    // Recall: absent globally, present for the same kind, absent for another kind.
    let global = recalled(&conn, "canary deploy health check", None);
    assert!(!global.contains(&a) && !global.contains(&b), "task logs never in global recall");
    let same = recalled(&conn, "canary deploy health check", Some("deploy"));
    assert!(same.contains(&a) && same.contains(&b), "task logs recalled for the same task kind");
    let elsewhere = recalled(&conn, "canary deploy health check", Some("billing"));
    assert!(!elsewhere.contains(&a), "another kind does not see them");

    // Rules: semantic memories of the session, recalled globally; the superseded one leaves.
    let rule_id = out.rules[0].id.clone().unwrap();
    let r = lifecycle::get(&conn, &rule_id).unwrap();
    assert_eq!(r.tier, Tier::Semantic);
    assert_eq!(r.session_id.as_deref(), Some("s1"));
    assert_eq!(r.importance, 0.8);
    assert!(global.contains(&rule_id), "a rule is recalled globally");
    assert!(!global.contains(&old_rule), "what the rule supersedes leaves recall");
    assert_eq!(lethe_engine::detail(&conn, &old_rule, now(), None).unwrap().superseded_by, vec![rule_id.clone()]);

    // The audit names the session, with the caller as actor.
    let ev =
        audit::list_events(&conn, &audit::EventFilter { action: Some("end_session".into()), ..Default::default() })
            .unwrap();
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].actor, "agent:claude");
    let text = serde_json::to_string(&ev[0]).unwrap();
    assert!(text.contains("\"s1\"") && text.contains("deploy"), "{text}");
    let ev_a =
        audit::list_events(&conn, &audit::EventFilter { memory_id: Some(a.clone()), ..Default::default() }).unwrap();
    assert!(ev_a.iter().any(|e| e.action == "task_log"), "each move is audited on the memory");

    // The working-memory gate does not touch task logs, even long after.
    let later = time::parse("2026-09-01T12:00:00.000Z").unwrap();
    let batch = forgetting::run_batch(&mut conn, &forgetting::BatchOptions::new(later, true)).unwrap();
    assert!(!batch.working_gate.contains(&a), "the working gate does not see task logs");

    // A second end is a no-op: same answer, nothing written.
    let actions = count(&conn, "SELECT COUNT(*) FROM lethe_action");
    let items = count(&conn, "SELECT COUNT(*) FROM memory_item");
    let again = session::end_session(&mut conn, "s1", "deploy", &rules, "agent:claude", now()).unwrap();
    assert!(again.already_ended);
    assert_eq!(again.task_logs, out.task_logs);
    assert_eq!(again.rules, out.rules);
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM lethe_action"), actions, "no audit row");
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM memory_item"), items, "no memory");
    let e = session::end_session(&mut conn, "s1", "billing", &[], "agent:claude", now()).unwrap_err();
    assert_eq!(e.code(), "invalid_input", "a different kind for an ended session is refused");

    // Restorable: a task log forgotten and restored is a task log again, byte for byte.
    lifecycle::soft_delete(&mut conn, &a, Some("test"), "user", now()).unwrap();
    assert!(!recalled(&conn, "canary deploy health check", Some("deploy")).contains(&a));
    lifecycle::restore(&mut conn, &a, "user", now()).unwrap();
    assert_eq!(lifecycle::get(&conn, &a).unwrap(), after_a);
    assert!(recalled(&conn, "canary deploy health check", Some("deploy")).contains(&a));

    // The Sessions view's data.
    let ov = session::overview(&conn, 100).unwrap();
    let s1 = ov.sessions.iter().find(|s| s.session_id == "s1").unwrap();
    assert_eq!(s1.task_kind.as_deref(), Some("deploy"));
    let roles: Vec<(&str, &str)> = s1.memories.iter().map(|m| (m.id.as_str(), m.role.as_str())).collect();
    assert!(roles.contains(&(a.as_str(), "task_log")) && roles.contains(&(rule_id.as_str(), "rule")), "{roles:?}");
    let g = ov.task_kinds.iter().find(|g| g.task_kind == "deploy").unwrap();
    assert_eq!(g.entries.len(), 2);
}

#[test]
fn a_bad_rule_writes_nothing_and_an_unknown_session_is_not_found() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let a = working(&mut conn, "s1", "a working note");
    let actions = count(&conn, "SELECT COUNT(*) FROM lethe_action");
    let bad = vec![rule("a fine rule"), Rule { importance: Some(2.0), ..rule("importance out of range") }];
    assert_eq!(session::end_session(&mut conn, "s1", "k", &bad, "user", now()).unwrap_err().code(), "invalid_input");
    let missing = Rule { supersedes: vec!["mem_nope".into()], ..rule("supersedes nothing known") };
    let e = session::end_session(&mut conn, "s1", "k", &[rule("fine"), missing], "user", now()).unwrap_err();
    assert_eq!(e.code(), "not_found");
    assert_eq!(lifecycle::get(&conn, &a).unwrap().tier, Tier::Working, "nothing moved");
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM lethe_action"), actions, "nothing written");
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM lethe_session_end"), 0);
    assert_eq!(session::end_session(&mut conn, "nobody", "k", &[], "user", now()).unwrap_err().code(), "not_found");
    assert_eq!(session::end_session(&mut conn, "s1", "", &[], "user", now()).unwrap_err().code(), "invalid_input");
    // The rules file: every line checked first, the bad one named, unknown keys refused.
    let e = session::parse_rules_jsonl("{\"content\":\"ok\"}\n{\"content\":\"x\",\"colour\":1}\n").unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
    assert_eq!(session::parse_rules_jsonl("\n{\"content\":\"a\",\"tags\":[\"t\"]}\n").unwrap().len(), 1);
}

#[test]
fn task_logs_decay_with_their_own_half_life_in_recall_and_forget_score() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let mut m = NewMemory::new(Tier::Working, "release checklist: bump the version and tag");
    m.session_id = Some("s".into());
    m.created_at = Some(time::parse("2026-05-02T12:00:00.000Z").unwrap()); // 30 days before now()
    let id = put(&mut conn, m);
    session::end_session(&mut conn, "s", "release", &[], "user", now()).unwrap();
    let q = |conn: &store::Connection| {
        let q = RecallQuery {
            text: "release checklist".into(),
            limit: 5,
            task_kind: Some("release".into()),
            ..Default::default()
        };
        recall::recall(conn, &q, now()).unwrap().into_iter().find(|h| h.id == id).unwrap().breakdown.recency
    };
    assert!((q(&conn) - 0.5).abs() < 1e-9, "30 days at the default half-life of 30");
    let s = lethe_engine::Settings::load(&conn).unwrap().with_value("task_log_half_life_days", "15").unwrap();
    lethe_engine::Settings::store(&mut conn, &s, "user", now()).unwrap();
    assert!((q(&conn) - 0.25).abs() < 1e-9, "the setting is used");
    // The ForgetScore's recency follows the same setting (15 days: 30 days old → 0.25).
    let d = lethe_engine::detail(&conn, &id, now(), None).unwrap();
    assert_eq!(d.task_kind.as_deref(), Some("release"));
    assert!((d.score.features.recency - 0.25).abs() < 1e-9, "{:?}", d.score.features);
    let snap = forgetting::Snapshot::load(&conn).unwrap();
    let s = lethe_engine::Settings::load(&conn).unwrap();
    assert!((snap.score_of(&id, &s, now()).unwrap().features.recency - 0.25).abs() < 1e-9);
    let bad = lethe_engine::Settings::load(&conn).unwrap().with_value("task_log_half_life_days", "0");
    assert_eq!(bad.unwrap_err().code(), "invalid_input");
}

// ---- Reads-like-dialogue lint ----

#[test]
fn the_lint_flags_dialogue_and_spares_rules_on_the_labelled_set() {
    let set: serde_json::Value = serde_json::from_str(include_str!("../data/dialogue_set.json")).unwrap();
    let texts = |k: &str| -> Vec<String> {
        set[k].as_array().unwrap().iter().map(|x| x["text"].as_str().unwrap().to_string()).collect()
    };
    let dialogue = texts("dialogue");
    let rules = texts("rules");
    assert!(dialogue.len() >= 50 && rules.len() >= 50);
    let locomo = set["dialogue"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["source"].as_str().unwrap().starts_with("locomo"))
        .count();
    assert!(locomo >= 45, "real LoCoMo turns in the set");
    let flagged =
        |v: &[String]| v.iter().filter(|t| lethe_engine::dialogue::lint(t).flagged).count() as f64 / v.len() as f64;
    let missed: Vec<&String> = dialogue.iter().filter(|t| !lethe_engine::dialogue::lint(t).flagged).collect();
    let false_pos: Vec<&String> = rules.iter().filter(|t| lethe_engine::dialogue::lint(t).flagged).collect();
    assert!(flagged(&dialogue) >= 0.9, "≥ 90 % of dialogue flagged; missed {missed:#?}");
    assert!(flagged(&rules) <= 0.1, "≤ 10 % of rules flagged; flagged {false_pos:#?}");
    for t in dialogue.iter().chain(&rules) {
        let l = lethe_engine::dialogue::lint(t);
        assert!((0.0..=1.0).contains(&l.score));
        assert_eq!(l.flagged, l.score >= lethe_engine::dialogue::FLAG_AT);
    }
}

#[test]
fn show_carries_the_lint_for_rules_only_and_the_filter_finds_them() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let chat = put(&mut conn, NewMemory::new(Tier::Semantic, "User: hey, can you remind me how we deploy?"));
    let clean = put(&mut conn, NewMemory::new(Tier::Semantic, "Deploys go through staging first."));
    let ep = put(&mut conn, NewMemory::new(Tier::Episodic, "User: hey, can you remind me how we deploy?"));
    let d = lethe_engine::detail(&conn, &chat, now(), None).unwrap().dialogue.unwrap();
    assert!(d.flagged && d.reasons.iter().any(|r| r == "speaker prefix"), "{d:?}");
    assert!(!lethe_engine::detail(&conn, &clean, now(), None).unwrap().dialogue.unwrap().flagged);
    assert!(lethe_engine::detail(&conn, &ep, now(), None).unwrap().dialogue.is_none(), "episodic memories are talk");
    let snap = forgetting::Snapshot::load(&conn).unwrap();
    let s = lethe_engine::Settings::load(&conn).unwrap();
    let q = lifecycle::ListQuery { needs_extraction: Some(true), ..Default::default() };
    let page = forgetting::list(&conn, &snap, &q, &s, now()).unwrap();
    let ids: Vec<&str> = page.items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, vec![chat.as_str()]);
    assert!(page.items[0].needs_extraction);
}
