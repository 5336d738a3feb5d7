//! Channels-last values: a conv whose output reaches a depthwise conv
//! through elementwise nodes writes it channels-last, the nodes after it
//! keep that layout, a 1×1 conv on a channels-last plane writes
//! channels-last (where the packed-weight kernel runs), and every result is
//! the C-order computation's.

mod common;

use std::collections::HashMap;

use vigil_engine::compare::{compare, Tolerance};
use vigil_engine::exec::Executor;
use vigil_engine::graph::{Graph, GraphBuilder, Sym};
use vigil_engine::kernels::packed_gemm;
use vigil_engine::{inplace, Attrs, DType, OpCtx, OpRegistry, Tensor};
use vigil_testkit::spread;

/// One inverted-residual block: expand (1×1), SiLU, depthwise
/// `k`×`k` with `stride`, SiLU, squeeze-and-excite, project (1×1).
struct Block {
    c: usize,
    e: usize,
    k: usize,
    stride: usize,
    hw: usize,
}

impl Block {
    fn weights(&self) -> Vec<(&'static str, Tensor)> {
        let (c, e, k, se) = (self.c, self.e, self.k, 4);
        vec![
            ("w_exp", spread(&[e, c, 1, 1], 1)),
            ("b_exp", spread(&[e], 2)),
            ("w_dw", spread(&[e, 1, k, k], 3)),
            ("b_dw", spread(&[e], 4)),
            ("w_se1", spread(&[se, e, 1, 1], 5)),
            ("b_se1", spread(&[se], 6)),
            ("w_se2", spread(&[e, se, 1, 1], 7)),
            ("b_se2", spread(&[e], 8)),
            ("w_proj", spread(&[c, e, 1, 1], 9)),
        ]
    }

    fn dw_attrs(&self) -> Attrs {
        let p = self.k / 2;
        Attrs::new()
            .with("group", self.e)
            .with("strides", vec![self.stride, self.stride])
            .with("pads", vec![p, p, p, p])
    }

    /// The block as a graph with the depthwise conv's output also an
    /// output, after the in-place pass.
    fn graph(&self) -> Graph {
        let g = GraphBuilder::new("block");
        let x = g.input(
            "x",
            DType::F32,
            &[1, self.c as i64, self.hw as i64, self.hw as i64],
        );
        let w: HashMap<&str, Sym> = self
            .weights()
            .into_iter()
            .map(|(n, t)| (n, g.constant(n, t)))
            .collect();
        let silu = |v: &Sym| {
            v.op(
                "mul",
                &[&v.op("sigmoid", &[], Attrs::new()).unwrap()],
                Attrs::new(),
            )
            .unwrap()
        };
        let e = x.op("conv", &[&w["w_exp"], &w["b_exp"]], Attrs::new()).unwrap();
        let dw = silu(&e)
            .op("conv", &[&w["w_dw"], &w["b_dw"]], self.dw_attrs())
            .unwrap();
        let a = silu(&dw);
        let s = a
            .op(
                "mean",
                &[],
                Attrs::new().with("axes", vec![2i64, 3]).with("keepdims", true),
            )
            .unwrap()
            .op("conv", &[&w["w_se1"], &w["b_se1"]], Attrs::new())
            .unwrap()
            .op("relu", &[], Attrs::new())
            .unwrap()
            .op("conv", &[&w["w_se2"], &w["b_se2"]], Attrs::new())
            .unwrap()
            .op("sigmoid", &[], Attrs::new())
            .unwrap();
        let y = a
            .op("mul", &[&s], Attrs::new())
            .unwrap()
            .op("conv", &[&w["w_proj"]], Attrs::new())
            .unwrap();
        inplace::run(&g.build(&[&y, &dw]).unwrap()).unwrap().graph
    }

    /// The block op by op on C-order values, without the executor.
    fn reference(&self, x: &Tensor) -> (Tensor, Tensor) {
        let reg = OpRegistry::builtin();
        let w: HashMap<&str, Tensor> = self.weights().into_iter().collect();
        let op = |name: &str, attrs: Attrs, ins: &[&Tensor]| -> Tensor {
            let ins: Vec<Tensor> = ins.iter().map(|t| t.to_contiguous().unwrap()).collect();
            let out = reg
                .make(name, &attrs)
                .unwrap()
                .compute(&ins, &mut OpCtx::new("ref"))
                .unwrap()
                .remove(0);
            assert!(
                out.is_contiguous(),
                "{name} wrote another layout without the hint"
            );
            out
        };
        let silu = |v: &Tensor| op("mul", Attrs::new(), &[v, &op("sigmoid", Attrs::new(), &[v])]);
        let e = op("conv", Attrs::new(), &[x, &w["w_exp"], &w["b_exp"]]);
        let dw = op("conv", self.dw_attrs(), &[&silu(&e), &w["w_dw"], &w["b_dw"]]);
        let a = silu(&dw);
        let m = op(
            "mean",
            Attrs::new().with("axes", vec![2i64, 3]).with("keepdims", true),
            &[&a],
        );
        let s1 = op(
            "relu",
            Attrs::new(),
            &[&op("conv", Attrs::new(), &[&m, &w["w_se1"], &w["b_se1"]])],
        );
        let s = op(
            "sigmoid",
            Attrs::new(),
            &[&op("conv", Attrs::new(), &[&s1, &w["w_se2"], &w["b_se2"]])],
        );
        let y = op(
            "conv",
            Attrs::new(),
            &[&op("mul", Attrs::new(), &[&a, &s]), &w["w_proj"]],
        );
        (y, dw)
    }
}

fn channels_last_strides(t: &Tensor) -> bool {
    let s = t.shape();
    t.strides()
        == [
            (s[1] * s[2] * s[3]) as isize,
            1,
            (s[3] * s[1]) as isize,
            s[1] as isize,
        ]
}

#[test]
fn a_block_runs_channels_last_between_its_convs_and_matches_the_c_order_ops() {
    let blocks = [
        Block {
            c: 8,
            e: 32,
            k: 3,
            stride: 1,
            hw: 10,
        },
        Block {
            c: 8,
            e: 24,
            k: 5,
            stride: 2,
            hw: 13,
        },
        // More channels than a vector, not a multiple of one, on a plane
        // large enough to split across the pool.
        Block {
            c: 16,
            e: 72,
            k: 3,
            stride: 1,
            hw: 40,
        },
    ];
    for b in &blocks {
        let graph = b.graph();
        let x = spread(&[1, b.c, b.hw, b.hw], 11);
        let feeds = HashMap::from([("x".to_string(), x.clone())]);
        let (want_y, want_dw) = b.reference(&x);
        for (how, out) in [
            ("plain", Executor::new(&graph).unwrap().run(&feeds).unwrap()),
            ("stepped", common::stepped(&graph, &feeds)),
        ] {
            let (y, dw) = (&out.outputs[0].1, &out.outputs[1].1);
            assert!(
                channels_last_strides(dw),
                "{how}, e {}: depthwise output strides {:?}",
                b.e,
                dw.strides()
            );
            // The projecting 1×1 conv reads the channels-last plane and,
            // through the packed kernel, keeps its layout.
            assert_eq!(
                channels_last_strides(y),
                packed_gemm::panel_width().is_some(),
                "{how}, e {}: projection strides {:?}",
                b.e,
                y.strides()
            );
            for (name, got, want) in [("y", y, &want_y), ("dw", dw, &want_dw)] {
                let cmp = compare(got, want, Tolerance::new(1e-5, 1e-5)).unwrap();
                assert!(cmp.is_close(), "{how}, e {}, {name}: {cmp:?}", b.e);
            }
        }
    }
}

#[test]
fn a_conv_not_followed_by_a_depthwise_conv_writes_c_order() {
    // A dense 3×3 conv, and a grouped one with four channels a group.
    for (group, w2) in [(1usize, [8, 8, 3, 3]), (2, [8, 4, 3, 3])] {
        let g = GraphBuilder::new("plain");
        let x = g.input("x", DType::F32, &[1, 4, 6, 6]);
        let w = g.constant("w", spread(&[8, 4, 1, 1], 1));
        let w2 = g.constant("w2", spread(&w2, 2));
        let e = x
            .op("conv", &[&w], Attrs::new())
            .unwrap()
            .op("relu", &[], Attrs::new())
            .unwrap();
        let attrs = Attrs::new().with("pads", vec![1, 1, 1, 1]).with("group", group);
        let y = e.op("conv", &[&w2], attrs).unwrap();
        let graph = inplace::run(&g.build(&[&y, &e]).unwrap()).unwrap().graph;
        let feeds = HashMap::from([("x".to_string(), spread(&[1, 4, 6, 6], 3))]);
        let out = Executor::new(&graph).unwrap().run(&feeds).unwrap();
        assert!(
            out.outputs.iter().all(|(_, t)| t.is_contiguous()),
            "group {group}"
        );
    }
}

#[test]
fn elementwise_ops_keep_a_channels_last_operand_channels_last() {
    let reg = OpRegistry::builtin();
    let shape = [2, 19, 5, 3];
    let c = spread(&shape, 1);
    let x = Tensor::uninit_in_order(DType::F32, &shape, &[0, 2, 3, 1]).unwrap();
    x.assign(&c).unwrap();
    let y = Tensor::uninit_in_order(DType::F32, &shape, &[0, 2, 3, 1]).unwrap();
    y.assign(&spread(&shape, 2)).unwrap();
    let bias = spread(&[19, 1, 1], 3);
    let run = |name: &str, ins: &[&Tensor]| {
        let ins: Vec<Tensor> = ins.iter().map(|t| (*t).clone()).collect();
        reg.make(name, &Attrs::new())
            .unwrap()
            .compute(&ins, &mut OpCtx::new("n"))
            .unwrap()
            .remove(0)
    };
    for (name, ins) in [
        ("sigmoid", vec![&x]),
        ("add", vec![&x, &y]),
        ("mul", vec![&x, &bias]),
        // The image second, as a squeeze-and-excite scale multiplies it
        // (the in-place twin then writes into the image).
        ("mul", vec![&bias, &x]),
    ] {
        let got = run(name, &ins);
        assert!(channels_last_strides(&got), "{name}: strides {:?}", got.strides());
        let plain: Vec<Tensor> = ins.iter().map(|t| t.to_contiguous().unwrap()).collect();
        let want = run(name, &plain.iter().collect::<Vec<_>>());
        let cmp = compare(&got, &want, Tolerance::new(0.0, 0.0)).unwrap();
        assert!(cmp.is_close(), "{name}: {cmp:?}");
    }
}

#[test]
fn a_stem_conv_writes_channels_last_for_the_depthwise_conv_after_it() {
    // An RGB stem (3×3, stride 2, through im2col blocks), SiLU, then a
    // depthwise 3×3; the stem's output is also a graph output.
    let reg = OpRegistry::builtin();
    let (w, b, wd) = (
        spread(&[16, 3, 3, 3], 1),
        spread(&[16], 2),
        spread(&[16, 1, 3, 3], 3),
    );
    let stem = Attrs::new()
        .with("strides", vec![2, 2])
        .with("pads", vec![1, 1, 1, 1]);
    let dw = Attrs::new().with("group", 16).with("pads", vec![1, 1, 1, 1]);
    let g = GraphBuilder::new("stem");
    let x = g.input("x", DType::F32, &[2, 3, 17, 17]);
    let (ws, bs, wds) = (
        g.constant("w", w.clone()),
        g.constant("b", b.clone()),
        g.constant("wd", wd.clone()),
    );
    let s = x.op("conv", &[&ws, &bs], stem.clone()).unwrap();
    let a = s
        .op(
            "mul",
            &[&s.op("sigmoid", &[], Attrs::new()).unwrap()],
            Attrs::new(),
        )
        .unwrap();
    let y = a.op("conv", &[&wds], dw.clone()).unwrap();
    let graph = inplace::run(&g.build(&[&y, &s]).unwrap()).unwrap().graph;
    let xv = spread(&[2, 3, 17, 17], 4);
    let out = Executor::new(&graph)
        .unwrap()
        .run(&HashMap::from([("x".to_string(), xv.clone())]))
        .unwrap();
    let op = |name: &str, attrs: &Attrs, ins: &[&Tensor]| {
        let ins: Vec<Tensor> = ins.iter().map(|t| (*t).clone()).collect();
        reg.make(name, attrs)
            .unwrap()
            .compute(&ins, &mut OpCtx::new("ref"))
            .unwrap()
            .remove(0)
    };
    let want_s = op("conv", &stem, &[&xv, &w, &b]);
    let silu = op(
        "mul",
        &Attrs::new(),
        &[&want_s, &op("sigmoid", &Attrs::new(), &[&want_s])],
    );
    let want_y = op("conv", &dw, &[&silu, &wd]);
    assert!(
        channels_last_strides(&out.outputs[1].1),
        "stem strides {:?}",
        out.outputs[1].1.strides()
    );
    for ((name, got), want) in out.outputs.iter().zip([&want_y, &want_s]) {
        let cmp = compare(got, want, Tolerance::new(1e-5, 1e-5)).unwrap();
        assert!(cmp.is_close(), "{name}: {cmp:?}");
    }
}
