//! NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on small models
//! built in Rust, with losses worked out by hand.

use vigil_engine::{DType, Tensor};
use vigil_onnx::{import, ImportError, Options};
use vigil_testkit::onnx::*;

fn i64s(shape: &[usize], v: &[i64]) -> Tensor {
    Tensor::from_vec(shape, v.to_vec()).unwrap()
}

fn nll(reduction: &'static str, ignore: Option<i64>, weighted: bool) -> onnx_protobuf::ModelProto {
    let mut attrs = vec![("reduction", A::S(reduction))];
    if let Some(i) = ignore {
        attrs.push(("ignore_index", A::I(i)));
    }
    let mut ins = vec!["x", "t"];
    let mut vals = vec![value("x", DType::F32, &[3, 2]), value("t", DType::I64, &[3])];
    if weighted {
        ins.push("w");
        vals.push(value("w", DType::F32, &[2]));
    }
    model(
        13,
        vec![node("NegativeLogLikelihoodLoss", "nll", &ins, &["loss"], attrs)],
        vals,
        vec![],
        vec![value("loss", DType::F32, &[])],
    )
}

#[test]
fn nll_picks_each_target_weighs_it_and_skips_ignored_ones() {
    // Rows pick x[0][1] = 2, x[1][0] = 3 and (ignorable) x[2][1] = 6.
    let x = f32s(&[3, 2], &[1., 2., 3., 4., 5., 6.]);
    let t = i64s(&[3], &[1, 0, 1]);
    let w = f32s(&[2], &[10., 100.]);
    let feeds = |weighted: bool| {
        let mut f = vec![("x", x.clone()), ("t", t.clone())];
        if weighted {
            f.push(("w", w.clone()));
        }
        f
    };
    let loss = |r, i, wt| vals(&run(&nll(r, i, wt), &feeds(wt))[0].1);
    assert_eq!(loss("none", None, false), [-2., -3., -6.]);
    assert_eq!(loss("sum", None, false), [-11.]);
    assert!(close(&loss("mean", None, false), &[-11. / 3.]));
    // Weights 100, 10, 100: the mean divides by their sum.
    assert_eq!(loss("none", None, true), [-200., -30., -600.]);
    assert!(close(&loss("mean", None, true), &[-830. / 210.]));
    // Ignoring class 1 drops rows 0 and 2, from the sum and the count.
    assert_eq!(loss("none", Some(1), false), [0., -3., 0.]);
    assert_eq!(loss("mean", Some(1), false), [-3.]);
    assert_eq!(loss("mean", Some(1), true), [-3.]);
    // An ignore_index outside the classes is read nowhere.
    let t = i64s(&[3], &[-100, 0, 1]);
    let out = run(
        &nll("mean", Some(-100), true),
        &[("x", x.clone()), ("t", t), ("w", w)],
    );
    assert!(close(&vals(&out[0].1), &[-630. / 110.]), "{:?}", vals(&out[0].1));
}

#[test]
fn softmax_cross_entropy_binds_log_prob_and_refuses_bad_reductions() {
    let m = |reduction: &'static str| {
        model(
            13,
            vec![node(
                "SoftmaxCrossEntropyLoss",
                "sce",
                &["x", "t"],
                &["loss", "log_prob"],
                vec![("reduction", A::S(reduction))],
            )],
            vec![value("x", DType::F32, &[2, 2]), value("t", DType::I64, &[2])],
            vec![],
            vec![
                value("loss", DType::F32, &[]),
                value("log_prob", DType::F32, &[2, 2]),
            ],
        )
    };
    // Equal scores: log_prob is -ln 2 everywhere, so the loss is ln 2.
    let x = f32s(&[2, 2], &[0., 0., 5., 5.]);
    let out = run(&m("mean"), &[("x", x), ("t", i64s(&[2], &[0, 1]))]);
    let ln2 = std::f64::consts::LN_2;
    assert!(close(&vals(&out[0].1), &[ln2]), "{:?}", vals(&out[0].1));
    assert!(close(&vals(&out[1].1), &[-ln2; 4]), "{:?}", vals(&out[1].1));
    let e = import(&round_trip(&m("avg")), &Options::default()).unwrap_err();
    assert!(
        matches!(&e, ImportError::BadAttr { node, attr, msg, .. }
            if node == "sce" && attr == "reduction" && msg.contains("'avg'")),
        "{e:?}"
    );
    assert!(!e.to_string().contains('\n'), "{e}");
}
