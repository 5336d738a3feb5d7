//! Checking one op on its own, for kernel authors (in the spirit of
//! PyTorch's OpInfo and `torch.library.opcheck`): seeded random samples of
//! inputs, each run alone in a one-node graph under DebugMode's checks.
//!
//! A sample picks a dtype, a shape (rank 0-4, dimensions 0-3, so zero-size
//! and size-1 ones come up), and for each input a view: plain, transposed,
//! reversed (negative strides), at an offset inside a larger buffer, or
//! broadcast (stride 0). Two-input ops sometimes get the same tensor
//! twice. Every other sample reads the inputs through `copy` nodes, so the
//! in-place pass can run the op's in-place variants. Samples the op's
//! `infer` refuses are rejected, not failures.
//!
//! A sample fails on an error finding other than `non_finite` (random
//! inputs outside an op's domain make NaN legitimately); a panic in the
//! op's `infer` is an `op_panic` too. A sample whose run fails with an op
//! error is counted, not judged.
//!
//! The first failing sample is shrunk (smaller dimensions, plain views,
//! distinct inputs) while it still gives a finding of the same kind, and
//! can be written as a case directory `vigil run` and `vigil debug` take.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vigil_engine::graph::{Graph, GraphBuilder};
use vigil_engine::ops::{Attrs, OpRegistry};
use vigil_engine::{DType, Tensor};
use vigil_findings::{Finding, Kind};

use crate::config::{Check, DebugConfig};
use crate::error::Result;
use crate::mode::DebugMode;

/// How an input tensor is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Plain,
    Transposed,
    Reversed,
    Offset,
    Broadcast,
}

const VIEWS: [View; 5] = [
    View::Plain,
    View::Transposed,
    View::Reversed,
    View::Offset,
    View::Broadcast,
];
const DTYPES: [DType; 5] = [DType::F32, DType::F64, DType::I64, DType::I32, DType::Bool];

/// One sample of inputs.
#[derive(Clone, Debug)]
pub struct Sample {
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// One per input.
    pub views: Vec<View>,
    /// Input 1 is input 0.
    pub same_tensor: bool,
    /// The inputs go through `copy` nodes (so in-place variants can run).
    pub copied: bool,
    /// Seeds the values.
    pub values: u64,
}

/// What `opcheck` does.
#[derive(Clone, Debug)]
pub struct OpcheckConfig {
    pub seed: u64,
    /// Samples to run (rejected ones do not count).
    pub cases: usize,
    /// The checks (every check but the gradient one, by default).
    pub debug: DebugConfig,
    /// Where to write the failing sample as a case directory.
    pub out: Option<PathBuf>,
}

impl Default for OpcheckConfig {
    fn default() -> Self {
        let mut debug = DebugConfig::all();
        debug.checks.remove(&Check::Gradient);
        OpcheckConfig {
            seed: 0,
            cases: 32,
            debug,
            out: None,
        }
    }
}

/// What `opcheck` found for one op.
#[derive(Debug)]
pub struct OpcheckReport {
    pub op: String,
    /// Samples run under DebugMode.
    pub ran: usize,
    /// Samples the op's `infer` refused.
    pub rejected: usize,
    /// Samples whose run failed (an op error on inputs `infer` took), and
    /// the first such error.
    pub errors: usize,
    pub first_error: Option<String>,
    /// The findings of the (shrunk) failing sample; empty when every
    /// sample passed.
    pub findings: Vec<Finding>,
    pub failing: Option<Sample>,
    /// The case directory written for the failing sample.
    pub case_dir: Option<PathBuf>,
}

impl OpcheckReport {
    pub fn passed(&self) -> bool {
        self.findings.is_empty()
    }
}

/// Checks `op` of `registry` with the default configuration.
pub fn opcheck(registry: &OpRegistry, op: &str) -> Result<OpcheckReport> {
    opcheck_with(registry, op, &OpcheckConfig::default())
}

/// Checks `op` of `registry`: see the module documentation.
pub fn opcheck_with(registry: &OpRegistry, op: &str, cfg: &OpcheckConfig) -> Result<OpcheckReport> {
    let made = registry.make(op, &Attrs::new())?;
    let arity = made.arity();
    let n = arity.min.max(arity.max.map_or(arity.min.max(1), |m| m.min(2)));
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let mut report = OpcheckReport {
        op: op.to_string(),
        ran: 0,
        rejected: 0,
        errors: 0,
        first_error: None,
        findings: Vec::new(),
        failing: None,
        case_dir: None,
    };
    let mut tries = 0;
    while report.ran < cfg.cases && tries < cfg.cases * 20 {
        tries += 1;
        let rank = rng.gen_range(0..=4);
        let sample = Sample {
            dtype: DTYPES[rng.gen_range(0..DTYPES.len())],
            shape: (0..rank)
                .map(|_| [0, 1, 1, 2, 3, 3][rng.gen_range(0..6)])
                .collect(),
            views: (0..n).map(|_| VIEWS[rng.gen_range(0..VIEWS.len())]).collect(),
            same_tensor: n >= 2 && rng.gen_bool(0.25),
            copied: tries % 2 == 0,
            values: rng.gen(),
        };
        let (g, feeds) = match build(registry, op, &sample) {
            Ok(Some(b)) => b,
            Ok(None) => {
                report.rejected += 1;
                continue;
            }
            Err(InferPanic(p)) => {
                report.findings = vec![Finding::new(
                    Kind::OP_PANIC,
                    format!(
                        "infer panicked on {} inputs of shape {:?}: {p}",
                        sample.dtype, sample.shape
                    ),
                )
                .at("op", op)];
                report.failing = Some(sample);
                break;
            }
        };
        report.ran += 1;
        // A sample the run refuses (an op error on inputs its infer took)
        // is reported as an error, not judged.
        let found = match DebugMode::new(cfg.debug.clone()).check(&g, &feeds) {
            Ok(r) => failures(r.findings),
            Err(e) => {
                report.errors += 1;
                report.first_error.get_or_insert_with(|| e.to_string());
                continue;
            }
        };
        if found.is_empty() {
            continue;
        }
        let (sample, found) = shrink(registry, op, sample, found, &cfg.debug)?;
        if let Some(dir) = &cfg.out {
            if let Ok(Some((g, feeds))) = build(registry, op, &sample) {
                let dir = dir.join(op);
                write_case(&dir, &g, &feeds)?;
                report.case_dir = Some(dir);
            }
        }
        report.findings = found;
        report.failing = Some(sample);
        break;
    }
    Ok(report)
}

/// The findings that fail a sample: errors, but not `non_finite`, which
/// random inputs outside an op's domain (`log` of a negative, `0 / 0`)
/// give legitimately.
fn failures(found: Vec<Finding>) -> Vec<Finding> {
    found
        .into_iter()
        .filter(|f| f.is_error() && f.kind != Kind::NON_FINITE)
        .collect()
}

/// Smaller samples with a finding of the first one's kind, greedily.
fn shrink(
    registry: &OpRegistry,
    op: &str,
    mut sample: Sample,
    mut found: Vec<Finding>,
    cfg: &DebugConfig,
) -> Result<(Sample, Vec<Finding>)> {
    let kind = found[0].kind.clone();
    loop {
        let mut smaller = Vec::new();
        for d in 0..sample.shape.len() {
            let mut s = sample.clone();
            s.shape.remove(d);
            smaller.push(s);
            if sample.shape[d] > 1 {
                let mut s = sample.clone();
                s.shape[d] -= 1;
                smaller.push(s);
            }
        }
        for i in 0..sample.views.len() {
            if sample.views[i] != View::Plain {
                let mut s = sample.clone();
                s.views[i] = View::Plain;
                smaller.push(s);
            }
        }
        if sample.same_tensor {
            smaller.push(Sample {
                same_tensor: false,
                ..sample.clone()
            });
        }
        let mut better = None;
        for s in smaller {
            let Ok(Some((g, feeds))) = build(registry, op, &s) else {
                continue;
            };
            let Ok(r) = DebugMode::new(cfg.clone()).check(&g, &feeds) else {
                continue;
            };
            let f = failures(r.findings);
            if f.iter().any(|x| x.kind == kind) {
                better = Some((s, f));
                break;
            }
        }
        match better {
            Some((s, f)) => {
                sample = s;
                found = f;
            }
            None => return Ok((sample, found)),
        }
    }
}

/// The one-node graph and feeds of `sample`; `None` when the op refuses
/// the inputs' types.
pub fn build(
    registry: &OpRegistry,
    op: &str,
    sample: &Sample,
) -> std::result::Result<Option<Case>, InferPanic> {
    let b = GraphBuilder::with_registry("opcheck", registry.clone());
    let dims: Vec<i64> = sample.shape.iter().map(|&d| d as i64).collect();
    let mut syms: Vec<vigil_engine::Sym> = Vec::new();
    let mut feeds = HashMap::new();
    let mut rng = ChaCha8Rng::seed_from_u64(sample.values);
    let destroys = registry
        .make(op, &Attrs::new())
        .is_ok_and(|o| !o.destroy_map().is_empty());
    for (k, &view) in sample.views.iter().enumerate() {
        if k == 1 && sample.same_tensor {
            let first = syms[0].clone();
            syms.push(first);
            continue;
        }
        let name = format!("x{k}");
        // An in-place op may destroy its input when it is not a copy.
        let x = if destroys {
            b.mutable_input(&name, sample.dtype, &dims)
        } else {
            b.input(&name, sample.dtype, &dims)
        };
        let Ok(t) = tensor(sample.dtype, &sample.shape, view, &mut rng) else {
            return Ok(None);
        };
        feeds.insert(name, t);
        let x = if sample.copied {
            match x.copy() {
                Ok(c) => c,
                Err(_) => return Ok(None),
            }
        } else {
            x
        };
        syms.push(x);
    }
    let refs: Vec<&_> = syms.iter().collect();
    // `infer` is the op's code too: a panic there is a finding.
    let made = crate::guard::catch(|| {
        let outs = b.apply_named("op", op, &refs, Attrs::new()).ok()?;
        b.build(&outs.iter().collect::<Vec<_>>()).ok()
    });
    match made {
        Ok(Some(g)) => Ok(Some((g, feeds))),
        Ok(None) => Ok(None),
        Err(p) => Err(InferPanic(p)),
    }
}

/// A one-node graph and its feeds.
pub type Case = (Graph, HashMap<String, Tensor>);

/// The op's `infer` panicked on a sample.
pub struct InferPanic(pub String);

/// Random values of `shape` laid out as `view` says.
fn tensor(dtype: DType, shape: &[usize], view: View, rng: &mut ChaCha8Rng) -> vigil_engine::Result<Tensor> {
    let mut values = |shape: &[usize]| -> vigil_engine::Result<Tensor> {
        let n: usize = shape.iter().product();
        let v: Vec<f64> = (0..n)
            .map(|_| match dtype {
                DType::Bool => f64::from(u8::from(rng.gen_bool(0.5))),
                d if d.is_float() => (rng.gen_range(-200..=200) as f64) / 100.0,
                _ => rng.gen_range(-5..=5) as f64,
            })
            .collect();
        Tensor::from_vec(shape, v)?.cast(dtype)
    };
    match view {
        View::Transposed if shape.len() >= 2 => {
            let rev: Vec<usize> = shape.iter().rev().copied().collect();
            values(&rev)?.transpose(None)
        }
        View::Reversed => crate::layouts::relaid(&values(shape)?, "reversed"),
        View::Offset => crate::layouts::relaid(&values(shape)?, "guarded"),
        View::Broadcast if !shape.is_empty() => {
            let mut one = shape.to_vec();
            one[0] = 1;
            values(&one)?.broadcast_to(shape)
        }
        _ => values(shape),
    }
}

/// `graph.json` and `inputs/*.npy`: a case `vigil run` and `vigil debug`
/// take (the inputs as dense arrays; the views' layouts are not kept).
fn write_case(dir: &Path, g: &Graph, feeds: &HashMap<String, Tensor>) -> Result<()> {
    let io = |e: std::io::Error| vigil_engine::Error::File {
        path: dir.to_path_buf(),
        msg: e.to_string(),
    };
    std::fs::create_dir_all(dir.join("inputs")).map_err(io)?;
    std::fs::write(dir.join("graph.json"), g.to_json()? + "\n").map_err(io)?;
    for (name, t) in feeds {
        t.write_npy(dir.join("inputs").join(format!("{name}.npy")))?;
    }
    Ok(())
}
