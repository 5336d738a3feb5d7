//! The benchmark workloads, shared by `perf` and `debugmode`: an MLP SGD
//! step (forward, hand-written backward, in-place updates) and a 16-op
//! transcendental elementwise chain.

use std::collections::HashMap;

use vigil::engine::{Attrs, DType, Graph, GraphBuilder, Tensor};

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
    mlp(false)
}

/// The same MLP with its weights and biases as parameters, and the
/// backward's gradients as outputs `grad:<param>` instead of the updates:
/// the graph DebugMode's gradient check takes.
#[allow(dead_code)]
pub fn mlp_grads() -> (Graph, HashMap<String, Tensor>) {
    mlp(true)
}

fn mlp(grads_out: bool) -> (Graph, HashMap<String, Tensor>) {
    let g = GraphBuilder::new(if grads_out { "mlp_grads" } else { "mlp_step" });
    let x = g.input("x", DType::F32, &[BATCH as i64, 784]);
    let labels = g.input("labels", DType::I64, &[BATCH as i64]);
    let onehot = g.input("onehot", DType::F32, &[BATCH as i64, 10]);
    let lr = g.constant("lr", Tensor::from_vec(&[1], vec![0.01f32]).unwrap());
    let inv_n = g.constant("inv_n", Tensor::from_vec(&[1], vec![1.0 / BATCH as f32]).unwrap());
    let zero = g.constant("zero", Tensor::from_vec(&[1], vec![0.0f32]).unwrap());
    let mut w = Vec::new();
    let mut b = Vec::new();
    for l in 0..3 {
        let (i, o) = (DIMS[l], DIMS[l + 1]);
        if grads_out {
            let (wv, bv) = init(l);
            w.push(g.parameter(&format!("w{l}"), Tensor::from_vec(&[i, o], wv).unwrap()));
            b.push(g.parameter(&format!("b{l}"), Tensor::from_vec(&[o], bv).unwrap()));
        } else {
            w.push(g.mutable_input(&format!("w{l}"), DType::F32, &[i as i64, o as i64]));
            b.push(g.mutable_input(&format!("b{l}"), DType::F32, &[o as i64]));
        }
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
    // In-place updates, or the gradients themselves.
    let mut outs = vec![loss];
    for (l, ((grad, wl), bl)) in grads.iter_mut().zip(&w).zip(&b).enumerate() {
        let (gw, gb) = grad.take().unwrap();
        if grads_out {
            for (name, gv) in [(format!("grad:w{l}"), gw), (format!("grad:b{l}"), gb)] {
                outs.push(
                    g.apply_named(&name, "copy", &[&gv], Attrs::new())
                        .unwrap()
                        .remove(0),
                );
            }
        } else {
            outs.push(wl.sub_inplace(&gw.mul(&lr).unwrap()).unwrap());
            outs.push(bl.sub_inplace(&gb.mul(&lr).unwrap()).unwrap());
        }
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
        if !grads_out {
            let (i, o) = (DIMS[l], DIMS[l + 1]);
            let (wv, bv) = init(l);
            feeds.insert(format!("w{l}"), Tensor::from_vec(&[i, o], wv).unwrap());
            feeds.insert(format!("b{l}"), Tensor::from_vec(&[o], bv).unwrap());
        }
    }
    (graph, feeds)
}

/// Layer `l`'s initial weights (Glorot uniform) and biases (zero).
fn init(l: usize) -> (Vec<f32>, Vec<f32>) {
    let (i, o) = (DIMS[l], DIMS[l + 1]);
    let scale = (6.0 / (i + o) as f32).sqrt();
    (uniform(i * o, 10 + l as u64, -scale, scale), vec![0.0; o])
}

#[allow(dead_code)]
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

/// The same MLP step as [`mlp_step`] (same inputs, same initial weights,
/// same `w -= lr * g` in-place updates) with the backward built by
/// autodiff and the updates by `vigil_train::Sgd`; weights and biases are
/// `Parameter`s, updated in place across runs.
#[allow(dead_code)]
pub fn mlp_step_autodiff() -> (Graph, HashMap<String, Tensor>) {
    let (_, hand_feeds) = mlp_step();
    let g = GraphBuilder::new("mlp_step_autodiff");
    let x = g.input("x", DType::F32, &[BATCH as i64, 784]);
    let labels = g.input("labels", DType::I64, &[BATCH as i64]);
    let mut h = x.clone();
    for l in 0..3 {
        let w = g.parameter(
            &format!("w{l}"),
            hand_feeds[&format!("w{l}")].deep_copy().unwrap(),
        );
        let b = g.parameter(
            &format!("b{l}"),
            hand_feeds[&format!("b{l}")].deep_copy().unwrap(),
        );
        h = h.matmul(&w).unwrap().add(&b).unwrap();
        if l < 2 {
            h = h.relu().unwrap();
        }
    }
    let loss = g
        .apply_named("loss", "cross_entropy", &[&h, &labels], Attrs::new())
        .unwrap()
        .remove(0);
    let forward = g.build(&[&loss]).unwrap();
    let step = vigil_train::build_step(&forward, "loss", &vigil_train::Sgd::new(0.01)).unwrap();
    let mut feeds: HashMap<String, Tensor> = ["x", "labels"]
        .iter()
        .map(|k| (k.to_string(), hand_feeds[*k].clone()))
        .collect();
    feeds.insert(
        "optim:lr".to_string(),
        Tensor::from_vec(&[1], vec![0.01f32]).unwrap(),
    );
    (step, feeds)
}
