//! Reverse-mode autodiff as a graph-to-graph transform, in the style of the
//! in-place pass: a graph in, the same graph with gradient nodes appended
//! out. Gradient rules are looked up by op name in a [`GradRegistry`] that
//! mirrors the engine's `OpRegistry`, so your own ops can register theirs.
//!
//! ```
//! use vigil_autodiff::grad;
//! use vigil_engine::{DType, Executor, GraphBuilder, Tensor};
//!
//! let b = GraphBuilder::new("demo");
//! let x = b.input("x", DType::F64, &[3]);
//! let w = b.parameter("w", Tensor::from_vec(&[3], vec![1.0f64, 2.0, 3.0])?);
//! let loss = x.mul(&w)?.sum(None)?;
//! let graph = grad(&b.build(&[&loss])?, loss.name(), &["w"])?;
//!
//! let feeds = [("x".to_string(), Tensor::from_vec(&[3], vec![4.0f64, 5.0, 6.0])?)].into();
//! let out = Executor::new(&graph)?.run(&feeds)?;
//! assert_eq!(out.get("grad:w").unwrap().to_f64_vec()?, vec![4.0, 5.0, 6.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The backward nodes are pure; run the in-place pass on the result to
//! let gradient accumulation and elementwise chains reuse buffers.

#![forbid(unsafe_code)]

pub mod check;
mod error;
mod registry;
pub mod rules;
mod transform;

pub use check::{check_gradients, GradCheck, GradCheckConfig, ParamCheck, Probe};
pub use error::{AutodiffError, Result};
pub use registry::{GradCtx, GradFn, GradRegistry};
pub use transform::{grad, grad_name, Autodiff, GRAD_PREFIX};
