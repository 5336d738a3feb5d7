//! Vigil: a validation and debug-mode harness for tensor op graphs with
//! views and in-place operations.
//!
//! This crate is the `vigil` command plus a facade over the workspace crates:
//! [`engine`] (tensors, ops, graphs, destroy handler, executor).

#![forbid(unsafe_code)]

pub use vigil_engine as engine;

pub mod case;
pub mod runner;
pub mod suite;

/// An error chain on one line, outermost context first, repeats dropped.
pub fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string().replace('\n', " ");
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}

/// A JSON number, or a string for NaN and infinities.
pub fn json_num(x: f64) -> serde_json::Value {
    if x.is_finite() {
        serde_json::json!(x)
    } else {
        serde_json::json!(x.to_string())
    }
}

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
