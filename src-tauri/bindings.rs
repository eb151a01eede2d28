//! `ui/src/bindings.ts`: the TypeScript declarations of every type the window receives or
//! sends, generated from the Rust types themselves (the shell's DTOs here and the engine
//! types they expose, which derive `ts_rs::TS` behind lethe-engine's `ts` feature).
//!
//! The file is committed so the UI builds without Rust. The test below fails when it is not
//! exactly what the Rust code generates; `make types` (the same test with
//! `LETHE_WRITE_TYPES=1`) rewrites it.

use std::any::TypeId;
use std::collections::{BTreeMap, BTreeSet, HashSet};

use lethe_engine::{audit, chart, forgetting, lifecycle, model, procedural, settings};
use ts_rs::{Config, TypeVisitor, TS};

use crate::commands::{DbInfo, Items, ListArgs, ProcedurePatchArgs, RecallExplainArgs, RecallLogPage, SimilarMemory};
use crate::error::ApiError;
use crate::events::{DbChanged, DbStatus, ForgetProgress, ScoringProgress, VectorsProgress};

const FILE: &str = "ui/src/bindings.ts";
const REGENERATE: &str = "make types   (= LETHE_WRITE_TYPES=1 cargo test -p lethe-app --lib bindings)";

/// The declarations, each type once, in name order, after a header saying where they come from.
fn render() -> String {
    // 64-bit integers (ids, versions, counts) are JSON numbers far below 2^53, not bigints.
    let cfg = Config::new().with_large_int("number");
    let mut out = Declarations { cfg: &cfg, decls: BTreeMap::new(), visited: HashSet::new() };
    // What the commands return (docs/IPC.md lists which returns what) ...
    out.add::<DbInfo>();
    out.add::<crate::state::Notice>();
    out.add::<forgetting::Stats>();
    out.add::<lifecycle::Page>();
    out.add::<lethe_engine::recall::Answer>();
    out.add::<lethe_engine::recall::ExplainAnswer>();
    out.add::<RecallLogPage>();
    out.add::<Items<SimilarMemory>>();
    out.add::<lethe_engine::duplicates::Clusters>();
    out.add::<lethe_engine::duplicates::Dismissal>();
    out.add::<lethe_engine::duplicates::Superseded>();
    out.add::<lethe_engine::health::Health>();
    out.add::<Items<lethe_engine::pins::RefusedAttempt>>();
    out.add::<lethe_engine::MemoryDetail>();
    out.add::<audit::ForgettingEvent>();
    out.add::<lethe_engine::quarantine_view::QuarantineView>();
    out.add::<procedural::ProcedurePage>();
    out.add::<Items<audit::AuditEvent>>();
    out.add::<Items<lethe_engine::MemoryDetail>>();
    out.add::<Items<procedural::Version>>();
    out.add::<lethe_engine::session::SessionsOverview>();
    out.add::<forgetting::BatchReport>();
    out.add::<lethe_engine::runs::UndoReport>();
    out.add::<settings::Settings>();
    out.add::<forgetting::WhatIf>();
    out.add::<lethe_engine::demo::DemoCounts>();
    out.add::<crate::connect::About>();
    out.add::<crate::connect::ConnectInfo>();
    out.add::<crate::connect::ConnectionTest>();
    out.add::<ApiError>();
    // ... what they take ...
    out.add::<ListArgs>();
    out.add::<ProcedurePatchArgs>();
    out.add::<lethe_engine::quarantine_view::QuarantineQuery>();
    out.add::<procedural::ProcedureQuery>();
    out.add::<RecallExplainArgs>();
    out.add::<settings::RecallWeights>();
    out.add::<chart::Theme>();
    // ... the payloads of the events ...
    out.add::<DbChanged>();
    out.add::<DbStatus>();
    out.add::<ForgetProgress>();
    out.add::<VectorsProgress>();
    out.add::<ScoringProgress>();
    // ... and the reflection notes inside a procedure's `reflection_notes` JSON column.
    out.add::<model::ReflectionNote>();

    let mut text = format!(
        "// Generated from the Rust types by src-tauri/bindings.rs (ts-rs). Do not edit by hand.\n\
         // Regenerate: {REGENERATE}\n"
    );
    for decl in out.decls.values() {
        text.push('\n');
        text.push_str(decl);
        text.push('\n');
    }
    text
}

/// Collects `export type …` declarations of a type and, recursively, of the types it uses.
struct Declarations<'a> {
    cfg: &'a Config,
    decls: BTreeMap<String, String>,
    visited: HashSet<TypeId>,
}

impl Declarations<'_> {
    fn add<T: TS + ?Sized + 'static>(&mut self) {
        // Primitives and std containers have no declaration of their own.
        if T::output_path().is_none() || !self.visited.insert(TypeId::of::<T>()) {
            return;
        }
        let name = T::ident(self.cfg);
        let decl = format!("{}export {}", T::docs().unwrap_or_default(), T::decl(self.cfg));
        // A generic type is declared once, whatever it is instantiated with.
        let seen = self.decls.entry(name.clone()).or_insert_with(|| decl.clone());
        assert_eq!(
            seen, &decl,
            "two Rust types would both be the TypeScript type {name}; rename one with #[ts(rename)]"
        );
        T::visit_dependencies(self);
        T::visit_generics(self);
    }
}

impl TypeVisitor for Declarations<'_> {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        self.add::<T>();
    }
}

/// The drift check: `make test` runs it through `cargo test --workspace`.
#[test]
fn ui_bindings_are_generated_from_the_rust_types() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(FILE);
    let generated = render();
    if std::env::var("LETHE_WRITE_TYPES").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &generated).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default().replace("\r\n", "\n");
    let first_difference = committed
        .lines()
        .zip(generated.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
    assert!(
        committed == generated,
        "{FILE} differs from what the Rust types generate (from line {}: committed {:?}, generated {:?}).\n\
         The window's contract changed in Rust; regenerate the file and commit it:\n    {REGENERATE}",
        first_difference + 1,
        committed.lines().nth(first_difference).unwrap_or("<end of file>"),
        generated.lines().nth(first_difference).unwrap_or("<end of file>"),
    );
}

/// The keys a declaration lists at its top level: (required, optional `key?:`).
fn declared_keys(decl: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut text = decl.to_string();
    while let Some(start) = text.find("/**") {
        let end = text[start..].find("*/").map_or(text.len(), |e| start + e + 2);
        text.replace_range(start..end, "");
    }
    let body = &text[text.find("= {").expect("an object type") + 3..];
    let (mut required, mut optional) = (BTreeSet::new(), BTreeSet::new());
    let (mut depth, mut segment) = (0usize, String::new());
    for c in body.chars() {
        match c {
            '{' | '[' | '(' | '<' => depth += 1,
            '}' | ']' | ')' | '>' if depth == 0 => break,
            '}' | ']' | ')' | '>' => depth -= 1,
            ',' if depth == 0 => {
                let key = segment.split(':').next().unwrap_or_default().trim().to_string();
                match key.strip_suffix('?') {
                    Some(k) => optional.insert(k.to_string()),
                    None => required.insert(key),
                };
                segment.clear();
                continue;
            }
            _ => {}
        }
        segment.push(c);
    }
    (required, optional)
}

/// ts-rs reads the serde attributes (`flatten`, `rename`, `skip_serializing_if`); this pins
/// that what it declares is what serde really emits, on a database with demo data.
#[test]
fn declared_keys_are_the_keys_serde_emits() {
    fn check<T: TS + serde::Serialize>(value: &T) {
        let cfg = Config::new().with_large_int("number");
        let (required, optional) = declared_keys(&T::decl(&cfg));
        let json = serde_json::to_value(value).expect("serialisable");
        let keys: BTreeSet<String> = json.as_object().expect("an object").keys().cloned().collect();
        let name = T::ident(&cfg);
        let missing: Vec<_> = required.difference(&keys).collect();
        assert!(missing.is_empty(), "{name} declares {missing:?}, which serde does not emit");
        let undeclared: Vec<_> = keys.iter().filter(|k| !required.contains(*k) && !optional.contains(*k)).collect();
        assert!(undeclared.is_empty(), "serde emits {undeclared:?} in {name}, which bindings.ts does not declare");
    }
    let now = lethe_engine::time::parse("2025-06-01T00:00:00Z").unwrap();
    let mut conn = lethe_engine::store::open_in_memory().unwrap();
    check(&lethe_engine::demo::load(&mut conn, 7, 60, now).unwrap());
    let s = settings::Settings::load(&conn).unwrap();
    check(&s);
    let snap = forgetting::Snapshot::load(&conn).unwrap();
    check(&forgetting::stats(&conn, &snap, &s, now).unwrap());
    let page =
        forgetting::list(&conn, &snap, &lifecycle::ListQuery { limit: 5, ..Default::default() }, &s, now).unwrap();
    check(&page);
    check(&page.items[0]);
    let procedure: String = conn
        .query_row(
            "SELECT id FROM memory_item WHERE type = 'procedural' AND reflection_notes IS NOT NULL LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let detail = lethe_engine::detail(&conn, &procedure, now, None).unwrap();
    check(&detail);
    check(&detail.meta);
    let notes: Vec<model::ReflectionNote> =
        serde_json::from_value(detail.memory.reflection_notes.clone().unwrap()).unwrap();
    check(&notes[0]);
    let versions = procedural::history(&conn, &procedure).unwrap();
    check(&versions[0]);
    let events = audit::list_events(&conn, &audit::EventFilter { limit: 5, ..Default::default() }).unwrap();
    check(&events[0]);
    let quarantined = forgetting::quarantine(&conn, &s, now).unwrap();
    check(&quarantined[0]);
    let view = lethe_engine::quarantine_view::view(
        &conn,
        &s,
        now,
        &lethe_engine::quarantine_view::QuarantineQuery { limit: Some(1), all_ids: Some(true), ..Default::default() },
    )
    .unwrap();
    check(&view);
    check(&view.deleted_by[0]);
    let procedures =
        procedural::page(&conn, &procedural::ProcedureQuery { limit: Some(1), ..Default::default() }).unwrap();
    check(&procedures);
    check(&procedures.groups[0]);
    check(&forgetting::what_if(&snap, &s, &s, now).unwrap());
    let query = lethe_engine::recall::RecallQuery { text: "the".into(), limit: 3, ..Default::default() };
    let hits = lethe_engine::recall::recall(&conn, &query, now).unwrap();
    check(&hits[0]);
    check(&hits[0].breakdown);
    check(&ApiError::invalid("x"));
    check(&DbChanged { data_version: 1, ids: None });
}
