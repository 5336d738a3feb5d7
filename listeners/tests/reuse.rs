//! Hash reuse, measured by the listener's own counters.

mod common;

use common::*;
use vigil_engine::{DType, IndexSpec};
use vigil_listeners::NonInplaceValidationListener;

/// Counters, not time: reusing hashes of unchanged buffers must skip most
/// of the hashing on a graph whose inputs are read by several ops.
#[test]
fn hash_reuse_skips_most_of_the_bytes() {
    // A small MLP-like forward pass: the input and weights are read by
    // several ops, activations are updated in place. The bias is a strided
    // view, which no fused sweep takes as an operand, so the in-place bias
    // adds run alone and each skips hashing the view it destroys.
    let g = builder("mlp");
    let x = g.input("x", DType::F32, &[256, 256]);
    let w = g.input("w", DType::F32, &[256, 256]);
    let b2 = g.input("b2", DType::F32, &[512]);
    let b = b2.view(&[IndexSpec::range(0, 512, 2)]).unwrap();
    let h1 = x.mul(&w).unwrap().add(&b).unwrap().relu_inplace().unwrap();
    let h2 = h1.mul(&w).unwrap().add(&b).unwrap().tanh_inplace_or(&x);
    let cols = x.view(&[IndexSpec::All, IndexSpec::range(0, 256, 2)]).unwrap();
    let c = cols.exp().unwrap().add(&cols).unwrap();
    let graph = g.build(&[&h2, &c]).unwrap();
    let f = feeds(&[
        ("x", ramp(&[256, 256])),
        ("w", ramp(&[256, 256])),
        ("b2", ramp(&[512])),
    ]);
    let stats = |reuse: bool| {
        let mut l = NonInplaceValidationListener::new().reuse(reuse);
        assert!(run_with(&graph, &f, &mut l).is_empty());
        l.stats().clone()
    };
    let (cold, warm) = (stats(false), stats(true));
    assert_eq!(cold.hashes_reused, 0);
    assert_eq!(cold.ops_checked, warm.ops_checked);
    assert!(warm.hashes_reused > 0);
    assert!(warm.hashes_skipped > 0, "the in-place ops' destroyed views");
    assert_eq!(
        warm.hashes_computed + warm.hashes_reused + warm.hashes_skipped,
        cold.hashes_computed
    );
    // 58% of the bytes are not rehashed on this graph.
    assert!(warm.bytes_hashed * 2 < cold.bytes_hashed, "{warm:?} vs {cold:?}");
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
