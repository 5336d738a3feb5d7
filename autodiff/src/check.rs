//! Finite-difference gradient check: a graph's `grad:<param>` outputs
//! (analytic gradients of its scalar loss) against central differences,
//! both computed in f64 on the pure graph. Small parameters are probed
//! element by element; large ones along a few random unit directions (a
//! directional derivative costs two runs, whatever the parameter's size).
//! DebugMode turns the failed probes into findings; tests assert on them.

use std::collections::HashMap;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use serde_json::{json, Value};
use vigil_engine::graph::{Graph, VarKind};
use vigil_engine::{inplace, DType, Error, Executor, Result, Tensor};

use crate::transform::GRAD_PREFIX;

/// Finite-difference step and tolerances.
#[derive(Clone, Debug, PartialEq)]
pub struct GradCheckConfig {
    pub eps: f64,
    pub atol: f64,
    pub rtol: f64,
    /// Parameters with at most this many elements are checked element by
    /// element; larger ones along `directions` random directions.
    pub full_max: usize,
    pub directions: usize,
}

impl Default for GradCheckConfig {
    fn default() -> Self {
        GradCheckConfig {
            eps: 1e-6,
            atol: 1e-5,
            rtol: 1e-3,
            full_max: 64,
            directions: 4,
        }
    }
}

/// One probe: a derivative along `at` (an element or a direction).
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    pub at: Value,
    pub analytic: f64,
    pub numeric: f64,
}

impl Probe {
    /// Outside `atol + rtol·|analytic|`, or NaN.
    pub fn failed(&self, cfg: &GradCheckConfig) -> bool {
        let err = (self.analytic - self.numeric).abs();
        err.is_nan() || err > cfg.atol + cfg.rtol * self.analytic.abs()
    }
}

/// The probes of one parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamCheck {
    Probed {
        param: String,
        probes: Vec<Probe>,
    },
    /// The gradient output does not have the parameter's element count.
    WrongSize {
        param: String,
        grad: usize,
        param_len: usize,
    },
}

/// What a gradient check found.
#[derive(Clone, Debug, PartialEq)]
pub enum GradCheck {
    /// The graph has no `grad:<param>` output of a parameter.
    NoGradients,
    /// It has, but no scalar float output to check them against.
    NoLoss,
    Checked {
        loss: String,
        params: Vec<ParamCheck>,
    },
}

impl GradCheck {
    /// Every failed probe, as `(param, probe)`, and every wrong-size gradient
    /// (with no probe); empty when the gradients agree.
    pub fn failures(&self, cfg: &GradCheckConfig) -> Vec<(String, Option<Probe>)> {
        let GradCheck::Checked { params, .. } = self else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for p in params {
            match p {
                ParamCheck::Probed { param, probes } => out.extend(
                    probes
                        .iter()
                        .filter(|x| x.failed(cfg))
                        .map(|x| (param.clone(), Some(x.clone()))),
                ),
                ParamCheck::WrongSize { param, .. } => out.push((param.clone(), None)),
            }
        }
        out
    }
}

/// `g` with every f32 source made f64 (ops infer f64 from there).
pub fn to_f64(g: &Graph) -> Result<Graph> {
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

/// `feeds` with f32 values made f64.
pub fn f64_feeds(feeds: &HashMap<String, Tensor>) -> Result<HashMap<String, Tensor>> {
    feeds
        .iter()
        .map(|(k, t)| {
            let t = if t.dtype() == DType::F32 {
                t.cast(DType::F64)?
            } else {
                t.clone()
            };
            Ok((k.clone(), t))
        })
        .collect()
}

struct Loss<'a> {
    exec: Executor<'a>,
    feeds: HashMap<String, Tensor>,
    loss: String,
}

impl Loss<'_> {
    fn at(&self, param: &str, value: Vec<f64>, shape: &[usize], runs: &mut usize) -> Result<f64> {
        *runs += 1;
        let mut feeds = self.feeds.clone();
        feeds.insert(param.to_string(), Tensor::from_vec(shape, value)?);
        let out = self.exec.run(&feeds)?;
        let missing = || Error::Graph(format!("loss output '{}' was not computed", self.loss));
        let t = out.get(&self.loss).ok_or_else(missing)?;
        t.to_f64_vec()?.first().copied().ok_or_else(missing)
    }
}

/// Checks every `grad:<param>` output of `graph` (for its `Parameter`
/// variables) against central differences of its first scalar float
/// output. `runs` counts graph executions.
pub fn check_gradients(
    graph: &Graph,
    feeds: &HashMap<String, Tensor>,
    cfg: &GradCheckConfig,
    seed: u64,
    runs: &mut usize,
) -> Result<GradCheck> {
    let names: Vec<String> = graph
        .outputs()
        .iter()
        .map(|&v| graph.var(v).name.clone())
        .collect();
    let params: Vec<String> = names
        .iter()
        .filter_map(|n| n.strip_prefix(GRAD_PREFIX))
        .filter(|p| {
            graph
                .var_id(p)
                .is_some_and(|v| matches!(graph.var(v).kind, VarKind::Parameter(_)))
        })
        .map(str::to_string)
        .collect();
    if params.is_empty() {
        return Ok(GradCheck::NoGradients);
    }
    let Some(&loss) = graph.outputs().iter().find(|&&v| {
        let var = graph.var(v);
        !var.name.starts_with(GRAD_PREFIX)
            && var.ty.dtype.is_float()
            && var
                .ty
                .static_shape()
                .is_some_and(|s| s.iter().product::<usize>() == 1)
    }) else {
        return Ok(GradCheck::NoLoss);
    };
    let g = to_f64(&inplace::purify(graph)?)?;
    let loss = Loss {
        exec: Executor::new(&g)?,
        feeds: f64_feeds(feeds)?,
        loss: graph.var(loss).name.clone(),
    };
    *runs += 1;
    let analytic = loss.exec.run(&loss.feeds)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    for p in params {
        let value = match g.var_id(&p).map(|v| &g.var(v).kind) {
            Some(VarKind::Parameter(t)) => loss.feeds.get(&p).unwrap_or(t).clone(),
            _ => continue,
        };
        let shape = value.shape().to_vec();
        let theta = value.to_f64_vec()?;
        let grad_out = format!("{GRAD_PREFIX}{p}");
        let grad = analytic
            .get(&grad_out)
            .ok_or_else(|| Error::Graph(format!("gradient output '{grad_out}' was not computed")))?
            .to_f64_vec()?;
        if grad.len() != theta.len() {
            out.push(ParamCheck::WrongSize {
                param: p,
                grad: grad.len(),
                param_len: theta.len(),
            });
            continue;
        }
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
        let mut probes = Vec::new();
        for (at, d) in directions {
            let plus: Vec<f64> = theta.iter().zip(&d).map(|(t, x)| t + cfg.eps * x).collect();
            let minus: Vec<f64> = theta.iter().zip(&d).map(|(t, x)| t - cfg.eps * x).collect();
            let numeric =
                (loss.at(&p, plus, &shape, runs)? - loss.at(&p, minus, &shape, runs)?) / (2.0 * cfg.eps);
            let analytic: f64 = grad.iter().zip(&d).map(|(g, x)| g * x).sum();
            probes.push(Probe {
                at,
                analytic,
                numeric,
            });
        }
        out.push(ParamCheck::Probed { param: p, probes });
    }
    Ok(GradCheck::Checked {
        loss: loss.loss,
        params: out,
    })
}
