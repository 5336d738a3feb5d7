//! Merging the shard reports of one run (`--partition K/N`) into one.

use std::collections::BTreeSet;

use crate::{Report, ReportError, Shard};

/// Combines shard reports into one report of all their cases, sorted by
/// path, with the summary recomputed. Shards must share a mode and a Vigil
/// version (mixing them means the files are not from one run), and no case
/// path may appear twice (it would be counted twice). Reports that record
/// their shard must be exactly shards 1..N of one N: a missing or repeated
/// shard is an error, as the merge would look like a whole run without
/// being one. The merged report is a whole run (no `partition`).
pub fn merge(reports: impl IntoIterator<Item = Report>) -> Result<Report, ReportError> {
    let reports: Vec<Report> = reports.into_iter().collect();
    check_shards(&reports)?;
    let mut reports = reports.into_iter();
    let first = reports.next().ok_or(ReportError::NothingToMerge)?;
    let mode = first.mode().to_string();
    let version = first.vigil_version().to_string();
    let checks = first.checks().to_vec();
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
    Ok(Report::new(mode, cases)
        .with_vigil_version(version)
        .with_checks(checks))
}

/// Either no report records a shard (whole runs, merged by case), or all
/// do and they are shards 1..N of one N, each once.
fn check_shards(reports: &[Report]) -> Result<(), ReportError> {
    let shards: Vec<Shard> = reports.iter().filter_map(Report::partition).collect();
    let Some(first) = shards.first().copied() else {
        return Ok(());
    };
    if shards.len() != reports.len() {
        return Err(ReportError::WholeRunWithShards(first));
    }
    let mut seen = BTreeSet::new();
    for &s in &shards {
        if s.n != first.n {
            return Err(ReportError::ShardCountMismatch { first, other: s });
        }
        if !seen.insert(s.k) {
            return Err(ReportError::DuplicateShard(s));
        }
    }
    let missing: Vec<String> = (1..=first.n)
        .filter(|k| !seen.contains(k))
        .map(|k| Shard { k, n: first.n }.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(ReportError::MissingShards(missing.join(", ")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Case, Finding, OutputComparison};

    fn shard(k: u64, n: u64, paths: &[&str]) -> Report {
        let cases = paths.iter().map(|p| Case::new(*p, *p)).collect();
        Report::new("validate", cases).with_partition(Shard { k, n })
    }

    #[test]
    fn shards_must_be_one_through_n_each_once() {
        let all = merge([shard(2, 3, &["b"]), shard(1, 3, &["a"]), shard(3, 3, &[])]).unwrap();
        assert_eq!(all.cases().len(), 2);
        assert_eq!(all.partition(), None);

        let e = merge([shard(1, 4, &["a"]), shard(3, 4, &["c"])]).unwrap_err();
        assert_eq!(e.to_string(), "missing shards: 2/4, 4/4");
        let e = merge([shard(1, 2, &["a"]), shard(1, 2, &["b"]), shard(2, 2, &[])]).unwrap_err();
        assert_eq!(e.to_string(), "shard 1/2 is given more than once");
        let e = merge([shard(1, 2, &["a"]), shard(2, 3, &["b"])]).unwrap_err();
        assert!(e.to_string().contains("1/2 and 2/3"), "{e}");
        let whole = Report::new("validate", vec![Case::new("z", "z")]);
        let e = merge([shard(1, 1, &["a"]), whole.clone()]).unwrap_err();
        assert!(matches!(e, ReportError::WholeRunWithShards(_)), "{e}");
        // Whole runs still merge by case.
        assert_eq!(merge([whole]).unwrap().cases().len(), 1);
    }

    #[test]
    fn merging_one_report_gives_the_same_bytes() {
        // One ULP from the value that changed when floats were parsed
        // approximately; and a value from a finding's details.
        let mut o = OutputComparison::new("y", 4);
        o.max_abs_err = 5.960464477539063e-8;
        o.max_rel_err = 0.0037663159891963005;
        o.atol = Some(1e-6);
        let f = Finding::error("output_mismatch", "m")
            .with_details(serde_json::json!({"max_abs_err": 5.960464477539063e-8, "x": 1.0000000000000002}));
        let r = Report::new(
            "validate",
            vec![Case::new("a", "s/a").with_output(o).with_finding(f)],
        );
        let text = r.to_json();
        let back = merge([Report::from_json(&text).unwrap()]).unwrap();
        assert_eq!(back.to_json(), text);
        assert!(text.contains("5.960464477539063e-8"), "{text}");
    }
}
