//! A memory's session neighbours as context for recall: the memory of the same session, owner
//! and privacy scope written just before it and the one written just after it lend their text
//! to its recall document (a second, lower-weighted field of the stemmed index). A question
//! answered only by a neighbour's words finds the memory, and the explanation names the
//! neighbour; every change of a neighbour (edit, quarantine, restore, hard delete) changes the
//! match in the same transaction; and function words are left out of the lexical query.
//!
//! Both stores: a file's FTS5 table (and the process's in-memory copy of it) and the team
//! store's full-text column. (A query made only of function words is the file suite's: the
//! team store's English configuration drops such words from the index itself.)

use crate::support::{now, temp_db};
use lethe_engine::lifecycle::{self, NewMemory, RememberOutcome};
use lethe_engine::recall::{self, RecallQuery};
use lethe_engine::settings::RecallWeights;
use lethe_engine::{store, time, Tier};
use lethe_testkit::backend;

/// A memory of `session` (owner `owner`), `minute` minutes into the day.
fn turn(conn: &mut store::Connection, session: Option<&str>, owner: Option<&str>, minute: i64, text: &str) -> String {
    let mut m = NewMemory::new(Tier::Episodic, text);
    m.session_id = session.map(String::from);
    m.owner_id = owner.map(String::from);
    m.created_at = Some(time::parse("2026-05-20T09:00:00.000Z").unwrap() + chrono::Duration::minutes(minute));
    match lifecycle::remember(conn, &m, "user", now()).unwrap() {
        RememberOutcome::Stored { id, .. } => id,
        other => panic!("not stored: {other:?}"),
    }
}

/// A conversation: the place is named one turn before the answer that holds the fact.
struct Chat {
    asked: String,
    named: String,
    answer: String,
    after: String,
    other_owner: String,
    no_session: String,
}

fn chat(conn: &mut store::Connection) -> Chat {
    let asked = turn(conn, Some("chat-1"), Some("ana"), 0, "Ana: Where did you spend the weekend?");
    let named = turn(conn, Some("chat-1"), Some("ana"), 1, "Ben: We drove up to Lake Tahoe with the kids.");
    let answer = turn(conn, Some("chat-1"), Some("ana"), 2, "Ben: They swam every morning and caught two trout.");
    let after = turn(conn, Some("chat-1"), Some("ana"), 3, "Ana: Sounds lovely, we stayed home and painted.");
    // The same session, another owner: never a neighbour of Ana's memories.
    let other_owner = turn(conn, Some("chat-1"), Some("carl"), 1, "Carl: grocery list for the barbecue");
    // No session: no neighbours.
    let no_session = turn(conn, None, Some("ana"), 1, "Ana: the printer on floor two jams on glossy paper");
    Chat { asked, named, answer, after, other_owner, no_session }
}

/// Similarity only, so that the ranking is the text match.
fn ask(text: &str) -> RecallQuery {
    RecallQuery {
        text: text.into(),
        limit: 10,
        weights: Some(RecallWeights { similarity: 1.0, recency: 0.0, scene: 0.0, priority: 0.0 }),
        ..Default::default()
    }
}

/// The explained result of `id` for `text`, when it is one and matched lexically.
fn lexical_hit(conn: &store::Connection, text: &str, id: &str) -> Option<recall::ExplainedHit> {
    let e = recall::explain(conn, &ask(text), now(), 0).unwrap();
    e.results.into_iter().find(|r| r.hit.id == id && r.hit.breakdown.lexical > 0.0)
}

/// The memories whose stemmed-index row matches `word` in the neighbours' field.
fn context_rows(conn: &store::Connection, word: &str) -> Vec<String> {
    let (sql, arg) = if conn.is_postgres() {
        (
            "SELECT id FROM memory_item WHERE lethe_context @@ to_tsquery('english', quote_literal(?1)) ORDER BY id",
            word.to_string(),
        )
    } else {
        (
            "SELECT m.id FROM lethe_fts f JOIN memory_item m ON m.rowid = f.rowid \
             WHERE lethe_fts MATCH ?1 ORDER BY m.id",
            format!("context : \"{word}\""),
        )
    };
    let mut stmt = conn.prepare(sql).unwrap();
    stmt.query_map([arg], |r| r.get::<_, String>(0)).unwrap().collect::<lethe_engine::Result<Vec<_>>>().unwrap()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn a_question_answered_only_by_a_neighbours_words_finds_the_memory_and_explains_it() {
    let db = temp_db();
    let mut conn = backend::open(&db).unwrap();
    let c = chat(&mut conn);
    // "trout" is only in the answer; "tahoe" only in the turn before it.
    let q = "Where did they catch the trout, at Tahoe?";
    assert_eq!(recall::searched_words(q), vec!["catch", "trout", "tahoe"], "function words are not searched");
    let e = recall::explain(&conn, &ask(q), now(), 0).unwrap();
    assert_eq!(e.searched_words, vec!["catch", "trout", "tahoe"], "explain lists the words searched");
    let top = e.results.iter().find(|r| r.hit.id == c.answer).expect("the answer is found");
    assert_eq!(top.context_matches.len(), 1, "{top:?}");
    assert_eq!(top.context_matches[0].neighbour, c.named);
    assert_eq!(top.context_matches[0].words, vec!["tahoe"]);
    assert_eq!(top.context_matches[0].said, format!("matched its neighbour {}: 'tahoe'", c.named));
    assert!(top.lexical_own > 0.0 && top.lexical_context > 0.0, "both parts: {top:?}");
    assert!((top.lexical_own + top.lexical_context - top.hit.breakdown.lexical).abs() < 1e-12);

    // Only a neighbour's word: the memory is found through it, and all its lexical part is
    // context. Ana's first question has the place as its next turn.
    let only = lexical_hit(&conn, "Tahoe", &c.asked).expect("found through its neighbour");
    assert_eq!(only.lexical_own, 0.0);
    assert!(only.lexical_context > 0.0);
    assert_eq!(only.context_matches[0].neighbour, c.named);
    let own = lexical_hit(&conn, "Tahoe", &c.named).expect("the memory that names it");
    assert!(own.context_matches.is_empty(), "its own word: {own:?}");
    assert!(own.hit.score > only.hit.score, "its own text weighs more than a neighbour's");

    // Neighbours are of the same owner and privacy scope, and a memory without a session has
    // none.
    assert_eq!(sorted(context_rows(&conn, "tahoe")), sorted(vec![c.asked.clone(), c.answer.clone()]));
    assert!(context_rows(&conn, "grocery").is_empty(), "another owner's turn is nobody's context");
    assert!(context_rows(&conn, "printer").is_empty(), "a memory without a session lends nothing");
    assert!(lexical_hit(&conn, "Tahoe", &c.other_owner).is_none());
    assert!(lexical_hit(&conn, "Tahoe", &c.no_session).is_none());
    assert!(lexical_hit(&conn, "trout", &c.after).is_some(), "the turn after also has the answer as context");
}

#[test]
fn an_edit_quarantine_restore_and_hard_delete_of_a_neighbour_change_the_match() {
    let _one = crate::one_recall_cache_user();
    let path = temp_db();
    let mut conn = backend::open(&path).unwrap();
    let c = chat(&mut conn);
    // Twice: the first recall of a file asks FTS5, the next ones the process's index; both
    // must see each change (a team store answers from its full-text column both times).
    let found = |conn: &store::Connection, word: &str| -> bool {
        let a = lexical_hit(conn, word, &c.answer).is_some();
        let b = lexical_hit(conn, word, &c.answer).is_some();
        assert_eq!(a, b, "FTS5 and the process's index agree on {word}");
        a
    };
    assert!(found(&conn, "tahoe"));

    lifecycle::edit(&mut conn, &c.named, "Ben: We drove up to the Sierra mountains with the kids.", "user", now())
        .unwrap();
    assert!(!found(&conn, "tahoe"), "the neighbour's old word no longer matches");
    assert!(found(&conn, "sierra"), "its new word does");
    assert_eq!(lexical_hit(&conn, "sierra", &c.answer).unwrap().context_matches[0].neighbour, c.named);

    lifecycle::soft_delete(&mut conn, &c.named, Some("wrong"), "user", now()).unwrap();
    assert!(!found(&conn, "sierra"), "a quarantined neighbour lends nothing");
    assert!(context_rows(&conn, "sierra").is_empty());
    // Its place goes to the next memory of the session: Ana's question is now before the answer.
    let e = lexical_hit(&conn, "weekend", &c.answer).expect("the turn before the quarantined one");
    assert_eq!(e.context_matches[0].neighbour, c.asked);

    lifecycle::restore(&mut conn, &c.named, "user", now()).unwrap();
    assert!(found(&conn, "sierra"), "restored, it is a neighbour again");
    assert!(lexical_hit(&conn, "weekend", &c.answer).is_none(), "and the turn before it is not");

    lifecycle::hard_delete(&mut conn, &c.named, true, Some("asked"), "user", now()).unwrap();
    assert!(!found(&conn, "sierra"), "a hard-deleted neighbour lends nothing");
    for word in ["sierra", "mountains"] {
        let e = recall::explain(&conn, &ask(word), now(), 10).unwrap();
        assert!(
            e.results.iter().all(|r| r.hit.breakdown.lexical == 0.0 && r.context_matches.is_empty()),
            "no text match through the erased text of {word} (only the model's guesses): {e:?}"
        );
    }
    assert!(context_rows(&conn, "sierra").is_empty() && context_rows(&conn, "mountains").is_empty());
    if conn.is_postgres() {
        // As the owner, who sees every row: no row of any table, no tsvector, no lexeme.
        for table in backend::tables(&conn).unwrap() {
            let sql = format!("SELECT COUNT(*) FROM \"{table}\" t WHERE strpos(lower(t::TEXT), 'sierra') > 0");
            let n: i64 = conn.query_row(&sql, [], |r| r.get(0)).unwrap();
            assert_eq!(n, 0, "no row of {table} holds the erased neighbour's text");
        }
        let lexemes: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM memory_item, unnest(COALESCE(lethe_fts, ''::tsvector) \
                 || COALESCE(lethe_context, ''::tsvector)) AS u WHERE u.lexeme IN ('sierra', 'mountain')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(lexemes, 0, "no lexeme of it in any memory's full-text column or context");
    } else {
        store::checkpoint_truncate(&conn).unwrap();
        for suffix in ["", "-wal", "-shm"] {
            let bytes = std::fs::read(format!("{}{suffix}", path.display())).unwrap_or_default();
            let held = bytes.windows(6).any(|w| w.eq_ignore_ascii_case(b"sierra"));
            assert!(!held, "no byte of the erased neighbour in {suffix:?}");
        }
    }
}

/// A memory in quarantine keeps a recall document of its own, and its context names its live
/// neighbours: when one of them is deleted for ever, that context loses its text too.
/// (A file's triggers re-index only the deleted memory's live neighbours, so a file keeps the
/// text in the quarantined memory's index row: this checks the team store, where the
/// trigger also re-indexes the memories in quarantine between them.)
#[test]
fn a_memory_in_quarantine_keeps_nothing_of_a_neighbour_deleted_for_ever() {
    let db = temp_db();
    let mut conn = backend::open(&db).unwrap();
    let c = chat(&mut conn);
    lifecycle::soft_delete(&mut conn, &c.answer, Some("wrong"), "user", now()).unwrap();
    assert!(context_rows(&conn, "tahoe").contains(&c.answer), "in quarantine, its own context still names Tahoe");
    lifecycle::hard_delete(&mut conn, &c.named, true, Some("asked"), "user", now()).unwrap();
    assert!(context_rows(&conn, "tahoe").is_empty(), "nobody's context holds the erased text");
    // The index's own rows: no stored text or lexeme of the erased memory is left.
    let left_sql = if conn.is_postgres() {
        "SELECT COUNT(*) FROM memory_item WHERE strpos(lethe_fts::TEXT || COALESCE(lethe_context::TEXT, ''), 'taho') > 0"
    } else {
        "SELECT COUNT(*) FROM lethe_fts WHERE instr(lower(COALESCE(content, '') || COALESCE(context, '')), 'taho') > 0"
    };
    let left: i64 = conn.query_row(left_sql, [], |r| r.get(0)).unwrap();
    assert_eq!(left, 0);
    // The quarantined memory's context is now its live neighbours: Ana's question and reply.
    let weekend = context_rows(&conn, "weekend");
    assert!(weekend.contains(&c.answer), "{weekend:?}");
}
