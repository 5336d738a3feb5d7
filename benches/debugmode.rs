//! What DebugMode costs, on the MLP SGD step and the 16-op chain over 8M
//! f32: the default checks (listeners, lockstep, culprit, poison), and the
//! orders, pre-allocation, input-layout and thread-count checks each on
//! their own, the gradient check on
//! the same MLP with its gradients as outputs; and the
//! minimizer on a 200-node failing graph.
//!
//! `cargo bench --bench debugmode` runs them under criterion. For ratios to
//! the plain run measured the way the README reports them (sides alternated
//! rep by rep in one process, medians), and peak live bytes:
//!
//! ```text
//! VIGIL_PAIRED=7 cargo bench --bench debugmode
//! ```
//!
//! `VIGIL_CLOCK=cpu` times each rep in process CPU time instead of wall
//! time, for ratios that hold still on a loaded machine (see
//! `common/clock.rs`).
//!
//! `VIGIL_SIDES=debug,debug_nodes` compares the lockstep's twin sweeps of
//! fused chains with stepping node by node (`DebugConfig::sweeps` off).
//! `VIGIL_SIDES=debug,orders` and `VIGIL_WORKLOADS=mlp_step,chain16_8m,mlp_grads,minimize`
//! narrow the paired run (the plain side always runs: it is the baseline);
//! a side `checks=lockstep+poison` runs just the checks named, to see what
//! each one costs.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use vigil::debugmode::{minimize, DebugConfig, DebugMode, Kind};
use vigil::engine::exec::NoListener;
use vigil::engine::tensor::buffer_pool;
use vigil::engine::{inplace, DType, Executor, Graph, GraphBuilder, RunOptions, Tensor};

#[path = "common/clock.rs"]
mod clock;
#[path = "common/threads.rs"]
mod threads;
#[path = "common/workloads.rs"]
mod workloads;
use clock::Clock;
use workloads::{chain16, mlp_grads, mlp_step};

use vigil::engine::Feeds;

fn checks(list: &str) -> DebugConfig {
    DebugConfig::default().with_checks(list).unwrap()
}

/// The ways a workload is run: the plain in-place run first.
/// `VIGIL_SIDES=plain,debug` keeps only the sides named (for profiling).
fn sides() -> Vec<(&'static str, Option<DebugConfig>)> {
    let all = vec![
        ("plain", None),
        ("debug", Some(DebugConfig::default())),
        // The default checks with the lockstep stepping node by node
        // throughout (no twin sweeps, `DebugConfig::sweeps`).
        (
            "debug_nodes",
            Some(DebugConfig {
                sweeps: false,
                ..DebugConfig::default()
            }),
        ),
        ("orders", Some(checks("orders"))),
        ("prealloc", Some(checks("prealloc"))),
        ("layouts", Some(checks("layouts"))),
        ("threads", Some(checks("threads"))),
    ];
    let Ok(keep) = std::env::var("VIGIL_SIDES") else {
        return all;
    };
    let mut sides: Vec<_> = all
        .into_iter()
        .filter(|(name, _)| *name == "plain" || keep.split(',').any(|k| k == *name))
        .collect();
    // `checks=lockstep+poison` is a side with just those checks, to see
    // what each costs.
    for k in keep.split(',') {
        if let Some(list) = k.strip_prefix("checks=") {
            let name: &'static str = Box::leak(k.to_string().into_boxed_str());
            sides.push((name, Some(checks(&list.replace('+', ",")))));
        }
    }
    sides
}

/// The gradient check, on the MLP whose gradients are outputs.
fn gradient_sides() -> Vec<(&'static str, Option<DebugConfig>)> {
    vec![("plain", None), ("gradient", Some(checks("gradient")))]
}

fn run(graph: &Graph, exec: &Executor, feeds: &Feeds, cfg: &Option<DebugConfig>) -> usize {
    match cfg {
        None => {
            let out = exec
                .run_with(feeds, &mut NoListener, &RunOptions::default())
                .unwrap();
            out.stats.peak_live_bytes
        }
        Some(cfg) => {
            let r = DebugMode::new(cfg.clone()).check(graph, feeds).unwrap();
            assert!(r.findings.is_empty(), "{:#?}", r.findings);
            r.stats.peak_lockstep_bytes
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn paired(
    title: &str,
    graph: &Graph,
    feeds: &Feeds,
    reps: usize,
    sides: Vec<(&'static str, Option<DebugConfig>)>,
) {
    let pass = inplace::run(graph).unwrap().graph;
    let exec = Executor::new(&pass).unwrap();
    let mut peaks = vec![0usize; sides.len()];
    let mut times = vec![Vec::new(); sides.len()];
    // Buffers the pool could not hand back, per run: each is fresh memory
    // and its page faults.
    let mut misses = vec![0u64; sides.len()];
    for rep in 0..=reps {
        for (i, (_, cfg)) in sides.iter().enumerate() {
            let before = buffer_pool::stats().misses;
            let start = Clock::start();
            peaks[i] = run(graph, &exec, feeds, cfg);
            if rep > 0 {
                times[i].push(start.elapsed_ms());
                misses[i] += buffer_pool::stats().misses - before;
            }
        }
    }
    let meds: Vec<f64> = times.iter_mut().map(|t| median(t)).collect();
    for (i, (name, _)) in sides.iter().enumerate() {
        let peak = if name.starts_with("debug") {
            format!("  peak {:.2}x", peaks[i] as f64 / peaks[0] as f64)
        } else {
            String::new()
        };
        println!(
            "{title:<16} {name:<18} {:9.2} ms {}  {:5.2}x  pool misses {:.1}/run{peak}",
            meds[i],
            clock::name(),
            meds[i] / meds[0],
            misses[i] as f64 / reps as f64
        );
    }
}

/// A long graph with one bad in-place variant in the middle.
fn failing_graph(nodes: usize) -> (Graph, Feeds) {
    let mut r = vigil::default_registry();
    vigil::debugmode::broken::register(&mut r);
    let b = GraphBuilder::with_registry("failing", r);
    let x = b.input("x", DType::F32, &[64]);
    let mut y = x.exp().unwrap();
    let mut side = x.sigmoid().unwrap();
    for i in 0..(nodes - 3) / 2 {
        y = if i % 2 == 0 { y.tanh() } else { y.add(&side) }.unwrap();
        side = side.neg().unwrap();
        if i == nodes / 4 {
            y = y.op("broken_stencil", &[], Default::default()).unwrap();
        }
    }
    let g = b.build(&[&y, &side]).unwrap();
    let v: Vec<f32> = (0..64).map(|i| (i as f32 * 0.3).sin()).collect();
    (
        g,
        HashMap::from([("x".to_string(), Tensor::from_vec(&[64], v).unwrap())]),
    )
}

fn minimizer() {
    let (g, f) = failing_graph(200);
    let start = Instant::now();
    let m = minimize(&g, &f, &DebugConfig::default(), Some(&Kind::BAD_REWRITE)).unwrap();
    println!(
        "minimize         {} nodes -> {} in {} DebugMode runs, {:.1} ms",
        m.nodes_before,
        m.graph.nodes().len(),
        m.runs,
        start.elapsed().as_secs_f64() * 1e3
    );
}

fn benches(c: &mut Criterion) {
    let (mlp, mlp_feeds) = mlp_step();
    let (chain, chain_feeds) = chain16(8 << 20);
    if let Some(reps) = std::env::var("VIGIL_PAIRED").ok().and_then(|r| r.parse().ok()) {
        threads::join_pool();
        let only = std::env::var("VIGIL_WORKLOADS").unwrap_or_default();
        let wanted = |w: &str| only.is_empty() || only.split(',').any(|k| k == w);
        if wanted("mlp_step") {
            paired("mlp_step", &mlp, &mlp_feeds, reps, sides());
        }
        if wanted("chain16_8m") {
            paired("chain16_8m", &chain, &chain_feeds, reps, sides());
        }
        if wanted("mlp_grads") {
            let (g, f) = mlp_grads();
            paired("mlp_grads", &g, &f, reps, gradient_sides());
        }
        if wanted("minimize") {
            minimizer();
        }
        return;
    }
    for (name, graph, feeds) in [
        ("mlp_step", &mlp, &mlp_feeds),
        ("chain16_8m", &chain, &chain_feeds),
    ] {
        let pass = inplace::run(graph).unwrap().graph;
        let exec = Executor::new(&pass).unwrap();
        let mut g = c.benchmark_group(format!("debugmode/{name}"));
        g.sample_size(10);
        for (side, cfg) in sides() {
            g.bench_function(side, |b| b.iter(|| black_box(run(graph, &exec, feeds, &cfg))));
        }
        g.finish();
    }
    let (g, f) = mlp_grads();
    let mut grp = c.benchmark_group("debugmode/mlp_grads");
    grp.sample_size(10);
    for (side, cfg) in gradient_sides() {
        let pass = inplace::run(&g).unwrap().graph;
        let exec = Executor::new(&pass).unwrap();
        grp.bench_function(side, |b| b.iter(|| black_box(run(&g, &exec, &f, &cfg))));
    }
    grp.finish();
    let (g, f) = failing_graph(200);
    let mut grp = c.benchmark_group("debugmode/minimize");
    grp.sample_size(10);
    grp.bench_function("200_nodes", |b| {
        b.iter(|| black_box(minimize(&g, &f, &DebugConfig::default(), Some(&Kind::BAD_REWRITE)).unwrap()))
    });
    grp.finish();
}

criterion_group!(group, benches);
criterion_main!(group);
