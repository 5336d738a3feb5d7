//! f32 `exp`, `sigmoid` and `tanh` with the CPU's widest SIMD, chosen at run time.
//!
//! `wide` (the rest of [`super::vmath`]) picks its instructions when Vigil
//! is compiled, and a portable x86-64 build gets SSE2: two 4-lane halves
//! per 8-lane vector, no FMA. `rten-simd` instead compiles each kernel once
//! per instruction set and dispatches on what the CPU reports (AVX-512, or
//! AVX2 with FMA), and `rten-vecmath`'s `Exp` and `Tanh` run about 4x
//! faster than `wide`'s there. Checked over every f32 bit pattern against
//! an f64 reference rounded to f32 (`engine/examples/math_scan.rs`):
//! exp within 1 ULP, sigmoid (built on that exp here) and tanh within 2.
//! Zeros keep their sign, as numpy's do.
//!
//! Without AVX2 and FMA, `rten-simd` falls back to a portable scalar path
//! that is slower than `wide`'s SSE2 code, so [`available`] is false and
//! the `wide` kernels stay in use. Results with FMA differ from those
//! without in the last bit, so one process always uses one path: the
//! choice is made once.
//!
//! Accuracy (≤ 2 ULP against an f64 reference, special values as numpy)
//! is property-tested with the other kernels in `engine/tests/vmath.rs`.

use std::sync::OnceLock;

use rten_simd::ops::{BitOps, FloatOps, NumOps};
use rten_simd::{Isa, SimdOp, SimdUnaryOp};
use rten_vecmath::{Exp, Tanh};

use crate::kernels::math_fn::MathFn;

/// Whether this CPU has the instructions the run-time kernels need.
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(detect)
}

#[cfg(target_arch = "x86_64")]
fn detect() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> bool {
    false
}

/// `1 / (1 + e)` for x ≥ 0 and `e / (1 + e)` for x < 0, `e = exp(-|x|)`: the
/// same formula as the `wide` kernel, so it never overflows and keeps
/// subnormal results for large negative x.
#[derive(Default)]
struct Sigmoid;

impl SimdUnaryOp<f32> for Sigmoid {
    #[inline(always)]
    fn eval<I: Isa>(&self, isa: I, x: I::F32) -> I::F32 {
        let ops = isa.f32();
        let e = Exp::apply(isa, ops.neg(ops.abs(x)));
        let d = ops.add(ops.one(), e);
        let pos = ops.div(ops.one(), d);
        let neg = ops.div(e, d);
        ops.select(neg, pos, ops.lt(x, ops.zero()))
    }
}

/// `rten-vecmath`'s tanh, with the sign of a zero kept (`tanh(+0)` comes
/// out `-0` there; numpy keeps it).
#[derive(Default)]
struct SignedTanh;

impl SimdUnaryOp<f32> for SignedTanh {
    #[inline(always)]
    fn eval<I: Isa>(&self, isa: I, x: I::F32) -> I::F32 {
        let ops = isa.f32();
        ops.select(x, Tanh {}.eval(isa, x), ops.eq(x, ops.zero()))
    }
}

/// The widest vector any instruction set has (AVX-512: 16 f32 lanes).
const MAX_LANES: usize = 16;

/// `dst[i] = op(src[i])`, or `buf[i] = op(buf[i])` with no `src`. The tail
/// is padded into one more vector, so an element's result does not depend
/// on its position.
struct Map<'a, Op> {
    op: &'a Op,
    src: Option<&'a [f32]>,
    dst: &'a mut [f32],
}

impl<Op: SimdUnaryOp<f32>> SimdOp for Map<'_, Op> {
    type Output = ();

    #[inline(always)]
    fn eval<I: Isa>(self, isa: I) {
        let ops = isa.f32();
        let n = ops.len();
        let mut d = self.dst.chunks_exact_mut(n);
        match self.src {
            Some(src) => {
                let mut s = src.chunks_exact(n);
                for (o, i) in (&mut d).zip(&mut s) {
                    ops.store(self.op.eval(isa, ops.load(i)), o);
                }
                tail(isa, self.op, s.remainder(), d.into_remainder());
            }
            None => {
                for o in &mut d {
                    ops.store(self.op.eval(isa, ops.load(o)), o);
                }
                let o = d.into_remainder();
                let mut pad = [0f32; MAX_LANES];
                pad[..o.len()].copy_from_slice(o);
                tail(isa, self.op, &pad[..o.len()], o);
            }
        }
    }
}

/// The last `src.len() < lanes` elements, through one zero-padded vector.
#[inline(always)]
fn tail<I: Isa, Op: SimdUnaryOp<f32>>(isa: I, op: &Op, src: &[f32], dst: &mut [f32]) {
    if src.is_empty() {
        return;
    }
    let ops = isa.f32();
    let n = ops.len();
    let mut pad = [0f32; MAX_LANES];
    pad[..src.len()].copy_from_slice(src);
    ops.store(op.eval(isa, ops.load(&pad[..n])), &mut pad[..n]);
    dst.copy_from_slice(&pad[..src.len()]);
}

/// `Some($body)` with `$op` bound to `f`'s kernel, `None` when `f` has
/// none: the one place that maps a [`MathFn`] to its kernel.
macro_rules! with_kernel {
    ($f:expr, $op:ident => $body:expr) => {
        match $f {
            MathFn::Exp => {
                let $op = &Exp {};
                Some($body)
            }
            MathFn::Sigmoid => {
                let $op = &Sigmoid;
                Some($body)
            }
            MathFn::Tanh => {
                let $op = &SignedTanh;
                Some($body)
            }
            _ => None,
        }
    };
}

/// `dst[i] = f(src[i])` with the run-time kernels; false (nothing written)
/// when `f` has none or the CPU lacks them.
pub fn map(f: MathFn, src: &[f32], dst: &mut [f32]) -> bool {
    apply(f, Some(src), dst)
}

/// `buf[i] = f(buf[i])` with the run-time kernels; false (nothing written)
/// when `f` has none or the CPU lacks them.
pub fn map_inplace(f: MathFn, buf: &mut [f32]) -> bool {
    apply(f, None, buf)
}

/// [`map`] with `src`, else [`map_inplace`] on `dst`.
fn apply(f: MathFn, src: Option<&[f32]>, dst: &mut [f32]) -> bool {
    if !available() {
        return false;
    }
    with_kernel!(f, op => Map { op, src, dst }.dispatch()).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::compare::ulp_distance;
    use crate::DType;

    /// The AVX2 kernels, which the dispatcher never picks on an AVX-512
    /// machine, run directly: within the same ULP bounds as the dispatched
    /// ones, with zeros' signs, infinities and NaN as numpy has them.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx2_kernels_hold_the_bounds_too() {
        let Some(isa) = rten_simd::isa::Avx2Isa::new().filter(|_| available()) else {
            eprintln!("skipped: this CPU has no AVX2+FMA");
            return;
        };
        let mut xs: Vec<f32> = (0..20_000).map(|i| (i as f32 - 10_000.0) * 0.0123).collect();
        xs.extend([
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            88.7,
            -103.9,
            1e-40,
        ]);
        // (function, f64 reference, ULP bound)
        type Case = (MathFn, fn(f64) -> f64, u64);
        let cases: [Case; 3] = [
            (MathFn::Exp, f64::exp, 1),
            (MathFn::Sigmoid, |x| 1.0 / (1.0 + (-x).exp()), 2),
            (MathFn::Tanh, f64::tanh, 2),
        ];
        for (f, reference, bound) in cases {
            let mut out = vec![0f32; xs.len()];
            let src = Some(&xs[..]);
            let ran = with_kernel!(f, op => Map { op, src, dst: &mut out }.eval(isa));
            assert!(ran.is_some(), "{f:?} has a kernel");
            for (&x, &y) in xs.iter().zip(&out) {
                let want = reference(x as f64) as f32;
                let d = ulp_distance(y as f64, want as f64, DType::F32);
                assert!(d <= bound, "{f:?}({x}) = {y}, want {want} ({d} ULP)");
                if want == 0.0 {
                    assert_eq!(y.is_sign_negative(), want.is_sign_negative(), "{f:?}({x})");
                }
            }
        }
    }
}
