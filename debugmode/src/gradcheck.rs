//! Gradient check: the graph's `grad:<param>` outputs against central
//! finite differences in f64 (the probing itself lives in
//! `vigil_autodiff::check`, shared with autodiff's own tests); each
//! parameter whose gradient is off becomes one `gradient_mismatch` finding.
//! A graph with parameters and a scalar float output but no `grad:`
//! outputs gets its analytic gradients from autodiff, so a training step
//! is checked as it is, and a wrong gradient rule shows.

use serde_json::json;
use vigil_autodiff::{check_gradients, GradCheck, ParamCheck};
use vigil_engine::graph::Graph;
use vigil_findings::{json_f64, Finding, Kind};

use crate::config::GradConfig;
use crate::error::Result;
use crate::lockstep::Feeds;
use vigil_autodiff::{Autodiff, GRAD_PREFIX};
use vigil_engine::graph::VarKind;

/// `gradient_mismatch` findings, one per parameter whose gradient is off.
pub fn check(
    user: &Graph,
    feeds: &Feeds,
    cfg: &GradConfig,
    autodiff: &Autodiff,
    seed: u64,
    runs: &mut usize,
) -> Result<Vec<Finding>> {
    let mut source = "graph";
    let mut checked = check_gradients(user, feeds, cfg, seed, runs)?;
    if matches!(checked, GradCheck::NoGradients) {
        let with_grads = match autodiff_gradients(user, autodiff) {
            Gradients::NotApplicable => return Ok(Vec::new()),
            Gradients::Failed(f) => return Ok(vec![f]),
            Gradients::Built(g) => g,
        };
        checked = check_gradients(&with_grads, feeds, cfg, seed, runs)?;
        source = "autodiff";
    }
    let params = match checked {
        GradCheck::NoGradients => return Ok(Vec::new()),
        GradCheck::NoLoss => {
            return Ok(vec![Finding::new(
                Kind::GRADIENT_MISMATCH,
                "the graph has grad:<param> outputs but no scalar float loss output to check them against",
            )])
        }
        GradCheck::Checked { params, .. } => params,
    };
    let mut out = Vec::new();
    for p in params {
        let (p, probes) = match p {
            ParamCheck::WrongSize {
                param,
                grad,
                param_len,
            } => {
                out.push(Finding::new(
                    Kind::GRADIENT_MISMATCH,
                    format!("gradient of '{param}' has {grad} elements, the parameter {param_len}"),
                ));
                continue;
            }
            ParamCheck::Probed { param, probes } => (param, probes),
        };
        let mut worst: Vec<_> = probes.iter().filter(|x| x.failed(cfg)).collect();
        if worst.is_empty() {
            continue;
        }
        worst.sort_by(|x, y| {
            (y.analytic - y.numeric)
                .abs()
                .total_cmp(&(x.analytic - x.numeric).abs())
        });
        let w = worst[0];
        out.push(
            Finding::new(
                Kind::GRADIENT_MISMATCH,
                format!(
                    "gradient of '{p}' disagrees with finite differences at {} of {} probes; worst at {}: analytic {:.6e}, numeric {:.6e}",
                    worst.len(),
                    probes.len(),
                    w.at,
                    w.analytic,
                    w.numeric
                ),
            )
            .with_details(json!({
                "param": p,
                "gradient_from": source,
                "probes": probes.len(),
                "failed": worst.len(),
                "eps": cfg.eps, "atol": cfg.atol, "rtol": cfg.rtol,
                "worst": worst.iter().take(10).map(|x| json!({"at": x.at, "analytic": json_f64(x.analytic), "numeric": json_f64(x.numeric)})).collect::<Vec<_>>(),
            })),
        );
    }
    Ok(out)
}

/// What autodiff made of a graph without `grad:` outputs.
enum Gradients {
    /// No float parameter or no scalar float output: nothing to check.
    NotApplicable,
    /// The check applies but autodiff cannot build the gradients (an op
    /// with no gradient rule, a name taken): a `check_skipped` warning.
    Failed(Finding),
    Built(Graph),
}

/// `user` with `grad:<param>` outputs built by autodiff, for the float
/// parameters and the first scalar float output (the loss).
fn autodiff_gradients(user: &Graph, autodiff: &Autodiff) -> Gradients {
    let params: Vec<&str> = user
        .vars()
        .iter()
        .filter(|v| matches!(v.kind, VarKind::Parameter(_)) && v.ty.dtype.is_float())
        .map(|v| v.name.as_str())
        .collect();
    let loss = user.outputs().iter().map(|&v| user.var(v)).find(|v| {
        !v.name.starts_with(GRAD_PREFIX)
            && v.ty.dtype.is_float()
            && v.ty
                .static_shape()
                .is_some_and(|s| s.iter().product::<usize>() == 1)
    });
    let Some(loss) = loss.filter(|_| !params.is_empty()) else {
        return Gradients::NotApplicable;
    };
    match autodiff.grad(user, &loss.name, &params) {
        Ok(g) => Gradients::Built(g),
        Err(e) => {
            tracing::warn!(graph = user.name(), "gradient check skipped: {e}");
            Gradients::Failed(
                Finding::new(
                    Kind::CHECK_SKIPPED,
                    format!("gradient check skipped: autodiff cannot differentiate '{}' with respect to the parameters: {e}", loss.name),
                )
                .with_details(json!({"check": "gradient", "loss": loss.name, "params": params, "reason": e.to_string()})),
            )
        }
    }
}
