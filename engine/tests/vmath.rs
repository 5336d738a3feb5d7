//! Accuracy of the SIMD elementwise math (engine/src/ops/vmath.rs): every
//! f32 kernel within 2 ULP of an f64 reference rounded to f32, over random
//! bit patterns (so NaN payloads, ±inf, ±0 and subnormals all appear) and
//! over the special values numpy documents; and the ops give the same
//! result whatever the layout and position of an element.

use proptest::prelude::*;
use vigil_engine::kernels::{MathFn, VMath};
use vigil_engine::ops::elementwise::{UnKind, Unary};
use vigil_engine::{Op, OpCtx, Tensor};

const ALL: [MathFn; 18] = MathFn::ALL;

/// The f64 reference, rounded to f32 once.
fn reference(f: MathFn, x: f32) -> f32 {
    let x = x as f64;
    let y = match f {
        MathFn::Exp => x.exp(),
        MathFn::Log => x.ln(),
        MathFn::Sqrt => x.sqrt(),
        MathFn::Tanh => x.tanh(),
        MathFn::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        MathFn::Sin => x.sin(),
        MathFn::Cos => x.cos(),
        MathFn::Tan => x.tan(),
        MathFn::Asin => x.asin(),
        MathFn::Acos => x.acos(),
        MathFn::Atan => x.atan(),
        MathFn::Sinh => x.sinh(),
        MathFn::Cosh => x.cosh(),
        MathFn::Expm1 => x.exp_m1(),
        MathFn::Log1p => x.ln_1p(),
        MathFn::Erf => libm::erf(x),
        MathFn::Gelu => 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2)),
        MathFn::GeluTanh => gelu_tanh(x),
    };
    y as f32
}

/// `x/2 · (1 + tanh(u))`, `u = √(2/π) · (x + 0.044715·x³)`, written as
/// `x / (1 + exp(−2u))`: in f64 `1 + tanh(u)` is 0 from u ≈ −19 on, where
/// the f32 result is still a normal number.
fn gelu_tanh(x: f64) -> f64 {
    let u = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3));
    x / (1.0 + (-2.0 * u).exp())
}

/// Distance in units in the last place; +0 and -0 are 0 apart.
fn ulps(a: f32, b: f32) -> u64 {
    let ord = |x: f32| {
        let i = x.to_bits() as i32 as i64;
        if i < 0 {
            -(i & 0x7fff_ffff)
        } else {
            i
        }
    };
    (ord(a) - ord(b)).unsigned_abs()
}

fn check(f: MathFn, x: f32, got: f32) -> Result<(), String> {
    let want = reference(f, x);
    if want.is_nan() {
        return if got.is_nan() {
            Ok(())
        } else {
            Err(format!("{f:?}({x:e}) = {got:e}, expected NaN"))
        };
    }
    let d = ulps(got, want);
    if got.is_nan() || d > 2 {
        return Err(format!(
            "{f:?}({x:e} = {:#x}) = {got:e}, expected {want:e}: {d} ULP",
            x.to_bits()
        ));
    }
    if want == 0.0 && got.is_sign_negative() != want.is_sign_negative() {
        return Err(format!(
            "{f:?}({x:e}) = {got:e}: zero of the wrong sign, expected {want:e}"
        ));
    }
    Ok(())
}

fn kernel(f: MathFn, xs: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0f32; xs.len()];
    f32::map(f, xs, &mut out);
    out
}

/// Interesting inputs: signed zeros, subnormals, the extremes, infinities,
/// NaN, and the overflow/underflow edges of exp and sigmoid.
fn specials() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        f32::MAX,
        f32::MIN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        1.0,
        -1.0,
        0.5,
        88.72,
        88.73,
        -87.3,
        -103.0,
        -104.0,
        -150.0,
        9.0,
        -9.0,
        1e-4,
        -1e-4,
        3e-8,
        // sin and cos: around the SIMD limit (4), near zeros of each
        // (π, 3π/2, 2π) and large arguments.
        3.999_999_8,
        4.0,
        -4.0,
        std::f32::consts::PI,
        1.5 * std::f32::consts::PI,
        std::f32::consts::TAU,
        1e4,
        -7.1e4,
        1e30,
        // sinh and cosh around their SIMD limit (88) and overflow (89.4);
        // tan around its limit (65536) and near poles; asin and acos at
        // the ends of their domain; log1p at -1.
        87.999_99,
        88.0,
        -88.5,
        89.4,
        89.5,
        65_535.996,
        65_536.0,
        -1e6,
        1.570_796_4,
        -1.570_796_4,
        0.999_999_94,
        -0.999_999_94,
        1.000_000_1,
        -1.000_000_1,
        -0.999_999_9,
        -1.0,
    ];
    v.extend(v.clone().iter().map(|x| x * 0.999));
    v
}

#[test]
fn special_values_match_numpy() {
    let xs = specials();
    for f in ALL {
        for (x, got) in xs.iter().zip(kernel(f, &xs)) {
            check(f, *x, got).unwrap();
        }
    }
    // The values numpy documents, bit for bit.
    let k = |f, x: f32| kernel(f, &[x])[0];
    assert_eq!(k(MathFn::Exp, f32::NEG_INFINITY).to_bits(), 0.0f32.to_bits());
    assert_eq!(k(MathFn::Exp, f32::INFINITY), f32::INFINITY);
    assert_eq!(k(MathFn::Exp, -0.0), 1.0);
    assert_eq!(k(MathFn::Log, 0.0), f32::NEG_INFINITY);
    assert_eq!(k(MathFn::Log, -0.0), f32::NEG_INFINITY);
    assert!(k(MathFn::Log, -1.0).is_nan());
    assert!(k(MathFn::Log, f32::NEG_INFINITY).is_nan());
    assert_eq!(k(MathFn::Log, f32::INFINITY), f32::INFINITY);
    assert!(k(MathFn::Log, f32::from_bits(1)).is_finite());
    assert_eq!(k(MathFn::Sqrt, -0.0).to_bits(), (-0.0f32).to_bits());
    assert!(k(MathFn::Sqrt, -1.0).is_nan());
    assert_eq!(k(MathFn::Tanh, -0.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(k(MathFn::Tanh, f32::NEG_INFINITY), -1.0);
    assert_eq!(k(MathFn::Tanh, f32::INFINITY), 1.0);
    assert_eq!(k(MathFn::Sigmoid, f32::NEG_INFINITY), 0.0);
    assert_eq!(k(MathFn::Sigmoid, f32::INFINITY), 1.0);
    assert_eq!(k(MathFn::Sigmoid, -0.0), 0.5);
    assert_eq!(k(MathFn::Sin, -0.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(k(MathFn::Sin, 0.0).to_bits(), 0.0f32.to_bits());
    assert_eq!(k(MathFn::Sin, f32::from_bits(1)), f32::from_bits(1));
    assert_eq!(k(MathFn::Sin, -f32::from_bits(1)), -f32::from_bits(1));
    assert_eq!(k(MathFn::Cos, -0.0), 1.0);
    assert_eq!(k(MathFn::Cos, f32::from_bits(1)), 1.0);
    for f in [MathFn::Sin, MathFn::Cos, MathFn::Tan] {
        assert!(k(f, f32::INFINITY).is_nan(), "{f:?}(inf)");
        assert!(k(f, f32::NEG_INFINITY).is_nan(), "{f:?}(-inf)");
    }
    for f in [
        MathFn::Sin,
        MathFn::Tan,
        MathFn::Asin,
        MathFn::Atan,
        MathFn::Sinh,
        MathFn::Expm1,
        MathFn::Log1p,
        MathFn::Erf,
    ] {
        assert_eq!(
            k(f, -0.0).to_bits(),
            (-0.0f32).to_bits(),
            "{f:?}(-0) keeps the sign"
        );
    }
    assert_eq!(k(MathFn::Erf, f32::INFINITY), 1.0);
    assert_eq!(k(MathFn::Erf, f32::NEG_INFINITY), -1.0);
    assert!(k(MathFn::Erf, f32::NAN).is_nan());
    assert_eq!(k(MathFn::Atan, f32::INFINITY), std::f32::consts::FRAC_PI_2);
    assert_eq!(k(MathFn::Atan, f32::NEG_INFINITY), -std::f32::consts::FRAC_PI_2);
    assert_eq!(k(MathFn::Sinh, f32::NEG_INFINITY), f32::NEG_INFINITY);
    assert_eq!(k(MathFn::Cosh, f32::NEG_INFINITY), f32::INFINITY);
    assert_eq!(k(MathFn::Sinh, 89.5), f32::INFINITY);
    assert_eq!(k(MathFn::Expm1, f32::NEG_INFINITY), -1.0);
    assert_eq!(k(MathFn::Expm1, f32::INFINITY), f32::INFINITY);
    assert_eq!(k(MathFn::Log1p, -1.0), f32::NEG_INFINITY);
    assert!(k(MathFn::Log1p, -1.5).is_nan());
    assert_eq!(k(MathFn::Acos, 1.0).to_bits(), 0.0f32.to_bits());
    for f in [MathFn::Asin, MathFn::Acos] {
        assert!(k(f, 1.000_000_1).is_nan(), "{f:?} outside [-1, 1]");
        assert!(k(f, f32::INFINITY).is_nan(), "{f:?}(inf)");
    }
    for f in ALL {
        assert!(k(f, f32::NAN).is_nan(), "{f:?}(NaN)");
    }
}

#[test]
fn every_position_in_a_vector_gets_the_same_result() {
    let xs: Vec<f32> = (0..37).map(|i| i as f32 * 0.37 - 6.0).collect();
    for f in ALL {
        let whole = kernel(f, &xs);
        for (i, &x) in xs.iter().enumerate() {
            assert_eq!(whole[i].to_bits(), f32::one(f, x).to_bits(), "{f:?} at {i}");
            assert_eq!(
                whole[i].to_bits(),
                kernel(f, &xs[i..])[0].to_bits(),
                "{f:?} from {i}"
            );
        }
        let mut buf = xs.clone();
        f32::map_inplace(f, &mut buf);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&buf), bits(&whole));
    }
}

#[test]
fn unary_ops_agree_across_layouts() {
    let xs: Vec<f32> = (0..48).map(|i| i as f32 * 0.21 - 3.0).collect();
    let t = Tensor::from_vec(&[6, 8], xs.clone()).unwrap();
    let tt = t.transpose(None).unwrap();
    for (kind, f) in [
        (UnKind::Exp, MathFn::Exp),
        (UnKind::Tanh, MathFn::Tanh),
        (UnKind::Sigmoid, MathFn::Sigmoid),
        (UnKind::Sin, MathFn::Sin),
        (UnKind::Cos, MathFn::Cos),
        (UnKind::Tan, MathFn::Tan),
        (UnKind::Atan, MathFn::Atan),
        (UnKind::Sinh, MathFn::Sinh),
        (UnKind::Expm1, MathFn::Expm1),
        (UnKind::Log1p, MathFn::Log1p),
    ] {
        let run = |x: &Tensor, inplace: bool| {
            let op = Unary::new(kind, inplace);
            let out = op.compute(std::slice::from_ref(x), &mut OpCtx::new("n")).unwrap();
            out[0].to_array::<f32>().unwrap()
        };
        // Bit for bit (log1p gives NaN below -1).
        let bits = |a: ndarray::ArrayViewD<'_, f32>| a.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let plain = run(&t, false);
        let trans = run(&tt, false);
        assert_eq!(bits(trans.view()), bits(plain.t()), "{f:?}");
        let copy = t.deep_copy().unwrap();
        assert_eq!(bits(run(&copy, true).view()), bits(plain.view()), "{f:?}");
        for (got, &x) in plain.iter().zip(&xs) {
            assert_eq!(got.to_bits(), f32::one(f, x).to_bits());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn within_two_ulp_on_any_bits(bits in prop::collection::vec(any::<u32>(), 1..64)) {
        let xs: Vec<f32> = bits.into_iter().map(f32::from_bits).collect();
        for f in ALL {
            for (x, got) in xs.iter().zip(kernel(f, &xs)) {
                check(f, *x, got).map_err(TestCaseError::fail)?;
            }
        }
    }

    #[test]
    fn within_two_ulp_in_the_working_range(xs in prop::collection::vec(-110.0f32..110.0, 1..64)) {
        for f in ALL {
            for (x, got) in xs.iter().zip(kernel(f, &xs)) {
                check(f, *x, got).map_err(TestCaseError::fail)?;
            }
        }
    }

    #[test]
    fn sin_and_cos_within_two_ulp_on_both_sides_of_the_simd_limit(
        xs in prop::collection::vec(-8.0f32..8.0, 1..64),
        big in prop::collection::vec(-1e7f32..1e7, 0..16),
    ) {
        // A vector may mix lanes below and above the limit.
        let xs: Vec<f32> = xs.into_iter().chain(big).collect();
        for f in [MathFn::Sin, MathFn::Cos] {
            for (x, got) in xs.iter().zip(kernel(f, &xs)) {
                check(f, *x, got).map_err(TestCaseError::fail)?;
            }
        }
    }

    #[test]
    fn tan_sinh_and_cosh_within_two_ulp_on_both_sides_of_their_limits(
        small in prop::collection::vec(-100.0f32..100.0, 1..48),
        big in prop::collection::vec(-1e7f32..1e7, 0..16),
    ) {
        let xs: Vec<f32> = small.into_iter().chain(big).collect();
        for f in [MathFn::Tan, MathFn::Sinh, MathFn::Cosh] {
            for (x, got) in xs.iter().zip(kernel(f, &xs)) {
                check(f, *x, got).map_err(TestCaseError::fail)?;
            }
        }
    }

    /// erf switches fits at |x| = 1 and is ±1 from 4: every f32 near
    /// both, and across its whole curved range.
    #[test]
    fn erf_within_two_ulp_across_its_fits(
        xs in prop::collection::vec(-6.0f32..6.0, 1..64),
        edge in -64i32..64,
    ) {
        let near = |c: f32| f32::from_bits((c.to_bits() as i32 + edge) as u32);
        let xs: Vec<f32> = xs.into_iter().chain([near(1.0), -near(1.0), near(4.0), -near(4.0)]).collect();
        for (x, got) in xs.iter().zip(kernel(MathFn::Erf, &xs)) {
            check(MathFn::Erf, *x, got).map_err(TestCaseError::fail)?;
        }
    }

    #[test]
    fn inverse_trig_within_two_ulp_on_their_domain(xs in prop::collection::vec(-1.0f32..=1.0, 1..64)) {
        for f in [MathFn::Asin, MathFn::Acos, MathFn::Atan, MathFn::Log1p] {
            for (x, got) in xs.iter().zip(kernel(f, &xs)) {
                check(f, *x, got).map_err(TestCaseError::fail)?;
            }
        }
    }

    #[test]
    fn within_two_ulp_near_zero(xs in prop::collection::vec(-1.0f32..1.0, 1..64), scale in -40i32..0) {
        let s = 2f32.powi(scale);
        let xs: Vec<f32> = xs.iter().map(|x| x * s).collect();
        for f in ALL {
            for (x, got) in xs.iter().zip(kernel(f, &xs)) {
                check(f, *x, got).map_err(TestCaseError::fail)?;
            }
        }
    }
}
