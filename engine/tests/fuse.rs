//! Fused sweeps (engine/src/exec/fuse.rs): a run of in-place elementwise
//! nodes swept tile by tile gives bit for bit what running the nodes one by
//! one gives, and sweeps happen only where nothing can see the values they
//! skip.

mod common;

use std::collections::HashMap;

use proptest::prelude::*;
use vigil_engine::exec::{Flow, Listener, RunOptions, RunOutput, SweepEvent, SweepWatch};
use vigil_engine::summary::Acc;
use vigil_engine::{
    inplace, At, Attrs, DType, Executor, Graph, GraphBuilder, IndexSpec, OpEvent, Sym, Tensor,
};

/// One op of a generated chain.
#[derive(Clone, Copy, Debug)]
enum Link {
    Unary(&'static str),
    /// A binary op with the scalar constant `c`.
    Scalar(&'static str),
    /// A binary op with the graph input `x` (same shape).
    WithInput(&'static str),
    /// A binary op of the running value with itself.
    Itself(&'static str),
    /// A binary op of the running value with a unary op of it, as SiLU's
    /// `y * sigmoid(y)`.
    Gated(&'static str, &'static str),
}

const UNARY: [&str; 13] = [
    "exp",
    "log",
    "tanh",
    "sigmoid",
    "sqrt",
    "abs",
    "neg",
    "sin",
    "erf",
    "floor",
    "relu",
    "reciprocal",
    "hard_swish",
];
const BINARY: [&str; 6] = ["add", "sub", "mul", "div", "maximum", "pow"];

fn link() -> impl Strategy<Value = Link> {
    prop_oneof![
        prop::sample::select(&UNARY[..]).prop_map(Link::Unary),
        prop::sample::select(&BINARY[..]).prop_map(Link::Scalar),
        prop::sample::select(&BINARY[..]).prop_map(Link::WithInput),
        prop::sample::select(&BINARY[..]).prop_map(Link::Itself),
        (
            prop::sample::select(&BINARY[..]),
            prop::sample::select(&UNARY[..])
        )
            .prop_map(|(b, u)| Link::Gated(b, u)),
    ]
}

/// `x * c` (a fresh buffer the pass may then overwrite), then `links`.
fn chain(dtype: DType, n: usize, links: &[Link], extra_output: Option<usize>) -> Graph {
    let g = GraphBuilder::new("chain");
    let x = g.input("x", dtype, &[n as i64]);
    let c = g.constant(
        "c",
        Tensor::from_vec(&[1], vec![0.75f64])
            .unwrap()
            .cast(dtype)
            .unwrap(),
    );
    let mut y = x.op("mul", &[&c], Attrs::new()).unwrap();
    let mut outputs: Vec<Sym> = Vec::new();
    for (k, l) in links.iter().enumerate() {
        y = match *l {
            Link::Unary(op) => y.op(op, &[], Attrs::new()),
            Link::Scalar(op) => y.op(op, &[&c], Attrs::new()),
            Link::WithInput(op) => y.op(op, &[&x], Attrs::new()),
            Link::Itself(op) => y.op(op, &[&y], Attrs::new()),
            Link::Gated(op, f) => y.op(op, &[&y.op(f, &[], Attrs::new()).unwrap()], Attrs::new()),
        }
        .unwrap();
        if extra_output == Some(k) {
            outputs.push(y.clone());
        }
    }
    outputs.push(y);
    let refs: Vec<&Sym> = outputs.iter().collect();
    inplace::run(&g.build(&refs).unwrap()).unwrap().graph
}

fn feeds(dtype: DType, n: usize) -> HashMap<String, Tensor> {
    let v: Vec<f64> = (0..n)
        .map(|i| ((i * 7919) % 2003) as f64 / 1000.0 - 1.0)
        .collect();
    HashMap::from([(
        "x".to_string(),
        Tensor::from_vec(&[n], v).unwrap().cast(dtype).unwrap(),
    )])
}

/// Each element's bits, every NaN alike: the sign and payload of a NaN
/// are whatever the compiler's order of an add's operands makes them (two
/// NaNs in, the first comes out), and the sweep and the op are compiled
/// apart.
fn bits(t: &Tensor) -> Vec<u64> {
    t.to_f64_vec()
        .unwrap()
        .iter()
        .map(|v| {
            if v.is_nan() {
                f64::NAN.to_bits()
            } else {
                v.to_bits()
            }
        })
        .collect()
}

fn assert_same(a: &RunOutput, b: &RunOutput) {
    assert_eq!(a.outputs.len(), b.outputs.len());
    for ((na, ta), (nb, tb)) in a.outputs.iter().zip(&b.outputs) {
        assert_eq!(na, nb);
        assert_eq!(bits(ta), bits(tb), "output '{na}' differs");
    }
}

#[test]
fn the_math_chain_is_one_sweep_and_matches_the_stepped_run() {
    // The bench's 16-op chain: after the pass, `x * c` (pure: it may not
    // overwrite the input x) and 15 in-place nodes, swept from `x * c`.
    let links = [
        Link::Unary("exp"),
        Link::Scalar("add"),
        Link::Unary("log"),
        Link::Unary("tanh"),
        Link::WithInput("add"),
        Link::Unary("sigmoid"),
        Link::Itself("mul"),
        Link::Unary("sqrt"),
        Link::WithInput("sub"),
        Link::Unary("abs"),
        Link::Scalar("mul"),
        Link::Unary("exp"),
        Link::Scalar("add"),
        Link::Unary("log"),
        Link::Unary("tanh"),
    ];
    // Long enough to split across the pool, with a ragged last tile.
    let n = (1 << 17) + 13;
    let graph = chain(DType::F32, n, &links, None);
    let f = feeds(DType::F32, n);
    let fused = Executor::new(&graph).unwrap().run(&f).unwrap();
    assert_eq!(fused.stats.fused, 16);
    assert_eq!(fused.stats.ops, 16);
    assert_same(&fused, &common::stepped(&graph, &f));
}

#[test]
fn a_graph_output_inside_a_chain_ends_the_sweep_there() {
    let links = [
        Link::Unary("exp"),
        Link::Unary("tanh"),
        Link::Unary("sqrt"),
        Link::Unary("log"),
    ];
    let n = 1000;
    let f = feeds(DType::F64, n);
    // The output of `tanh` (link 1) must be a value of its own.
    let graph = chain(DType::F64, n, &links, Some(1));
    let fused = Executor::new(&graph).unwrap().run(&f).unwrap();
    assert_same(&fused, &common::stepped(&graph, &f));
    // `x * c`, exp and tanh sweep. The pass cannot destroy an output, so
    // sqrt runs out of place and starts a second sweep, with log in place
    // on its fresh buffer.
    assert_eq!(fused.stats.fused, 5);
}

/// SiLU as exported models write it, `x · sigmoid(x)`: sigmoid cannot
/// overwrite x (mul reads it after), so it runs pure into a fresh buffer
/// that mul then overwrites.
fn silu(dtype: DType, n: usize) -> Graph {
    let g = GraphBuilder::new("silu");
    let x = g.input("x", dtype, &[n as i64]);
    let s = x.op("sigmoid", &[], Attrs::new()).unwrap();
    let y = x.op("mul", &[&s], Attrs::new()).unwrap();
    inplace::run(&g.build(&[&y]).unwrap()).unwrap().graph
}

#[test]
fn a_pure_node_starts_a_sweep_that_leaves_its_input_alone() {
    // Long enough to split across the pool, with a ragged last tile.
    for (dtype, n) in [(DType::F32, (1 << 17) + 13), (DType::F64, 1000), (DType::F32, 5)] {
        let graph = silu(dtype, n);
        let ops: Vec<&str> = graph.nodes().iter().map(|n| n.op.name()).collect();
        assert_eq!(ops, ["sigmoid", "mul_inplace"]);
        let f = feeds(dtype, n);
        let before = bits(&f["x"]);
        let fused = Executor::new(&graph).unwrap().run(&f).unwrap();
        assert_eq!(fused.stats.fused, 2);
        assert_same(&fused, &common::stepped(&graph, &f));
        assert_eq!(bits(&f["x"]), before, "the head's input was written");
        assert!(!fused.outputs[0].1.same_buffer(&f["x"]));
    }
}

#[test]
fn a_pure_node_folds_into_the_node_that_overwrites_its_input() {
    // `y = x * c` is a value of the graph's own, so the pass lets the mul
    // of SiLU overwrite it: `y *= sigmoid(y)`, with sigmoid pure before it.
    let n = (1 << 17) + 13;
    let graph = chain(DType::F32, n, &[Link::Gated("mul", "sigmoid")], None);
    let nodes = graph.nodes();
    let ops: Vec<&str> = nodes.iter().map(|n| n.op.name()).collect();
    assert_eq!(ops, ["mul", "sigmoid", "mul_inplace"]);
    assert_eq!(nodes[2].inputs, [nodes[1].inputs[0], nodes[1].outputs[0]]);
    let f = feeds(DType::F32, n);
    let fused = Executor::new(&graph).unwrap().run(&f).unwrap();
    assert_same(&fused, &common::stepped(&graph, &f));
    // `x * c` runs alone (the pure sigmoid cannot continue its sweep).
    assert_eq!(fused.stats.fused, 2);
    // Watched, the pair still sweeps; the listener reads the folded
    // sigmoid's output from its summary (the output never exists), the
    // same as the stepped run's.
    let mut watch = Summaries::new(SweepWatch::Summaries);
    let out = Executor::new(&graph)
        .unwrap()
        .run_with(&f, &mut watch, &RunOptions::default())
        .unwrap();
    assert_eq!((out.stats.fused, watch.swept), (2, 2));
    assert_eq!(watch.folded, vec![true]);
    assert_same(&out, &fused);
    let mut each = Summaries::new(SweepWatch::Summaries);
    let opts = RunOptions {
        node_by_node: true,
        ..RunOptions::default()
    };
    Executor::new(&graph)
        .unwrap()
        .run_with(&f, &mut each, &opts)
        .unwrap();
    assert_eq!(each.seen.len(), 3);
    for (name, seen) in &each.seen {
        assert_same_summary(name, &watch.seen[name], seen);
    }
}

/// `tanh(exp(v))` of a view `v` of a `[3, 4]` input, after the pass: its
/// plain run, and the same run node by node.
fn exp_tanh_of_view(view: impl Fn(&Sym) -> Sym) -> (RunOutput, RunOutput) {
    let g = GraphBuilder::new("view");
    let x = g.input("x", DType::F32, &[3, 4]);
    let y = view(&x).op("exp", &[], Attrs::new()).unwrap();
    let y = y.op("tanh", &[], Attrs::new()).unwrap();
    let graph = inplace::run(&g.build(&[&y]).unwrap()).unwrap().graph;
    let f = HashMap::from([(
        "x".to_string(),
        Tensor::from_vec(&[3, 4], (0..12).map(|i| i as f32 / 7.0).collect()).unwrap(),
    )]);
    (
        Executor::new(&graph).unwrap().run(&f).unwrap(),
        common::stepped(&graph, &f),
    )
}

#[test]
fn a_pure_node_on_a_transposed_input_sweeps_it_in_memory_order() {
    // Not C-contiguous but without gaps: the sweep walks it in memory
    // order and its output keeps the layout.
    let (fused, stepped) = exp_tanh_of_view(|x| {
        x.op("transpose", &[], Attrs::new().with("perm", vec![1i64, 0]))
            .unwrap()
    });
    assert!(fused.stats.fused > 0);
    assert_eq!(fused.outputs[0].1.strides(), &[1, 4]);
    assert_same(&fused, &stepped);
}

#[test]
fn a_pure_node_on_a_view_with_gaps_runs_alone() {
    // Every other column: no slice holds it, so no sweep starts.
    let (fused, stepped) =
        exp_tanh_of_view(|x| x.view(&[IndexSpec::All, IndexSpec::range(0, 4, 2)]).unwrap());
    assert_eq!(fused.stats.fused, 0);
    assert_same(&fused, &stepped);
}

/// A listener that watches every op.
struct Watch(usize);

impl Listener for Watch {
    fn post_op(&mut self, _at: &At, _ev: &OpEvent<'_>) {
        self.0 += 1;
    }
    fn is_active(&self, _op: vigil_engine::Operation) -> bool {
        true
    }
}

#[test]
fn a_watched_run_goes_node_by_node() {
    let links = [Link::Unary("exp"), Link::Unary("tanh"), Link::Scalar("add")];
    let graph = chain(DType::F32, 100, &links, None);
    let f = feeds(DType::F32, 100);
    let mut watch = Watch(0);
    let out = Executor::new(&graph)
        .unwrap()
        .run_with(&f, &mut watch, &RunOptions::default())
        .unwrap();
    assert_eq!(out.stats.fused, 0);
    assert_eq!(watch.0, 4);
    let _ = Flow::Continue;
}

#[test]
fn an_operand_that_does_not_fit_ends_the_sweep() {
    // `y + z` broadcasts [3, 1, 4] into [3, 2, 4]: it repeats in two
    // places, not as runs, so the sweep stops before it.
    let g = GraphBuilder::new("bcast");
    let x = g.input("x", DType::F32, &[3, 2, 4]);
    let z = g.input("z", DType::F32, &[3, 1, 4]);
    let y = x.op("exp", &[], Attrs::new()).unwrap();
    let y = y.op("tanh", &[], Attrs::new()).unwrap();
    let y = y.op("sqrt", &[], Attrs::new()).unwrap();
    let y = y.op("add", &[&z], Attrs::new()).unwrap();
    let y = y.op("log", &[], Attrs::new()).unwrap();
    let graph = inplace::run(&g.build(&[&y]).unwrap()).unwrap().graph;
    let f = HashMap::from([
        (
            "x".to_string(),
            Tensor::from_vec(&[3, 2, 4], (0..24).map(|i| i as f32 / 7.0).collect()).unwrap(),
        ),
        (
            "z".to_string(),
            Tensor::from_vec(&[3, 1, 4], (0..12).map(|i| i as f32 / 3.0).collect()).unwrap(),
        ),
    ]);
    let fused = Executor::new(&graph).unwrap().run(&f).unwrap();
    assert_same(&fused, &common::stepped(&graph, &f));
    // exp reads the input x out of place and starts a sweep with tanh and
    // sqrt; add and log go alone (a sweep of one node is no sweep).
    assert_eq!(fused.stats.fused, 3);
}

/// A named f32 input of `shape`: element `i` is `(i · k mod 997) / scale - 1`.
fn ramp(name: &str, shape: &[usize], k: usize, scale: f32) -> (String, Tensor) {
    let n: usize = shape.iter().product();
    let v = (0..n).map(|i| ((i * k) % 997) as f32 / scale - 1.0).collect();
    (name.to_string(), Tensor::from_vec(shape, v).unwrap())
}

/// `exp(x)` (pure, so the sweep starts there), then `+ b`, `gelu`, `* s`
/// with `b` and `s` broadcast from the shapes given.
fn broadcast_chain(
    x_shape: &[usize],
    b_shape: &[usize],
    s_shape: &[usize],
) -> (Graph, HashMap<String, Tensor>) {
    let dims = |s: &[usize]| s.iter().map(|&d| d as i64).collect::<Vec<_>>();
    let g = GraphBuilder::new("bias");
    let x = g.input("x", DType::F32, &dims(x_shape));
    let b = g.input("b", DType::F32, &dims(b_shape));
    let s = g.input("s", DType::F32, &dims(s_shape));
    let y = x.op("exp", &[], Attrs::new()).unwrap();
    let y = y.op("add", &[&b], Attrs::new()).unwrap();
    let y = y.op("gelu", &[], Attrs::new()).unwrap();
    let y = y.op("mul", &[&s], Attrs::new()).unwrap();
    let graph = inplace::run(&g.build(&[&y]).unwrap()).unwrap().graph;
    let f = HashMap::from([
        ramp("x", x_shape, 7919, 500.0),
        ramp("b", b_shape, 31, 500.0),
        ramp("s", s_shape, 53, 500.0),
    ]);
    (graph, f)
}

#[test]
fn a_bias_row_and_a_channel_scale_join_the_sweep() {
    // A linear layer's bias [C] over [N, L, C] and a per-channel scale
    // [C, 1, 1] over [N, C, H, W]: each element's operand is one of a run,
    // so all four nodes are one sweep, bit for bit the stepped run. The
    // values are long enough for parallel parts and many tiles.
    for (x, b, s) in [
        (vec![2, 3000, 48], vec![48], vec![1, 1, 48]),
        (vec![2, 24, 70, 70], vec![24, 1, 1], vec![1, 24, 1, 1]),
        (vec![5, 7], vec![5, 1], vec![7]),
    ] {
        let (graph, f) = broadcast_chain(&x, &b, &s);
        let fused = Executor::new(&graph).unwrap().run(&f).unwrap();
        assert_same(&fused, &common::stepped(&graph, &f));
        assert_eq!(fused.stats.fused, 4, "{x:?} {b:?} {s:?}");
    }
}

/// Where a head's second operand comes from.
#[derive(Clone, Copy, Debug)]
enum HeadOperand {
    /// A one-element constant.
    Scalar,
    /// Another input of the same shape.
    Slice,
    /// The head's input itself (`x * x`).
    Itself,
    /// A row broadcast over every row of `x`.
    Row,
}

/// `h = x op operand` (pure: `x` is an input the pass never overwrites),
/// then `tanh` and `+ x` over `h` in place: a sweep of three nodes whose
/// head maps each tile from `x` into a fresh buffer.
fn headed_chain(
    op: &str,
    operand: HeadOperand,
    rows: usize,
    cols: usize,
) -> (Graph, HashMap<String, Tensor>) {
    let g = GraphBuilder::new("headed");
    let x = g.input("x", DType::F32, &[rows as i64, cols as i64]);
    let z = g.input("z", DType::F32, &[rows as i64, cols as i64]);
    let b = g.input("b", DType::F32, &[cols as i64]);
    let c = g.constant("c", Tensor::from_vec(&[1], vec![1.5f32]).unwrap());
    let y = match operand {
        HeadOperand::Scalar => x.op(op, &[&c], Attrs::new()),
        HeadOperand::Slice => x.op(op, &[&z], Attrs::new()),
        HeadOperand::Itself => x.op(op, &[&x], Attrs::new()),
        HeadOperand::Row => x.op(op, &[&b], Attrs::new()),
    }
    .unwrap();
    let y = y.op("tanh", &[], Attrs::new()).unwrap();
    let y = y.op("add", &[&x], Attrs::new()).unwrap();
    let graph = inplace::run(&g.build(&[&y]).unwrap()).unwrap().graph;
    let f = HashMap::from([
        ramp("x", &[rows, cols], 7919, 300.0),
        ramp("z", &[rows, cols], 31, 300.0),
        ramp("b", &[cols], 53, 300.0),
    ]);
    (graph, f)
}

/// What a listener saw of one node's output: its summary and first NaN or
/// infinity (flat index, value).
type Seen = (Acc, Option<(usize, f64)>);

/// Records each node's output summary: from the whole output in `post_op`
/// (through the scalar path), from the sweep's summaries in `post_sweep`.
struct Summaries {
    watch: SweepWatch,
    seen: HashMap<String, Seen>,
    swept: usize,
    /// Each sweep's `input` as `pre_sweep` saw it.
    inputs: Vec<Vec<f64>>,
    /// Each sweep's `folded`.
    folded: Vec<bool>,
}

impl Summaries {
    fn new(watch: SweepWatch) -> Summaries {
        Summaries {
            watch,
            seen: HashMap::new(),
            swept: 0,
            inputs: Vec::new(),
            folded: Vec::new(),
        }
    }
}

impl Listener for Summaries {
    fn watches_sweeps(&self) -> SweepWatch {
        self.watch
    }
    fn post_op(&mut self, _at: &At, ev: &OpEvent<'_>) {
        let xs = ev.outputs[0].to_f64_vec().unwrap();
        let mut acc = Acc::default();
        xs.iter().for_each(|&x| acc.push(x));
        let first = xs.iter().position(|x| !x.is_finite()).map(|i| (i, xs[i]));
        self.seen.insert(ev.node.name.clone(), (acc, first));
    }
    fn pre_sweep(&mut self, _at: &At, ev: &SweepEvent<'_>) {
        self.inputs.push(ev.input.to_f64_vec().unwrap());
        self.folded.push(ev.folded);
    }
    fn post_sweep(&mut self, _at: &At, ev: &SweepEvent<'_>) {
        self.swept += ev.nodes.len();
        for (k, out) in ev.outputs.iter().enumerate() {
            let name = ev.graph.node(ev.nodes[k]).name.clone();
            self.seen
                .insert(name, (out.summary.clone(), out.first_non_finite));
        }
    }
}

/// The same summary up to the order of the sum.
fn assert_same_summary(name: &str, a: &Seen, b: &Seen) {
    let (x, y) = (&a.0, &b.0);
    assert_eq!(
        (x.nan, x.pos_inf, x.neg_inf, x.negative, x.zero, x.positive),
        (y.nan, y.pos_inf, y.neg_inf, y.negative, y.zero, y.positive),
        "counts of '{name}'"
    );
    // `range` makes a zero +0: a ±0 mix's min or max keeps whichever zero
    // its lane saw first, and tiles split lanes differently.
    let bits = |r: Option<(f64, f64)>| r.map(|(lo, hi)| (lo.to_bits(), hi.to_bits()));
    assert_eq!(bits(x.range()), bits(y.range()), "range of '{name}'");
    // The f32 kernel adds in f32 lanes, up to 256 adds each per block: a
    // lost or doubled tile would be off by far more.
    let mag = x.lo.abs().max(x.hi.abs()) * (x.negative + x.zero + x.positive) as f64;
    assert!(
        x.sum == y.sum || (x.sum - y.sum).abs() <= 3e-5 * mag,
        "sum of '{name}': {} vs {}",
        x.sum,
        y.sum
    );
    // Every NaN alike, as in `bits`.
    let first = |s: &Seen| {
        s.1.map(|(i, v)| {
            (
                i,
                if v.is_nan() {
                    f64::NAN.to_bits()
                } else {
                    v.to_bits()
                },
            )
        })
    };
    assert_eq!(first(a), first(b), "first non-finite of '{name}'");
}

#[test]
fn a_listener_that_watches_sweeps_keeps_them() {
    let links = [Link::Unary("exp"), Link::Unary("tanh"), Link::Scalar("add")];
    let graph = chain(DType::F32, 100, &links, None);
    let f = feeds(DType::F32, 100);
    let exec = Executor::new(&graph).unwrap();
    for (watch, summaries) in [(SweepWatch::Edges, false), (SweepWatch::Summaries, true)] {
        let mut l = Summaries::new(watch);
        let out = exec.run_with(&f, &mut l, &RunOptions::default()).unwrap();
        // The sweep starts at `x * c`, pure (the pass never overwrites a
        // graph input): the listener reads x as the sweep's input, not the
        // fresh buffer.
        assert_eq!((out.stats.fused, l.swept), (4, 4));
        assert_eq!(l.inputs, vec![f["x"].to_f64_vec().unwrap()]);
        assert_eq!(l.folded, vec![false]);
        // The swept nodes have summaries only when asked for.
        assert_eq!(l.seen.len(), if summaries { 4 } else { 0 });
        assert_same(&out, &common::stepped(&graph, &f));
    }
}

/// `x - x` is +0 everywhere and `(x - x) * x` a mix of +0 and -0: the
/// swept tile and the whole output see the zeros in different lanes, and
/// the range must not depend on which zero a lane kept (found by the
/// proptest below in CI).
#[test]
fn a_range_of_signed_zeros_is_the_same_swept_or_stepped() {
    let n = 1360;
    let graph = chain(
        DType::F32,
        n,
        &[Link::Itself("sub"), Link::WithInput("mul")],
        None,
    );
    let f = feeds(DType::F32, n);
    let exec = Executor::new(&graph).unwrap();
    let mut swept = Summaries::new(SweepWatch::Summaries);
    let a = exec.run_with(&f, &mut swept, &RunOptions::default()).unwrap();
    let mut stepped = Summaries::new(SweepWatch::Summaries);
    let opts = RunOptions {
        node_by_node: true,
        ..RunOptions::default()
    };
    exec.run_with(&f, &mut stepped, &opts).unwrap();
    assert_eq!((a.stats.fused, swept.swept), (3, 3));
    let mut zeros = 0;
    for (name, seen) in &stepped.seen {
        assert_same_summary(name, &swept.seen[name], seen);
        if seen.0.zero == n {
            zeros += 1;
            assert_eq!(seen.0.range(), Some((0.0, 0.0)), "{name}");
        }
    }
    assert_eq!(zeros, 2, "x - x and (x - x) * x are all zeros");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A sweep's summaries of each node's output are the whole outputs'
    /// summaries of a node-by-node run (the sum up to its order), with
    /// NaN and infinities from `log`, `sqrt`, `reciprocal` and `pow`.
    #[test]
    fn sweep_summaries_are_the_stepped_outputs_summaries(
        links in prop::collection::vec(link(), 1..10),
        n in 1usize..40_000,
        f64_ in any::<bool>(),
    ) {
        let dtype = if f64_ { DType::F64 } else { DType::F32 };
        let graph = chain(dtype, n, &links, None);
        let f = feeds(dtype, n);
        let exec = Executor::new(&graph).unwrap();
        let mut swept = Summaries::new(SweepWatch::Summaries);
        let a = exec.run_with(&f, &mut swept, &RunOptions::default()).unwrap();
        let mut stepped = Summaries::new(SweepWatch::Summaries);
        let opts = RunOptions { node_by_node: true, ..RunOptions::default() };
        let b = exec.run_with(&f, &mut stepped, &opts).unwrap();
        assert_same(&a, &b);
        prop_assert_eq!(a.stats.fused, swept.swept);
        prop_assert_eq!(b.stats.fused, 0);
        prop_assert_eq!(swept.seen.len(), stepped.seen.len());
        for (name, seen) in &stepped.seen {
            assert_same_summary(name, &swept.seen[name], seen);
        }
    }

    #[test]
    fn a_sweep_is_bit_for_bit_the_stepped_run(
        links in prop::collection::vec(link(), 1..12),
        n in 1usize..3000,
        f64_ in any::<bool>(),
        extra in prop::option::of(0usize..12),
    ) {
        let dtype = if f64_ { DType::F64 } else { DType::F32 };
        let graph = chain(dtype, n, &links, extra.filter(|&k| k + 1 < links.len()));
        let f = feeds(dtype, n);
        let fused = Executor::new(&graph).unwrap().run(&f).unwrap();
        let plain = common::stepped(&graph, &f);
        assert_same(&fused, &plain);
        prop_assert_eq!(plain.stats.fused, 0);
    }

    /// A binary head writes each tile of its fresh buffer from its input
    /// and operand, whatever the operand's kind, and leaves its input as
    /// it was.
    #[test]
    fn a_binary_head_maps_its_input_bit_for_bit_as_stepped(
        op in prop::sample::select(&BINARY[..]),
        operand in prop::sample::select(&[HeadOperand::Scalar, HeadOperand::Slice, HeadOperand::Itself, HeadOperand::Row][..]),
        rows in 1usize..40,
        cols in 1usize..3000,
    ) {
        let (graph, f) = headed_chain(op, operand, rows, cols);
        let before = bits(&f["x"]);
        let fused = Executor::new(&graph).unwrap().run(&f).unwrap();
        assert_same(&fused, &common::stepped(&graph, &f));
        prop_assert_eq!(fused.stats.fused, 3, "{} {:?}", op, operand);
        prop_assert_eq!(bits(&f["x"]), before, "the head's input was written");
    }

    #[test]
    fn a_broadcast_operand_sweeps_bit_for_bit_as_stepped(
        dims in prop::collection::vec(1usize..6, 1..5),
        block in (0usize..5, 0usize..5),
        scale in 1usize..40,
    ) {
        // x's last axis scaled up so some values span several tiles; `b`
        // keeps x's dims over one block of axes and is 1 elsewhere, with
        // the leading 1s sometimes dropped.
        let mut xs = dims.clone();
        let last = xs.len() - 1;
        xs[last] *= scale;
        let (lo, hi) = (block.0.min(block.1) % xs.len(), block.0.max(block.1) % xs.len());
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        let mut bs: Vec<usize> = (0..xs.len()).map(|p| if (lo..=hi).contains(&p) { xs[p] } else { 1 }).collect();
        if dims[0] % 2 == 0 {
            bs.drain(..lo);
        }
        let (graph, f) = broadcast_chain(&xs, &bs, &[xs[last]]);
        let fused = Executor::new(&graph).unwrap().run(&f).unwrap();
        assert_same(&fused, &common::stepped(&graph, &f));
        prop_assert_eq!(fused.stats.fused, 4);
    }
}
