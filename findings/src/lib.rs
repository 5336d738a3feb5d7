//! The one findings model. Every detector (the listeners, DebugMode, the
//! suite runner) produces a [`Finding`], and every report renders it as it
//! is: no conversion step can invent or lose a kind.
//!
//! Kinds are open: a [`Kind`] is a stable snake_case name. The built-in
//! kinds are constants; a user's own detector can add more.

#![forbid(unsafe_code)]

mod finding;
mod kind;

pub use finding::{json_f64, Finding, Iteration, Seen, Severity};
pub use kind::{Kind, DOCS_FILE};
