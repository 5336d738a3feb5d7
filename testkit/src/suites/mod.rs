//! The suite generators' shared parts: the JSON tree they print graph files
//! with, and the `ops` suite with its numpy-semantics reference interpreter,
//! which the `inplace` suite's generator reuses. The generators themselves
//! are `examples/gen_*_suite.rs`.

pub mod json;
pub mod ops;
