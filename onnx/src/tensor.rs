//! `TensorProto` ⇄ Vigil tensors, and ONNX element types ⇄ Vigil dtypes.

use onnx_protobuf::tensor_proto::{DataLocation, DataType};
use onnx_protobuf::TensorProto;
use protobuf::Enum;
use vigil_engine::{small, DType, Tensor};

use crate::error::{ImportError, Result};
use crate::external::ExternalData;

/// The ONNX element type (TensorProto.DataType) of a Vigil dtype: the one
/// table between the two, read both ways ([`dtype_of`] searches it), so
/// the match's exhaustiveness makes a new dtype name its number here. The
/// last four are newer than the protobuf bindings.
pub fn elem_of(d: DType) -> i32 {
    (match d {
        DType::F32 => DataType::FLOAT,
        DType::F64 => DataType::DOUBLE,
        DType::F16 => DataType::FLOAT16,
        DType::I64 => DataType::INT64,
        DType::I32 => DataType::INT32,
        DType::Bool => DataType::BOOL,
        DType::U8 => DataType::UINT8,
        DType::I8 => DataType::INT8,
        DType::U16 => DataType::UINT16,
        DType::I16 => DataType::INT16,
        DType::U32 => DataType::UINT32,
        DType::U64 => DataType::UINT64,
        DType::BF16 => DataType::BFLOAT16,
        DType::F8E4M3FN => DataType::FLOAT8E4M3FN,
        DType::F8E4M3FNUZ => DataType::FLOAT8E4M3FNUZ,
        DType::F8E5M2 => DataType::FLOAT8E5M2,
        DType::F8E5M2FNUZ => DataType::FLOAT8E5M2FNUZ,
        DType::U4 => DataType::UINT4,
        DType::I4 => DataType::INT4,
        DType::F4E2M1 => return 23,
        DType::F8E8M0 => return 24,
        DType::U2 => return 25,
        DType::I2 => return 26,
    }) as i32
}

/// The Vigil dtype of an ONNX element type, or an error naming `what`.
pub fn dtype_of(elem: i32, what: &str) -> Result<DType> {
    DType::ALL
        .into_iter()
        .find(|&d| elem_of(d) == elem)
        .ok_or_else(|| ImportError::UnsupportedDtype {
            what: what.to_string(),
            dtype: dtype_name(elem),
        })
}

/// `n` elements of `bits` bits each, packed low bits first, as ONNX stores
/// the 4- and 2-bit dtypes (one byte each for 8 bits).
fn unpack(bytes: &[u8], bits: u32, n: usize) -> Vec<u8> {
    let per = (8 / bits) as usize;
    let mask = ((1u16 << bits) - 1) as u8;
    (0..n)
        .map(|i| (bytes[i / per] >> ((i % per) as u32 * bits)) & mask)
        .collect()
}

/// The inverse of [`unpack`]: codes packed `8 / bits` to a byte, the last
/// byte padded with zero bits.
fn pack(codes: &[u8], bits: u32) -> Vec<u8> {
    let per = (8 / bits) as usize;
    codes
        .chunks(per)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u8, |b, (k, &v)| b | (v << (k as u32 * bits)))
        })
        .collect()
}

/// Bytes that `n` elements of a dtype stored `bits` bits each take.
pub fn packed_len(bits: u32, n: usize) -> Option<usize> {
    n.checked_mul(bits as usize).map(|b| b.div_ceil(8))
}

/// A tensor of a one-byte storage dtype (`vigil_engine::small`) from the
/// bytes a file holds for it (packed for the 4- and 2-bit dtypes).
pub fn small_from_bytes(
    dtype: DType,
    shape: &[usize],
    n: usize,
    bytes: &[u8],
) -> std::result::Result<Tensor, String> {
    let bits = small::file_bits(dtype).ok_or_else(|| format!("{dtype} is not a packed dtype"))?;
    let need = packed_len(bits, n).ok_or("too many elements")?;
    if bytes.len() != need {
        return Err(format!(
            "has {} bytes, {n} elements of {dtype} ({bits} bits each) need {need}",
            bytes.len()
        ));
    }
    small::from_codes(dtype, shape, unpack(bytes, bits, n)).map_err(|e| e.to_string())
}

fn bad(t: &TensorProto, what: &str, msg: String) -> ImportError {
    ImportError::BadTensor {
        tensor: if t.name.is_empty() {
            what.to_string()
        } else {
            t.name.clone()
        },
        msg,
    }
}

/// Elements from `raw_data` (little-endian, `W` bytes each) or a typed field.
fn elements<T: Copy, const W: usize>(
    t: &TensorProto,
    what: &str,
    n: usize,
    from_le: impl Fn([u8; W]) -> T,
    typed: Vec<T>,
) -> Result<Vec<T>> {
    let v: Vec<T> = if !t.raw_data.is_empty() || typed.is_empty() && n > 0 {
        let need = n.checked_mul(W).ok_or_else(|| {
            bad(
                t,
                what,
                format!("dims {:?} need more bytes than memory holds", t.dims),
            )
        })?;
        if t.raw_data.len() != need {
            return Err(bad(
                t,
                what,
                format!(
                    "raw_data has {} bytes, {n} elements of {W} bytes need {need}",
                    t.raw_data.len()
                ),
            ));
        }
        t.raw_data
            .chunks_exact(W)
            .map(|c| {
                let mut b = [0u8; W];
                b.copy_from_slice(c);
                from_le(b)
            })
            .collect()
    } else {
        typed
    };
    if v.len() != n {
        return Err(bad(
            t,
            what,
            format!("has {} elements, its dims {:?} need {n}", v.len(), t.dims),
        ));
    }
    Ok(v)
}

/// A typed field's values narrowed to `T`: ONNX keeps 8- and 16-bit
/// integers in `int32_data` and u32 in `uint64_data`. A value out of `T`'s
/// range is an error naming the tensor.
fn narrow<S: Copy + std::fmt::Display, T: TryFrom<S>>(
    t: &TensorProto,
    what: &str,
    typed: &[S],
) -> Result<Vec<T>> {
    typed
        .iter()
        .map(|&v| {
            T::try_from(v).map_err(|_| {
                bad(
                    t,
                    what,
                    format!("value {v} is out of range of {}", dtype_name(t.data_type)),
                )
            })
        })
        .collect()
}

/// The ONNX name of an element type, lower case.
fn dtype_name(elem: i32) -> String {
    DataType::from_i32(elem).map_or(format!("#{elem}"), |d| format!("{d:?}").to_lowercase())
}

/// A Vigil tensor with the proto's dtype, shape and data; `what` names it
/// in errors when the proto has no name.
pub fn to_tensor(t: &TensorProto, what: &str) -> Result<Tensor> {
    to_tensor_from(t, what, None)
}

/// True when the tensor's bytes are in an external file.
pub fn is_external(t: &TensorProto) -> bool {
    t.data_location.enum_value() == Ok(DataLocation::EXTERNAL) || !t.external_data.is_empty()
}

/// [`to_tensor`], reading external data through `external` (the model's
/// directory); without it an external tensor is an error naming it.
pub fn to_tensor_from(t: &TensorProto, what: &str, external: Option<&mut ExternalData>) -> Result<Tensor> {
    let name = if t.name.is_empty() { what } else { &t.name };
    if t.segment.is_some() {
        return Err(bad(t, what, "segmented tensors are not supported".into()));
    }
    let shape = t
        .dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| bad(t, what, format!("negative dim in {:?}", t.dims))))
        .collect::<Result<Vec<usize>>>()?;
    let n = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| bad(t, what, format!("dims {:?} overflow", t.dims)))?;
    let dtype = dtype_of(t.data_type, &format!("tensor '{name}'"))?;
    if is_external(t) {
        return match external {
            Some(x) => x.read(t, name, dtype, &shape),
            None => Err(ImportError::ExternalData {
                tensor: name.to_string(),
            }),
        };
    }
    let built = match dtype {
        // The one-byte formats: packed bytes in raw_data, or one byte per
        // int32_data entry (ONNX packs 4- and 2-bit values there too).
        d @ (DType::F8E4M3FN
        | DType::F8E4M3FNUZ
        | DType::F8E5M2
        | DType::F8E5M2FNUZ
        | DType::F4E2M1
        | DType::F8E8M0
        | DType::I4
        | DType::U4
        | DType::I2
        | DType::U2) => {
            let typed;
            let bytes: &[u8] = if !t.raw_data.is_empty() || t.int32_data.is_empty() {
                &t.raw_data
            } else {
                typed = narrow::<i32, u8>(t, what, &t.int32_data)?;
                &typed
            };
            return small_from_bytes(d, &shape, n, bytes).map_err(|m| bad(t, what, m));
        }
        // BFLOAT16 keeps its bit patterns, as FLOAT16.
        DType::BF16 => Tensor::from_vec(
            &shape,
            elements(t, what, n, u16::from_le_bytes, narrow(t, what, &t.int32_data)?)?
                .into_iter()
                .map(vigil_engine::bf16::from_bits)
                .collect(),
        ),
        DType::F32 => Tensor::from_vec(
            &shape,
            elements(t, what, n, f32::from_le_bytes, t.float_data.clone())?,
        ),
        DType::F64 => Tensor::from_vec(
            &shape,
            elements(t, what, n, f64::from_le_bytes, t.double_data.clone())?,
        ),
        // FLOAT16 keeps its bit patterns: two bytes each in raw_data, or
        // one per int32_data entry.
        DType::F16 => Tensor::from_vec(
            &shape,
            elements(t, what, n, u16::from_le_bytes, narrow(t, what, &t.int32_data)?)?
                .into_iter()
                .map(vigil_engine::f16::from_bits)
                .collect(),
        ),
        DType::I64 => Tensor::from_vec(
            &shape,
            elements(t, what, n, i64::from_le_bytes, t.int64_data.clone())?,
        ),
        DType::I32 => Tensor::from_vec(
            &shape,
            elements(t, what, n, i32::from_le_bytes, t.int32_data.clone())?,
        ),
        DType::U8 => Tensor::from_vec(
            &shape,
            elements(t, what, n, u8::from_le_bytes, narrow(t, what, &t.int32_data)?)?,
        ),
        DType::I8 => Tensor::from_vec(
            &shape,
            elements(t, what, n, i8::from_le_bytes, narrow(t, what, &t.int32_data)?)?,
        ),
        DType::U16 => Tensor::from_vec(
            &shape,
            elements(t, what, n, u16::from_le_bytes, narrow(t, what, &t.int32_data)?)?,
        ),
        DType::I16 => Tensor::from_vec(
            &shape,
            elements(t, what, n, i16::from_le_bytes, narrow(t, what, &t.int32_data)?)?,
        ),
        DType::U32 => Tensor::from_vec(
            &shape,
            elements(t, what, n, u32::from_le_bytes, narrow(t, what, &t.uint64_data)?)?,
        ),
        DType::U64 => Tensor::from_vec(
            &shape,
            elements(t, what, n, u64::from_le_bytes, t.uint64_data.clone())?,
        ),
        DType::Bool => {
            let typed = t.int32_data.iter().map(|&v| v as u8).collect();
            let bytes: Vec<u8> = elements(t, what, n, |b: [u8; 1]| b[0], typed)?;
            Tensor::from_vec(&shape, bytes.into_iter().map(|b| b != 0).collect())
        }
    };
    built.map_err(|e| bad(t, what, e.to_string()))
}

/// A proto holding `t` (C order, `raw_data`), named `name`. Tests build
/// their fixture models with it.
pub fn to_proto(t: &Tensor, name: &str) -> Result<TensorProto> {
    let mut p = TensorProto::new();
    p.name = name.to_string();
    p.dims = t.shape().iter().map(|&d| d as i64).collect();
    p.data_type = elem_of(t.dtype());
    p.raw_data = match small::file_bits(t.dtype()) {
        Some(bits) => pack(&small::codes(t)?, bits),
        None => vigil_engine::dispatch_num!(t.dtype(),
            T => t.to_array::<T>()?.iter().flat_map(|&v| LeBytes::le_bytes(v)).collect(),
            t.to_array::<bool>()?.iter().map(|&v| v as u8).collect()),
    };
    Ok(p)
}

/// Little-endian bytes of one element, as `raw_data` holds them.
trait LeBytes: Copy {
    fn le_bytes(self) -> Vec<u8>;
}

macro_rules! le_bytes {
    ($($t:ty),*) => {$(
        impl LeBytes for $t {
            fn le_bytes(self) -> Vec<u8> {
                self.to_le_bytes().to_vec()
            }
        }
    )*};
}
le_bytes!(
    f32,
    f64,
    i64,
    i32,
    u8,
    i8,
    u16,
    i16,
    u32,
    u64,
    vigil_engine::f16,
    vigil_engine::bf16
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_and_typed_data_round_trip() {
        let t = Tensor::from_vec(&[2, 2], vec![1.5f32, -2.0, 0.25, 8.0]).unwrap();
        let p = to_proto(&t, "w").unwrap();
        let back = to_tensor(&p, "w").unwrap();
        assert_eq!(back.to_array::<f32>().unwrap(), t.to_array::<f32>().unwrap());
        let mut typed = TensorProto::new();
        typed.data_type = DataType::INT64.value();
        typed.dims = vec![3];
        typed.int64_data = vec![4, -5, 6];
        assert_eq!(
            to_tensor(&typed, "s")
                .unwrap()
                .to_array::<i64>()
                .unwrap()
                .as_slice()
                .unwrap(),
            &[4, -5, 6]
        );
        let b = Tensor::from_vec(&[3], vec![true, false, true]).unwrap();
        let back = to_tensor(&to_proto(&b, "b").unwrap(), "b").unwrap();
        assert_eq!(
            back.to_array::<bool>().unwrap().as_slice().unwrap(),
            &[true, false, true]
        );
    }

    #[test]
    fn packed_int4_uint4_and_int2_unpack_low_bits_first() {
        use vigil_engine::small::{I2, I4, U4};
        let proto = |elem: i32, dims: &[i64], raw: &[u8], typed: &[i32]| {
            let mut p = TensorProto::new();
            p.data_type = elem;
            p.dims = dims.to_vec();
            p.raw_data = raw.to_vec();
            p.int32_data = typed.to_vec();
            p
        };
        // int4 [7, -8, -1]: nibbles 0x7, 0x8 in byte 0, 0xF in byte 1's low half.
        let t = to_tensor(&proto(DataType::INT4.value(), &[3], &[0x87, 0x0F], &[]), "w").unwrap();
        assert_eq!(t.dtype(), DType::I4);
        assert_eq!(
            t.to_array::<I4>()
                .unwrap()
                .iter()
                .map(|v| v.get())
                .collect::<Vec<_>>(),
            [7, -8, -1]
        );
        // The same bytes from int32_data, one packed byte per entry.
        let t = to_tensor(&proto(DataType::UINT4.value(), &[3], &[], &[0x87, 0x0F]), "w").unwrap();
        assert_eq!(
            t.to_array::<U4>()
                .unwrap()
                .iter()
                .map(|v| v.get())
                .collect::<Vec<_>>(),
            [7, 8, 15]
        );
        // int2 (ONNX 26): four to a byte; 0b10_01_00_11 is [-1, 0, 1, -2].
        let t = to_tensor(&proto(26, &[2, 2], &[0b1001_0011], &[]), "w").unwrap();
        assert_eq!(
            t.to_array::<I2>()
                .unwrap()
                .iter()
                .map(|v| v.get())
                .collect::<Vec<_>>(),
            [-1, 0, 1, -2]
        );
        // A byte count that does not fit the dims names the tensor.
        let e = to_tensor(&proto(DataType::INT4.value(), &[3], &[0x87], &[]), "w").unwrap_err();
        assert!(matches!(e, ImportError::BadTensor { .. }), "{e}");
        // Written back packed, and read again the same.
        let t = Tensor::from_vec(&[3], vec![I4(-3), I4(5), I4(-8)]).unwrap();
        let p = to_proto(&t, "q").unwrap();
        assert_eq!(p.raw_data, [0x5D, 0x08]);
        let back = to_tensor(&p, "q").unwrap();
        assert_eq!(back.to_array::<I4>().unwrap(), t.to_array::<I4>().unwrap());
    }

    #[test]
    fn bfloat16_and_float8_keep_their_bit_patterns() {
        let mut p = TensorProto::new();
        p.data_type = DataType::BFLOAT16.value();
        p.dims = vec![2];
        p.int32_data = vec![0x3FC0, 0xC000];
        let t = to_tensor(&p, "b").unwrap();
        assert_eq!(t.to_f64_vec().unwrap(), [1.5, -2.0]);
        let mut p = TensorProto::new();
        p.data_type = DataType::FLOAT8E4M3FN.value();
        p.dims = vec![3];
        p.raw_data = vec![0x7E, 0xFF, 0x01];
        let v = to_tensor(&p, "f").unwrap().to_f64_vec().unwrap();
        assert_eq!((v[0], v[1].is_nan(), v[2]), (448.0, true, 2f64.powi(-9)));
        assert_eq!(dtype_of(24, "x").unwrap(), DType::F8E8M0);
        assert_eq!(elem_of(DType::F4E2M1), 23);
    }

    #[test]
    fn every_dtype_has_its_own_element_type_and_comes_back_from_it() {
        let mut seen = std::collections::HashSet::new();
        for d in DType::ALL {
            assert!(seen.insert(elem_of(d)), "{d} shares element type {}", elem_of(d));
            assert_eq!(dtype_of(elem_of(d), "x").unwrap(), d);
        }
        for (elem, name) in [(14, "complex64"), (8, "string"), (99, "#99")] {
            match dtype_of(elem, "x") {
                Err(ImportError::UnsupportedDtype { dtype, .. }) => assert_eq!(dtype, name),
                other => panic!("element type {elem}: {other:?}"),
            }
        }
    }

    #[test]
    fn float16_comes_from_raw_data_or_int32_data_bit_patterns() {
        use vigil_engine::f16;
        let bits =
            |t: &Tensor| -> Vec<u16> { t.to_array::<f16>().unwrap().iter().map(|x| x.to_bits()).collect() };
        // 1.0, -2.5, 65504, -inf, the smallest subnormal, NaN.
        let want = [0x3c00u16, 0xc100, 0x7bff, 0xfc00, 0x0001, 0x7e00];
        let mut p = TensorProto::new();
        p.name = "h".into();
        p.data_type = DataType::FLOAT16.value();
        p.dims = vec![2, 3];
        p.raw_data = want.iter().flat_map(|b| b.to_le_bytes()).collect();
        let raw = to_tensor(&p, "h").unwrap();
        assert_eq!((raw.dtype(), raw.shape()), (DType::F16, &[2usize, 3][..]));
        assert_eq!(bits(&raw), want);
        p.raw_data.clear();
        p.int32_data = want.iter().map(|&b| b as i32).collect();
        assert_eq!(bits(&to_tensor(&p, "h").unwrap()), want);
        // A bit pattern above 16 bits is refused, naming the tensor.
        p.int32_data[0] = 0x10000;
        let e = to_tensor(&p, "h").unwrap_err().to_string();
        assert!(e.contains("'h'") && e.contains("out of range of float16"), "{e}");
        // Written back as raw_data, two bytes each.
        let back = to_proto(&raw, "h").unwrap();
        assert_eq!(back.data_type, DataType::FLOAT16.value());
        assert_eq!(back.raw_data.len(), 12);
        assert_eq!(bits(&to_tensor(&back, "h").unwrap()), want);
        assert_eq!(elem_of(DType::F16), DataType::FLOAT16.value());
    }

    #[test]
    fn narrow_integers_come_from_int32_data_and_u32_u64_from_uint64_data() {
        let typed = |dt: DataType, i32s: Vec<i32>, u64s: Vec<u64>| {
            let mut p = TensorProto::new();
            p.name = "c".into();
            p.data_type = dt.value();
            p.dims = vec![2];
            p.int32_data = i32s;
            p.uint64_data = u64s;
            to_tensor(&p, "c")
        };
        let u8s = typed(DataType::UINT8, vec![0, 255], vec![]).unwrap();
        assert_eq!(u8s.to_array::<u8>().unwrap().as_slice().unwrap(), &[0, 255]);
        let i8s = typed(DataType::INT8, vec![-128, 127], vec![]).unwrap();
        assert_eq!(i8s.to_array::<i8>().unwrap().as_slice().unwrap(), &[-128, 127]);
        let u16s = typed(DataType::UINT16, vec![65535, 1], vec![]).unwrap();
        assert_eq!(u16s.to_array::<u16>().unwrap().as_slice().unwrap(), &[65535, 1]);
        let i16s = typed(DataType::INT16, vec![-32768, 3], vec![]).unwrap();
        assert_eq!(i16s.to_array::<i16>().unwrap().as_slice().unwrap(), &[-32768, 3]);
        let u32s = typed(DataType::UINT32, vec![], vec![u32::MAX as u64, 0]).unwrap();
        assert_eq!(
            u32s.to_array::<u32>().unwrap().as_slice().unwrap(),
            &[u32::MAX, 0]
        );
        let u64s = typed(DataType::UINT64, vec![], vec![u64::MAX, 1 << 63]).unwrap();
        assert_eq!(
            u64s.to_array::<u64>().unwrap().as_slice().unwrap(),
            &[u64::MAX, 1 << 63]
        );
        let e = typed(DataType::UINT8, vec![256, 0], vec![])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tensor 'c': value 256 is out of range of uint8"),
            "{e}"
        );
        let e = typed(DataType::UINT32, vec![], vec![1 << 32, 0])
            .unwrap_err()
            .to_string();
        assert!(e.contains("value 4294967296 is out of range of uint32"), "{e}");
        // raw_data round trips, little-endian.
        for t in [u8s, i8s, u16s, i16s, u32s, u64s] {
            let p = to_proto(&t, "r").unwrap();
            assert_eq!(p.raw_data.len(), 2 * t.dtype().size());
            assert_eq!(dtype_of(p.data_type, "r").unwrap(), t.dtype());
            let back = to_tensor(&p, "r").unwrap();
            let c =
                vigil_engine::compare::compare(&back, &t, vigil_engine::compare::Tolerance::EXACT).unwrap();
            assert!(c.is_exact(), "{}", t.dtype());
        }
        let p = to_proto(&Tensor::from_vec(&[1], vec![0x0102u16]).unwrap(), "le").unwrap();
        assert_eq!(p.raw_data, [2, 1]);
    }

    #[test]
    fn bad_tensors_name_themselves() {
        let mut p = TensorProto::new();
        p.name = "w".into();
        p.data_type = DataType::FLOAT.value();
        p.dims = vec![3];
        p.raw_data = vec![0; 8];
        assert!(to_tensor(&p, "x")
            .unwrap_err()
            .to_string()
            .contains("tensor 'w': raw_data has 8 bytes"));
        p.data_type = DataType::COMPLEX64.value();
        let e = to_tensor(&p, "x").unwrap_err().to_string();
        assert!(e.contains("'w'") && e.contains("complex64"), "{e}");
        // Found by fuzzing: an element count that fits but whose byte
        // count overflows was a multiplication overflow.
        p.data_type = DataType::FLOAT.value();
        p.dims = vec![1 << 62];
        let e = to_tensor(&p, "x").unwrap_err().to_string();
        assert!(
            e.contains("tensor 'w': dims [4611686018427387904] need more bytes"),
            "{e}"
        );
        p.dims = vec![3];
        p.data_location = DataLocation::EXTERNAL.into();
        assert!(matches!(
            to_tensor(&p, "x"),
            Err(ImportError::ExternalData { .. })
        ));
    }
}
