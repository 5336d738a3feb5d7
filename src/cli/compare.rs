//! `vigil compare DIR_A DIR_B`: compare two recordings made by the
//! RecordingListener (possibly in separate processes).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use vigil_listeners::compare::{compare_recordings, Comparison};

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

#[derive(Args)]
pub struct CompareArgs {
    /// The recording to check.
    a: PathBuf,
    /// The reference recording.
    b: PathBuf,
    /// Relative tolerance: elements differ when |a - b| > atol + rtol * |b|.
    #[arg(long, default_value_t = 1e-5)]
    rtol: f64,
    #[arg(long, default_value_t = 1e-8)]
    atol: f64,
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

fn table(c: &Comparison) -> String {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "step",
        "variable",
        "from",
        "max abs",
        "max rel",
        "mismatched",
        "status",
    ]);
    for v in &c.vars {
        let status = match (&v.incompatible, v.mismatched) {
            (Some(why), _) => format!("incompatible: {why}"),
            (None, 0) => "ok".to_string(),
            (None, n) => format!("{n} of {} differ", v.elements),
        };
        t.add_row(vec![
            v.step_a.to_string(),
            v.var.clone(),
            if v.kind == vigil_listeners::record::ACTIVATION {
                format!("{} ({})", v.node, v.op)
            } else {
                format!("{} (read by {})", v.kind, v.node)
            },
            format!("{:.3e}", v.max_abs),
            format!("{:.3e}", v.max_rel),
            v.mismatched.to_string(),
            status,
        ]);
    }
    let mut s = format!("{t}\n");
    if !c.only_in_a.is_empty() {
        s.push_str(&format!("only in A: {}\n", c.only_in_a.join(", ")));
    }
    if !c.only_in_b.is_empty() {
        s.push_str(&format!("only in B: {}\n", c.only_in_b.join(", ")));
    }
    match &c.first_divergence {
        Some(d) => s.push_str(&format!(
            "first divergent variable: {} (rtol {}, atol {})\n",
            d.describe(),
            c.rtol,
            c.atol
        )),
        None => s.push_str(&format!(
            "{} variables agree (rtol {}, atol {})\n",
            c.vars.len(),
            c.rtol,
            c.atol
        )),
    }
    s
}

pub fn run(a: CompareArgs) -> Result<ExitCode> {
    if !(a.rtol >= 0.0 && a.atol >= 0.0) {
        anyhow::bail!("--rtol and --atol must be non-negative numbers");
    }
    let c = compare_recordings(&a.a, &a.b, a.rtol, a.atol)?;
    match a.format {
        Format::Table => super::emit(&table(&c))?,
        Format::Json => super::emit(&format!("{}\n", serde_json::to_string_pretty(&c)?))?,
    }
    let differ = c.first_divergent.is_some() || !c.only_in_a.is_empty() || !c.only_in_b.is_empty();
    Ok(if differ {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
