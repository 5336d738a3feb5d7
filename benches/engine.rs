//! Engine benchmarks: per-op dispatch overhead, and elementwise throughput
//! against a hand-written ndarray loop.

use std::collections::HashMap;
use std::hint::black_box;

#[path = "common/clock.rs"]
mod clock;
use clock::Clock;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ndarray::{ArrayD, IxDyn, Zip};
use vigil::engine::ops::elementwise::{BinKind, Binary, UnKind, Unary};
use vigil::engine::{DType, Executor, GraphBuilder, Op, OpCtx, Tensor};

/// A chain of `n` tiny ops on a 1-element tensor.
fn tiny_chain(n: usize) -> vigil::engine::Graph {
    let g = GraphBuilder::new("tiny");
    let x = g.input("x", DType::F32, &[1]);
    let c = g.input("c", DType::F32, &[1]);
    let mut y = x.clone();
    for i in 0..n {
        y = match i % 4 {
            0 => y.add(&c),
            1 => y.relu(),
            2 => y.mul(&c),
            _ => y.neg(),
        }
        .expect("op");
    }
    g.build(&[&y]).expect("graph")
}

/// The feeds of [`tiny_chain`].
fn tiny_feeds() -> HashMap<String, Tensor> {
    HashMap::from([
        ("x".to_string(), Tensor::from_vec(&[1], vec![0.5f32]).unwrap()),
        ("c".to_string(), Tensor::from_vec(&[1], vec![1.0f32]).unwrap()),
    ])
}

fn dispatch_overhead(c: &mut Criterion) {
    const N: usize = 10_000;
    let graph = tiny_chain(N);
    let exec = Executor::new(&graph).expect("exec");
    let feeds = tiny_feeds();
    let mut group = c.benchmark_group("dispatch");
    group.throughput(Throughput::Elements(N as u64));
    group.bench_function("tiny_ops_10k_graph", |b| {
        b.iter(|| black_box(exec.run(&feeds).expect("run")))
    });
    group.finish();
}

/// The same 10,000-op graph timed rep by rep on the clock `VIGIL_CLOCK`
/// names (`cpu` for process CPU time, which a loaded machine does not
/// inflate), median per op: `VIGIL_PAIRED=15 VIGIL_CLOCK=cpu cargo bench
/// --bench engine`.
fn dispatch_paired(reps: usize) {
    const N: usize = 10_000;
    let graph = tiny_chain(N);
    let exec = Executor::new(&graph).expect("exec");
    let feeds = tiny_feeds();
    black_box(exec.run(&feeds).expect("run"));
    let mut t: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let s = Clock::start();
            black_box(exec.run(&feeds).expect("run"));
            s.elapsed_ms()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    let per_op = |q: usize| t[q * (t.len() - 1) / 10] * 1e6 / N as f64;
    println!(
        "dispatch tiny_ops_10k_graph {:.0} ns/op ({} clock, median of {}, p10 {:.0}, p90 {:.0})",
        per_op(5),
        clock::name(),
        t.len(),
        per_op(1),
        per_op(9)
    );
}

fn add_16m(c: &mut Criterion) {
    const N: usize = 16 << 20;
    let a = ArrayD::<f32>::from_shape_fn(IxDyn(&[N]), |i| i[0] as f32 * 0.5);
    let b = ArrayD::<f32>::from_shape_fn(IxDyn(&[N]), |i| 1.0 - i[0] as f32);
    let ta = Tensor::from_array(&a);
    let tb = Tensor::from_array(&b);
    let op = Binary::new(BinKind::Add, false);
    let mut group = c.benchmark_group("add_16m_f32");
    group.throughput(Throughput::Bytes((N * 4 * 3) as u64));
    group.sample_size(20);
    group.bench_function("vigil_add_op", |bch| {
        bch.iter(|| {
            let out = op
                .compute(&[ta.clone(), tb.clone()], &mut OpCtx::new("add"))
                .expect("add");
            black_box(out)
        })
    });
    group.bench_function("ndarray_zip_alloc", |bch| {
        bch.iter(|| {
            let mut out = ArrayD::<f32>::zeros(IxDyn(&[N]));
            Zip::from(&mut out)
                .and(&a)
                .and(&b)
                .for_each(|o, &x, &y| *o = x + y);
            black_box(out)
        })
    });
    let mut out = ArrayD::<f32>::zeros(IxDyn(&[N]));
    group.bench_function("ndarray_zip_prealloc", |bch| {
        bch.iter(|| {
            Zip::from(&mut out)
                .and(&a)
                .and(&b)
                .for_each(|o, &x, &y| *o = x + y);
            black_box(&out);
        })
    });
    group.finish();
}

/// sin and cos over 4M f32 through the op, against a scalar `f32::sin`
/// loop into a preallocated output, with arguments below the SIMD limit
/// (|x| < 4: every lane in `wide`) and spread to ±100 (most lanes past it,
/// computed in f64). Intra-op threads are off for both sides.
fn trig_4m(c: &mut Criterion) {
    const N: usize = 4 << 20;
    // One thread on both sides: the kernels, not the pool, are compared.
    vigil::engine::parallel::set_intra_op(false);
    let mut group = c.benchmark_group("trig_4m_f32");
    group.throughput(Throughput::Elements(N as u64));
    group.sample_size(20);
    for (range, half) in [("pi", std::f32::consts::PI), ("100", 100.0)] {
        let xs: Vec<f32> = (0..N)
            .map(|i| ((i as f32 * 0.618_034).fract() * 2.0 - 1.0) * half)
            .collect();
        let t = Tensor::from_vec(&[N], xs.clone()).unwrap();
        for (name, kind, f) in [
            ("sin", UnKind::Sin, f32::sin as fn(f32) -> f32),
            ("cos", UnKind::Cos, f32::cos),
        ] {
            let op = Unary::new(kind, false);
            group.bench_function(format!("vigil_{name}_op/{range}"), |b| {
                b.iter(|| {
                    black_box(
                        op.compute(std::slice::from_ref(&t), &mut OpCtx::new(name))
                            .unwrap(),
                    )
                })
            });
            let mut out = vec![0.0f32; N];
            group.bench_function(format!("scalar_{name}_loop/{range}"), |b| {
                b.iter(|| {
                    out.iter_mut().zip(&xs).for_each(|(o, &x)| *o = f(x));
                    black_box(&out);
                })
            });
        }
    }
    group.finish();
    vigil::engine::parallel::set_intra_op(true);
}

/// Every unary math op over 1M f32 against a scalar loop of the standard
/// library's function, alternated rep by rep on one thread, medians:
/// `VIGIL_PAIRED=15 cargo bench --bench engine` prints the ratios.
fn math_paired(reps: usize) {
    use std::time::Instant;
    const N: usize = 1 << 20;
    vigil::engine::parallel::set_intra_op(false);
    let spread = |half: f32| -> Vec<f32> {
        (0..N)
            .map(|i| ((i as f32 * 0.618_034).fract() * 2.0 - 1.0) * half)
            .collect()
    };
    // (name, op, scalar function, half-width of the argument range)
    type MathCase = (&'static str, UnKind, fn(f32) -> f32, f32);
    let cases: [MathCase; 18] = [
        ("exp", UnKind::Exp, f32::exp, 20.0),
        ("log", UnKind::Log, f32::ln, 1e4),
        ("sqrt", UnKind::Sqrt, f32::sqrt, 1e4),
        ("tanh", UnKind::Tanh, f32::tanh, 10.0),
        ("sigmoid", UnKind::Sigmoid, |x| 1.0 / (1.0 + (-x).exp()), 10.0),
        ("sin", UnKind::Sin, f32::sin, std::f32::consts::PI),
        ("cos", UnKind::Cos, f32::cos, std::f32::consts::PI),
        ("tan", UnKind::Tan, f32::tan, 1.5),
        ("asin", UnKind::Asin, f32::asin, 1.0),
        ("acos", UnKind::Acos, f32::acos, 1.0),
        ("atan", UnKind::Atan, f32::atan, 10.0),
        ("sinh", UnKind::Sinh, f32::sinh, 10.0),
        ("cosh", UnKind::Cosh, f32::cosh, 10.0),
        ("expm1", UnKind::Expm1, f32::exp_m1, 10.0),
        ("log1p", UnKind::Log1p, f32::ln_1p, 100.0),
        ("erf", UnKind::Erf, libm::erff, 5.0),
        (
            "gelu",
            UnKind::Gelu,
            |x| 0.5 * x * (1.0 + libm::erff(x * std::f32::consts::FRAC_1_SQRT_2)),
            5.0,
        ),
        (
            "gelu_tanh",
            UnKind::GeluTanh,
            |x| 0.5 * x * (1.0 + (0.797_884_6 * (x + 0.044_715 * x * x * x)).tanh()),
            5.0,
        ),
    ];
    for (name, kind, f, half) in cases {
        let mut xs = spread(half);
        if matches!(kind, UnKind::Log | UnKind::Sqrt | UnKind::Log1p) {
            xs.iter_mut().for_each(|x| *x = x.abs());
        }
        let t = Tensor::from_vec(&[N], xs.clone()).unwrap();
        let op = Unary::new(kind, false);
        let mut out = vec![0.0f32; N];
        let (mut vt, mut st) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            let s = Instant::now();
            black_box(
                op.compute(std::slice::from_ref(&t), &mut OpCtx::new(name))
                    .unwrap(),
            );
            vt.push(s.elapsed().as_secs_f64() * 1e3);
            let s = Instant::now();
            out.iter_mut().zip(&xs).for_each(|(o, &x)| *o = f(x));
            black_box(&out);
            st.push(s.elapsed().as_secs_f64() * 1e3);
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (v, sc) = (med(&mut vt), med(&mut st));
        println!(
            "{name:<8} op {v:7.3} ms  scalar loop {sc:7.3} ms  {:5.2}x",
            v / sc
        );
    }
    vigil::engine::parallel::set_intra_op(true);
}

fn paired_or_criterion(c: &mut Criterion) {
    if let Some(reps) = std::env::var("VIGIL_PAIRED").ok().and_then(|r| r.parse().ok()) {
        // `VIGIL_WORKLOADS=dispatch` (or `math`) runs just that part.
        let only = std::env::var("VIGIL_WORKLOADS").unwrap_or_default();
        if only.is_empty() || only.contains("dispatch") {
            dispatch_paired(reps);
        }
        if only.is_empty() || only.contains("math") {
            math_paired(reps);
        }
        return;
    }
    dispatch_overhead(c);
    add_16m(c);
    trig_4m(c);
}

criterion_group!(benches, paired_or_criterion);
criterion_main!(benches);
