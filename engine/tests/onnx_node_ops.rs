//! The ops added for the ONNX node tests, against values worked out by
//! hand (numpy's results for the same calls), pure and in place.

use vigil_engine::{Attrs, OpCtx, OpRegistry, Tensor};

fn run(op: &str, attrs: Attrs, ins: &[Tensor]) -> vigil_engine::Result<Tensor> {
    let op = OpRegistry::builtin().make(op, &attrs)?;
    let types: Vec<_> = ins
        .iter()
        .map(|t| vigil_engine::TypeInfo::known(t.dtype(), t.shape()))
        .collect();
    let want = op.infer(&types)?.remove(0);
    let out = op.compute(ins, &mut OpCtx::new("n"))?.remove(0);
    assert!(
        want.admits(out.shape()),
        "{} inferred {want:?}, made {:?}",
        op.name(),
        out.shape()
    );
    Ok(out)
}

fn f64s(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().unwrap()
}

fn x23() -> Tensor {
    Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap()
}

#[test]
fn pad_modes_match_np_pad() {
    let pad = |mode: &str, pads: Vec<i64>| {
        let a = Attrs::new()
            .with("pads", pads)
            .with("mode", mode)
            .with("value", 9.0);
        run("pad", a, &[x23()]).unwrap()
    };
    // np.pad(x, ((0, 0), (2, 1)), 'constant', constant_values=9)
    let c = pad("constant", vec![0, 2, 0, 1]);
    assert_eq!(c.shape(), [2, 6]);
    assert_eq!(f64s(&c), [9., 9., 1., 2., 3., 9., 9., 9., 4., 5., 6., 9.]);
    // np.pad(x, ((0, 0), (2, 1)), 'reflect'), 'edge', 'wrap'
    assert_eq!(
        f64s(&pad("reflect", vec![0, 2, 0, 1])),
        [3., 2., 1., 2., 3., 2., 6., 5., 4., 5., 6., 5.]
    );
    assert_eq!(
        f64s(&pad("edge", vec![0, 2, 0, 1])),
        [1., 1., 1., 2., 3., 3., 4., 4., 4., 5., 6., 6.]
    );
    assert_eq!(
        f64s(&pad("wrap", vec![0, 2, 0, 1])),
        [2., 3., 1., 2., 3., 1., 5., 6., 4., 5., 6., 4.]
    );
    // Negative pads crop: x[1:, :-1] padded by one row of 9 before.
    let crop = pad("constant", vec![-1, 0, 1, -1]);
    assert_eq!(crop.shape(), [2, 2]);
    assert_eq!(f64s(&crop), [4., 5., 9., 9.]);
    let e = run("pad", Attrs::new().with("pads", vec![1, 1]), &[x23()]).unwrap_err();
    assert!(e.to_string().contains("a rank-2 input needs 4"), "{e}");
}

#[test]
fn tile_matches_np_tile_for_every_dtype() {
    let t = run("tile", Attrs::new().with("repeats", vec![2, 2]), &[x23()]).unwrap();
    assert_eq!(t.shape(), [4, 6]);
    assert_eq!(&f64s(&t)[..6], [1., 2., 3., 1., 2., 3.]);
    assert_eq!(&f64s(&t)[18..], [4., 5., 6., 4., 5., 6.]);
    let b = Tensor::from_vec(&[2], vec![true, false]).unwrap();
    let tb = run("tile", Attrs::new().with("repeats", vec![3]), &[b]).unwrap();
    assert_eq!(
        tb.to_array::<bool>().unwrap().iter().copied().collect::<Vec<_>>(),
        [true, false, true, false, true, false]
    );
    let zero = run("tile", Attrs::new().with("repeats", vec![0, 1]), &[x23()]).unwrap();
    assert_eq!(zero.shape(), [0, 3]);
}

#[test]
fn activations_follow_the_onnx_formulas_pure_and_in_place() {
    let x = || Tensor::from_vec(&[5], vec![-2.0f64, -0.5, 0.0, 0.5, 3.0]).unwrap();
    let e = |v: f64| v.exp() - 1.0;
    let (sa, sg) = (1.673_263_192_176_818_8, 1.050_701_022_148_132_3);
    let cases: Vec<(&str, Attrs, Vec<f64>)> = vec![
        (
            "elu",
            Attrs::new().with("alpha", 2.0),
            vec![2.0 * e(-2.0), 2.0 * e(-0.5), 0.0, 0.5, 3.0],
        ),
        (
            "celu",
            Attrs::new().with("alpha", 2.0),
            vec![2.0 * e(-1.0), 2.0 * e(-0.25), 0.0, 0.5, 3.0],
        ),
        (
            "selu",
            Attrs::new(),
            vec![sg * sa * e(-2.0), sg * sa * e(-0.5), 0.0, sg * 0.5, sg * 3.0],
        ),
        ("hard_sigmoid", Attrs::new(), vec![0.1, 0.4, 0.5, 0.6, 1.0]),
        (
            "hard_swish",
            Attrs::new(),
            vec![-2.0 / 6.0, -0.5 * (5.0 / 12.0), 0.0, 0.5 * (0.5 / 6.0 + 0.5), 3.0],
        ),
        (
            "softsign",
            Attrs::new(),
            vec![-2.0 / 3.0, -0.5 / 1.5, 0.0, 0.5 / 1.5, 0.75],
        ),
        (
            "thresholded_relu",
            Attrs::new().with("alpha", 0.4),
            vec![0.0, 0.0, 0.0, 0.5, 3.0],
        ),
        (
            "mish",
            Attrs::new(),
            [-2.0f64, -0.5, 0.0, 0.5, 3.0]
                .map(|v| v * v.exp().ln_1p().tanh())
                .to_vec(),
        ),
    ];
    for (op, attrs, want) in cases {
        let pure = f64s(&run(op, attrs.clone(), &[x()]).unwrap());
        let xi = x();
        let inplace = run(&format!("{op}_inplace"), attrs, std::slice::from_ref(&xi)).unwrap();
        assert!(inplace.same_buffer(&xi), "{op}_inplace must overwrite its input");
        for (got, w) in [(pure, &want), (f64s(&inplace), &want)] {
            let ok = got
                .iter()
                .zip(w.iter())
                .all(|(a, b)| (a - b).abs() <= 1e-12 * b.abs().max(1.0));
            assert!(ok, "{op}: {got:?} != {w:?}");
        }
    }
    let e = run("elu", Attrs::new(), &[Tensor::from_i64s(&[1])]).unwrap_err();
    assert!(e.to_string().contains("takes float inputs"), "{e}");
}

#[test]
fn prelu_broadcasts_its_slope_into_x() {
    let x = Tensor::from_vec(&[2, 2], vec![-1i64, 2, -3, 4]).unwrap();
    let slope = Tensor::from_vec(&[2], vec![10i64, 100]).unwrap();
    let y = run("prelu", Attrs::new(), &[x.clone(), slope.clone()]).unwrap();
    assert_eq!(f64s(&y), [-10., 2., -30., 4.]);
    run("prelu_inplace", Attrs::new(), &[x.clone(), slope]).unwrap();
    assert_eq!(f64s(&x), [-10., 2., -30., 4.]);
    let wide = Tensor::from_vec(&[3], vec![1i64, 2, 3]).unwrap();
    assert!(run("prelu", Attrs::new(), &[x, wide]).is_err());
}

#[test]
fn logical_ops_broadcast_bools() {
    let a = Tensor::from_vec(&[2, 2], vec![true, true, false, false]).unwrap();
    let b = Tensor::from_vec(&[2], vec![true, false]).unwrap();
    let bools = |t: Tensor| t.to_array::<bool>().unwrap().iter().copied().collect::<Vec<_>>();
    assert_eq!(
        bools(run("and", Attrs::new(), &[a.clone(), b.clone()]).unwrap()),
        [true, false, false, false]
    );
    assert_eq!(
        bools(run("or", Attrs::new(), &[a.clone(), b.clone()]).unwrap()),
        [true, true, true, false]
    );
    assert_eq!(
        bools(run("xor", Attrs::new(), &[a.clone(), b]).unwrap()),
        [false, true, true, false]
    );
    assert_eq!(
        bools(run("not", Attrs::new(), &[a]).unwrap()),
        [false, false, true, true]
    );
    assert!(run("not", Attrs::new(), &[x23()]).is_err());
}

#[test]
fn integer_division_truncates_and_mod_follows_numpy() {
    let a = Tensor::from_vec(&[4], vec![-7i32, 7, -7, 7]).unwrap();
    let b = Tensor::from_vec(&[4], vec![2i32, -2, -2, 0]).unwrap();
    assert_eq!(
        f64s(&run("div_trunc", Attrs::new(), &[a.clone(), b.clone()]).unwrap()),
        [-3., -3., 3., 0.]
    );
    assert_eq!(
        f64s(&run("mod", Attrs::new(), &[a.clone(), b.clone()]).unwrap()),
        [1., -1., -1., 0.]
    );
    let fmod = Attrs::new().with("fmod", true);
    assert_eq!(f64s(&run("mod", fmod, &[a, b]).unwrap()), [-1., 1., -1., 0.]);
    let f = Tensor::from_vec(&[1], vec![1.5f64]).unwrap();
    assert!(run("div_trunc", Attrs::new(), &[f.clone(), f]).is_err());
}

#[test]
fn argmin_and_select_last_pick_the_right_tie() {
    let x = Tensor::from_vec(&[2, 3], vec![3.0f64, 1.0, 1.0, 5.0, 5.0, 2.0]).unwrap();
    let arg = |op: &str, last: bool| {
        let a = Attrs::new().with("axis", 1).with("select_last", last);
        f64s(&run(op, a, std::slice::from_ref(&x)).unwrap())
    };
    assert_eq!(arg("argmin", false), [1., 2.]);
    assert_eq!(arg("argmin", true), [2., 2.]);
    assert_eq!(arg("argmax", false), [0., 0.]);
    assert_eq!(arg("argmax", true), [0., 1.]);
}
