//! On a clean graph the reference computes every value with the kernels
//! the in-place run used, so the lockstep finds each one equal bit for bit
//! (the fast comparison) instead of within tolerance: the same layouts
//! (channels-last where a depthwise conv follows, an elementwise op's
//! output laid out as its operand), the same kernel for a product by a
//! weight on its first call as on later ones.

use std::collections::HashMap;

use vigil_debugmode::{DebugConfig, DebugMode};
use vigil_engine::graph::{Graph, GraphBuilder, Sym};
use vigil_engine::{Attrs, DType};
use vigil_testkit::spread;

/// An inverted-residual block (expand, SiLU, depthwise 3×3, SiLU,
/// squeeze-and-excite with the scale as the product's first operand,
/// project), and 16 rows times a weight. The sums are long enough
/// (640 and 768 terms) for two GEMM kernels to round them differently.
fn block() -> Graph {
    let (c, e, se, hw) = (8, 640, 4, 6);
    let (rows, k, m) = (16, 768, 256);
    let g = GraphBuilder::new("block");
    let x = g.input("x", DType::F32, &[1, c as i64, hw as i64, hw as i64]);
    let r = g.input("r", DType::F32, &[rows, k as i64]);
    let w = |name: &str, shape: &[usize], seed: usize| g.constant(name, spread(shape, seed));
    let silu = |v: &Sym| v.mul(&v.sigmoid().unwrap()).unwrap();
    let conv = |v: &Sym, ins: &[&Sym], attrs: Attrs| v.op("conv", ins, attrs).unwrap();
    let dw_attrs = Attrs::new().with("group", e).with("pads", vec![1usize, 1, 1, 1]);
    let ex = conv(
        &x,
        &[&w("w_exp", &[e, c, 1, 1], 1), &w("b_exp", &[e], 2)],
        Attrs::new(),
    );
    let dw = conv(
        &silu(&ex),
        &[&w("w_dw", &[e, 1, 3, 3], 3), &w("b_dw", &[e], 4)],
        dw_attrs,
    );
    let a = silu(&dw);
    let mean = a
        .op(
            "mean",
            &[],
            Attrs::new().with("axes", vec![2i64, 3]).with("keepdims", true),
        )
        .unwrap();
    let s1 = conv(
        &mean,
        &[&w("w_se1", &[se, e, 1, 1], 5), &w("b_se1", &[se], 6)],
        Attrs::new(),
    );
    let s2 = conv(
        &s1.relu().unwrap(),
        &[&w("w_se2", &[e, se, 1, 1], 7), &w("b_se2", &[e], 8)],
        Attrs::new(),
    );
    let scaled = s2.sigmoid().unwrap().mul(&a).unwrap();
    let y = conv(&scaled, &[&w("w_proj", &[c, e, 1, 1], 9)], Attrs::new());
    let z = r.op("matmul", &[&w("w_fc", &[k, m], 10)], Attrs::new()).unwrap();
    g.build(&[&y.relu().unwrap(), &z.relu().unwrap()]).unwrap()
}

#[test]
fn a_clean_conv_block_and_weight_product_agree_with_the_reference_bit_for_bit() {
    let g = block();
    let feeds = HashMap::from([
        ("x".to_string(), spread(&[1, 8, 6, 6], 11)),
        ("r".to_string(), spread(&[16, 768], 12)),
    ]);
    for sweeps in [false, true] {
        let cfg = DebugConfig {
            sweeps,
            ..DebugConfig::default()
        };
        let r = DebugMode::new(cfg).check(&g, &feeds).unwrap();
        assert!(r.findings.is_empty(), "{:#?}", r.findings);
        assert!(r.stats.rewrites >= 4, "{:?}", r.stats);
        assert_eq!(r.stats.compared, g.nodes().len(), "{:?}", r.stats);
        assert_eq!(r.stats.tolerated, 0, "sweeps {sweeps}: {:?}", r.stats);
        assert_eq!(r.stats.exact, r.stats.compared, "sweeps {sweeps}: {:?}", r.stats);
    }
}
