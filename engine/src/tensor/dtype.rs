//! Element types. Ops dispatch on [`DType`] once, then run a kernel that is
//! monomorphized over one [`Element`] type: no per-element dynamic dispatch.

use std::fmt;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::tensor::small::{F8E4M3Fn, F8E4M3Fnuz, F8E5M2Fnuz, F4E2M1, F8E5M2, F8E8M0, I2, I4, U2, U4};
use crate::tensor::storage::{AnyVec, Buffer, Storage};

/// The element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F32,
    /// IEEE 754 binary16. Kernels compute in f32 and round once per op.
    F16,
    F64,
    I64,
    I32,
    Bool,
    U8,
    I8,
    U16,
    I16,
    U32,
    U64,
    /// bfloat16 (8 exponent bits, 7 mantissa bits). Computes like F16.
    BF16,
    /// The formats below (see `tensor::small`) are stored one element per
    /// byte. Only casts, quantization and ops that move elements without
    /// computing take them; arithmetic refuses them (cast first).
    F8E4M3FN,
    F8E4M3FNUZ,
    F8E5M2,
    F8E5M2FNUZ,
    F4E2M1,
    /// An unsigned power of two (a block scale).
    F8E8M0,
    I4,
    U4,
    I2,
    U2,
}

impl DType {
    /// `x`, a value of this dtype held as f64, as the shortest text that
    /// reads back to the same value of this dtype: an f32 prints as an f32
    /// (`0.003766316`, not the f64 digits of its widening).
    pub fn fmt_value(self, x: f64) -> String {
        match self {
            DType::F32 => (x as f32).to_string(),
            DType::F16 => {
                // The fewest significant digits that read back to the same f16.
                let h = f16_from_f64(x);
                (1..=5)
                    .map(|p| format!("{:.*e}", p - 1, h.to_f64()))
                    .find(|t| t.parse::<f64>().map(f16_from_f64) == Ok(h))
                    .and_then(|t| t.parse::<f64>().ok())
                    .map_or_else(|| h.to_string(), |v| v.to_string())
            }
            DType::BF16 => {
                let h = bf16_from_f64(x);
                (1..=4)
                    .map(|p| format!("{:.*e}", p - 1, h.to_f64()))
                    .find(|t| t.parse::<f64>().map(bf16_from_f64) == Ok(h))
                    .and_then(|t| t.parse::<f64>().ok())
                    .map_or_else(|| h.to_string(), |v| v.to_string())
            }
            DType::F64 => x.to_string(),
            // Every value of the small formats is exact in f32.
            _ if self.is_float() => (x as f32).to_string(),
            _ => x.to_string(),
        }
    }

    pub const ALL: [DType; 23] = [
        DType::F32,
        DType::F16,
        DType::F64,
        DType::I64,
        DType::I32,
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::U16,
        DType::I16,
        DType::U32,
        DType::U64,
        DType::BF16,
        DType::F8E4M3FN,
        DType::F8E4M3FNUZ,
        DType::F8E5M2,
        DType::F8E5M2FNUZ,
        DType::F4E2M1,
        DType::F8E8M0,
        DType::I4,
        DType::U4,
        DType::I2,
        DType::U2,
    ];

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
            DType::U16 | DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::F8E4M3FN
            | DType::F8E4M3FNUZ
            | DType::F8E5M2
            | DType::F8E5M2FNUZ
            | DType::F4E2M1
            | DType::F8E8M0
            | DType::I4
            | DType::U4
            | DType::I2
            | DType::U2 => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::F64 => "f64",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::Bool => "bool",
            DType::U8 => "u8",
            DType::I8 => "i8",
            DType::U16 => "u16",
            DType::I16 => "i16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::BF16 => "bf16",
            DType::F8E4M3FN => "f8e4m3fn",
            DType::F8E4M3FNUZ => "f8e4m3fnuz",
            DType::F8E5M2 => "f8e5m2",
            DType::F8E5M2FNUZ => "f8e5m2fnuz",
            DType::F4E2M1 => "f4e2m1",
            DType::F8E8M0 => "f8e8m0",
            DType::I4 => "i4",
            DType::U4 => "u4",
            DType::I2 => "i2",
            DType::U2 => "u2",
        }
    }

    pub fn parse(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == s)
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::BF16) || self.is_small_float()
    }

    /// The float8, float4 and e8m0 formats: stored, cast and quantized,
    /// never computed in.
    pub fn is_small_float(self) -> bool {
        matches!(
            self,
            DType::F8E4M3FN
                | DType::F8E4M3FNUZ
                | DType::F8E5M2
                | DType::F8E5M2FNUZ
                | DType::F4E2M1
                | DType::F8E8M0
        )
    }

    /// The 4- and 2-bit integers.
    pub fn is_small_int(self) -> bool {
        matches!(self, DType::I4 | DType::U4 | DType::I2 | DType::U2)
    }

    /// Dtypes kernels compute in (as opposed to storage-only formats and
    /// bool): what `dispatch_num!` runs its body for.
    pub fn is_computable(self) -> bool {
        self.is_numeric() && !self.is_small_float() && !self.is_small_int()
    }

    pub fn is_numeric(self) -> bool {
        self != DType::Bool
    }

    /// Integer dtypes (not bool).
    pub fn is_int(self) -> bool {
        self.is_numeric() && !self.is_float()
    }

    pub fn is_unsigned(self) -> bool {
        matches!(
            self,
            DType::U8 | DType::U16 | DType::U32 | DType::U64 | DType::U4 | DType::U2
        )
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type that can be a tensor element.
pub trait Element:
    Copy + Default + PartialEq + PartialOrd + fmt::Debug + Send + Sync + 'static + bytemuck::NoUninit
{
    const DTYPE: DType;
    /// The typed buffer behind `s`, if `s` holds this type.
    fn buffer(s: &Storage) -> Option<&Rc<Buffer<Self>>>;
    fn wrap(b: Rc<Buffer<Self>>) -> Storage;
    fn into_any(v: Vec<Self>) -> AnyVec;
    fn from_any(v: AnyVec) -> Result<Vec<Self>, AnyVec>;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
    fn to_scalar(self) -> Scalar;
    /// `v as Self`, as numpy's `astype` converts integers (wrapping).
    fn from_i64_wrapping(v: i64) -> Self;
    /// Exact when `s` has this dtype, else converted through f64.
    fn from_scalar(s: Scalar) -> Self;
    /// The sentinel that poisoned buffers hold: NaN for floats, the byte
    /// pattern 0x5A for integers, `true` for bools. A kernel that reads
    /// memory it never wrote shows it.
    const POISON: Self;
}

macro_rules! element {
    ($t:ty, $variant:ident, $poison:expr, $to:expr, $from:expr, $wrap:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            const POISON: Self = $poison;
            fn buffer(s: &Storage) -> Option<&Rc<Buffer<Self>>> {
                match s {
                    Storage::$variant(b) => Some(b),
                    _ => None,
                }
            }
            fn wrap(b: Rc<Buffer<Self>>) -> Storage {
                Storage::$variant(b)
            }
            fn into_any(v: Vec<Self>) -> AnyVec {
                AnyVec::$variant(v)
            }
            fn from_any(v: AnyVec) -> Result<Vec<Self>, AnyVec> {
                match v {
                    AnyVec::$variant(v) => Ok(v),
                    other => Err(other),
                }
            }
            #[allow(clippy::redundant_closure_call)]
            fn to_f64(self) -> f64 {
                ($to)(self)
            }
            #[allow(clippy::redundant_closure_call)]
            fn from_f64(v: f64) -> Self {
                ($from)(v)
            }
            fn to_scalar(self) -> Scalar {
                Scalar::$variant(self)
            }
            fn from_i64_wrapping(v: i64) -> Self {
                #[allow(clippy::redundant_closure_call)]
                ($wrap)(v)
            }
            fn from_scalar(s: Scalar) -> Self {
                match s {
                    Scalar::$variant(v) => v,
                    other => Self::from_f64(other.to_f64()),
                }
            }
        }
    };
}

element!(
    f32,
    F32,
    f32::NAN,
    |x: f32| x as f64,
    |v: f64| v as f32,
    |v: i64| v as f32
);
/// `v` rounded to the nearest f16, ties to even, as numpy's double to
/// half conversion. half's `from_f64` rounds twice (through f32, or after
/// dropping the low 32 mantissa bits), which is wrong just above a tie; so
/// the first step here rounds to odd (truncate, then set the last bit when
/// inexact), which f32's 13 spare bits make exact for the second, correctly
/// rounded f32 to f16 step.
pub fn f16_from_f64(v: f64) -> half::f16 {
    let r = v as f32;
    if v.is_nan() || r as f64 == v {
        return half::f16::from_f32(r);
    }
    let toward_zero = if (r as f64).abs() > v.abs() {
        f32::from_bits(r.to_bits() - 1)
    } else {
        r
    };
    half::f16::from_f32(f32::from_bits(toward_zero.to_bits() | 1))
}

element!(
    half::f16,
    F16,
    half::f16::NAN,
    |x: half::f16| x.to_f64(),
    f16_from_f64,
    // Through f64: exact for |v| < 2^53, and i64 beyond that rounds to a
    // value far above f16's range (inf) either way.
    |v: i64| f16_from_f64(v as f64)
);
/// [`f16_from_f64`] for bfloat16: round to odd into f32, then once to
/// nearest even into bf16.
pub fn bf16_from_f64(v: f64) -> half::bf16 {
    let r = v as f32;
    if v.is_nan() || r as f64 == v {
        return half::bf16::from_f32(r);
    }
    let toward_zero = if (r as f64).abs() > v.abs() {
        f32::from_bits(r.to_bits() - 1)
    } else {
        r
    };
    half::bf16::from_f32(f32::from_bits(toward_zero.to_bits() | 1))
}

element!(
    half::bf16,
    BF16,
    half::bf16::NAN,
    |x: half::bf16| x.to_f64(),
    bf16_from_f64,
    |v: i64| bf16_from_f64(v as f64)
);
// The small formats: floats convert with ONNX Cast's defaults (saturate,
// e8m0 rounding up), integers truncate and wrap. Poison is NaN where the
// format has one, else a recognizable value.
element!(
    F8E4M3Fn,
    F8E4M3FN,
    F8E4M3Fn(0x7F),
    |x: F8E4M3Fn| f64::from(x.to_f32()),
    |v: f64| F8E4M3Fn::from_f64_sat(v, true),
    |v: i64| F8E4M3Fn::from_f64_sat(v as f64, true)
);
element!(
    F8E4M3Fnuz,
    F8E4M3FNUZ,
    F8E4M3Fnuz(0x80),
    |x: F8E4M3Fnuz| f64::from(x.to_f32()),
    |v: f64| F8E4M3Fnuz::from_f64_sat(v, true),
    |v: i64| F8E4M3Fnuz::from_f64_sat(v as f64, true)
);
element!(
    F8E5M2,
    F8E5M2,
    F8E5M2(0x7E),
    |x: F8E5M2| f64::from(x.to_f32()),
    |v: f64| F8E5M2::from_f64_sat(v, true),
    |v: i64| F8E5M2::from_f64_sat(v as f64, true)
);
element!(
    F8E5M2Fnuz,
    F8E5M2FNUZ,
    F8E5M2Fnuz(0x80),
    |x: F8E5M2Fnuz| f64::from(x.to_f32()),
    |v: f64| F8E5M2Fnuz::from_f64_sat(v, true),
    |v: i64| F8E5M2Fnuz::from_f64_sat(v as f64, true)
);
element!(
    F4E2M1,
    F4E2M1,
    F4E2M1(0x5),
    |x: F4E2M1| f64::from(x.to_f32()),
    |v: f64| F4E2M1::from_f64_sat(v, true),
    |v: i64| F4E2M1::from_f64_sat(v as f64, true)
);
element!(
    F8E8M0,
    F8E8M0,
    F8E8M0(0xFF),
    |x: F8E8M0| f64::from(x.to_f32()),
    |v: f64| F8E8M0(crate::tensor::small::e8m0_encode(v, true, Default::default())),
    |v: i64| F8E8M0(crate::tensor::small::e8m0_encode(
        v as f64,
        true,
        Default::default()
    ))
);
element!(
    I4,
    I4,
    I4(5),
    |x: I4| x.get() as f64,
    I4::from_f64_trunc,
    I4::wrapping
);
element!(
    U4,
    U4,
    U4(5),
    |x: U4| x.get() as f64,
    U4::from_f64_trunc,
    U4::wrapping
);
element!(
    I2,
    I2,
    I2(1),
    |x: I2| x.get() as f64,
    I2::from_f64_trunc,
    I2::wrapping
);
element!(
    U2,
    U2,
    U2(1),
    |x: U2| x.get() as f64,
    U2::from_f64_trunc,
    U2::wrapping
);
element!(f64, F64, f64::NAN, |x: f64| x, |v: f64| v, |v: i64| v as f64);
/// Float to integer as numpy does on x86-64: truncation, and the integer
/// minimum for NaN, infinities and values out of range.
fn f64_to_i64(v: f64) -> i64 {
    if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&v) {
        v as i64
    } else {
        i64::MIN
    }
}

/// [`f64_to_i64`] for 32 bits.
fn f64_to_i32(v: f64) -> i32 {
    if v > -2147483649.0 && v < 2147483648.0 {
        v as i32
    } else {
        i32::MIN
    }
}

element!(
    i64,
    I64,
    0x5A5A_5A5A_5A5A_5A5A,
    |x: i64| x as f64,
    f64_to_i64,
    |v: i64| v
);
element!(i32, I32, 0x5A5A_5A5A, |x: i32| x as f64, f64_to_i32, |v: i64| v
    as i32);
// Narrower integers as numpy's C casts compile on x86-64: 8 and 16 bits
// through the 32-bit conversion, then the low bits; u32 and u64 convert
// their upper half exactly (NaN and values below it as the signed
// conversion of their width, values above the type as 0).
element!(
    u8,
    U8,
    0x5A,
    |x: u8| x as f64,
    |v: f64| f64_to_i32(v) as u8,
    |v: i64| v as u8
);
element!(
    i8,
    I8,
    0x5A,
    |x: i8| x as f64,
    |v: f64| f64_to_i32(v) as i8,
    |v: i64| v as i8
);
element!(
    u16,
    U16,
    0x5A5A,
    |x: u16| x as f64,
    |v: f64| f64_to_i32(v) as u16,
    |v: i64| v as u16
);
element!(
    i16,
    I16,
    0x5A5A,
    |x: i16| x as f64,
    |v: f64| f64_to_i32(v) as i16,
    |v: i64| v as i16
);
element!(
    u32,
    U32,
    0x5A5A_5A5A,
    |x: u32| x as f64,
    |v: f64| match v {
        v if v >= 4_294_967_296.0 => 0,
        v if v >= 2_147_483_648.0 => v as u32,
        v => f64_to_i32(v) as u32,
    },
    |v: i64| v as u32
);
element!(
    u64,
    U64,
    0x5A5A_5A5A_5A5A_5A5A,
    |x: u64| x as f64,
    |v: f64| match v {
        v if v >= 1.844_674_407_370_955_2e19 => 0,
        v if v >= 9.223_372_036_854_776e18 => v as u64,
        v => f64_to_i64(v) as u64,
    },
    |v: i64| v as u64
);
element!(
    bool,
    Bool,
    true,
    |x: bool| if x { 1.0 } else { 0.0 },
    |v: f64| v != 0.0,
    |v: i64| v != 0
);

/// Numeric elements: everything but bool.
pub trait Num:
    Element
    + num_traits::Num
    + num_traits::NumCast
    + std::ops::AddAssign
    + std::ops::MulAssign
    + ndarray::LinalgScalar
    + std::iter::Sum
{
    fn min_value() -> Self;
    fn max_value() -> Self;
    /// Elementwise maximum with numpy's NaN propagation for floats.
    fn maximum(a: Self, b: Self) -> Self;
    fn minimum(a: Self, b: Self) -> Self;
    fn pow(a: Self, b: Self) -> Self;
    fn abs(a: Self) -> Self;
    /// Arithmetic as numpy does it: integers wrap on overflow.
    fn add_w(a: Self, b: Self) -> Self;
    fn sub_w(a: Self, b: Self) -> Self;
    fn mul_w(a: Self, b: Self) -> Self;
    /// `-a`: wrapping for integers, sign-flipping for floats (`-0.0`).
    fn neg_w(a: Self) -> Self;
}

macro_rules! num_int {
    ($t:ty, $pow:ident, $abs:expr) => {
        impl Num for $t {
            fn min_value() -> Self {
                <$t>::MIN
            }
            fn max_value() -> Self {
                <$t>::MAX
            }
            fn maximum(a: Self, b: Self) -> Self {
                a.max(b)
            }
            fn minimum(a: Self, b: Self) -> Self {
                a.min(b)
            }
            fn add_w(a: Self, b: Self) -> Self {
                a.wrapping_add(b)
            }
            fn sub_w(a: Self, b: Self) -> Self {
                a.wrapping_sub(b)
            }
            fn mul_w(a: Self, b: Self) -> Self {
                a.wrapping_mul(b)
            }
            /// Unsigned integers wrap too: numpy's `-uint8(1)` is 255.
            fn neg_w(a: Self) -> Self {
                a.wrapping_neg()
            }
            fn pow(a: Self, b: Self) -> Self {
                $pow(a, b)
            }
            #[allow(clippy::redundant_closure_call)]
            fn abs(a: Self) -> Self {
                ($abs)(a)
            }
        }
    };
}

/// Square-and-multiply with wrapping, for any non-negative exponent.
fn pow_wrapping<T: num_traits::PrimInt + num_traits::WrappingMul>(a: T, b: T) -> T {
    let (mut base, mut e, mut acc) = (a, b, T::one());
    while e > T::zero() {
        if e & T::one() == T::one() {
            acc = acc.wrapping_mul(&base);
        }
        base = base.wrapping_mul(&base);
        e = e >> 1;
    }
    acc
}

/// numpy errors on negative integer powers; we give 0 (or the exact
/// reciprocal for |a| == 1) instead of failing mid-run.
fn pow_signed<T: num_traits::PrimInt + num_traits::WrappingMul + num_traits::Signed>(a: T, b: T) -> T {
    if b >= T::zero() {
        pow_wrapping(a, b)
    } else if a == T::one() {
        a
    } else if a == -T::one() {
        if b % (T::one() + T::one()) == T::zero() {
            T::one()
        } else {
            a
        }
    } else {
        T::zero()
    }
}

// abs of the signed minimum wraps to itself, as numpy's does.
num_int!(i32, pow_signed, <i32>::wrapping_abs);
num_int!(i64, pow_signed, <i64>::wrapping_abs);
num_int!(i8, pow_signed, <i8>::wrapping_abs);
num_int!(i16, pow_signed, <i16>::wrapping_abs);
num_int!(u8, pow_wrapping, |a| a);
num_int!(u16, pow_wrapping, |a| a);
num_int!(u32, pow_wrapping, |a| a);
num_int!(u64, pow_wrapping, |a| a);

macro_rules! num_float {
    ($t:ty) => {
        impl Num for $t {
            fn min_value() -> Self {
                <$t>::NEG_INFINITY
            }
            fn max_value() -> Self {
                <$t>::INFINITY
            }
            // numpy: NaN wins, and on ties (0.0 vs -0.0) the first operand.
            fn maximum(a: Self, b: Self) -> Self {
                if a.is_nan() || b.is_nan() {
                    <$t>::NAN
                } else if a >= b {
                    a
                } else {
                    b
                }
            }
            fn minimum(a: Self, b: Self) -> Self {
                if a.is_nan() || b.is_nan() {
                    <$t>::NAN
                } else if a <= b {
                    a
                } else {
                    b
                }
            }
            fn pow(a: Self, b: Self) -> Self {
                num_traits::Float::powf(a, b)
            }
            fn add_w(a: Self, b: Self) -> Self {
                a + b
            }
            fn sub_w(a: Self, b: Self) -> Self {
                a - b
            }
            fn mul_w(a: Self, b: Self) -> Self {
                a * b
            }
            fn neg_w(a: Self) -> Self {
                -a
            }
            fn abs(a: Self) -> Self {
                num_traits::Float::abs(a)
            }
        }
    };
}
num_float!(f32);
num_float!(f64);
// half's arithmetic widens to f32, computes and rounds once: per op, as
// numpy's float16 loops do.
num_float!(half::f16);
num_float!(half::bf16);

/// Float elements.
pub trait Float: Num + num_traits::Float {
    /// The sum of `v` as numpy's `add.reduce` gives it: f16 accumulates in
    /// f32 and rounds once (a sum in f16 steps would round at every add).
    fn sum_of<D: ndarray::Dimension>(v: &ndarray::ArrayView<'_, Self, D>) -> Self {
        v.sum()
    }
}
impl Float for f32 {}
impl Float for f64 {}
impl Float for half::f16 {
    fn sum_of<D: ndarray::Dimension>(v: &ndarray::ArrayView<'_, Self, D>) -> Self {
        half::f16::from_f32(v.iter().map(|x| x.to_f32()).sum())
    }
}
impl Float for half::bf16 {
    fn sum_of<D: ndarray::Dimension>(v: &ndarray::ArrayView<'_, Self, D>) -> Self {
        half::bf16::from_f32(v.iter().map(|x| x.to_f32()).sum())
    }
}

/// Runs `$body` with `$T` bound to the Rust type of `$dt`, for every dtype.
#[macro_export]
macro_rules! dispatch_all {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            $crate::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::DType::F8E4M3FN => {
                type $T = $crate::small::F8E4M3Fn;
                $body
            }
            $crate::DType::F8E4M3FNUZ => {
                type $T = $crate::small::F8E4M3Fnuz;
                $body
            }
            $crate::DType::F8E5M2 => {
                type $T = $crate::small::F8E5M2;
                $body
            }
            $crate::DType::F8E5M2FNUZ => {
                type $T = $crate::small::F8E5M2Fnuz;
                $body
            }
            $crate::DType::F4E2M1 => {
                type $T = $crate::small::F4E2M1;
                $body
            }
            $crate::DType::F8E8M0 => {
                type $T = $crate::small::F8E8M0;
                $body
            }
            $crate::DType::I4 => {
                type $T = $crate::small::I4;
                $body
            }
            $crate::DType::U4 => {
                type $T = $crate::small::U4;
                $body
            }
            $crate::DType::I2 => {
                type $T = $crate::small::I2;
                $body
            }
            $crate::DType::U2 => {
                type $T = $crate::small::U2;
                $body
            }
            // Infallible: the arms above take bool and the storage-only
            // formats, and dispatch_num! takes every other dtype.
            dt => $crate::dispatch_num!(dt, $T => $body, unreachable!("numeric dtype {dt}")),
        }
    };
}

/// Like [`dispatch_all!`] for the dtypes kernels compute in; `$else`
/// handles bool and the storage-only formats (see
/// [`DType::is_computable`]).
#[macro_export]
macro_rules! dispatch_num {
    ($dt:expr, $T:ident => $body:expr, $else:expr) => {
        match $dt {
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::DType::F16 => {
                type $T = $crate::f16;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::DType::U16 => {
                type $T = u16;
                $body
            }
            $crate::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::DType::U64 => {
                type $T = u64;
                $body
            }
            $crate::DType::BF16 => {
                type $T = $crate::bf16;
                $body
            }
            _ => $else,
        }
    };
}

/// Like [`dispatch_all!`] for float dtypes; `$else` handles the rest.
#[macro_export]
macro_rules! dispatch_float {
    ($dt:expr, $T:ident => $body:expr, $else:expr) => {
        match $dt {
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::DType::F16 => {
                type $T = $crate::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $T = $crate::bf16;
                $body
            }
            _ => $else,
        }
    };
}

/// A single element of any dtype, for `at`/`set_at` and attrs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    F32(f32),
    F16(half::f16),
    F64(f64),
    I64(i64),
    I32(i32),
    Bool(bool),
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    U64(u64),
    BF16(half::bf16),
    F8E4M3FN(F8E4M3Fn),
    F8E4M3FNUZ(F8E4M3Fnuz),
    F8E5M2(F8E5M2),
    F8E5M2FNUZ(F8E5M2Fnuz),
    F4E2M1(F4E2M1),
    F8E8M0(F8E8M0),
    I4(I4),
    U4(U4),
    I2(I2),
    U2(U2),
}

impl Scalar {
    pub fn dtype(self) -> DType {
        match self {
            Scalar::F32(_) => DType::F32,
            Scalar::F16(_) => DType::F16,
            Scalar::F64(_) => DType::F64,
            Scalar::I64(_) => DType::I64,
            Scalar::I32(_) => DType::I32,
            Scalar::Bool(_) => DType::Bool,
            Scalar::U8(_) => DType::U8,
            Scalar::I8(_) => DType::I8,
            Scalar::U16(_) => DType::U16,
            Scalar::I16(_) => DType::I16,
            Scalar::U32(_) => DType::U32,
            Scalar::U64(_) => DType::U64,
            Scalar::BF16(_) => DType::BF16,
            Scalar::F8E4M3FN(_) => DType::F8E4M3FN,
            Scalar::F8E4M3FNUZ(_) => DType::F8E4M3FNUZ,
            Scalar::F8E5M2(_) => DType::F8E5M2,
            Scalar::F8E5M2FNUZ(_) => DType::F8E5M2FNUZ,
            Scalar::F4E2M1(_) => DType::F4E2M1,
            Scalar::F8E8M0(_) => DType::F8E8M0,
            Scalar::I4(_) => DType::I4,
            Scalar::U4(_) => DType::U4,
            Scalar::I2(_) => DType::I2,
            Scalar::U2(_) => DType::U2,
        }
    }

    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::F32(v) => v as f64,
            Scalar::F16(v) => v.to_f64(),
            Scalar::F64(v) => v,
            Scalar::I64(v) => v as f64,
            Scalar::I32(v) => v as f64,
            Scalar::Bool(v) => v as u8 as f64,
            Scalar::U8(v) => v as f64,
            Scalar::I8(v) => v as f64,
            Scalar::U16(v) => v as f64,
            Scalar::I16(v) => v as f64,
            Scalar::U32(v) => v as f64,
            Scalar::U64(v) => v as f64,
            Scalar::BF16(v) => v.to_f64(),
            Scalar::F8E4M3FN(v) => v.to_f64(),
            Scalar::F8E4M3FNUZ(v) => v.to_f64(),
            Scalar::F8E5M2(v) => v.to_f64(),
            Scalar::F8E5M2FNUZ(v) => v.to_f64(),
            Scalar::F4E2M1(v) => v.to_f64(),
            Scalar::F8E8M0(v) => v.to_f64(),
            Scalar::I4(v) => v.to_f64(),
            Scalar::U4(v) => v.to_f64(),
            Scalar::I2(v) => v.to_f64(),
            Scalar::U2(v) => v.to_f64(),
        }
    }

    /// An integer scalar's exact value; `None` for floats and bool.
    pub fn to_i128(self) -> Option<i128> {
        Some(match self {
            Scalar::I64(x) => i128::from(x),
            Scalar::I32(x) => i128::from(x),
            Scalar::U8(x) => i128::from(x),
            Scalar::I8(x) => i128::from(x),
            Scalar::U16(x) => i128::from(x),
            Scalar::I16(x) => i128::from(x),
            Scalar::U32(x) => i128::from(x),
            Scalar::U64(x) => i128::from(x),
            Scalar::I4(x) => i128::from(x.get()),
            Scalar::U4(x) => i128::from(x.get()),
            Scalar::I2(x) => i128::from(x.get()),
            Scalar::U2(x) => i128::from(x.get()),
            _ => return None,
        })
    }

    /// `v` as a scalar of integer dtype `dt`; `None` when `dt` is not an
    /// integer dtype or `v` is outside its range.
    pub fn from_i128(dt: DType, v: i128) -> Option<Scalar> {
        Some(match dt {
            DType::I64 => Scalar::I64(i64::try_from(v).ok()?),
            DType::I32 => Scalar::I32(i32::try_from(v).ok()?),
            DType::U8 => Scalar::U8(u8::try_from(v).ok()?),
            DType::I8 => Scalar::I8(i8::try_from(v).ok()?),
            DType::U16 => Scalar::U16(u16::try_from(v).ok()?),
            DType::I16 => Scalar::I16(i16::try_from(v).ok()?),
            DType::U32 => Scalar::U32(u32::try_from(v).ok()?),
            DType::U64 => Scalar::U64(u64::try_from(v).ok()?),
            DType::I4 | DType::U4 | DType::I2 | DType::U2 => {
                let v = i64::try_from(v).ok()?;
                let s = Scalar::I64(v).cast_to(dt);
                if s.to_i128() != Some(i128::from(v)) {
                    return None;
                }
                s
            }
            _ => return None,
        })
    }

    /// The value as `T`: exact when the dtypes match, else through f64.
    pub fn cast<T: Element>(self) -> T {
        T::from_scalar(self)
    }

    /// The value as a scalar of dtype `dt` (see [`Scalar::cast`]).
    pub fn cast_to(self, dt: DType) -> Scalar {
        crate::dispatch_all!(dt, T => self.cast::<T>().to_scalar())
    }
}
