//! bf16 and the formats smaller than f16 (float8, float4, e8m0, 4- and
//! 2-bit integers) end to end: names, casts with and without `saturate`,
//! quantization into them and back, ops computed through f32, .npy
//! writing (widened), graph.json constants and comparison.
//!
//! Expected values follow ONNX's definitions of the formats (its Cast
//! tables and reference implementation), written here as numbers.

use vigil_engine::compare::{compare, ulp_distance, Tolerance};
use vigil_engine::small::{F8E4M3Fn, F4E2M1, F8E5M2, I4, U2};
use vigil_engine::{bf16, Attrs, DType, Element, Error, OpCtx, OpRegistry, Tensor, TypeInfo};

/// Runs the builtin op `name` on `inputs`.
fn op(name: &str, attrs: Attrs, inputs: &[Tensor]) -> vigil_engine::Result<Tensor> {
    let op = OpRegistry::builtin().make(name, &attrs)?;
    Ok(op.compute(inputs, &mut OpCtx::new("n"))?.remove(0))
}

fn f32s(v: &[f32]) -> Tensor {
    Tensor::from_vec(&[v.len()], v.to_vec()).unwrap()
}

fn wide(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().unwrap()
}

const NEW: [DType; 11] = [
    DType::BF16,
    DType::F8E4M3FN,
    DType::F8E4M3FNUZ,
    DType::F8E5M2,
    DType::F8E5M2FNUZ,
    DType::F4E2M1,
    DType::F8E8M0,
    DType::I4,
    DType::U4,
    DType::I2,
    DType::U2,
];

#[test]
fn names_sizes_and_kinds() {
    for d in NEW {
        assert_eq!(DType::parse(d.name()), Some(d));
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(json, format!("\"{}\"", d.name()));
    }
    assert_eq!(DType::BF16.size(), 2);
    assert_eq!(DType::F8E5M2.size(), 1);
    assert_eq!(DType::I4.size(), 1);
    assert!(DType::BF16.is_float() && DType::BF16.is_computable());
    assert!(DType::F8E4M3FN.is_float() && !DType::F8E4M3FN.is_computable());
    assert!(DType::U2.is_int() && DType::U2.is_unsigned() && !DType::U2.is_computable());
}

#[test]
fn casts_into_float8_saturate_by_default_and_overflow_without() {
    let x = f32s(&[
        0.4789,
        1e6,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -1e-7,
        464.0,
        465.0,
    ]);
    let sat = op(
        "cast",
        Attrs::new().with("dtype", "f8e4m3fn"),
        std::slice::from_ref(&x),
    )
    .unwrap();
    let w = wide(&sat);
    assert_eq!(&w[..4], &[0.46875, 448.0, 448.0, -448.0]);
    assert!(w[4].is_nan());
    assert_eq!((w[5], w[5].is_sign_negative()), (0.0, true));
    assert_eq!(&w[6..], &[448.0, 448.0]);
    let a = Attrs::new().with("dtype", "f8e4m3fn").with("saturate", false);
    let w = wide(&op("cast", a, std::slice::from_ref(&x)).unwrap());
    assert!(w[1].is_nan() && w[2].is_nan() && w[7].is_nan());
    assert_eq!(w[6], 448.0);
    // E5M2 has infinities: without saturation it overflows to them.
    let a = Attrs::new().with("dtype", "f8e5m2").with("saturate", false);
    let w = wide(&op("cast", a, std::slice::from_ref(&x)).unwrap());
    assert_eq!(&w[..4], &[0.5, f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY]);
    // FNUZ: no negative zero.
    let w = wide(
        &op(
            "cast",
            Attrs::new().with("dtype", "f8e4m3fnuz"),
            std::slice::from_ref(&x),
        )
        .unwrap(),
    );
    assert_eq!((w[5], w[5].is_sign_negative()), (0.0, false));
    assert_eq!(w[1], 240.0);
    let w = wide(&op("cast", Attrs::new().with("dtype", "f8e5m2fnuz"), &[x]).unwrap());
    assert_eq!(w[1], 57344.0);
}

#[test]
fn casts_into_float4_e8m0_and_small_integers() {
    let x = f32s(&[2.5, 3.5, -9.0, 1e6, 0.25, 1.1]);
    let w = wide(
        &op(
            "cast",
            Attrs::new().with("dtype", "f4e2m1"),
            std::slice::from_ref(&x),
        )
        .unwrap(),
    );
    assert_eq!(w, [2.0, 4.0, -6.0, 6.0, 0.0, 1.0]);
    // F8E8M0 rounds up by default, down or to nearest on request.
    let w = wide(
        &op(
            "cast",
            Attrs::new().with("dtype", "f8e8m0"),
            std::slice::from_ref(&x),
        )
        .unwrap(),
    );
    assert_eq!(&w[4..], &[0.25, 2.0]);
    let a = Attrs::new().with("dtype", "f8e8m0").with("round_mode", "down");
    assert_eq!(wide(&op("cast", a, std::slice::from_ref(&x)).unwrap())[5], 1.0);
    let a = Attrs::new()
        .with("dtype", "f8e8m0")
        .with("round_mode", "sideways");
    assert!(matches!(
        op("cast", a, std::slice::from_ref(&x)),
        Err(Error::Attr(_))
    ));
    // Integers truncate and wrap: -9 is 7 in 4 bits, 2.5 is 2, -2 in 2 bits.
    let w = wide(&op("cast", Attrs::new().with("dtype", "i4"), std::slice::from_ref(&x)).unwrap());
    assert_eq!(&w[..3], &[2.0, 3.0, 7.0]);
    let w = wide(&op("cast", Attrs::new().with("dtype", "i2"), std::slice::from_ref(&x)).unwrap());
    assert_eq!(&w[..3], &[-2.0, -1.0, -1.0]);
    let ints = Tensor::from_vec(&[4], vec![-1i64, 16, 17, 300]).unwrap();
    let w = wide(&op("cast", Attrs::new().with("dtype", "u4"), &[ints]).unwrap());
    assert_eq!(w, [15.0, 0.0, 1.0, 12.0]);
}

#[test]
fn casts_out_of_the_small_formats_are_exact() {
    for d in NEW.into_iter().filter(|d| d.is_small_float()) {
        // Every code of the format, widened to f32 and back, is itself.
        let n = if d == DType::F4E2M1 { 16 } else { 256 };
        let codes: Vec<u8> = (0..n).map(|c| c as u8).collect();
        let t = vigil_engine::small::from_codes(d, &[n], codes.clone()).unwrap();
        let f = t.cast(DType::F32).unwrap();
        // F8E8M0's 2^-127 is an f32 subnormal, which rounds up; cast
        // down, every code is itself.
        let back = op(
            "cast",
            Attrs::new()
                .with("dtype", d.name())
                .with("saturate", false)
                .with("round_mode", "down"),
            std::slice::from_ref(&f),
        )
        .unwrap();
        let vals = wide(&f);
        let got = vigil_engine::small::codes(&back).unwrap();
        for (i, (&c, &g)) in codes.iter().zip(&got).enumerate() {
            if vals[i].is_nan() {
                assert!(wide(&back)[i].is_nan(), "{d} {c:#x}");
            } else if vals[i] == 0.0 && matches!(d, DType::F8E4M3FNUZ | DType::F8E5M2FNUZ) {
                assert_eq!(g, 0, "{d} {c:#x}");
            } else {
                assert_eq!(g, c, "{d} {c:#x} = {}", vals[i]);
            }
        }
    }
    let t = Tensor::from_vec(&[3], vec![I4(-8), I4(7), I4(-1)]).unwrap();
    assert_eq!(
        t.cast(DType::I8)
            .unwrap()
            .to_array::<i8>()
            .unwrap()
            .as_slice()
            .unwrap(),
        &[-8, 7, -1]
    );
}

#[test]
fn bf16_rounds_once_to_nearest_even() {
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: even is 1.
    let x = Tensor::from_vec(&[3], vec![1.0 + 2f64.powi(-8), 1.0 + 3.0 * 2f64.powi(-8), 1e39]).unwrap();
    let b = x.cast(DType::BF16).unwrap();
    let got: Vec<f32> = b.to_array::<bf16>().unwrap().iter().map(|v| v.to_f32()).collect();
    assert_eq!(got, [1.0, 1.0 + 2f32.powi(-6), f32::INFINITY]);
    // Just above the tie rounds up: a double rounding through f32 would not.
    let above = Tensor::from_vec(&[1], vec![1.0 + 2f64.powi(-8) + 2f64.powi(-40)]).unwrap();
    assert_eq!(wide(&above.cast(DType::BF16).unwrap()), [1.0 + 2f64.powi(-7)]);
}

#[test]
fn bf16_ops_compute_in_f32_and_keep_the_dtype() {
    let x = f32s(&[1.0, 2.0, 3.0, 4.0]).cast(DType::BF16).unwrap();
    let s = op("add", Attrs::new(), &[x.clone(), x.clone()]).unwrap();
    assert_eq!((s.dtype(), wide(&s)), (DType::BF16, vec![2.0, 4.0, 6.0, 8.0]));
    let m = op("softmax", Attrs::new().with("axis", 0), std::slice::from_ref(&x)).unwrap();
    assert_eq!(m.dtype(), DType::BF16);
    let total: f64 = wide(&m).iter().sum();
    assert!((total - 1.0).abs() < 2e-2, "{total}");
    let r = op("sum", Attrs::new(), &[x]).unwrap();
    assert_eq!((r.dtype(), wide(&r)), (DType::BF16, vec![10.0]));
}

#[test]
fn arithmetic_on_storage_formats_is_a_dtype_error() {
    let x = f32s(&[1.0, 2.0]).cast(DType::F8E4M3FN).unwrap();
    let e = op("add", Attrs::new(), &[x.clone(), x.clone()]).unwrap_err();
    assert!(matches!(e, Error::DType(_)), "{e}");
    // Moving elements needs no arithmetic.
    let t = op(
        "transpose",
        Attrs::new().with("perm", vec![0i64]),
        std::slice::from_ref(&x),
    )
    .unwrap();
    assert_eq!(wide(&t), [1.0, 2.0]);
}

/// The refusal names the dtype given (not bool), at infer and at compute.
#[test]
fn arithmetic_on_float8_is_a_dtype_error_naming_float8() {
    let x = f32s(&[1.0, 2.0]).cast(DType::F8E4M3FN).unwrap();
    let m = Tensor::from_vec(&[1, 2], vec![1.0f32, 2.0])
        .unwrap()
        .cast(DType::F8E4M3FN)
        .unwrap();
    for (name, inputs) in [
        ("add", vec![x.clone(), x.clone()]),
        ("mul", vec![x.clone(), x.clone()]),
        ("neg", vec![x.clone()]),
        ("exp", vec![x.clone()]),
        ("sum", vec![x.clone()]),
        ("cumsum", vec![x.clone()]),
        ("matmul", vec![m.clone(), m.t(None).unwrap()]),
    ] {
        let o = OpRegistry::builtin().make(name, &Attrs::new()).unwrap();
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        let errs = [
            o.infer(&tys).unwrap_err(),
            o.compute(&inputs, &mut OpCtx::new("n")).unwrap_err(),
        ];
        for e in errs {
            assert!(matches!(e, Error::DType(_)), "{name}: {e}");
            assert!(e.to_string().contains("f8e4m3fn"), "{name}: {e}");
        }
    }
}

#[test]
fn quantize_into_small_dtypes_and_back() {
    let x = f32s(&[0.0, 1.0, 2.5, -3.0, 100.0, -100.0]);
    let s = f32s(&[0.5]).reshape(&[]).unwrap();
    // int4: rint(x / 0.5) + 1 saturated to -8..=7.
    let z = Tensor::from_vec(&[], vec![I4(1)]).unwrap();
    let q = op(
        "quantize_linear",
        Attrs::new(),
        &[x.clone(), s.clone(), z.clone()],
    )
    .unwrap();
    assert_eq!(
        (q.dtype(), wide(&q)),
        (DType::I4, vec![1.0, 3.0, 6.0, -5.0, 7.0, -8.0])
    );
    let d = op("dequantize_linear", Attrs::new(), &[q, s.clone(), z]).unwrap();
    assert_eq!(
        (d.dtype(), wide(&d)),
        (DType::F32, vec![0.0, 1.0, 2.5, -3.0, 3.0, -4.5])
    );
    // uint2: 0..=3.
    let z = Tensor::from_vec(&[], vec![U2(0)]).unwrap();
    let q = op("quantize_linear", Attrs::new(), &[x.clone(), s.clone(), z]).unwrap();
    assert_eq!(wide(&q), [0.0, 2.0, 3.0, 0.0, 3.0, 0.0]);
    // float8: x / scale rounded by the format, saturating unless told not to.
    let z = Tensor::from_vec(&[], vec![F8E4M3Fn(0)]).unwrap();
    let q = op(
        "quantize_linear",
        Attrs::new(),
        &[x.clone(), s.clone(), z.clone()],
    )
    .unwrap();
    // 200 is halfway between 192 and 208: the even code, 192.
    assert_eq!(wide(&q), [0.0, 2.0, 5.0, -6.0, 192.0, -192.0]);
    let big = f32s(&[1000.0]);
    let q = op(
        "quantize_linear",
        Attrs::new(),
        &[big.clone(), s.clone(), z.clone()],
    )
    .unwrap();
    assert_eq!(wide(&q), [448.0]);
    let a = Attrs::new().with("saturate", false);
    assert!(wide(&op("quantize_linear", a, &[big, s.clone(), z]).unwrap())[0].is_nan());
    let z = Tensor::from_vec(&[], vec![F8E5M2(0)]).unwrap();
    let q = op("quantize_linear", Attrs::new(), &[x.clone(), s.clone(), z]).unwrap();
    let d = op("dequantize_linear", Attrs::new(), &[q, s.clone()]).unwrap();
    assert_eq!(wide(&d), [0.0, 1.0, 2.5, -3.0, 96.0, -96.0]);
    // float4 with per-block scales: blocks of 3 along axis 0.
    let z = Tensor::from_vec(&[2], vec![F4E2M1(0), F4E2M1(0)]).unwrap();
    let bs = f32s(&[1.0, 2.0]);
    let a = Attrs::new().with("axis", 0).with("block_size", 3);
    let q = op("quantize_linear", a, &[x, bs, z]).unwrap();
    assert_eq!(
        (q.dtype(), wide(&q)),
        (DType::F4E2M1, vec![0.0, 1.0, 2.0, -1.5, 6.0, -6.0])
    );
    // F8E8M0 is a scale format, not a quantized one.
    let z = Tensor::from_vec(&[], vec![vigil_engine::small::F8E8M0(127)]).unwrap();
    let e = op("quantize_linear", Attrs::new(), &[f32s(&[1.0]), s, z]).unwrap_err();
    assert!(matches!(e, Error::DType(_)), "{e}");
}

#[test]
fn npy_round_trips_the_small_dtypes_as_bit_records() {
    let dir = std::env::temp_dir().join(format!("vigil-small-npy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("t.npy");
    let b = f32s(&[1.5, -2.0, f32::NAN]).cast(DType::BF16).unwrap();
    b.write_npy(&p).unwrap();
    let raw = std::fs::read(&p).unwrap();
    assert_eq!(raw.len() % 64, 6, "a 64-byte aligned header, then 3 x 2 bytes");
    assert!(String::from_utf8_lossy(&raw).contains("'descr': [('bf16', '<u2')]"));
    let back = Tensor::read_npy(&p).unwrap();
    assert_eq!(back.dtype(), DType::BF16);
    let bits = |t: &Tensor| -> Vec<u16> {
        t.to_array::<bf16>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect()
    };
    assert_eq!(bits(&back), bits(&b));
    for d in [
        DType::F8E4M3FN,
        DType::F4E2M1,
        DType::F8E8M0,
        DType::I4,
        DType::U2,
    ] {
        let t = f32s(&[1.0, 0.5, 2.0, 0.0])
            .reshape(&[2, 2])
            .unwrap()
            .cast(d)
            .unwrap();
        t.write_npy(&p).unwrap();
        let back = Tensor::read_npy(&p).unwrap();
        assert_eq!((back.dtype(), back.shape()), (d, &[2usize, 2][..]));
        assert_eq!(
            vigil_engine::small::codes(&back).unwrap(),
            vigil_engine::small::codes(&t).unwrap()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn comparison_uses_one_step_of_the_format() {
    assert_eq!(ulp_distance(448.0, 416.0, DType::F8E4M3FN), 1);
    assert_eq!(ulp_distance(-0.5, 0.5, DType::F4E2M1), 2);
    assert_eq!(ulp_distance(1.0, 1.0 + 2f64.powi(-7), DType::BF16), 1);
    let a = f32s(&[448.0]).cast(DType::F8E4M3FN).unwrap();
    let b = f32s(&[416.0]).cast(DType::F8E4M3FN).unwrap();
    let tol = Tolerance::default_for(DType::F8E4M3FN);
    let near = compare(&a, &b, tol).unwrap();
    assert!(!near.is_exact() && near.is_close());
    let c = f32s(&[256.0]).cast(DType::F8E4M3FN).unwrap();
    assert!(!compare(&a, &c, tol).unwrap().is_close());
}

#[test]
fn element_conversions_of_the_small_integers() {
    assert_eq!(<I4 as Element>::from_f64(-9.0), I4(7));
    assert_eq!(<I4 as Element>::from_i64_wrapping(8), I4(-8));
    assert_eq!(<U2 as Element>::from_f64(f64::NAN), U2(0));
    assert_eq!(U2(3).to_f64(), 3.0);
}
