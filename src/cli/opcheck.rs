//! `vigil opcheck OP...`: each op on its own, on proptest samples of its
//! attributes and inputs (dtypes, ranks 0-4, zero-size and size-1
//! dimensions, transposed, reversed, offset and broadcast views, the same
//! tensor twice), under DebugMode's checks and, where autodiff has a rule,
//! the gradient check; see `vigil_debugmode::opcheck`. Exits 1 when an op
//! has a finding or could not be checked.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use vigil_debugmode::{opcheck_with, OpcheckConfig};
use vigil_engine::OpRegistry;

#[derive(Args)]
pub struct OpcheckArgs {
    /// The ops to check, by name (`all`: every op of the registry).
    #[arg(required = true)]
    ops: Vec<String>,
    /// Seed of the samples.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Samples per op (refused ones do not count).
    #[arg(long, default_value_t = 32)]
    cases: usize,
    /// Write each op's failing sample, shrunk, as a case directory DIR/OP.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub fn run(a: OpcheckArgs, registry: &OpRegistry) -> Result<ExitCode> {
    let mut ops = a.ops.clone();
    if ops.iter().any(|o| o == "all") {
        ops = registry.names().map(str::to_string).collect();
        ops.sort();
    }
    let cfg = OpcheckConfig {
        seed: a.seed,
        cases: a.cases,
        out: a.out.clone(),
        ..OpcheckConfig::default()
    };
    super::quiet_panics(true);
    let (mut failed, mut unchecked) = (0, 0);
    for op in &ops {
        let r = opcheck_with(registry, op, &cfg)?;
        let mut lines = String::new();
        if let Some(why) = &r.not_checked {
            unchecked += 1;
            lines.push_str(&format!("{op}: not checked: {why}\n"));
        } else if r.passed() {
            lines.push_str(&format!(
                "{op}: pass ({} samples, {} refused, {} failed to run, {} gradient checks)\n",
                r.ran, r.rejected, r.errors, r.gradient_checked
            ));
            if let Some(e) = &r.first_error {
                lines.push_str(&format!("  first run failure: {e}\n"));
            }
        } else {
            failed += 1;
            let sample = r.failing.as_ref().map(|s| s.describe()).unwrap_or_default();
            lines.push_str(&format!(
                "{op}: FAIL after {} samples, shrunk to {sample}\n",
                r.ran
            ));
            for f in &r.findings {
                lines.push_str(&format!("  {} at {} ({}): {}\n", f.kind, f.node, f.op, f.message));
            }
            if let Some(d) = &r.case_dir {
                lines.push_str(&format!("  case written to {}\n", d.display()));
            }
        }
        super::emit(&lines)?;
    }
    super::quiet_panics(false);
    super::emit(&format!(
        "opcheck: {} of {} ops pass, {failed} fail, {unchecked} not checked\n",
        ops.len() - failed - unchecked,
        ops.len()
    ))?;
    Ok(if failed == 0 && unchecked == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
