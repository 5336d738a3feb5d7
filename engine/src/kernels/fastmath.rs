//! f32 `exp`, `sigmoid`, `tanh` and `gelu` with the CPU's widest SIMD,
//! chosen at run time.
//!
//! `wide` (the rest of [`super::vmath`]) picks its instructions when Vigil
//! is compiled, and a portable x86-64 build gets SSE2: two 4-lane halves
//! per 8-lane vector, no FMA. `rten-simd` instead compiles each kernel once
//! per instruction set and dispatches on what the CPU reports (AVX-512, or
//! AVX2 with FMA), and `rten-vecmath`'s `Exp` and `Tanh` run about 4x
//! faster than `wide`'s there. Checked over every f32 bit pattern against
//! an f64 reference rounded to f32 (`engine/examples/math_scan.rs`):
//! exp within 1 ULP, sigmoid (built on that exp here) and tanh within 2.
//! Zeros keep their sign, as numpy's do. GELU is Vigil's own ([`Gelu`]):
//! `rten-vecmath`'s erf is 6.6e-7 off in absolute terms, far outside the
//! 2 ULP every f32 kernel keeps.
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

use rten_simd::ops::{BitOps, FloatOps, IntOps, MaskOps, NumOps};
use rten_simd::{Isa, Simd, SimdOp, SimdUnaryOp};
use rten_vecmath::{Exp, Tanh};

use crate::kernels::chebyshev::power_series;
use crate::kernels::math_fn::MathFn;
use crate::kernels::vmath::{gelu_f64, gelu_tanh_f64, GELU_TANH_A, GELU_TANH_B, GELU_TANH_FLOOR};

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
///
/// `e` comes from [`ExpFit`] in one scaling by `2^j`, valid while `e` is a
/// normal number: the argument is never positive, so the overflow and
/// infinity handling of a general exp (a third of `rten-vecmath`'s `Exp`)
/// is never needed. A vector with a lane below [`SIGMOID_FAST_FLOOR`]
/// (subnormal `e`, or −inf) takes `Exp` instead. 1.25x faster than `Exp`
/// throughout on AVX-512, within the same 2 ULP (exhaustive scan).
struct Sigmoid(&'static ExpFit);

/// From here down, `exp(x)` may not be a normal f32 (2^-126 ≈ e^-87.34).
const SIGMOID_FAST_FLOOR: f32 = -87.0;

impl SimdUnaryOp<f32> for Sigmoid {
    #[inline(always)]
    fn eval<I: Isa>(&self, isa: I, x: I::F32) -> I::F32 {
        let ops = isa.f32();
        let a = ops.neg(ops.abs(x));
        let e = if isa.m32().any(ops.lt(a, ops.splat(SIGMOID_FAST_FLOOR))) {
            Exp::apply(isa, a)
        } else {
            exp_normal(isa, self.0, a)
        };
        // One division: the numerator is chosen first (a second division
        // cost as much as the exp on AVX-512).
        let d = ops.add(ops.one(), e);
        let n = ops.select(e, ops.one(), ops.lt(x, ops.zero()));
        ops.div(n, d)
    }
}

/// `exp(a)` for `a` in [−87, 88] (NaN gives NaN): `2^j (1 + w)` with
/// `w = r + r² q(r)`, `a = j ln2 + r`, |r| ≤ ln2/2.
#[inline(always)]
fn exp_normal<I: Isa>(isa: I, f: &ExpFit, a: I::F32) -> I::F32 {
    let ops = isa.f32();
    let (j, _, r) = f.reduce(isa, a);
    let w = ops.mul_add(ops.mul(r, r), f.q(isa, r), r);
    let scale = pow2(isa, j);
    ops.mul_add(w, scale, scale)
}

impl ExpFit {
    /// `a = j ln2 + r`: `j` rounded to an integer (as an f32), `r1 = a − j ·
    /// ln2_hi` (exact) and `r = r1 − j · ln2_lo`.
    #[inline(always)]
    fn reduce<I: Isa>(&self, isa: I, a: I::F32) -> (I::F32, I::F32, I::F32) {
        let ops = isa.f32();
        let magic = ops.splat(12_582_912.0); // 1.5 · 2^23: adding it rounds to an integer
        let j = ops.sub(ops.mul_add(a, ops.splat(std::f32::consts::LOG2_E), magic), magic);
        let r1 = ops.mul_add(j, ops.splat(-self.ln2_hi), a);
        let r = ops.mul_add(j, ops.splat(-self.ln2_lo), r1);
        (j, r1, r)
    }

    /// `q(r)` by Horner's rule.
    #[inline(always)]
    fn q<I: Isa>(&self, isa: I, r: I::F32) -> I::F32 {
        let ops = isa.f32();
        let mut q = ops.splat(self.q[EXP_TERMS - 1]);
        for &k in self.q[..EXP_TERMS - 1].iter().rev() {
            q = ops.mul_add(q, r, ops.splat(k));
        }
        q
    }
}

/// `2^j` for an integral `j` (as an f32) in the normal range.
#[inline(always)]
fn pow2<I: Isa>(isa: I, j: I::F32) -> I::F32 {
    let int_ops = isa.i32();
    let k = int_ops.add(isa.f32().to_int_trunc(j), int_ops.splat(127));
    int_ops.shift_left::<23>(k).reinterpret_cast()
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

/// Terms of GELU's fits, the fewest that keep the exhaustive scan within
/// 1 ULP with a margin (each fit's error is under 1/10 of an f32 ULP).
const GELU_P_TERMS: usize = 8;
const GELU_S_TERMS: usize = 14;
const EXP_TERMS: usize = 7;
/// |x| below this takes the series form, from it on the exp form.
const GELU_SPLIT: f32 = 1.0;
/// The exp form's fit covers t = |x| in [1, 5] as u = (t - 3) / 2, which
/// is exact in f32 for every t in [1, 6]: a rounded u would cost S up to
/// a ULP where it is steep.
const GELU_S_MID: f32 = 3.0;
const GELU_S_END: f32 = 5.0;
/// Below this, the f64 reference's `1 + erf(x/√2)` itself cancels (from
/// about -5.6 it is off by more than an f32 ULP), so lanes take the f64
/// definition, [`gelu_f64`], to give what it gives; so do -inf and, on
/// the way, nothing else.
const GELU_FAST_FLOOR: f32 = -5.0;

/// GELU's coefficients, fitted in f64 at first use and rounded to f32
/// (the constant terms, which set the result's last bits, as two f32s).
struct GeluFit {
    /// `P(s) = (Φ(√s) − ½)/√s` on s ∈ [0, 1], in powers of s.
    p: [f32; GELU_P_TERMS],
    p0_lo: f32,
    /// `S(t) = t · Φ(−t) · exp(t²/2)` on t ∈ [1, 5], in powers of
    /// u = (t − 3)/2: smooth, from 0.26 to 0.39 (→ 1/√(2π)).
    s: [f32; GELU_S_TERMS],
    s0_lo: f32,
}

/// `exp` on a reduced argument, for the kernels that build on it (GELU's
/// tail, sigmoid): `exp(j ln2 + r) = 2^j (1 + r + r² q(r))`.
struct ExpFit {
    /// `(exp(r) − 1 − r)/r²` on |r| ≤ ln2/2, in powers of r.
    q: [f32; EXP_TERMS],
    /// ln 2 as a 12-bit head (so `j · head` is exact for |j| < 2^11) and
    /// the rest.
    ln2_hi: f32,
    ln2_lo: f32,
}

fn exp_fit() -> &'static ExpFit {
    static FIT: OnceLock<ExpFit> = OnceLock::new();
    FIT.get_or_init(|| {
        use std::f64::consts::LN_2;
        let (q, _) = to_f32(power_series(
            |r: f64| {
                if r.abs() < 1e-3 {
                    // The series; the quotient below cancels there.
                    0.5 + r / 6.0 + r * r / 24.0 + r * r * r / 120.0
                } else {
                    (r.exp_m1() - r) / (r * r)
                }
            },
            -0.5 * LN_2,
            0.5 * LN_2,
        ));
        let ln2_hi = f32::from_bits((LN_2 as f32).to_bits() & 0xffff_f000);
        ExpFit {
            q,
            ln2_hi,
            ln2_lo: (LN_2 - f64::from(ln2_hi)) as f32,
        }
    })
}

fn to_f32<const N: usize>(c: [f64; N]) -> ([f32; N], f32) {
    (c.map(|v| v as f32), (c[0] - c[0] as f32 as f64) as f32)
}

fn gelu_fit() -> &'static GeluFit {
    static FIT: OnceLock<GeluFit> = OnceLock::new();
    FIT.get_or_init(|| {
        use std::f64::consts::{FRAC_1_SQRT_2, PI};
        let (p, p0_lo) = to_f32(power_series(
            |s| match s.sqrt() {
                0.0 => 1.0 / (2.0 * PI).sqrt(),
                x => 0.5 * libm::erf(x * FRAC_1_SQRT_2) / x,
            },
            0.0,
            f64::from(GELU_SPLIT * GELU_SPLIT),
        ));
        let mid = f64::from(GELU_S_MID);
        let half = f64::from(GELU_S_END) - mid;
        let (s, s0_lo) = to_f32(power_series(
            |u| {
                let t = mid + half * u;
                t * 0.5 * libm::erfc(t * FRAC_1_SQRT_2) * (0.5 * t * t).exp()
            },
            -1.0,
            1.0,
        ));
        GeluFit { p, p0_lo, s, s0_lo }
    })
}

/// `c(v)` by Horner's rule with FMA, as `hi + lo` with the last step's
/// rounding and `c[0]`'s tail in `lo`; also the sum of the higher terms
/// over `v` (`(c(v) − c[0])/v`).
#[inline(always)]
fn horner2<I: Isa>(isa: I, c: &[f32], c0_lo: f32, v: I::F32) -> (I::F32, I::F32, I::F32) {
    let ops = isa.f32();
    let n = c.len();
    let mut a = ops.splat(c[n - 1]);
    for &k in c[1..n - 1].iter().rev() {
        a = ops.mul_add(a, v, ops.splat(k));
    }
    let c0 = ops.splat(c[0]);
    let hi = ops.mul_add(a, v, c0);
    // c0 − hi is exact (they are within a factor of 2).
    let lo = ops.add(ops.mul_add(a, v, ops.sub(c0, hi)), ops.splat(c0_lo));
    (hi, lo, a)
}

/// GELU, `x · Φ(x)`, within 1 ULP of the f64 definition (exhaustive scan,
/// `engine/examples/math_scan.rs`):
///
/// - |x| < 1: `x · (½ + x · P(x²))`, with the sum and products carried as
///   two f32s, so the cancellation of `½ − |x| P` for x < 0 costs nothing;
/// - |x| ≥ 1, t = |x|: `t · Φ(−t) = exp(−t²/2) · S(t)`, t² split exactly
///   (`hi + lo`), exp(−hi/2) = 2^j (1 + w) by its own reduction and
///   polynomial, and the product `(1 + w) · S` again as two f32s: x < 0
///   gives `−exp(−t²/2) · S`, x > 0 `x − exp(−t²/2) · S` (t clamped to 6,
///   where that term is far below x's ULP, so nothing overflows);
/// - x < −5 (and −inf): the f64 definition, lane by lane.
struct Gelu(&'static GeluFit, &'static ExpFit);

impl SimdUnaryOp<f32> for Gelu {
    #[inline(always)]
    fn eval<I: Isa>(&self, isa: I, x: I::F32) -> I::F32 {
        let ops = isa.f32();
        let f = self.0;
        let c = |v: f32| ops.splat(v);
        let t = ops.abs(x);

        // |x| < 1.
        let s = ops.mul(x, x);
        let s_lo = ops.mul_add(x, x, ops.neg(s));
        let (ph, pl, p_tail) = horner2(isa, &f.p, f.p0_lo, s);
        let pl = ops.mul_add(p_tail, s_lo, pl);
        let xp_hi = ops.mul(x, ph);
        let xp_lo = ops.mul_add(x, ph, ops.neg(xp_hi));
        let half = c(0.5);
        let d_hi = ops.add(half, xp_hi);
        let d_err = ops.add(ops.sub(half, d_hi), xp_hi);
        let d_lo = ops.mul_add(x, pl, ops.add(d_err, xp_lo));
        let near = ops.mul_add(x, d_hi, ops.mul(x, d_lo));

        // |x| ≥ 1.
        let tc = ops.min(t, c(6.0));
        let hi = ops.mul(tc, tc);
        let lo = ops.mul_add(tc, tc, ops.neg(hi));
        let y = ops.mul(hi, c(-0.5));
        let e = self.1;
        let (j, r1, r) = e.reduce(isa, y);
        let r_lo = ops.mul_add(j, c(-e.ln2_lo), ops.sub(r1, r));
        let r2 = ops.mul(r, r);
        let q = e.q(isa, r);
        let w = ops.mul_add(r2, q, r);
        let w_lo = ops.mul_add(r2, q, ops.sub(r, w));
        let u = ops.mul(ops.sub(ops.min(t, c(GELU_S_END)), c(GELU_S_MID)), c(0.5));
        let (sh, sl, _) = horner2(isa, &f.s, f.s0_lo, u);
        let m_hi = ops.mul_add(w, sh, sh);
        let m_lo = ops.mul_add(w, sh, ops.sub(sh, m_hi));
        let tail = ops.mul_add(sh, ops.sub(ops.add(w_lo, r_lo), ops.mul(lo, half)), sl);
        let es = ops.add(m_hi, ops.add(m_lo, ops.mul_add(tail, w, tail)));
        // j in [-18, 0].
        let es = ops.mul(es, pow2(isa, j));
        // NaN fails both compares and comes out of `x − es`.
        let far = ops.select(ops.neg(es), ops.sub(x, es), ops.lt(x, ops.zero()));
        let out = ops.select(near, far, ops.lt(t, c(GELU_SPLIT)));

        let low = ops.lt(x, c(GELU_FAST_FLOOR));
        if isa.m32().any(low) {
            return low_lanes(isa, x, out, GELU_FAST_FLOOR, gelu_f64);
        }
        out
    }
}

/// `out`, with the lanes where x < `floor` replaced by the f64
/// definition `f`.
#[cold]
fn low_lanes<I: Isa>(isa: I, x: I::F32, out: I::F32, floor: f32, f: fn(f64) -> f64) -> I::F32 {
    let ops = isa.f32();
    let n = ops.len();
    let (mut xs, mut ys) = ([0f32; MAX_LANES], [0f32; MAX_LANES]);
    ops.store(x, &mut xs[..n]);
    ops.store(out, &mut ys[..n]);
    for (y, &x) in ys[..n].iter_mut().zip(&xs[..n]) {
        if x < floor {
            *y = f(f64::from(x)) as f32;
        }
    }
    ops.load(&ys[..n])
}

/// The tanh GELU, `x · σ(z)` with `z = A·x + B·x³` ([`GELU_TANH_A`]), within
/// 2 ULP of the f64 definition (exhaustive scan):
///
/// - the result is `x / (1 + e)`, `e = exp(−z)`: for x < 0 its relative
///   error is `z`'s absolute error, and `|z|` reaches 66 by x = −9, so
///   `z` is carried as two f32s (`x²`, `x³` and the products split
///   exactly by FMA); one f32 `z` would cost up to ~60 ULP there;
/// - `e = exp(−z_hi)` by [`exp_normal`], with `−z_hi` clamped to −87
///   where `e` no longer reaches the sum (and `x` to 20, so `x³` never
///   overflows); `1 + e · (1 − z_lo)` as two f32s, and the quotient
///   corrected by its remainder, so that neither the sum nor `z_lo`
///   costs a rounding;
/// - x < −9 (and −inf): the f64 definition, lane by lane.
struct GeluTanh {
    a: (f32, f32),
    b: (f32, f32),
    exp: &'static ExpFit,
}

impl GeluTanh {
    fn new() -> GeluTanh {
        let split = |v: f64| (v as f32, (v - f64::from(v as f32)) as f32);
        GeluTanh {
            a: split(GELU_TANH_A),
            b: split(GELU_TANH_B),
            exp: exp_fit(),
        }
    }
}

impl SimdUnaryOp<f32> for GeluTanh {
    #[inline(always)]
    fn eval<I: Isa>(&self, isa: I, x: I::F32) -> I::F32 {
        let ops = isa.f32();
        let c = |v: f32| ops.splat(v);
        let xc = ops.min(x, c(20.0));
        // x² and x³ as hi + lo.
        let s = ops.mul(xc, xc);
        let s_lo = ops.mul_add(xc, xc, ops.neg(s));
        let q = ops.mul(s, xc);
        let q_lo = ops.mul_add(s_lo, xc, ops.mul_add(s, xc, ops.neg(q)));
        // B·x³ and A·x as hi + lo.
        let (bh, bl) = (c(self.b.0), c(self.b.1));
        let bq = ops.mul(bh, q);
        let bq_lo = ops.add(
            ops.mul_add(bh, q, ops.neg(bq)),
            ops.mul_add(bl, q, ops.mul(bh, q_lo)),
        );
        let (ah, al) = (c(self.a.0), c(self.a.1));
        let ax = ops.mul(ah, xc);
        let ax_lo = ops.mul_add(al, xc, ops.mul_add(ah, xc, ops.neg(ax)));
        // z = A·x + B·x³ (terms of one sign): two-sum.
        let z = ops.add(ax, bq);
        let bb = ops.sub(z, ax);
        let z_err = ops.add(ops.sub(ax, ops.sub(z, bb)), ops.sub(bq, bb));
        let z_lo = ops.add(z_err, ops.add(ax_lo, bq_lo));

        // For x ≥ −9, −z ≤ 66.4: e stays a normal number.
        let e = exp_normal(isa, self.exp, ops.max(ops.neg(z), c(-87.0)));
        // d = 1 + e·(1 − z_lo) as hi + lo (two-sum by magnitude, e ≥ 0).
        let d = ops.add(ops.one(), e);
        let d_err = ops.select(
            ops.add(ops.sub(e, d), ops.one()),
            ops.add(ops.sub(ops.one(), d), e),
            ops.gt(e, ops.one()),
        );
        let d_lo = ops.mul_add(e, ops.neg(z_lo), d_err);
        // x / (d + d_lo): the quotient, then its correction from the exact
        // remainder.
        let q = ops.div(x, d);
        let rem = ops.mul_add(ops.neg(q), d, x);
        let out = ops.add(q, ops.div(ops.mul_add(ops.neg(q), d_lo, rem), d));
        // +inf (whose remainder is NaN), every x where σ(z) is 1, and
        // zeros, whose sign the correction's +0 would drop.
        let out = ops.select(x, out, ops.ge(x, c(20.0)));
        let out = ops.select(x, out, ops.eq(x, ops.zero()));

        let low = ops.lt(x, c(GELU_TANH_FLOOR));
        if isa.m32().any(low) {
            return low_lanes(isa, x, out, GELU_TANH_FLOOR, gelu_tanh_f64);
        }
        out
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
                let $op = &Sigmoid(exp_fit());
                Some($body)
            }
            MathFn::Tanh => {
                let $op = &SignedTanh;
                Some($body)
            }
            MathFn::Gelu => {
                let $op = &Gelu(gelu_fit(), exp_fit());
                Some($body)
            }
            MathFn::GeluTanh => {
                let $op = &GeluTanh::new();
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
        // Every 4099th bit pattern: every binade of both signs.
        xs.extend((0..u32::MAX / 4099).map(|i| f32::from_bits(i * 4099)));
        // (function, f64 reference, ULP bound)
        type Case = (MathFn, fn(f64) -> f64, u64);
        let cases: [Case; 5] = [
            (MathFn::Exp, f64::exp, 1),
            (MathFn::Sigmoid, |x| 1.0 / (1.0 + (-x).exp()), 2),
            (MathFn::Tanh, f64::tanh, 2),
            (MathFn::Gelu, gelu_f64, 1),
            (MathFn::GeluTanh, gelu_tanh_f64, 2),
        ];
        for (f, reference, bound) in cases {
            let mut out = vec![0f32; xs.len()];
            let src = Some(&xs[..]);
            let ran = with_kernel!(f, op => Map { op, src, dst: &mut out }.eval(isa));
            assert!(ran.is_some(), "{f:?} has a kernel");
            for (&x, &y) in xs.iter().zip(&out) {
                let want = reference(x as f64) as f32;
                if want.is_nan() {
                    assert!(y.is_nan(), "{f:?}({x}) = {y}, want NaN");
                    continue;
                }
                let d = ulp_distance(y as f64, want as f64, DType::F32);
                assert!(d <= bound, "{f:?}({x}) = {y}, want {want} ({d} ULP)");
                if want == 0.0 {
                    assert_eq!(y.is_sign_negative(), want.is_sign_negative(), "{f:?}({x})");
                }
            }
        }
    }
}
