//! Attribute strategies: the built-in ops give no attribute schema (a
//! factory reads what it knows from `Attrs`), so this table says, per op
//! name, which attributes to try. An op it does not name is made with no
//! attributes. Values are picked where the op's `infer` has a fair chance
//! of taking them for ranks 0-4 and dimensions 0-3; what it refuses is a
//! refused sample, not a failure. Proptest shrinks toward the first
//! choice (the defaults, when the op has them).

use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use serde_json::{json, Value};
use vigil_engine::ops::Attrs;

/// The attributes to try for op `op`.
pub fn strategy(op: &str) -> BoxedStrategy<Attrs> {
    let none = || Just(Attrs::new()).boxed();
    match op {
        // Required attributes.
        "reshape" => shape_list(true).prop_map(|s| one("shape", s)).boxed(),
        "broadcast_to" => shape_list(false).prop_map(|s| one("shape", s)).boxed(),
        "expand_dims" => (-5i64..=4).prop_map(|a| one("axis", json!(a))).boxed(),
        "cast" | "bitcast" => dtype().prop_map(|d| one("dtype", d)).boxed(),
        "full" => (shape_list(false), dtype(), -2i64..=2)
            .prop_map(|(s, d, v)| Attrs::new().with("shape", s).with("dtype", d).with("value", v))
            .boxed(),
        "random_uniform" | "random_normal" => (
            shape_list(false),
            prop::sample::select(vec!["f32", "f64"]),
            0i64..4,
        )
            .prop_map(|(s, d, seed)| Attrs::new().with("shape", s).with("dtype", d).with("seed", seed))
            .boxed(),
        "einsum" => prop::sample::select(vec![
            "i->i",
            "ij->ji",
            "ij->",
            "ii->i",
            "ij,jk->ik",
            "i,i->",
            "i,j->ij",
            "bij,bjk->bik",
            "...i,...i->...",
            "ij,ij->ij",
        ])
        .prop_map(|e| one("equation", json!(e)))
        .boxed(),
        "tile" => prop::collection::vec(0i64..=3, 0..=4)
            .prop_map(|r| one("repeats", json!(r)))
            .boxed(),
        "top_k" => (
            0i64..=3,
            prop::option::of(-4i64..=3),
            prop::option::of(any::<bool>()),
        )
            .prop_map(|(k, axis, largest)| {
                let mut a = one("k", json!(k));
                if let Some(x) = axis {
                    a = a.with("axis", x);
                }
                if let Some(l) = largest {
                    a = a.with("largest", l);
                }
                a
            })
            .boxed(),
        "lrn" => (
            prop::sample::select(vec![1i64, 3, 5]),
            prop::option::of(0.5f64..2.0),
        )
            .prop_map(|(size, beta)| {
                let a = one("size", json!(size));
                match beta {
                    Some(b) => a.with("beta", b).with("alpha", 1e-3).with("bias", 1.5),
                    None => a,
                }
            })
            .boxed(),
        "pad" => (
            prop::collection::vec(-1i64..=2, 0..=8),
            prop::sample::select(vec!["constant", "reflect", "edge", "wrap"]),
        )
            .prop_map(|(p, m)| Attrs::new().with("pads", p).with("mode", m))
            .boxed(),
        "resize" => (
            prop::collection::vec(0usize..=4, 0..=4),
            prop::sample::select(vec!["nearest", "linear", "cubic"]),
            prop::sample::select(vec![
                "half_pixel",
                "align_corners",
                "asymmetric",
                "pytorch_half_pixel",
            ]),
        )
            .prop_map(|(sizes, mode, ctm)| {
                Attrs::new()
                    .with("sizes", sizes)
                    .with("mode", mode)
                    .with("coordinate_transformation_mode", ctm)
            })
            .boxed(),
        "max_pool" | "average_pool" => window(true).boxed(),
        "spectral_window" => (
            prop::sample::select(vec!["hann", "hamming", "blackman"]),
            any::<bool>(),
        )
            .prop_map(|(k, p)| Attrs::new().with("kind", k).with("periodic", p))
            .boxed(),
        "linear_attention" => (
            1i64..=2,
            1i64..=2,
            prop::sample::select(vec!["linear", "gated", "delta", "gated_delta"]),
        )
            .prop_map(|(kv, group, rule)| {
                Attrs::new()
                    .with("q_num_heads", kv * group)
                    .with("kv_num_heads", kv)
                    .with("update_rule", rule)
            })
            .boxed(),
        "max_unpool" => prop::collection::vec(1i64..=2, 1..=2)
            .prop_map(|k| one("kernel_shape", json!(k)))
            .boxed(),
        // A pool of two unigrams and two bigrams of 0s and 1s (what sampled
        // integers hold often), counted with and without skips.
        "tfidf_vectorizer" => (
            prop::sample::select(vec!["TF", "IDF", "TFIDF"]),
            1i64..=2,
            0i64..=2,
        )
            .prop_map(|(mode, min, skip)| {
                Attrs::new()
                    .with("mode", mode)
                    .with("min_gram_length", min)
                    .with("max_gram_length", 2)
                    .with("max_skip_count", skip)
                    .with("ngram_counts", json!([0, 2]))
                    .with("ngram_indexes", json!([0, 1, 2, 3]))
                    .with("pool_int64s", json!([0, 1, 0, 1, 1, 1]))
            })
            .boxed(),
        // One tree on feature 0: a split at 0 by each comparison mode, or
        // membership in {0, 1}, two leaves on two targets.
        "tree_ensemble" => (
            0i64..=6,
            prop::sample::select(vec!["sum", "average", "min", "max"]),
        )
            .prop_map(|(mode, agg)| {
                Attrs::new()
                    .with("nodes_featureids", json!([0]))
                    .with("nodes_modes", json!([mode]))
                    .with("nodes_splits", json!([0.0]))
                    .with("nodes_truenodeids", json!([0]))
                    .with("nodes_falsenodeids", json!([1]))
                    .with("nodes_trueleafs", json!([1]))
                    .with("nodes_falseleafs", json!([1]))
                    .with("leaf_targetids", json!([0, 1]))
                    .with("leaf_weights", json!([1.5, -2.0]))
                    .with("tree_roots", json!([0]))
                    .with("n_targets", 2)
                    .with("aggregate", agg)
                    .with(
                        "membership_values",
                        if mode == 6 {
                            json!([0.0, 1.0, "nan"])
                        } else {
                            json!([])
                        },
                    )
            })
            .boxed(),
        "rnn" | "gru" | "lstm" => (
            1i64..=3,
            prop::sample::select(vec!["forward", "reverse", "bidirectional"]),
        )
            .prop_map(|(h, d)| Attrs::new().with("hidden_size", h).with("direction", d))
            .boxed(),
        // Optional attributes.
        "conv" | "conv_transpose" => prop_oneof![2 => none(), 3 => window(false)]
            .prop_flat_map(|w| {
                (Just(w), prop::sample::select(vec![1i64, 1, 2])).prop_map(|(w, g)| {
                    if g == 1 {
                        w
                    } else {
                        w.with("group", g)
                    }
                })
            })
            .boxed(),
        "sum" | "prod" | "mean" | "max" | "min" => prop_oneof![
            none(),
            (prop::collection::vec(-4i64..=3, 0..=2), any::<bool>())
                .prop_map(|(axes, k)| Attrs::new().with("axes", axes).with("keepdims", k))
        ]
        .boxed(),
        "argmax" | "argmin" => prop_oneof![
            none(),
            (-4i64..=3, any::<bool>(), any::<bool>()).prop_map(|(a, k, l)| Attrs::new()
                .with("axis", a)
                .with("keepdims", k)
                .with("select_last", l))
        ]
        .boxed(),
        "softmax" | "log_softmax" | "hardmax" | "gather" | "concat" | "stack" | "gather_elements" => {
            prop_oneof![none(), (-4i64..=3).prop_map(|a| one("axis", json!(a)))].boxed()
        }
        "cumsum" | "cumprod" => prop_oneof![
            none(),
            (-4i64..=3, any::<bool>(), any::<bool>()).prop_map(|(a, e, r)| Attrs::new()
                .with("axis", a)
                .with("exclusive", e)
                .with("reverse", r))
        ]
        .boxed(),
        "transpose" => prop_oneof![
            none(),
            (0usize..=4)
                .prop_flat_map(|n| Just((0..n as i64).collect::<Vec<_>>()).prop_shuffle())
                .prop_map(|p| one("perm", json!(p)))
        ]
        .boxed(),
        "squeeze" => prop_oneof![
            none(),
            prop::collection::vec(-4i64..=3, 0..=2).prop_map(|a| one("axes", json!(a)))
        ]
        .boxed(),
        "trilu" => prop_oneof![
            none(),
            (any::<bool>(), -2i64..=2).prop_map(|(u, k)| Attrs::new().with("upper", u).with("k", k))
        ]
        .boxed(),
        "mod" => prop_oneof![none(), Just(one("fmod", json!(true)))].boxed(),
        "scatter_elements" => prop_oneof![
            none(),
            (
                -4i64..=3,
                prop::sample::select(vec!["none", "add", "mul", "max", "min"])
            )
                .prop_map(|(a, r)| Attrs::new().with("axis", a).with("reduction", r))
        ]
        .boxed(),
        "group_norm" | "group_norm_inplace" => (1i64..=3).prop_map(|g| one("num_groups", json!(g))).boxed(),
        "one_hot" => (1i64..=4).prop_map(|d| one("depth", json!(d))).boxed(),
        "layer_norm" | "rms_norm" => {
            prop_oneof![none(), (-4i64..=3).prop_map(|a| one("axis", json!(a)))].boxed()
        }
        _ => none(),
    }
}

fn one(key: &str, v: impl Into<Value>) -> Attrs {
    Attrs::new().with(key, v.into())
}

fn dtype() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["f32", "f64", "i64", "i32", "bool", "u8", "f16"])
}

/// A target shape of rank 0-4 (with `wildcards`, `-1` and `0` entries too).
fn shape_list(wildcards: bool) -> impl Strategy<Value = Vec<i64>> {
    let lo: i64 = if wildcards { -1 } else { 0 };
    prop::collection::vec(prop_oneof![3 => 1i64..=3, 1 => lo..=0], 0..=4)
}

/// Window attributes for 1 or 2 spatial axes (with `kernel`, a
/// `kernel_shape`, which the pools need and conv reads from its weight).
fn window(kernel: bool) -> impl Strategy<Value = Attrs> {
    (1usize..=2).prop_flat_map(move |n| {
        (
            prop::collection::vec(1i64..=3, n),
            prop::option::of(prop::collection::vec(1i64..=2, n)),
            prop::option::of(prop::collection::vec(1i64..=2, n)),
            prop::option::of(prop::collection::vec(0i64..=1, 2 * n)),
            prop::sample::select(vec!["NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"]),
            any::<bool>(),
        )
            .prop_map(move |(k, s, d, p, auto, extra)| {
                let mut a = Attrs::new();
                if kernel {
                    a = a.with("kernel_shape", k);
                }
                if let Some(s) = s {
                    a = a.with("strides", s);
                }
                if let Some(d) = d {
                    a = a.with("dilations", d);
                }
                match p {
                    Some(p) if auto == "NOTSET" => a = a.with("pads", p),
                    _ if auto != "NOTSET" => a = a.with("auto_pad", auto),
                    _ => {}
                }
                if kernel && extra {
                    a = a.with("ceil_mode", 1);
                }
                a
            })
    })
}
