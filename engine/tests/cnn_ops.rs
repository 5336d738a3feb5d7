//! conv, the pools, batch_norm and lrn against numpy-computed values
//! (`scripts/cnn_op_fixtures.py` writes `fixtures/cnn_ops.json`).

use serde_json::Value;
use vigil_engine::compare::{compare, Tolerance};
use vigil_engine::{Attrs, DType, OpCtx, OpRegistry, Tensor};

fn tensor(v: &Value, dtype: DType) -> Tensor {
    let shape: Vec<usize> = serde_json::from_value(v["shape"].clone()).unwrap();
    let data: Vec<f64> = serde_json::from_value(v["data"].clone()).unwrap();
    match dtype {
        DType::F32 => Tensor::from_vec(&shape, data.iter().map(|&x| x as f32).collect()).unwrap(),
        _ => Tensor::from_vec(&shape, data).unwrap(),
    }
}

fn cases() -> Vec<Value> {
    let text = include_str!("fixtures/cnn_ops.json");
    serde_json::from_str(text).unwrap()
}

fn dtype_of(v: &Value) -> DType {
    if v["dtype"] == "f64" {
        DType::F64
    } else {
        DType::F32
    }
}

#[test]
fn every_case_matches_numpy() {
    let reg = OpRegistry::builtin();
    let all = cases();
    assert_eq!(all.len(), 12);
    for c in all {
        let name = c["name"].as_str().unwrap();
        let attrs: Attrs = serde_json::from_value(c["attrs"].clone()).unwrap();
        let op = reg.make(c["op"].as_str().unwrap(), &attrs).unwrap();
        let ins: Vec<Tensor> = c["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| tensor(i, dtype_of(i)))
            .collect();
        let dtype = ins[0].dtype();
        let want = tensor(&c["expected"], dtype);
        // Static inference agrees with the computed shape.
        let tys: Vec<_> = ins
            .iter()
            .map(|t| vigil_engine::TypeInfo::known(t.dtype(), t.shape()))
            .collect();
        let inferred = op.infer(&tys).unwrap().remove(0);
        let got = op.compute(&ins, &mut OpCtx::new(name)).unwrap().remove(0);
        assert_eq!(got.shape(), want.shape(), "{name}");
        assert!(
            inferred.admits(got.shape()),
            "{name}: inferred {:?}",
            inferred.shape
        );
        let cmp = compare(&got, &want, Tolerance::new(1e-5, 1e-6)).unwrap();
        assert!(cmp.is_close(), "{name}: {cmp:?}");
    }
}

#[test]
fn conv_writes_into_a_transposed_caller_buffer() {
    let reg = OpRegistry::builtin();
    let c = &cases()[1]; // conv_pointwise_f64: output [2, 4, 2, 2]
    let ins: Vec<Tensor> = c["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| tensor(i, DType::F64))
        .collect();
    let want = tensor(&c["expected"], DType::F64);
    let op = reg.make("conv", &Attrs::new()).unwrap();
    let buf = Tensor::zeros(DType::F64, &[2, 2, 4, 2])
        .unwrap()
        .permute(&[3, 2, 1, 0])
        .unwrap();
    let buf = buf
        .permute(&[3, 2, 1, 0])
        .unwrap()
        .permute(&[0, 2, 1, 3])
        .unwrap();
    assert!(!buf.is_contiguous());
    let got = op
        .compute(&ins, &mut OpCtx::with_prealloc("c", vec![Some(buf.clone())]))
        .unwrap()
        .remove(0);
    assert!(got.same_buffer(&buf));
    assert!(compare(&got, &want, Tolerance::new(1e-12, 0.0))
        .unwrap()
        .is_close());
}

#[test]
fn batch_norm_inplace_overwrites_its_input_with_the_pure_result() {
    let reg = OpRegistry::builtin();
    let c = cases().into_iter().find(|c| c["name"] == "batch_norm").unwrap();
    let attrs: Attrs = serde_json::from_value(c["attrs"].clone()).unwrap();
    let ins: Vec<Tensor> = c["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| tensor(i, DType::F32))
        .collect();
    let pure = reg.make("batch_norm", &attrs).unwrap();
    let inplace = pure.inplace_variants().remove(0).op;
    assert_eq!(inplace.name(), "batch_norm_inplace");
    assert_eq!(inplace.destroy_map(), vec![(0, 0)]);
    assert_eq!(inplace.pure_twin().unwrap().name(), "batch_norm");
    let x = ins[0].deep_copy().unwrap();
    let mut args = ins.clone();
    args[0] = x.clone();
    let got = inplace.compute(&args, &mut OpCtx::new("bn")).unwrap().remove(0);
    assert!(got.same_buffer(&x));
    let want = tensor(&c["expected"], DType::F32);
    assert!(compare(&x, &want, Tolerance::new(1e-5, 1e-6)).unwrap().is_close());
}

/// A `[N, C, H, W]` view over a `[W, H, C, N]` buffer (no axis contiguous
/// in C order), and its contiguous copy.
fn transposed_and_copy(shape: [usize; 4], seed: usize) -> (Tensor, Tensor) {
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n)
        .map(|i| ((i * 7919 + seed) % 211) as f32 / 21.0 - 5.0)
        .collect();
    let rev: Vec<usize> = shape.iter().rev().copied().collect();
    let t = Tensor::from_vec(&rev, data)
        .unwrap()
        .permute(&[3, 2, 1, 0])
        .unwrap();
    assert!(!t.is_contiguous());
    let c = t.deep_copy().unwrap();
    assert!(c.is_contiguous());
    (t, c)
}

#[test]
fn window_ops_read_non_contiguous_inputs_as_their_contiguous_copies() {
    let reg = OpRegistry::builtin();
    let (x, xc) = transposed_and_copy([2, 4, 7, 6], 1);
    let (w, wc) = transposed_and_copy([6, 2, 3, 3], 2);
    let v = |s: usize| Tensor::from_vec(&[4], (0..4).map(|i| 0.5 + (i * s) as f32 / 7.0).collect()).unwrap();
    let window = Attrs::new()
        .with("strides", vec![2, 1])
        .with("pads", vec![1, 0, 1, 2])
        .with("dilations", vec![1, 2]);
    let pool = window.clone().with("kernel_shape", vec![3, 2]);
    let cases: Vec<(&str, Attrs, Vec<Tensor>, Vec<Tensor>)> = vec![
        (
            "conv",
            window.clone().with("group", 2),
            vec![x.clone(), w],
            vec![xc.clone(), wc],
        ),
        ("max_pool", pool.clone(), vec![x.clone()], vec![xc.clone()]),
        (
            "average_pool",
            pool.with("count_include_pad", 1),
            vec![x.clone()],
            vec![xc.clone()],
        ),
        (
            "batch_norm",
            Attrs::new(),
            vec![x.clone(), v(1), v(2), v(3), v(4)],
            vec![xc.clone(), v(1), v(2), v(3), v(4)],
        ),
        ("relu", Attrs::new(), vec![x], vec![xc]),
    ];
    for (name, attrs, strided, contiguous) in cases {
        let op = reg.make(name, &attrs).unwrap();
        let got = op.compute(&strided, &mut OpCtx::new(name)).unwrap().remove(0);
        let want = op.compute(&contiguous, &mut OpCtx::new(name)).unwrap().remove(0);
        assert_eq!(got.shape(), want.shape(), "{name}");
        let cmp = compare(&got, &want, Tolerance::new(0.0, 0.0)).unwrap();
        assert!(cmp.is_close(), "{name}: {cmp:?}");
    }
}

#[test]
fn bad_shapes_and_attrs_are_refused_with_the_field() {
    let reg = OpRegistry::builtin();
    let x = Tensor::zeros(DType::F32, &[1, 3, 4, 4]).unwrap();
    let w = Tensor::zeros(DType::F32, &[4, 2, 3, 3]).unwrap();
    let conv = reg.make("conv", &Attrs::new().with("group", 2)).unwrap();
    let e = conv.compute(&[x.clone(), w], &mut OpCtx::new("c")).unwrap_err();
    assert!(e.to_string().contains("group 2"), "{e}");
    let e = reg.make("max_pool", &Attrs::new()).err().unwrap();
    assert!(e.to_string().contains("kernel_shape"), "{e}");
    let e = reg.make("lrn", &Attrs::new().with("size", 0)).err().unwrap();
    assert!(e.to_string().contains("'size'"), "{e}");
    let pool = reg
        .make("average_pool", &Attrs::new().with("kernel_shape", vec![5, 5]))
        .unwrap();
    let e = pool
        .compute(std::slice::from_ref(&x), &mut OpCtx::new("p"))
        .unwrap_err();
    assert!(e.to_string().contains("spans 5"), "{e}");
    let i = Tensor::zeros(DType::I64, &[1, 3, 4, 4]).unwrap();
    assert!(pool
        .infer(&[vigil_engine::TypeInfo::known(DType::I64, &[1, 3, 4, 4])])
        .is_err());
    let maxp = reg
        .make("max_pool", &Attrs::new().with("kernel_shape", vec![2, 2]))
        .unwrap();
    let got = maxp.compute(&[i], &mut OpCtx::new("m")).unwrap().remove(0);
    assert_eq!(got.shape(), &[1, 3, 3, 3]);
}

/// batch_norm's `infer` refuses parameters that are not `[C]` with a shape
/// error, as its kernel does at run time, so a graph that would fail in
/// the run fails when it is built.
#[test]
fn batch_norm_infer_refuses_parameters_that_are_not_per_channel() {
    use vigil_engine::TypeInfo;
    let reg = OpRegistry::builtin();
    let t = |s: &[usize]| TypeInfo::known(DType::F32, s);
    for name in ["batch_norm", "batch_norm_inplace"] {
        let op = reg.make(name, &Attrs::new()).unwrap();
        let ok = [t(&[2, 3, 4]), t(&[3]), t(&[3]), t(&[3]), t(&[3])];
        assert_eq!(op.infer(&ok).unwrap()[0], t(&[2, 3, 4]));
        for bad in [vec![2, 1, 1, 1], vec![4], vec![]] {
            let mut inputs = ok.clone();
            inputs[1] = t(&bad);
            let e = op.infer(&inputs).unwrap_err();
            assert!(matches!(e, vigil_engine::Error::Shape(_)), "{name} {bad:?}: {e}");
        }
        // An unknown channel count is checked at run time.
        let mut dynamic = ok.clone();
        dynamic[0] = TypeInfo::new(DType::F32, Some(vec![2, -1, 4]));
        assert!(op.infer(&dynamic).is_ok());
    }
}
