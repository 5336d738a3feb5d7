//! Trains a 4-16-3 ReLU MLP on iris (`examples/data/iris.csv`, the UCI
//! data set) with autodiff and SGD with momentum, under the non-in-place
//! validator, a ScoreListener and a HistoryListener; writes a
//! loss-and-accuracy SVG and the JSON history, and prints the test accuracy.
//!
//! `cargo run --release --example train_mlp [-- [--seed N] [--epochs N] [--debug [--debug-every N]]]`:
//! with `--debug`, every N iterations (default 50) the training step also
//! runs under DebugMode (every check, the autodiff gradient check
//! included), and its findings go into `debug_report.json`.
//!
//! The split is fixed: the rows are shuffled with LCG seed 42 and the first
//! 10 flowers of each class are the test set (30), the other 120 train, in
//! batches of 16. `--seed` (default 1) only sets the weights' initial
//! values. `tests/train_suite.rs` runs `run` below.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;
use vigil_debugmode::{Check, DebugConfig, DebugMode};
use vigil_engine::exec::{At, Flow, Listener};
use vigil_engine::{Attrs, DType, Graph, GraphBuilder, Tensor};
use vigil_listeners::{HistoryListener, ListenerSet, NonInplaceValidationListener, ScoreListener, Validator};
use vigil_train::{Feeds, Sgd, Trainer, Validation};

const HIDDEN: usize = 16;
const EPOCHS: usize = 100;
const BATCH: usize = 16;
/// The shuffle before the split (fixed, so every run tests the same 30 flowers).
const SPLIT_SEED: u64 = 42;

/// What one training run does.
pub struct Options {
    pub epochs: usize,
    /// Seed of the weights' initial values.
    pub seed: u64,
    /// Run the step under DebugMode every this many iterations.
    pub debug_every: Option<usize>,
    /// Where the SVG, the history and the debug report go.
    pub out_dir: PathBuf,
}

/// What a run wrote and measured.
pub struct Outcome {
    pub accuracy: f64,
    /// Findings of the validators plugged into the trainer.
    pub findings: usize,
    pub svg: PathBuf,
    pub history: PathBuf,
    /// With `debug_every`: the report and how many DebugMode runs and
    /// findings it holds.
    pub debug: Option<DebugOutcome>,
}

pub struct DebugOutcome {
    pub report: PathBuf,
    pub runs: usize,
    pub findings: usize,
    pub error: Option<String>,
}

/// Uniform values in `[lo, hi)` from a fixed LCG (reproducible runs).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, lo: f32, hi: f32) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (hi - lo) * ((self.0 >> 40) as f32 / (1u64 << 24) as f32)
    }
}

/// Features and class ids of the iris CSV.
pub fn load(path: &Path) -> Result<(Vec<[f32; 4]>, Vec<i64>)> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for (i, line) in text
        .lines()
        .enumerate()
        .skip(1)
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 5 {
            bail!("{}:{}: expected 5 fields, got {}", path.display(), i + 1, f.len());
        }
        let mut x = [0f32; 4];
        for (k, v) in x.iter_mut().enumerate() {
            *v = f[k]
                .parse()
                .with_context(|| format!("{}:{}: field {}", path.display(), i + 1, k + 1))?;
        }
        let y = match f[4] {
            "Iris-setosa" => 0,
            "Iris-versicolor" => 1,
            "Iris-virginica" => 2,
            other => bail!("{}:{}: unknown species '{other}'", path.display(), i + 1),
        };
        xs.push(x);
        ys.push(y);
    }
    Ok((xs, ys))
}

fn feeds(xs: &[[f32; 4]], ys: &[i64]) -> Result<Feeds> {
    Ok(HashMap::from([
        (
            "x".to_string(),
            Tensor::from_vec(&[xs.len(), 4], xs.iter().flatten().copied().collect())?,
        ),
        ("labels".to_string(), Tensor::from_vec(&[ys.len()], ys.to_vec())?),
    ]))
}

/// The forward graph: logits and the cross-entropy loss.
fn model(rng: &mut Lcg) -> Result<Graph> {
    let b = GraphBuilder::new("iris_mlp");
    let x = b.input("x", DType::F32, &[-1, 4]);
    let labels = b.input("labels", DType::I64, &[-1]);
    let mut layer = |name: &str, i: usize, o: usize| -> Result<(vigil_engine::Sym, vigil_engine::Sym)> {
        let s = (6.0 / (i + o) as f32).sqrt();
        let w = (0..i * o).map(|_| rng.next(-s, s)).collect();
        Ok((
            b.parameter(&format!("w_{name}"), Tensor::from_vec(&[i, o], w)?),
            b.parameter(&format!("b_{name}"), Tensor::from_vec(&[o], vec![0f32; o])?),
        ))
    };
    let (w0, b0) = layer("hidden", 4, HIDDEN)?;
    let (w1, b1) = layer("out", HIDDEN, 3)?;
    let h = x.matmul(&w0)?.add(&b0)?.relu()?;
    let logits = b
        .apply_named("logits", "add", &[&h.matmul(&w1)?, &b1], Attrs::new())?
        .remove(0);
    let loss = b
        .apply_named("loss", "cross_entropy", &[&logits, &labels], Attrs::new())?
        .remove(0);
    Ok(b.build(&[&loss, &logits])?)
}

/// A progress bar per epoch.
struct Progress {
    bar: Option<ProgressBar>,
    per_epoch: u64,
}

impl Listener for Progress {
    fn epoch_start(&mut self, at: &At) {
        let bar = ProgressBar::new(self.per_epoch);
        if let Ok(style) = ProgressStyle::with_template("epoch {msg:>3} [{bar:30}] {pos}/{len}") {
            bar.set_style(style);
        }
        bar.set_message(format!("{}", at.epoch + 1));
        self.bar = Some(bar);
    }
    fn iteration_done(&mut self, _: &At, _: Option<f64>) {
        if let Some(b) = &self.bar {
            b.inc(1);
        }
    }
    fn epoch_end(&mut self, _: &At) -> Flow {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
        Flow::Continue
    }
}

/// DebugMode's default checks plus the gradient check, which builds the
/// step's gradients with autodiff and compares them with finite differences.
pub fn debug_config() -> DebugConfig {
    let mut cfg = DebugConfig::default();
    cfg.checks.insert(Check::Gradient);
    cfg
}

/// Runs the training step under DebugMode every `every` iterations.
struct DebugEvery {
    step: Graph,
    batches: Vec<Feeds>,
    every: usize,
    runs: usize,
    findings: Vec<serde_json::Value>,
    error: Option<String>,
}

impl Listener for DebugEvery {
    fn iteration_start(&mut self, at: &At) {
        if !at.iteration.is_multiple_of(self.every) || self.batches.is_empty() {
            return;
        }
        let feeds = &self.batches[at.iteration % self.batches.len()];
        match DebugMode::new(debug_config()).check(&self.step, feeds) {
            Ok(report) => {
                self.runs += 1;
                for f in report.findings {
                    self.findings
                        .push(serde_json::json!({"iteration": at.iteration, "finding": f}));
                }
            }
            Err(e) => {
                self.error
                    .get_or_insert(format!("iteration {}: {e}", at.iteration));
            }
        }
    }
}

fn plot(path: &Path, history: &HistoryListener) -> Result<()> {
    let losses: Vec<(f64, f64)> = history
        .records()
        .iter()
        .filter(|r| r.event == "iteration")
        .filter_map(|r| Some((r.iteration as f64, r.loss?)))
        .collect();
    let acc: Vec<(f64, f64)> = history
        .records()
        .iter()
        .filter(|r| r.event == "validation")
        .filter_map(|r| Some((r.epoch as f64 + 1.0, r.accuracy?)))
        .collect();
    let root = SVGBackend::new(path, (1000, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(500);
    let max_loss = losses.iter().map(|p| p.1).fold(0.0, f64::max).max(1e-3);
    let mut c = ChartBuilder::on(&left)
        .caption("training loss", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(40)
        .build_cartesian_2d(0.0..losses.len().max(1) as f64, 0.0..max_loss * 1.05)?;
    c.configure_mesh().x_desc("iteration").draw()?;
    c.draw_series(LineSeries::new(losses, &BLUE))?;
    let mut c = ChartBuilder::on(&right)
        .caption("test accuracy", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(40)
        .build_cartesian_2d(0.0..acc.len().max(1) as f64 + 1.0, 0.0..1.05)?;
    c.configure_mesh().x_desc("epoch").draw()?;
    c.draw_series(LineSeries::new(acc, &RED))?;
    root.present()?;
    Ok(())
}

/// Loads iris, splits it, trains the MLP under the listeners (and
/// DebugMode every `debug_every` iterations) and writes the curves, the
/// history and the debug report into `out_dir`.
pub fn run(o: &Options) -> Result<Outcome> {
    let out_dir = &o.out_dir;
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let (mut xs, mut ys) = load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/iris.csv"))?;

    // Shuffle, split 120/30, standardize with the training statistics.
    let mut rng = Lcg(SPLIT_SEED);
    for i in (1..xs.len()).rev() {
        let j = (rng.next(0.0, 1.0) * (i + 1) as f32) as usize % (i + 1);
        xs.swap(i, j);
        ys.swap(i, j);
    }
    // Stratified: the first 10 of each class (after the shuffle) are the test set.
    let mut seen = [0usize; 3];
    let (mut train, mut test): (Vec<_>, Vec<_>) = (Vec::new(), Vec::new());
    for (x, y) in xs.iter().zip(&ys) {
        seen[*y as usize] += 1;
        if seen[*y as usize] <= 10 {
            &mut test
        } else {
            &mut train
        }
        .push((*x, *y));
    }
    let n_train = train.len();
    let (xs, ys): (Vec<[f32; 4]>, Vec<i64>) = train.into_iter().chain(test).unzip();
    let mut xs = xs;
    for k in 0..4 {
        let col: Vec<f32> = xs[..n_train].iter().map(|x| x[k]).collect();
        let mean = col.iter().sum::<f32>() / n_train as f32;
        let std = (col.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / n_train as f32)
            .sqrt()
            .max(1e-6);
        xs.iter_mut().for_each(|x| x[k] = (x[k] - mean) / std);
    }
    let batches = xs[..n_train]
        .chunks(BATCH)
        .zip(ys[..n_train].chunks(BATCH))
        .map(|(x, y)| feeds(x, y))
        .collect::<Result<Vec<_>>>()?;
    let test = feeds(&xs[n_train..], &ys[n_train..])?;

    let forward = model(&mut Lcg(o.seed))?;
    let mut trainer = Trainer::new(&forward, "loss", Sgd::new(0.05).with_momentum(0.9))?;
    trainer.validate_on(Validation {
        feeds: test,
        logits: "logits".into(),
        labels: "labels".into(),
    });
    let mut set = ListenerSet::new()
        .with(NonInplaceValidationListener::new())
        .with_listener(ScoreListener::new(50))
        .with_listener(HistoryListener::new())
        .with_listener(Progress {
            bar: None,
            per_epoch: batches.len() as u64,
        });
    if let Some(every) = o.debug_every {
        let step_feeds = batches
            .iter()
            .map(|b| trainer.step_feeds(b))
            .collect::<Result<Vec<_>, _>>()?;
        set.push_listener(DebugEvery {
            step: trainer.step_graph().clone(),
            batches: step_feeds,
            every: every.max(1),
            runs: 0,
            findings: Vec::new(),
            error: None,
        });
    }
    let summary = trainer.fit(o.epochs, &batches, &mut set)?;
    let findings = set.take_findings();
    if !findings.is_empty() {
        eprintln!("validator findings: {}", findings.len());
        for f in &findings {
            eprintln!("  {f:?}");
        }
    }
    let history = set.get::<HistoryListener>().context("history listener")?;
    let svg = out_dir.join("curves.svg");
    plot(&svg, history)?;
    let json = out_dir.join("history.json");
    std::fs::write(&json, history.to_json())?;
    let debug = match set.get::<DebugEvery>() {
        Some(d) => {
            let report = out_dir.join("debug_report.json");
            let body = serde_json::json!({"debug_runs": d.runs, "every": d.every, "error": d.error, "findings": d.findings});
            std::fs::write(&report, serde_json::to_string_pretty(&body)?)?;
            Some(DebugOutcome {
                report,
                runs: d.runs,
                findings: d.findings.len(),
                error: d.error.clone(),
            })
        }
        None => None,
    };
    Ok(Outcome {
        accuracy: summary.last_validation.and_then(|m| m.accuracy).unwrap_or(0.0),
        findings: findings.len(),
        svg,
        history: json,
        debug,
    })
}

/// The value after `flag`, parsed as a positive integer.
fn flag_value<T: std::str::FromStr + PartialOrd + Default>(args: &[String], flag: &str) -> Result<Option<T>> {
    match args.iter().position(|a| a == flag) {
        Some(i) => Ok(Some(
            args.get(i + 1)
                .and_then(|v| v.parse::<T>().ok())
                .filter(|n| *n > T::default())
                .with_context(|| format!("{flag} needs a positive integer"))?,
        )),
        None => Ok(None),
    }
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let every = flag_value::<usize>(&args, "--debug-every")?.unwrap_or(50);
    let o = Options {
        epochs: flag_value(&args, "--epochs")?.unwrap_or(EPOCHS),
        seed: flag_value(&args, "--seed")?.unwrap_or(1),
        debug_every: args.iter().any(|a| a == "--debug").then_some(every),
        out_dir: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/train_mlp"),
    };
    let out = run(&o)?;
    println!("curves: {}", out.svg.display());
    println!("history: {}", out.history.display());
    if let Some(d) = &out.debug {
        println!(
            "debug report: {} ({} runs, {} findings)",
            d.report.display(),
            d.runs,
            d.findings
        );
    }
    println!("test accuracy: {:.2}", out.accuracy);
    Ok(())
}
