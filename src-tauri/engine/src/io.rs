//! Moving memories in and out: JSONL import and export (`transfer`), a local store into the
//! team store (`push`), the demo data (`demo`).

pub mod demo;
pub mod push;
pub mod transfer;
