//! One training step of the 784-512-256-10 MLP at batch 256, with the
//! backward built by autodiff and the SGD updates in place: plain, with the
//! non-in-place validator in hash mode, and under DebugMode; and the
//! hand-written step (same inputs, same ops, same in-place updates) for
//! comparison. Both sides run after the in-place pass.
//!
//! `cargo bench --bench train` runs them under criterion. For the ratios
//! the README reports (sides alternated rep by rep in one process,
//! medians):
//!
//! ```text
//! VIGIL_PAIRED=9 cargo bench --bench train
//! ```

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use vigil::debugmode::{DebugConfig, DebugMode};
use vigil::engine::exec::{Listener, NoListener};
use vigil::engine::{inplace, Executor, Graph, RunOptions};
use vigil::listeners::{NonInplaceConfig, NonInplaceValidationListener, Remember};

#[path = "common/workloads.rs"]
mod workloads;
use workloads::{mlp_step, mlp_step_autodiff};

use vigil::engine::Feeds;

/// How a step is run.
#[derive(Clone, Copy)]
enum Side {
    Plain,
    Hash,
    Debug,
}

fn run(graph: &Graph, exec: &Executor, feeds: &Feeds, side: Side) {
    match side {
        Side::Plain => {
            black_box(
                exec.run_with(feeds, &mut NoListener, &RunOptions::default())
                    .unwrap(),
            );
        }
        Side::Hash => {
            let mut l = NonInplaceValidationListener::with_config(NonInplaceConfig {
                mode: Remember::Hash,
                ..NonInplaceConfig::default()
            });
            black_box(
                exec.run_with(feeds, &mut l as &mut dyn Listener, &RunOptions::default())
                    .unwrap(),
            );
        }
        Side::Debug => {
            let r = DebugMode::new(DebugConfig::default())
                .check(graph, feeds)
                .unwrap();
            assert!(r.findings.is_empty(), "{:#?}", r.findings);
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn benches(c: &mut Criterion) {
    let (hand, hand_feeds) = mlp_step();
    let (auto, auto_feeds) = mlp_step_autodiff();
    let hand_pass = inplace::run(&hand).unwrap().graph;
    let hand_exec = Executor::new(&hand_pass).unwrap();
    let auto_exec = Executor::new(&auto).unwrap();
    let sides: [(&str, &Graph, &Executor, &Feeds, Side); 4] = [
        ("hand_written", &hand, &hand_exec, &hand_feeds, Side::Plain),
        ("autodiff", &auto, &auto_exec, &auto_feeds, Side::Plain),
        ("autodiff_hash", &auto, &auto_exec, &auto_feeds, Side::Hash),
        ("autodiff_debug", &auto, &auto_exec, &auto_feeds, Side::Debug),
    ];
    if let Some(reps) = std::env::var("VIGIL_PAIRED")
        .ok()
        .and_then(|r| r.parse::<usize>().ok())
    {
        let mut times = vec![Vec::new(); sides.len()];
        for rep in 0..=reps {
            for (i, (_, g, e, f, s)) in sides.iter().enumerate() {
                let start = Instant::now();
                run(g, e, f, *s);
                if rep > 0 {
                    times[i].push(start.elapsed().as_secs_f64() * 1e3);
                }
            }
        }
        let meds: Vec<f64> = times.iter_mut().map(|t| median(t)).collect();
        for (i, (name, ..)) in sides.iter().enumerate() {
            println!(
                "mlp_step {name:<15} {:9.2} ms  {:5.2}x hand-written",
                meds[i],
                meds[i] / meds[0]
            );
        }
        return;
    }
    let mut g = c.benchmark_group("train/mlp_step");
    g.sample_size(10);
    for (name, graph, exec, feeds, side) in sides {
        g.bench_function(name, |b| b.iter(|| run(graph, exec, feeds, side)));
    }
    g.finish();
}

criterion_group!(train, benches);
criterion_main!(train);
