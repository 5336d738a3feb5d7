//! Test support shared by the workspace's tests and generators, so that no
//! test reaches into another crate's files: generators that more than one
//! crate's tests draw from, the suite generators' shared reference, and (feature `onnx`) the builders of small ONNX models that
//! the importer's tests and the CLI's import tests share.

#![forbid(unsafe_code)]

#[cfg(feature = "onnx")]
pub mod onnx;
pub mod random_graph;
pub mod suites;
