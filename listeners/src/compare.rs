//! Comparing two recordings: per variable, the largest absolute and
//! relative difference, and the first variable in execution order that
//! diverges beyond `atol + rtol * |b|` (numpy's `allclose`, NaN equal to NaN),
//! with the node and op that computed it, or, for an input or parameter
//! that differs, the node that first read it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use vigil_engine::compare::{compare, Tolerance};
use vigil_engine::{DType, Tensor};

use crate::record::{Index, INDEX};

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("{path}: {msg}")]
    File { path: PathBuf, msg: String },
}

fn file_err(path: &Path, msg: impl ToString) -> CompareError {
    CompareError::File {
        path: path.to_path_buf(),
        msg: msg.to_string(),
    }
}

/// How one variable compares.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct VarDiff {
    pub var: String,
    /// `activation`, `input` or `parameter` (see [`crate::record::Entry::kind`]).
    pub kind: String,
    /// The node that computed it (an activation) or first read it (an
    /// input or parameter), in recording A.
    pub node: String,
    pub op: String,
    /// Occurrence of this variable (0 for the first run that recorded it).
    pub occurrence: usize,
    pub step_a: u64,
    pub max_abs: f64,
    pub max_rel: f64,
    /// Elements outside the tolerance.
    pub mismatched: usize,
    pub elements: usize,
    /// The tolerance this variable was compared with (its dtype's).
    pub rtol: f64,
    pub atol: f64,
    /// Set when dtypes or shapes differ (then the numbers are not computed).
    pub incompatible: Option<String>,
}

impl VarDiff {
    pub fn diverges(&self) -> bool {
        self.mismatched > 0 || self.incompatible.is_some()
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// The tolerances asked for; `None` where each dtype's default applied
    /// (each variable's own is in [`VarDiff`]).
    pub rtol: Option<f64>,
    pub atol: Option<f64>,
    /// In A's execution order.
    pub vars: Vec<VarDiff>,
    /// Variables recorded in only one of the two.
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    /// The first divergent variable in execution order.
    pub first_divergent: Option<String>,
    /// Where it is: its kind, node and op, and its step in A.
    pub first_divergence: Option<Divergence>,
}

/// The first divergent variable, placed in the graph.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Divergence {
    pub var: String,
    /// `activation`: `node` (op `op`) computed it from inputs that agreed,
    /// so that op is where the runs part. `input` or `parameter`: the runs
    /// were fed different values, and `node` is the first that read it.
    pub kind: String,
    pub node: String,
    pub op: String,
    pub step_a: u64,
}

impl Divergence {
    /// One line for a person: where the runs part and what that means.
    pub fn describe(&self) -> String {
        if self.kind == crate::record::ACTIVATION {
            format!(
                "{}, output of node '{}' (op '{}'): every value recorded before it agrees",
                self.var, self.node, self.op
            )
        } else {
            format!(
                "{}, {} {} fed to the run (first read by node '{}', op '{}'): the runs differ before any op, so this {} is the cause",
                self.var,
                if self.kind == "input" { "an" } else { "a" },
                self.kind,
                self.node,
                self.op,
                self.kind
            )
        }
    }
}

fn read_index(dir: &Path) -> Result<Index, CompareError> {
    let path = dir.join(INDEX);
    let text = std::fs::read_to_string(&path).map_err(|e| file_err(&path, e))?;
    serde_json::from_str(&text).map_err(|e| file_err(&path, e))
}

/// (max abs error, max rel error, elements outside tolerance), by the
/// project's one comparison.
fn diff(a: &Tensor, b: &Tensor, tolerance: Tolerance) -> Result<(f64, f64, usize), String> {
    let c = compare(a, b, tolerance).map_err(|e| e.to_string())?;
    if c.dtype_differs || c.shape_differs {
        return Err(format!(
            "{} {:?} vs {} {:?}",
            a.dtype(),
            a.shape(),
            b.dtype(),
            b.shape()
        ));
    }
    Ok((c.max_abs, c.max_rel, c.mismatched))
}

/// Compares recording `a` against recording `b` (the reference), each
/// variable with the tolerance `tolerance` gives for its dtype in `b`
/// (`rtol`, `atol`: the overrides it applies, recorded in the result).
pub fn compare_recordings(
    a: &Path,
    b: &Path,
    tolerance: impl Fn(DType) -> Tolerance,
    (rtol, atol): (Option<f64>, Option<f64>),
) -> Result<Comparison, CompareError> {
    let (ia, ib) = (read_index(a)?, read_index(b)?);
    // The k-th recording of a variable in A pairs with the k-th in B.
    let mut in_b: HashMap<(&str, usize), &crate::record::Entry> = HashMap::new();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for e in &ib.entries {
        let k = seen.entry(&e.var).or_default();
        in_b.insert((&e.var, *k), e);
        *k += 1;
    }
    let mut seen_a: HashMap<&str, usize> = HashMap::new();
    let mut out = Comparison {
        rtol,
        atol,
        vars: Vec::new(),
        only_in_a: Vec::new(),
        only_in_b: Vec::new(),
        first_divergent: None,
        first_divergence: None,
    };
    for e in &ia.entries {
        let k = seen_a.entry(&e.var).or_default();
        let occurrence = *k;
        *k += 1;
        let Some(eb) = in_b.remove(&(e.var.as_str(), occurrence)) else {
            out.only_in_a.push(e.var.clone());
            continue;
        };
        let pa = a.join(&e.file);
        let pb = b.join(&eb.file);
        let ta = Tensor::read_npy(&pa).map_err(|x| file_err(&pa, x))?;
        let tb = Tensor::read_npy(&pb).map_err(|x| file_err(&pb, x))?;
        let mut d = VarDiff {
            var: e.var.clone(),
            kind: e.kind.clone(),
            node: e.node.clone(),
            op: e.op.clone(),
            occurrence,
            step_a: e.step,
            max_abs: 0.0,
            max_rel: 0.0,
            mismatched: 0,
            elements: ta.size(),
            rtol: 0.0,
            atol: 0.0,
            incompatible: None,
        };
        let tol = tolerance(tb.dtype());
        (d.rtol, d.atol) = (tol.rtol, tol.atol);
        match diff(&ta, &tb, tol) {
            Ok((m, r, bad)) => (d.max_abs, d.max_rel, d.mismatched) = (m, r, bad),
            Err(why) => d.incompatible = Some(why),
        }
        if d.diverges() && out.first_divergent.is_none() {
            out.first_divergent = Some(d.var.clone());
            out.first_divergence = Some(Divergence {
                var: d.var.clone(),
                kind: d.kind.clone(),
                node: d.node.clone(),
                op: d.op.clone(),
                step_a: d.step_a,
            });
        }
        out.vars.push(d);
    }
    let mut rest: Vec<_> = in_b.into_values().collect();
    rest.sort_by_key(|e| e.step);
    out.only_in_b = rest.into_iter().map(|e| e.var.clone()).collect();
    Ok(out)
}
