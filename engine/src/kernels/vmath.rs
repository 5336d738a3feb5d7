//! Elementwise transcendental math over slices.
//!
//! f32 goes through `wide`'s `f32x8` functions (SIMD exp, ln, tanh, sqrt,
//! sin and cos with fdlibm/cephes-style range reduction and special-value
//! handling), 8 lanes at a time; a tail shorter than 8 is padded into one
//! more vector, so every element gets the same function whatever its
//! position. Fixes on top of `wide`, for numpy's accuracy and
//! special-value behaviour:
//!
//! - `ln` of a subnormal: `wide` returns -inf; here a positive one is
//!   scaled by 2^24 first and 24·ln 2 subtracted, so the result is finite,
//!   and a negative one gives NaN.
//! - `sigmoid` is `1 / (1 + e)` for x ≥ 0 and `e / (1 + e)` for x < 0 with
//!   `e = exp(-|x|)`, so it never overflows and stays accurate (subnormal
//!   results included) for large negative x.
//!
//! - `sin` and `cos`: `wide`'s `sin_cos` reduces the argument with three
//!   f32 parts of π/2, which holds 2 ULP only below |x| = 4 (measured:
//!   every f32 in [1, 4) both signs, and samples of every binade below; at
//!   3π/2 cos is already 14 ULP off, past 2^13 thousands). Lanes at or
//!   above 4 (and ±inf) take the scalar library function (`f32::sin`,
//!   `f32::cos`), as numpy's SIMD loops fall back to scalar code for large
//!   arguments; a vector of only such lanes skips `wide`.
//!
//! - `asin`, `acos`, `sinh` and `cosh` use `wide`'s f32x8 functions
//!   (within 2 ULP; sinh and cosh lanes at or above |x| = 88, where
//!   `wide`'s exp overflows early, go through f64).
//! - `atan`, `expm1`, `log1p` and `tan` are computed in f64 with `wide`'s
//!   `f64x4` and rounded once (its f32 versions reach 3 and 4 ULP; f32
//!   `log1p` is 3 ULP off at x = -0.39258924); tan lanes at or above
//!   |x| = 65536 go through the scalar f64 function.
//!
//! - `erf`: `wide` has none, and no maintained crate vectorizes it; see
//!   `ops/erf.rs` (two Chebyshev fits made from `libm` at first use,
//!   evaluated in `f64x4`).
//!
//! - `gelu` (`x/2 · (1 + erf(x/√2))`): on CPUs with AVX2 and FMA (or
//!   AVX-512), the f32 kernel of `kernels/fastmath.rs` (`x · Φ(x)` from two
//!   polynomial fits and an exp, carried as pairs of f32s where cancellation
//!   or a rounded argument would cost a ULP; within 1 ULP), since the erf
//!   fit in f64 lanes below costs ~6.5 ns an element on SSE2 and GELU is a
//!   large share of transformer and ConvNeXt runs. Elsewhere, the same erf
//!   fit in f64 lanes for x ≥ -3; below, where `1 + erf` cancels, lanes
//!   take the scalar f64 definition (both paths do for x < -5, where the
//!   f64 definition itself loses bits to that cancellation and the
//!   reference is what it gives).
//!
//! - `exp`, `sigmoid` and `tanh`: on CPUs with AVX2 and FMA (or AVX-512), the
//!   kernels of `kernels/fastmath.rs`, chosen at run time, about 4x faster
//!   than `wide`'s SSE2 code; elsewhere `wide`'s.
//!
//! f64 uses the standard library's scalar functions (correctly handled
//! special values, ≤ 1 ULP), as numpy does without AVX-512.
//!
//! Accuracy: ≤ 2 ULP against an f64 reference for every f32 input,
//! property-tested in `engine/tests/vmath.rs`.

use wide::{f32x8, f64x4};

pub use crate::kernels::math_fn::MathFn;
use crate::parallel::PARALLEL_ELEMS;

/// Elements per parallel task (a multiple of the vector width).
const TASK: usize = 1 << 14;

/// `dst[i] = f(src[i])`, on the rayon pool for long slices.
pub fn par_map<T: VMath>(f: MathFn, src: &[T], dst: &mut [T]) {
    use rayon::prelude::*;
    if src.len() < PARALLEL_ELEMS || !crate::parallel::intra_op() {
        return T::map(f, src, dst);
    }
    dst.par_chunks_mut(TASK)
        .zip(src.par_chunks(TASK))
        .for_each(|(d, s)| T::map(f, s, d));
}

/// `buf[i] = f(buf[i])`, on the rayon pool for long slices.
pub fn par_map_inplace<T: VMath>(f: MathFn, buf: &mut [T]) {
    use rayon::prelude::*;
    if buf.len() < PARALLEL_ELEMS || !crate::parallel::intra_op() {
        return T::map_inplace(f, buf);
    }
    buf.par_chunks_mut(TASK).for_each(|b| T::map_inplace(f, b));
}

/// Float types with slice kernels for [`MathFn`].
pub trait VMath: Copy + Send + Sync + 'static {
    /// `dst[i] = f(src[i])`; the slices have one length.
    fn map(f: MathFn, src: &[Self], dst: &mut [Self]);
    /// `buf[i] = f(buf[i])`.
    fn map_inplace(f: MathFn, buf: &mut [Self]);
    /// `f(x)`, exactly as the slice kernels compute it.
    fn one(f: MathFn, x: Self) -> Self;
}

// ----- f32 ------------------------------------------------------------------

const LN2_X24: f32 = 16.635_532; // 24 · ln 2, rounded to f32
const TWO_POW_24: f32 = 16_777_216.0;

#[inline(always)]
fn ln8(v: f32x8) -> f32x8 {
    let r = v.ln();
    // Below the smallest normal: zeros, subnormals and negatives (NaN
    // compares false and is already NaN).
    let low = v.simd_lt(f32x8::splat(f32::MIN_POSITIVE));
    if !low.any() {
        return r;
    }
    let sub = v.simd_gt(f32x8::ZERO) & low;
    let scaled = (v * f32x8::splat(TWO_POW_24)).ln() - f32x8::splat(LN2_X24);
    let r = sub.select(scaled, r);
    v.simd_lt(f32x8::ZERO).select(f32x8::splat(f32::NAN), r)
}

#[inline(always)]
fn sigmoid8(v: f32x8) -> f32x8 {
    let e = (-v.abs()).exp();
    let d = f32x8::ONE + e;
    let pos = f32x8::ONE / d;
    let neg = e / d;
    v.simd_lt(f32x8::ZERO).select(neg, pos)
}

/// `wide`'s `sin_cos` is within 2 ULP below this magnitude.
const TRIG_SIMD_LIMIT: f32 = 4.0;

/// sin (`cos` false) or cos of every lane; lanes at or above
/// [`TRIG_SIMD_LIMIT`] in magnitude through the scalar library function
/// (a vector of only such lanes skips `wide` altogether).
#[inline(always)]
fn trig8(v: f32x8, cos: bool) -> f32x8 {
    let g = if cos { f32::cos } else { f32::sin };
    beyond(v, TRIG_SIMD_LIMIT, g, |v| {
        let (s, c) = v.sin_cos();
        if cos {
            c
        } else {
            s
        }
    })
}

/// `g` of every lane computed in f64 (`wide`'s `f64x4`) and rounded once:
/// for the functions whose f32 versions in `wide` miss 2 ULP (atan and
/// expm1 reach 3, tan through f32 `sin_cos` 4), at half the vector width.
#[inline(always)]
fn via_f64x4(v: f32x8, g: impl Fn(f64x4) -> f64x4) -> f32x8 {
    let a = v.to_array();
    let half = |k: usize| {
        g(f64x4::new([
            a[k] as f64,
            a[k + 1] as f64,
            a[k + 2] as f64,
            a[k + 3] as f64,
        ]))
        .to_array()
    };
    let (lo, hi) = (half(0), half(4));
    f32x8::new([
        lo[0] as f32,
        lo[1] as f32,
        lo[2] as f32,
        lo[3] as f32,
        hi[0] as f32,
        hi[1] as f32,
        hi[2] as f32,
        hi[3] as f32,
    ])
}

/// `r`, with the lanes of `v` at or above `limit` in magnitude (and ±inf)
/// replaced by the scalar `g` (a vector of only such lanes skips `simd`).
#[inline(always)]
fn beyond(v: f32x8, limit: f32, g: fn(f32) -> f32, simd: impl Fn(f32x8) -> f32x8) -> f32x8 {
    let big = v.abs().simd_ge(f32x8::splat(limit)).to_bitmask();
    if big == 0xff {
        return f32x8::new(v.to_array().map(g));
    }
    let r = simd(v);
    if big == 0 {
        return r;
    }
    let (mut out, xs) = (r.to_array(), v.to_array());
    for (i, (o, &x)) in out.iter_mut().zip(&xs).enumerate() {
        if big >> i & 1 == 1 {
            *o = g(x);
        }
    }
    f32x8::new(out)
}

/// `wide`'s f32 `exp` overflows from 88.72, before sinh and cosh do (89.4).
const HYPERBOLIC_SIMD_LIMIT: f32 = 88.0;
/// `wide`'s f64 `sin_cos` keeps tan within 1 ULP (checked) below this.
const TAN_SIMD_LIMIT: f32 = 65_536.0;

#[inline(always)]
fn apply8(f: MathFn, v: f32x8) -> f32x8 {
    match f {
        MathFn::Exp => v.exp(),
        MathFn::Log => ln8(v),
        MathFn::Sqrt => v.sqrt(),
        MathFn::Tanh => v.tanh(),
        MathFn::Sigmoid => sigmoid8(v),
        MathFn::Sin => trig8(v, false),
        MathFn::Cos => trig8(v, true),
        MathFn::Tan => beyond(
            v,
            TAN_SIMD_LIMIT,
            |x| (x as f64).tan() as f32,
            |v| {
                via_f64x4(v, |d| {
                    let (s, c) = d.sin_cos();
                    s / c
                })
            },
        ),
        MathFn::Asin => v.asin(),
        MathFn::Acos => v.acos(),
        MathFn::Atan => via_f64x4(v, |d| d.atan()),
        MathFn::Sinh => beyond(
            v,
            HYPERBOLIC_SIMD_LIMIT,
            |x| (x as f64).sinh() as f32,
            |v| v.sinh(),
        ),
        MathFn::Cosh => beyond(
            v,
            HYPERBOLIC_SIMD_LIMIT,
            |x| (x as f64).cosh() as f32,
            |v| v.cosh(),
        ),
        MathFn::Expm1 => via_f64x4(v, |d| d.exp_m1()),
        MathFn::Log1p => via_f64x4(v, |d| d.ln_1p()),
        MathFn::Erf => via_f64x4(v, |d| crate::kernels::erf::erf4(crate::kernels::erf::fit(), d)),
        MathFn::Gelu => gelu8(v),
        MathFn::GeluTanh => gelu_tanh8(v),
    }
}

/// Below this, `1 + erf(x/√2)` cancels past what the erf fit's absolute
/// error (7e-11) leaves within an f32 ULP, so those lanes take the
/// scalar f64 function.
const GELU_SIMD_FLOOR: f32 = -3.0;

/// `x/2 · (1 + erf(x/√2))` in f64 lanes (the erf fit of `erf.rs`), rounded
/// once: within 1 ULP for x ≥ -3; lanes below (and NaN) take [`gelu_f64`].
fn gelu8(v: f32x8) -> f32x8 {
    below(v, GELU_SIMD_FLOOR, gelu_f64, |v| {
        via_f64x4(v, |d| {
            let e = crate::kernels::erf::erf4(
                crate::kernels::erf::fit(),
                d * f64x4::splat(std::f64::consts::FRAC_1_SQRT_2),
            );
            f64x4::splat(0.5) * d * (f64x4::splat(1.0) + e)
        })
    })
}

/// `simd(v)`, with the lanes of `v` below `floor` (and NaN) replaced by
/// the f64 function `g` rounded once (a vector of only such lanes skips
/// `simd`).
#[inline(always)]
fn below(v: f32x8, floor: f32, g: fn(f64) -> f64, simd: impl Fn(f32x8) -> f32x8) -> f32x8 {
    let low = !v.simd_ge(f32x8::splat(floor)).to_bitmask() & 0xff;
    let scalar = |x: f32| g(f64::from(x)) as f32;
    if low == 0xff {
        return f32x8::new(v.to_array().map(scalar));
    }
    let r = simd(v);
    if low == 0 {
        return r;
    }
    let (mut out, xs) = (r.to_array(), v.to_array());
    for (i, (o, &x)) in out.iter_mut().zip(&xs).enumerate() {
        if low >> i & 1 == 1 {
            *o = scalar(x);
        }
    }
    f32x8::new(out)
}

/// The GELU's definition in f64 (`libm`'s erf).
pub(crate) fn gelu_f64(x: f64) -> f64 {
    0.5 * x * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2))
}

/// `2 · √(2/π)` and `2 · √(2/π) · 0.044715`: the tanh GELU is
/// `x · σ(z)` with `z = A·x + B·x³` (as `(1 + tanh(z/2))/2 = σ(z)`).
pub(crate) const GELU_TANH_A: f64 = 1.595_769_121_605_730_7;
pub(crate) const GELU_TANH_B: f64 = GELU_TANH_A * 0.044_715;

/// Below this, the tanh GELU's f32 kernels hand lanes to
/// [`gelu_tanh_f64`]: its results there are tiny or subnormal (at -9,
/// about -1.3e-28, with `exp(−z)` near f32's limit), and -inf gives NaN
/// as the formula does.
pub(crate) const GELU_TANH_FLOOR: f32 = -9.0;

/// The tanh GELU's definition in f64, as `x / (1 + exp(−z))`: the
/// formula's `x/2 · (1 + tanh(z/2))` cancels for x < 0, where `1 + tanh`
/// loses what the result keeps (f64's `tanh(-33)` is already -1).
pub(crate) fn gelu_tanh_f64(x: f64) -> f64 {
    x / (1.0 + (-x * (GELU_TANH_A + GELU_TANH_B * x * x)).exp())
}

/// The tanh GELU in f64 lanes, rounded once: lanes below
/// [`GELU_TANH_FLOOR`] (and NaN) take [`gelu_tanh_f64`].
fn gelu_tanh8(v: f32x8) -> f32x8 {
    below(v, GELU_TANH_FLOOR, gelu_tanh_f64, |v| {
        via_f64x4(v, |d| {
            let z = d * (f64x4::splat(GELU_TANH_A) + f64x4::splat(GELU_TANH_B) * d * d);
            d / (f64x4::ONE + (-z).exp())
        })
    })
}

#[inline(always)]
fn load8(s: &[f32]) -> f32x8 {
    let mut a = [0.0f32; 8];
    a[..s.len()].copy_from_slice(s);
    f32x8::new(a)
}

/// The kernel for one function: full vectors, then the padded tail.
#[inline(always)]
fn map_f32(src: &[f32], dst: &mut [f32], g: impl Fn(f32x8) -> f32x8) {
    let mut d = dst.chunks_exact_mut(8);
    let mut s = src.chunks_exact(8);
    for (o, i) in (&mut d).zip(&mut s) {
        o.copy_from_slice(&g(load8(i)).to_array());
    }
    let (o, i) = (d.into_remainder(), s.remainder());
    if !i.is_empty() {
        let r = g(load8(i)).to_array();
        o.copy_from_slice(&r[..i.len()]);
    }
}

#[inline(always)]
fn map_f32_inplace(buf: &mut [f32], g: impl Fn(f32x8) -> f32x8) {
    let mut d = buf.chunks_exact_mut(8);
    for o in &mut d {
        let r = g(load8(o)).to_array();
        o.copy_from_slice(&r);
    }
    let o = d.into_remainder();
    if !o.is_empty() {
        let r = g(load8(o)).to_array();
        let n = o.len();
        o.copy_from_slice(&r[..n]);
    }
}

impl VMath for f32 {
    fn map(f: MathFn, src: &[f32], dst: &mut [f32]) {
        if crate::kernels::fastmath::map(f, src, dst) {
            return;
        }
        // One monomorphized loop per function: `f` is matched once, not
        // per vector.
        macro_rules! each {
            ($($k:ident),*) => {
                match f {
                    $(MathFn::$k => map_f32(src, dst, |v| apply8(MathFn::$k, v)),)*
                }
            };
        }
        each!(
            Exp, Log, Sqrt, Tanh, Sigmoid, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Expm1, Log1p, Erf,
            Gelu, GeluTanh
        )
    }

    fn map_inplace(f: MathFn, buf: &mut [f32]) {
        if crate::kernels::fastmath::map_inplace(f, buf) {
            return;
        }
        macro_rules! each {
            ($($k:ident),*) => {
                match f {
                    $(MathFn::$k => map_f32_inplace(buf, |v| apply8(MathFn::$k, v)),)*
                }
            };
        }
        each!(
            Exp, Log, Sqrt, Tanh, Sigmoid, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Expm1, Log1p, Erf,
            Gelu, GeluTanh
        )
    }

    fn one(f: MathFn, x: f32) -> f32 {
        let mut out = [0f32];
        Self::map(f, &[x], &mut out);
        out[0]
    }
}

// ----- f64 ------------------------------------------------------------------

fn f64_fn(f: MathFn) -> fn(f64) -> f64 {
    match f {
        MathFn::Exp => f64::exp,
        MathFn::Log => f64::ln,
        MathFn::Sqrt => f64::sqrt,
        MathFn::Tanh => f64::tanh,
        MathFn::Sin => f64::sin,
        MathFn::Cos => f64::cos,
        MathFn::Tan => f64::tan,
        MathFn::Asin => f64::asin,
        MathFn::Acos => f64::acos,
        MathFn::Atan => f64::atan,
        MathFn::Sinh => f64::sinh,
        MathFn::Cosh => f64::cosh,
        MathFn::Expm1 => f64::exp_m1,
        MathFn::Log1p => f64::ln_1p,
        MathFn::Erf => libm::erf,
        MathFn::Gelu => gelu_f64,
        MathFn::GeluTanh => gelu_tanh_f64,
        MathFn::Sigmoid => |x: f64| {
            let e = (-x.abs()).exp();
            if x < 0.0 {
                e / (1.0 + e)
            } else {
                1.0 / (1.0 + e)
            }
        },
    }
}

impl VMath for f64 {
    fn map(f: MathFn, src: &[f64], dst: &mut [f64]) {
        let g = f64_fn(f);
        dst.iter_mut().zip(src).for_each(|(o, &x)| *o = g(x));
    }

    fn map_inplace(f: MathFn, buf: &mut [f64]) {
        let g = f64_fn(f);
        buf.iter_mut().for_each(|x| *x = g(*x));
    }

    fn one(f: MathFn, x: f64) -> f64 {
        f64_fn(f)(x)
    }
}

// ----- f16 ------------------------------------------------------------------

/// f16 through the f32 kernels, a block at a time: widened, computed in
/// f32 and rounded once, as numpy's float16 loops do.
const F16_BLOCK: usize = 256;

macro_rules! vmath_half {
    ($($t:ty),*) => {$(
        impl VMath for $t {
            fn map(f: MathFn, src: &[$t], dst: &mut [$t]) {
                use half::slice::HalfFloatSliceExt;
                let (mut wide, mut out) = ([0f32; F16_BLOCK], [0f32; F16_BLOCK]);
                for (s, d) in src.chunks(F16_BLOCK).zip(dst.chunks_mut(F16_BLOCK)) {
                    let n = s.len();
                    s.convert_to_f32_slice(&mut wide[..n]);
                    f32::map(f, &wide[..n], &mut out[..n]);
                    d.convert_from_f32_slice(&out[..n]);
                }
            }

            fn map_inplace(f: MathFn, buf: &mut [$t]) {
                use half::slice::HalfFloatSliceExt;
                let mut wide = [0f32; F16_BLOCK];
                for b in buf.chunks_mut(F16_BLOCK) {
                    let n = b.len();
                    b.convert_to_f32_slice(&mut wide[..n]);
                    f32::map_inplace(f, &mut wide[..n]);
                    b.convert_from_f32_slice(&wide[..n]);
                }
            }

            fn one(f: MathFn, x: $t) -> $t {
                <$t>::from_f32(f32::one(f, x.to_f32()))
            }
        }
    )*};
}
vmath_half!(half::f16, half::bf16);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::compare::ulp_distance;
    use crate::DType;

    /// The `wide` kernels, which a CPU with AVX2 and FMA never runs
    /// through [`VMath`], hold the same bounds against the f64 functions:
    /// a ramp over the interesting range, specials, and every 4099th bit
    /// pattern (every binade of both signs).
    #[test]
    fn the_wide_kernels_hold_the_bounds_without_avx2() {
        let mut xs: Vec<f32> = (0..20_000).map(|i| (i as f32 - 10_000.0) * 0.0123).collect();
        xs.extend([
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -9.0,
            -9.000001,
            20.0,
        ]);
        xs.extend((0..u32::MAX / 4099).map(|i| f32::from_bits(i * 4099)));
        for f in [MathFn::Gelu, MathFn::GeluTanh] {
            let mut out = vec![0f32; xs.len()];
            map_f32(&xs, &mut out, |v| apply8(f, v));
            for (&x, &y) in xs.iter().zip(&out) {
                let want = f64_fn(f)(f64::from(x)) as f32;
                if want.is_nan() {
                    assert!(y.is_nan(), "{f:?}({x}) = {y}, want NaN");
                    continue;
                }
                let d = ulp_distance(f64::from(y), f64::from(want), DType::F32);
                assert!(d <= 2, "{f:?}({x}) = {y}, want {want} ({d} ULP)");
                if want == 0.0 {
                    assert_eq!(y.is_sign_negative(), want.is_sign_negative(), "{f:?}({x})");
                }
            }
        }
    }
}
