//! `x ** e` for a float `x` and one broadcast exponent that is a small
//! integer or half-integer (`x ** 3` of the tanh GELU, `x ** 2` of a
//! variance, `x ** 0.5`, `x ** -1`): multiplies and a square root instead of
//! the generic `powf`, which costs tens of nanoseconds an element.
//!
//! The value is computed in f64 and rounded once. For f32 and f16 inputs
//! `x²` is exact in f64 and every other power here rounds once in f64 before
//! the final rounding, so the result is `powf`'s correctly rounded one but
//! for a double rounding in about one case in 2²⁹; for f64 inputs `x³` and
//! `x⁴` round twice (within an ulp or two of `powf`). IEEE `pow`'s special
//! values (signed zeros, infinities, NaN) come out as `powf` gives them.

use crate::dtype::Element;

/// An exponent with a multiply-or-square-root form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmallPow {
    /// `x ** 0`: 1, for every `x` including NaN.
    Zero,
    /// `x ** n` for n in 1..=4.
    Int(u8),
    /// `x ** -1` and `x ** -2` (f32 and f16 only: in f64 `x²` can
    /// overflow where `x ** -2` is a subnormal).
    Recip(u8),
    /// `x ** 0.5`.
    Sqrt,
    /// `x ** -0.5`.
    RecipSqrt,
}

/// What runs a loop over `x ** e` for one [`SmallPow`] form
/// ([`SmallPow::dispatch`]).
pub(crate) trait PowLoop<T> {
    type Out;
    fn run(self, pow: impl Fn(T) -> T + Copy + Sync) -> Self::Out;
}

impl SmallPow {
    /// Runs `l` with `x ** e` as a function whose form is fixed when it is
    /// compiled: one loop per form, with no match on the form at each
    /// element (which kept `x ** 3` from vectorizing: it cost more than
    /// tanh an element).
    pub(crate) fn dispatch<T: Element, L: PowLoop<T>>(self, l: L) -> L::Out {
        match self {
            SmallPow::Zero => l.run(|x: T| SmallPow::Zero.apply(x)),
            SmallPow::Int(1) => l.run(|x: T| SmallPow::Int(1).apply(x)),
            SmallPow::Int(2) => l.run(|x: T| SmallPow::Int(2).apply(x)),
            SmallPow::Int(3) => l.run(|x: T| SmallPow::Int(3).apply(x)),
            SmallPow::Int(n) => l.run(move |x: T| SmallPow::Int(n).apply(x)),
            SmallPow::Recip(1) => l.run(|x: T| SmallPow::Recip(1).apply(x)),
            SmallPow::Recip(n) => l.run(move |x: T| SmallPow::Recip(n).apply(x)),
            SmallPow::Sqrt => l.run(|x: T| SmallPow::Sqrt.apply(x)),
            SmallPow::RecipSqrt => l.run(|x: T| SmallPow::RecipSqrt.apply(x)),
        }
    }

    /// The form of exponent `e` for elements of type `T`, if `T` is a
    /// float and `e` has one.
    pub fn of<T: Element>(e: T) -> Option<SmallPow> {
        if !T::DTYPE.is_float() {
            return None;
        }
        let e = e.to_f64();
        let narrow = T::DTYPE.size() < 8;
        Some(match e {
            0.0 => SmallPow::Zero,
            1.0 => SmallPow::Int(1),
            2.0 => SmallPow::Int(2),
            3.0 => SmallPow::Int(3),
            4.0 => SmallPow::Int(4),
            -1.0 => SmallPow::Recip(1),
            -2.0 if narrow => SmallPow::Recip(2),
            0.5 => SmallPow::Sqrt,
            -0.5 => SmallPow::RecipSqrt,
            _ => return None,
        })
    }

    /// `x ** e`.
    #[inline(always)]
    pub fn apply<T: Element>(self, x: T) -> T {
        let y = x.to_f64();
        let v = match self {
            SmallPow::Zero => 1.0,
            SmallPow::Int(n) => int_pow(y, n),
            SmallPow::Recip(n) => 1.0 / int_pow(y, n),
            // `+ 0.0` turns sqrt(-0) = -0 into pow's +0; pow(-inf, 0.5) is
            // +inf where sqrt gives NaN.
            SmallPow::Sqrt => {
                if y == f64::NEG_INFINITY {
                    f64::INFINITY
                } else {
                    y.sqrt() + 0.0
                }
            }
            SmallPow::RecipSqrt => {
                if y == f64::NEG_INFINITY {
                    0.0
                } else {
                    1.0 / (y.sqrt() + 0.0)
                }
            }
        };
        <T as Element>::from_f64(v)
    }
}

#[inline(always)]
fn int_pow(y: f64, n: u8) -> f64 {
    match n {
        1 => y,
        2 => y * y,
        3 => y * y * y,
        _ => {
            let s = y * y;
            s * s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Float;
    use proptest::prelude::*;

    const EXPONENTS: [f64; 9] = [0.0, 1.0, 2.0, 3.0, 4.0, -1.0, -2.0, 0.5, -0.5];

    /// Equal to powf but for a rounding or two, with the same special
    /// values (NaN where powf is NaN, equal infinities and signed zeros).
    fn same_as_powf<T: Float + std::fmt::Debug>(x: T, e: T, ulps: f64) {
        let Some(p) = SmallPow::of(e) else { return };
        let (got, want) = (p.apply(x), num_traits::Float::powf(x, e));
        let (g, w) = (Element::to_f64(got), Element::to_f64(want));
        if w.is_nan() || w.is_infinite() || w == 0.0 {
            assert!(
                (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits(),
                "{x:?} ** {e:?}: {got:?}, powf {want:?}"
            );
            return;
        }
        let ulp = Element::to_f64(<T as num_traits::Float>::epsilon()) * w.abs();
        assert!(
            (g - w).abs() <= ulps * ulp,
            "{x:?} ** {e:?}: {got:?}, powf {want:?}"
        );
    }

    #[test]
    fn special_values_match_powf() {
        let specials = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e-300,
            -1e300,
            3.0,
        ];
        for e in EXPONENTS {
            for x in specials {
                same_as_powf::<f64>(x, e, 2.0);
                same_as_powf::<f32>(x as f32, e as f32, 1.0);
                same_as_powf::<half::f16>(half::f16::from_f64(x), half::f16::from_f64(e), 1.0);
            }
        }
        assert_eq!(SmallPow::of(2.5f32), None);
        assert_eq!(SmallPow::of(-2.0f64), None);
        assert_eq!(SmallPow::of(-2.0f32), Some(SmallPow::Recip(2)));
    }

    proptest! {
        #[test]
        fn small_powers_match_powf(x in prop::num::f32::ANY, k in 0usize..9) {
            let e = EXPONENTS[k];
            same_as_powf::<f32>(x, e as f32, 1.0);
            same_as_powf::<f64>(f64::from(x) * 1e5, e, 2.0);
            same_as_powf::<half::f16>(half::f16::from_f32(x), half::f16::from_f64(e), 1.0);
        }
    }
}
