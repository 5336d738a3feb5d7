//! Twin sweeps (`Cursor::step_twin`): a fused chain of an in-place run and
//! the same nodes of its pure run, swept together tile by tile. Where every
//! tile agrees both runs end as if stepped node by node; where one differs
//! neither run moves and the in-place buffer holds what it held.

mod common;

use std::collections::HashMap;

use vigil_engine::exec::{NoListener, RunOptions, RunOutput, TwinStep};
use vigil_engine::{inplace, Attrs, DType, Executor, Graph, GraphBuilder, Tensor};

const N: usize = 100_003;

/// `x * c`, then a chain of elementwise ops; the pure graph and the same
/// graph after the in-place pass (which overwrites one buffer down the
/// chain).
fn chain() -> (Graph, Graph) {
    chain_from("mul")
}

/// [`chain`] starting at `first`: `mul` (by `c`, pure: `x` is read
/// later, so the sweep starts there and writes a fresh buffer) or
/// `softmax` (no elementwise op: the sweep starts at the `exp` after it,
/// which overwrites the softmax's output in place).
fn chain_from(first: &str) -> (Graph, Graph) {
    let g = GraphBuilder::new("chain");
    let x = g.input("x", DType::F32, &[N as i64]);
    let c = g.constant("c", Tensor::from_vec(&[1], vec![0.75f32]).unwrap());
    let mut y = match first {
        "mul" => x.op("mul", &[&c], Attrs::new()),
        _ => x.op(first, &[], Attrs::new()),
    }
    .unwrap();
    // The second operand: none, the constant, the input, or the running
    // value itself.
    for (op, with) in [
        ("exp", ""),
        ("add", "c"),
        ("log", ""),
        ("tanh", ""),
        ("add", "x"),
        ("sigmoid", ""),
        ("mul", "self"),
        ("sqrt", ""),
    ] {
        let args = match with {
            "c" => vec![c.clone()],
            "x" => vec![x.clone()],
            "self" => vec![y.clone()],
            _ => vec![],
        };
        let refs: Vec<_> = args.iter().collect();
        y = y.op(op, &refs, Attrs::new()).unwrap();
    }
    let pure = g.build(&[&y]).unwrap();
    let pass = inplace::run(&pure).unwrap().graph;
    (pure, pass)
}

fn feeds(shift_last: bool) -> HashMap<String, Tensor> {
    let mut v: Vec<f32> = (0..N)
        .map(|i| ((i * 7919) % 2003) as f32 / 1000.0 - 1.0)
        .collect();
    if shift_last {
        v[N - 1] += 0.5;
    }
    HashMap::from([("x".to_string(), Tensor::from_vec(&[N], v).unwrap())])
}

fn bits(t: &Tensor) -> Vec<u64> {
    t.to_f64_vec().unwrap().iter().map(|v| v.to_bits()).collect()
}

/// Both runs stepped together, a twin sweep tried at every node; returns
/// both outputs and what the twin steps did.
fn lockstep(
    pure: &Graph,
    pass: &Graph,
    twin_feeds: &HashMap<String, Tensor>,
) -> (RunOutput, RunOutput, Vec<String>) {
    let ie = Executor::new(pass).unwrap();
    let te = Executor::with_order(pure, ie.order().to_vec()).unwrap();
    let opts = RunOptions::default();
    let f = feeds(false);
    let mut ic = ie.start(&f, &mut NoListener, &opts).unwrap();
    let mut tc = te.start(twin_feeds, &mut NoListener, &opts).unwrap();
    let mut seen = Vec::new();
    while ic.next_node().is_some() {
        let span = ic.twin_span(&tc);
        if span >= 2 {
            let pos = ic.position();
            match ic
                .step_twin(&mut tc, span, &mut NoListener, &mut NoListener, false)
                .unwrap()
            {
                TwinStep::Ran { nodes, .. } => {
                    seen.push(format!("ran {}", nodes.len()));
                    continue;
                }
                other => {
                    assert_eq!(ic.position(), pos, "a twin step that did not run moved the run");
                    seen.push(format!("{other:?}"));
                }
            }
        }
        ic.step(&mut NoListener).unwrap();
        tc.step(&mut NoListener).unwrap();
    }
    (
        ic.finish(&mut NoListener).unwrap(),
        tc.finish(&mut NoListener).unwrap(),
        seen,
    )
}

#[test]
fn twin_runs_that_agree_sweep_the_chain_once_and_end_as_stepped_runs_do() {
    let (pure, pass) = chain();
    let (i, t, seen) = lockstep(&pure, &pass, &feeds(false));
    // The pure `x * c` (x is read later) starts the sweep.
    assert_eq!(seen, vec!["ran 9".to_string()]);
    let want = common::stepped(&pass, &feeds(false));
    assert_eq!(bits(&i.outputs[0].1), bits(&want.outputs[0].1));
    assert_eq!(bits(&t.outputs[0].1), bits(&want.outputs[0].1));
    assert!(!t.outputs[0].1.same_buffer(&i.outputs[0].1));
}

#[test]
fn a_twin_sweep_that_starts_in_place_ends_as_stepped_runs_do() {
    let (pure, pass) = chain_from("softmax");
    let ops: Vec<&str> = pass.nodes().iter().map(|n| n.op.name()).collect();
    assert_eq!((ops[0], ops[1]), ("softmax", "exp_inplace"));
    let (i, t, seen) = lockstep(&pure, &pass, &feeds(false));
    assert_eq!(seen, vec!["ran 8".to_string()]);
    let want = common::stepped(&pass, &feeds(false));
    assert_eq!(bits(&i.outputs[0].1), bits(&want.outputs[0].1));
    assert_eq!(bits(&t.outputs[0].1), bits(&want.outputs[0].1));
    // The twin's input off in its last element: the in-place buffer is
    // put back and each run steps to its own result.
    let (i, t, seen) = lockstep(&pure, &pass, &feeds(true));
    assert_eq!(seen[0], "Differs");
    assert_eq!(bits(&i.outputs[0].1), bits(&want.outputs[0].1));
    assert_eq!(
        bits(&t.outputs[0].1),
        bits(&common::stepped(&pure, &feeds(true)).outputs[0].1)
    );
}

/// `y = x * c`, then SiLU as the pass leaves it (`y *= sigmoid(y)`, the
/// sigmoid pure), then `tanh`: the pure graph and the pass's.
fn silu_chain() -> (Graph, Graph) {
    let g = GraphBuilder::new("silu");
    let x = g.input("x", DType::F32, &[N as i64]);
    let c = g.constant("c", Tensor::from_vec(&[1], vec![0.75f32]).unwrap());
    let y = x.op("mul", &[&c], Attrs::new()).unwrap();
    let s = y.op("sigmoid", &[], Attrs::new()).unwrap();
    let y = y
        .op("mul", &[&s], Attrs::new())
        .unwrap()
        .op("tanh", &[], Attrs::new())
        .unwrap();
    let pure = g.build(&[&y]).unwrap();
    let pass = inplace::run(&pure).unwrap().graph;
    (pure, pass)
}

#[test]
fn a_folded_pure_node_sweeps_as_twins_and_ends_as_stepped_runs_do() {
    let (pure, pass) = silu_chain();
    let ops: Vec<&str> = pass.nodes().iter().map(|n| n.op.name()).collect();
    assert_eq!(ops, ["mul", "sigmoid", "mul_inplace", "tanh_inplace"]);
    let (i, t, seen) = lockstep(&pure, &pass, &feeds(false));
    // `x * c` steps alone (the pure sigmoid does not continue it); the
    // sigmoid, folded, sweeps with the two nodes after it.
    assert_eq!(seen, vec!["ran 3".to_string()]);
    let want = common::stepped(&pass, &feeds(false));
    assert_eq!(bits(&i.outputs[0].1), bits(&want.outputs[0].1));
    assert_eq!(bits(&t.outputs[0].1), bits(&want.outputs[0].1));
    // With the twin's input off in its last element, nothing is kept and
    // each run steps to its own result.
    let (i, t, seen) = lockstep(&pure, &pass, &feeds(true));
    assert!(
        !seen.is_empty() && seen.iter().all(|s| s == "Differs"),
        "{seen:?}"
    );
    assert_eq!(bits(&i.outputs[0].1), bits(&want.outputs[0].1));
    assert_eq!(
        bits(&t.outputs[0].1),
        bits(&common::stepped(&pure, &feeds(true)).outputs[0].1)
    );
}

#[test]
fn a_tile_that_differs_leaves_both_runs_where_they_were() {
    let (pure, pass) = chain();
    // The twin's input differs in its last element only: every tile but
    // the last agrees, and was swept before the last one differed.
    let (i, t, seen) = lockstep(&pure, &pass, &feeds(true));
    assert_eq!(seen[0], "Differs");
    assert!(!seen.iter().any(|s| s.starts_with("ran")), "{seen:?}");
    // Stepped on after the twin step put its tiles back, each run gives
    // exactly its own stepped result.
    assert_eq!(
        bits(&i.outputs[0].1),
        bits(&common::stepped(&pass, &feeds(false)).outputs[0].1)
    );
    assert_eq!(
        bits(&t.outputs[0].1),
        bits(&common::stepped(&pure, &feeds(true)).outputs[0].1)
    );
}
