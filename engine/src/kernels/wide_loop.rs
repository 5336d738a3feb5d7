//! Plain loops compiled for the CPU's widest SIMD, chosen at run time.
//!
//! A portable x86-64 build vectorizes a plain loop such as ReLU's, an add's
//! or `hard_swish`'s with SSE2 only: four f32 lanes. Run inside
//! `rten-simd`'s dispatch (as [`super::fastmath`]'s kernels are), the same
//! loop is compiled once per instruction set and runs with AVX-512 or AVX2
//! where the CPU has them. The element function is the same Rust code
//! either way, and Rust never contracts a multiply and an add into a fused
//! one, so every element gets the same bits on every path.

use rten_simd::{Isa, SimdOp};

/// Runs `body`, a short loop, compiled for the widest SIMD this CPU has
/// (the baseline's where it has neither AVX-512 nor AVX2). The closure
/// must be inlined into the dispatch for that: a long body is not, and
/// takes a [`SimdOp`] whose `eval` calls an `#[inline(always)]` function
/// instead (as `winograd`'s transforms do).
#[inline(always)]
pub(crate) fn run<R>(body: impl FnOnce() -> R) -> R {
    Wide(body).dispatch()
}

/// `dst[i] = f(src[i])`.
#[inline(always)]
pub(crate) fn map<T: Copy, U>(src: &[T], dst: &mut [U], f: impl Fn(T) -> U) {
    run(|| dst.iter_mut().zip(src).for_each(|(d, &x)| *d = f(x)))
}

/// `buf[i] = f(buf[i])`.
#[inline(always)]
pub(crate) fn map_inplace<T: Copy>(buf: &mut [T], f: impl Fn(T) -> T) {
    run(|| buf.iter_mut().for_each(|x| *x = f(*x)))
}

/// `out[i] = f(x[i], y[i])`.
#[inline(always)]
pub(crate) fn zip<X: Copy, Y: Copy, O>(x: &[X], y: &[Y], out: &mut [O], f: impl Fn(X, Y) -> O) {
    run(|| {
        out.iter_mut()
            .zip(x)
            .zip(y)
            .for_each(|((o, &a), &b)| *o = f(a, b))
    })
}

/// `x[i] = f(x[i], y[i])`.
#[inline(always)]
pub(crate) fn zip_inplace<T: Copy, Y: Copy>(x: &mut [T], y: &[Y], f: impl Fn(T, Y) -> T) {
    run(|| x.iter_mut().zip(y).for_each(|(a, &b)| *a = f(*a, b)))
}

/// A closure to run under [`SimdOp::dispatch`].
struct Wide<F>(F);

impl<R, F: FnOnce() -> R> SimdOp for Wide<F> {
    type Output = R;

    #[inline(always)]
    fn eval<I: Isa>(self, _isa: I) -> R {
        (self.0)()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::pointwise::{hard_swish, relu};

    /// Values whose results a wider vector could get wrong: NaNs of both
    /// signs, infinities, signed zeros, subnormals, and the edges of
    /// `hard_swish`'s clamp.
    fn awkward(n: usize) -> Vec<f32> {
        let special = [
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            f32::MIN_POSITIVE / 8.0,
            -f32::MIN_POSITIVE / 8.0,
            3.0,
            -3.0,
            f32::MAX,
        ];
        (0..n)
            .map(|i| match i % 3 {
                0 => special[i / 3 % special.len()],
                _ => (i as f32 * 0.37).sin() * 5.0,
            })
            .collect()
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// Every loop gives each element exactly the bits the element function
    /// gives it, at lengths around every vector width, on whichever
    /// instruction set this CPU dispatches to.
    #[test]
    fn wide_loops_give_every_element_the_functions_bits() {
        for n in (0..70).chain([1000, 4099]) {
            let x = awkward(n);
            let y: Vec<f32> = awkward(n + 5)[5..].to_vec();
            for f in [hard_swish::<f32>, relu::<f32>] {
                let want: Vec<f32> = x.iter().map(|&v| f(v)).collect();
                let mut got = vec![1.0; n];
                map(&x, &mut got, f);
                assert_eq!(bits(&got), bits(&want), "map, {n} elements");
                let mut got = x.clone();
                map_inplace(&mut got, f);
                assert_eq!(bits(&got), bits(&want), "map_inplace, {n} elements");
            }
            let add = |a: f32, b: f32| a + b;
            let want: Vec<f32> = x.iter().zip(&y).map(|(&a, &b)| add(a, b)).collect();
            let mut got = vec![1.0; n];
            zip(&x, &y, &mut got, add);
            assert_eq!(bits(&got), bits(&want), "zip, {n} elements");
            let mut got = x.clone();
            zip_inplace(&mut got, &y, add);
            assert_eq!(bits(&got), bits(&want), "zip_inplace, {n} elements");
        }
    }
}
