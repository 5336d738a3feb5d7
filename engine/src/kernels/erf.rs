//! erf over `f64x4` lanes holding f32 values, for the SIMD math kernels:
//! no maintained crate has a vectorized erf, so it is built here from one
//! Chebyshev fit computed at first use from `libm`'s f64 `erf` (no
//! hand-copied coefficients):
//!
//! - `|x| < 4`: `erf(x) = x · g(x²)`, with `g(s) = erf(√s)/√s`, entire
//!   and smooth on [0, 16]; 20 terms fit it to 7e-11 relative (measured),
//!   far inside f32's half ULP. The odd symmetry and the sign of zero come
//!   from the factor `x`, and no branch, select or `exp` is needed;
//! - `|x| ≥ 4`: ±1 (erf(3.92) already rounds to 1 in f32); NaN stays NaN.
//!
//! Evaluated in f64 (Clenshaw's recurrence) and rounded to f32 once; 2 ULP
//! is property-tested in `engine/tests/vmath.rs`.

use std::sync::OnceLock;

use wide::f64x4;

use crate::kernels::chebyshev::chebyshev;

/// Terms of the Chebyshev series.
const TERMS: usize = 20;
/// Where the fit ends and erf is ±1 in f32.
const ONE_AT: f64 = 4.0;

/// The coefficients of `g(s) = erf(√s)/√s` on s ∈ [0, 16].
pub(crate) struct ErfFit([f64; TERMS]);

pub(crate) fn fit() -> &'static ErfFit {
    static FIT: OnceLock<ErfFit> = OnceLock::new();
    FIT.get_or_init(|| {
        ErfFit(chebyshev(
            |s| {
                let x = s.sqrt();
                if x == 0.0 {
                    std::f64::consts::FRAC_2_SQRT_PI
                } else {
                    libm::erf(x) / x
                }
            },
            0.0,
            ONE_AT * ONE_AT,
        ))
    })
}

/// `Σ' c_k T_k(u)` (the first term halved) by Clenshaw's recurrence.
#[inline(always)]
fn clenshaw(c: &[f64; TERMS], u: f64x4) -> f64x4 {
    let two_u = u + u;
    let (mut b1, mut b2) = (f64x4::ZERO, f64x4::ZERO);
    for &ck in c[1..].iter().rev() {
        let b = two_u.mul_add(b1, f64x4::splat(ck) - b2);
        b2 = b1;
        b1 = b;
    }
    u.mul_add(b1, f64x4::splat(0.5 * c[0]) - b2)
}

/// erf of four f64 lanes.
#[inline(always)]
pub(crate) fn erf4(fit: &ErfFit, x: f64x4) -> f64x4 {
    let s = x * x;
    // s on [0, 16] -> u on [-1, 1].
    let u = s.mul_add(f64x4::splat(2.0 / (ONE_AT * ONE_AT)), f64x4::splat(-1.0));
    let r = x * clenshaw(&fit.0, u);
    // ±1 from 4 on (`1 | sign of x`); NaN fails the compare and stays NaN.
    let one = f64x4::ONE | (x & f64x4::splat(-0.0));
    x.abs().simd_ge(f64x4::splat(ONE_AT)).select(one, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn erf1(x: f64) -> f64 {
        erf4(fit(), f64x4::splat(x)).to_array()[0]
    }

    /// The fit itself, in f64: within 1e-10 relative (f32's half ULP is
    /// 3e-8); from 4 on, ±1 is erf rounded to f32.
    #[test]
    fn the_fit_holds_1e_minus_10_against_libm() {
        let mut worst: f64 = 0.0;
        for i in 0..40_000 {
            let x = i as f64 * 1e-4;
            for x in [x, -x] {
                let (got, want) = (erf1(x), libm::erf(x));
                worst = worst.max((got - want).abs() / want.abs().max(1e-300));
            }
        }
        assert!(worst < 1e-10, "worst relative error {worst:e}");
        for i in 0..=600 {
            let x = 4.0 + i as f64 * 0.01;
            assert_eq!(erf1(x) as f32, libm::erf(x) as f32, "erf({x})");
            assert_eq!(erf1(-x) as f32, libm::erf(-x) as f32, "erf(-{x})");
        }
    }

    #[test]
    fn special_values() {
        assert!(erf1(f64::NAN).is_nan());
        assert_eq!(erf1(f64::INFINITY), 1.0);
        assert_eq!(erf1(f64::NEG_INFINITY), -1.0);
        assert_eq!(erf1(-0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(erf1(0.0).to_bits(), 0.0f64.to_bits());
        let tiny = f32::from_bits(1) as f64;
        assert_eq!(
            erf1(tiny) as f32,
            (tiny * std::f64::consts::FRAC_2_SQRT_PI) as f32
        );
    }
}
