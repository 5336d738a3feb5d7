//! What a DebugMode check returns.

use serde::Serialize;
use vigil_engine::Tensor;
use vigil_findings::Finding;

/// Counters of one check, for reports and benchmarks.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DebugStats {
    pub nodes: usize,
    /// Rewrites the in-place pass accepted.
    pub rewrites: usize,
    /// Values compared between the two runs.
    pub compared: usize,
    /// Of those, equal element for element.
    pub exact: usize,
    /// Of the exact ones, those compared tile by tile in twin sweeps
    /// (`DebugConfig::sweeps`) instead of value by value.
    pub swept: usize,
    /// Not exact but within tolerance.
    pub tolerated: usize,
    /// Values that differ because an input already differed.
    pub propagated: usize,
    /// f32 divergences fp64 arbitration accepted (counted as tolerated).
    pub arbitrated: usize,
    /// Graph runs beyond the first two (bisection, orders, pre-allocation,
    /// finite differences).
    pub reruns: usize,
    /// Peak live bytes of the plain in-place run alone.
    pub peak_inplace_bytes: usize,
    /// Peak live bytes of both runs together, in lockstep.
    pub peak_lockstep_bytes: usize,
}

/// Findings of a check, and the in-place run's outputs.
pub struct DebugReport {
    pub findings: Vec<Finding>,
    pub stats: DebugStats,
    /// The graph outputs of the in-place run, in output order.
    pub outputs: Vec<(String, Tensor)>,
}

impl DebugReport {
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(Finding::is_error)
    }
}
