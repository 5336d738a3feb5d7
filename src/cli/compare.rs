//! `vigil compare DIR_A DIR_B`: compare two recordings made by `vigil exec
//! --record` (possibly in separate processes), with the tolerance model of
//! `vigil run`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use std::collections::BTreeSet;
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
    /// Relative tolerance for floats: elements differ when |a - b| > atol +
    /// rtol * |b| (default per dtype, as `vigil run`: f16 1e-3, f32 1e-5,
    /// f64 1e-12).
    #[arg(long, value_parser = super::parse_tolerance, allow_hyphen_values = true)]
    rtol: Option<f64>,
    /// Absolute tolerance for floats (default per dtype, as `vigil run`:
    /// f16 1e-5, f32 1e-6, f64 1e-12). Integers and bools compare exactly.
    #[arg(long, value_parser = super::parse_tolerance, allow_hyphen_values = true)]
    atol: Option<f64>,
    /// table (one row per variable, then the first divergence) or json.
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
    let tolerances: BTreeSet<String> = c
        .vars
        .iter()
        .filter(|v| v.incompatible.is_none())
        .map(|v| format!("rtol {}, atol {}", v.rtol, v.atol))
        .collect();
    let tolerances = if tolerances.is_empty() {
        "nothing compared".to_string()
    } else {
        tolerances.into_iter().collect::<Vec<_>>().join("; ")
    };
    match &c.first_divergence {
        Some(d) => s.push_str(&format!(
            "first divergent variable: {} ({tolerances})\n",
            d.describe(),
        )),
        None => s.push_str(&format!(
            "{} agree ({tolerances})\n",
            vigil_reports::plural(c.vars.len() as u64, "variable"),
        )),
    }
    s
}

pub fn run(a: CompareArgs) -> Result<ExitCode> {
    let tol = crate::runner::ToleranceOverrides {
        rtol: a.rtol,
        atol: a.atol,
    };
    let c = compare_recordings(
        &a.a,
        &a.b,
        |dtype| {
            let (rtol, atol) = tol.for_dtype(dtype);
            vigil_engine::compare::Tolerance::new(rtol, atol)
        },
        (a.rtol, a.atol),
    )?;
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
