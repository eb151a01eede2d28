//! Function words out of the lexical query, and a query made only of them. A file's FTS5
//! table indexes every word; the team store's English configuration drops these words from
//! its index itself, so this suite is the file's.

use crate::support::{now, temp_db};
use lethe_engine::lifecycle::{self, NewMemory, RememberOutcome};
use lethe_engine::recall::{self, RecallQuery};
use lethe_engine::settings::RecallWeights;
use lethe_engine::{store, Tier};

#[test]
fn a_query_made_only_of_function_words_keeps_them() {
    let db = temp_db();
    let mut conn = store::open(&db).unwrap();
    let id = match lifecycle::remember(&mut conn, &NewMemory::new(Tier::Episodic, "to be or not to be"), "user", now())
        .unwrap()
    {
        RememberOutcome::Stored { id, .. } => id,
        other => panic!("not stored: {other:?}"),
    };
    assert_eq!(recall::searched_words("To be, or not to be?"), vec!["to", "be", "or", "not"]);
    let hits = recall::recall(
        &conn,
        &RecallQuery {
            text: "to be or not to be".into(),
            limit: 10,
            weights: Some(RecallWeights { similarity: 1.0, recency: 0.0, scene: 0.0, priority: 0.0 }),
            ..Default::default()
        },
        now(),
    )
    .unwrap();
    assert_eq!(hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), vec![id.as_str()]);
    assert_eq!(recall::searched_words("What did the deploy do?"), vec!["deploy"]);
    assert!(recall::FUNCTION_WORDS.windows(2).all(|w| w[0] < w[1]), "sorted and distinct, for the binary search");
}
