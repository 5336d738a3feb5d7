//! Engine benchmarks: per-op dispatch overhead, and elementwise throughput
//! against a hand-written ndarray loop.

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ndarray::{ArrayD, IxDyn, Zip};
use vigil::engine::ops::elementwise::{BinKind, Binary};
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

fn dispatch_overhead(c: &mut Criterion) {
    const N: usize = 10_000;
    let graph = tiny_chain(N);
    let exec = Executor::new(&graph).expect("exec");
    let feeds = HashMap::from([
        ("x".to_string(), Tensor::from_vec(&[1], vec![0.5f32]).unwrap()),
        ("c".to_string(), Tensor::from_vec(&[1], vec![1.0f32]).unwrap()),
    ]);
    let mut group = c.benchmark_group("dispatch");
    group.throughput(Throughput::Elements(N as u64));
    group.bench_function("tiny_ops_10k_graph", |b| {
        b.iter(|| black_box(exec.run(&feeds).expect("run")))
    });
    group.finish();
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

criterion_group!(benches, dispatch_overhead, add_16m);
criterion_main!(benches);
