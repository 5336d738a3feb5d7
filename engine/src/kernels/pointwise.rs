//! The elementwise functions an op or a fused run applies: the kinds of
//! unary and binary arithmetic, and one `match` per arity that both the
//! elementwise ops (on tensors) and the executor's fused runs (on tiles of
//! a buffer, [`apply_tile`]) go through, so a fused run computes exactly
//! what the ops compute.

use crate::dtype::{DType, Float, Num};
use crate::error::{dtype_err, op_err, Result};
use crate::kernels::math_fn::MathFn;
use crate::kernels::pow::{PowLoop, SmallPow};
use crate::kernels::vmath::VMath;
use crate::kernels::wide_loop;

/// Binary arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinKind {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Maximum,
    Minimum,
}

impl BinKind {
    pub const ALL: [BinKind; 7] = [
        BinKind::Add,
        BinKind::Sub,
        BinKind::Mul,
        BinKind::Div,
        BinKind::Pow,
        BinKind::Maximum,
        BinKind::Minimum,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BinKind::Add => "add",
            BinKind::Sub => "sub",
            BinKind::Mul => "mul",
            BinKind::Div => "div",
            BinKind::Pow => "pow",
            BinKind::Maximum => "maximum",
            BinKind::Minimum => "minimum",
        }
    }

    /// Bitwise commutative, so the pass may destroy either input. Not
    /// maximum/minimum: numpy's `maximum(0.0, -0.0)` is `0.0` but
    /// `maximum(-0.0, 0.0)` is `-0.0`.
    pub(crate) fn commutative(self) -> bool {
        matches!(self, BinKind::Add | BinKind::Mul)
    }

    /// numpy's true division turns integers into f64.
    pub(crate) fn out_dtype(self, input: DType) -> DType {
        if self == BinKind::Div && !input.is_float() {
            DType::F64
        } else {
            input
        }
    }
}

/// Unary math.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnKind {
    Neg,
    Abs,
    Exp,
    Log,
    Sqrt,
    Tanh,
    Sigmoid,
    Relu,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    Erf,
    Floor,
    Ceil,
    Round,
    Sign,
    Reciprocal,
    Log1p,
    Expm1,
    Softplus,
    Gelu,
    GeluTanh,
    HardSwish,
}

impl UnKind {
    pub const ALL: [UnKind; 31] = [
        UnKind::Neg,
        UnKind::Abs,
        UnKind::Exp,
        UnKind::Log,
        UnKind::Sqrt,
        UnKind::Tanh,
        UnKind::Sigmoid,
        UnKind::Relu,
        UnKind::Sin,
        UnKind::Cos,
        UnKind::Tan,
        UnKind::Asin,
        UnKind::Acos,
        UnKind::Atan,
        UnKind::Sinh,
        UnKind::Cosh,
        UnKind::Asinh,
        UnKind::Acosh,
        UnKind::Atanh,
        UnKind::Erf,
        UnKind::Floor,
        UnKind::Ceil,
        UnKind::Round,
        UnKind::Sign,
        UnKind::Reciprocal,
        UnKind::Log1p,
        UnKind::Expm1,
        UnKind::Softplus,
        UnKind::Gelu,
        UnKind::GeluTanh,
        UnKind::HardSwish,
    ];

    pub fn name(self) -> &'static str {
        match self {
            UnKind::Neg => "neg",
            UnKind::Abs => "abs",
            UnKind::Exp => "exp",
            UnKind::Log => "log",
            UnKind::Sqrt => "sqrt",
            UnKind::Tanh => "tanh",
            UnKind::Sigmoid => "sigmoid",
            UnKind::Relu => "relu",
            UnKind::Sin => "sin",
            UnKind::Cos => "cos",
            UnKind::Tan => "tan",
            UnKind::Asin => "asin",
            UnKind::Acos => "acos",
            UnKind::Atan => "atan",
            UnKind::Sinh => "sinh",
            UnKind::Cosh => "cosh",
            UnKind::Asinh => "asinh",
            UnKind::Acosh => "acosh",
            UnKind::Atanh => "atanh",
            UnKind::Erf => "erf",
            UnKind::Floor => "floor",
            UnKind::Ceil => "ceil",
            UnKind::Round => "round",
            UnKind::Sign => "sign",
            UnKind::Reciprocal => "reciprocal",
            UnKind::Log1p => "log1p",
            UnKind::Expm1 => "expm1",
            UnKind::Softplus => "softplus",
            UnKind::Gelu => "gelu",
            UnKind::GeluTanh => "gelu_tanh",
            UnKind::HardSwish => "hard_swish",
        }
    }

    /// Transcendental ops take floats only.
    pub(crate) fn float_only(self) -> bool {
        !matches!(self, UnKind::Neg | UnKind::Abs | UnKind::Relu | UnKind::Sign)
    }
}

/// Where an in-place binary function `x = f(x, y)` is applied: to tensors
/// (the `_inplace` ops) or to one tile of a fused run ([`apply_tile`]).
pub(crate) trait BinaryTarget<T> {
    type Out;
    fn zip(self, f: impl Fn(T, T) -> T) -> Self::Out;
    /// The second operand's value when it is one element, broadcast.
    fn scalar(&self) -> Option<T>;
}

/// The second operand of a binary step in a fused run.
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a, T> {
    /// One element, broadcast.
    Scalar(T),
    /// As many elements as the swept buffer, in the same order.
    Slice(&'a [T]),
    /// The destroyed input itself (`x * x`).
    Itself,
    /// Broadcast into the swept value as runs ([`Repeat`]).
    Repeat(&'a [T], Repeat),
}

impl<T: Copy> Operand<'_, T> {
    /// The value when the operand is one element.
    fn scalar(&self) -> Option<T> {
        match *self {
            Operand::Scalar(b) => Some(b),
            _ => None,
        }
    }
}

/// `tile = f(tile, y)` over the tile starting at element `at` of the buffer.
struct OnBinaryTile<'a, 'y, T> {
    tile: &'a mut [T],
    at: usize,
    y: Operand<'y, T>,
}

impl<T: Copy> BinaryTarget<T> for OnBinaryTile<'_, '_, T> {
    type Out = ();
    fn zip(self, f: impl Fn(T, T) -> T) {
        match self.y {
            Operand::Scalar(b) => wide_loop::map_inplace(self.tile, |a| f(a, b)),
            Operand::Slice(ys) => {
                let ys = &ys[self.at..self.at + self.tile.len()];
                wide_loop::zip_inplace(self.tile, ys, f);
            }
            Operand::Itself => wide_loop::map_inplace(self.tile, |a| f(a, a)),
            Operand::Repeat(ys, r) => r.zip_inplace(self.tile, self.at, ys, f),
        }
    }
    fn scalar(&self) -> Option<T> {
        self.y.scalar()
    }
}

/// How an operand broadcast into a contiguous value of another shape
/// repeats, so that both are walked as plain slices: aligned from the
/// right, the operand's dimensions other than 1 are one block equal to
/// the value's there (a per-channel scale `[C, 1, 1]` over `[N, C, H, W]`,
/// a bias `[C]` over `[N, L, C]`), and element `i` of the value meets
/// operand element `(i / inner) % len`. ndarray's broadcasting zip walks
/// such operands element by element against their strides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repeat {
    /// Elements of the value per operand element: the product of the
    /// value's dimensions after the block.
    inner: usize,
}

impl Repeat {
    /// How an operand of shape `y` repeats over a value of shape `x`, if
    /// it does so; `[3, 1, 4]` into `[3, 2, 4]` repeats in two places and
    /// does not. One element repeats over the whole value.
    pub fn of(y: &[usize], x: &[usize]) -> Option<Repeat> {
        let pad = x.len().checked_sub(y.len())?;
        let dim = |p: usize| if p < pad { 1 } else { y[p - pad] };
        let Some(first) = (0..x.len()).find(|&p| dim(p) != 1) else {
            return Some(Repeat {
                inner: x.iter().product::<usize>().max(1),
            });
        };
        let last = (0..x.len()).rev().find(|&p| dim(p) != 1).unwrap_or(first);
        (first..=last).all(|p| dim(p) == x[p]).then(|| Repeat {
            inner: x[last + 1..].iter().product::<usize>().max(1),
        })
    }

    /// Calls `each(start, n, k)` for the runs of `n` positions from
    /// `start` (counted from 0) of the `len` positions from element `at`
    /// on: with `inner == 1`, positions meeting operand elements `k..k+n`
    /// in turn; else all meeting element `k`.
    #[inline(always)]
    fn runs(self, at: usize, len: usize, ylen: usize, mut each: impl FnMut(usize, usize, usize)) {
        if ylen == 0 {
            return;
        }
        if self.inner == 1 {
            // Whole rows of the operand after the first: no division each.
            let (mut start, mut k) = (0, at % ylen);
            while start < len {
                let n = (ylen - k).min(len - start);
                each(start, n, k);
                start += n;
                k = 0;
            }
            return;
        }
        let mut start = 0;
        while start < len {
            let i = at + start;
            let q = i / self.inner;
            let k = q % ylen;
            let n = ((q + 1) * self.inner - i).min(len - start);
            each(start, n, k);
            start += n;
        }
    }

    /// `x[j] = f(x[j], y at element at + j)`, `x` being the value's
    /// elements from `at` on.
    pub fn zip_inplace<T: Copy>(self, x: &mut [T], at: usize, ys: &[T], f: impl Fn(T, T) -> T) {
        let inner = self.inner;
        if inner == 1 {
            // Rows of the operand (a per-channel scale over a channels-last
            // value: rows of C): one dispatch for them all, as a row of 16
            // or 32 elements costs less than a dispatch.
            return wide_loop::run(|| {
                self.runs(at, x.len(), ys.len(), |start, n, k| {
                    let seg = &mut x[start..start + n];
                    seg.iter_mut()
                        .zip(&ys[k..k + n])
                        .for_each(|(a, &b)| *a = f(*a, b));
                })
            });
        }
        self.runs(at, x.len(), ys.len(), |start, n, k| {
            let b = ys[k];
            wide_loop::map_inplace(&mut x[start..start + n], |a| f(a, b));
        });
    }

    /// `o[j] = f(x[j], y at element j)` over the whole value.
    pub fn zip<X: Copy, Y: Copy, O>(self, x: &[X], ys: &[Y], o: &mut [O], f: impl Fn(X, Y) -> O) {
        self.zip_at(0, x, ys, o, f)
    }

    /// `o[j] = f(x[j], y at element at + j)`, `x` and `o` being the
    /// value's elements from `at` on.
    pub fn zip_at<X: Copy, Y: Copy, O>(
        self,
        at: usize,
        x: &[X],
        ys: &[Y],
        o: &mut [O],
        f: impl Fn(X, Y) -> O,
    ) {
        let inner = self.inner;
        if inner == 1 {
            // One dispatch for every row, as in `zip_inplace`.
            return wide_loop::run(|| {
                self.runs(at, o.len().min(x.len()), ys.len(), |start, n, k| {
                    let (seg, xs) = (&mut o[start..start + n], &x[start..start + n]);
                    seg.iter_mut()
                        .zip(xs)
                        .zip(&ys[k..k + n])
                        .for_each(|((o, &a), &b)| *o = f(a, b));
                })
            });
        }
        self.runs(at, o.len().min(x.len()), ys.len(), |start, n, k| {
            let b = ys[k];
            wide_loop::map(&x[start..start + n], &mut o[start..start + n], |a| f(a, b));
        });
    }
}

/// Every in-place binary kind on any numeric dtype.
pub(crate) fn binary_inplace<T: Num, A: BinaryTarget<T>>(kind: BinKind, a: A) -> Result<A::Out> {
    Ok(match kind {
        BinKind::Add => a.zip(T::add_w),
        BinKind::Sub => a.zip(T::sub_w),
        BinKind::Mul => a.zip(T::mul_w),
        // True division of integers gives floats, which cannot be written
        // back into the integer input.
        BinKind::Div if !T::DTYPE.is_float() => {
            return dtype_err(format!("op 'div_inplace' needs float inputs, got {}", T::DTYPE))
        }
        BinKind::Div => a.zip(|a: T, b: T| a / b),
        BinKind::Pow => match a.scalar().and_then(SmallPow::of) {
            Some(p) => p.dispatch::<T, _>(ZipPow(a)),
            None => a.zip(T::pow),
        },
        BinKind::Maximum => a.zip(T::maximum),
        BinKind::Minimum => a.zip(T::minimum),
    })
}

/// `x = x ** e` for one broadcast exponent `e` with a [`SmallPow`] form.
struct ZipPow<A>(A);

impl<T: Copy, A: BinaryTarget<T>> PowLoop<T> for ZipPow<A> {
    type Out = A::Out;
    fn run(self, pow: impl Fn(T) -> T + Copy + Sync) -> A::Out {
        self.0.zip(move |x: T, _| pow(x))
    }
}

/// What an in-place elementwise op does to each element of the input it
/// overwrites (input 0): see [`crate::ops::Op::pointwise`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pointwise {
    /// `x = f(x)`.
    Unary(UnKind),
    /// `x = f(x, y)`, input 1 broadcast into input 0.
    Binary(BinKind),
}

/// One step of a fused run over `tile`, the part of the swept buffer that
/// starts at element `at`; `y` is a binary step's second operand.
pub fn apply_tile<T: Float + VMath>(
    p: Pointwise,
    tile: &mut [T],
    at: usize,
    y: Option<Operand<'_, T>>,
) -> Result<()> {
    match (p, y) {
        (Pointwise::Unary(kind), _) => {
            unary_float::<T, _>(kind, OnTile(tile));
            Ok(())
        }
        (Pointwise::Binary(kind), Some(y)) => binary_inplace::<T, _>(kind, OnBinaryTile { tile, at, y }),
        (Pointwise::Binary(kind), None) => {
            op_err(format!("internal: fused '{}' has no operand", kind.name()))
        }
    }
}

/// `dst = f(src, y)`: [`apply_tile`] on a copy of `src` (which starts at
/// element `at` of the swept value), without the copy. A folded pure
/// node's tile goes straight to its scratch tile this way, and a head's
/// tile from the head's input to the fresh buffer.
pub fn map_tile<T: Float + VMath>(
    p: Pointwise,
    src: &[T],
    dst: &mut [T],
    at: usize,
    y: Option<Operand<'_, T>>,
) -> Result<()> {
    match (p, y) {
        (Pointwise::Unary(kind), _) => {
            unary_float::<T, _>(kind, FromTile(src, dst));
            Ok(())
        }
        (Pointwise::Binary(kind), Some(y)) => {
            binary_inplace::<T, _>(kind, FromBinaryTile { src, dst, at, y })
        }
        (Pointwise::Binary(kind), None) => {
            op_err(format!("internal: fused '{}' has no operand", kind.name()))
        }
    }
}

/// `dst = f(src, y)` over the tile starting at element `at` of the value.
struct FromBinaryTile<'a, 'y, T> {
    src: &'a [T],
    dst: &'a mut [T],
    at: usize,
    y: Operand<'y, T>,
}

impl<T: Copy> BinaryTarget<T> for FromBinaryTile<'_, '_, T> {
    type Out = ();
    fn zip(self, f: impl Fn(T, T) -> T) {
        let (src, dst) = (self.src, self.dst);
        match self.y {
            Operand::Scalar(b) => wide_loop::map(src, dst, |a| f(a, b)),
            Operand::Slice(ys) => {
                let ys = &ys[self.at..self.at + dst.len()];
                wide_loop::zip(src, ys, dst, f);
            }
            Operand::Itself => wide_loop::map(src, dst, |a| f(a, a)),
            Operand::Repeat(ys, r) => r.zip_at(self.at, src, ys, dst, f),
        }
    }
    fn scalar(&self) -> Option<T> {
        self.y.scalar()
    }
}

pub(crate) fn relu<T: Num>(x: T) -> T {
    // NaN stays NaN, as numpy's maximum(x, 0) does.
    if x > T::zero() || x.partial_cmp(&x).is_none() {
        x
    } else {
        T::zero()
    }
}

pub(crate) fn sign<T: Num>(x: T) -> T {
    // NaN stays NaN, as numpy's sign does.
    if x > T::zero() {
        T::one()
    } else if x < T::zero() {
        T::sub_w(T::zero(), T::one())
    } else {
        x
    }
}

/// A function computed in f64 and rounded once: round-half-to-even.
fn via_f64<T: Float>(x: T, f: fn(f64) -> f64) -> T {
    <T as crate::dtype::Element>::from_f64(f(crate::dtype::Element::to_f64(x)))
}

/// `log(1 + exp(x))` without overflow: `max(x, 0) + log1p(exp(-|x|))`.
fn softplus<T: Float>(x: T) -> T {
    use num_traits::Float as F;
    F::max(x, T::zero()) + F::ln_1p(F::exp(-F::abs(x)))
}

/// `x · max(0, min(1, x/6 + 1/2))` (ONNX HardSwish). A NaN `x` gives NaN
/// through the product whatever the clamp gives, so the clamp needs no NaN
/// test and the loop vectorizes (with one it ran at 0.9 ns an element).
pub(crate) fn hard_swish<T: Float>(x: T) -> T {
    use num_traits::Float as F;
    let c = |v: f64| <T as crate::dtype::Element>::from_f64(v);
    x * F::min(F::max(x * c(1.0 / 6.0) + c(0.5), T::zero()), T::one())
}

/// Where a unary function is applied: to tensors (the ops) or to one tile
/// of a fused run ([`apply_tile`]). One `match` over the kinds
/// ([`unary_float`]) serves both, so a fused run computes exactly what the
/// ops compute; the methods are generic, so each kind still gets its own
/// monomorphized (vectorized) loop.
pub(crate) trait UnaryTarget<T> {
    type Out;
    /// A function with a slice kernel in [`VMath`].
    fn math(self, f: MathFn) -> Self::Out;
    /// Any other function, element by element.
    fn map(self, g: impl Fn(T) -> T + Sync) -> Self::Out;
}

/// `tile[i] = f(tile[i])`.
struct OnTile<'a, T>(&'a mut [T]);

impl<T: VMath> UnaryTarget<T> for OnTile<'_, T> {
    type Out = ();
    fn math(self, f: MathFn) {
        T::map_inplace(f, self.0)
    }
    fn map(self, g: impl Fn(T) -> T + Sync) {
        wide_loop::map_inplace(self.0, g)
    }
}

/// `dst[i] = f(src[i])`.
struct FromTile<'a, T>(&'a [T], &'a mut [T]);

impl<T: VMath> UnaryTarget<T> for FromTile<'_, T> {
    type Out = ();
    fn math(self, f: MathFn) {
        T::map(f, self.0, self.1)
    }
    fn map(self, g: impl Fn(T) -> T + Sync) {
        wide_loop::map(self.0, self.1, g)
    }
}

/// Every unary kind on a float dtype.
pub(crate) fn unary_float<T: Float + VMath, A: UnaryTarget<T>>(kind: UnKind, a: A) -> A::Out {
    match kind {
        UnKind::Exp => a.math(MathFn::Exp),
        UnKind::Log => a.math(MathFn::Log),
        UnKind::Sqrt => a.math(MathFn::Sqrt),
        UnKind::Tanh => a.math(MathFn::Tanh),
        UnKind::Sigmoid => a.math(MathFn::Sigmoid),
        UnKind::Sin => a.math(MathFn::Sin),
        UnKind::Cos => a.math(MathFn::Cos),
        UnKind::Tan => a.math(MathFn::Tan),
        UnKind::Asin => a.math(MathFn::Asin),
        UnKind::Acos => a.math(MathFn::Acos),
        UnKind::Atan => a.math(MathFn::Atan),
        UnKind::Sinh => a.math(MathFn::Sinh),
        UnKind::Cosh => a.math(MathFn::Cosh),
        // No slice kernel: rare in models, so the f64 function rounded once.
        UnKind::Asinh => a.map(|x: T| via_f64(x, f64::asinh)),
        UnKind::Acosh => a.map(|x: T| via_f64(x, f64::acosh)),
        UnKind::Atanh => a.map(|x: T| via_f64(x, f64::atanh)),
        UnKind::Floor => a.map(T::floor),
        UnKind::Ceil => a.map(T::ceil),
        UnKind::Reciprocal => a.map(T::recip),
        UnKind::Log1p => a.math(MathFn::Log1p),
        UnKind::Expm1 => a.math(MathFn::Expm1),
        UnKind::Softplus => a.map(softplus::<T>),
        UnKind::Erf => a.math(MathFn::Erf),
        UnKind::Gelu => a.math(MathFn::Gelu),
        UnKind::GeluTanh => a.math(MathFn::GeluTanh),
        UnKind::HardSwish => a.map(hard_swish::<T>),
        UnKind::Round => a.map(|x: T| via_f64(x, f64::round_ties_even)),
        UnKind::Neg => a.map(T::neg_w),
        UnKind::Abs => a.map(<T as Num>::abs),
        UnKind::Relu => a.map(relu::<T>),
        UnKind::Sign => a.map(sign::<T>),
    }
}

#[cfg(test)]
mod tests {
    use super::Repeat;

    /// Each value element's operand element, by numpy's broadcasting of
    /// `y` into `x`.
    fn definition(y: &[usize], x: &[usize]) -> Vec<usize> {
        let pad = x.len() - y.len();
        let size: usize = x.iter().product();
        let mut idx = vec![0usize; x.len()];
        let mut out = Vec::with_capacity(size);
        for _ in 0..size {
            let mut k = 0;
            for (p, &i) in idx.iter().enumerate().skip(pad) {
                let d = y[p - pad];
                k = k * d + if d == 1 { 0 } else { i };
            }
            out.push(k);
            for p in (0..x.len()).rev() {
                idx[p] += 1;
                if idx[p] < x[p] {
                    break;
                }
                idx[p] = 0;
            }
        }
        out
    }

    #[test]
    fn repeats_are_the_broadcasts_that_run_and_meet_numpys_elements() {
        let x = [2, 3, 4, 5];
        for (y, runs) in [
            (&[5][..], true),
            (&[4, 5][..], true),
            (&[3, 1, 1][..], true),
            (&[1, 3, 4, 1][..], true),
            (&[2, 1, 1, 1][..], true),
            (&[1][..], true),
            (&[][..], true),
            (&[3, 1, 5][..], false),
            (&[2, 1, 1, 5][..], false),
            (&[4, 1][..], true),
            (&[3, 4, 6][..], false),
        ] {
            let r = Repeat::of(y, &x);
            assert_eq!(r.is_some(), runs, "{y:?}");
            let Some(r) = r else { continue };
            let n: usize = y.iter().product();
            let ys: Vec<usize> = (0..n).collect();
            let want = definition(y, &x);
            // Whole, and in pieces starting anywhere (a sweep's tiles).
            let mut got = vec![0usize; want.len()];
            r.zip(&vec![0usize; want.len()], &ys, &mut got, |_, k| k);
            assert_eq!(got, want, "{y:?}");
            for piece in [1, 7, 60] {
                let mut got = vec![0usize; want.len()];
                for (c, part) in got.chunks_mut(piece).enumerate() {
                    r.zip_inplace(part, c * piece, &ys, |_, k| k);
                }
                assert_eq!(got, want, "{y:?} in pieces of {piece}");
            }
        }
    }
}
