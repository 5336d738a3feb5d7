//! Helpers shared by the gradient tests: deterministic f64 parameters and a
//! finite-difference check of `sum(y * r)` for a random constant `r`.

#![allow(dead_code)]

use std::collections::HashMap;

use vigil_autodiff::{check_gradients, grad, GradCheck, GradCheckConfig, ParamCheck};
use vigil_engine::{DType, Graph, GraphBuilder, Sym, Tensor};

/// Values in `[lo, hi)` from a fixed LCG.
pub fn values(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15).wrapping_add(1);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

/// A parameter with values in ±[0.2, 1.2): away from 0, where abs and relu
/// have no derivative, and distinct, so max and min have no ties.
pub fn param(b: &GraphBuilder, name: &str, shape: &[usize]) -> Sym {
    let n = shape.iter().product();
    let seed = name.bytes().map(u64::from).sum::<u64>() + n as u64;
    let v: Vec<f64> = values(n, seed, 0.2, 1.2)
        .into_iter()
        .zip(values(n, seed + 7, 0.0, 1.0))
        .map(|(x, s)| if s < 0.5 { -x } else { x })
        .collect();
    b.parameter(name, Tensor::from_vec(shape, v).unwrap())
}

/// A parameter with values in [0.5, 2) (for log, sqrt, pow).
pub fn positive(b: &GraphBuilder, name: &str, shape: &[usize]) -> Sym {
    let n = shape.iter().product();
    b.parameter(
        name,
        Tensor::from_vec(shape, values(n, n as u64 + 3, 0.5, 2.0)).unwrap(),
    )
}

/// `sum(y * r)` for a fixed random `r` shaped like `y`, so every element
/// of `y`'s gradient differs.
pub fn weighted_loss(b: &GraphBuilder, y: &Sym) -> Sym {
    let shape = y.ty().static_shape().expect("static shape");
    let n = shape.iter().product();
    let r = b.constant(
        &b.fresh("r"),
        Tensor::from_vec(&shape, values(n, 99, -1.0, 1.0)).unwrap(),
    );
    let r = if y.ty().dtype == DType::F64 {
        r
    } else {
        r.cast(y.ty().dtype).unwrap()
    };
    y.mul(&r).unwrap().sum(None).unwrap()
}

/// The gradient graph of `loss` with respect to `params`.
pub fn grad_graph(b: &GraphBuilder, loss: &Sym, params: &[&str]) -> Graph {
    let g = b.build(&[loss]).unwrap();
    grad(&g, loss.name(), params).unwrap()
}

/// The failed probes of a finite-difference check (panics when nothing
/// was probed, so a test cannot pass by checking nothing).
pub fn failures_with(g: &Graph, feeds: &HashMap<String, Tensor>, cfg: &GradCheckConfig) -> Vec<String> {
    let mut runs = 0;
    let check = check_gradients(g, feeds, cfg, 7, &mut runs).unwrap();
    let GradCheck::Checked { params, .. } = &check else {
        panic!("nothing checked: {check:?}");
    };
    let probes: usize = params
        .iter()
        .map(|p| match p {
            ParamCheck::Probed { probes, .. } => probes.len(),
            ParamCheck::WrongSize { .. } => 0,
        })
        .sum();
    assert!(probes > 0, "no probes");
    check
        .failures(cfg)
        .into_iter()
        .map(|(p, probe)| format!("{p}: {probe:?}"))
        .collect()
}

/// Asserts that the gradients of `sum(y * r)` with respect to `params`
/// agree with finite differences.
pub fn assert_grads(b: &GraphBuilder, y: &Sym, params: &[&str]) {
    assert_grads_with(b, y, params, &HashMap::new(), &GradCheckConfig::default());
}

pub fn assert_grads_with(
    b: &GraphBuilder,
    y: &Sym,
    params: &[&str],
    feeds: &HashMap<String, Tensor>,
    cfg: &GradCheckConfig,
) {
    let loss = weighted_loss(b, y);
    let g = grad_graph(b, &loss, params);
    let bad = failures_with(&g, feeds, cfg);
    assert!(bad.is_empty(), "gradient mismatches:\n{}", bad.join("\n"));
}
