//! `vigil opcheck OP...`: each op on its own, on seeded random samples of
//! inputs (dtypes, ranks 0-4, zero-size and size-1 dimensions, transposed,
//! reversed, offset and broadcast views, the same tensor twice), under
//! DebugMode's checks; see `vigil_debugmode::opcheck`. Exits 1 when an op
//! has a finding.

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
    /// Write each op's failing sample as a case directory DIR/OP.
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
        let mut lines = String::new();
        match opcheck_with(registry, op, &cfg) {
            Ok(r) if r.passed() => {
                lines.push_str(&format!(
                    "{op}: pass ({} samples, {} refused by infer, {} failed to run)\n",
                    r.ran, r.rejected, r.errors
                ));
                if let Some(e) = &r.first_error {
                    lines.push_str(&format!("  first run failure: {e}\n"));
                }
            }
            Ok(r) => {
                failed += 1;
                lines.push_str(&format!("{op}: FAIL after {} samples: {:?}\n", r.ran, r.failing));
                for f in &r.findings {
                    lines.push_str(&format!("  {} at {} ({}): {}\n", f.kind, f.node, f.op, f.message));
                }
                if let Some(d) = &r.case_dir {
                    lines.push_str(&format!("  case written to {}\n", d.display()));
                }
            }
            Err(e) => {
                unchecked += 1;
                lines.push_str(&format!("{op}: not checked: {e}\n"));
            }
        }
        super::emit(&lines)?;
    }
    super::quiet_panics(false);
    super::emit(&format!(
        "opcheck: {} of {} ops pass, {failed} fail, {unchecked} not checked (they need attributes)\n",
        ops.len() - failed - unchecked,
        ops.len()
    ))?;
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
