//! Merging the shard reports of one run (`--partition K/N`) into one.

use std::collections::BTreeSet;

use crate::{Report, ReportError};

/// Combines shard reports into one report of all their cases, sorted by
/// path, with the summary recomputed. Shards must share a mode and a Vigil
/// version (mixing them means the files are not from one run), and no case
/// path may appear twice (it would be counted twice).
pub fn merge(reports: impl IntoIterator<Item = Report>) -> Result<Report, ReportError> {
    let mut reports = reports.into_iter();
    let first = reports.next().ok_or(ReportError::NothingToMerge)?;
    let mode = first.mode().to_string();
    let version = first.vigil_version().to_string();
    let mut cases = first.into_cases();
    for r in reports {
        if r.mode() != mode {
            return Err(ReportError::ModeMismatch {
                first: mode,
                other: r.mode().to_string(),
            });
        }
        if r.vigil_version() != version {
            return Err(ReportError::VersionMismatch {
                first: version,
                other: r.vigil_version().to_string(),
            });
        }
        cases.extend(r.into_cases());
    }
    let mut seen = BTreeSet::new();
    for c in &cases {
        if !seen.insert(c.path.as_str()) {
            return Err(ReportError::DuplicateCase(c.path.clone()));
        }
    }
    Ok(Report::new(mode, cases).with_vigil_version(version))
}
