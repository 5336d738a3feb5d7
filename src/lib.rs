//! Vigil: a validation and debug-mode harness for tensor op graphs with
//! views and in-place operations.
//!
//! This crate is the `vigil` command plus a facade over the workspace crates:
//! [`engine`] (tensors, ops, graphs, destroy handler, executor),
//! [`listeners`], [`debugmode`], [`findings`] and [`reports`].

#![forbid(unsafe_code)]

pub use vigil_debugmode as debugmode;
pub use vigil_engine as engine;
pub use vigil_findings as findings;
pub use vigil_listeners as listeners;
pub use vigil_onnx as onnx;
pub use vigil_reports as reports;

pub mod case;
pub mod onnx_suite;
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

/// One element of a tensor of `dtype`, held as f64, printed at the dtype's
/// own precision: the shortest text that reads back to the same value
/// (an f32 prints as an f32, so `0.003766316` and not the f64 digits of
/// its widening). Integers print without a fraction.
pub fn fmt_element(dtype: engine::DType, x: f64) -> String {
    match dtype {
        engine::DType::F32 => (x as f32).to_string(),
        _ => x.to_string(),
    }
}

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

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
