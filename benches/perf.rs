//! The issue-11 workloads: an MLP SGD step (forward, hand-written backward,
//! in-place updates) and a 16-op transcendental elementwise chain, each in
//! plain and validate mode (the listeners `vigil run --mode validate` uses).
//!
//! `cargo bench --bench perf` runs them under criterion. For ratios measured
//! the way the README reports them (both sides alternated rep by rep in one
//! process, medians), set `VIGIL_PAIRED=REPS`:
//!
//! ```text
//! VIGIL_PAIRED=30 cargo bench --bench perf
//! ```
//!
//! `VIGIL_CLOCK=cpu` times each rep in process CPU time instead of wall
//! time, for ratios that hold still on a loaded machine (see
//! `common/clock.rs`).
//!
//! `benches/numpy_ref.py` runs the same two workloads in numpy.
//! `VIGIL_SIDES=validate,numerics` keeps only the sides named (and each
//! workload's baseline); `VIGIL_WORKLOADS=mlp` skips the chain.
//!
//! `validate` runs the listeners as `vigil run --mode validate` does, with
//! a replay snapshot taken before each run (and timed); `validate_hash`
//! without one, so the non-in-place listener hashes inputs instead.

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use vigil::engine::exec::{Listener, NoListener};
use vigil::engine::{inplace, Executor, RunOptions, Tensor};
use vigil_listeners::{
    ListenerSet, NonInplaceValidationListener, NumericsListener, ViewMapValidationListener,
};

#[path = "common/clock.rs"]
mod clock;
#[path = "common/threads.rs"]
mod threads;
#[path = "common/workloads.rs"]
mod workloads;
use clock::Clock;
use workloads::{chain16, mlp_step};

/// The listeners of `vigil run --mode validate` (less profiling).
fn validate_set() -> ListenerSet {
    ListenerSet::new()
        .with(NonInplaceValidationListener::new())
        .with(ViewMapValidationListener::new())
        .with(NumericsListener::new())
}

/// The same without the guard band and the undeclared-alias check, to
/// measure what the two cost.
fn validate_set_without_guard_and_alias() -> ListenerSet {
    ListenerSet::new()
        .with(NonInplaceValidationListener::new().guard_band(false))
        .with(ViewMapValidationListener::new().alias_check(false))
        .with(NumericsListener::new())
}

/// What a side runs its graph under.
enum Hooks {
    Listener(Box<dyn Listener>),
    /// Listeners that get a replay snapshot before each run, as `vigil run
    /// --mode validate` gives them (the snapshot's copies are timed too).
    Replaying(ListenerSet),
}

/// A named way to run a graph.
struct Side<'a> {
    name: &'static str,
    exec: &'a Executor<'a>,
    hooks: Hooks,
    /// Intra-op parallelism on (else every kernel runs on this thread).
    threads: bool,
    /// No fused sweeps (`RunOptions::node_by_node`).
    node_by_node: bool,
}

impl<'a> Side<'a> {
    fn new(name: &'static str, exec: &'a Executor<'a>, listener: Box<dyn Listener>) -> Side<'a> {
        Side {
            name,
            exec,
            hooks: Hooks::Listener(listener),
            threads: true,
            node_by_node: false,
        }
    }

    /// `set` run the way `vigil run` runs it: the non-in-place listener
    /// replays on a snapshot taken before the run, so it checks inputs the
    /// op must not change by their buffer versions instead of hashing them.
    fn replaying(name: &'static str, exec: &'a Executor<'a>, set: ListenerSet) -> Side<'a> {
        Side {
            hooks: Hooks::Replaying(set),
            ..Side::new(name, exec, Box::new(NoListener))
        }
    }

    fn one_thread(mut self) -> Self {
        self.threads = false;
        self
    }

    fn node_by_node(mut self) -> Self {
        self.node_by_node = true;
        self
    }

    fn run(&mut self, feeds: &HashMap<String, Tensor>) {
        vigil::engine::parallel::set_intra_op(self.threads);
        let opts = RunOptions {
            node_by_node: self.node_by_node,
            ..RunOptions::default()
        };
        let listener: &mut dyn Listener = match &mut self.hooks {
            Hooks::Replaying(set) => {
                if let Some(n) = set.get_mut::<NonInplaceValidationListener>() {
                    n.replay_from(self.exec.graph(), feeds).unwrap();
                }
                set
            }
            Hooks::Listener(l) => l.as_mut(),
        };
        black_box(self.exec.run_with(feeds, listener, &opts).unwrap());
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Alternates the sides rep by rep; prints each median and its ratio to the
/// first side's.
fn paired(title: &str, mut sides: Vec<Side<'_>>, feeds: &HashMap<String, Tensor>, reps: usize) {
    // `VIGIL_SIDES=numerics,validate` keeps the first side (the baseline)
    // and the ones named, for profiling one listener.
    if let Ok(keep) = std::env::var("VIGIL_SIDES") {
        let first = sides[0].name;
        sides.retain(|s| s.name == first || keep.split(',').any(|k| k == s.name));
    }
    for s in sides.iter_mut() {
        s.run(feeds); // warm the buffer pool and the caches
    }
    let mut times = vec![Vec::with_capacity(reps); sides.len()];
    for _ in 0..reps {
        for (s, t) in sides.iter_mut().zip(&mut times) {
            let start = Clock::start();
            s.run(feeds);
            t.push(start.elapsed_ms());
        }
    }
    let meds: Vec<f64> = times.iter_mut().map(|t| median(t)).collect();
    for (s, m) in sides.iter().zip(&meds) {
        println!(
            "{title:<28} {:<10} {m:9.3} ms {}  {:5.2}x",
            s.name,
            clock::name(),
            m / meds[0]
        );
    }
    vigil::engine::parallel::set_intra_op(true);
}

fn paired_main(reps: usize) {
    threads::join_pool();
    let (mlp, mlp_feeds) = mlp_step();
    let mlp_pass = inplace::run(&mlp).unwrap().graph;
    let mlp_exec = Executor::new(&mlp_pass).unwrap();
    paired(
        "mlp_step",
        vec![
            Side::new("plain", &mlp_exec, Box::new(NoListener)),
            Side::new("plain_1t", &mlp_exec, Box::new(NoListener)).one_thread(),
            Side::replaying("validate", &mlp_exec, validate_set()),
            Side::new("validate_hash", &mlp_exec, Box::new(validate_set())),
            Side::new(
                "validate_no_guard_alias",
                &mlp_exec,
                Box::new(validate_set_without_guard_and_alias()),
            ),
            Side::new(
                "noninplace",
                &mlp_exec,
                Box::new(NonInplaceValidationListener::new()),
            ),
            Side::new(
                "noninplace_no_guard",
                &mlp_exec,
                Box::new(NonInplaceValidationListener::new().guard_band(false)),
            ),
            Side::new("viewmap", &mlp_exec, Box::new(ViewMapValidationListener::new())),
            Side::new(
                "viewmap_no_alias",
                &mlp_exec,
                Box::new(ViewMapValidationListener::new().alias_check(false)),
            ),
            Side::new("numerics", &mlp_exec, Box::new(NumericsListener::new())),
        ],
        &mlp_feeds,
        reps,
    );
    if std::env::var("VIGIL_WORKLOADS").is_ok_and(|w| !w.contains("chain")) {
        return;
    }
    let (chain, chain_feeds) = chain16(8 << 20);
    let pass = inplace::run(&chain).unwrap();
    println!(
        "chain16: {} of 16 ops run in place after the pass",
        pass.accepted()
    );
    let pure_exec = Executor::new(&chain).unwrap();
    let inplace_exec = Executor::new(&pass.graph).unwrap();
    paired(
        "chain16_math_8m",
        vec![
            Side::new("pure", &pure_exec, Box::new(NoListener)),
            Side::new("inplace", &inplace_exec, Box::new(NoListener)),
            Side::new("inplace_node_by_node", &inplace_exec, Box::new(NoListener)).node_by_node(),
            Side::new("inplace_1t", &inplace_exec, Box::new(NoListener)).one_thread(),
            Side::new("pure_1t", &pure_exec, Box::new(NoListener)).one_thread(),
            Side::replaying("validate", &inplace_exec, validate_set()),
            Side::replaying("validate_node_by_node", &inplace_exec, validate_set()).node_by_node(),
            Side::new("validate_hash", &inplace_exec, Box::new(validate_set())),
            Side::new(
                "validate_no_guard_alias",
                &inplace_exec,
                Box::new(validate_set_without_guard_and_alias()),
            ),
            Side::new(
                "noninplace",
                &inplace_exec,
                Box::new(NonInplaceValidationListener::new()),
            ),
            Side::new(
                "noninplace_no_guard",
                &inplace_exec,
                Box::new(NonInplaceValidationListener::new().guard_band(false)),
            ),
            Side::new(
                "viewmap",
                &inplace_exec,
                Box::new(ViewMapValidationListener::new()),
            ),
            Side::new(
                "viewmap_no_alias",
                &inplace_exec,
                Box::new(ViewMapValidationListener::new().alias_check(false)),
            ),
            Side::new("numerics", &inplace_exec, Box::new(NumericsListener::new())),
        ],
        &chain_feeds,
        reps,
    );
}

fn workloads(c: &mut Criterion) {
    if let Some(reps) = std::env::var("VIGIL_PAIRED").ok().and_then(|r| r.parse().ok()) {
        paired_main(reps);
        return;
    }
    let (mlp, mlp_feeds) = mlp_step();
    let mlp_pass = inplace::run(&mlp).unwrap().graph;
    let mlp_exec = Executor::new(&mlp_pass).unwrap();
    let opts = RunOptions::default();
    let mut g = c.benchmark_group("mlp_step");
    g.sample_size(20);
    g.bench_function("plain", |b| {
        b.iter(|| black_box(mlp_exec.run_with(&mlp_feeds, &mut NoListener, &opts).unwrap()))
    });
    g.bench_function("validate", |b| {
        let mut l = validate_set();
        b.iter(|| black_box(mlp_exec.run_with(&mlp_feeds, &mut l, &opts).unwrap()))
    });
    g.finish();

    let (chain, feeds) = chain16(8 << 20);
    let pass = inplace::run(&chain).unwrap().graph;
    let pure_exec = Executor::new(&chain).unwrap();
    let inplace_exec = Executor::new(&pass).unwrap();
    let mut g = c.benchmark_group("chain16_math_8m_f32");
    g.sample_size(10);
    g.bench_function("pure", |b| b.iter(|| black_box(pure_exec.run(&feeds).unwrap())));
    g.bench_function("inplace", |b| {
        b.iter(|| black_box(inplace_exec.run(&feeds).unwrap()))
    });
    g.bench_function("validate", |b| {
        let mut l = validate_set();
        b.iter(|| black_box(inplace_exec.run_with(&feeds, &mut l, &opts).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, workloads);
criterion_main!(benches);
