//! The JSON Schemas of `lethe mcp`'s tools. Input schemas are generated from the argument
//! types (standard JSON Schema 2020-12: no `nullable`, no integer `format`, subschemas
//! inlined, `additionalProperties: false`) and the same schema checks the ranges of a call,
//! so what a model reads is what the server enforces. Output schemas describe the engine's
//! JSON as it is serialised: generated from the engine's answer type of each tool
//! ([`output`]), so that a field added to the type is in the schema. The tests validate every
//! result against them (ajv, Python's jsonschema).

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
    // A tool's output schema is an object's (MCP); an answer that is one of several shapes
    // (`anyOf`) is an object in each.
    o.entry("type").or_insert_with(|| json!("object"));
    let s = Arc::new(o);
    OUTPUTS.write().unwrap_or_else(|e| e.into_inner()).insert(TypeId::of::<T>(), Arc::clone(&s));
    s
}

/// schemars marks Rust integer and float widths (`format: uint`, `double`), which are not
/// formats of JSON Schema; and it writes a JSON value the engine passes through (a memory's
/// steps, an event's metadata) as the schema `true`, where MCP clients want an object: `{}`
/// says the same.
fn drop_formats(v: &mut Value) {
    match v {
        Value::Object(o) => {
            if let Some(Value::Object(props)) = o.get_mut("properties") {
                for p in props.values_mut() {
                    if *p == Value::Bool(true) {
                        *p = json!({});
                    }
                }
            }
            if o.get("items") == Some(&Value::Bool(true)) {
                o.insert("items".into(), json!({}));
            }
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
