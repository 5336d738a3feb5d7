//! The in-place pass: what it saves at run time on an elementwise chain,
//! and what it costs on a large graph.

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use vigil::engine::{inplace, DType, Executor, Graph, GraphBuilder, Tensor};

/// 16 cheap elementwise ops over `n` f32, so memory traffic dominates.
fn chain16(n: i64) -> Graph {
    let g = GraphBuilder::new("chain16");
    let x = g.input("x", DType::F32, &[n]);
    let c = g.constant("c", Tensor::from_vec(&[1], vec![0.5f32]).unwrap());
    let mut y = x.clone();
    for i in 0..16 {
        y = match i % 4 {
            0 => y.add(&c),
            1 => y.mul(&c),
            2 => y.relu(),
            _ => y.neg(),
        }
        .expect("op");
    }
    g.build(&[&y]).expect("graph")
}

fn chain_run(c: &mut Criterion) {
    const N: usize = 8 << 20;
    let pure = chain16(N as i64);
    let pass = inplace::run(&pure).expect("pass");
    let feeds = HashMap::from([("x".to_string(), Tensor::zeros(DType::F32, &[N]).unwrap())]);
    let pure_exec = Executor::new(&pure).unwrap();
    let inplace_exec = Executor::new(&pass.graph).unwrap();
    let peak = |e: &Executor| e.run(&feeds).unwrap().stats.peak_live_bytes;
    eprintln!(
        "chain16 over 8M f32: {} of 16 ops in place; peak live bytes {} MiB pure, {} MiB with the pass",
        pass.accepted(),
        peak(&pure_exec) >> 20,
        peak(&inplace_exec) >> 20
    );
    let mut group = c.benchmark_group("chain16_8m_f32");
    group.sample_size(10);
    group.bench_function("pure", |b| b.iter(|| black_box(pure_exec.run(&feeds).unwrap())));
    group.bench_function("inplace", |b| {
        b.iter(|| black_box(inplace_exec.run(&feeds).unwrap()))
    });
    group.finish();
}

/// A 10,000-node graph: residual-style blocks of elementwise ops, so the
/// pass meets readers to order, refusals and views.
fn big_graph() -> Graph {
    let g = GraphBuilder::new("big");
    let x = g.input("x", DType::F32, &[64, 64]);
    let mut h = x.clone();
    let mut nodes = 0;
    while nodes < 10_000 {
        let a = h.relu().unwrap();
        let b = a.transpose(None).unwrap();
        let c = b.mul(&a).unwrap();
        let d = c.neg().unwrap();
        h = d.add(&h).unwrap();
        nodes += 5;
    }
    g.build(&[&h]).expect("graph")
}

fn pass_cost(c: &mut Criterion) {
    let g = big_graph();
    eprintln!(
        "big graph: {} nodes, {} rewritten",
        g.nodes().len(),
        inplace::run(&g).unwrap().accepted()
    );
    let mut group = c.benchmark_group("inplace_pass");
    group.sample_size(10);
    group.bench_function("10k_nodes", |b| b.iter(|| black_box(inplace::run(&g).unwrap())));
    group.finish();
}

criterion_group!(benches, chain_run, pass_cost);
criterion_main!(benches);
