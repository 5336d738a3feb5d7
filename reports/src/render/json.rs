//! The report as `vigil-report/1` JSON: the stable, machine-read form.

use crate::Report;

/// Pretty-printed, with the summary computed from the cases. Deterministic:
/// cases are sorted and `details` objects keep a fixed key order.
pub fn render(report: &Report) -> String {
    report.to_json()
}
