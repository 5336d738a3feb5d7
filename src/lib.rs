//! Vigil: a validation and debug-mode harness for tensor op graphs with
//! views and in-place operations.
//!
//! This crate is the `vigil` command plus a facade over the workspace crates:
//! [`engine`] (tensors, ops, graphs, destroy handler, executor).

pub use vigil_engine as engine;

pub mod case;
