//! DebugMode end to end: clean graphs give no findings, and each defect of
//! the corpus is named with its kind, node and (for rewrites) its culprit.

use std::collections::HashMap;

use vigil_debugmode::{broken, DebugConfig, DebugMode, Finding, Kind};
use vigil_engine::graph::{Graph, GraphBuilder, Sym};
use vigil_engine::ops::OpRegistry;
use vigil_engine::{DType, Tensor};

fn registry() -> OpRegistry {
    let mut r = vigil_listeners::broken::registry();
    broken::register(&mut r);
    r
}

fn feeds(n: usize) -> HashMap<String, Tensor> {
    let v: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 2.0).collect();
    HashMap::from([("x".to_string(), Tensor::from_vec(&[n], v).unwrap())])
}

fn graph(build: impl FnOnce(&GraphBuilder, Sym) -> Vec<Sym>) -> Graph {
    let b = GraphBuilder::with_registry("g", registry());
    let x = b.input("x", DType::F32, &[16]);
    let outs = build(&b, x);
    b.build(&outs.iter().collect::<Vec<_>>()).unwrap()
}

fn op(x: &Sym, name: &str) -> Sym {
    x.op(name, &[], Default::default()).unwrap()
}

fn check(g: &Graph, cfg: DebugConfig) -> Vec<Finding> {
    let r = DebugMode::new(cfg).check(g, &feeds(16)).unwrap();
    r.findings
}

fn kinds(f: &[Finding]) -> Vec<String> {
    let mut k: Vec<String> = f.iter().map(|f| f.kind.to_string()).collect();
    k.sort();
    k.dedup();
    k
}

#[test]
fn a_clean_graph_gives_no_findings_under_every_check() {
    let g = graph(|_, x| {
        let a = x.exp().unwrap().neg().unwrap();
        let s = op(&a, "fixed_stencil");
        let t = op(&s, "fixed_accumulate_out");
        let u = op(&t, "fixed_c_order_out").add(&x).unwrap().relu().unwrap();
        let u = op(&u, "fixed_oversize_out");
        vec![u]
    });
    let r = DebugMode::new(DebugConfig::all()).check(&g, &feeds(16)).unwrap();
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
    assert!(r.stats.rewrites >= 3, "{:?}", r.stats);
    assert_eq!(r.stats.compared, g.nodes().len());
    assert_eq!(r.stats.exact, r.stats.compared);
    assert!(r.stats.reruns > 0);
}

#[test]
fn the_callers_feeds_and_the_graphs_values_are_not_touched() {
    let b = GraphBuilder::new("p");
    let x = b.mutable_input("x", DType::F32, &[4]);
    let y = x.add_inplace(&x).unwrap();
    let g = b.build(&[&y]).unwrap();
    let f = HashMap::from([(
        "x".to_string(),
        Tensor::from_vec(&[4], vec![1f32, 2., 3., 4.]).unwrap(),
    )]);
    let r = DebugMode::new(DebugConfig::all()).check(&g, &f).unwrap();
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
    assert_eq!(f["x"].to_f64_vec().unwrap(), vec![1., 2., 3., 4.]);
    assert_eq!(r.outputs[0].1.to_f64_vec().unwrap(), vec![2., 4., 6., 8.]);
}

#[test]
fn a_pure_op_that_mutates_its_input_is_caught_where_the_damage_shows() {
    let g = graph(|_, x| {
        let c = x.copy().unwrap();
        let s = op(&c, "broken_scale6");
        let t = c.exp().unwrap();
        vec![s.add(&t).unwrap()]
    });
    let f = check(&g, DebugConfig::default());
    assert_eq!(kinds(&f), vec!["destroyed_input", "value_mismatch"], "{f:#?}");
    let vm = f.iter().find(|f| f.kind == Kind::VALUE_MISMATCH).unwrap();
    // The reader of the spoiled copy is blamed, and the writer named.
    assert!(
        vm.message.contains("changed after it was produced"),
        "{}",
        vm.message
    );
    assert_eq!(vm.details["written_by"]["op"], "broken_scale6", "{vm:#?}");
    assert_eq!(vm.details["changed_after_production"], true);
    assert!(vm.details["propagated"].as_u64().unwrap() >= 1, "{vm:#?}");
}

#[test]
fn a_pure_op_that_mutates_a_fed_input_leaves_the_feed_alone_and_is_caught() {
    // The feed is lent read-only to the first attempt, so the write fails
    // there instead of landing; the check repeats on copies, where the
    // write shows as the finding it is.
    let g = graph(|_, x| {
        let s = op(&x, "broken_scale6");
        let t = x.exp().unwrap();
        vec![s.add(&t).unwrap()]
    });
    let f = feeds(16);
    let before = f["x"].to_f64_vec().unwrap();
    let r = DebugMode::new(DebugConfig::default()).check(&g, &f).unwrap();
    assert_eq!(f["x"].to_f64_vec().unwrap(), before);
    let k = kinds(&r.findings);
    assert!(k.contains(&"destroyed_input".to_string()), "{:#?}", r.findings);
    let d = r
        .findings
        .iter()
        .find(|f| f.kind == Kind::DESTROYED_INPUT)
        .unwrap();
    assert_eq!(d.op, "broken_scale6", "{d:#?}");
    // A write to a lent value is refused, and the values can be written
    // again once the check is over.
    f["x"].write_contiguous(|s: &mut [f32]| s[0] = 1.5).unwrap();
}

#[test]
fn a_bad_in_place_variant_is_named_by_bisection() {
    let g = graph(|_, x| {
        // Several accepted rewrites, one of them bad.
        let a = x.exp().unwrap().neg().unwrap();
        let s = op(&a, "broken_stencil");
        let t = s.neg().unwrap().sigmoid().unwrap();
        vec![t]
    });
    let r = DebugMode::new(DebugConfig::default())
        .check(&g, &feeds(16))
        .unwrap();
    assert_eq!(
        kinds(&r.findings),
        vec!["bad_rewrite", "value_mismatch"],
        "{:#?}",
        r.findings
    );
    let root = r
        .findings
        .iter()
        .find(|f| f.kind == Kind::VALUE_MISMATCH)
        .unwrap();
    assert_eq!(root.op, "broken_stencil_inplace");
    assert!(!root.details["first"].as_array().unwrap().is_empty());
    assert_eq!(
        root.details["propagated_to"].as_array().unwrap().len(),
        2,
        "neg and sigmoid downstream: {root:#?}"
    );
    let bad = r.findings.iter().find(|f| f.kind == Kind::BAD_REWRITE).unwrap();
    assert_eq!(bad.op, "broken_stencil");
    assert_eq!(bad.details["rewrite"]["inplace_op"], "broken_stencil_inplace");
    assert_eq!(root.details["rewrite"]["inplace_op"], "broken_stencil_inplace");
    assert!(r.stats.reruns >= 2, "{:?}", r.stats);
    // The twin is clean.
    let g = graph(|_, x| {
        vec![op(&x.exp().unwrap().neg().unwrap(), "fixed_stencil")
            .relu()
            .unwrap()]
    });
    assert!(check(&g, DebugConfig::default()).is_empty());
}

#[test]
fn a_hidden_view_read_after_its_buffer_is_destroyed() {
    // broken_identity returns its input without declaring the view, so the
    // pass lets exp overwrite the copy while the "identity" is still read.
    let g = graph(|_, x| {
        let c = x.copy().unwrap();
        let y = op(&c, "broken_identity");
        let e = c.exp().unwrap();
        vec![y.add(&e).unwrap()]
    });
    let f = check(&g, DebugConfig::default());
    let k = kinds(&f);
    assert!(k.contains(&"read_after_destroy".to_string()), "{f:#?}");
    assert!(k.contains(&"undeclared_view".to_string()), "{f:#?}");
    assert!(k.contains(&"bad_rewrite".to_string()), "{f:#?}");
    let rad = f.iter().find(|f| f.kind == Kind::READ_AFTER_DESTROY).unwrap();
    assert!(rad.op.starts_with("add"), "{rad:#?}");
    assert_eq!(rad.details["written_by"]["op"], "exp_inplace");
}

#[test]
fn a_kept_workspace_is_caught_by_the_listeners_and_the_reference() {
    // a = cached_double(x); b = cached_double(-x); the second call writes
    // over a while a is still to be read.
    let g = graph(|b, x| {
        let a = b
            .apply_named("make_a", "broken_cached_double", &[&x], Default::default())
            .unwrap()
            .remove(0);
        let n = x.neg().unwrap();
        let c = b
            .apply_named("make_b", "broken_cached_double", &[&n], Default::default())
            .unwrap()
            .remove(0);
        vec![a.add(&c).unwrap()]
    });
    let f = check(&g, DebugConfig::default());
    let k = kinds(&f);
    assert!(k.contains(&"undeclared_alias".to_string()), "{f:#?}");
    let alias = f.iter().find(|f| f.kind == Kind::UNDECLARED_ALIAS).unwrap();
    assert_eq!(alias.node, "make_b");
    assert_eq!(alias.details["other_node"], "make_a");
    // The reference isolates outputs, so the corruption shows as a value
    // that changed after it was produced, written by the second call.
    let vm = f
        .iter()
        .find(|f| f.kind == Kind::VALUE_MISMATCH && f.details["changed_after_production"] == true)
        .unwrap_or_else(|| panic!("{f:#?}"));
    assert!(vm.op.starts_with("add"), "{vm:#?}");
    assert!(vm.message.contains("changed after it was produced"), "{vm:#?}");
    assert_eq!(vm.details["written_by"]["node"], "make_b", "{vm:#?}");
    assert!(vm.message.contains("written by node 'make_b'"), "{vm:#?}");

    // The twin gives nothing.
    let g = graph(|b, x| {
        let a = op(&x, "fixed_cached_double");
        let n = x.neg().unwrap();
        let c = b
            .apply_named("make_b", "fixed_cached_double", &[&n], Default::default())
            .unwrap()
            .remove(0);
        vec![a.add(&c).unwrap()]
    });
    assert!(check(&g, DebugConfig::default()).is_empty());
}

#[test]
fn an_op_that_accumulates_into_its_output_buffer() {
    let g = graph(|_, x| vec![op(&x.neg().unwrap(), "broken_accumulate_out")]);
    let f = check(
        &g,
        DebugConfig::default()
            .with_checks("lockstep,poison,prealloc")
            .unwrap(),
    );
    // Lockstep (poisoned against zeroed) and pre-allocation (a poisoned
    // buffer) see the same bug: the output depends on its buffer's content.
    assert_eq!(kinds(&f), vec!["uninitialized_read"], "{f:#?}");
    assert!(f.iter().all(|f| f.op == "broken_accumulate_out"), "{f:#?}");
}

#[test]
fn an_op_that_assumes_a_c_contiguous_output() {
    let g = graph(|_, x| vec![op(&x.neg().unwrap(), "broken_c_order_out")]);
    let f = check(&g, DebugConfig::default().with_checks("prealloc").unwrap());
    assert_eq!(kinds(&f), vec!["preallocated_output"], "{f:#?}");
    assert!(f.iter().all(|f| f.op == "broken_c_order_out"));
    let layouts: Vec<&str> = f.iter().map(|f| f.details["layout"].as_str().unwrap()).collect();
    assert!(
        layouts.contains(&"strided") && layouts.contains(&"reversed"),
        "{layouts:?}"
    );
    assert!(!layouts.contains(&"c_contiguous"), "{layouts:?}");
}

#[test]
fn shared_state_between_kernels_depends_on_the_order() {
    let g = graph(|_, x| {
        let a = op(&x, "broken_stash");
        let b = op(&x.neg().unwrap(), "broken_take");
        vec![a, b]
    });
    let f = check(&g, DebugConfig::default().with_checks("orders").unwrap());
    assert_eq!(kinds(&f), vec!["order_dependent"], "{f:#?}");
    assert_eq!(f[0].op, "broken_take");
    let g = graph(|_, x| vec![op(&x, "fixed_stash"), op(&x.neg().unwrap(), "fixed_take")]);
    assert!(check(&g, DebugConfig::default().with_checks("orders").unwrap()).is_empty());
}

#[test]
fn supplied_gradients_are_checked_against_finite_differences() {
    // loss = sum(w * w * x); grad:w = 2 * w * x (right) or 3 * w * x (wrong).
    let build = |factor: f32| {
        let b = GraphBuilder::new("grad");
        let x = b.input("x", DType::F32, &[16]);
        let w = b.parameter(
            "w",
            Tensor::from_vec(&[16], (0..16).map(|i| 0.1 * i as f32 - 0.5).collect::<Vec<_>>()).unwrap(),
        );
        let loss = w.mul(&w).unwrap().mul(&x).unwrap().sum(None).unwrap();
        let k = b.constant("k", Tensor::from_vec(&[1], vec![factor]).unwrap());
        let grad = w.mul(&x).unwrap().mul(&k).unwrap();
        let g = b
            .apply_named("grad:w", "copy", &[&grad], Default::default())
            .unwrap()
            .remove(0);
        (b, loss, g)
    };
    for (factor, bad) in [(2.0, false), (3.0, true)] {
        let (b, loss, g) = build(factor);
        let graph = b.build(&[&loss, &g]).unwrap();
        let f = check(&graph, DebugConfig::default().with_checks("gradient").unwrap());
        assert_eq!(!f.is_empty(), bad, "factor {factor}: {f:#?}");
        if bad {
            assert_eq!(f[0].kind, Kind::GRADIENT_MISMATCH);
            assert_eq!(f[0].details["param"], "w");
            // Every element but the two where w or x is zero.
            assert_eq!(f[0].details["failed"], 14, "{:#?}", f[0]);
        }
    }
}

#[test]
fn without_supplied_gradients_autodiff_builds_them_and_a_wrong_rule_shows() {
    // loss = sum(exp(w) * x) with parameter w and no grad: outputs.
    let graph = {
        let b = GraphBuilder::new("autograd");
        let x = b.input("x", DType::F32, &[16]);
        let w = b.parameter(
            "w",
            Tensor::from_vec(&[16], (0..16).map(|i| 0.1 * i as f32 - 0.5).collect::<Vec<_>>()).unwrap(),
        );
        let loss = w.exp().unwrap().mul(&x).unwrap().sum(None).unwrap();
        b.build(&[&loss]).unwrap()
    };
    let cfg = DebugConfig::default().with_checks("gradient").unwrap();
    assert!(
        check(&graph, cfg.clone()).is_empty(),
        "the built-in exp rule is right"
    );
    // A rule that forgets the chain through exp: d exp(w) = g, not g * exp(w).
    let mut rules = vigil_autodiff::GradRegistry::builtin();
    rules.register("exp", |c| Ok(vec![Some(c.grad()?.clone())]));
    let wrong = DebugConfig {
        autodiff: vigil_debugmode::GradRules(vigil_autodiff::Autodiff::new(OpRegistry::builtin(), rules)),
        ..cfg
    };
    let f = check(&graph, wrong);
    assert_eq!(kinds(&f), vec!["gradient_mismatch"], "{f:#?}");
    assert_eq!(f[0].details["param"], "w");
    assert_eq!(f[0].details["gradient_from"], "autodiff");
    // No rule for exp: the check cannot run, and says so as a warning
    // rather than passing in silence.
    let norules = DebugConfig {
        autodiff: vigil_debugmode::GradRules(vigil_autodiff::Autodiff::new(
            OpRegistry::builtin(),
            vigil_autodiff::GradRegistry::empty(),
        )),
        ..DebugConfig::default().with_checks("gradient").unwrap()
    };
    let f = check(&graph, norules);
    assert_eq!(kinds(&f), vec!["check_skipped"], "{f:#?}");
    assert!(!f[0].is_error(), "a skipped check is a warning");
    assert_eq!(f[0].details["check"], "gradient");
    assert_eq!(f[0].details["params"], serde_json::json!(["w"]));
    assert!(f[0].message.contains("has no gradient rule"), "{}", f[0].message);
}

/// A long graph with one bad in-place variant in the middle.
fn long_graph(n: usize) -> Graph {
    graph(|_, x| {
        let mut y = x.exp().unwrap().neg().unwrap();
        let mut side = x.sigmoid().unwrap();
        for i in 0..n {
            y = match i % 3 {
                0 => y.tanh().unwrap(),
                1 => y.add(&side).unwrap(),
                _ => y.neg().unwrap(),
            };
            side = side.mul(&side).unwrap();
            if i == n / 2 {
                y = op(&y, "broken_stencil");
            }
        }
        vec![y, side]
    })
}

#[test]
fn the_minimizer_keeps_the_finding_and_drops_the_rest() {
    let g = long_graph(40);
    let before = g.nodes().len();
    assert!(before > 80);
    let m =
        vigil_debugmode::minimize(&g, &feeds(16), &DebugConfig::default(), Some(&Kind::BAD_REWRITE)).unwrap();
    assert_eq!(m.finding.kind, Kind::BAD_REWRITE);
    assert_eq!(m.finding.op, "broken_stencil");
    assert_eq!(m.nodes_before, before);
    assert!(m.graph.nodes().len() <= 2, "{:?}", m.graph.nodes());
    assert!(m.graph.nodes().iter().any(|n| n.op.name() == "broken_stencil"));
    assert!(m.runs > 2 && m.runs < 60, "{} runs", m.runs);
    // The reduced case fails the same way on its own.
    let again = DebugMode::new(DebugConfig::default())
        .check(&m.graph, &m.feeds)
        .unwrap();
    assert!(again
        .findings
        .iter()
        .any(|f| f.kind == Kind::BAD_REWRITE && f.op == "broken_stencil"));
    // A clean graph has nothing to minimize.
    let clean = graph(|_, x| vec![x.exp().unwrap()]);
    let err = vigil_debugmode::minimize(&clean, &feeds(16), &DebugConfig::default(), None)
        .err()
        .unwrap();
    assert!(err.to_string().contains("nothing to minimize"), "{err}");
}

#[test]
fn an_op_that_takes_a_wrong_size_output_buffer() {
    let g = graph(|_, x| vec![op(&x.neg().unwrap(), "broken_oversize_out")]);
    let f = check(&g, DebugConfig::default().with_checks("prealloc").unwrap());
    assert_eq!(kinds(&f), vec!["preallocated_output"], "{f:#?}");
    let wrong: Vec<&Finding> = f.iter().filter(|f| f.details["layout"] == "wrong_size").collect();
    assert_eq!(wrong.len(), 1, "{f:#?}");
    assert_eq!(wrong[0].op, "broken_oversize_out");
    assert_eq!(wrong[0].details["delta"], 1);
    assert_eq!(wrong[0].details["returned"], true);
}

#[test]
fn an_op_that_accumulates_into_its_previous_result() {
    let g = graph(|_, x| vec![op(&x.neg().unwrap(), "broken_accumulate_out")]);
    let f = check(&g, DebugConfig::default().with_checks("prealloc").unwrap());
    // The poisoned C-contiguous buffer shows it first; the same output in
    // its own previous result is the same cause, not a second finding.
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].kind, Kind::UNINITIALIZED_READ);
    assert_eq!(f[0].details["layout"], "c_contiguous");
    assert!(
        f[0].message.contains("depends on what its output buffer held"),
        "{}",
        f[0].message
    );
    assert_eq!(f[0].op, "broken_accumulate_out");
}

#[test]
fn all_names_every_check_and_unknown_names_are_refused() {
    let all = DebugConfig::default().with_checks("all").unwrap();
    assert_eq!(all.checks, DebugConfig::all().checks);
    let e = DebugConfig::default().with_checks("lockstep,nope").unwrap_err();
    assert!(e.to_string().contains("unknown check 'nope'"), "{e}");
    assert!(e.to_string().contains("arbitrate"), "{e}");
}

#[test]
fn a_disagreeing_reference_output_is_recomputed_in_a_zeroed_buffer_before_it_is_shown() {
    // The reference writes into reused pool buffers without zeroing them;
    // an op that accumulates into its output then disagrees with the
    // poisoned in-place run, and the finding must show the reference
    // recomputed into zeroed memory (max(x, 0)), not the stale sum.
    const N: usize = 2048; // 8 KiB: a size the pool keeps
    let b = GraphBuilder::with_registry("g", registry());
    let x = b.input("x", DType::F32, &[N as i64]);
    let y = op(&x, "broken_accumulate_out");
    let g = b.build(&[&y.neg().unwrap()]).unwrap();
    let xs: Vec<f32> = (0..N).map(|i| (i as f32 * 0.37).sin() * 2.0).collect();
    let feeds = HashMap::from([("x".to_string(), Tensor::from_vec(&[N], xs.clone()).unwrap())]);
    for _ in 0..8 {
        vigil_engine::tensor::buffer_pool::give(vec![100.0f32; N]);
    }
    let r = DebugMode::new(DebugConfig::default()).check(&g, &feeds).unwrap();
    // The stale sum and two clean recomputes that agree: the op depends on
    // what its output buffer held.
    let f = r
        .findings
        .iter()
        .find(|f| f.kind == Kind::UNINITIALIZED_READ)
        .unwrap_or_else(|| panic!("{:#?}", r.findings));
    assert_eq!(f.op, "broken_accumulate_out", "{f:#?}");
    let first = f.details["first"].as_array().unwrap();
    assert!(!first.is_empty());
    for m in first {
        let i = m["index"][0].as_u64().unwrap() as usize;
        assert_eq!(m["want"].as_f64().unwrap(), xs[i].max(0.0) as f64, "{m}");
    }
    // The negation downstream is counted as spoiled by the root, not blamed.
    assert_eq!(
        r.findings
            .iter()
            .filter(|f| f.kind == Kind::VALUE_MISMATCH || f.kind == Kind::UNINITIALIZED_READ)
            .count(),
        1,
        "{:#?}",
        r.findings
    );
}

/// Twin sweeps (`DebugConfig::sweeps`) compare the chains before a bad
/// in-place op tile by tile, step the diverged chain after it, and find
/// exactly what stepping node by node finds, with the same counts.
#[test]
fn twin_sweeps_find_what_stepping_node_by_node_finds() {
    let g = graph(|_, x| {
        let a = x.exp().unwrap().neg().unwrap().sigmoid().unwrap().tanh().unwrap();
        let s = op(&a, "broken_stencil");
        vec![s.neg().unwrap().sigmoid().unwrap().tanh().unwrap().abs().unwrap()]
    });
    let run = |sweeps: bool| {
        DebugMode::new(DebugConfig {
            sweeps,
            ..DebugConfig::default()
        })
        .check(&g, &feeds(16))
        .unwrap()
    };
    let (swept, stepped) = (run(true), run(false));
    let summary = |f: &[Finding]| -> Vec<(String, String, String, usize)> {
        let mut v: Vec<_> = f
            .iter()
            .map(|f| {
                let propagated = f.details["propagated_to"].as_array().map_or(0, Vec::len);
                (f.kind.to_string(), f.node.clone(), f.op.clone(), propagated)
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(summary(&swept.findings), summary(&stepped.findings));
    assert_eq!(
        kinds(&swept.findings),
        vec!["bad_rewrite", "value_mismatch"],
        "{:#?}",
        swept.findings
    );
    assert!(swept.stats.swept >= 3, "{:?}", swept.stats);
    assert_eq!(stepped.stats.swept, 0);
    assert_eq!(swept.stats.compared, stepped.stats.compared);
    assert_eq!(swept.stats.exact, stepped.stats.exact);
    assert_eq!(swept.stats.propagated, stepped.stats.propagated);
    for ((n, a), (_, b)) in swept.outputs.iter().zip(&stepped.outputs) {
        assert_eq!(a.to_f64_vec().unwrap(), b.to_f64_vec().unwrap(), "output {n}");
    }
}

#[test]
fn a_scan_whose_body_runs_per_row_gives_no_findings_under_every_check() {
    // A running sum over the rows of x (4 x 4) and each row's partial
    // sums stacked: the body's nodes run four times under the listeners,
    // with ids of the body graph that the run's own ids must not take in.
    let text = r#"{"format": "vigil-graph/1", "name": "g",
     "inputs": [{"name": "x", "dtype": "f32", "shape": [16]}],
     "constants": [{"name": "zero", "dtype": "f32", "shape": [4], "data": [0, 0, 0, 0]}],
     "nodes": [
      {"name": "rows", "op": "reshape", "inputs": ["x"], "outputs": ["xs"], "attrs": {"shape": [4, 4]}},
      {"name": "sc", "op": "scan", "inputs": ["zero", "xs"], "outputs": ["total", "ys"],
       "attrs": {"scan_input_axes": [0], "scan_output_axes": [0],
        "body": {"format": "vigil-graph/1",
          "inputs": [{"name": "t", "dtype": "f32", "shape": [4]}, {"name": "r", "dtype": "f32", "shape": [4]}],
          "nodes": [{"name": "add", "op": "add", "inputs": ["t", "r"], "outputs": ["t2"]},
                    {"name": "e", "op": "exp", "inputs": ["t2"], "outputs": ["y"]}],
          "outputs": ["t2", "y"]}}},
      {"name": "sq", "op": "mul", "inputs": ["ys", "ys"], "outputs": ["out"]}],
     "outputs": ["total", "out"]}"#;
    let g = Graph::from_json(text, &registry()).unwrap();
    let r = DebugMode::new(DebugConfig::all()).check(&g, &feeds(16)).unwrap();
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
    assert_eq!(r.stats.compared, g.nodes().len() + 1);
}
