//! The executor and the destroy handler: destroyers run after the readers of
//! their root's views, rule-breaking graphs are refused before running with
//! messages naming the nodes, buffers are freed only when nothing reads them,
//! live bytes are plausible, and graphs load from and round-trip through JSON.

mod common;

use std::collections::HashMap;

use common::*;
use ndarray::{ArrayD, IxDyn, Zip};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use vigil_engine::exec::{FreeEvent, OpEvent};
use vigil_engine::tensor::storage::BufferId;
use vigil_engine::{
    At, Attrs, DType, DestroyHandler, Error, Executor, FeedFault, Graph, GraphBuilder, IndexSpec, Listener,
    OpRegistry, Rule, RunOptions, Sym, Tensor, Violation,
};

/// The node an error is attributed to and its cause.
fn at_node(e: &Error) -> (&str, &Error) {
    match e {
        Error::Node { node, source } => (node, source.cause()),
        other => panic!("not attributed to a node: {other:?}"),
    }
}

fn feeds(pairs: &[(&str, &Tensor)]) -> HashMap<String, Tensor> {
    pairs.iter().map(|(n, t)| (n.to_string(), (*t).clone())).collect()
}

fn node(g: &GraphBuilder, name: &str, op: &str, inputs: &[&Sym]) -> Sym {
    node_with(g, name, op, inputs, Attrs::new())
}

fn node_with(g: &GraphBuilder, name: &str, op: &str, inputs: &[&Sym], attrs: Attrs) -> Sym {
    g.apply_named(name, op, inputs, attrs).unwrap().pop().unwrap()
}

fn order_names(e: &Executor) -> Vec<String> {
    e.order()
        .iter()
        .map(|&n| e.graph().node(n).name.clone())
        .collect()
}

fn x23() -> Tensor {
    f64s(&[2, 3], &[1.0, -2.0, 3.0, -4.0, 5.0, 0.5])
}

// ----- destroy ordering ------------------------------------------------------------

#[test]
fn a_destroyer_runs_after_the_readers_of_its_input_declared_after_it() {
    // z = add_inplace(x, c) is declared before y = exp(x).
    let g = GraphBuilder::new("order");
    let x = g.mutable_input("x", DType::F64, &[2, 3]);
    let c = g.constant("c", f64s(&[2, 3], &[10.0; 6]));
    let z = node(&g, "z", "add_inplace", &[&x, &c]);
    let y = node(&g, "y", "exp", &[&x]);
    let graph = g.build(&[&z, &y]).unwrap();
    assert_eq!(graph.nodes()[0].name, "z");
    let exec = Executor::new(&graph).unwrap();
    assert_eq!(order_names(&exec), vec!["y", "z"]);
    let feed = x23();
    let out = exec.run(&feeds(&[("x", &feed)])).unwrap();
    let x0 = vals_f64(&x23());
    assert_eq!(
        vals_f64(out.get("y").unwrap()),
        x0.iter().map(|v| v.exp()).collect::<Vec<_>>()
    );
    assert_eq!(
        vals_f64(out.get("z").unwrap()),
        x0.iter().map(|v| v + 10.0).collect::<Vec<_>>()
    );
    assert!(out.get("z").unwrap().same_buffer(&feed));
    assert_eq!(vals_f64(&feed), x0.iter().map(|v| v + 10.0).collect::<Vec<_>>());
}

#[test]
fn a_destroyer_runs_after_the_readers_of_every_view_of_its_root() {
    let g = GraphBuilder::new("order_views");
    let x = g.mutable_input("x", DType::F64, &[2, 3]);
    let c = g.constant("c", f64s(&[3], &[1.0, 2.0, 3.0]));
    let z = node(&g, "z", "mul_inplace", &[&x, &c]);
    let t = node(&g, "t", "transpose", &[&x]);
    let y = node(&g, "y", "neg", &[&t]);
    let row = x.view(&[IndexSpec::Point(-1)]).unwrap();
    let w = node(&g, "w", "exp", &[&row]);
    let graph = g.build(&[&z, &y, &w]).unwrap();
    let exec = Executor::new(&graph).unwrap();
    let names = order_names(&exec);
    let pos = |n: &str| names.iter().position(|m| m == n).unwrap();
    assert!(
        pos("z") > pos("y") && pos("z") > pos("w") && pos("z") > pos("t"),
        "{names:?}"
    );
    // The handler knows the views and the ordering.
    let dh = DestroyHandler::new(&graph);
    let xv = graph.var_id("x").unwrap();
    assert_eq!(dh.root(graph.var_id("t").unwrap()), xv);
    assert_eq!(dh.root(graph.var_id(row.name()).unwrap()), xv);
    assert_eq!(dh.destroyers_of(xv).len(), 1);
    assert!(dh.check().is_empty());
    let zid = graph.node_id("z").unwrap();
    for n in ["y", "w", "t"] {
        assert!(dh.orderings().contains(&(graph.node_id(n).unwrap(), zid)), "{n}");
    }
    let feed = x23();
    let out = exec.run(&feeds(&[("x", &feed)])).unwrap();
    assert_eq!(
        vals_f64(out.get("y").unwrap()),
        vec![-1.0, 4.0, 2.0, -5.0, -3.0, -0.5]
    );
    assert_eq!(
        vals_f64(out.get("w").unwrap()),
        [-4.0f64, 5.0, 0.5].iter().map(|v| v.exp()).collect::<Vec<_>>()
    );
    assert_eq!(
        vals_f64(out.get("z").unwrap()),
        vec![1.0, -4.0, 9.0, -4.0, 10.0, 1.5]
    );
}

#[test]
fn chains_of_inplace_ops_are_legal() {
    let g = GraphBuilder::new("chain");
    let t = g.mutable_input("t", DType::F64, &[2, 3]);
    let r = node(&g, "r", "relu_inplace", &[&t]);
    let n = node(&g, "n", "neg_inplace", &[&r]);
    let graph = g.build(&[&n]).unwrap();
    let dh = DestroyHandler::new(&graph);
    let rv = graph.var_id("r").unwrap();
    assert_eq!(dh.root(rv), rv, "an in-place output is a new root");
    assert!(dh.check().is_empty());
    let exec = Executor::new(&graph).unwrap();
    let feed = x23();
    let out = exec.run(&feeds(&[("t", &feed)])).unwrap();
    let want: Vec<f64> = vals_f64(&x23()).iter().map(|v| -v.max(0.0)).collect();
    assert_eq!(vals_f64(out.get("n").unwrap()), want);
    assert!(out.get("n").unwrap().same_buffer(&feed));
    // `x += x` is tolerated: the op reads the destroyed variable itself.
    let g = GraphBuilder::new("twice");
    let x = g.mutable_input("x", DType::F64, &[2, 3]);
    let d = node(&g, "d", "add_inplace", &[&x, &x]);
    let graph = g.build(&[&d]).unwrap();
    let feed = x23();
    let out = Executor::new(&graph)
        .unwrap()
        .run(&feeds(&[("x", &feed)]))
        .unwrap();
    assert_eq!(
        vals_f64(out.get("d").unwrap()),
        vals_f64(&x23()).iter().map(|v| 2.0 * v).collect::<Vec<_>>()
    );
}

// ----- refusals -----------------------------------------------------------------------

/// Builds with `f`, expects Executor::new to refuse it for breaking the
/// destroy rules, and returns the violations; checks that the destroy
/// handler alone finds the same rules.
fn refused(f: impl FnOnce(&GraphBuilder) -> Vec<Sym>) -> Vec<Violation> {
    let g = GraphBuilder::new("bad");
    let outs = f(&g);
    let refs: Vec<&Sym> = outs.iter().collect();
    let graph = g.build(&refs).unwrap();
    let violations = match Executor::new(&graph) {
        Err(Error::Rules { graph, violations }) => {
            assert_eq!(graph, "bad");
            violations
        }
        Err(e) => panic!("refused for another cause: {e:?}"),
        Ok(_) => panic!("accepted"),
    };
    let dh = DestroyHandler::new(&graph);
    let mut rules: Vec<Rule> = dh.check().iter().map(|v| v.rule).collect();
    if let Err(v) = dh.schedule() {
        rules.push(v.rule);
    }
    assert_eq!(rules, violations.iter().map(|v| v.rule).collect::<Vec<_>>());
    violations
}

/// The one violation, with its rule and the nodes it names (in any order).
fn only(violations: &[Violation], rule: Rule, nodes: &[&str]) -> String {
    assert_eq!(violations.len(), 1, "{violations:?}");
    let v = &violations[0];
    assert_eq!(v.rule, rule, "{v:?}");
    let mut got: Vec<&str> = v.nodes.iter().map(String::as_str).collect();
    got.sort_unstable();
    let mut want = nodes.to_vec();
    want.sort_unstable();
    assert_eq!(got, want, "{v:?}");
    v.message.clone()
}

#[test]
fn two_destroyers_of_one_root_are_refused() {
    let v = refused(|g| {
        let x = g.mutable_input("x", DType::F64, &[2, 2]);
        let c = g.constant("c", f64s(&[2, 2], &[1.0; 4]));
        vec![
            node(g, "d1", "add_inplace", &[&x, &c]),
            node(g, "d2", "mul_inplace", &[&x, &c]),
        ]
    });
    // Two destroyers of one root also leave no order for both.
    assert!(
        v.iter()
            .any(|v| v.rule == Rule::TwoDestroyers && v.nodes == ["d1", "d2"]),
        "{v:?}"
    );
    // Also when the second destroys a view of the same root.
    let v = refused(|g| {
        let x = g.mutable_input("x", DType::F64, &[2, 2]);
        let t = node(g, "t", "transpose", &[&x]);
        vec![
            node(g, "d1", "relu_inplace", &[&x]),
            node(g, "d2", "neg_inplace", &[&t]),
        ]
    });
    assert!(
        v.iter()
            .any(|v| v.rule == Rule::TwoDestroyers && v.nodes == ["d1", "d2"]),
        "{v:?}"
    );
}

#[test]
fn destroying_protected_values_is_refused_even_through_a_view() {
    // A protected input.
    let v = refused(|g| {
        let x = g.input("x", DType::F64, &[2, 2]);
        vec![node(g, "d", "relu_inplace", &[&x])]
    });
    let msg = only(&v, Rule::Protected, &["d"]);
    assert!(msg.contains("'x'"), "names the input: {msg}");
    // Through a create_view of it.
    let v = refused(|g| {
        let x = g.input("x", DType::F64, &[2, 2]);
        let v = node_with(
            g,
            "v",
            "create_view",
            &[&x, &g.index(IndexSpec::Point(0))],
            Attrs::new(),
        );
        vec![node(g, "d", "neg_inplace", &[&v])]
    });
    let msg = only(&v, Rule::Protected, &["d"]);
    assert!(
        msg.contains("'x'") && msg.contains("'v'"),
        "names the input and the view: {msg}"
    );
    // A constant.
    let v = refused(|g| {
        let x = g.mutable_input("x", DType::F64, &[2]);
        let c = g.constant("c", f64s(&[2], &[1.0, 2.0]));
        vec![node(g, "d", "add_inplace", &[&c, &x])]
    });
    let msg = only(&v, Rule::Protected, &["d"]);
    assert!(msg.contains("'c'"), "names the constant: {msg}");
    // A graph output, or a view that is a graph output.
    let v = refused(|g| {
        let x = g.mutable_input("x", DType::F64, &[2]);
        vec![x.clone(), node(g, "d", "exp_inplace", &[&x])]
    });
    let msg = only(&v, Rule::Protected, &["d"]);
    assert!(msg.contains("'x'"), "names the output: {msg}");
    let v = refused(|g| {
        let x = g.mutable_input("x", DType::F64, &[2, 2]);
        let o = node(g, "o", "transpose", &[&x]);
        vec![o, node(g, "d", "exp_inplace", &[&x])]
    });
    let msg = only(&v, Rule::Protected, &["d"]);
    assert!(msg.contains("'o'"), "names the output view: {msg}");
    // A mutable input and a parameter may be destroyed.
    let g = GraphBuilder::new("ok");
    let p = g.parameter("p", f64s(&[2], &[-1.0, 1.0]));
    let d = node(&g, "d", "relu_inplace", &[&p]);
    let graph = g.build(&[&d]).unwrap();
    let out = Executor::new(&graph).unwrap().run(&HashMap::new()).unwrap();
    assert_eq!(vals_f64(out.get("d").unwrap()), vec![0.0, 1.0]);
}

#[test]
fn a_destroyer_reading_a_view_of_what_it_destroys_is_refused() {
    let v = refused(|g| {
        let x = g.mutable_input("x", DType::F64, &[2, 2]);
        let t = node(g, "t", "transpose", &[&x]);
        vec![node(g, "d", "add_inplace", &[&x, &t])]
    });
    let msg = only(&v, Rule::ReadsDestroyed, &["d"]);
    assert!(msg.contains("'t'"), "names the view read: {msg}");
    // Also when the destroyed input is itself a view.
    let v = refused(|g| {
        let x = g.mutable_input("x", DType::F64, &[3]);
        let a = x.view(&[IndexSpec::range(1, 3, 1)]).unwrap();
        let b = x.view(&[IndexSpec::range(0, 2, 1)]).unwrap();
        vec![node(g, "d", "add_inplace", &[&a, &b])]
    });
    only(&v, Rule::ReadsDestroyed, &["d"]);
}

#[test]
fn reading_the_destroyed_input_after_the_destroyer_is_a_cycle() {
    // m = mul(add_inplace(x, z), x): m reads x, so it must run before the
    // add_inplace, but it also needs its output.
    let v = refused(|g| {
        let x = g.mutable_input("x", DType::F64, &[2]);
        let z = g.input("z", DType::F64, &[2]);
        let a = node(g, "a", "add_inplace", &[&x, &z]);
        vec![node(g, "m", "mul", &[&a, &x])]
    });
    only(&v, Rule::Cycle, &["a", "m"]);
    // The same through a view read after the destroyer.
    let v = refused(|g| {
        let x = g.mutable_input("x", DType::F64, &[2, 2]);
        let a = node(g, "a", "relu_inplace", &[&x]);
        let t = node(g, "t", "transpose", &[&x]);
        vec![node(g, "m", "add", &[&a, &t])]
    });
    let names: Vec<&str> = v
        .iter()
        .flat_map(|v| v.nodes.iter().map(String::as_str))
        .collect();
    assert!(
        v.iter().all(|v| v.rule == Rule::Cycle) && names.contains(&"a") && names.contains(&"m"),
        "{v:?}"
    );
}

// ----- memory ------------------------------------------------------------------------

fn chain(ops: &[&str], mutable: bool) -> Graph {
    let g = GraphBuilder::new("chain");
    let mut v = if mutable {
        g.mutable_input("x", DType::F64, &[1000])
    } else {
        g.input("x", DType::F64, &[1000])
    };
    for (i, op) in ops.iter().enumerate() {
        v = node(&g, &format!("n{i}"), op, &[&v]);
    }
    g.build(&[&v]).unwrap()
}

fn run_stats(graph: &Graph, x: &Tensor) -> vigil_engine::exec::RunStats {
    let exec = Executor::new(graph).unwrap();
    let opts = RunOptions {
        record_frees: true,
        ..Default::default()
    };
    exec.run_with(&feeds(&[("x", x)]), &mut vigil_engine::exec::NoListener, &opts)
        .unwrap()
        .stats
}

#[test]
fn peak_live_bytes_counts_distinct_buffers() {
    let x = || Tensor::from_vec(&[1000], (0..1000).map(|v| v as f64 - 500.0).collect()).unwrap();
    // A chain of in-place ops on a mutable input holds one buffer.
    let s = run_stats(
        &chain(&["relu_inplace", "neg_inplace", "exp_inplace"], true),
        &x(),
    );
    assert_eq!((s.ops, s.peak_live_bytes), (3, 8000));
    assert!(s.frees.is_empty(), "{:?}", s.frees);
    // The pure chain holds two at a time and frees each after its reader.
    let s = run_stats(&chain(&["relu", "neg", "exp"], false), &x());
    assert_eq!(s.peak_live_bytes, 16000);
    let frees: Vec<(usize, usize)> = s.frees.iter().map(|f| (f.position, f.bytes)).collect();
    assert_eq!(frees, vec![(0, 8000), (1, 8000), (2, 8000)]);
    // Views add nothing.
    let s = run_stats(&chain(&["transpose", "squeeze", "exp"], false), &x());
    assert_eq!(s.peak_live_bytes, 16000);
    // Constants count from the start.
    let g = GraphBuilder::new("const");
    let xs = g.input("x", DType::F64, &[1000]);
    let c = g.constant("c", Tensor::zeros(DType::F32, &[10]).unwrap());
    let y = xs.exp().unwrap();
    let graph = g.build(&[&y, &c]).unwrap();
    assert_eq!(run_stats(&graph, &x()).peak_live_bytes, 16040);
}

// ----- frees never precede reads: property 3 -----------------------------------------

#[derive(Default)]
struct Reads {
    reads: Vec<(usize, String, Vec<BufferId>)>,
}

impl Listener for Reads {
    fn pre_op(&mut self, at: &At, ev: &OpEvent) {
        let ids = ev.inputs.iter().map(|t| t.buffer_id()).collect();
        self.reads.push((
            at.node_index.expect("op hooks carry a position"),
            ev.node.name.clone(),
            ids,
        ));
    }
}

fn check_frees(
    frees: &[FreeEvent],
    reads: &Reads,
    outputs: &[(String, Tensor)],
) -> Result<(), TestCaseError> {
    for f in frees {
        for (q, name, ids) in &reads.reads {
            prop_assert!(
                !(*q > f.position && ids.contains(&f.buffer)),
                "buffer {} freed at {} but node '{}' at {} reads it",
                f.buffer,
                f.position,
                name,
                q
            );
        }
        for (name, t) in outputs {
            prop_assert!(
                t.buffer_id() != f.buffer,
                "output '{}' lives in freed buffer {}",
                name,
                f.buffer
            );
        }
    }
    Ok(())
}

#[derive(Clone, Debug)]
enum Step {
    View(u8, usize, u64),
    Bin(u8, usize, usize),
    Un(u8, usize),
    Inplace(u8, usize, usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0u8..4, any::<usize>(), any::<u64>()).prop_map(|(k, a, s)| Step::View(k, a, s)),
        2 => (0u8..2, any::<usize>(), any::<usize>()).prop_map(|(k, a, b)| Step::Bin(k, a, b)),
        1 => (0u8..2, any::<usize>()).prop_map(|(k, a)| Step::Un(k, a)),
        2 => (0u8..4, any::<usize>(), any::<usize>()).prop_map(|(k, a, b)| Step::Inplace(k, a, b)),
    ]
}

/// A tiny deterministic generator for the index lists of create_view steps.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> i64 {
        (self.next() % n.max(1)) as i64
    }
}

fn random_index(shape: &[usize], seed: u64) -> Vec<IndexSpec> {
    let mut r = Rng(seed | 1);
    let mut idx = Vec::new();
    for &d in shape {
        let d = d as i64;
        idx.push(match r.below(4) {
            0 if d > 0 => IndexSpec::Point(r.below(d as u64) - if r.below(2) == 0 { 0 } else { d }),
            1 => IndexSpec::All,
            _ => IndexSpec::Interval {
                start: r.below(2 * d as u64 + 3) - d - 1,
                end: r.below(2 * d as u64 + 3) - d - 1,
                stride: [1, 2, 3, -1, -2, -3][r.below(6) as usize],
                inclusive: r.below(2) == 0,
            },
        });
        if r.below(5) == 0 {
            idx.push(IndexSpec::NewAxis);
        }
    }
    idx.truncate(r.below(idx.len() as u64 + 1) as usize);
    idx
}

fn broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let get = |s: &[usize], i: usize| if i + s.len() >= n { s[i + s.len() - n] } else { 1 };
    (0..n)
        .map(|i| match (get(a, i), get(b, i)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

fn relu(x: f64) -> f64 {
    if x > 0.0 || x.is_nan() {
        x
    } else {
        0.0
    }
}

fn zip_ref(a: &ArrayD<f64>, b: &ArrayD<f64>, f: impl Fn(f64, f64) -> f64) -> ArrayD<f64> {
    let shape = broadcast_shape(a.shape(), b.shape()).unwrap();
    let mut out = ArrayD::zeros(IxDyn(&shape));
    Zip::from(&mut out)
        .and(&a.broadcast(IxDyn(&shape)).unwrap())
        .and(&b.broadcast(IxDyn(&shape)).unwrap())
        .for_each(|o, &x, &y| *o = f(x, y));
    out
}

struct RandomGraph {
    graph: Graph,
    expected: Vec<ArrayD<f64>>,
    x0: Vec<f64>,
    x1: Vec<f64>,
    shape: Vec<usize>,
}

/// Builds the graph of `steps` over a mutable input `x0` and a protected
/// input `x1`, and computes every value with ndarray alongside (in-place ops
/// are their pure twins there).
fn build_random(shape: &[usize], steps: &[Step], extra_out: usize, seed: u64) -> RandomGraph {
    let n: usize = shape.iter().product();
    let data = |k: u64| -> Vec<f64> {
        (0..n as u64)
            .map(|i| ((i * 7 + k * 5 + seed) % 9) as f64 - 4.0)
            .collect()
    };
    let (x0, x1) = (data(1), data(2));
    let g = GraphBuilder::new("random");
    let shape_i: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    // Each value with its reference array and whether it views the
    // protected input (in-place steps only target the others), and the root
    // of each value (in-place steps target roots not destroyed yet, so most
    // graphs pass the destroy rules).
    let mut roots: Vec<usize> = vec![0, 1];
    let mut destroyed: Vec<usize> = Vec::new();
    let mut vals: Vec<(Sym, ArrayD<f64>, bool)> = vec![
        (
            g.mutable_input("x0", DType::F64, &shape_i),
            ArrayD::from_shape_vec(IxDyn(shape), x0.clone()).unwrap(),
            false,
        ),
        (
            g.input("x1", DType::F64, &shape_i),
            ArrayD::from_shape_vec(IxDyn(shape), x1.clone()).unwrap(),
            true,
        ),
    ];
    for s in steps {
        let pick = |i: usize| {
            let (s, v, _) = vals[i % vals.len()].clone();
            (s, v)
        };
        let mut root = vals.len();
        let (sym, val, prot) = match s {
            Step::View(k, a, seed) => {
                let prot = vals[*a % vals.len()].2;
                root = roots[*a % vals.len()];
                let (a, av) = pick(*a);
                let (s, v) = match k {
                    0 => {
                        let idx = random_index(av.shape(), *seed);
                        let v = gather(&av, &idx).unwrap();
                        (a.view(&idx).unwrap(), v)
                    }
                    1 => (
                        a.transpose(None).unwrap(),
                        av.view().reversed_axes().as_standard_layout().into_owned(),
                    ),
                    2 => {
                        let target: Vec<usize> = av.shape().iter().rev().copied().collect();
                        let spec: Vec<i64> = target.iter().map(|&d| d as i64).collect();
                        let flat: Vec<f64> = av.iter().copied().collect();
                        (
                            a.reshape(&spec).unwrap(),
                            ArrayD::from_shape_vec(IxDyn(&target), flat).unwrap(),
                        )
                    }
                    _ => (
                        a.op("expand_dims", &[], Attrs::new().with("axis", 0)).unwrap(),
                        av.clone().insert_axis(ndarray::Axis(0)),
                    ),
                };
                (s, v, prot)
            }
            Step::Bin(k, a, b) => {
                let (a, av) = pick(*a);
                let (mut b, mut bv) = pick(*b);
                if broadcast_shape(av.shape(), bv.shape()).is_none() {
                    (b, bv) = (a.clone(), av.clone());
                }
                if *k == 0 {
                    (a.add(&b).unwrap(), zip_ref(&av, &bv, |x, y| x + y), false)
                } else {
                    (a.mul(&b).unwrap(), zip_ref(&av, &bv, |x, y| x * y), false)
                }
            }
            Step::Un(k, a) => {
                let (a, av) = pick(*a);
                if *k == 0 {
                    (a.relu().unwrap(), av.mapv(relu), false)
                } else {
                    (a.neg().unwrap(), av.mapv(|x| -x), false)
                }
            }
            Step::Inplace(k, a, b) => {
                let mut targets: Vec<usize> = (0..vals.len())
                    .filter(|&i| !vals[i].2 && !destroyed.contains(&roots[i]))
                    .collect();
                if targets.is_empty() {
                    targets = (0..vals.len()).filter(|&i| !vals[i].2).collect();
                }
                let ai = targets[*a % targets.len()];
                destroyed.push(roots[ai]);
                let (a, av) = pick(ai);
                let (mut b, mut bv) = pick(*b);
                if broadcast_shape(av.shape(), bv.shape()).as_deref() != Some(av.shape()) {
                    (b, bv) = (a.clone(), av.clone());
                }
                let (s, v) = match k {
                    0 => (a.add_inplace(&b).unwrap(), zip_ref(&av, &bv, |x, y| x + y)),
                    1 => (a.mul_inplace(&b).unwrap(), zip_ref(&av, &bv, |x, y| x * y)),
                    2 => (a.relu_inplace().unwrap(), av.mapv(relu)),
                    _ => (a.neg_inplace().unwrap(), av.mapv(|x| -x)),
                };
                (s, v, false)
            }
        };
        vals.push((sym, val, prot));
        roots.push(root);
    }
    let last = vals.len() - 1;
    let mut outs = vec![last];
    // A second output, mostly among values whose root nobody destroys.
    let safe: Vec<usize> = (2..last).filter(|&i| !destroyed.contains(&roots[i])).collect();
    let extra = match safe.len() {
        0 => 2 + extra_out % (vals.len() - 2),
        n if extra_out & 3 != 0 => safe[extra_out / 4 % n],
        _ => 2 + extra_out / 4 % (vals.len() - 2),
    };
    if extra != last {
        outs.push(extra);
    }
    let out_syms: Vec<&Sym> = outs.iter().map(|&i| &vals[i].0).collect();
    let graph = g.build(&out_syms).unwrap();
    let expected = outs.iter().map(|&i| vals[i].1.clone()).collect();
    RandomGraph {
        graph,
        expected,
        x0,
        x1,
        shape: shape.to_vec(),
    }
}

fn same_values(got: &[f64], want: &[f64]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(a, b)| a == b || (a.is_nan() && b.is_nan()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Property 3: frees never precede reads, outputs are never freed, the
    /// protected input is never written, and the outputs equal ndarray's.
    #[test]
    fn the_executor_never_frees_a_buffer_still_read(
        shape in prop::collection::vec(1usize..=4, 1..=2),
        steps in prop::collection::vec(step(), 1..=10),
        extra_out in any::<usize>(),
        seed in 0u64..100,
    ) {
        let rg = build_random(&shape, &steps, extra_out, seed);
        let exec = match Executor::new(&rg.graph) {
            Ok(e) => e,
            Err(e) => {
                // Only the destroy rules may refuse, and only graphs that
                // destroy something.
                prop_assert!(matches!(e, Error::Rules { .. }), "{:?}", e);
                prop_assert!(rg.graph.nodes().iter().any(|n| !n.op.destroy_map().is_empty()));
                return Ok(());
            }
        };
        for _ in 0..2 {
            let x0 = f64s(&rg.shape, &rg.x0);
            let x1 = f64s(&rg.shape, &rg.x1);
            let mut rec = Reads::default();
            let opts = RunOptions { record_frees: true, ..Default::default() };
            let out = exec
                .run_with(&feeds(&[("x0", &x0), ("x1", &x1)]), &mut rec, &opts)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(rec.reads.len(), rg.graph.nodes().len());
            check_frees(&out.stats.frees, &rec, &out.outputs)?;
            prop_assert_eq!(vals_f64(&x1), rg.x1.clone(), "the protected input was written");
            prop_assert_eq!(out.outputs.len(), rg.expected.len());
            for ((name, t), want) in out.outputs.iter().zip(&rg.expected) {
                prop_assert_eq!(t.shape(), want.shape(), "output {}", name);
                let want: Vec<f64> = want.iter().copied().collect();
                prop_assert!(same_values(&vals_f64(t), &want), "output {}: {:?} vs {:?}", name, vals_f64(t), want);
            }
            // Peak covers at least the inputs and every output buffer.
            prop_assert!(out.stats.peak_live_bytes >= 2 * 8 * rg.x0.len());
        }
    }
}

// ----- feeds ---------------------------------------------------------------------------

#[test]
fn feeds_are_checked_against_the_declared_inputs() {
    let g = GraphBuilder::new("feeds");
    let x = g.input("x", DType::F64, &[-1, 3]);
    let y = x.exp().unwrap();
    let graph = g.build(&[&y]).unwrap();
    let exec = Executor::new(&graph).unwrap();
    let refused = |r: vigil_engine::Result<vigil_engine::exec::RunOutput>| match r.map(|_| ()) {
        Err(Error::Feed { input, fault, msg }) => (input, fault, msg),
        other => panic!("not a refused feed: {other:?}"),
    };
    let (input, fault, _) = refused(exec.run(&HashMap::new()));
    assert_eq!((input.as_str(), fault), ("x", FeedFault::Missing));
    let (input, fault, msg) = refused(exec.run(&feeds(&[("x", &arange_i64(&[2, 3]))])));
    assert_eq!((input.as_str(), fault), ("x", FeedFault::Mismatch));
    assert!(msg.contains("i64"), "{msg}");
    let (input, fault, msg) = refused(exec.run(&feeds(&[("x", &arange_f64(&[2, 4]))])));
    assert_eq!((input.as_str(), fault), ("x", FeedFault::Mismatch));
    assert!(msg.contains("[2, 4]"), "{msg}");
    let (input, fault, _) =
        refused(exec.run(&feeds(&[("x", &arange_f64(&[2, 3])), ("q", &arange_f64(&[1]))])));
    assert_eq!((input.as_str(), fault), ("q", FeedFault::Unknown));
    // A dynamic dimension takes any length.
    let out = exec.run(&feeds(&[("x", &arange_f64(&[5, 3]))])).unwrap();
    assert_eq!(out.get(y.name()).unwrap().shape(), &[5, 3]);
    // Runtime errors name the node.
    let g = GraphBuilder::new("runtime");
    let x = g.input("x", DType::F64, &[-1]);
    let w = g.input("w", DType::F64, &[-1]);
    let s = node(&g, "sum_xw", "add", &[&x, &w]);
    let graph = g.build(&[&s]).unwrap();
    let Err(e) = Executor::new(&graph)
        .unwrap()
        .run(&feeds(&[("x", &arange_f64(&[2])), ("w", &arange_f64(&[3]))]))
    else {
        panic!("a run adding [2] to [3] succeeded");
    };
    assert!(matches!(at_node(&e), ("sum_xw", Error::Shape(_))), "{e:?}");
}

#[test]
fn stop_after_runs_a_prefix_and_listeners_see_every_op_in_order() {
    let graph = chain(&["relu", "neg", "exp"], false);
    let exec = Executor::new(&graph).unwrap();
    let x = arange_f64(&[1000]);
    let mut rec = Reads::default();
    let opts = RunOptions {
        stop_after: Some(2),
        ..Default::default()
    };
    let out = exec.run_with(&feeds(&[("x", &x)]), &mut rec, &opts).unwrap();
    assert_eq!(out.stats.ops, 2);
    assert!(out.outputs.is_empty());
    let seen: Vec<(usize, String)> = rec.reads.iter().map(|(p, n, _)| (*p, n.clone())).collect();
    assert_eq!(seen, vec![(0, "n0".to_string()), (1, "n1".to_string())]);
    assert_eq!(rec.reads[0].2, vec![x.buffer_id()]);
}

// ----- JSON -------------------------------------------------------------------------------

fn json_graph(nodes: &str, inputs: &str) -> String {
    format!(
        r#"{{"format": "vigil-graph/1", "name": "j", "inputs": [{inputs}], "nodes": [{nodes}], "outputs": ["y"]}}"#
    )
}

const XF: &str = r#"{"name": "x", "dtype": "f32", "shape": [2, 3]}"#;

fn load_err(text: &str) -> String {
    err_msg(Graph::from_json(text, &OpRegistry::builtin()))
}

fn load_error(text: &str) -> Error {
    Graph::from_json(text, &OpRegistry::builtin()).unwrap_err()
}

#[test]
fn graph_json_errors_name_the_node() {
    let e = load_error(&json_graph(
        r#"{"name": "n1", "op": "frobnicate", "inputs": ["x"], "outputs": ["y"]}"#,
        XF,
    ));
    assert!(matches!(at_node(&e), ("n1", Error::Unsupported(_))), "{e:?}");
    assert!(e.to_string().contains("'frobnicate'"), "names the op: {e}");
    let e = load_err(&json_graph(
        r#"{"name": "n1", "op": "exp", "inputs": ["nope"], "outputs": ["y"]}"#,
        XF,
    ));
    assert!(
        e.contains("node 'n1'") && e.contains("'nope' is not defined"),
        "{e}"
    );
    let e = load_err(&json_graph(
        r#"{"name": "n1", "op": "exp", "inputs": ["x"], "outputs": ["x"]}"#,
        XF,
    ));
    assert!(
        e.contains("variable 'x' is defined twice") && e.contains("node 'n1'"),
        "{e}"
    );
    let e = load_err(&json_graph(
        r#"{"name": "n1", "op": "exp", "inputs": ["x"], "outputs": ["y"]}, {"name": "n2", "op": "neg", "inputs": ["x"], "outputs": ["y"]}"#,
        XF,
    ));
    assert!(
        e.contains("variable 'y' is defined twice") && e.contains("'n1'") && e.contains("'n2'"),
        "{e}"
    );
    let e = load_err(&json_graph(
        r#"{"name": "a", "op": "exp", "inputs": ["q"], "outputs": ["p"]}, {"name": "b", "op": "neg", "inputs": ["p"], "outputs": ["q"]}, {"name": "c", "op": "neg", "inputs": ["x"], "outputs": ["y"]}"#,
        XF,
    ));
    assert!(
        e.contains("'a'") && e.contains("'b'") && e.contains("cycle") && !e.contains("'c'"),
        "{e}"
    );
    let e = load_error(&json_graph(
        r#"{"name": "n1", "op": "add", "inputs": ["x", "w"], "outputs": ["y"]}"#,
        &format!(r#"{XF}, {{"name": "w", "dtype": "f64", "shape": [2, 3]}}"#),
    ));
    assert!(matches!(at_node(&e), ("n1", Error::DType(_))), "{e:?}");
    let e = load_error(&json_graph(
        r#"{"name": "t", "op": "transpose", "inputs": ["x"], "outputs": ["y"], "attrs": {"permm": [1, 0]}}"#,
        XF,
    ));
    assert!(matches!(at_node(&e), ("t", Error::Attr(_))), "{e:?}");
    assert!(e.to_string().contains("permm"), "names the attr: {e}");
    let e = load_error(&json_graph(
        r#"{"name": "n1", "op": "add", "inputs": ["x"], "outputs": ["y"]}"#,
        XF,
    ));
    assert!(matches!(at_node(&e), ("n1", Error::Arity(_))), "{e:?}");
    let e = load_err(&json_graph(
        r#"{"name": "n1", "op": "exp", "inputs": ["x"], "outputs": ["y", "z"]}"#,
        XF,
    ));
    assert!(e.contains("node 'n1'"), "{e}");
    let e = load_err(&json_graph(
        r#"{"name": "n1", "op": "exp", "inputs": ["x"], "outputs": ["z"]}"#,
        XF,
    ));
    assert!(e.contains("graph output 'y' is not defined"), "{e}");
    let e = load_err(&json_graph(
        r#"{"name": "n1", "op": "exp", "inputs": ["x"], "outputs": ["y"]}, {"name": "n1", "op": "neg", "inputs": ["x"], "outputs": ["z"]}"#,
        XF,
    ));
    assert!(e.contains("node 'n1' is defined twice"), "{e}");
    // Format and field errors.
    assert!(
        load_err(&json_graph("", XF).replace("vigil-graph/1", "vigil-graph/9")).contains("vigil-graph/9")
    );
    assert!(load_err(&json_graph("", XF).replace("\"name\": \"j\"", "\"nmae\": \"j\"")).contains("nmae"));
    let bad_const = r#"{"format": "vigil-graph/1", "inputs": [], "constants": [{"name": "c", "dtype": "i64", "shape": [3], "data": [1, 2]}], "nodes": [], "outputs": ["c"]}"#;
    assert!(load_err(bad_const).contains("constant 'c'"));
}

#[test]
fn graph_load_errors_name_the_file() {
    let dir = std::env::temp_dir().join(format!("vigil-engine-executor-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.json");
    std::fs::write(
        &path,
        json_graph(
            r#"{"name": "n1", "op": "frobnicate", "inputs": ["x"], "outputs": ["y"]}"#,
            XF,
        ),
    )
    .unwrap();
    let e = err_msg(Graph::load(&path, &OpRegistry::builtin()));
    assert!(e.contains("bad.json") && e.contains("node 'n1'"), "{e}");
    let e = err_msg(Graph::load(dir.join("missing.json"), &OpRegistry::builtin()));
    assert!(e.contains("missing.json"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn graph_json_round_trips() {
    let g = GraphBuilder::new("round trip");
    let x = g.mutable_input("x", DType::F32, &[2, 3]);
    let k = g.input("k", DType::I64, &[-1]);
    let cf = g.constant(
        "cf",
        Tensor::from_vec(&[3], vec![f32::NAN, f32::INFINITY, 0.1f32]).unwrap(),
    );
    let cd = g.constant("cd", f64s(&[2], &[-0.0, 1.0 / 3.0]));
    let ci = g.constant("ci", i64s(&[2], &[(1 << 53) + 1, i64::MIN]));
    let c32 = g.constant("c32", Tensor::from_vec(&[1], vec![-7i32]).unwrap());
    let cb = g.constant(
        "cb",
        Tensor::from_vec(&[2, 3], vec![true, false, true, false, false, true]).unwrap(),
    );
    let p = g.parameter("p", f64s(&[2], &[1.5, -2.5]));
    let y2 = g.input("y2", DType::F32, &[2, 3]);
    let v = x
        .view(&[
            IndexSpec::range(-1, -1000, -1),
            IndexSpec::Interval {
                start: 0,
                end: -1,
                stride: 2,
                inclusive: true,
            },
        ])
        .unwrap();
    let vn = v.neg().unwrap();
    let t = node_with(
        &g,
        "t",
        "transpose",
        &[&y2],
        Attrs::new().with("perm", vec![1, 0]),
    );
    let r = t.reshape(&[-1]).unwrap();
    let e = node_with(&g, "e", "expand_dims", &[&r], Attrs::new().with("axis", -1));
    let s = node_with(&g, "s", "squeeze", &[&e], Attrs::new().with("axes", vec![1]));
    let b = node_with(
        &g,
        "b",
        "broadcast_to",
        &[&cf],
        Attrs::new().with("shape", vec![2, 3]),
    );
    let w = node(&g, "w", "where", &[&cb, &x, &b]);
    let m = node(&g, "m", "add_inplace", &[&x, &w]);
    let kc = k.cast(DType::F64).unwrap();
    let q = node(&g, "q", "mul", &[&cd, &p]);
    let graph = g.build(&[&s, &m, &vn, &kc, &q, &ci, &c32]).unwrap();
    let json = graph.to_json().unwrap();
    let back = Graph::from_json(&json, &OpRegistry::builtin()).unwrap();
    assert_eq!(back.to_json().unwrap(), json);
    assert_eq!(back.name(), "round trip");
    let shape = |g: &Graph| -> Vec<(String, String, Vec<String>, Attrs)> {
        g.nodes()
            .iter()
            .map(|n| {
                let ins = n.inputs.iter().map(|&i| g.var(i).name.clone()).collect();
                (n.name.clone(), n.op.name().to_string(), ins, n.op.attrs())
            })
            .collect()
    };
    assert_eq!(shape(&back), shape(&graph));
    // The same variables (the file lists inputs before constants, so the
    // order of sources may differ) with the same types and protection.
    assert_eq!(graph.vars().len(), back.vars().len());
    for a in graph.vars() {
        let id = back.var_id(&a.name).unwrap();
        let b = back.var(id);
        assert_eq!(a.ty, b.ty, "{}", a.name);
        assert_eq!(
            std::mem::discriminant(&a.kind),
            std::mem::discriminant(&b.kind),
            "{}",
            a.name
        );
        assert_eq!(
            graph.is_protected(graph.var_id(&a.name).unwrap()),
            back.is_protected(id),
            "{}",
            a.name
        );
    }
    // Constant values survive bit for bit (NaN, inf, -0.0, i64 beyond 2^53).
    for name in ["cf", "cd", "ci", "c32", "cb", "p"] {
        let val = |g: &Graph| match &g.var(g.var_id(name).unwrap()).kind {
            vigil_engine::graph::VarKind::Constant(t) | vigil_engine::graph::VarKind::Parameter(t) => {
                t.clone()
            }
            other => panic!("{name} is {other:?}"),
        };
        let (a, b) = (val(&graph), val(&back));
        assert_eq!((a.dtype(), a.shape()), (b.dtype(), b.shape()), "{name}");
        let bits = |t: &Tensor| {
            t.to_f64_vec()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>()
        };
        assert_eq!(bits(&a), bits(&b), "{name}");
        if name == "ci" {
            assert_eq!(vals_i64(&b), vec![(1 << 53) + 1, i64::MIN]);
        }
    }
    // Both run to the same outputs.
    let run = |g: &Graph| {
        let x = Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let y2 = Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let out = Executor::new(g)
            .unwrap()
            .run(&feeds(&[("x", &x), ("y2", &y2), ("k", &i64s(&[2], &[3, -4]))]))
            .unwrap();
        out.outputs
            .iter()
            .map(|(n, t)| {
                (
                    n.clone(),
                    t.to_f64_vec()
                        .unwrap()
                        .iter()
                        .map(|v| v.to_bits())
                        .collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>()
    };
    let (a, b) = (run(&graph), run(&back));
    assert_eq!(a, b);
    let bits = |v: &[f64]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    let f32_nan = f32::NAN as f64;
    assert_eq!(a[0].1, bits(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]));
    assert_eq!(
        a[1].1,
        bits(&[2.0, f64::INFINITY, 6.0, f32_nan, f64::INFINITY, 12.0])
    );
    assert_eq!(a[2].1, bits(&[-4.0, -6.0, -1.0, -3.0]));
    assert_eq!(a[3].1, bits(&[3.0, -4.0]));
    assert_eq!(a[4].1, bits(&[-0.0, (1.0 / 3.0) * -2.5]));
}
