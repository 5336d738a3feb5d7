//! Division with rounding and remainders, numpy broadcasting:
//!
//! - `div_trunc(a, b)`: integer division rounding toward zero (ONNX's Div
//!   on integers, C's `/`), integer dtypes only; `MIN / -1` wraps and a zero
//!   divisor gives 0, as numpy's integer division does.
//! - `mod(a, b)`: numpy's `mod` (the result has the divisor's sign), or
//!   with attr `fmod` true C's `fmod` (the dividend's sign); any numeric
//!   dtype. An integer zero divisor gives 0 (numpy), a float one NaN.

use std::sync::Arc;

use crate::dtype::{DType, Num};
use crate::error::{dtype_err, refuse_dtype, Result};
use crate::ops::elementwise::zip2;
use crate::ops::typeinfo::{broadcast_concrete, broadcast_shapes};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// Which division.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DivKind {
    Trunc,
    Mod,
    Fmod,
}

/// Integer ops of [`DivKind`], with the truncated remainder as the base.
trait Rem: Num {
    fn div_trunc(a: Self, b: Self) -> Self;
    /// `a - trunc(a / b)·b`, 0 for a zero integer divisor.
    fn rem_trunc(a: Self, b: Self) -> Self;
    fn is_negative(a: Self) -> bool {
        a < Self::zero()
    }
}

macro_rules! rem_int {
    ($t:ty) => {
        impl Rem for $t {
            fn div_trunc(a: Self, b: Self) -> Self {
                if b == 0 {
                    0
                } else {
                    a.wrapping_div(b)
                }
            }
            fn rem_trunc(a: Self, b: Self) -> Self {
                if b == 0 {
                    0
                } else {
                    a.wrapping_rem(b)
                }
            }
        }
    };
}
rem_int!(i32);
rem_int!(i64);
rem_int!(u8);
rem_int!(i8);
rem_int!(u16);
rem_int!(i16);
rem_int!(u32);
rem_int!(u64);

macro_rules! rem_float {
    ($t:ty) => {
        impl Rem for $t {
            fn div_trunc(a: Self, b: Self) -> Self {
                (a / b).trunc()
            }
            fn rem_trunc(a: Self, b: Self) -> Self {
                a % b
            }
            fn is_negative(a: Self) -> bool {
                a.is_sign_negative()
            }
        }
    };
}
rem_float!(f32);
rem_float!(f64);

/// In f32, rounded once: numpy's float16 fmod and floor_divide loops.
macro_rules! rem_half {
    ($($t:ty),*) => {$(
        impl Rem for $t {
            fn div_trunc(a: Self, b: Self) -> Self {
                <$t>::from_f32((a.to_f32() / b.to_f32()).trunc())
            }
            fn rem_trunc(a: Self, b: Self) -> Self {
                a % b
            }
            fn is_negative(a: Self) -> bool {
                a.is_sign_negative()
            }
        }
    )*};
}
rem_half!(half::f16, half::bf16);

fn apply<T: Rem>(kind: DivKind, a: T, b: T) -> T {
    match kind {
        DivKind::Trunc => T::div_trunc(a, b),
        DivKind::Fmod => T::rem_trunc(a, b),
        DivKind::Mod => {
            let r = T::rem_trunc(a, b);
            if r != T::zero() && T::is_negative(r) != T::is_negative(b) {
                T::add_w(r, b)
            } else {
                r
            }
        }
    }
}

/// `div_trunc` or `mod`.
#[derive(Clone, Debug)]
pub struct IntDiv {
    pub kind: DivKind,
}

impl Op for IntDiv {
    fn name(&self) -> &str {
        match self.kind {
            DivKind::Trunc => "div_trunc",
            _ => "mod",
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let (a, b) = (&inputs[0], &inputs[1]);
        let ints = a.dtype.is_int();
        if a.dtype != b.dtype || a.dtype == DType::Bool || (self.kind == DivKind::Trunc && !ints) {
            return dtype_err(format!(
                "op '{}' needs {} inputs of one dtype, got {} and {}",
                self.name(),
                if self.kind == DivKind::Trunc {
                    "integer"
                } else {
                    "numeric"
                },
                a.dtype,
                b.dtype
            ));
        }
        Ok(vec![TypeInfo::new(
            a.dtype,
            broadcast_shapes(&a.shape, &b.shape)?,
        )])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let types: Vec<TypeInfo> = inputs
            .iter()
            .map(|t| TypeInfo::known(t.dtype(), t.shape()))
            .collect();
        self.infer(&types)?;
        let (a, b) = (&inputs[0], &inputs[1]);
        let out = ctx.output(0, a.dtype(), &broadcast_concrete(a.shape(), b.shape())?)?;
        let kind = self.kind;
        crate::dispatch_num!(a.dtype(),
            T => zip2::<T, T, T>(a, b, &out, move |x, y| apply(kind, x, y))?,
            return refuse_dtype(self.name(), a.dtype()));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        match self.kind {
            DivKind::Fmod => Attrs::new().with("fmod", true),
            _ => Attrs::new(),
        }
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register_op(Arc::new(IntDiv { kind: DivKind::Trunc }));
    r.register("mod", |a: &Attrs| {
        a.only("mod", &["fmod"])?;
        let kind = if a.bool("fmod")?.unwrap_or(false) {
            DivKind::Fmod
        } else {
            DivKind::Mod
        };
        Ok(Arc::new(IntDiv { kind }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::{apply, DivKind};

    #[test]
    fn signs_follow_numpy_and_c() {
        // np.mod, np.fmod and C's / on mixed signs.
        let cases = [
            (-7i64, 2i64, -3, 1, -1),
            (7, -2, -3, -1, 1),
            (-7, -2, 3, -1, -1),
            (7, 0, 0, 0, 0),
        ];
        for (a, b, q, m, f) in cases {
            assert_eq!(apply(DivKind::Trunc, a, b), q, "{a} / {b}");
            assert_eq!(apply(DivKind::Mod, a, b), m, "{a} mod {b}");
            assert_eq!(apply(DivKind::Fmod, a, b), f, "{a} fmod {b}");
        }
        assert_eq!(apply(DivKind::Mod, -1.0f64, f64::INFINITY), f64::INFINITY);
        assert_eq!(apply(DivKind::Mod, -4.5f32, 2.0), 1.5);
        assert!(apply(DivKind::Mod, 1.0f64, 0.0).is_nan());
    }
}
