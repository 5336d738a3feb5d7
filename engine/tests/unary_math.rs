//! The unary math ops added for ONNX against numpy values
//! (`scripts/unary_math_fixtures.py` writes `fixtures/unary_math.json`),
//! pure and in place.

use serde_json::Value;
use vigil_engine::compare::{compare, Tolerance};
use vigil_engine::{Attrs, DType, OpCtx, OpRegistry, Tensor};

fn tensor(v: &Value, dtype: DType) -> Tensor {
    // Non-finite values are strings ("nan", "inf", "-inf") in the fixture.
    let data: Vec<f64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap_or_else(|| x.as_str().unwrap().parse().unwrap()))
        .collect();
    match dtype {
        DType::F32 => Tensor::from_vec(&[data.len()], data.iter().map(|&x| x as f32).collect()).unwrap(),
        _ => Tensor::from_vec(&[data.len()], data).unwrap(),
    }
}

#[test]
fn every_op_matches_numpy_pure_and_in_place() {
    let reg = OpRegistry::builtin();
    let cases: Vec<Value> = serde_json::from_str(include_str!("fixtures/unary_math.json")).unwrap();
    assert_eq!(cases.len(), 36);
    for c in cases {
        let op = c["op"].as_str().unwrap();
        let dtype = if c["dtype"] == "f32" {
            DType::F32
        } else {
            DType::F64
        };
        let (x, want) = (tensor(&c["x"], dtype), tensor(&c["y"], dtype));
        // f32 tan/cosh/sinh/expm1 of the large inputs differ from numpy's in the last bits.
        let tol = if dtype == DType::F32 {
            Tolerance::new(2e-6, 1e-7)
        } else {
            Tolerance::new(1e-14, 1e-15)
        };
        let pure = reg.make(op, &Attrs::new()).unwrap();
        let got = pure
            .compute(std::slice::from_ref(&x), &mut OpCtx::new("u"))
            .unwrap()
            .remove(0);
        let cmp = compare(&got, &want, tol).unwrap();
        assert!(cmp.is_close(), "{op} {dtype}: {cmp:?}");
        let twin = pure.inplace_variants().remove(0).op;
        assert_eq!(twin.name(), format!("{op}_inplace"));
        let buf = x.deep_copy().unwrap();
        twin.compute(std::slice::from_ref(&buf), &mut OpCtx::new("u"))
            .unwrap();
        assert!(
            compare(&buf, &want, tol).unwrap().is_close(),
            "{op}_inplace {dtype}"
        );
    }
}

#[test]
fn sign_takes_integers_and_the_float_ops_refuse_them() {
    let reg = OpRegistry::builtin();
    let x = Tensor::from_vec(&[3], vec![-7i64, 0, 9]).unwrap();
    let got = reg
        .make("sign", &Attrs::new())
        .unwrap()
        .compute(std::slice::from_ref(&x), &mut OpCtx::new("s"))
        .unwrap()
        .remove(0);
    assert_eq!(got.to_array::<i64>().unwrap().as_slice().unwrap(), &[-1, 0, 1]);
    let ty = vigil_engine::TypeInfo::known(DType::I64, &[3]);
    let e = reg.make("erf", &Attrs::new()).unwrap().infer(&[ty]).unwrap_err();
    assert!(e.to_string().contains("i64"), "{e}");
}
