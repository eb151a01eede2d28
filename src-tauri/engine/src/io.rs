//! Moving memories in and out: JSONL import and export (`transfer`), the demo data (`demo`).

pub mod demo;
pub mod transfer;
