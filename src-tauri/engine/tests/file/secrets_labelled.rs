//! The detector on a labelled set (tests/fixtures/secrets-labelled.jsonl): secrets and
//! personal data written the ways people write them — disguised with invisible, full-width or
//! look-alike characters, percent-encoded, split in groups, in words — and ordinary developer
//! text with ids, hashes, versions, paths, order numbers and error codes. Each positive line
//! names the value that must be gone once both settings redact; each ordinary line must give
//! no span at all. Prints caught / false alarms per class
//! (`cargo test -p lethe-engine --test file secrets_labelled:: -- --nocapture`) and fails below 95 %
//! caught or above 2 % false alarms in any class.

use std::collections::BTreeMap;

use lethe_engine::redact::{self, Guard, PiiMode, Policy, SecretsMode};
use serde_json::Value;

const SET: &str = include_str!("../fixtures/secrets-labelled.jsonl");

#[derive(Default)]
struct Tally {
    n: usize,
    hits: usize,
    examples: Vec<String>,
}

#[test]
fn labelled_set_caught_and_false_alarms_per_class() {
    let mut positive: BTreeMap<String, Tally> = BTreeMap::new();
    let mut negative: BTreeMap<String, Tally> = BTreeMap::new();
    for (no, line) in SET.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let row: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}", no + 1));
        let class = row["class"].as_str().unwrap().to_string();
        let text = row["text"].as_str().unwrap();
        match row["label"].as_str().unwrap() {
            "positive" => {
                let value = row["value"].as_str().unwrap();
                assert!(!value.is_empty() && text.contains(value), "line {}: the value is in the text", no + 1);
                let mut g = Guard::new(Policy { secrets: SecretsMode::Redact, pii: PiiMode::Redact });
                let out = g.text("content", text).unwrap();
                let t = positive.entry(class).or_default();
                t.n += 1;
                if !out.contains(value) && out.contains("[REDACTED:") {
                    t.hits += 1;
                } else {
                    t.examples.push(format!("{text:?} -> {out:?}"));
                }
            }
            "negative" => {
                let spans = redact::find(text);
                let t = negative.entry(class).or_default();
                t.n += 1;
                if !spans.is_empty() {
                    t.hits += 1;
                    let kinds: Vec<String> =
                        spans.iter().map(|s| format!("{} {:?}", s.kind, &text[s.start..s.end])).collect();
                    t.examples.push(format!("{text:?}: {kinds:?}"));
                }
            }
            other => panic!("line {}: label {other:?}", no + 1),
        }
    }
    println!("| class | lines | caught | rate |");
    println!("|---|---:|---:|---:|");
    let mut failures = Vec::new();
    for (class, t) in &positive {
        let rate = t.hits as f64 / t.n as f64;
        println!("| {class} | {} | {} | {:.1} % |", t.n, t.hits, rate * 100.0);
        if rate < 0.95 {
            failures.push(format!("{class}: {:.1} % caught; missed {:#?}", rate * 100.0, t.examples));
        }
    }
    println!("| class | lines | false alarms | rate |");
    println!("|---|---:|---:|---:|");
    for (class, t) in &negative {
        let rate = t.hits as f64 / t.n as f64;
        println!("| {class} | {} | {} | {:.1} % |", t.n, t.hits, rate * 100.0);
        if rate > 0.02 {
            failures.push(format!("{class}: {:.1} % false alarms: {:#?}", rate * 100.0, t.examples));
        }
    }
    let (pn, ph): (usize, usize) = positive.values().fold((0, 0), |a, t| (a.0 + t.n, a.1 + t.hits));
    let (nn, nh): (usize, usize) = negative.values().fold((0, 0), |a, t| (a.0 + t.n, a.1 + t.hits));
    println!("all: {ph}/{pn} caught, {nh}/{nn} false alarms");
    assert!(positive.len() >= 10 && pn >= 150, "the set covers the classes ({} classes, {pn} lines)", positive.len());
    assert!(nn >= 100, "and enough ordinary text ({nn} lines)");
    assert!(failures.is_empty(), "{failures:#?}");
}
