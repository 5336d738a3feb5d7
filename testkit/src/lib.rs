//! Test support shared by the workspace's tests and generators, so that no
//! test reaches into another crate's files: generators that more than one
//! crate's tests draw from, the suite generators' shared reference, and (feature `onnx`) the builders of small ONNX models that
//! the importer's tests and the CLI's import tests share.

#![forbid(unsafe_code)]

#[cfg(feature = "onnx")]
pub mod onnx;
pub mod random_graph;
pub mod suites;

use vigil_engine::Tensor;

/// An f32 tensor of `shape` whose values spread over -0.5 to 0.501 in no
/// simple pattern, a different spread for each `seed`: weights and inputs
/// for tests that need no particular values, only the same ones each run.
pub fn spread(shape: &[usize], seed: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|i| (((i * 7919 + seed * 104729) % 2003) as f32 / 1000.0 - 1.0) * 0.5)
        .collect();
    Tensor::from_vec(shape, v).expect("a length matching the shape")
}
