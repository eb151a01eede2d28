//! Rules of the source tree that no compiler checks, kept true by reading the files.
//!
//! - **The engine's layers point down.** `lethe-engine`'s folders are its layers (see its crate
//!   documentation): a module may use its own layer and those below, never one above. The
//!   crate-root aliases (`crate::store`, `crate::lifecycle`, …) are resolved to the layer they
//!   name. Edges that break the rule today are listed in [`KNOWN_UPWARD`]; the list may only
//!   shrink: an edge that is gone must leave the list too, so the test fails until it does.
//! - **The engine's public items are documented.** `lethe-engine` warns on a public item
//!   without documentation, and clippy denies warnings; the files that still opt out
//!   (`#![allow(missing_docs)]`) are listed in [`UNDOCUMENTED`], a list that may only shrink.
//! - **The code speaks of the product.** Source, docs and build files carry no pointers to how
//!   the code was made (issue numbers, work sessions, sections of a spec the repository does not
//!   hold). The reasons those pointers stood for belong in the sentence itself.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The repository's root (this crate lives in `src-tauri/testkit`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
}

/// Every file under `dir` (recursively) whose name ends with one of `exts`, skipping build
/// output and installed packages.
fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !matches!(name.as_str(), "target" | "node_modules" | "dist" | "gen" | ".git" | "fixtures") {
                files(&path, exts, out);
            }
        } else if exts.iter().any(|e| name.ends_with(e)) {
            out.push(path);
        }
    }
}

/// The layer of an engine module, by the first segment of its path below `src/` (or of a
/// `crate::` path). Higher numbers are higher floors.
fn layer(module: &str) -> Option<u8> {
    Some(match module {
        "error" | "time" | "model" | "actor" => 0,
        "storage" | "store" | "watch" => 1,
        "similarity" | "dedup" | "embed" | "lexical" | "neighbours" | "sameness" | "semantic" => 2,
        "policy" | "decay" | "dialogue" | "forgetting" | "redact" | "settings" | "Settings" => 3,
        "ops" | "archive" | "audit" | "duplicates" | "group_commit" | "health" | "lifecycle" | "meta"
        | "procedural" | "recall" | "recall_log" | "scan" | "session" => 4,
        "io" | "demo" | "push" | "transfer" | "chart" => 5,
        // The crate root: the memory detail built from every layer.
        "MemoryDetail" | "detail" => 6,
        _ => return None,
    })
}

const LAYER_NAMES: [&str; 7] = ["foundation", "storage", "similarity", "policy", "ops", "io", "root"];

/// Upward edges that exist today, as "file (below engine/src) -> module it names". Remove an
/// entry when the edge is gone; never add one.
const KNOWN_UPWARD: &[&str] = &[
    "model.rs -> storage",
    "policy/forgetting/mod.rs -> audit",
    "policy/forgetting/mod.rs -> duplicates",
    "policy/forgetting/mod.rs -> ops",
    "policy/forgetting/mod.rs -> session",
    "policy/forgetting/projection.rs -> meta",
    "policy/forgetting/projection.rs -> scan",
    "policy/settings.rs -> audit",
    "similarity/lexical.rs -> recall",
    "similarity/lexical.rs -> session",
    "similarity/neighbours.rs -> forgetting",
    "similarity/semantic.rs -> recall",
    "storage/postgres.rs -> embed",
    // In its tests only.
    "storage/watch.rs -> lifecycle",
];

/// The first segments of every `crate::…` path in `code` (comments left out), including each
/// top-level name of a `crate::{a, b::c}` group.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    // Comments left out; a `use` group may run over several lines, so the rest is one text.
    let code: String = code.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        // `lethe_engine::` or `other_crate::` end in "crate::" too only if preceded by a word
        // character; `crate::` itself stands alone.
        let before = rest[..at].chars().last();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut name = String::new();
            let mut at_start = true;
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => at_start = true,
                    c if depth == 1 && at_start && (c.is_alphanumeric() || c == '_') => name.push(c),
                    _ if depth == 1 && !name.is_empty() => {
                        out.insert(std::mem::take(&mut name));
                        at_start = false;
                    }
                    _ => {}
                }
            }
            if !name.is_empty() {
                out.insert(name);
            }
        } else {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn the_engines_modules_use_only_their_own_layer_and_those_below() {
    let src = root().join("src-tauri/engine/src");
    let mut all = Vec::new();
    files(&src, &[".rs"], &mut all);
    assert!(all.len() > 20, "the engine's sources were not found under {}", src.display());
    let mut found = BTreeSet::new();
    for path in &all {
        let rel = path.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        let first = rel.split('/').next().unwrap().trim_end_matches(".rs");
        let own = if rel == "lib.rs" { 6 } else { layer(first).unwrap_or_else(|| panic!("{rel}: no layer")) };
        let code = fs::read_to_string(path).unwrap();
        for module in crate_paths(&code) {
            if let Some(theirs) = layer(&module) {
                if theirs > own {
                    found.insert(format!("{rel} -> {module}"));
                }
            }
        }
    }
    let known: BTreeSet<String> = KNOWN_UPWARD.iter().map(|s| s.to_string()).collect();
    let new: Vec<_> = found.difference(&known).collect();
    let gone: Vec<_> = known.difference(&found).collect();
    assert!(
        new.is_empty(),
        "modules that use a layer above their own (move the item down, or the caller up): {new:#?}\nlayers, bottom up: {LAYER_NAMES:?}"
    );
    assert!(gone.is_empty(), "these upward edges are gone: take them out of KNOWN_UPWARD: {gone:#?}");
}

/// Engine files whose public items are not all documented yet (they opt out of the engine's
/// `missing_docs` warning). A file documented whole leaves the list and its opt-out.
const UNDOCUMENTED: &[&str] = &[
    "chart.rs",
    "io/demo.rs",
    "io/push.rs",
    "io/transfer.rs",
    "ops/answers.rs",
    "ops/archive.rs",
    "ops/audit.rs",
    "ops/duplicates.rs",
    "ops/group_commit.rs",
    "ops/health.rs",
    "ops/lifecycle.rs",
    "ops/meta.rs",
    "ops/period.rs",
    "ops/pins.rs",
    "ops/procedural.rs",
    "ops/quarantine_view.rs",
    "ops/recall.rs",
    "ops/recall_log.rs",
    "ops/runs.rs",
    "ops/scan.rs",
    "ops/session.rs",
    "ops/validate.rs",
    "policy/dialogue.rs",
    "policy/forgetting/batch.rs",
    "policy/forgetting/mod.rs",
    "policy/forgetting/projection.rs",
    "policy/redact.rs",
    "similarity/dedup.rs",
    "similarity/embed.rs",
    "similarity/lexical.rs",
    "similarity/neighbours.rs",
    "similarity/sameness.rs",
    "similarity/semantic.rs",
    "storage/db.rs",
    "storage/postgres.rs",
    "storage/sqlite.rs",
    "storage/watch.rs",
];

#[test]
fn the_engines_public_items_are_documented_but_for_a_shrinking_list_of_files() {
    let src = root().join("src-tauri/engine/src");
    let lib = fs::read_to_string(src.join("lib.rs")).unwrap();
    assert!(lib.contains("#![warn(missing_docs)]"), "lethe-engine warns on public items without documentation");
    let mut all = Vec::new();
    files(&src, &[".rs"], &mut all);
    let opted_out: BTreeSet<String> = all
        .iter()
        .filter(|p| fs::read_to_string(p).unwrap().lines().any(|l| l.starts_with("#![allow(missing_docs)]")))
        .map(|p| p.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/"))
        .collect();
    let listed: BTreeSet<String> = UNDOCUMENTED.iter().map(|s| s.to_string()).collect();
    let new: Vec<_> = opted_out.difference(&listed).collect();
    let gone: Vec<_> = listed.difference(&opted_out).collect();
    assert!(new.is_empty(), "document the public items instead of opting out of missing_docs: {new:#?}");
    assert!(gone.is_empty(), "these files are documented now: take them out of UNDOCUMENTED: {gone:#?}");
}

#[test]
fn the_code_and_docs_speak_of_the_product_not_of_how_it_was_made() {
    let root = root();
    let mut all = Vec::new();
    for dir in ["src-tauri", "ui/src", "ui/tests", "tests", "docs"] {
        files(
            &root.join(dir),
            &[".rs", ".sql", ".toml", ".ts", ".svelte", ".mjs", ".js", ".sh", ".md", ".json"],
            &mut all,
        );
    }
    for file in
        ["Cargo.toml", "Makefile", "README.md", "ARCHITECTURE.md", "RELIABILITY.md", "BENCHMARKS.md", "tauri.conf.json"]
    {
        all.push(root.join(file));
    }
    // Words that point at the making of the code, not at the product.
    // (Each is spelt in two parts so that a search of the tree for them does not find this line.)
    let pointers = [
        concat!("issue", " #"),
        concat!("issues", " #"),
        concat!("DESIGN", " §"),
        concat!("stop", " 43"),
        concat!("../", "shared/"),
        concat!("/work", "/shared"),
    ];
    let numbered = [concat!("session", " "), concat!("Session", " "), concat!("seed", " 00"), concat!("Seed", " 00")];
    let mut hits = Vec::new();
    for path in &all {
        let Ok(text) = fs::read_to_string(path) else { continue };
        let rel = path.strip_prefix(&root).unwrap_or(path).display().to_string();
        if rel.ends_with("tidy.rs") {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            let numbered_hit = numbered.iter().any(|w| {
                line.match_indices(w).any(|(at, _)| line[at + w.len()..].starts_with(|c: char| c.is_ascii_digit()))
            });
            if numbered_hit || pointers.iter().any(|p| line.contains(p)) {
                hits.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(hits.is_empty(), "pointers to how the code was made (say the reason instead):\n{}", hits.join("\n"));
}

/// The first cycle in a graph of `node -> what it imports`, if any.
fn a_cycle(graph: &std::collections::BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &std::collections::BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == n) {
            let mut cycle = path[at..].to_vec();
            cycle.push(n.to_string());
            return Some(cycle);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for next in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_two_modules_import_each_other_in_the_cli_and_the_window() {
    let root = root();
    // The CLI: its top-level modules and the `crate::` paths between them.
    let src = root.join("src-tauri/cli/src");
    let mut all = Vec::new();
    files(&src, &[".rs"], &mut all);
    let mut graph = std::collections::BTreeMap::new();
    for path in &all {
        let rel = path.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        let module = rel.split('/').next().unwrap().trim_end_matches(".rs").to_string();
        let uses = crate_paths(&fs::read_to_string(path).unwrap());
        let entry: &mut BTreeSet<String> = graph.entry(module.clone()).or_default();
        entry.extend(uses.into_iter().filter(|u| *u != module));
    }
    assert_eq!(a_cycle(&graph), None, "CLI modules that import each other");

    // The window: relative imports between its TypeScript and Svelte files.
    let ui = root.join("ui/src");
    let mut all = Vec::new();
    files(&ui, &[".ts", ".svelte"], &mut all);
    let mut graph = std::collections::BTreeMap::new();
    for path in &all {
        let text = fs::read_to_string(path).unwrap();
        let from = path.strip_prefix(&ui).unwrap().to_string_lossy().to_string();
        let dir = path.parent().unwrap();
        let mut to = BTreeSet::new();
        for line in text.lines().map(str::trim_start).filter(|l| l.starts_with("import ")) {
            let Some(spec) = line.rsplit(['\'', '"']).nth(1) else { continue };
            if !spec.starts_with('.') || line.starts_with("import type") {
                continue;
            }
            for ext in ["", ".ts", ".svelte.ts"] {
                let p = dir.join(format!("{spec}{ext}"));
                if p.is_file() {
                    if let Ok(p) = p.canonicalize() {
                        to.insert(p.strip_prefix(ui.canonicalize().unwrap()).unwrap().to_string_lossy().to_string());
                    }
                    break;
                }
            }
        }
        graph.insert(from, to);
    }
    assert!(graph.len() > 10, "the window's sources were not found");
    assert_eq!(a_cycle(&graph), None, "window modules that import each other");
}

#[test]
fn crate_paths_reads_single_paths_and_groups() {
    let code = "use crate::error::Result;\nuse crate::{\n    ops::recall::Facts,\n    storage::{db, sqlite},\n};\n// crate::io is a comment\nlet x = lethe_engine::io::demo;\n";
    let got: Vec<_> = crate_paths(code).into_iter().collect();
    assert_eq!(got, ["error", "ops", "storage"]);
}
