//! The JSON Schemas of `lethe mcp`'s tools. Input schemas are generated from the argument
//! types (standard JSON Schema 2020-12: no `nullable`, no integer `format`, subschemas
//! inlined, `additionalProperties: false`) and the same schema checks the ranges of a call,
//! so what a model reads is what the server enforces. Output schemas describe the engine's
//! JSON as it is serialised: generated from the engine's answer type where the tool returns
//! one ([`output`]), so that a field added to the type is in the schema; the others are
//! written here. The tests validate every result against them (ajv, Python's jsonschema).

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, RwLock};

use rmcp::model::JsonObject;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Value};

static INPUTS: LazyLock<RwLock<HashMap<TypeId, Arc<JsonObject>>>> = LazyLock::new(Default::default);

/// The input schema of an argument type, generated once.
pub fn input<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    if let Some(s) = INPUTS.read().unwrap_or_else(|e| e.into_inner()).get(&TypeId::of::<T>()) {
        return Arc::clone(s);
    }
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let mut v = serde_json::to_value(settings.into_generator().into_root_schema_for::<T>())
        .expect("a generated schema serialises");
    normalize(&mut v);
    let Value::Object(mut o) = v else { unreachable!("a struct's schema is an object") };
    o.remove("title");
    o.remove("description");
    o.entry("properties").or_insert_with(|| json!({}));
    let s = Arc::new(o);
    INPUTS.write().unwrap_or_else(|e| e.into_inner()).insert(TypeId::of::<T>(), Arc::clone(&s));
    s
}

static OUTPUTS: LazyLock<RwLock<HashMap<TypeId, Arc<JsonObject>>>> = LazyLock::new(Default::default);

/// The output schema of an engine answer type, generated once from the type as it is
/// serialised (a field that is left out when empty is not required; an optional value may be
/// `null`, as the engine writes it).
pub fn output<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    if let Some(s) = OUTPUTS.read().unwrap_or_else(|e| e.into_inner()).get(&TypeId::of::<T>()) {
        return Arc::clone(s);
    }
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    settings.contract = schemars::generate::Contract::Serialize;
    let mut v = serde_json::to_value(settings.into_generator().into_root_schema_for::<T>())
        .expect("a generated schema serialises");
    drop_formats(&mut v);
    let Value::Object(mut o) = v else { unreachable!("an answer's schema is an object") };
    o.remove("title");
    let s = Arc::new(o);
    OUTPUTS.write().unwrap_or_else(|e| e.into_inner()).insert(TypeId::of::<T>(), Arc::clone(&s));
    s
}

/// schemars marks Rust integer and float widths (`format: uint`, `double`), which are not
/// formats of JSON Schema.
fn drop_formats(v: &mut Value) {
    match v {
        Value::Object(o) => {
            if o.get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| f.starts_with("int") || f.starts_with("uint") || f == "double" || f == "float")
            {
                o.remove("format");
            }
            o.values_mut().for_each(drop_formats);
        }
        Value::Array(a) => a.iter_mut().for_each(drop_formats),
        _ => {}
    }
}

/// Two simplifications for a model's reading: schemars marks Rust integer and float widths
/// (`format: uint32`, `double`), not formats of JSON Schema; and it lets an optional field be
/// `null` (`type: [T, "null"]`, `anyOf: [T, null]`), where leaving the field out says the
/// same (serde still accepts a null).
fn normalize(v: &mut Value) {
    match v {
        Value::Object(o) => {
            if let Some(Value::Array(types)) = o.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types[0].clone();
                    o.insert("type".into(), only);
                }
            }
            if let Some(Value::Array(values)) = o.get_mut("enum") {
                values.retain(|x| !x.is_null());
            }
            if let Some(Value::Array(alts)) = o.get("anyOf") {
                let rest: Vec<Value> = alts.iter().filter(|a| **a != json!({"type": "null"})).cloned().collect();
                if rest.len() == 1 {
                    o.remove("anyOf");
                    if let Value::Object(inner) = &rest[0] {
                        for (k, x) in inner {
                            o.entry(k.clone()).or_insert_with(|| x.clone());
                        }
                    }
                }
            }
            if o.get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| f.starts_with("int") || f.starts_with("uint") || f == "double" || f == "float")
            {
                o.remove("format");
            }
            o.values_mut().for_each(normalize);
        }
        Value::Array(a) => a.iter_mut().for_each(normalize),
        _ => {}
    }
}

/// The first top-level argument outside its property's `minimum`/`maximum`, as a message.
pub fn out_of_range(args: &JsonObject, schema: &JsonObject) -> Option<String> {
    let props = schema.get("properties")?.as_object()?;
    for (k, v) in args {
        let (Some(n), Some(p)) = (v.as_f64(), props.get(k)) else { continue };
        let min = p.get("minimum").and_then(Value::as_f64);
        let max = p.get("maximum").and_then(Value::as_f64);
        if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
            let range = match (min, max) {
                (Some(a), Some(b)) => format!("between {a} and {b}"),
                (Some(a), None) => format!("at least {a}"),
                (None, Some(b)) => format!("at most {b}"),
                (None, None) => unreachable!(),
            };
            return Some(format!("{k} must be {range}, got {v}"));
        }
    }
    None
}

fn t(ty: &str, d: &str) -> Value {
    json!({ "type": ty, "description": d })
}

fn maybe(ty: &str, d: &str) -> Value {
    json!({ "type": [ty, "null"], "description": d })
}

fn any(d: &str) -> Value {
    json!({ "description": d })
}

fn array(items: Value, d: &str) -> Value {
    json!({ "type": "array", "items": items, "description": d })
}

fn object(required: &[&str], props: Value) -> Value {
    json!({ "type": "object", "properties": props, "required": required })
}

fn tier() -> Value {
    json!({ "type": "string", "enum": ["working", "episodic", "semantic", "procedural"], "description": "the memory's tier" })
}

fn finding() -> Value {
    json!({ "type": "object", "description": "a span replaced by [REDACTED:<kind>] (never the value)" })
}

fn as_schema(v: Value) -> Arc<JsonObject> {
    let Value::Object(o) = v else { unreachable!("output schemas are objects") };
    Arc::new(o)
}

fn memory_props() -> serde_json::Map<String, Value> {
    let v = json!({
        "id": t("string", "mem_<uuid>"),
        "type": tier(),
        "content": t("string", "the text"),
        "importance": t("number", "0-1"),
        "privacy_scope": t("string", "private, team or public"),
        "created_at": t("string", "ISO-8601 UTC"),
        "last_accessed": maybe("string", "last view or cite"),
        "pinned": t("boolean", "pinned memories are never forgotten by the policy"),
        "tags": array(json!({"type": "string"}), "labels"),
        "source": maybe("string", "where it came from"),
        "view_count": t("integer", "views"),
        "cite_count": t("integer", "cites (an agent reported it helped)"),
        "edit_count": t("integer", "edits"),
        "task_goal": maybe("string", "procedural: what the procedure achieves"),
        "steps": any("procedural: the steps (array of strings)"),
        "reflection_notes": any("procedural: lessons from failures, oldest first"),
        "workflow_name": maybe("string", "procedural: workflow"),
        "skill_name": maybe("string", "procedural: skill"),
        "trigger_conditions": any("procedural: when it applies (object)"),
        "version": t("integer", "version, for compare-and-swap updates"),
        "owner_id": maybe("string", "who stored it"),
        "session_id": maybe("string", "session"),
        "project_id": maybe("string", "project"),
        "is_deleted": t("boolean", "in quarantine"),
        "deleted_at": maybe("string", "when it entered quarantine"),
    });
    let Value::Object(o) = v else { unreachable!() };
    o
}

const MEMORY_REQUIRED: &[&str] =
    &["id", "type", "content", "importance", "created_at", "pinned", "tags", "version", "is_deleted"];

fn meta_stats() -> Value {
    object(
        &["memory_id", "recall_count", "success_count", "failure_count"],
        json!({
            "memory_id": t("string", "the memory"),
            "recall_count": t("integer", "recall hits"),
            "success_count": t("integer", "hits with score >= 0.5"),
            "failure_count": t("integer", "hits with score < 0.5"),
            "avg_confidence": maybe("number", "mean score of the hits"),
            "last_recalled_at": maybe("string", "last hit"),
        }),
    )
}

/// A stored memory (restore_archive).
pub fn memory() -> Arc<JsonObject> {
    as_schema(json!({ "type": "object", "properties": memory_props(), "required": MEMORY_REQUIRED }))
}

/// A memory with its explained ForgetScore (get_memory, restore, pin, unpin).
pub fn detail() -> Arc<JsonObject> {
    let mut props = memory_props();
    let extra = json!({
        "supersedes": array(json!({"type": "string"}), "ids this memory replaced"),
        "superseded_by": array(json!({"type": "string"}), "ids that replaced this memory"),
        "archive_no": maybe("integer", "archive number while its content is archived"),
        "features": t("object", "recency, usage, duplication, importance, pinned"),
        "components": t("object", "signed contributions that sum to the score"),
        "forget_score": t("number", "ForgetScore"),
        "threshold": t("number", "forget at or above this"),
        "reasons": array(json!({"type": "string"}), "why the score is what it is"),
        "would_forget": t("boolean", "the next batch would forget it"),
        "never_forgettable": t("boolean", "the policy can never reach the threshold"),
        "asymptote": t("number", "the score it tends to if never used again"),
        "projected_forget_at": maybe("string", "when it would be forgotten"),
        "duplicate_of": maybe("string", "the memory it duplicates"),
        "duplicate_kind": maybe("string", "same words (a near-copy) or same meaning (a paraphrase)"),
        "never_forgettable_why": maybe("string", "why it can never be forgotten"),
        "meta": meta_stats(),
    });
    props.extend(extra.as_object().cloned().unwrap_or_default());
    let mut required = MEMORY_REQUIRED.to_vec();
    required.extend(["forget_score", "threshold", "reasons", "would_forget", "meta"]);
    as_schema(json!({ "type": "object", "properties": props, "required": required }))
}

fn similar_item() -> Value {
    let difference = object(
        &["what", "this", "other"],
        json!({
            "what": json!({ "type": "string", "enum": ["value", "polarity", "wording"], "description": "what sort of difference" }),
            "this": t("string", "what this memory says there (may be empty)"),
            "other": t("string", "what the neighbour says there (may be empty)"),
        }),
    );
    object(
        &["id", "similarity", "kind", "evidence"],
        json!({
            "id": t("string", "the neighbour"),
            "similarity": t("number", "closeness, 0-1"),
            "kind": json!({
                "type": "string",
                "enum": ["duplicate", "possible update", "related"],
                "description": "duplicate: the same memory (counts in duplication D); possible update: the same statement with another value (supersede the older if it changed); related: close in meaning or topic"
            }),
            "evidence": object(&["matching", "differing", "summary"], json!({
                "matching": array(json!({"type": "string"}), "values and words both hold"),
                "differing": array(difference, "what differs"),
                "summary": t("string", "both in one line of plain text"),
            })),
        }),
    )
}

pub fn remember() -> Arc<JsonObject> {
    as_schema(object(
        &["stored"],
        json!({
            "stored": t("boolean", "false: not stored, see reason"),
            "id": t("string", "the stored (or updated) memory"),
            "version": t("integer", "its version"),
            "similar": array(similar_item(), "closest memories already stored: supersede instead of piling up near-copies"),
            "redacted": array(finding(), "spans redacted before anything was written"),
            "pii_tags": array(json!({"type": "string"}), "pii:<kind> tags added"),
            "reason": t("string", "why it was not stored (trivial, duplicate)"),
            "existing_id": maybe("string", "the memory it duplicates"),
        }),
    ))
}

pub fn recall() -> Arc<JsonObject> {
    let hit = object(
        &["id", "type", "content", "score", "breakdown"],
        json!({
            "id": t("string", "the memory"),
            "type": tier(),
            "content": t("string", "its text"),
            "score": t("number", "the ranking score, 0-1"),
            "bm25": t("number", "raw BM25"),
            "task_goal": t("string", "a procedure's goal (its current version); absent for other tiers"),
            "steps": array(t("string", "a step"), "a procedure's steps in order (its current version); absent for other tiers"),
            "breakdown": object(&["similarity", "recency", "scene", "priority"], json!({
                "similarity": t("number", "S, from lexical and semantic"),
                "lexical": t("number", "stemmed BM25, relative"),
                "semantic": maybe("number", "cosine, relative; null without the model"),
                "cosine": maybe("number", "raw cosine"),
                "recency": t("number", "R"),
                "scene": t("number", "C, share of the context matched"),
                "priority": t("number", "Pr = importance + 0.2 pinned"),
            })),
            "matched_through": array(
                object(&["neighbour", "words", "said"], json!({
                    "neighbour": t("string", "the session neighbour whose text holds the words"),
                    "words": array(t("string", "a searched word"), "words the memory's own text does not hold"),
                    "said": t("string", "e.g. matched its neighbour mem_x: 'lake'"),
                })),
                "present when the memory matched query words only through a session neighbour's text (the memories of its session written just before and after it)"
            ),
        }),
    );
    as_schema(object(
        &["results"],
        json!({
            "results": array(hit, "best first"),
            "weak": array(t("boolean", "a weak match"), "per result, in order: its similarity is below half of the best result's"),
            "notice": t("string", "present when part of the query was not searched, saying what"),
            "searched_words": array(t("string", "a word"), "the words the lexical search looked for: function words (what, did, the, ...) are left out unless the query has no other word"),
            "recall_mode": t("string", "semantic + lexical, or lexical only"),
            "dropped_words": array(t("string", "a word"), "words not searched: the query had more than 64 distinct words"),
            "periods": array(
                object(&["said", "from", "until"], json!({
                    "said": t("string", "the query's words that name it"),
                    "from": t("string", "ISO-8601, inclusive"),
                    "until": t("string", "ISO-8601, exclusive"),
                })),
                "the periods the query names (absent when none): memories dated inside match the scene, and recency counts from the period"
            ),
        }),
    ))
}

pub fn similar() -> Arc<JsonObject> {
    as_schema(object(&["items"], json!({ "items": array(similar_item(), "nearest first") })))
}

pub fn event() -> Arc<JsonObject> {
    as_schema(object(
        &["id", "memory_id", "action", "created_at"],
        json!({
            "id": t("string", "the event"),
            "memory_id": t("string", "the memory"),
            "action": t("string", "soft or hard"),
            "reason": maybe("string", "why"),
            "policy": maybe("string", "the policy, for batch deletes"),
            "forget_score": maybe("number", "score at the time"),
            "ttl_days": maybe("integer", "quarantine days"),
            "created_at": t("string", "when"),
            "metadata": any("facts of the event"),
        }),
    ))
}

pub fn undo_run() -> Arc<JsonObject> {
    let item = object(
        &["id"],
        json!({
            "id": t("string", "the memory"),
            "preview": maybe("string", "its first words; null when it is gone for ever"),
            "reason": maybe("string", "why the run quarantined it"),
        }),
    );
    let list = |d: &str| array(item.clone(), d);
    as_schema(object(
        &["run_id", "restored", "already_restored", "quarantined_again", "deleted_for_ever"],
        json!({
            "run_id": t("string", "the run"),
            "restored": list("back from quarantine, exactly as they were"),
            "already_restored": list("active again before the undo"),
            "quarantined_again": list("quarantined again since by another decision: left there"),
            "deleted_for_ever": list("purged or deleted for ever: nothing can come back"),
        }),
    ))
}

pub fn feedback() -> Arc<JsonObject> {
    as_schema(object(
        &["memory_id", "helpful", "cite_count"],
        json!({
            "memory_id": t("string", "the memory"),
            "helpful": t("boolean", "as reported"),
            "cite_count": t("integer", "cites now"),
        }),
    ))
}

pub fn meta() -> Arc<JsonObject> {
    let overview = object(
        &["memories", "recalled_memories", "total_recalls", "lowest_confidence", "most_recalled", "never_recalled"],
        json!({
            "query": t("string", "the topic, when given"),
            "memories": t("integer", "active memories the figures are over"),
            "recalled_memories": t("integer", "of those, recalled at least once"),
            "total_recalls": t("integer", "recall hits over them"),
            "avg_confidence": maybe("number", "mean confidence of the hits"),
            "lowest_confidence": array(meta_stats(), "recalled with average confidence < 0.5, lowest first"),
            "most_recalled": array(meta_stats(), "most recalled first"),
            "never_recalled": t("integer", "never recalled"),
        }),
    );
    as_schema(json!({ "type": "object", "anyOf": [meta_stats(), overview] }))
}

pub fn reflect() -> Arc<JsonObject> {
    as_schema(object(
        &["memory_id", "notes", "dropped", "version"],
        json!({
            "memory_id": t("string", "the procedure"),
            "notes": t("integer", "notes now"),
            "dropped": t("integer", "oldest notes dropped by the cap of 100"),
            "version": t("integer", "its version now"),
            "redacted": array(finding(), "spans of the note redacted"),
        }),
    ))
}

/// One receipt (memory_id and memo), or `{items: [receipt…]}` (items).
pub fn archive() -> Arc<JsonObject> {
    let receipt = receipt();
    as_schema(json!({
        "type": "object",
        "anyOf": [
            receipt,
            object(&["items"], json!({ "items": array(receipt, "one receipt per observation, in order") })),
        ],
    }))
}

/// What end_session moved where.
pub fn end_session() -> Arc<JsonObject> {
    let rule = object(
        &["stored", "supersedes"],
        json!({
            "id": maybe("string", "the new semantic memory"),
            "stored": t("boolean", "false: trivial or an exact duplicate"),
            "reason": maybe("string", "why it was not stored"),
            "existing_id": maybe("string", "the memory it duplicates"),
            "supersedes": array(json!({"type": "string"}), "memories it replaced"),
        }),
    );
    as_schema(object(
        &["session_id", "task_kind", "ended_at", "already_ended", "task_logs", "rules"],
        json!({
            "session_id": t("string", "the session"),
            "task_kind": t("string", "the kind of its task logs"),
            "ended_at": t("string", "when it ended"),
            "already_ended": t("boolean", "true: it had ended before; nothing was written"),
            "task_logs": array(json!({"type": "string"}), "working memories now task logs (episodic)"),
            "rules": array(rule, "one per rule given, in order"),
        }),
    ))
}

/// The restored memory, or the span read without restoring.
pub fn restore_archive() -> Arc<JsonObject> {
    let memory = Value::Object((*memory()).clone());
    let span = object(
        &["archive_no", "memory_id", "start", "end", "sha256", "text"],
        json!({
            "archive_no": t("integer", "the archive"),
            "memory_id": t("string", "the observation (still archived)"),
            "start": t("integer", "first byte of the span in the original"),
            "end": t("integer", "byte after the span"),
            "sha256": t("string", "hash of exactly these bytes"),
            "text": t("string", "the span"),
        }),
    );
    as_schema(json!({ "type": "object", "anyOf": [memory, span] }))
}

fn receipt() -> Value {
    object(
        &["archive_no", "memory_id", "bytes", "sha256", "memo"],
        json!({
            "archive_no": t("integer", "give it to restore_archive"),
            "memory_id": t("string", "the observation"),
            "bytes": t("integer", "size of the original"),
            "sha256": t("string", "hash of the original"),
            "memo": t("string", "the one line now in its place"),
            "bytes_saved": t("integer", "how much the content shrank"),
            "redacted": array(finding(), "spans of the memo redacted"),
        }),
    )
}

pub fn page() -> Arc<JsonObject> {
    let row = object(
        &["id", "type", "preview", "importance", "pinned", "created_at", "forget_score", "would_forget"],
        json!({
            "id": t("string", "the memory"),
            "type": tier(),
            "preview": t("string", "the start of its text"),
            "importance": t("number", "0-1"),
            "pinned": t("boolean", "pinned"),
            "created_at": t("string", "created"),
            "last_accessed": maybe("string", "last view or cite"),
            "written_by": maybe("string", "who wrote it first (agent:<name> or the person); null when the audit does not say"),
            "last_used": maybe("string", "the later of its last view or cite and its last recall"),
            "is_deleted": t("boolean", "in quarantine"),
            "deleted_at": maybe("string", "when deleted"),
            "forget_score": t("number", "ForgetScore"),
            "would_forget": t("boolean", "the next batch would forget it"),
            "session_id": maybe("string", "session"),
            "project_id": maybe("string", "project"),
            "workflow_name": maybe("string", "workflow"),
            "tags": array(json!({"type": "string"}), "labels"),
            "redacted": t("boolean", "holds a [REDACTED:<kind>] placeholder"),
        }),
    );
    as_schema(object(
        &["total", "items"],
        json!({ "total": t("integer", "matching memories"), "items": array(row, "this page") }),
    ))
}
