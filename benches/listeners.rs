//! What validation costs: xxh3 throughput, and the NonInplaceValidation
//! listener's overhead on a matmul-heavy MLP step and on an elementwise
//! chain, in hash mode and in copy mode (the clone-and-compare approach).

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use vigil::engine::exec::NoListener;
use vigil::engine::{inplace, Attrs, DType, Executor, Graph, GraphBuilder, RunOptions, Tensor};
use vigil_listeners::hash::view_hash;
use vigil_listeners::noninplace::Remember;
use vigil_listeners::{Health, NonInplaceValidationListener};

fn hashing(c: &mut Criterion) {
    let n = 16 << 20; // 64 MiB of f32
    let x = Tensor::from_vec(&[n], (0..n).map(|i| i as f32).collect()).unwrap();
    let mut g = c.benchmark_group("hash");
    g.throughput(Throughput::Bytes(x.nbytes() as u64));
    g.sample_size(20);
    g.bench_function("xxh3_contiguous_64mib", |b| {
        b.iter(|| black_box(view_hash(&x).unwrap()))
    });
    g.finish();
    // 1 MiB stays in cache: the hash kernel's own speed, not DRAM's.
    let m = 1 << 18;
    let y = Tensor::from_vec(&[m], (0..m).map(|i| i as f32).collect()).unwrap();
    let mut g = c.benchmark_group("hash");
    g.throughput(Throughput::Bytes(y.nbytes() as u64));
    g.bench_function("xxh3_contiguous_1mib", |b| {
        b.iter(|| black_box(view_hash(&y).unwrap()))
    });
    g.finish();
    let mut g = c.benchmark_group("numerics");
    g.throughput(Throughput::Bytes(y.nbytes() as u64));
    g.bench_function("health_contiguous_1mib", |b| {
        b.iter(|| black_box(Health::of(&y).unwrap()))
    });
    // DebugMode's pass: the summary and the equality with the reference
    // (an equal copy), both read once.
    let y2 = y.deep_copy().unwrap();
    g.bench_function("health_compared_1mib", |b| {
        b.iter(|| black_box(Health::of_compared(&y, &y2).unwrap()))
    });
    g.throughput(Throughput::Bytes(x.nbytes() as u64));
    g.sample_size(20);
    g.bench_function("health_contiguous_64mib", |b| {
        b.iter(|| black_box(Health::of(&x).unwrap()))
    });
    g.finish();
}

fn randn(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let mut s = seed;
    let v = (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1
        })
        .collect();
    Tensor::from_vec(shape, v).unwrap()
}

/// Forward pass and loss of a 784-512-256-10 MLP on a batch of 256.
fn mlp() -> (Graph, HashMap<String, Tensor>) {
    let g = GraphBuilder::new("mlp");
    let x = g.input("x", DType::F32, &[256, 784]);
    let labels = g.input("labels", DType::I64, &[256]);
    let mut h = x.clone();
    let dims = [784, 512, 256, 10];
    for l in 0..3 {
        let w = g.parameter(&format!("w{l}"), randn(&[dims[l], dims[l + 1]], l as u64));
        let b = g.parameter(&format!("b{l}"), randn(&[dims[l + 1]], 10 + l as u64));
        h = h.matmul(&w).unwrap().add(&b).unwrap();
        if l < 2 {
            h = h.relu().unwrap();
        }
    }
    let loss = h.op("cross_entropy", &[&labels], Attrs::new()).unwrap();
    let graph = g.build(&[&loss]).unwrap();
    let labels_t = Tensor::from_vec(&[256], (0..256).map(|i| (i % 10) as i64).collect()).unwrap();
    let feeds = HashMap::from([
        ("x".to_string(), randn(&[256, 784], 99)),
        ("labels".to_string(), labels_t),
    ]);
    (graph, feeds)
}

/// 16 cheap elementwise ops over 1M f32, run in place.
fn chain() -> (Graph, HashMap<String, Tensor>) {
    let g = GraphBuilder::new("chain");
    let x = g.input("x", DType::F32, &[1 << 20]);
    let c = g.constant("c", Tensor::from_vec(&[1], vec![0.5f32]).unwrap());
    let mut y = x.clone();
    for i in 0..16 {
        y = if i % 2 == 0 { y.mul(&c) } else { y.neg() }.unwrap();
    }
    let graph = inplace::run(&g.build(&[&y]).unwrap()).unwrap().graph;
    (graph, HashMap::from([("x".to_string(), randn(&[1 << 20], 5))]))
}

fn overhead(c: &mut Criterion) {
    for (name, (graph, feeds)) in [("mlp_step", mlp()), ("elementwise_chain_1m", chain())] {
        let exec = Executor::new(&graph).unwrap();
        let opts = RunOptions::default();
        let mut g = c.benchmark_group(format!("noninplace/{name}"));
        g.sample_size(20);
        g.bench_function("plain", |b| {
            b.iter(|| black_box(exec.run_with(&feeds, &mut NoListener, &opts).unwrap()))
        });
        g.bench_function("hash", |b| {
            let mut l = NonInplaceValidationListener::new();
            b.iter(|| black_box(exec.run_with(&feeds, &mut l, &opts).unwrap()))
        });
        g.bench_function("copy", |b| {
            let mut l = NonInplaceValidationListener::new().mode(Remember::Copy);
            b.iter(|| black_box(exec.run_with(&feeds, &mut l, &opts).unwrap()))
        });
        g.finish();
    }
}

criterion_group!(benches, hashing, overhead);
criterion_main!(benches);
