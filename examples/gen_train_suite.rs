//! Writes the `train` suite: whole training steps (forward, autodiff
//! backward, the optimizer's in-place updates) of a small ReLU MLP with
//! softmax cross-entropy on a fixed batch of iris rows, built with the
//! public API (`GraphBuilder`, `vigil_train::build_step`), one case per
//! optimizer, plus one whose forward reads its input through a reversing
//! `strided_slice` and its hidden weights through a negative-stride
//! `create_view` of a wider parameter.
//!
//! ```text
//! cargo run --example gen_train_suite -- suites/train
//! ```
//!
//! The expected outputs (the loss and every updated parameter and optimizer
//! state the step returns) come from the reference below: plain f64 loops
//! for the forward, the backward and the textbook update rules, on the
//! case's values rounded to its dtype, cast to the dtype at the end. They
//! are not produced by running Vigil. Parameters (the model's and the
//! optimizer state, which starts non-zero here as if earlier steps had run)
//! are stored as `params/*.npy`. The optimizer's per-step inputs are named
//! `optim_*` (`build_step` names them `optim:*`, which is no file name).
//! Running the generator twice gives identical files.

#[allow(dead_code)]
#[path = "train_mlp.rs"]
mod train_mlp;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{ensure, Context, Result};
use vigil_engine::graph::{GraphFile, ValueDecl};
use vigil_engine::{Attrs, DType, Graph, GraphBuilder, IndexSpec, Sym, Tensor};
use vigil_train::{build_step, parameters, Adam, Optimizer, Sgd};

const HIDDEN: usize = 8;
const CLASSES: usize = 3;
/// Columns of the wide hidden-weight parameter in the view case.
const WIDE: usize = 16;

/// An update rule with its hyper-parameters, for the graph and the reference.
#[derive(Clone, Copy)]
enum Rule {
    Sgd {
        lr: f64,
    },
    Momentum {
        lr: f64,
        mu: f64,
    },
    Adam {
        lr: f64,
        b1: f64,
        b2: f64,
        eps: f64,
        decay: f64,
        t: usize,
    },
}

impl Rule {
    fn optimizer(self) -> Box<dyn Optimizer> {
        match self {
            Rule::Sgd { lr } => Box::new(Sgd::new(lr)),
            Rule::Momentum { lr, mu } => Box::new(Sgd::new(lr).with_momentum(mu)),
            Rule::Adam {
                lr, b1, b2, decay, ..
            } => Box::new(Adam::new(lr).betas(b1, b2).weight_decay(decay)),
        }
    }

    /// The step number the per-step inputs are for.
    fn t(self) -> usize {
        match self {
            Rule::Adam { t, .. } => t,
            _ => 1,
        }
    }

    /// The state each parameter carries, in the order `build_step` returns
    /// it (before the parameter itself).
    fn states(self) -> &'static [&'static str] {
        match self {
            Rule::Sgd { .. } => &[],
            Rule::Momentum { .. } => &["velocity"],
            Rule::Adam { .. } => &["adam_m", "adam_v"],
        }
    }

    /// The updated state (same order as `states`) and parameter, in f64.
    fn update(self, w: &[f64], g: &[f64], state: &[Vec<f64>]) -> Vec<Vec<f64>> {
        match self {
            Rule::Sgd { lr } => vec![w.iter().zip(g).map(|(w, g)| w - lr * g).collect()],
            Rule::Momentum { lr, mu } => {
                let v: Vec<f64> = state[0].iter().zip(g).map(|(v, g)| mu * v + g).collect();
                let w = w.iter().zip(&v).map(|(w, v)| w - lr * v).collect();
                vec![v, w]
            }
            Rule::Adam {
                lr,
                b1,
                b2,
                eps,
                decay,
                t,
            } => {
                let m: Vec<f64> = state[0]
                    .iter()
                    .zip(g)
                    .map(|(m, g)| b1 * m + (1.0 - b1) * g)
                    .collect();
                let v: Vec<f64> = state[1]
                    .iter()
                    .zip(g)
                    .map(|(v, g)| b2 * v + (1.0 - b2) * g * g)
                    .collect();
                let (k1, k2) = (1.0 - b1.powi(t as i32), 1.0 - b2.powi(t as i32));
                let w = w
                    .iter()
                    .zip(m.iter().zip(&v))
                    .map(|(w, (m, v))| w * (1.0 - lr * decay) - lr * (m / k1) / ((v / k2).sqrt() + eps))
                    .collect();
                vec![m, v, w]
            }
        }
    }
}

/// One case: the model's dtype and shape, its update rule, and how the
/// forward indexes the input and the hidden weights.
struct Spec {
    name: &'static str,
    about: &'static str,
    dtype: DType,
    rule: Rule,
    /// `x[:, ::-1]` (strided_slice) and `w_hidden[:, 15:0:-2]`
    /// (create_view of a [4, 16] parameter) instead of plain reads.
    views: bool,
    seed: u64,
}

/// Values rounded to `dt` (so the reference sees what the case stores).
fn round(dt: DType, v: f64) -> f64 {
    match dt {
        DType::F32 => v as f32 as f64,
        _ => v,
    }
}

/// A fixed LCG with uniform values in `[lo, hi)`.
struct Lcg(u64);
impl Lcg {
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (hi - lo) * ((self.0 >> 11) as f64 / (1u64 << 53) as f64)
    }
    fn fill(&mut self, dt: DType, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| round(dt, self.uniform(lo, hi))).collect()
    }
}

/// A value of the case: its shape and elements (already rounded).
#[derive(Clone)]
struct Value {
    shape: Vec<usize>,
    data: Vec<f64>,
}

impl Value {
    fn tensor(&self, dt: DType) -> Result<Tensor> {
        Ok(Tensor::from_vec(&self.shape, self.data.clone())?.cast(dt)?)
    }
}

/// Every 12th iris row (13 rows, all three classes), standardized with the
/// whole data set's mean and deviation.
fn batch(dt: DType) -> Result<(Vec<[f64; 4]>, Vec<i64>)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/iris.csv");
    let (xs, ys) = train_mlp::load(&path)?;
    let n = xs.len() as f64;
    let mut mean = [0f64; 4];
    let mut std = [0f64; 4];
    for k in 0..4 {
        mean[k] = xs.iter().map(|x| x[k] as f64).sum::<f64>() / n;
        std[k] = (xs.iter().map(|x| (x[k] as f64 - mean[k]).powi(2)).sum::<f64>() / n).sqrt();
    }
    let rows: Vec<usize> = (0..xs.len()).step_by(12).collect();
    let x = rows
        .iter()
        .map(|&r| std::array::from_fn(|k| round(dt, (xs[r][k] as f64 - mean[k]) / std[k])))
        .collect();
    Ok((x, rows.iter().map(|&r| ys[r]).collect()))
}

/// The forward graph (`loss` only) and the model parameters' initial values.
fn forward(s: &Spec, rng: &mut Lcg) -> Result<(Graph, HashMap<String, Value>)> {
    let dt = s.dtype;
    let width = if s.views { WIDE } else { HIDDEN };
    let glorot = |i: usize, o: usize| (6.0 / (i + o) as f64).sqrt();
    let mut values = HashMap::new();
    let mut param = |b: &GraphBuilder, name: &str, shape: &[usize], lim: f64| -> Result<Sym> {
        let v = Value {
            shape: shape.to_vec(),
            data: rng.fill(dt, shape.iter().product(), -lim, lim),
        };
        let sym = b.parameter(name, v.tensor(dt)?);
        values.insert(name.to_string(), v);
        Ok(sym)
    };
    let b = GraphBuilder::new(s.name);
    let x = b.input("x", dt, &[-1, 4]);
    let labels = b.input("labels", DType::I64, &[-1]);
    let w0 = param(&b, "w_hidden", &[4, width], glorot(4, HIDDEN))?;
    let b0 = param(&b, "b_hidden", &[HIDDEN], 0.1)?;
    let w1 = param(&b, "w_out", &[HIDDEN, CLASSES], glorot(HIDDEN, CLASSES))?;
    let b1 = param(&b, "b_out", &[CLASSES], 0.1)?;
    let (x, w0) = if s.views {
        let all = b.index(IndexSpec::All);
        let rev = b.index(IndexSpec::Interval {
            start: 3,
            end: 0,
            stride: -1,
            inclusive: true,
        });
        let xr = x.op("strided_slice", &[&all, &rev], Attrs::new())?;
        let wv = w0.view(&[
            IndexSpec::All,
            IndexSpec::Interval {
                start: WIDE as i64 - 1,
                end: 0,
                stride: -2,
                inclusive: false,
            },
        ])?;
        // A create_view's (and strided_slice's) shape is known only when it runs; cross_entropy's
        // gradient needs the class count before, so pin the shape.
        (xr.reshape(&[-1, 4])?, wv.reshape(&[4, HIDDEN as i64])?)
    } else {
        (x, w0)
    };
    let h = x.matmul(&w0)?.add(&b0)?.relu()?;
    let logits = b
        .apply_named("logits", "add", &[&h.matmul(&w1)?, &b1], Attrs::new())?
        .remove(0);
    let loss = b
        .apply_named("loss", "cross_entropy", &[&logits, &labels], Attrs::new())?
        .remove(0);
    Ok((b.build(&[&loss])?, values))
}

/// The reference forward and backward: the loss and each model
/// parameter's gradient.
fn reference(
    s: &Spec,
    x: &[[f64; 4]],
    y: &[i64],
    p: &HashMap<String, Value>,
) -> Result<(f64, HashMap<String, Vec<f64>>)> {
    let width = if s.views { WIDE } else { HIDDEN };
    // Which input column and which hidden-weight column each position reads.
    let xcol = |k: usize| if s.views { 3 - k } else { k };
    let wcol = |j: usize| if s.views { WIDE - 1 - 2 * j } else { j };
    let (w0, b0, w1, b1) = (
        &p["w_hidden"].data,
        &p["b_hidden"].data,
        &p["w_out"].data,
        &p["b_out"].data,
    );
    let n = x.len();
    let mut loss = 0.0;
    let (mut gw0, mut gb0) = (vec![0.0; 4 * width], vec![0.0; HIDDEN]);
    let (mut gw1, mut gb1) = (vec![0.0; HIDDEN * CLASSES], vec![0.0; CLASSES]);
    for (xr, &label) in x.iter().zip(y) {
        let pre: Vec<f64> = (0..HIDDEN)
            .map(|j| b0[j] + (0..4).map(|k| xr[xcol(k)] * w0[k * width + wcol(j)]).sum::<f64>())
            .collect();
        ensure!(
            pre.iter().all(|v| v.abs() > 1e-4),
            "{}: a pre-activation within 1e-4 of relu's kink ({pre:?}); choose another seed",
            s.name
        );
        let h: Vec<f64> = pre.iter().map(|v| v.max(0.0)).collect();
        let logits: Vec<f64> = (0..CLASSES)
            .map(|c| b1[c] + (0..HIDDEN).map(|j| h[j] * w1[j * CLASSES + c]).sum::<f64>())
            .collect();
        let top = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = top + logits.iter().map(|l| (l - top).exp()).sum::<f64>().ln();
        loss += (lse - logits[label as usize]) / n as f64;
        let dl: Vec<f64> = (0..CLASSES)
            .map(|c| ((logits[c] - lse).exp() - if c as i64 == label { 1.0 } else { 0.0 }) / n as f64)
            .collect();
        for c in 0..CLASSES {
            gb1[c] += dl[c];
            for j in 0..HIDDEN {
                gw1[j * CLASSES + c] += h[j] * dl[c];
            }
        }
        for j in 0..HIDDEN {
            if pre[j] <= 0.0 {
                continue;
            }
            let dh: f64 = (0..CLASSES).map(|c| dl[c] * w1[j * CLASSES + c]).sum();
            gb0[j] += dh;
            for k in 0..4 {
                gw0[k * width + wcol(j)] += xr[xcol(k)] * dh;
            }
        }
    }
    let grads = HashMap::from([
        ("w_hidden".to_string(), gw0),
        ("b_hidden".to_string(), gb0),
        ("w_out".to_string(), gw1),
        ("b_out".to_string(), gb1),
    ]);
    Ok((loss, grads))
}

/// Non-zero optimizer state, as if earlier steps had run (Adam's second
/// moment positive).
fn state_value(dt: DType, what: &str, like: &Value, rng: &mut Lcg) -> Value {
    let n = like.data.len();
    let data = match what {
        "velocity" => rng.fill(dt, n, -0.05, 0.05),
        "adam_m" => rng.fill(dt, n, -0.01, 0.01),
        _ => rng.fill(dt, n, 1e-5, 1e-3),
    };
    Value {
        shape: like.shape.clone(),
        data,
    }
}

/// `name` as a file stem (`:` is not allowed in a case's file names).
fn stem(name: &str) -> String {
    name.replace(':', "_")
}

fn write_case(dir: &Path, s: &Spec) -> Result<()> {
    let dt = s.dtype;
    let mut rng = Lcg(s.seed);
    let (x, y) = batch(dt)?;
    let (fwd, mut values) = forward(s, &mut rng)?;
    let rule = s.rule;
    let opt = rule.optimizer();
    let step = build_step(&fwd, "loss", opt.as_ref()).with_context(|| format!("{}: build_step", s.name))?;
    let params = parameters(&fwd);
    for p in &params {
        for what in rule.states() {
            let v = state_value(dt, what, &values[p], &mut rng);
            values.insert(format!("{p}:{what}"), v);
        }
    }

    // Expected: the loss, then per parameter its new state and value.
    let (loss, grads) = reference(s, &x, &y, &values)?;
    let mut expected = vec![Value {
        shape: vec![],
        data: vec![loss],
    }];
    for p in &params {
        let state: Vec<Vec<f64>> = rule
            .states()
            .iter()
            .map(|w| values[&format!("{p}:{w}")].data.clone())
            .collect();
        for data in rule.update(&values[p].data, &grads[p], &state) {
            expected.push(Value {
                shape: values[p].shape.clone(),
                data,
            });
        }
    }
    let outputs: Vec<String> = step.outputs().iter().map(|&v| step.var(v).name.clone()).collect();
    ensure!(
        outputs.len() == expected.len(),
        "{}: the step has {} outputs, the reference {}",
        s.name,
        outputs.len(),
        expected.len()
    );

    // The graph file: parameters as npy, optimizer inputs renamed.
    let mut file = GraphFile::from_graph(&step)?;
    let renamed: HashMap<String, String> = file
        .inputs
        .iter_mut()
        .map(|i| {
            let new = stem(&i.name);
            (std::mem::replace(&mut i.name, new.clone()), new)
        })
        .collect();
    for v in file.nodes.iter_mut().flat_map(|n| n.inputs.iter_mut()) {
        if let Some(new) = renamed.get(v.as_str()) {
            *v = new.clone();
        }
    }
    let case = dir.join(s.name);
    if case.exists() {
        std::fs::remove_dir_all(&case)?;
    }
    for sub in ["params", "inputs", "expected"] {
        std::fs::create_dir_all(case.join(sub))?;
    }
    for decl in &mut file.parameters {
        let v = values
            .get(&decl.name)
            .with_context(|| format!("{}: no value for parameter '{}'", s.name, decl.name))?;
        let rel = format!("params/{}.npy", stem(&decl.name));
        v.tensor(dt)?.write_npy(case.join(&rel))?;
        *decl = ValueDecl {
            name: decl.name.clone(),
            dtype: Some(dt),
            shape: Some(v.shape.clone()),
            data: None,
            npy: Some(rel),
            fill: None,
        };
    }
    std::fs::write(
        case.join("graph.json"),
        serde_json::to_string_pretty(&file)? + "\n",
    )?;

    let xs = Value {
        shape: vec![x.len(), 4],
        data: x.iter().flatten().copied().collect(),
    };
    xs.tensor(dt)?.write_npy(case.join("inputs/x.npy"))?;
    Tensor::from_vec(&[y.len()], y)?.write_npy(case.join("inputs/labels.npy"))?;
    for (name, t) in opt.feeds(rule.t())? {
        t.write_npy(case.join(format!("inputs/{}.npy", stem(&name))))?;
    }
    for (name, v) in outputs.iter().zip(&expected) {
        let data = v.data.iter().map(|&d| round(dt, d)).collect();
        let v = Value {
            shape: v.shape.clone(),
            data,
        };
        v.tensor(dt)?
            .write_npy(case.join(format!("expected/{name}.npy")))?;
    }
    Ok(())
}

fn specs() -> Vec<Spec> {
    let adam = |lr, decay, t| Rule::Adam {
        lr,
        b1: 0.9,
        b2: 0.999,
        eps: 1e-8,
        decay,
        t,
    };
    vec![
        Spec {
            name: "mlp_sgd_f32",
            about: "4-8-3 ReLU MLP, softmax cross-entropy on 13 iris rows, SGD (lr 0.1)",
            dtype: DType::F32,
            rule: Rule::Sgd { lr: 0.1 },
            views: false,
            seed: 6,
        },
        Spec {
            name: "mlp_momentum_f32",
            about: "the same MLP under SGD with momentum (lr 0.05, μ 0.9), velocity starting non-zero",
            dtype: DType::F32,
            rule: Rule::Momentum { lr: 0.05, mu: 0.9 },
            views: false,
            seed: 2,
        },
        Spec {
            name: "mlp_adam_f32",
            about: "the same MLP under Adam (lr 0.01, β 0.9/0.999, ε 1e-8) at step 3, moments starting non-zero",
            dtype: DType::F32,
            rule: adam(0.01, 0.0, 3),
            views: false,
            seed: 3,
        },
        Spec {
            name: "mlp_adamw_f64",
            about: "the same MLP in f64 under AdamW (lr 0.01, decay 0.1) at step 5",
            dtype: DType::F64,
            rule: adam(0.01, 0.1, 5),
            views: false,
            seed: 4,
        },
        Spec {
            name: "mlp_views_momentum_f32",
            about: "the MLP reading x[:, ::-1] (strided_slice) and w_hidden[:, 15:0:-2] (create_view of a [4, 16] parameter, reshaped to [4, 8]: the gradient of the unread columns is zero), SGD with momentum",
            dtype: DType::F32,
            rule: Rule::Momentum { lr: 0.05, mu: 0.9 },
            views: true,
            seed: 5,
        },
    ]
}

fn main() -> Result<()> {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "suites/train".into()));
    let specs = specs();
    let mut readme = vec![
        "# train suite".to_string(),
        String::new(),
        "Whole training steps: the forward of a small ReLU MLP with softmax cross-entropy on a".into(),
        "fixed batch of iris rows (every 12th row of examples/data/iris.csv, standardized), its".into(),
        "autodiff backward and the optimizer's in-place updates of the parameters and their state,".into(),
        "built with `vigil_train::build_step`. Expected outputs (the loss and every updated".into(),
        "parameter and state) come from the f64 reference in examples/gen_train_suite.rs, not from".into(),
        "the engine. Parameters, optimizer state included, are `params/*.npy`; the optimizer's".into(),
        "per-step inputs are `inputs/optim_*.npy`.".into(),
        String::new(),
        "Generated by `cargo run --example gen_train_suite -- suites/train`; do not edit by hand.".into(),
        String::new(),
    ];
    for s in &specs {
        write_case(&out, s)?;
        readme.push(format!("- `{}`: {}", s.name, s.about));
    }
    std::fs::write(out.join("README.md"), readme.join("\n") + "\n")?;
    println!("wrote {} cases to {}", specs.len(), out.display());
    Ok(())
}
