//! DebugMode's self-test: each op of [`crate::broken`] in a small graph,
//! checked with every check on, must give exactly its intended kinds; each
//! twin must give none.
//!
//! ```
//! let results = vigil_debugmode::selftest::run();
//! assert!(results.iter().all(|r| r.pass), "{results:#?}");
//! ```

use std::collections::{BTreeSet, HashMap};

use vigil_engine::graph::{Graph, GraphBuilder, Sym};
use vigil_engine::ops::Attrs;
use vigil_engine::{DType, Result, Tensor};
use vigil_findings::Kind;
use vigil_listeners::SelftestResult;

use crate::config::DebugConfig;
use crate::mode::DebugMode;

pub use vigil_engine::Feeds;

/// One case: the op, the kinds it must give (empty for a twin), and the
/// checks that find them with the default configuration of `vigil run`.
pub struct DebugModeCase {
    pub name: String,
    pub expected: Vec<Kind>,
    /// Whether `vigil run`'s default checks catch it (it then goes into
    /// `suites/broken`), with the kinds they give.
    pub default_kinds: Option<Vec<Kind>>,
    pub build: fn(&str) -> Result<(Graph, Feeds)>,
    pub op: String,
}

fn builder() -> GraphBuilder {
    let mut r = vigil_listeners::broken::registry();
    crate::broken::register(&mut r);
    GraphBuilder::with_registry("selftest", r)
}

fn input() -> Result<(GraphBuilder, Sym, Feeds)> {
    let b = builder();
    let x = b.input("x", DType::F32, &[8]);
    let v: Vec<f32> = (0..8).map(|i| (i as f32 * 0.7).sin()).collect();
    let feeds = HashMap::from([("x".to_string(), Tensor::from_vec(&[8], v)?)]);
    Ok((b, x, feeds))
}

fn op(x: &Sym, name: &str) -> Result<Sym> {
    x.op(name, &[], Attrs::new())
}

/// `c = copy(x); out = op(c) + exp(c)`: a later reader of `c`.
fn reader_after(name: &str) -> Result<(Graph, Feeds)> {
    let (b, x, f) = input()?;
    let c = x.copy()?;
    let s = op(&c, name)?;
    let out = s.add(&c.exp()?)?;
    Ok((b.build(&[&out])?, f))
}

/// `sigmoid(neg(op(neg(exp(x)))))`: rewrites before and after the op.
fn chain(name: &str) -> Result<(Graph, Feeds)> {
    let (b, x, f) = input()?;
    let s = op(&x.exp()?.neg()?, name)?;
    let out = s.neg()?.sigmoid()?;
    Ok((b.build(&[&out])?, f))
}

/// `stash(x)` and `take(neg(x))`, independent of each other.
fn stash_take(prefix: &str) -> Result<(Graph, Feeds)> {
    let (b, x, f) = input()?;
    let a = op(&x, &format!("{prefix}_stash"))?;
    let t = op(&x.neg()?, &format!("{prefix}_take"))?;
    Ok((b.build(&[&a, &t])?, f))
}

fn stash_take_broken(_: &str) -> Result<(Graph, Feeds)> {
    stash_take("broken")
}

fn stash_take_fixed(_: &str) -> Result<(Graph, Feeds)> {
    stash_take("fixed")
}

/// `c = copy(x); y = identity(c); out = y + exp(c)`: with an undeclared
/// view, the pass lets exp overwrite `c` while `y` is still to be read.
fn hidden_view(name: &str) -> Result<(Graph, Feeds)> {
    let (b, x, f) = input()?;
    let c = x.copy()?;
    let y = op(&c, name)?;
    let out = y.add(&c.exp()?)?;
    Ok((b.build(&[&out])?, f))
}

/// `loss = sum(w * w * x)` with a supplied gradient `grad:w = k * w * x`:
/// right for k = 2.
fn gradient(k: f32) -> Result<(Graph, Feeds)> {
    let (b, x, f) = input()?;
    let w = b.parameter(
        "w",
        Tensor::from_vec(&[8], (0..8).map(|i| 0.25 * i as f32 - 1.0).collect::<Vec<_>>())?,
    );
    let loss = w.mul(&w)?.mul(&x)?.sum(None)?;
    let k = b.constant("k", Tensor::from_vec(&[1], vec![k])?);
    let g = w.mul(&x)?.mul(&k)?;
    let g = b.apply_named("grad:w", "copy", &[&g], Attrs::new())?.remove(0);
    Ok((b.build(&[&loss, &g])?, f))
}

fn wrong_gradient(_: &str) -> Result<(Graph, Feeds)> {
    gradient(3.0)
}

fn right_gradient(_: &str) -> Result<(Graph, Feeds)> {
    gradient(2.0)
}

/// `loss = sum(fixed_scale6(w) * x)`: a correct op of the corpus that has
/// no gradient rule, so autodiff cannot build the gradient the check needs.
fn no_gradient_rule(_: &str) -> Result<(Graph, Feeds)> {
    let (b, x, f) = input()?;
    let w = b.parameter("w", Tensor::from_vec(&[8], vec![0.5f32; 8])?);
    let loss = op(&w, "fixed_scale6")?.mul(&x)?.sum(None)?;
    Ok((b.build(&[&loss])?, f))
}

/// `neg(op(x))` on `x = [1e8, 1, 1, 1, -1e8, 1, 1, 1]`: a sum of these in
/// f32 depends on how it is split into partial sums.
fn partial_sums(name: &str) -> Result<(Graph, Feeds)> {
    let b = builder();
    let x = b.input("y", DType::F32, &[8]);
    let v = vec![1e8f32, 1.0, 1.0, 1.0, -1e8, 1.0, 1.0, 1.0];
    let out = op(&x, name)?.neg()?;
    let feeds = HashMap::from([("y".to_string(), Tensor::from_vec(&[8], v)?)]);
    Ok((b.build(&[&out])?, feeds))
}

/// `exp(op(x))` on an f64 `x`.
fn on_f64(name: &str) -> Result<(Graph, Feeds)> {
    let b = builder();
    let x = b.input("z", DType::F64, &[4]);
    let out = op(&x, name)?.exp()?;
    let feeds = HashMap::from([(
        "z".to_string(),
        Tensor::from_vec(&[4], vec![0.5f64, -1.0, 2.0, 0.0])?,
    )]);
    Ok((b.build(&[&out])?, feeds))
}

/// Every case, broken then fixed.
pub fn cases() -> Vec<DebugModeCase> {
    use Kind as K;
    type Spec = (
        &'static str,
        Vec<Kind>,
        Option<Vec<Kind>>,
        fn(&str) -> Result<(Graph, Feeds)>,
    );
    let specs: Vec<Spec> = vec![
        (
            "scale6",
            vec![K::VALUE_MISMATCH, K::DESTROYED_INPUT],
            Some(vec![K::VALUE_MISMATCH, K::DESTROYED_INPUT]),
            reader_after,
        ),
        (
            "stencil",
            vec![K::BAD_REWRITE, K::VALUE_MISMATCH],
            Some(vec![K::BAD_REWRITE, K::VALUE_MISMATCH]),
            chain,
        ),
        (
            "accumulate_out",
            // The poisoned buffer it adds to is NaN, which numerics sees.
            vec![K::UNINITIALIZED_READ, K::NON_FINITE],
            Some(vec![K::UNINITIALIZED_READ, K::NON_FINITE]),
            chain,
        ),
        (
            "jitter",
            vec![K::NONDETERMINISTIC],
            Some(vec![K::NONDETERMINISTIC]),
            chain,
        ),
        ("memory_order", vec![K::LAYOUT_DEPENDENT], None, chain),
        ("past_view", vec![K::LAYOUT_DEPENDENT], None, chain),
        (
            "scratch",
            vec![K::SCRATCH_WRITE],
            Some(vec![K::SCRATCH_WRITE]),
            chain,
        ),
        ("thread_sum", vec![K::THREAD_DEPENDENT], None, partial_sums),
        ("f32_only", vec![K::OP_PANIC], Some(vec![K::OP_PANIC]), on_f64),
        ("c_order_out", vec![K::PREALLOCATED_OUTPUT], None, chain),
        ("oversize_out", vec![K::PREALLOCATED_OUTPUT], None, chain),
        (
            "identity",
            vec![K::READ_AFTER_DESTROY, K::UNDECLARED_VIEW, K::BAD_REWRITE],
            Some(vec![K::READ_AFTER_DESTROY, K::UNDECLARED_VIEW, K::BAD_REWRITE]),
            hidden_view,
        ),
    ];
    let mut v = Vec::new();
    for (what, kinds, default_kinds, build) in specs {
        for fixed in [false, true] {
            let op = format!("{}_{what}", if fixed { "fixed" } else { "broken" });
            // The listeners' identity ops, read after a destroy.
            let name = if what == "identity" {
                format!("{op}_read_after_destroy")
            } else {
                op.clone()
            };
            v.push(DebugModeCase {
                name,
                expected: if fixed { Vec::new() } else { kinds.clone() },
                default_kinds: default_kinds.clone().map(|k| if fixed { Vec::new() } else { k }),
                build,
                op,
            });
        }
    }
    // Shared state between two kernels: the reference run interleaves with
    // the in-place run, so it sees the state disturbed too.
    v.push(DebugModeCase {
        name: "broken_stash_take".into(),
        // `take` gives another value on a second call with the same input.
        expected: vec![K::ORDER_DEPENDENT, K::NONDETERMINISTIC],
        default_kinds: None,
        build: stash_take_broken,
        op: "broken_take".into(),
    });
    v.push(DebugModeCase {
        name: "fixed_stash_take".into(),
        expected: Vec::new(),
        default_kinds: None,
        build: stash_take_fixed,
        op: "fixed_take".into(),
    });
    v.push(DebugModeCase {
        name: "wrong_gradient".into(),
        expected: vec![K::GRADIENT_MISMATCH],
        default_kinds: None,
        build: wrong_gradient,
        op: String::new(),
    });
    v.push(DebugModeCase {
        name: "no_gradient_rule".into(),
        expected: vec![K::CHECK_SKIPPED],
        default_kinds: None,
        build: no_gradient_rule,
        op: String::new(),
    });
    v.push(DebugModeCase {
        name: "right_gradient".into(),
        expected: Vec::new(),
        default_kinds: None,
        build: right_gradient,
        op: String::new(),
    });
    v
}

/// Runs one case with every check on.
pub fn run_case(case: &DebugModeCase) -> SelftestResult {
    let outcome = (case.build)(&case.op).and_then(|(g, f)| {
        DebugMode::new(DebugConfig::all())
            .check(&g, &f)
            .map_err(|e| vigil_engine::Error::Graph(e.to_string()))
    });
    let (findings, error) = match outcome {
        Ok(r) => (r.findings, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    let found: BTreeSet<Kind> = findings.iter().map(|f| f.kind.clone()).collect();
    let want: BTreeSet<Kind> = case.expected.iter().cloned().collect();
    SelftestResult {
        case: case.name.clone(),
        expected: case.expected.first().cloned(),
        also: case.expected.iter().skip(1).cloned().collect(),
        pass: error.is_none() && found == want,
        found: found.into_iter().collect(),
        findings,
        error,
    }
}

/// Runs every case.
pub fn run() -> Vec<SelftestResult> {
    cases().iter().map(run_case).collect()
}
