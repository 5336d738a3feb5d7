//! Vigil: a validation and debug-mode harness for tensor op graphs with
//! views and in-place operations.
//!
//! This crate is the `vigil` command ([`Cli`], which a kernel author's
//! binary runs with their own ops registered), the suite runner
//! ([`runner`]), plus a facade over the workspace crates:
//! [`engine`] (tensors, ops, graphs, destroy handler, executor),
//! [`listeners`], [`debugmode`], [`findings`] and [`reports`].

#![forbid(unsafe_code)]

/// The ndarray version the engine's tensor API speaks (`Tensor::read`
/// closures take its views); use this one rather than a newer major.
pub use ndarray;
pub use vigil_debugmode as debugmode;
pub use vigil_engine as engine;
pub use vigil_findings as findings;
pub use vigil_listeners as listeners;
pub use vigil_onnx as onnx;
pub use vigil_reports as reports;

/// What a kernel author or a training loop needs, in one import:
/// `use vigil::prelude::*;`.
pub mod prelude {
    pub use crate::prepare;
    pub use vigil_debugmode::{DebugConfig, DebugMode, DebugReport};
    pub use vigil_engine::exec::{At, Listener, OpEvent, RunOptions};
    pub use vigil_engine::ops::check_arity;
    pub use vigil_engine::{
        Arity, Attrs, DType, Executor, Graph, GraphBuilder, InplaceVariant, Op, OpCtx, OpRegistry, Sym,
        Tensor, TypeInfo, ViewKind,
    };
    pub use vigil_findings::{Finding, Kind, Severity};
    pub use vigil_listeners::{
        ListenerSet, NonInplaceValidationListener, NumericsListener, Validator, ViewMapValidationListener,
    };
}

/// The graph `vigil run` executes: `graph` after the in-place pass, which
/// rewrites pure ops into their in-place variants where the destroy handler
/// proves it safe. `Executor::new` runs a graph as given; run `prepare`'s
/// result to check the graph your users will actually run, or the graph
/// itself to check it without the pass.
///
/// ```
/// use vigil::prelude::*;
/// let b = GraphBuilder::new("g");
/// let x = b.input("x", DType::F32, &[4]);
/// let y = x.exp()?.neg()?;
/// let g = prepare(&b.build(&[&y])?)?;
/// assert!(g.nodes().iter().any(|n| n.op.name().ends_with("_inplace")));
/// let out = Executor::new(&g)?.run(&[("x".to_string(), Tensor::from_vec(&[4], vec![0f32; 4])?)].into())?;
/// assert_eq!(out.outputs[0].1.to_f64_vec()?, vec![-1.0; 4]);
/// # Ok::<(), vigil::engine::Error>(())
/// ```
pub fn prepare(graph: &engine::Graph) -> engine::Result<engine::Graph> {
    Ok(engine::inplace::run(graph)?.graph)
}

pub mod case;
mod cli;
pub mod onnx_suite;
pub mod runner;
pub mod suite;

pub use case::default_registry;
pub use cli::Cli;

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

/// One element of a tensor of `dtype`, held as f64, printed at the dtype's
/// own precision (see [`engine::DType::fmt_value`]).
pub fn fmt_element(dtype: engine::DType, x: f64) -> String {
    dtype.fmt_value(x)
}

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// docs/kernel-authors.md's examples, compiled and run as doctests.
#[doc = include_str!("../docs/kernel-authors.md")]
#[cfg(doctest)]
pub struct KernelAuthorsDoctests;

#[cfg(test)]
mod tests {
    use super::*;
    use engine::DType;

    #[test]
    fn elements_print_at_their_dtype_precision() {
        let x = 0.003_766_316_f32;
        assert_eq!(fmt_element(DType::F32, f64::from(x)), "0.003766316");
        // The same value as an f64 needs all of the widening's digits.
        assert_eq!(fmt_element(DType::F64, f64::from(x)), "0.0037663159891963005");
        assert_eq!(fmt_element(DType::F32, f64::from(f32::NAN)), "NaN");
        assert_eq!(fmt_element(DType::F32, f64::NEG_INFINITY), "-inf");
        assert_eq!(fmt_element(DType::I64, -42.0), "-42");
        assert_eq!(fmt_element(DType::Bool, 1.0), "1");
    }
}
