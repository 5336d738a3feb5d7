//! .npy files, through ndarray-npy.
//!
//! ndarray-npy allocates what a header declares before it looks at the data
//! (and before it checks the descriptor), so a small file declaring a huge
//! shape would abort the process. The header is therefore parsed and
//! checked here first: the magic string and version, a header length that
//! fits in the file, the dtype from 'descr' (chosen once), a rank of at most
//! [`limit::MAX_RANK`], an element count in checked arithmetic, data that is
//! actually in the file, and the allocation limit. Only then does
//! ndarray-npy read the array, for that one dtype, from the very header
//! bytes checked here.
//!
//! ndarray-npy has no f16: `<f2` files are read and written as `<u2` (the
//! same bytes, endianness and order handling) with the descriptor swapped
//! in the header, and the bit patterns reinterpreted.

use std::fs::File;
use std::io::{BufReader, BufWriter, Cursor, Read, Write};
use std::path::Path;

use ndarray::ArrayD;
use ndarray_npy::{ReadNpyExt, WriteNpyExt};

use crate::dtype::{DType, Element};
use crate::error::{Error, NpyError, Result};
use crate::tensor::{limit, Tensor};

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Longest header read. numpy's own reader refuses headers above 10000
/// bytes by default; a header of one of Vigil's dtypes with 64 dimensions
/// needs under 2 KiB.
const MAX_HEADER_LEN: usize = 1 << 16;

/// The `descr` values ndarray-npy reads for Vigil's dtypes.
fn dtype_of(descr: &str) -> Option<DType> {
    Some(match descr {
        "<f4" | ">f4" => DType::F32,
        "<f2" | ">f2" => DType::F16,
        "<f8" | ">f8" => DType::F64,
        "<i8" | ">i8" => DType::I64,
        "<i4" | ">i4" => DType::I32,
        "|b1" => DType::Bool,
        "|u1" => DType::U8,
        "|i1" => DType::I8,
        "<u2" | ">u2" => DType::U16,
        "<i2" | ">i2" => DType::I16,
        "<u4" | ">u4" => DType::U32,
        "<u8" | ">u8" => DType::U64,
        _ => return None,
    })
}

/// The one-field structured descriptor Vigil writes for a dtype numpy
/// lacks: the field is named after the dtype and holds its bit patterns
/// (`[('bf16', '<u2')]`, `[('f8e4m3fn', '|u1')]`); numpy reads it as a
/// structured array (`np.load(f)['bf16']` gives the bits).
fn bits_descr(d: DType) -> String {
    let carrier = if d.size() == 2 { "<u2" } else { "|u1" };
    format!("[('{}', '{carrier}')]", d.name())
}

/// The dtype whose [`bits_descr`] is `text` (spacing ignored).
fn bits_dtype_of(text: &str) -> Option<DType> {
    let squeeze = |t: &str| t.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let want = squeeze(text);
    DType::ALL
        .into_iter()
        .filter(|d| *d == DType::BF16 || d.is_small_float() || d.is_small_int())
        .find(|&d| squeeze(&bits_descr(d)) == want)
}

/// What the header declares.
struct Header {
    dtype: DType,
    shape: Vec<usize>,
    /// The preamble and header bytes, as read (handed to ndarray-npy).
    raw: Vec<u8>,
}

/// Reads and checks the preamble and header of `f`, a file of `file_len`
/// bytes. Messages are without the path (the caller adds it).
fn read_header(f: &mut impl Read, file_len: u64) -> std::result::Result<Header, NpyError> {
    let mut raw = vec![0u8; 8];
    f.read_exact(&mut raw).map_err(|_| {
        NpyError::Preamble(format!(
            "not a .npy file: {file_len} bytes, shorter than the .npy preamble"
        ))
    })?;
    if raw[..6] != MAGIC[..] {
        return Err(NpyError::Preamble(
            "not a .npy file: it does not start with the magic string \\x93NUMPY".into(),
        ));
    }
    let (major, minor) = (raw[6], raw[7]);
    let len_bytes = match (major, minor) {
        (1, 0) => 2,
        (2, 0) | (3, 0) => 4,
        _ => {
            return Err(NpyError::Preamble(format!(
                "unsupported .npy version {major}.{minor} (supported: 1.0, 2.0, 3.0)"
            )))
        }
    };
    let mut len_buf = [0u8; 4];
    f.read_exact(&mut len_buf[..len_bytes])
        .map_err(|_| NpyError::Preamble("truncated .npy preamble: the header length is missing".into()))?;
    raw.extend_from_slice(&len_buf[..len_bytes]);
    let header_len = u32::from_le_bytes(len_buf) as usize;
    let pre = raw.len();
    if (pre + header_len) as u64 > file_len {
        return Err(NpyError::Header(format!(
            "the header length is {header_len} bytes, but the file holds only {} bytes after the preamble",
            file_len - pre as u64
        )));
    }
    if header_len > MAX_HEADER_LEN {
        return Err(NpyError::Header(format!(
            "the header length is {header_len} bytes, above the limit of {MAX_HEADER_LEN}"
        )));
    }
    raw.resize(pre + header_len, 0);
    f.read_exact(&mut raw[pre..])
        .map_err(|e| NpyError::Header(format!("cannot read the .npy header: {e}")))?;
    let text = &raw[pre..];
    if major < 3 && !text.is_ascii() {
        return Err(NpyError::Header(format!(
            "the header of a version {major}.0 file is not ASCII"
        )));
    }
    let text = std::str::from_utf8(text).map_err(|_| NpyError::Header("the header is not UTF-8".into()))?;
    let (descr, shape) = parse_dict(text.trim_end()).map_err(NpyError::Header)?;
    let dtype = match &descr {
        Descr::Str(s) => dtype_of(s),
        Descr::Other(s) => bits_dtype_of(s),
    }
    .ok_or_else(|| {
        let shown = match &descr {
            Descr::Str(s) => format!("'{s}'"),
            Descr::Other(s) => s.clone(),
        };
        NpyError::DType(format!("unsupported .npy dtype {shown} (supported: <f4, <f8, <f2, <i8, <i4, |b1, |u1, |i1, <u2, <i2, <u4, <u8, and their > forms, and Vigil's bit-pattern records such as [('bf16', '<u2')])"))
    })?;
    if shape.len() > limit::MAX_RANK {
        return Err(NpyError::Shape(format!(
            "shape {} is above the limit of {} dimensions",
            limit::shape_str(&shape),
            limit::MAX_RANK
        )));
    }
    Ok(Header { dtype, shape, raw })
}

/// A `descr` value: a string, or anything else (a structured dtype's list)
/// as written.
enum Descr {
    Str(String),
    Other(String),
}

/// A cursor over the header text. Every method is a loop, never recursion.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn expect(&mut self, c: u8, what: &str) -> std::result::Result<(), String> {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!(
                "malformed .npy header: expected {what} at byte {}",
                self.i
            ))
        }
    }

    /// A quoted Python string (backslash escapes kept as the escaped byte).
    fn string(&mut self) -> std::result::Result<String, String> {
        self.skip_ws();
        let q = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => {
                return Err(format!(
                    "malformed .npy header: expected a quoted string at byte {}",
                    self.i
                ))
            }
        };
        self.i += 1;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => return Err("malformed .npy header: unterminated string".into()),
                Some(c) if c == q => {
                    self.i += 1;
                    break;
                }
                Some(b'\\') => {
                    self.i += 1;
                    out.extend(self.peek());
                    self.i += 1;
                }
                Some(c) => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
        String::from_utf8(out).map_err(|_| "malformed .npy header: a string is not UTF-8".into())
    }

    /// A bracketed value (list, tuple, dict) as written, brackets matched
    /// with a depth counter and quotes skipped.
    fn bracketed(&mut self) -> std::result::Result<String, String> {
        let start = self.i;
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            match c {
                b'\'' | b'"' => {
                    self.string()?;
                    continue;
                }
                b'[' | b'(' | b'{' => depth += 1,
                b']' | b')' | b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        self.i += 1;
                        return Ok(String::from_utf8_lossy(&self.b[start..self.i]).into_owned());
                    }
                }
                _ => {}
            }
            self.i += 1;
        }
        Err("malformed .npy header: unbalanced brackets".into())
    }

    /// A bare token (True, False, a number) up to a delimiter.
    fn token(&mut self) -> &str {
        self.skip_ws();
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| !c.is_ascii_whitespace() && !b",:}])".contains(&c))
        {
            self.i += 1;
        }
        std::str::from_utf8(&self.b[start..self.i]).unwrap_or("")
    }

    /// A tuple of non-negative integers: `()`, `(3,)`, `(2, 3)`.
    fn shape(&mut self) -> std::result::Result<Vec<usize>, String> {
        self.expect(b'(', "a tuple for 'shape'")?;
        let mut dims = Vec::new();
        let mut comma = false;
        loop {
            self.skip_ws();
            if self.peek() == Some(b')') {
                self.i += 1;
                break;
            }
            let tok = self.token().to_string();
            let digits = tok.strip_suffix('L').unwrap_or(&tok);
            let d = match digits.parse::<u64>() {
                Ok(d) => usize::try_from(d).map_err(|_| format!("shape dimension {tok} is too large"))?,
                Err(_) if digits.starts_with('-') => {
                    return Err(format!("shape has a negative dimension {tok}"))
                }
                Err(_) if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) => {
                    return Err(format!("shape dimension {tok} is too large"))
                }
                Err(_) => return Err(format!("malformed .npy header: '{tok}' is not a shape dimension")),
            };
            dims.push(d);
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    comma = true;
                    self.i += 1;
                }
                Some(b')') => {
                    self.i += 1;
                    break;
                }
                _ => return Err("malformed .npy header: 'shape' is not a tuple of integers".into()),
            }
        }
        if dims.len() == 1 && !comma {
            return Err("malformed .npy header: 'shape' is not a tuple (a 1-tuple needs a comma)".into());
        }
        Ok(dims)
    }
}

/// Parses the header dict: `{'descr': ..., 'fortran_order': ..., 'shape':
/// (...)}`, each key exactly once and no other key. `fortran_order` is
/// checked here and left to ndarray-npy to apply.
fn parse_dict(text: &str) -> std::result::Result<(Descr, Vec<usize>), String> {
    let mut c = Scan {
        b: text.as_bytes(),
        i: 0,
    };
    c.expect(b'{', "a Python dict")?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        c.skip_ws();
        if c.peek() == Some(b'}') {
            c.i += 1;
            break;
        }
        let key = c.string()?;
        c.expect(b':', "':'")?;
        c.skip_ws();
        let dup = match key.as_str() {
            "descr" => {
                let d = match c.peek() {
                    Some(b'\'' | b'"') => Descr::Str(c.string()?),
                    Some(b'[' | b'(' | b'{') => Descr::Other(c.bracketed()?),
                    _ => Descr::Other(c.token().to_string()),
                };
                descr.replace(d).is_some()
            }
            "fortran_order" => {
                let f = match c.token() {
                    "True" => true,
                    "False" => false,
                    t => return Err(format!("'fortran_order' is '{t}', not True or False")),
                };
                fortran.replace(f).is_some()
            }
            "shape" => shape.replace(c.shape()?).is_some(),
            k => return Err(format!("unexpected key '{k}' in the .npy header")),
        };
        if dup {
            return Err(format!("key '{key}' appears twice in the .npy header"));
        }
        c.skip_ws();
        match c.peek() {
            Some(b',') => c.i += 1,
            Some(b'}') => {
                c.i += 1;
                break;
            }
            _ => return Err("malformed .npy header: expected ',' or '}' after a value".into()),
        }
    }
    c.skip_ws();
    if c.i != c.b.len() {
        return Err("malformed .npy header: text after the dict".into());
    }
    match (descr, fortran, shape) {
        (Some(d), Some(_), Some(s)) => Ok((d, s)),
        (None, _, _) => Err("the .npy header lacks 'descr'".into()),
        (_, None, _) => Err("the .npy header lacks 'fortran_order'".into()),
        (_, _, None) => Err("the .npy header lacks 'shape'".into()),
    }
}

/// Reads the array with ndarray-npy as `T`, from the checked header bytes
/// followed by the rest of the file.
fn read_array<T: ndarray_npy::ReadableElement>(
    raw: &[u8],
    rest: impl Read,
) -> std::result::Result<ArrayD<T>, String> {
    let reader = Cursor::new(raw).chain(rest);
    ArrayD::<T>::read_npy(reader).map_err(|e| format!("cannot read .npy: {e}"))
}

/// A tensor holding `a`'s elements.
fn tensor_of<T: Element>(a: ArrayD<T>) -> std::result::Result<Tensor, String> {
    if a.is_standard_layout() {
        // C order: keep ndarray-npy's buffer instead of copying it.
        let shape = a.shape().to_vec();
        let (data, _) = a.into_raw_vec_and_offset();
        return Tensor::from_vec(&shape, data).map_err(|e| e.to_string());
    }
    Ok(Tensor::from_array(&a))
}

/// Rewrites the header's `'<f2'`/`'>f2'` descriptor (in `raw`, preamble
/// and header) to the u16 one of the same byte order, or back: the same
/// length, so the header's padding and length field stay valid. The search
/// starts at the dict, past the preamble's binary length field.
fn swap_descr(raw: &mut [u8], from: u8, to: u8) {
    let dict = raw.iter().position(|&b| b == b'{').unwrap_or(raw.len());
    if let Some(i) = (dict..raw.len().saturating_sub(2))
        .find(|&i| matches!(raw[i], b'<' | b'>') && raw[i + 1] == from && raw[i + 2] == b'2')
    {
        raw[i + 1] = to;
    }
}

/// The element types .npy files hold, each with its reader and writer.
trait NpyElement: Element {
    fn read(raw: &[u8], rest: impl Read) -> std::result::Result<Tensor, String>;
    fn write(t: &Tensor, w: impl std::io::Write) -> Result<std::result::Result<(), String>>;
}

macro_rules! npy_element {
    ($($t:ty),*) => {$(
        impl NpyElement for $t {
            fn read(raw: &[u8], rest: impl Read) -> std::result::Result<Tensor, String> {
                tensor_of(read_array::<$t>(raw, rest)?)
            }
            fn write(t: &Tensor, w: impl std::io::Write) -> Result<std::result::Result<(), String>> {
                Ok(t.to_array::<$t>()?.write_npy(w).map_err(|e| e.to_string()))
            }
        }
    )*};
}
npy_element!(f32, f64, i64, i32, bool, u8, i8, u16, i16, u32, u64);

impl NpyElement for half::f16 {
    fn read(raw: &[u8], rest: impl Read) -> std::result::Result<Tensor, String> {
        let mut raw = raw.to_vec();
        swap_descr(&mut raw, b'f', b'u');
        tensor_of(read_array::<u16>(&raw, rest)?.mapv(half::f16::from_bits))
    }
    fn write(t: &Tensor, mut w: impl std::io::Write) -> Result<std::result::Result<(), String>> {
        let bits = t.to_array::<half::f16>()?.mapv(half::f16::to_bits);
        let mut image = Vec::new();
        if let Err(e) = bits.write_npy(&mut image) {
            return Ok(Err(e.to_string()));
        }
        // The descriptor sits in the header, before the data: swap it there only.
        let header_end = image.len() - bits.len() * 2;
        swap_descr(&mut image[..header_end], b'u', b'f');
        Ok(w.write_all(&image).map_err(|e| e.to_string()))
    }
}
/// Dtypes numpy has no dtype for (bf16 and `tensor::small`'s) are
/// stored as their bit patterns under [`bits_descr`], C order, written and
/// read here (ndarray-npy has no structured dtypes).
macro_rules! npy_bits {
    ($($t:ty),*) => {$(
        impl NpyElement for $t {
            fn read(raw: &[u8], rest: impl Read) -> std::result::Result<Tensor, String> {
                read_bits(<$t as Element>::DTYPE, raw, rest)
            }
            fn write(t: &Tensor, w: impl std::io::Write) -> Result<std::result::Result<(), String>> {
                write_bits(t, w)
            }
        }
    )*};
}
npy_bits!(
    half::bf16,
    crate::small::F8E4M3Fn,
    crate::small::F8E4M3Fnuz,
    crate::small::F8E5M2,
    crate::small::F8E5M2Fnuz,
    crate::small::F4E2M1,
    crate::small::F8E8M0,
    crate::small::I4,
    crate::small::U4,
    crate::small::I2,
    crate::small::U2
);

fn read_bits(d: DType, raw: &[u8], mut rest: impl Read) -> std::result::Result<Tensor, String> {
    let dict = raw.iter().position(|&b| b == b'{').unwrap_or(raw.len());
    let text = String::from_utf8_lossy(&raw[dict..]);
    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if squeezed.contains("'fortran_order':True") {
        return Err(format!("{d} files must be in C order"));
    }
    let (_, shape) = parse_dict(text.trim_end())?;
    let n: usize = shape.iter().product();
    let mut bytes = vec![0u8; n * d.size()];
    rest.read_exact(&mut bytes)
        .map_err(|e| format!("cannot read .npy data: {e}"))?;
    let t = if d == DType::BF16 {
        let v = bytes
            .chunks_exact(2)
            .map(|c| half::bf16::from_bits(u16::from_le_bytes([c[0], c[1]])))
            .collect();
        Tensor::from_vec(&shape, v)
    } else {
        crate::small::from_codes(d, &shape, bytes)
    };
    t.map_err(|e| e.to_string())
}

fn write_bits(t: &Tensor, mut w: impl std::io::Write) -> Result<std::result::Result<(), String>> {
    let d = t.dtype();
    let bytes: Vec<u8> = if d == DType::BF16 {
        t.to_array::<half::bf16>()?
            .iter()
            .flat_map(|v| v.to_bits().to_le_bytes())
            .collect()
    } else {
        crate::small::codes(t)?
    };
    let shape = match t.shape() {
        [n] => format!("({n},)"),
        s => format!(
            "({})",
            s.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", ")
        ),
    };
    let mut dict = format!(
        "{{'descr': {}, 'fortran_order': False, 'shape': {shape}, }}",
        bits_descr(d)
    );
    // Version 1.0: the preamble (10 bytes) and header end on a multiple of
    // 64 bytes, the header with a newline.
    let total = (10 + dict.len() + 1).div_ceil(64) * 64;
    dict.push_str(&" ".repeat(total - 10 - dict.len() - 1));
    dict.push('\n');
    let mut image = MAGIC.to_vec();
    image.extend_from_slice(&[1, 0]);
    image.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    image.extend_from_slice(dict.as_bytes());
    image.extend_from_slice(&bytes);
    Ok(w.write_all(&image).map_err(|e| e.to_string()))
}

pub fn read(path: &Path) -> Result<Tensor> {
    let mut f = File::open(path).map_err(|e| Error::file(path, e))?;
    let file_len = f.metadata().map_err(|e| Error::file(path, e))?.len();
    read_from(&mut f, file_len).map_err(|e| Error::npy(path, e))
}

/// Reads a .npy image held in memory; errors name `name` as the file.
pub fn read_bytes(bytes: &[u8], name: &Path) -> Result<Tensor> {
    read_from(&mut Cursor::new(bytes), bytes.len() as u64).map_err(|e| Error::npy(name, e))
}

/// Reads a .npy of `len` bytes from `f`, checking everything first.
fn read_from(f: &mut impl Read, len: u64) -> std::result::Result<Tensor, NpyError> {
    let header = read_header(f, len)?;
    let count = limit::numel(&header.shape).map_err(|e| NpyError::Shape(e.to_string()))?;
    let bytes = count as u128 * header.dtype.size() as u128;
    let held = len - header.raw.len() as u64;
    if bytes > held as u128 {
        return Err(NpyError::Truncated(format!(
            "declares {count} elements ({bytes} bytes) but holds only {held} bytes"
        )));
    }
    limit::check_alloc(header.dtype, count).map_err(|e| NpyError::Alloc(Box::new(e)))?;
    let rest = BufReader::new(f);
    crate::dispatch_all!(header.dtype, T => <T as NpyElement>::read(&header.raw, rest))
        .map_err(NpyError::Data)
}

pub fn write(t: &Tensor, path: &Path) -> Result<()> {
    let f = File::create(path).map_err(|e| Error::file(path, e))?;
    let mut w = BufWriter::new(f);
    let r = crate::dispatch_all!(t.dtype(), T => <T as NpyElement>::write(t, &mut w)?);
    r.and_then(|()| w.flush().map_err(|e| e.to_string()))
        .map_err(|e| Error::file(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(text: &str) -> std::result::Result<Vec<usize>, String> {
        parse_dict(text).map(|(_, s)| s)
    }

    #[test]
    fn header_dicts_parse_as_numpy_writes_them() {
        let d = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
        assert_eq!(dims(d).unwrap(), vec![3, 4]);
        let d = "{\"descr\": \"|b1\", \"fortran_order\": True, \"shape\": ()}";
        assert_eq!(dims(d).unwrap(), Vec::<usize>::new());
        assert_eq!(
            dims("{'shape': (7,), 'fortran_order': False, 'descr': '<i8'}").unwrap(),
            vec![7]
        );
        assert_eq!(
            dims("{'descr': '<i8', 'fortran_order': False, 'shape': (2L, 3L)}").unwrap(),
            vec![2, 3]
        );
        match parse_dict("{'descr': [('a', '<f4'), ('b', ')')], 'fortran_order': False, 'shape': (1,)}") {
            Ok((Descr::Other(s), _)) => assert_eq!(s, "[('a', '<f4'), ('b', ')')]"),
            _ => panic!("a structured descr"),
        }
    }

    #[test]
    fn malformed_header_dicts_are_errors() {
        for d in [
            "",
            "{",
            "{'descr': '<f4', 'fortran_order': False}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (3)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'shape': (3,)}",
            "{'descr': '<f4', 'fortran_order': None, 'shape': (3,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (3, x)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-3,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} x",
            "{'descr': [(, 'fortran_order': False, 'shape': (3,)}",
            "{'descr: '<f4'}",
        ] {
            assert!(parse_dict(d).is_err(), "{d}");
        }
        let deep = format!(
            "{{'descr': '<f4', 'fortran_order': False, 'shape': {}}}",
            "(".repeat(60_000)
        );
        assert!(parse_dict(&deep).is_err());
    }

    #[test]
    fn images_in_memory_read_like_files() {
        let t = Tensor::from_vec(&[2, 3], vec![1.5f32, -2.0, 0.25, 7.0, 8.0, -0.0]).unwrap();
        let mut image = Vec::new();
        t.to_array::<f32>().unwrap().write_npy(&mut image).unwrap();
        let back = read_bytes(&image, Path::new("m.npy")).unwrap();
        assert_eq!(back.to_f64_vec().unwrap(), t.to_f64_vec().unwrap());
        assert_eq!(back.shape(), &[2, 3]);
        let e = read_bytes(&image[..image.len() - 4], Path::new("m.npy")).unwrap_err();
        assert!(
            matches!(&e, Error::Npy { path, source: NpyError::Truncated(_) } if path == Path::new("m.npy")),
            "{e:?}"
        );
        assert!(e.to_string().contains("holds only 20 bytes"), "{e}");
        let e = read_bytes(b"\x93NUMPY", Path::new("m.npy")).unwrap_err();
        assert!(
            matches!(
                &e,
                Error::Npy {
                    source: NpyError::Preamble(_),
                    ..
                }
            ),
            "{e:?}"
        );
    }
}
