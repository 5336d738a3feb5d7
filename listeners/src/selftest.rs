//! The self-test: each op of the [`crate::broken`] corpus run under the
//! non-in-place, view-map and numerics listeners must be caught with exactly
//! its intended finding; its twin, and sample graphs of built-in ops, must
//! give none.
//!
//! ```
//! let results = vigil_listeners::run_selftest();
//! assert!(results.iter().all(|r| r.pass), "{results:#?}");
//! ```

use serde::{Deserialize, Serialize};
use vigil_engine::exec::{Executor, RunOptions};
use vigil_engine::graph::{Graph, GraphBuilder};
use vigil_engine::ops::Attrs;
use vigil_engine::{DType, IndexSpec, Result, Tensor};

use crate::broken::registry;
use crate::finding::{Finding, Kind, Validator};
use crate::{ListenerSet, NonInplaceValidationListener, NumericsListener, ViewMapValidationListener};

pub use vigil_engine::Feeds;

/// Makes a case's graph and feeds.
pub type Build = fn() -> Result<(Graph, Feeds)>;

/// One self-test case: a graph, its feeds, and the finding it must give.
pub struct ListenerCase {
    pub name: String,
    /// `None`: the run must give no finding at all.
    pub expected: Option<Kind>,
    /// Kinds the defect's effect also causes under `vigil run`'s default
    /// DebugMode (a corrupted value shows as a mismatch there), which
    /// `suites/broken` expects too; the listeners alone give `expected`.
    pub debug_also: Vec<Kind>,
    pub build: Box<dyn Fn() -> Result<(Graph, Feeds)>>,
}

/// The outcome of one case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelftestResult {
    pub case: String,
    pub expected: Option<Kind>,
    /// Kinds the defect's effect must also cause (a value it spoils shows
    /// as a mismatch too); the case passes when the kinds found are exactly
    /// `expected` and these.
    #[serde(default)]
    pub also: Vec<Kind>,
    pub found: Vec<Kind>,
    pub pass: bool,
    pub findings: Vec<Finding>,
    /// Set when the case could not be built or run.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

fn f32s(shape: &[usize], data: &[f32]) -> Result<Tensor> {
    Tensor::from_vec(shape, data.to_vec())
}

fn feeds(list: Vec<(&str, Tensor)>) -> Feeds {
    list.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn builder() -> GraphBuilder {
    GraphBuilder::with_registry("selftest", registry())
}

/// A broken op and its twin, on the graph `build(op name)` makes.
fn pair(what: &'static str, expected: Kind, build: fn(&str) -> Result<(Graph, Feeds)>) -> [ListenerCase; 2] {
    [
        ListenerCase {
            name: format!("broken_{what}"),
            expected: Some(expected),
            debug_also: Vec::new(),
            build: Box::new(move || build(&format!("broken_{what}"))),
        },
        ListenerCase {
            name: format!("fixed_{what}"),
            expected: None,
            debug_also: Vec::new(),
            build: Box::new(move || build(&format!("fixed_{what}"))),
        },
    ]
}

fn two_vectors(op: &str, b: &[f32]) -> Result<(Graph, Feeds)> {
    let g = builder();
    let x = g.input("a", DType::F32, &[4]);
    let y = g.input("b", DType::F32, &[4]);
    let out = x.op(op, &[&y], Attrs::new())?;
    Ok((
        g.build(&[&out])?,
        feeds(vec![
            ("a", f32s(&[4], &[1.0, -2.0, 3.0, 4.0])?),
            ("b", f32s(&[4], b)?),
        ]),
    ))
}

fn unary(op: &str, shape: &[usize], mutable: bool) -> Result<(Graph, Feeds)> {
    let g = builder();
    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    let x = if mutable {
        g.mutable_input("x", DType::F32, &dims)
    } else {
        g.input("x", DType::F32, &dims)
    };
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n).map(|i| i as f32 - 2.5).collect();
    let outs = g.apply(op, &[&x], Attrs::new())?;
    let refs: Vec<_> = outs.iter().collect();
    Ok((
        g.build(&refs)?,
        feeds(vec![("x", Tensor::from_vec(shape, data)?)]),
    ))
}

/// An in-place op on `x[2:5]` of an 8-element buffer.
fn on_slice(op: &str) -> Result<(Graph, Feeds)> {
    let g = builder();
    let x = g.mutable_input("x", DType::F32, &[8]);
    let v = x.view(&[IndexSpec::range(2, 5, 1)])?;
    let y = v.op(op, &[], Attrs::new())?;
    Ok((
        g.build(&[&y])?,
        feeds(vec![(
            "x",
            f32s(&[8], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])?,
        )]),
    ))
}

/// The op on row 0 of a 100×64 matrix: the view is 1% of its buffer, so
/// only the guard band, not the whole outside, is checked.
fn on_row_of_large_base(op: &str) -> Result<(Graph, Feeds)> {
    let g = builder();
    let x = g.input("x", DType::F32, &[100, 64]);
    let row = x.view(&[IndexSpec::Point(0)])?;
    let s = row.op(op, &[], Attrs::new())?;
    let data: Vec<f32> = (0..6400).map(|i| i as f32).collect();
    Ok((
        g.build(&[&s])?,
        feeds(vec![("x", Tensor::from_vec(&[100, 64], data)?)]),
    ))
}

/// `a = op(x); b = op(y); s = a + b`: `a` is still live when `b` is made.
fn two_calls_then_add(op: &str) -> Result<(Graph, Feeds)> {
    let g = builder();
    let x = g.input("x", DType::F32, &[4]);
    let y = g.input("y", DType::F32, &[4]);
    let a = x.op(op, &[], Attrs::new())?;
    let b = y.op(op, &[], Attrs::new())?;
    let s = a.add(&b)?;
    Ok((
        g.build(&[&s])?,
        feeds(vec![
            ("x", f32s(&[4], &[1.0, 2.0, 3.0, 4.0])?),
            ("y", f32s(&[4], &[10.0, 20.0, 30.0, 40.0])?),
        ]),
    ))
}

fn builtin_elementwise() -> Result<(Graph, Feeds)> {
    let g = GraphBuilder::new("elementwise");
    let x = g.input("x", DType::F32, &[2, 3]);
    let b = g.input("b", DType::F32, &[3]);
    let y = x
        .add(&b)?
        .mul(&x)?
        .tanh()?
        .sub(&b)?
        .exp()?
        .div(&b)?
        .maximum(&x)?
        .cast(DType::F64)?;
    let data = [0.5, -1.0, 2.0, -0.25, 1.5, 3.0];
    Ok((
        g.build(&[&y])?,
        feeds(vec![
            ("x", f32s(&[2, 3], &data)?),
            ("b", f32s(&[3], &[1.0, 2.0, -3.0])?),
        ]),
    ))
}

fn builtin_views() -> Result<(Graph, Feeds)> {
    let g = GraphBuilder::new("views");
    let x = g.input("x", DType::F32, &[4, 6]);
    let even = x.view(&[IndexSpec::All, IndexSpec::range(0, 6, 2)])?;
    let odd = x.view(&[IndexSpec::All, IndexSpec::range(1, 6, 2)])?;
    let t = even.transpose(None)?;
    let flat = t.reshape(&[12])?; // not expressible as a view: a copy
    let r = x.reshape(&[6, 4])?.transpose(Some(&[1, 0]))?; // views
    let s = odd.add(&even)?.neg()?;
    let data: Vec<f32> = (0..24).map(|i| i as f32 - 10.0).collect();
    Ok((
        g.build(&[&flat, &r, &s])?,
        feeds(vec![("x", Tensor::from_vec(&[4, 6], data)?)]),
    ))
}

fn builtin_inplace_chain() -> Result<(Graph, Feeds)> {
    let g = GraphBuilder::new("inplace_chain");
    let x = g.mutable_input("x", DType::F32, &[6]);
    let y = g.input("y", DType::F32, &[6]);
    let z = x.add_inplace(&y)?.relu_inplace()?.neg_inplace()?.relu_inplace()?;
    let w = z.add_inplace(&z)?;
    let xs = [1.0, -2.0, 3.0, -4.0, 5.0, -6.0];
    let ys = [0.5, 0.5, -5.0, 5.0, 0.0, 1.0];
    Ok((
        g.build(&[&w])?,
        feeds(vec![("x", f32s(&[6], &xs)?), ("y", f32s(&[6], &ys)?)]),
    ))
}

fn builtin_inplace_on_views() -> Result<(Graph, Feeds)> {
    let g = GraphBuilder::new("inplace_on_views");
    let x = g.mutable_input("x", DType::F32, &[4, 4]);
    let col = x.view(&[IndexSpec::All, IndexSpec::Point(1)])?;
    let c = col.relu_inplace()?.exp_inplace()?;
    let row = g.input("r", DType::F32, &[4]);
    let t = c.add_inplace(&row)?;
    let data: Vec<f32> = (0..16).map(|i| (i as f32 - 8.0) / 4.0).collect();
    Ok((
        g.build(&[&t])?,
        feeds(vec![
            ("x", Tensor::from_vec(&[4, 4], data)?),
            ("r", f32s(&[4], &[1.0, 2.0, 3.0, 4.0])?),
        ]),
    ))
}

/// Every case: broken ops with their twins, then built-in samples.
pub fn cases() -> Vec<ListenerCase> {
    use Kind as K;
    let mut v = Vec::new();
    v.extend(pair("accumulate", K::DESTROYED_INPUT, |op| {
        two_vectors(op, &[1.0, 1.0, 1.0, 1.0])
    }));
    v.extend(pair("identity", K::UNDECLARED_VIEW, |op| {
        unary(op, &[2, 3], false)
    }));
    v.extend(pair("first_row", K::UNDECLARED_VIEW, |op| {
        unary(op, &[3, 4], false)
    }));
    v.extend(pair("split", K::ALIASED_OUTPUTS, |op| unary(op, &[6], false)));
    v.extend(pair("increment", K::OUT_OF_VIEW_WRITE, on_slice));
    v.extend(pair("lazy_scale", K::DECLARED_DESTROY_UNUSED, |op| {
        unary(op, &[4], true)
    }));
    v.extend(pair("view", K::DECLARED_VIEW_NOT_ALIASED, |op| {
        unary(op, &[4], false)
    }));
    v.extend(pair("safe_div", K::NON_FINITE, |op| {
        two_vectors(op, &[1.0, 0.0, 2.0, 0.0])
    }));
    v.extend(pair("row_sum", K::OUT_OF_VIEW_WRITE, on_row_of_large_base));
    let mut cached = pair("cached_double", K::UNDECLARED_ALIAS, two_calls_then_add);
    cached[0].debug_also = vec![K::VALUE_MISMATCH];
    v.extend(cached);
    v.push(ListenerCase {
        name: "panicking_listener".into(),
        expected: Some(K::LISTENER_PANIC),
        debug_also: Vec::new(),
        build: Box::new(builtin_elementwise),
    });
    let samples: [(&str, Build); 4] = [
        ("builtin_elementwise", builtin_elementwise),
        ("builtin_views", builtin_views),
        ("builtin_inplace_chain", builtin_inplace_chain),
        ("builtin_inplace_on_views", builtin_inplace_on_views),
    ];
    for (name, build) in samples {
        v.push(ListenerCase {
            name: name.to_string(),
            expected: None,
            debug_also: Vec::new(),
            build: Box::new(build),
        });
    }
    v
}

/// The standard listener set of the self-test, with Hash-mode findings
/// replayed in Copy mode.
fn run_findings(graph: &Graph, feeds: &Feeds, case: &str) -> Result<Vec<Finding>> {
    let mut noninplace = NonInplaceValidationListener::new();
    noninplace.replay_from(graph, feeds)?;
    let mut set = ListenerSet::new()
        .with(noninplace)
        .with(ViewMapValidationListener::new())
        .with(NumericsListener::new());
    if case == "panicking_listener" {
        set.push_listener(Panicking);
    }
    set.set_case(Some(case.to_string()));
    Executor::new(graph)?.run_with(feeds, &mut set, &RunOptions::default())?;
    Ok(set.take_findings())
}

/// A listener with a bug of its own: the set must survive it, switch it
/// off and report `listener_panic`.
struct Panicking;

impl vigil_engine::exec::Listener for Panicking {
    fn post_op(&mut self, _: &vigil_engine::exec::At, _: &vigil_engine::exec::OpEvent) {
        panic!("a listener bug");
    }
}

pub fn run_case(case: &ListenerCase) -> SelftestResult {
    let outcome = (case.build)().and_then(|(g, f)| run_findings(&g, &f, &case.name));
    let (findings, error) = match outcome {
        Ok(f) => (f, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    let found: Vec<Kind> = findings.iter().map(|f| f.kind.clone()).collect();
    let pass = error.is_none()
        && match &case.expected {
            Some(k) => !found.is_empty() && found.iter().all(|f| f == k),
            None => found.is_empty(),
        };
    SelftestResult {
        case: case.name.clone(),
        expected: case.expected.clone(),
        also: Vec::new(),
        found,
        pass,
        findings,
        error,
    }
}

/// Runs every case.
pub fn run_selftest() -> Vec<SelftestResult> {
    cases().iter().map(run_case).collect()
}
