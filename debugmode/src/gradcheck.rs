//! Gradient check: the graph's `grad:<param>` outputs (analytic gradients
//! of its scalar loss) against central finite differences, both computed
//! in f64 on the pure graph. Small parameters are checked element by
//! element; large ones along a few random directions (a directional
//! derivative costs two runs, whatever the parameter's size).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use serde_json::{json, Value};
use vigil_engine::graph::{Graph, VarKind};
use vigil_engine::{inplace, DType, Executor, Tensor};
use vigil_findings::{json_f64, Finding, Kind};

use crate::config::GradConfig;
use crate::error::Result;
use crate::lockstep::Feeds;

/// The prefix that marks an output as the gradient of a parameter.
pub const GRAD_PREFIX: &str = "grad:";

/// `g` with every f32 source made f64 (ops infer f64 from there).
fn to_f64(g: &Graph) -> vigil_engine::Result<Graph> {
    let (mut sources, nodes, outputs) = g.to_specs();
    for s in &mut sources {
        if s.ty.dtype == DType::F32 {
            s.ty.dtype = DType::F64;
            if let VarKind::Constant(t) | VarKind::Parameter(t) = &mut s.kind {
                *t = t.cast(DType::F64)?;
            }
        }
    }
    Graph::new(g.name(), sources, nodes, &outputs)
}

fn f64_feeds(feeds: &Feeds) -> vigil_engine::Result<Feeds> {
    feeds
        .iter()
        .map(|(k, t)| {
            Ok((
                k.clone(),
                if t.dtype() == DType::F32 {
                    t.cast(DType::F64)?
                } else {
                    t.clone()
                },
            ))
        })
        .collect()
}

struct Loss<'a> {
    exec: Executor<'a>,
    feeds: Feeds,
    loss: String,
}

impl Loss<'_> {
    fn at(&self, param: &str, value: Vec<f64>, shape: &[usize], runs: &mut usize) -> Result<f64> {
        *runs += 1;
        let mut feeds = self.feeds.clone();
        feeds.insert(param.to_string(), Tensor::from_vec(shape, value)?);
        let out = self.exec.run(&feeds)?;
        let missing = || vigil_engine::Error::Graph(format!("loss output '{}' was not computed", self.loss));
        let t = out.get(&self.loss).ok_or_else(missing)?;
        t.to_f64_vec()?.first().copied().ok_or_else(|| missing().into())
    }
}

/// `gradient_mismatch` findings, one per parameter whose gradient is off.
pub fn check(
    user: &Graph,
    feeds: &Feeds,
    cfg: &GradConfig,
    seed: u64,
    runs: &mut usize,
) -> Result<Vec<Finding>> {
    let names: Vec<String> = user.outputs().iter().map(|&v| user.var(v).name.clone()).collect();
    let params: Vec<String> = names
        .iter()
        .filter_map(|n| n.strip_prefix(GRAD_PREFIX))
        .filter(|p| {
            user.var_id(p)
                .is_some_and(|v| matches!(user.var(v).kind, VarKind::Parameter(_)))
        })
        .map(str::to_string)
        .collect();
    if params.is_empty() {
        return Ok(Vec::new());
    }
    let Some(loss) = user.outputs().iter().find(|&&v| {
        let var = user.var(v);
        !var.name.starts_with(GRAD_PREFIX)
            && var.ty.dtype.is_float()
            && var
                .ty
                .static_shape()
                .is_some_and(|s| s.iter().product::<usize>() == 1)
    }) else {
        return Ok(vec![Finding::new(
            Kind::GRADIENT_MISMATCH,
            "the graph has grad:<param> outputs but no scalar float loss output to check them against",
        )]);
    };
    let g = to_f64(&inplace::purify(user)?)?;
    let loss = Loss {
        exec: Executor::new(&g)?,
        feeds: f64_feeds(feeds)?,
        loss: user.var(*loss).name.clone(),
    };
    *runs += 1;
    let analytic = loss.exec.run(&loss.feeds)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    for p in &params {
        let v = g.var_id(p).expect("checked above");
        let VarKind::Parameter(value) = &g.var(v).kind else {
            continue;
        };
        let shape = value.shape().to_vec();
        let theta = value.to_f64_vec()?;
        let grad = analytic
            .get(&format!("{GRAD_PREFIX}{p}"))
            .expect("grad output")
            .to_f64_vec()?;
        if grad.len() != theta.len() {
            out.push(Finding::new(
                Kind::GRADIENT_MISMATCH,
                format!(
                    "gradient of '{p}' has {} elements, the parameter {}",
                    grad.len(),
                    theta.len()
                ),
            ));
            continue;
        }
        // (what, analytic, numeric) per probe.
        let mut probes: Vec<(Value, f64, f64)> = Vec::new();
        let directions: Vec<(Value, Vec<f64>)> = if theta.len() <= cfg.full_max {
            (0..theta.len())
                .map(|i| {
                    let mut d = vec![0.0; theta.len()];
                    d[i] = 1.0;
                    (json!({"element": i}), d)
                })
                .collect()
        } else {
            (0..cfg.directions)
                .map(|k| {
                    let d: Vec<f64> = (0..theta.len())
                        .map(|_| StandardNormal.sample(&mut rng))
                        .collect();
                    let norm = d.iter().map(|x| x * x).sum::<f64>().sqrt().max(f64::MIN_POSITIVE);
                    (json!({"direction": k}), d.into_iter().map(|x| x / norm).collect())
                })
                .collect()
        };
        for (what, d) in directions {
            let plus: Vec<f64> = theta.iter().zip(&d).map(|(t, x)| t + cfg.eps * x).collect();
            let minus: Vec<f64> = theta.iter().zip(&d).map(|(t, x)| t - cfg.eps * x).collect();
            let numeric =
                (loss.at(p, plus, &shape, runs)? - loss.at(p, minus, &shape, runs)?) / (2.0 * cfg.eps);
            let analytic: f64 = grad.iter().zip(&d).map(|(g, x)| g * x).sum();
            probes.push((what, analytic, numeric));
        }
        let bad: Vec<&(Value, f64, f64)> = probes
            .iter()
            .filter(|(_, a, n)| {
                let err = (a - n).abs();
                err.is_nan() || err > cfg.atol + cfg.rtol * a.abs()
            })
            .collect();
        if bad.is_empty() {
            continue;
        }
        let mut worst = bad.clone();
        worst.sort_by(|x, y| (y.1 - y.2).abs().total_cmp(&(x.1 - x.2).abs()));
        let (w, a, n) = worst[0];
        out.push(
            Finding::new(
                Kind::GRADIENT_MISMATCH,
                format!(
                    "gradient of '{p}' disagrees with finite differences at {} of {} probes; worst at {w}: analytic {a:.6e}, numeric {n:.6e}",
                    bad.len(),
                    probes.len()
                ),
            )
            .with_details(json!({
                "param": p,
                "probes": probes.len(),
                "failed": bad.len(),
                "eps": cfg.eps, "atol": cfg.atol, "rtol": cfg.rtol,
                "worst": worst.iter().take(10).map(|(w, a, n)| json!({"at": w, "analytic": json_f64(*a), "numeric": json_f64(*n)})).collect::<Vec<_>>(),
            })),
        );
    }
    Ok(out)
}
