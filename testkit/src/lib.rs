//! Test support shared by the workspace's tests, so that no test reaches
//! into another crate's files: generators that more than one crate's tests
//! draw from.

#![forbid(unsafe_code)]

pub mod random_graph;
