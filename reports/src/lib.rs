//! Vigil's mismatch reports: the `vigil-report/1` data model, renderers
//! (table, JSON, Markdown, JUnit XML, HTML), merging of sharded runs and
//! atomic file writing.
//!
//! The model is this crate's own, not the runner's in-memory types: the
//! JSON form is a stable contract that CI ingests (see
//! `docs/report-format.md`), so it changes only by addition, whatever the
//! runner does internally.

#![forbid(unsafe_code)]

mod error;
mod float;
pub mod merge;
pub mod model;
pub mod render;
pub mod write;

pub use error::ReportError;
pub use merge::merge;
pub use model::{
    plural, Case, ErrorSample, F64Errors, Finding, OutputComparison, Report, Severity, Shard, Status,
    Summary, TimelineEntry, CASE_ERROR, FORMAT, MAX_SAMPLE,
};
pub use render::{render, Format, UnknownFormat};
pub use write::{write_atomic, write_report};
