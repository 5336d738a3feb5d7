//! Bitwise ops on integer tensors, with numpy's names and broadcasting:
//! `bitwise_and`, `bitwise_or`, `bitwise_xor`, `bitwise_not`, `left_shift`
//! and `right_shift`, on every integer dtype.
//!
//! Shifts follow numpy (and ONNX's BitShift): bits shifted past the top are
//! dropped, a right shift of a signed value is arithmetic, and an amount
//! that is negative or at least the bit width saturates: 0, or -1 for a
//! right shift of a negative value. A Rust shift would instead panic in a
//! debug build and shift by the amount modulo the width in a release one,
//! as C and most hardware do.
//!
//! `bitcast` reinterprets each element's bits as another dtype of the same
//! width (numpy's `view`, ONNX's BitCast); bool is one byte, 0 or 1, and a
//! nonzero byte cast to bool is true.

use std::sync::Arc;

use crate::dtype::{DType, Element};
use crate::error::{dtype_err, Result};
use crate::ops::elementwise::{map1, zip2};
use crate::ops::typeinfo::{broadcast_concrete, broadcast_shapes};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// Which bitwise op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitKind {
    And,
    Or,
    Xor,
    Not,
    ShiftLeft,
    ShiftRight,
}

impl BitKind {
    pub const ALL: [BitKind; 6] = [
        BitKind::And,
        BitKind::Or,
        BitKind::Xor,
        BitKind::Not,
        BitKind::ShiftLeft,
        BitKind::ShiftRight,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BitKind::And => "bitwise_and",
            BitKind::Or => "bitwise_or",
            BitKind::Xor => "bitwise_xor",
            BitKind::Not => "bitwise_not",
            BitKind::ShiftLeft => "left_shift",
            BitKind::ShiftRight => "right_shift",
        }
    }
}

/// The integer element types, with the bit operations numpy defines.
trait Bits: Element {
    fn and(a: Self, b: Self) -> Self;
    fn or(a: Self, b: Self) -> Self;
    fn xor(a: Self, b: Self) -> Self;
    fn not(a: Self) -> Self;
    /// `a << n`; 0 when `n` is negative or at least the width.
    fn shl(a: Self, n: Self) -> Self;
    /// `a >> n`; when `n` is negative or at least the width, what every bit
    /// of `a` shifted out leaves: 0, or -1 for a negative `a`.
    fn shr(a: Self, n: Self) -> Self;
}

macro_rules! bits {
    ($sign_fill:expr; $($t:ty),*) => {$(
        impl Bits for $t {
            fn and(a: Self, b: Self) -> Self {
                a & b
            }
            fn or(a: Self, b: Self) -> Self {
                a | b
            }
            fn xor(a: Self, b: Self) -> Self {
                a ^ b
            }
            fn not(a: Self) -> Self {
                !a
            }
            fn shl(a: Self, n: Self) -> Self {
                u32::try_from(n).ok().and_then(|n| a.checked_shl(n)).unwrap_or(0)
            }
            fn shr(a: Self, n: Self) -> Self {
                let fill: fn(Self) -> Self = $sign_fill;
                u32::try_from(n).ok().and_then(|n| a.checked_shr(n)).unwrap_or_else(|| fill(a))
            }
        }
    )*};
}
bits!(|_| 0; u8, u16, u32, u64);
bits!(|a| if a < 0 { -1 } else { 0 }; i8, i16, i32, i64);

/// Runs `kind` on `inputs` into `out`, monomorphized for `T`.
fn run<T: Bits>(kind: BitKind, inputs: &[Tensor], out: &Tensor) -> Result<()> {
    let pair: fn(T, T) -> T = match kind {
        BitKind::Not => return map1::<T>(&inputs[0], out, T::not),
        BitKind::And => T::and,
        BitKind::Or => T::or,
        BitKind::Xor => T::xor,
        BitKind::ShiftLeft => T::shl,
        BitKind::ShiftRight => T::shr,
    };
    zip2::<T, T, T>(&inputs[0], &inputs[1], out, pair)
}

/// A bitwise op.
#[derive(Clone, Debug)]
pub struct Bitwise {
    pub kind: BitKind,
}

impl Bitwise {
    /// The dtype every input has, which must be an integer one.
    fn common_int(&self, mut dtypes: impl Iterator<Item = DType>) -> Result<DType> {
        let first = dtypes.next().unwrap_or(DType::Bool);
        match dtypes
            .find(|&d| d != first)
            .or((!first.is_int()).then_some(first))
        {
            Some(bad) => dtype_err(format!(
                "op '{}' takes integer inputs of one dtype, got {bad}",
                self.name()
            )),
            None => Ok(first),
        }
    }
}

impl Op for Bitwise {
    fn name(&self) -> &str {
        self.kind.name()
    }
    fn arity(&self) -> Arity {
        Arity::exactly(if self.kind == BitKind::Not { 1 } else { 2 })
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let dtype = self.common_int(inputs.iter().map(|t| t.dtype))?;
        let shape = match inputs {
            [a, b] => broadcast_shapes(&a.shape, &b.shape)?,
            _ => inputs[0].shape.clone(),
        };
        Ok(vec![TypeInfo::new(dtype, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let dtype = self.common_int(inputs.iter().map(Tensor::dtype))?;
        let out = match inputs {
            [a, b] => ctx.output(0, dtype, &broadcast_concrete(a.shape(), b.shape())?)?,
            _ => ctx.output(0, dtype, inputs[0].shape())?,
        };
        let kind = self.kind;
        match dtype {
            DType::U8 => run::<u8>(kind, inputs, &out)?,
            DType::U16 => run::<u16>(kind, inputs, &out)?,
            DType::U32 => run::<u32>(kind, inputs, &out)?,
            DType::U64 => run::<u64>(kind, inputs, &out)?,
            DType::I8 => run::<i8>(kind, inputs, &out)?,
            DType::I16 => run::<i16>(kind, inputs, &out)?,
            DType::I32 => run::<i32>(kind, inputs, &out)?,
            DType::I64 => run::<i64>(kind, inputs, &out)?,
            // `common_int` let only integer dtypes through.
            other => return dtype_err(format!("op '{}' does not take {other}", self.name())),
        }
        Ok(vec![out])
    }
}

/// An element's bits, zero-extended to 64, and back.
trait Raw: Element {
    fn raw(self) -> u64;
    fn from_raw(r: u64) -> Self;
}

macro_rules! raw_int {
    ($($t:ty => $u:ty),*) => {$(
        impl Raw for $t {
            fn raw(self) -> u64 {
                self as $u as u64
            }
            fn from_raw(r: u64) -> Self {
                r as $u as $t
            }
        }
    )*};
}
raw_int!(u8 => u8, u16 => u16, u32 => u32, u64 => u64, i8 => u8, i16 => u16, i32 => u32, i64 => u64);

macro_rules! raw_float {
    ($($t:ty => $u:ty),*) => {$(
        impl Raw for $t {
            fn raw(self) -> u64 {
                self.to_bits() as u64
            }
            fn from_raw(r: u64) -> Self {
                <$t>::from_bits(r as $u)
            }
        }
    )*};
}
raw_float!(f32 => u32, f64 => u64, crate::f16 => u16, crate::bf16 => u16);
raw_float!(
    crate::small::F8E4M3Fn => u8,
    crate::small::F8E4M3Fnuz => u8,
    crate::small::F8E5M2 => u8,
    crate::small::F8E5M2Fnuz => u8,
    crate::small::F4E2M1 => u8,
    crate::small::F8E8M0 => u8,
    crate::small::I4 => u8,
    crate::small::U4 => u8,
    crate::small::I2 => u8,
    crate::small::U2 => u8
);

impl Raw for bool {
    fn raw(self) -> u64 {
        self as u64
    }
    fn from_raw(r: u64) -> Self {
        r != 0
    }
}

/// `bitcast` to the `dtype` attr: the same bits read as another dtype of
/// the same width.
#[derive(Clone, Debug)]
pub struct BitCast {
    pub dtype: DType,
}

impl BitCast {
    fn same_width(&self, from: DType) -> Result<()> {
        if from.size() == self.dtype.size() {
            return Ok(());
        }
        dtype_err(format!(
            "op 'bitcast' needs dtypes of one width, got {from} ({} bytes) to {} ({} bytes)",
            from.size(),
            self.dtype,
            self.dtype.size()
        ))
    }
}

impl Op for BitCast {
    fn name(&self) -> &str {
        "bitcast"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        self.same_width(inputs[0].dtype)?;
        Ok(vec![TypeInfo::new(self.dtype, inputs[0].shape.clone())])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.same_width(x.dtype())?;
        // Through u64, so that each side is dispatched once: 12 + 12
        // monomorphized loops instead of 12 x 12 pairs.
        let raws: Vec<u64> =
            crate::dispatch_all!(x.dtype(), A => x.to_array::<A>()?.iter().map(|&a| a.raw()).collect());
        let out = ctx.output(0, self.dtype, x.shape())?;
        crate::dispatch_all!(self.dtype, B => {
            let bits = ndarray::ArrayD::from_shape_vec(x.shape(), raws.iter().map(|&r| B::from_raw(r)).collect())
                .map_err(|e| crate::error::Error::Op(e.to_string()))?;
            out.write(|mut v: ndarray::ArrayViewMutD<'_, B>| v.assign(&bits))?
        });
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("dtype", self.dtype.name())
    }
}

pub fn register(r: &mut OpRegistry) {
    for kind in BitKind::ALL {
        r.register_op(Arc::new(Bitwise { kind }));
    }
    r.register("bitcast", |a: &Attrs| {
        a.only("bitcast", &["dtype"])?;
        let dtype = a
            .dtype("dtype")?
            .ok_or_else(|| crate::error::Error::Attr("op 'bitcast' needs attr 'dtype'".into()))?;
        Ok(Arc::new(BitCast { dtype }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};
    use crate::ops::Attrs;

    /// Output 0 of the registered op `name` on `inputs`, flat.
    fn run<T: Element>(name: &str, inputs: &[Tensor]) -> Vec<T> {
        run_vec::<T>(&*op(name, Attrs::new()), inputs).unwrap().1
    }

    #[test]
    fn and_or_xor_not_match_numpy_with_broadcasting() {
        let a = t(&[2, 2], vec![0b1100i8, -1, 5, i8::MIN]);
        let b = t(&[2], vec![0b1010i8, 3]);
        let ab = [a.clone(), b];
        // What numpy.bitwise_and(a, b) and friends give, b broadcast over rows.
        assert_eq!(run::<i8>("bitwise_and", &ab), [0b1000, 3, 0, 0]);
        assert_eq!(run::<i8>("bitwise_or", &ab), [0b1110, -1, 15, -125]);
        assert_eq!(run::<i8>("bitwise_xor", &ab), [0b0110, -4, 15, -125]);
        assert_eq!(run::<i8>("bitwise_not", &[a]), [!0b1100i8, 0, -6, i8::MAX]);
    }

    #[test]
    fn shifts_past_the_width_give_zero() {
        let x = t(&[5], vec![1u8, 0x80, 0xff, 16, 7]);
        let n = t(&[5], vec![7u8, 1, 8, 2, 255]);
        let xn = [x, n];
        assert_eq!(run::<u8>("left_shift", &xn), [0x80, 0, 0, 64, 0]);
        assert_eq!(run::<u8>("right_shift", &xn), [0, 0x40, 0, 4, 0]);
        let big = [t(&[2], vec![u64::MAX, 1]), t(&[2], vec![63u64, 64])];
        assert_eq!(run::<u64>("left_shift", &big), [1 << 63, 0]);
        assert_eq!(run::<u64>("right_shift", &big), [1, 0]);
    }

    #[test]
    fn signed_shifts_wrap_left_fill_the_sign_right_and_saturate() {
        // What ONNX's reference BitShift gives (numpy's shifts): -64 << 1 wraps to
        // -128, 1 << 7 to i8::MIN; right shifts are arithmetic; a negative
        // amount or one of at least 8 gives 0, or -1 shifting a negative
        // value right.
        let x = t(&[6], vec![64i8, 1, -64, -8, 4, -1]);
        let n = t(&[6], vec![1i8, 7, 1, 8, -1, 127]);
        let xn = [x, n];
        assert_eq!(run::<i8>("left_shift", &xn), [-128, -128, -128, 0, 0, 0]);
        assert_eq!(run::<i8>("right_shift", &xn), [32, 0, -32, -1, 0, -1]);
    }

    #[test]
    fn floats_bools_and_mixed_dtypes_are_refused() {
        let f = TypeInfo::known(DType::F32, &[2]);
        let i = TypeInfo::known(DType::I32, &[2]);
        let u = TypeInfo::known(DType::U32, &[2]);
        let b = TypeInfo::known(DType::Bool, &[2]);
        let make = |kind| Bitwise { kind };
        assert!(make(BitKind::And).infer(&[f.clone(), f.clone()]).is_err());
        assert!(make(BitKind::Not).infer(&[b]).is_err());
        assert!(make(BitKind::ShiftLeft).infer(&[i.clone(), f.clone()]).is_err());
        assert!(make(BitKind::Or).infer(&[i.clone(), u.clone()]).is_err());
        assert!(make(BitKind::Xor).infer(&[i.clone(), i]).is_ok());
        assert!(make(BitKind::ShiftRight).infer(&[u.clone(), u]).is_ok());
        let floats = [t(&[1], vec![1.0f32]), t(&[1], vec![2.0f32])];
        assert!(op("bitwise_and", Attrs::new())
            .compute(&floats, &mut OpCtx::new("n"))
            .is_err());
    }

    #[test]
    fn bitcast_reads_the_same_bits_as_another_dtype() {
        let attrs = |d: &str| Attrs::new().with("dtype", d);
        let x = t(&[2, 2], vec![1.0f32, -0.0, f32::INFINITY, -2.5]);
        let bits = run_vec::<i32>(&*op("bitcast", attrs("i32")), std::slice::from_ref(&x)).unwrap();
        assert_eq!(bits.0, [2, 2]);
        // What numpy's x.view(np.int32) gives.
        assert_eq!(bits.1, [1065353216, i32::MIN, 2139095040, -1071644672]);
        let back = run_vec::<f32>(&*op("bitcast", attrs("f32")), &[t(&[2, 2], bits.1)]).unwrap();
        assert_eq!(
            back.1.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            x.to_array::<f32>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>()
        );
        let signed = run_vec::<i8>(&*op("bitcast", attrs("i8")), &[t(&[3], vec![0u8, 127, 200])]).unwrap();
        assert_eq!(signed.1, [0, 127, -56]);
        let flags = run_vec::<u8>(&*op("bitcast", attrs("u8")), &[t(&[2], vec![true, false])]).unwrap();
        assert_eq!(flags.1, [1, 0]);
        let wide = op("bitcast", attrs("f64"))
            .compute(&[x], &mut OpCtx::new("n"))
            .unwrap_err();
        assert!(wide.to_string().contains("dtypes of one width"), "{wide}");
    }
}
