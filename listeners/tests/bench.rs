//! Measurements, not checks: `cargo test --release -p vigil-listeners --test bench -- --ignored --nocapture`.

mod common;

use std::time::Instant;

use common::*;
use vigil_engine::{DType, IndexSpec, Tensor};
use vigil_listeners::hash::{outside_hash, view_hash};
use vigil_listeners::NonInplaceValidationListener;

fn gbps(bytes: usize, f: impl Fn() -> u64) -> f64 {
    let mut sink = 0u64;
    sink ^= f(); // warm up
    let reps = 10;
    let t = Instant::now();
    for _ in 0..reps {
        sink ^= f();
    }
    let secs = t.elapsed().as_secs_f64();
    std::hint::black_box(sink);
    (bytes * reps) as f64 / secs / 1e9
}

#[test]
#[ignore]
fn hash_throughput() {
    let n = 64 << 20; // 64 Mi f32 = 256 MiB
    let x = Tensor::from_vec(&[n], (0..n).map(|i| i as f32).collect()).unwrap();
    let m = x.reshape(&[8192, 8192]).unwrap();
    let cases = [
        ("contiguous (one xxh3 call)", m.clone()),
        (
            "rows x[::2, :] (8 KiB runs, streamed)",
            m.slice(&[IndexSpec::range(0, 8192, 2)]).unwrap(),
        ),
        (
            "columns x[:, :3] (12-byte runs, gathered)",
            m.slice(&[IndexSpec::All, IndexSpec::range(0, 3, 1)]).unwrap(),
        ),
        (
            "every other x[:, ::2] (4-byte elements, gathered)",
            m.slice(&[IndexSpec::All, IndexSpec::range(0, 8192, 2)]).unwrap(),
        ),
        ("transpose (4-byte elements, gathered)", m.t(None).unwrap()),
    ];
    for (name, v) in cases {
        let bytes = v.nbytes();
        let rate = gbps(bytes, || view_hash(&v).unwrap().hash);
        println!("view hash, {name}: {rate:.2} GB/s over {} MiB", bytes >> 20);
    }
    let half = m.slice(&[IndexSpec::All, IndexSpec::range(0, 8192, 2)]).unwrap();
    let rate = gbps(x.nbytes() - half.nbytes(), || outside_hash(&half).unwrap().hash);
    println!("outside hash of x[:, ::2] (bitmap + gaps): {rate:.2} GB/s");
    let rows = m.slice(&[IndexSpec::range(0, 4096, 1)]).unwrap();
    let rate = gbps(x.nbytes() - rows.nbytes(), || outside_hash(&rows).unwrap().hash);
    println!("outside hash of x[:4096] (dense: prefix + suffix): {rate:.2} GB/s");
}

#[test]
#[ignore]
fn reuse_savings() {
    // A small MLP-like forward pass: the input and weights are read by
    // several ops, activations are updated in place.
    let g = builder("mlp");
    let x = g.input("x", DType::F32, &[256, 256]);
    let w = g.input("w", DType::F32, &[256, 256]);
    let b = g.input("b", DType::F32, &[256]);
    let h1 = x.mul(&w).unwrap().add(&b).unwrap().relu_inplace().unwrap();
    let h2 = h1.mul(&w).unwrap().add(&b).unwrap().tanh_inplace_or(&x);
    let cols = x.view(&[IndexSpec::All, IndexSpec::range(0, 256, 2)]).unwrap();
    let c = cols.exp().unwrap().add(&cols).unwrap();
    let graph = g.build(&[&h2, &c]).unwrap();
    let f = feeds(&[
        ("x", ramp(&[256, 256])),
        ("w", ramp(&[256, 256])),
        ("b", ramp(&[256])),
    ]);
    for reuse in [false, true] {
        let mut l = NonInplaceValidationListener::new().reuse(reuse);
        let t = Instant::now();
        assert!(run_with(&graph, &f, &mut l).is_empty());
        let s = l.stats();
        println!(
            "reuse={reuse}: {} ops, {} inputs, {} hashes computed ({} KiB), {} reused ({} KiB not rehashed), {:?}",
            s.ops_checked,
            s.inputs_checked,
            s.hashes_computed,
            s.bytes_hashed >> 10,
            s.hashes_reused,
            s.bytes_not_rehashed >> 10,
            t.elapsed()
        );
    }
}

trait TanhOr {
    fn tanh_inplace_or(&self, other: &vigil_engine::Sym) -> vigil_engine::Sym;
}

impl TanhOr for vigil_engine::Sym {
    /// `tanh(self) * other`, through an in-place op.
    fn tanh_inplace_or(&self, other: &vigil_engine::Sym) -> vigil_engine::Sym {
        self.op("tanh_inplace", &[], Default::default())
            .unwrap()
            .mul_inplace(other)
            .unwrap()
    }
}
