//! Element formats smaller than f16, as ONNX defines them: the float8
//! formats (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ), FLOAT4E2M1, FLOAT8E8M0 (a
//! power-of-two scale) and the 4- and 2-bit integers. Each element is one
//! byte in memory (ONNX packs the sub-byte ones in files; the importer
//! unpacks them). Kernels never compute in these formats: they convert to a
//! wider dtype (every value is exact in f32), compute and convert back.
//!
//! Float conversions round to nearest, ties to even. Past the largest
//! finite value a format without infinities gives NaN, E5M2 gives
//! infinity; with `saturate` (ONNX's default for Cast and QuantizeLinear)
//! both give the largest finite value of the sign. FLOAT4E2M1 has neither
//! NaN nor infinity: it always saturates, and NaN becomes 0.

use std::cmp::Ordering;

/// How a small float format spends its codes on NaN and infinity.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Special {
    /// IEEE-like (E5M2): the top exponent holds ±inf (mantissa 0) and NaN.
    Ieee,
    /// "Finite" (E4M3FN): only S.1111.111 is NaN, no infinity.
    Fn,
    /// "Finite, unsigned zero" (the FNUZ formats): 0x80 is the one NaN;
    /// there is no negative zero and no infinity.
    Fnuz,
    /// No NaN, no infinity (FLOAT4E2M1).
    Finite,
}

/// A small binary float format: sign, `exp` exponent bits, `man` mantissa
/// bits, exponent `bias`.
#[derive(Clone, Copy, Debug)]
struct Format {
    exp: u32,
    man: u32,
    bias: i32,
    special: Special,
}

const E4M3FN: Format = Format {
    exp: 4,
    man: 3,
    bias: 7,
    special: Special::Fn,
};
const E4M3FNUZ: Format = Format {
    exp: 4,
    man: 3,
    bias: 8,
    special: Special::Fnuz,
};
const E5M2: Format = Format {
    exp: 5,
    man: 2,
    bias: 15,
    special: Special::Ieee,
};
const E5M2FNUZ: Format = Format {
    exp: 5,
    man: 2,
    bias: 16,
    special: Special::Fnuz,
};
const E2M1: Format = Format {
    exp: 2,
    man: 1,
    bias: 1,
    special: Special::Finite,
};

impl Format {
    fn sign_bit(self) -> u8 {
        1 << (self.exp + self.man)
    }

    fn exp_ones(self) -> u8 {
        ((1u32 << self.exp) - 1) as u8
    }

    fn man_ones(self) -> u8 {
        ((1u32 << self.man) - 1) as u8
    }

    /// The code of the largest finite value (positive).
    fn max_code(self) -> u8 {
        let (e, m) = (self.exp_ones(), self.man_ones());
        match self.special {
            Special::Ieee => ((e - 1) << self.man) | m,
            Special::Fn => (e << self.man) | (m - 1),
            Special::Fnuz | Special::Finite => (e << self.man) | m,
        }
    }

    /// The NaN a value of sign `neg` becomes (`None`: the format has none).
    fn nan(self, neg: bool) -> Option<u8> {
        let s = if neg { self.sign_bit() } else { 0 };
        match self.special {
            Special::Ieee => Some(s | (self.exp_ones() << self.man) | (1 << (self.man - 1))),
            Special::Fn => Some(s | (self.exp_ones() << self.man) | self.man_ones()),
            Special::Fnuz => Some(0x80),
            Special::Finite => None,
        }
    }

    /// The value of `code`, exactly.
    fn decode(self, code: u8) -> f32 {
        let neg = code & self.sign_bit() != 0;
        let e = (code >> self.man) & self.exp_ones();
        let m = code & self.man_ones();
        match self.special {
            Special::Fnuz if code == 0x80 => return f32::NAN,
            Special::Ieee if e == self.exp_ones() => {
                let v = if m == 0 { f32::INFINITY } else { f32::NAN };
                return if neg { -v } else { v };
            }
            Special::Fn if e == self.exp_ones() && m == self.man_ones() => {
                return if neg { -f32::NAN } else { f32::NAN };
            }
            _ => {}
        }
        let frac = f64::from(m) / f64::from(1u32 << self.man);
        let mag = if e == 0 {
            frac * 2f64.powi(1 - self.bias)
        } else {
            (1.0 + frac) * 2f64.powi(i32::from(e) - self.bias)
        };
        (if neg { -mag } else { mag }) as f32
    }

    /// `x` rounded to this format (see the module doc).
    fn encode(self, x: f64, saturate: bool) -> u8 {
        let neg = x.is_sign_negative();
        if x.is_nan() {
            return self.nan(neg).unwrap_or(0);
        }
        let max = self.max_code();
        let overflow = |_: ()| -> u8 {
            let s = if neg { self.sign_bit() } else { 0 };
            match self.special {
                _ if saturate => s | max,
                Special::Finite => s | max,
                Special::Ieee => s | (self.exp_ones() << self.man),
                Special::Fn | Special::Fnuz => self.nan(neg).unwrap_or(0),
            }
        };
        let a = x.abs();
        if a.is_infinite() {
            return overflow(());
        }
        let val = |c: u8| f64::from(self.decode(c));
        // Positive codes 0..=max are increasing in value: the largest code
        // at or below `a`.
        let (mut lo, mut hi) = (0u8, max);
        if a >= val(max) {
            lo = max;
        } else {
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if val(mid) <= a {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
        }
        let below = val(lo);
        // The value one code up; past the largest finite value it is the
        // value the format would have there (same binade: its mantissa is
        // not zero), and rounding to it is an overflow.
        let above = if lo == max {
            below + (below - val(max - 1))
        } else {
            val(lo + 1)
        };
        let up = match (a - below).partial_cmp(&(above - a)) {
            Some(Ordering::Less) | None => false,
            Some(Ordering::Greater) => true,
            Some(Ordering::Equal) => lo & 1 == 1,
        };
        if a == below {
            return self.signed(lo, neg);
        }
        if up && lo == max {
            return overflow(());
        }
        self.signed(if up { lo + 1 } else { lo }, neg)
    }

    fn signed(self, code: u8, neg: bool) -> u8 {
        if neg && !(code == 0 && self.special == Special::Fnuz) {
            code | self.sign_bit()
        } else {
            code
        }
    }
}

/// How FLOAT8E8M0 rounds a value that is not a power of two (ONNX Cast's
/// `round_mode`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum RoundMode {
    /// To the next power of two up (ONNX's default).
    #[default]
    Up,
    /// To the power of two below.
    Down,
    /// To the nearer one (from the f32 mantissa's top bits, as ONNX's
    /// reference does).
    Nearest,
}

impl RoundMode {
    pub fn parse(s: &str) -> Option<RoundMode> {
        match s {
            "up" => Some(RoundMode::Up),
            "down" => Some(RoundMode::Down),
            "nearest" => Some(RoundMode::Nearest),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RoundMode::Up => "up",
            RoundMode::Down => "down",
            RoundMode::Nearest => "nearest",
        }
    }
}

/// FLOAT8E8M0 from `x` (through f32, as ONNX defines it): the f32's biased
/// exponent, rounded by `mode` on its mantissa; the sign is dropped; NaN and
/// infinities give NaN (0xFF); rounding past 2^127 gives NaN unless
/// `saturate`.
pub fn e8m0_encode(x: f64, saturate: bool, mode: RoundMode) -> u8 {
    let bits = (x as f32).to_bits();
    let e = (bits >> 23) & 0xFF;
    if e == 0xFF {
        return 0xFF;
    }
    let up = match mode {
        RoundMode::Down => false,
        RoundMode::Up => bits & 0x7F_FFFF != 0,
        RoundMode::Nearest => {
            let g = bits & 0x40_0000 != 0;
            let r = bits & 0x20_0000 != 0;
            let s = bits & 0x1F_FFFF != 0;
            g && (r || s || e > 0)
        }
    };
    if up && !(saturate && e == 0xFE) {
        (e + 1) as u8
    } else {
        e as u8
    }
}

/// The value of a FLOAT8E8M0 code: 2^(code − 127), NaN for 0xFF.
pub fn e8m0_decode(code: u8) -> f32 {
    if code == 0xFF {
        f32::NAN
    } else {
        2f64.powi(i32::from(code) - 127) as f32
    }
}

/// `v` as the code of small float dtype `d` (`None` when `d` is not one),
/// with Cast's `saturate` and, for F8E8M0, `round_mode`.
pub fn encode(d: crate::DType, v: f64, saturate: bool, mode: RoundMode) -> Option<u8> {
    use crate::DType;
    let f = match d {
        DType::F8E4M3FN => E4M3FN,
        DType::F8E4M3FNUZ => E4M3FNUZ,
        DType::F8E5M2 => E5M2,
        DType::F8E5M2FNUZ => E5M2FNUZ,
        DType::F4E2M1 => E2M1,
        DType::F8E8M0 => return Some(e8m0_encode(v, saturate, mode)),
        _ => return None,
    };
    Some(f.encode(v, saturate))
}

/// Writes `vals` (C order) into `out`, of a small float dtype, rounded
/// with `saturate` and `mode`; other dtypes convert as `Element::from_f64`.
pub fn write_f64s(out: &crate::Tensor, vals: &[f64], saturate: bool, mode: RoundMode) -> crate::Result<()> {
    fn go<T: crate::Element>(
        out: &crate::Tensor,
        vals: &[f64],
        conv: impl Fn(f64) -> T,
    ) -> crate::Result<()> {
        out.write_c_order(|o: &mut [T]| o.iter_mut().zip(vals).for_each(|(o, &v)| *o = conv(v)))
    }
    let d = out.dtype();
    let code = |v: f64| encode(d, v, saturate, mode).unwrap_or(0);
    match d {
        crate::DType::F8E4M3FN => go(out, vals, |v| F8E4M3Fn(code(v))),
        crate::DType::F8E4M3FNUZ => go(out, vals, |v| F8E4M3Fnuz(code(v))),
        crate::DType::F8E5M2 => go(out, vals, |v| F8E5M2(code(v))),
        crate::DType::F8E5M2FNUZ => go(out, vals, |v| F8E5M2Fnuz(code(v))),
        crate::DType::F4E2M1 => go(out, vals, |v| F4E2M1(code(v))),
        crate::DType::F8E8M0 => go(out, vals, |v| F8E8M0(code(v))),
        _ => out.write_f64s(vals),
    }
}

/// Bits per element in ONNX files for a dtype of this module: 4 or 2 for
/// the packed ones (two or four to a byte, low bits first), 8 for the
/// others; `None` for other dtypes.
pub fn file_bits(d: crate::DType) -> Option<u32> {
    use crate::DType;
    match d {
        DType::I4 | DType::U4 | DType::F4E2M1 => Some(4),
        DType::I2 | DType::U2 => Some(2),
        d if d.is_small_float() => Some(8),
        _ => None,
    }
}

/// A tensor of dtype `d` (one of this module's) from one code (bit
/// pattern) per element.
pub fn from_codes(d: crate::DType, shape: &[usize], codes: Vec<u8>) -> crate::Result<crate::Tensor> {
    use crate::{DType, Tensor};
    fn build<T: crate::Element>(
        shape: &[usize],
        codes: Vec<u8>,
        f: impl Fn(u8) -> T,
    ) -> crate::Result<Tensor> {
        Tensor::from_vec(shape, codes.into_iter().map(f).collect())
    }
    match d {
        DType::F8E4M3FN => build(shape, codes, F8E4M3Fn),
        DType::F8E4M3FNUZ => build(shape, codes, F8E4M3Fnuz),
        DType::F8E5M2 => build(shape, codes, F8E5M2),
        DType::F8E5M2FNUZ => build(shape, codes, F8E5M2Fnuz),
        DType::F4E2M1 => build(shape, codes, |c| F4E2M1(c & 0xF)),
        DType::F8E8M0 => build(shape, codes, F8E8M0),
        DType::I4 => build(shape, codes, I4::from_bits),
        DType::U4 => build(shape, codes, U4::from_bits),
        DType::I2 => build(shape, codes, I2::from_bits),
        DType::U2 => build(shape, codes, U2::from_bits),
        d => crate::error::dtype_err(format!("{d} is not a one-byte storage format")),
    }
}

/// The codes (bit patterns) of `t`'s elements in C order; `t` has one of
/// this module's dtypes.
pub fn codes(t: &crate::Tensor) -> crate::Result<Vec<u8>> {
    use crate::DType;
    fn get<T: crate::Element>(t: &crate::Tensor, f: impl Fn(T) -> u8) -> crate::Result<Vec<u8>> {
        Ok(t.to_array::<T>()?.iter().map(|&x| f(x)).collect())
    }
    match t.dtype() {
        DType::F8E4M3FN => get(t, F8E4M3Fn::to_bits),
        DType::F8E4M3FNUZ => get(t, F8E4M3Fnuz::to_bits),
        DType::F8E5M2 => get(t, F8E5M2::to_bits),
        DType::F8E5M2FNUZ => get(t, F8E5M2Fnuz::to_bits),
        DType::F4E2M1 => get(t, F4E2M1::to_bits),
        DType::F8E8M0 => get(t, F8E8M0::to_bits),
        DType::I4 => get(t, I4::to_bits),
        DType::U4 => get(t, U4::to_bits),
        DType::I2 => get(t, I2::to_bits),
        DType::U2 => get(t, U2::to_bits),
        d => crate::error::dtype_err(format!("{d} is not a one-byte storage format")),
    }
}

/// `v`'s place on a line where neighbouring values of small float dtype
/// `d` are one apart (for ULP distances); `v` is a value of `d`.
pub fn ordinal(d: crate::DType, v: f64) -> i64 {
    let code = i64::from(encode(d, v, true, RoundMode::Nearest).unwrap_or(0));
    let sign = match d {
        crate::DType::F8E8M0 => return code,
        crate::DType::F4E2M1 => 0x8,
        _ => 0x80,
    };
    if code & sign != 0 {
        -(code & !sign)
    } else {
        code
    }
}

/// The value of `code` in dtype `d` (one of this module's), exactly.
pub fn value_of(d: crate::DType, code: u8) -> Option<f64> {
    use crate::DType;
    Some(match d {
        DType::F8E4M3FN => f64::from(E4M3FN.decode(code)),
        DType::F8E4M3FNUZ => f64::from(E4M3FNUZ.decode(code)),
        DType::F8E5M2 => f64::from(E5M2.decode(code)),
        DType::F8E5M2FNUZ => f64::from(E5M2FNUZ.decode(code)),
        DType::F4E2M1 => f64::from(E2M1.decode(code & 0xF)),
        DType::F8E8M0 => f64::from(e8m0_decode(code)),
        DType::I4 => I4::from_bits(code).get() as f64,
        DType::U4 => U4::from_bits(code).get() as f64,
        DType::I2 => I2::from_bits(code).get() as f64,
        DType::U2 => U2::from_bits(code).get() as f64,
        _ => return None,
    })
}

macro_rules! small_float {
    ($(#[$doc:meta])* $name:ident, $fmt:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::NoUninit)]
        #[repr(transparent)]
        pub struct $name(pub u8);

        impl $name {
            /// `x` rounded to this format; see the module doc for
            /// `saturate`.
            pub fn from_f64_sat(x: f64, saturate: bool) -> Self {
                $name($fmt.encode(x, saturate))
            }
            pub fn to_f32(self) -> f32 {
                $fmt.decode(self.0)
            }
            pub fn to_bits(self) -> u8 {
                self.0
            }
            pub fn from_bits(b: u8) -> Self {
                $name(b)
            }
            /// The largest finite value.
            pub fn max_value() -> f32 {
                $fmt.decode($fmt.max_code())
            }
        }

        impl PartialOrd for $name {
            fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
                self.to_f32().partial_cmp(&o.to_f32())
            }
        }
    };
}

small_float!(
    /// FLOAT8E4M3FN: 4 exponent bits (bias 7), 3 mantissa bits, NaN but no
    /// infinity; ±448 at most.
    F8E4M3Fn,
    E4M3FN
);
small_float!(
    /// FLOAT8E4M3FNUZ: bias 8, one NaN (0x80), no -0, no infinity; ±240.
    F8E4M3Fnuz,
    E4M3FNUZ
);
small_float!(
    /// FLOAT8E5M2: IEEE-like, bias 15, with infinities; ±57344.
    F8E5M2,
    E5M2
);
small_float!(
    /// FLOAT8E5M2FNUZ: bias 16, one NaN (0x80), no -0, no infinity; ±57344.
    F8E5M2Fnuz,
    E5M2FNUZ
);
small_float!(
    /// FLOAT4E2M1 (low 4 bits of the byte): bias 1, values 0, 0.5, 1, 1.5,
    /// 2, 3, 4, 6 and their negatives.
    F4E2M1,
    E2M1
);

/// FLOAT8E8M0: an unsigned power of two 2^-127 ..= 2^127, 0xFF is NaN.
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::NoUninit)]
#[repr(transparent)]
pub struct F8E8M0(pub u8);

impl F8E8M0 {
    pub fn to_f32(self) -> f32 {
        e8m0_decode(self.0)
    }
    pub fn to_bits(self) -> u8 {
        self.0
    }
    pub fn from_bits(b: u8) -> Self {
        F8E8M0(b)
    }
}

impl PartialOrd for F8E8M0 {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        self.to_f32().partial_cmp(&o.to_f32())
    }
}

macro_rules! small_int {
    ($(#[$doc:meta])* $name:ident, $repr:ty, $bits:expr, $signed:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd, bytemuck::NoUninit)]
        #[repr(transparent)]
        pub struct $name(pub $repr);

        impl $name {
            pub const BITS: u32 = $bits;
            pub const MIN: i64 = if $signed { -(1 << ($bits - 1)) } else { 0 };
            pub const MAX: i64 = if $signed { (1 << ($bits - 1)) - 1 } else { (1 << $bits) - 1 };

            /// The low bits of `v`, as a two's-complement cast does.
            pub fn wrapping(v: i64) -> Self {
                let low = v & ((1 << $bits) - 1);
                let v = if $signed && low > Self::MAX { low - (1 << $bits) } else { low };
                $name(v as $repr)
            }

            /// `v` truncated toward zero and wrapped (NaN and infinities
            /// give 0), as numpy-style float to integer casts give it.
            pub fn from_f64_trunc(v: f64) -> Self {
                if v.is_finite() {
                    Self::wrapping(v.trunc() as i64)
                } else {
                    $name(0)
                }
            }

            pub fn get(self) -> i64 {
                self.0 as i64
            }

            /// The byte ONNX packs: the value's low bits.
            pub fn to_bits(self) -> u8 {
                (self.0 as u8) & ((1u16 << $bits) - 1) as u8
            }

            /// The value whose low bits are `b`'s.
            pub fn from_bits(b: u8) -> Self {
                Self::wrapping(i64::from(b))
            }
        }
    };
}

small_int!(
    /// INT4: -8 ..= 7.
    I4,
    i8,
    4,
    true
);
small_int!(
    /// UINT4: 0 ..= 15.
    U4,
    u8,
    4,
    false
);
small_int!(
    /// INT2: -2 ..= 1.
    I2,
    i8,
    2,
    true
);
small_int!(
    /// UINT2: 0 ..= 3.
    U2,
    u8,
    2,
    false
);

#[cfg(test)]
mod tests {
    use super::*;

    fn all_codes(f: Format) -> impl Iterator<Item = u8> {
        let n = 1u16 << (1 + f.exp + f.man);
        (0..n).map(|c| c as u8)
    }

    #[test]
    fn every_code_round_trips_through_f32() {
        for f in [E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E2M1] {
            for c in all_codes(f) {
                let v = f.decode(c);
                let back = f.encode(f64::from(v), false);
                if v.is_nan() {
                    assert!(f.decode(back).is_nan(), "{f:?} {c:#x}");
                } else if f.special == Special::Fnuz && c == 0 {
                    assert_eq!(back, 0);
                } else {
                    assert_eq!(back, c, "{f:?} {c:#x} = {v}");
                }
            }
        }
        for c in 0..=255u8 {
            let v = f64::from(e8m0_decode(c));
            assert_eq!(e8m0_encode(v, false, RoundMode::Down), c, "{c}");
            assert_eq!(e8m0_encode(v, true, RoundMode::Nearest), c, "{c}");
            // 2^-127 is an f32 subnormal: its mantissa is not zero, so
            // rounding up gives 2^-126, as ONNX's definition does.
            let up = if c == 0 { 1 } else { c };
            assert_eq!(e8m0_encode(v, false, RoundMode::Up), up, "{c}");
        }
    }

    #[test]
    fn formats_have_their_documented_limits() {
        assert_eq!(F8E4M3Fn::max_value(), 448.0);
        assert_eq!(F8E4M3Fnuz::max_value(), 240.0);
        assert_eq!(F8E5M2::max_value(), 57344.0);
        assert_eq!(F8E5M2Fnuz::max_value(), 57344.0);
        assert_eq!(F4E2M1::max_value(), 6.0);
        // Smallest subnormals: 2^-9, 2^-10, 2^-16, 2^-17, 0.5.
        assert_eq!(E4M3FN.decode(1), 2f32.powi(-9));
        assert_eq!(E4M3FNUZ.decode(1), 2f32.powi(-10));
        assert_eq!(E5M2.decode(1), 2f32.powi(-16));
        assert_eq!(E5M2FNUZ.decode(1), 2f32.powi(-17));
        assert_eq!(E2M1.decode(1), 0.5);
        assert_eq!(E5M2.decode(0x7C), f32::INFINITY);
        assert!(E4M3FN.decode(0x7F).is_nan() && E4M3FN.decode(0xFF).is_nan());
        assert_eq!(E4M3FN.decode(0x80), 0.0);
        assert!(E4M3FNUZ.decode(0x80).is_nan());
        let e2m1: Vec<f32> = (0..8).map(|c| E2M1.decode(c)).collect();
        assert_eq!(e2m1, [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
    }

    #[test]
    fn rounding_is_to_nearest_even_and_overflow_follows_the_format() {
        // 464 is halfway between 448 (even code) and 480 (past the max).
        assert_eq!(F8E4M3Fn::from_f64_sat(464.0, false).to_f32(), 448.0);
        assert!(F8E4M3Fn::from_f64_sat(465.0, false).to_f32().is_nan());
        assert_eq!(F8E4M3Fn::from_f64_sat(465.0, true).to_f32(), 448.0);
        assert_eq!(F8E4M3Fn::from_f64_sat(f64::NEG_INFINITY, true).to_f32(), -448.0);
        assert_eq!(F8E4M3Fn::from_f64_sat(f64::NAN, true).0, 0x7F);
        // E5M2: the tie at 61440 rounds to the even code, infinity.
        assert_eq!(F8E5M2::from_f64_sat(61439.0, false).to_f32(), 57344.0);
        assert_eq!(F8E5M2::from_f64_sat(61440.0, false).to_f32(), f32::INFINITY);
        assert_eq!(F8E5M2::from_f64_sat(f64::INFINITY, true).to_f32(), 57344.0);
        assert_eq!(F8E5M2::from_f64_sat(f64::NAN, false).0, 0x7E);
        // FNUZ: no negative zero, one NaN.
        assert_eq!(F8E4M3Fnuz::from_f64_sat(-1e-10, false).0, 0);
        assert_eq!(F8E4M3Fnuz::from_f64_sat(248.0, false).0, 0x80);
        assert_eq!(F8E5M2Fnuz::from_f64_sat(-1e6, true).to_f32(), -57344.0);
        // Subnormals: 0.375 and 1.25 of the smallest step.
        let step = 2f64.powi(-9);
        assert_eq!(F8E4M3Fn::from_f64_sat(0.375 * step, false).0, 0);
        assert_eq!(F8E4M3Fn::from_f64_sat(1.25 * step, false).0, 1);
        assert_eq!(F8E4M3Fn::from_f64_sat(1.5 * step, false).0, 2);
        assert_eq!(F8E4M3Fn::from_f64_sat(0.4789, false).to_f32(), 0.46875);
        // FLOAT4E2M1 saturates always; 2.5 ties to 2 (even), 3.5 to 4.
        assert_eq!(F4E2M1::from_f64_sat(1e6, false).to_f32(), 6.0);
        assert_eq!(F4E2M1::from_f64_sat(f64::NEG_INFINITY, false).to_f32(), -6.0);
        assert_eq!(F4E2M1::from_f64_sat(2.5, true).to_f32(), 2.0);
        assert_eq!(F4E2M1::from_f64_sat(3.5, true).to_f32(), 4.0);
        assert_eq!(F4E2M1::from_f64_sat(f64::NAN, true).to_f32(), 0.0);
    }

    #[test]
    fn e8m0_rounds_by_mode() {
        assert_eq!(e8m0_decode(e8m0_encode(1.1, true, RoundMode::Up)), 2.0);
        assert_eq!(e8m0_decode(e8m0_encode(1.1, true, RoundMode::Down)), 1.0);
        assert_eq!(e8m0_decode(e8m0_encode(1.6, true, RoundMode::Nearest)), 2.0);
        assert_eq!(e8m0_decode(e8m0_encode(1.4, true, RoundMode::Nearest)), 1.0);
        assert_eq!(e8m0_encode(0.0, true, RoundMode::Up), 0);
        assert_eq!(e8m0_encode(f64::INFINITY, true, RoundMode::Up), 0xFF);
        // Past 2^127: NaN, or 2^127 when saturating.
        let big = 1.5 * 2f64.powi(127);
        assert_eq!(e8m0_encode(big, false, RoundMode::Up), 0xFF);
        assert_eq!(e8m0_encode(big, true, RoundMode::Up), 0xFE);
        assert_eq!(e8m0_decode(0), 2f32.powi(-127));
    }

    #[test]
    fn small_integers_wrap_and_truncate() {
        assert_eq!(I4::wrapping(-9).get(), 7);
        assert_eq!(I4::wrapping(8).get(), -8);
        assert_eq!(U4::wrapping(-1).get(), 15);
        assert_eq!(I2::wrapping(2).get(), -2);
        assert_eq!(U2::wrapping(-3).get(), 1);
        assert_eq!(I4::from_f64_trunc(-3.9).get(), -3);
        assert_eq!(I4::from_f64_trunc(f64::NAN).get(), 0);
        assert_eq!(I4::from_bits(0xF).get(), -1);
        assert_eq!(I4(-1).to_bits(), 0xF);
        assert_eq!(I2(-2).to_bits(), 0b10);
        for b in 0..16u8 {
            assert_eq!(I4::from_bits(b).to_bits(), b);
            assert_eq!(U4::from_bits(b).to_bits(), b);
        }
    }
}
