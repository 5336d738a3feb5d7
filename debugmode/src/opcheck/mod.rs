//! Checking one op on its own, for kernel authors (in the spirit of
//! PyTorch's OpInfo and `torch.library.opcheck`): proptest generates
//! samples of the op's attributes and inputs (see [`sample`] and
//! [`attrs`]), each runs alone in a one-node graph under DebugMode's
//! checks, and a failing sample is shrunk by proptest to a minimal one and
//! can be written as a case directory (views included, see [`case`]).
//!
//! A sample the op's factory or `infer` refuses is a rejection, not a
//! failure. A sample fails on an error finding other than `non_finite`
//! (random inputs outside an op's domain make NaN legitimately); a panic
//! in the factory or `infer` is an `op_panic` too. A sample whose run
//! fails with an op error is counted, not judged. Where the op's outputs
//! are float and autodiff can differentiate it, the first few float
//! samples also get DebugMode's gradient check (a graph autodiff cannot
//! differentiate is noted, not failed).

pub mod attrs;
pub mod case;
pub mod sample;

use std::cell::RefCell;
use std::path::PathBuf;

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use vigil_engine::ops::OpRegistry;
use vigil_findings::{Finding, Kind};

use crate::config::{Check, DebugConfig};
use crate::error::Result;
use crate::mode::DebugMode;
pub use sample::{Input, Sample, ShapeOf, View};

/// What `opcheck` does.
#[derive(Clone, Debug)]
pub struct OpcheckConfig {
    pub seed: u64,
    /// Samples to run (refused ones do not count).
    pub cases: usize,
    /// The checks every sample runs under (every check but the gradient
    /// one, which runs on its own graph, by default).
    pub debug: DebugConfig,
    /// Samples that also get the gradient check (float ones, while the op
    /// has a gradient rule); 0 turns the gradient check off.
    pub gradient_samples: usize,
    /// Where to write the failing sample as a case directory `DIR/OP`.
    pub out: Option<PathBuf>,
    /// Shrinking steps at most (each one a DebugMode run).
    pub max_shrink_iters: u32,
    /// Attribute sets to make the op with (one per sample, shrinking
    /// toward the first); empty: the built-in table's strategy for the
    /// op's name ([`attrs::strategy`]), no attributes for an op it does
    /// not name.
    pub attrs: Vec<vigil_engine::ops::Attrs>,
}

impl Default for OpcheckConfig {
    fn default() -> Self {
        let mut debug = DebugConfig::all();
        debug.checks.remove(&Check::Gradient);
        OpcheckConfig {
            seed: 0,
            cases: 32,
            debug,
            gradient_samples: 3,
            out: None,
            max_shrink_iters: 256,
            attrs: Vec::new(),
        }
    }
}

/// What `opcheck` found for one op.
#[derive(Debug)]
pub struct OpcheckReport {
    pub op: String,
    /// Why the op could not be checked at all (an unknown op, attributes
    /// the op's factory refuses every time); `None` when it was.
    pub not_checked: Option<String>,
    /// Samples run under DebugMode.
    pub ran: usize,
    /// Samples the op's factory or `infer` refused.
    pub rejected: usize,
    /// Samples whose run failed (an op error on inputs `infer` took), and
    /// the first such error.
    pub errors: usize,
    pub first_error: Option<String>,
    /// Samples that got the gradient check, and why it did not apply to
    /// one (the first reason, e.g. no gradient rule).
    pub gradient_checked: usize,
    pub gradient_skipped: Option<String>,
    /// The findings of the (shrunk) failing sample; empty when every
    /// sample passed.
    pub findings: Vec<Finding>,
    pub failing: Option<Sample>,
    /// The case directory written for the failing sample.
    pub case_dir: Option<PathBuf>,
}

impl OpcheckReport {
    /// No finding, and the op was checked.
    pub fn passed(&self) -> bool {
        self.findings.is_empty() && self.not_checked.is_none()
    }
}

/// Checks `op` of `registry` with the default configuration.
pub fn opcheck(registry: &OpRegistry, op: &str) -> Result<OpcheckReport> {
    opcheck_with(registry, op, &OpcheckConfig::default())
}

/// What one sample gave.
enum Outcome {
    /// The factory or `infer` refused it.
    Refused,
    /// The run failed with an op error.
    RunError(String),
    /// The failures (empty: clean), and whether the gradient check ran and
    /// why it did not apply.
    Judged {
        failures: Vec<Finding>,
        gradient: Option<std::result::Result<(), String>>,
    },
}

/// Counts while the samples run (not while proptest shrinks).
#[derive(Default)]
struct Tally {
    ran: usize,
    rejected: usize,
    errors: usize,
    first_error: Option<String>,
    gradient_checked: usize,
    gradient_skipped: Option<String>,
    /// The kind of the first failure: shrinking keeps it.
    kind: Option<Kind>,
}

/// Checks `op` of `registry`: see the module documentation.
pub fn opcheck_with(registry: &OpRegistry, op: &str, cfg: &OpcheckConfig) -> Result<OpcheckReport> {
    let mut report = OpcheckReport {
        op: op.to_string(),
        not_checked: None,
        ran: 0,
        rejected: 0,
        errors: 0,
        first_error: None,
        gradient_checked: 0,
        gradient_skipped: None,
        findings: Vec::new(),
        failing: None,
        case_dir: None,
    };
    if !registry.contains(op) {
        report.not_checked = Some(format!("unknown op '{op}'"));
        return Ok(report);
    }
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&cfg.seed.to_le_bytes());
    let config = Config {
        cases: cfg.cases as u32,
        max_global_rejects: (cfg.cases as u32).saturating_mul(64).max(256),
        max_local_rejects: 65536,
        max_shrink_iters: cfg.max_shrink_iters,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed));
    let attrs = if cfg.attrs.is_empty() {
        attrs::strategy(op)
    } else {
        proptest::sample::select(cfg.attrs.clone()).boxed()
    };
    let signatures = sample::signatures(registry, op, &attrs, &mut runner);
    if signatures.is_empty() {
        let why = match registry.make(op, &vigil_engine::ops::Attrs::new()) {
            Err(e) => format!("no attributes the op takes could be generated ({e})"),
            Ok(_) => "no attributes the op takes could be generated".to_string(),
        };
        report.not_checked = Some(why);
        return Ok(report);
    }
    let strategy = sample::samples(signatures, attrs);
    let tally = RefCell::new(Tally::default());
    let result = runner.run(&strategy, |s| {
        let shrinking = tally.borrow().kind.is_some();
        let gradient = {
            let t = tally.borrow();
            match &t.kind {
                Some(k) => *k == Kind::GRADIENT_MISMATCH,
                // Once the check does not apply (no gradient rule), it
                // will not for the next sample either.
                None => t.gradient_checked < cfg.gradient_samples && t.gradient_skipped.is_none(),
            }
        };
        let outcome = judge(registry, op, &s, cfg, gradient);
        let mut t = tally.borrow_mut();
        match outcome {
            Outcome::Refused => {
                if !shrinking {
                    t.rejected += 1;
                }
                Err(TestCaseError::reject("refused by the op"))
            }
            Outcome::RunError(e) => {
                if !shrinking {
                    t.ran += 1;
                    t.errors += 1;
                    t.first_error.get_or_insert(e);
                }
                Ok(())
            }
            Outcome::Judged { failures, gradient } => {
                if !shrinking {
                    t.ran += 1;
                    match gradient {
                        Some(Ok(())) => t.gradient_checked += 1,
                        Some(Err(why)) => {
                            t.gradient_skipped.get_or_insert(why);
                        }
                        None => {}
                    }
                }
                let Some(first) = failures.first() else {
                    return Ok(());
                };
                match &t.kind {
                    None => t.kind = Some(first.kind.clone()),
                    Some(k) if !failures.iter().any(|f| &f.kind == k) => return Ok(()),
                    Some(_) => {}
                }
                Err(TestCaseError::fail(first.kind.name().to_string()))
            }
        }
    });
    let t = tally.into_inner();
    report.ran = t.ran;
    report.rejected = t.rejected;
    report.errors = t.errors;
    report.first_error = t.first_error;
    report.gradient_checked = t.gradient_checked;
    report.gradient_skipped = t.gradient_skipped;
    let minimal = match result {
        Ok(()) | Err(TestError::Abort(_)) => return Ok(report),
        Err(TestError::Fail(_, minimal)) => minimal,
    };
    report.findings = match judge(registry, op, &minimal, cfg, true) {
        Outcome::Judged { failures, .. } if !failures.is_empty() => failures,
        _ => vec![Finding::new(
            Kind::NONDETERMINISTIC,
            format!(
                "the op failed on sample {} but not when it ran again",
                minimal.describe()
            ),
        )
        .at("op", op)],
    };
    if let Some(dir) = &cfg.out {
        let gradient = report.findings[0].kind == Kind::GRADIENT_MISMATCH;
        if let Ok(Some((g, feeds))) = sample::build(registry, op, &minimal, gradient) {
            let dir = dir.join(op);
            case::write(&dir, &g, &feeds)?;
            report.case_dir = Some(dir);
        }
    }
    report.failing = Some(minimal);
    Ok(report)
}

/// Runs one sample under the checks and, when it is clean and `gradient`
/// allows, the gradient check.
fn judge(registry: &OpRegistry, op: &str, s: &Sample, cfg: &OpcheckConfig, gradient: bool) -> Outcome {
    let (g, feeds) = match sample::build(registry, op, s, false) {
        Ok(Some(b)) => b,
        Ok(None) => return Outcome::Refused,
        Err(sample::InferPanic(p)) => {
            return Outcome::Judged {
                failures: vec![Finding::new(
                    Kind::OP_PANIC,
                    format!(
                        "the op's factory or infer panicked on sample {}: {p}",
                        s.describe()
                    ),
                )
                .at("op", op)],
                gradient: None,
            }
        }
    };
    let found = match crate::guard::catch(|| DebugMode::new(cfg.debug.clone()).check(&g, &feeds)) {
        Ok(Ok(r)) => failures(r.findings),
        Ok(Err(e)) => return Outcome::RunError(e.to_string()),
        Err(p) => return Outcome::RunError(format!("DebugMode panicked: {p}")),
    };
    if !found.is_empty() || !gradient || cfg.gradient_samples == 0 {
        return Outcome::Judged {
            failures: found,
            gradient: None,
        };
    }
    if !s.inputs.iter().any(|i| i.dtype.is_float()) {
        return Outcome::Judged {
            failures: found,
            gradient: None,
        };
    }
    let Ok(Some((g, feeds))) = sample::build(registry, op, s, true) else {
        return Outcome::Judged {
            failures: found,
            gradient: None,
        };
    };
    let mut grad = cfg.debug.clone();
    grad.checks = [Check::Gradient].into_iter().collect();
    let (failures, gradient) = match crate::guard::catch(|| DebugMode::new(grad).check(&g, &feeds)) {
        Ok(Ok(r)) => {
            let skipped = r.findings.iter().find(|f| f.kind == Kind::CHECK_SKIPPED);
            let gradient = match skipped {
                Some(f) => Err(f.message.clone()),
                None => Ok(()),
            };
            (failures(r.findings), Some(gradient))
        }
        Ok(Err(e)) => (
            Vec::new(),
            Some(Err(format!("the gradient graph did not run: {e}"))),
        ),
        Err(p) => (Vec::new(), Some(Err(format!("the gradient check panicked: {p}")))),
    };
    Outcome::Judged { failures, gradient }
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
