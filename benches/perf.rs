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
//! `benches/numpy_ref.py` runs the same two workloads in numpy.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use vigil::engine::exec::{Listener, NoListener};
use vigil::engine::{inplace, Attrs, DType, Executor, Graph, GraphBuilder, RunOptions, Tensor};
use vigil_listeners::{
    ListenerSet, NonInplaceValidationListener, NumericsListener, ViewMapValidationListener,
};

/// Uniform values in `[lo, hi)` from a fixed LCG (the numpy script uses the
/// same generator, so both sides see the same inputs).
fn uniform(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 40) as f32 / (1u64 << 24) as f32)
        })
        .collect()
}

const DIMS: [usize; 4] = [784, 512, 256, 10];
const BATCH: usize = 256;

/// One SGD step of a 784-512-256-10 ReLU MLP with softmax cross-entropy on
/// a batch of 256: forward, a hand-written backward, and `w -= lr * g`
/// in place for every weight and bias (the parameters are mutable inputs).
pub fn mlp_step() -> (Graph, HashMap<String, Tensor>) {
    let g = GraphBuilder::new("mlp_step");
    let x = g.input("x", DType::F32, &[BATCH as i64, 784]);
    let labels = g.input("labels", DType::I64, &[BATCH as i64]);
    let onehot = g.input("onehot", DType::F32, &[BATCH as i64, 10]);
    let lr = g.constant("lr", Tensor::from_vec(&[1], vec![0.01f32]).unwrap());
    let inv_n = g.constant("inv_n", Tensor::from_vec(&[1], vec![1.0 / BATCH as f32]).unwrap());
    let zero = g.constant("zero", Tensor::from_vec(&[1], vec![0.0f32]).unwrap());
    let mut w = Vec::new();
    let mut b = Vec::new();
    for l in 0..3 {
        w.push(g.mutable_input(
            &format!("w{l}"),
            DType::F32,
            &[DIMS[l] as i64, DIMS[l + 1] as i64],
        ));
        b.push(g.mutable_input(&format!("b{l}"), DType::F32, &[DIMS[l + 1] as i64]));
    }
    // Forward.
    let mut acts = vec![x.clone()];
    let mut pre = Vec::new();
    let mut h = x.clone();
    for l in 0..3 {
        let a = h.matmul(&w[l]).unwrap().add(&b[l]).unwrap();
        if l < 2 {
            h = a.relu().unwrap();
            acts.push(h.clone());
        } else {
            h = a.clone();
        }
        pre.push(a);
    }
    let loss = h.op("cross_entropy", &[&labels], Attrs::new()).unwrap();
    // Backward: d logits = (softmax - onehot) / N.
    let p = h.op("softmax", &[], Attrs::new()).unwrap();
    let mut d = p.sub(&onehot).unwrap().mul(&inv_n).unwrap();
    let mut grads = [None, None, None];
    for l in (0..3).rev() {
        let gw = acts[l].transpose(None).unwrap().matmul(&d).unwrap();
        let gb = d.sum(Some(&[0])).unwrap();
        if l > 0 {
            let dh = d.matmul(&w[l].transpose(None).unwrap()).unwrap();
            let mask = pre[l - 1].gt(&zero).unwrap();
            d = mask.op("where", &[&dh, &zero], Attrs::new()).unwrap();
        }
        grads[l] = Some((gw, gb));
    }
    // In-place updates.
    let mut outs = vec![loss];
    for ((grad, wl), bl) in grads.iter_mut().zip(&w).zip(&b) {
        let (gw, gb) = grad.take().unwrap();
        outs.push(wl.sub_inplace(&gw.mul(&lr).unwrap()).unwrap());
        outs.push(bl.sub_inplace(&gb.mul(&lr).unwrap()).unwrap());
    }
    let refs: Vec<_> = outs.iter().collect();
    let graph = g.build(&refs).unwrap();
    let mut feeds = HashMap::new();
    feeds.insert(
        "x".to_string(),
        Tensor::from_vec(&[BATCH, 784], uniform(BATCH * 784, 1, 0.0, 1.0)).unwrap(),
    );
    let labels_v: Vec<i64> = (0..BATCH).map(|i| (i % 10) as i64).collect();
    let mut oh = vec![0.0f32; BATCH * 10];
    for (i, &l) in labels_v.iter().enumerate() {
        oh[i * 10 + l as usize] = 1.0;
    }
    feeds.insert(
        "labels".to_string(),
        Tensor::from_vec(&[BATCH], labels_v).unwrap(),
    );
    feeds.insert("onehot".to_string(), Tensor::from_vec(&[BATCH, 10], oh).unwrap());
    for l in 0..3 {
        let (i, o) = (DIMS[l], DIMS[l + 1]);
        let scale = (6.0 / (i + o) as f32).sqrt();
        let wv = uniform(i * o, 10 + l as u64, -scale, scale);
        feeds.insert(format!("w{l}"), Tensor::from_vec(&[i, o], wv).unwrap());
        feeds.insert(format!("b{l}"), Tensor::from_vec(&[o], vec![0.0f32; o]).unwrap());
    }
    (graph, feeds)
}

/// 16 elementwise ops over `n` f32 in (0, 1), mixing transcendental and
/// cheap ops (x is read again by ops 6 and 10), without the in-place pass.
pub fn chain16(n: usize) -> (Graph, HashMap<String, Tensor>) {
    let g = GraphBuilder::new("chain16_math");
    let x = g.input("x", DType::F32, &[n as i64]);
    let c = g.constant("c", Tensor::from_vec(&[1], vec![0.5f32]).unwrap());
    let y = x.mul(&c).unwrap(); // 1
    let y = y.exp().unwrap(); // 2
    let y = y.add(&c).unwrap(); // 3
    let y = y.log().unwrap(); // 4
    let y = y.tanh().unwrap(); // 5
    let y = y.add(&x).unwrap(); // 6
    let y = y.sigmoid().unwrap(); // 7
    let y = y.mul(&y).unwrap(); // 8 (square)
    let y = y.sqrt().unwrap(); // 9
    let y = y.sub(&x).unwrap(); // 10
    let y = y.abs().unwrap(); // 11
    let y = y.mul(&c).unwrap(); // 12
    let y = y.exp().unwrap(); // 13
    let y = y.add(&c).unwrap(); // 14
    let y = y.log().unwrap(); // 15
    let y = y.tanh().unwrap(); // 16
    let graph = g.build(&[&y]).unwrap();
    let feeds = HashMap::from([(
        "x".to_string(),
        Tensor::from_vec(&[n], uniform(n, 7, 0.0, 1.0)).unwrap(),
    )]);
    (graph, feeds)
}

/// The listeners of `vigil run --mode validate` (less profiling).
fn validate_set() -> ListenerSet {
    ListenerSet::new()
        .with(NonInplaceValidationListener::new())
        .with(ViewMapValidationListener::new())
        .with(NumericsListener::new())
}

/// A named way to run a graph.
struct Side<'a> {
    name: &'static str,
    exec: &'a Executor<'a>,
    listener: Box<dyn Listener>,
    /// Intra-op parallelism on (else every kernel runs on this thread).
    threads: bool,
}

impl<'a> Side<'a> {
    fn new(name: &'static str, exec: &'a Executor<'a>, listener: Box<dyn Listener>) -> Side<'a> {
        Side {
            name,
            exec,
            listener,
            threads: true,
        }
    }

    fn one_thread(mut self) -> Self {
        self.threads = false;
        self
    }

    fn run(&mut self, feeds: &HashMap<String, Tensor>) {
        vigil::engine::parallel::set_intra_op(self.threads);
        let opts = RunOptions::default();
        black_box(self.exec.run_with(feeds, self.listener.as_mut(), &opts).unwrap());
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Alternates the sides rep by rep; prints each median and its ratio to the
/// first side's.
fn paired(title: &str, sides: &mut [Side<'_>], feeds: &HashMap<String, Tensor>, reps: usize) {
    for s in sides.iter_mut() {
        s.run(feeds); // warm the buffer pool and the caches
    }
    let mut times = vec![Vec::with_capacity(reps); sides.len()];
    for _ in 0..reps {
        for (s, t) in sides.iter_mut().zip(&mut times) {
            let start = Instant::now();
            s.run(feeds);
            t.push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    let meds: Vec<f64> = times.iter_mut().map(|t| median(t)).collect();
    for (s, m) in sides.iter().zip(&meds) {
        println!("{title:<28} {:<10} {m:9.3} ms  {:5.2}x", s.name, m / meds[0]);
    }
    vigil::engine::parallel::set_intra_op(true);
}

fn paired_main(reps: usize) {
    let (mlp, mlp_feeds) = mlp_step();
    let mlp_pass = inplace::run(&mlp).unwrap().graph;
    let mlp_exec = Executor::new(&mlp_pass).unwrap();
    paired(
        "mlp_step",
        &mut [
            Side::new("plain", &mlp_exec, Box::new(NoListener)),
            Side::new("plain_1t", &mlp_exec, Box::new(NoListener)).one_thread(),
            Side::new("validate", &mlp_exec, Box::new(validate_set())),
            Side::new(
                "noninplace",
                &mlp_exec,
                Box::new(NonInplaceValidationListener::new()),
            ),
            Side::new("viewmap", &mlp_exec, Box::new(ViewMapValidationListener::new())),
            Side::new("numerics", &mlp_exec, Box::new(NumericsListener::new())),
        ],
        &mlp_feeds,
        reps,
    );
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
        &mut [
            Side::new("pure", &pure_exec, Box::new(NoListener)),
            Side::new("inplace", &inplace_exec, Box::new(NoListener)),
            Side::new("inplace_1t", &inplace_exec, Box::new(NoListener)).one_thread(),
            Side::new("validate", &inplace_exec, Box::new(validate_set())),
            Side::new(
                "noninplace",
                &inplace_exec,
                Box::new(NonInplaceValidationListener::new()),
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
