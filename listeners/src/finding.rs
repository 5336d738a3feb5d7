//! Findings as the listeners produce them: the one model of
//! `vigil-findings`, placed at an op, and the [`Validator`] trait through
//! which a set or a runner collects them.

use vigil_engine::exec::{Listener, OpEvent};
pub use vigil_findings::{json_f64, Finding, Kind, Severity};

/// A finding of `kind` about the op of `ev`.
pub fn at_op(kind: Kind, ev: &OpEvent, message: impl Into<String>) -> Finding {
    Finding::new(kind, message).at(ev.node.name.clone(), ev.op_name())
}

/// A listener that produces findings, so a [`crate::ListenerSet`] or a
/// runner can collect them.
pub trait Validator: Listener {
    /// Findings so far.
    fn findings(&self) -> &[Finding];
    /// Moves the findings out.
    fn take_findings(&mut self) -> Vec<Finding>;
}

/// The row-major index of element `flat` of an array of `shape`.
pub(crate) fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0usize; shape.len()];
    for (k, &d) in shape.iter().enumerate().rev() {
        if d > 0 {
            index[k] = flat % d;
            flat /= d;
        }
    }
    index
}

/// A 64-bit hash as 16 hex digits (JSON numbers lose bits above 2^53).
pub(crate) fn hex(h: u64) -> String {
    format!("{h:016x}")
}

/// How a message names variable `v`: `'x'`, or for a view the variable the
/// user knows, `'create_view_2', a view of 'x'` (messages put it in
/// parentheses).
pub(crate) fn var_label(g: &vigil_engine::Graph, v: vigil_engine::graph::VarId) -> String {
    let name = &g.var(v).name;
    let root = vigil_engine::destroy::DestroyHandler::new(g).root(v);
    if root == v {
        format!("'{name}'")
    } else {
        format!("'{name}', a view of '{}'", g.var(root).name)
    }
}

/// `[0, 2]`: an element index as messages print it.
pub(crate) fn fmt_index(index: &[usize]) -> String {
    let list: Vec<String> = index.iter().map(|i| i.to_string()).collect();
    format!("[{}]", list.join(", "))
}
