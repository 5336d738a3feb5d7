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

/// A 64-bit hash as 16 hex digits (JSON numbers lose bits above 2^53).
pub(crate) fn hex(h: u64) -> String {
    format!("{h:016x}")
}
