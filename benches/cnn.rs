//! The CNN ops at ResNet-50's shapes (batch 1, f32, one thread: set
//! `RAYON_NUM_THREADS=1` to match `benches/onnx_vs_ort.py`):
//!
//! - `conv`: a 3×3 stride-1 padded conv (planar im2col + GEMM), a 1×1
//!   stride-1 conv (the plane read in place as the GEMM operand), a 1×1
//!   stride-2 downsampling conv and the 7×7 stride-2 stem; throughput in
//!   multiply-adds, so criterion's "elem/s" is MAC/s.
//! - the memory-bound ops: `max_pool` 3×3 stride 2, `batch_norm`, `relu`,
//!   `add`, with a plain copy of the same bytes as the bandwidth yardstick;
//!   throughput in bytes read and written.
//!
//! `VIGIL_PAIRED=REPS [VIGIL_WORKLOADS=max_pool,3x3/1] cargo bench --bench cnn`
//! instead times the pools at the stem's shape against a copy of their
//! input, on one thread, alternating rep by rep in one process, and prints
//! median ratios.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use vigil::engine::{Attrs, OpCtx, OpRegistry, Tensor};

/// Distinct values in [lo, lo + 1).
fn ramp_from(shape: &[usize], seed: usize, lo: f32) -> Tensor {
    let n: usize = shape.iter().product();
    let v = (0..n)
        .map(|i| ((i * 2654435761 + seed) % 1009) as f32 / 1009.0 + lo)
        .collect();
    Tensor::from_vec(shape, v).expect("tensor")
}

fn ramp(shape: &[usize], seed: usize) -> Tensor {
    ramp_from(shape, seed, -0.5)
}

fn run(reg: &OpRegistry, op: &str, attrs: &Attrs, inputs: &[Tensor]) -> Tensor {
    let op = reg.make(op, attrs).expect("op");
    op.compute(inputs, &mut OpCtx::new("bench"))
        .expect("compute")
        .remove(0)
}

fn conv(c: &mut Criterion) {
    let reg = OpRegistry::builtin();
    // (name, C, H=W, M, kernel, stride, pad)
    let cases = [
        ("3x3_s1_64x56x56", 64, 56, 64, 3, 1, 1),
        ("1x1_s1_256x56x56_to_64", 256, 56, 64, 1, 1, 0),
        ("1x1_s2_256x56x56_to_512", 256, 56, 512, 1, 2, 0),
        ("7x7_s2_3x224x224_to_64", 3, 224, 64, 7, 2, 3),
    ];
    let mut group = c.benchmark_group("conv_f32");
    group.sample_size(20);
    for (name, ch, hw, m, k, s, p) in cases {
        let x = ramp(&[1, ch, hw, hw], 1);
        let w = ramp(&[m, ch, k, k], 2);
        let attrs = Attrs::new()
            .with("strides", vec![s, s])
            .with("pads", vec![p, p, p, p]);
        let out = (hw + 2 * p - k) / s + 1;
        group.throughput(Throughput::Elements((m * out * out * ch * k * k) as u64));
        group.bench_function(name, |b| {
            b.iter(|| black_box(run(&reg, "conv", &attrs, &[x.clone(), w.clone()])))
        });
    }
    group.finish();
}

fn memory_bound(c: &mut Criterion) {
    let reg = OpRegistry::builtin();
    let shape = [1, 64, 112, 112];
    let n: usize = shape.iter().product();
    let x = ramp(&shape, 1);
    let y = ramp(&shape, 2);
    // Scale, bias, mean, var: a positive variance.
    let vecs: Vec<Tensor> = (0..4).map(|i| ramp_from(&[64], 3 + i, 0.5)).collect();
    let mut group = c.benchmark_group("memory_bound_f32_64x112x112");
    group.sample_size(30);

    group.throughput(Throughput::Bytes((n * 4 * 2) as u64));
    group.bench_function("copy_yardstick", |b| {
        b.iter(|| black_box(x.deep_copy().expect("copy")))
    });
    group.bench_function("relu", |b| {
        b.iter(|| black_box(run(&reg, "relu", &Attrs::new(), std::slice::from_ref(&x))))
    });
    let mut bn = vec![x.clone()];
    bn.extend(vecs.iter().cloned());
    group.bench_function("batch_norm", |b| {
        b.iter(|| black_box(run(&reg, "batch_norm", &Attrs::new(), &bn)))
    });

    group.throughput(Throughput::Bytes((n * 4 * 3) as u64));
    group.bench_function("add", |b| {
        b.iter(|| black_box(run(&reg, "add", &Attrs::new(), &[x.clone(), y.clone()])))
    });

    // Reads the input once, writes a quarter of it.
    group.throughput(Throughput::Bytes((n * 4 + n) as u64));
    let pool = Attrs::new()
        .with("kernel_shape", vec![3, 3])
        .with("strides", vec![2, 2])
        .with("pads", vec![1, 1, 1, 1]);
    group.bench_function("max_pool_3x3_s2", |b| {
        b.iter(|| black_box(run(&reg, "max_pool", &pool, std::slice::from_ref(&x))))
    });
    group.finish();
}

/// The common pools against a copy of their input (`[1, 64, 112, 112]`
/// f32), one thread, sides alternated rep by rep; medians.
fn pools_paired(reps: usize) {
    use std::time::Instant;
    vigil::engine::parallel::set_intra_op(false);
    let reg = OpRegistry::builtin();
    // `VIGIL_BATCH=16` makes the input 51 MB, past the caches: the pools
    // and the copy then stream from memory.
    let batch = std::env::var("VIGIL_BATCH")
        .ok()
        .and_then(|b| b.parse().ok())
        .unwrap_or(1);
    let x = ramp(&[batch, 64, 112, 112], 1);
    let window = |op: &'static str, k: usize, s: usize, p: usize| {
        let a = Attrs::new()
            .with("kernel_shape", vec![k, k])
            .with("strides", vec![s, s])
            .with("pads", vec![p, p, p, p]);
        let name = format!("{op} {k}x{k}/{s} pad {p}");
        (name, reg.make(op, &a).expect("op"))
    };
    // `VIGIL_WORKLOADS=max_pool,3x3/1` keeps the pools whose names hold
    // every one of those words.
    let only = std::env::var("VIGIL_WORKLOADS").unwrap_or_default();
    let pools: Vec<_> = [
        window("max_pool", 3, 2, 1),
        window("max_pool", 2, 2, 0),
        window("max_pool", 3, 1, 1),
        window("average_pool", 2, 2, 0),
        window("average_pool", 3, 2, 1),
        window("average_pool", 3, 1, 1),
    ]
    .into_iter()
    .filter(|(name, _)| {
        only.split(',')
            .filter(|w| !w.is_empty())
            .all(|w| name.contains(w))
    })
    .collect();
    let mut copy = Vec::new();
    let mut times = vec![Vec::new(); pools.len()];
    let ms = |s: Instant| s.elapsed().as_secs_f64() * 1e3;
    for _ in 0..reps {
        let s = Instant::now();
        black_box(x.deep_copy().expect("copy"));
        copy.push(ms(s));
        for ((_, op), t) in pools.iter().zip(&mut times) {
            let s = Instant::now();
            black_box(
                op.compute(std::slice::from_ref(&x), &mut OpCtx::new("pool"))
                    .expect("pool"),
            );
            t.push(ms(s));
        }
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let c = med(&mut copy);
    println!("copy of the input {c:7.3} ms");
    for ((name, _), t) in pools.iter().zip(&mut times) {
        let m = med(t);
        println!("{name:<24} {m:7.3} ms  {:5.2}x the copy", m / c);
    }
    vigil::engine::parallel::set_intra_op(true);
}

fn paired_or_criterion(c: &mut Criterion) {
    if let Some(reps) = std::env::var("VIGIL_PAIRED").ok().and_then(|r| r.parse().ok()) {
        return pools_paired(reps);
    }
    conv(c);
    memory_bound(c);
}

criterion_group!(benches, paired_or_criterion);
criterion_main!(benches);
