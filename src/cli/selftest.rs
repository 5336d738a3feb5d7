//! `vigil selftest`: run the broken-op corpus and the correct twin of each
//! op. Exits 0 only when every broken op is caught with exactly its intended
//! finding kind and every twin gives no finding.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use serde_json::json;
use vigil_listeners::run_selftest;

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

#[derive(Args)]
pub struct SelftestArgs {
    /// table (one row per corpus case) or json (`vigil-selftest/1`).
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

pub fn run(a: SelftestArgs) -> Result<ExitCode> {
    super::quiet_panics(true);
    let mut results = run_selftest();
    results.extend(vigil_debugmode::selftest::run());
    super::quiet_panics(false);
    let passed = results.iter().filter(|r| r.pass).count();
    let ok = passed == results.len();
    match a.format {
        Format::Json => {
            let cases: Vec<_> = results
                .iter()
                .map(|r| {
                    json!({"case": r.case, "expected": r.expected.as_ref().map(|k| k.name()),
                           "also": r.also.iter().map(|k| k.name()).collect::<Vec<_>>(),
                           "found": r.found.iter().map(|k| k.name()).collect::<Vec<_>>(),
                           "pass": r.pass, "error": r.error})
                })
                .collect();
            let doc = json!({"format": "vigil-selftest/1", "pass": ok, "passed": passed, "cases": cases});
            super::emit(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
        }
        Format::Table => {
            let mut t = Table::new();
            t.load_preset(UTF8_FULL_CONDENSED);
            t.set_header(vec!["case", "expected", "found", "result"]);
            for r in &results {
                let found: Vec<&str> = r.found.iter().map(|k| k.name()).collect();
                t.add_row(vec![
                    r.case.clone(),
                    match &r.expected {
                        None => "(none)".to_string(),
                        Some(k) => std::iter::once(k)
                            .chain(&r.also)
                            .map(|k| k.name())
                            .collect::<Vec<_>>()
                            .join(", "),
                    },
                    if found.is_empty() {
                        "(none)".to_string()
                    } else {
                        found.join(", ")
                    },
                    match (&r.error, r.pass) {
                        (Some(e), _) => format!("ERROR: {e}"),
                        (None, true) => "pass".into(),
                        (None, false) => "FAIL".into(),
                    },
                ]);
            }
            super::emit(&format!(
                "{t}\nselftest: {passed} of {} cases pass\n",
                results.len()
            ))?;
        }
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
