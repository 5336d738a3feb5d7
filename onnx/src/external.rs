//! Tensors whose bytes live outside the model file (ONNX "external data",
//! what `torch.onnx.export` writes by default, and the only way past
//! protobuf's 2 GB limit): `location` names a file relative to the model's
//! directory, `offset` and `length` a byte range in it, `checksum` the
//! SHA-1 of the whole file.
//!
//! The location must stay inside the model's directory (no absolute path,
//! no `..`, no symbolic link out), since a model may come from anyone. The
//! bytes are read once, in bounded chunks, straight into the tensor's
//! element vector: a 3 GB weight takes 3 GB of memory, not 6.

use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

use onnx_protobuf::TensorProto;
use vigil_engine::{DType, Element, Tensor};

use crate::error::{ImportError, Result};

/// How many bytes are read at a time (a multiple of every element size).
const CHUNK: usize = 1 << 20;

/// Reads external tensors relative to one model file.
#[derive(Debug)]
pub struct ExternalData {
    /// The model file (named in errors).
    model: PathBuf,
    /// Its directory, where every location must lead.
    dir: PathBuf,
    /// Files whose checksum has been verified already.
    verified: HashSet<PathBuf>,
}

/// The `external_data` entries of one tensor.
#[derive(Debug, Default, PartialEq, Eq)]
struct Entry {
    location: String,
    offset: u64,
    length: Option<u64>,
    checksum: Option<String>,
}

impl ExternalData {
    /// External tensors of the model at `model` (a bare file name means
    /// the current directory).
    pub fn new(model: &Path) -> ExternalData {
        let dir = match model.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        ExternalData {
            model: model.to_path_buf(),
            dir,
            verified: HashSet::new(),
        }
    }

    fn err(&self, tensor: &str, msg: impl Into<String>) -> ImportError {
        ImportError::External {
            model: self.model.clone(),
            tensor: tensor.to_string(),
            msg: msg.into(),
        }
    }

    fn entry(&self, t: &TensorProto, name: &str) -> Result<Entry> {
        let mut e = Entry::default();
        let num = |k: &str, v: &str| {
            v.parse::<u64>()
                .map_err(|_| self.err(name, format!("'{k}' is '{v}', not a byte count")))
        };
        for kv in &t.external_data {
            match kv.key.as_str() {
                "location" => e.location = kv.value.clone(),
                "offset" => e.offset = num("offset", &kv.value)?,
                "length" => e.length = Some(num("length", &kv.value)?),
                "checksum" => e.checksum = Some(kv.value.to_ascii_lowercase()),
                _ => {}
            }
        }
        if e.location.is_empty() {
            return Err(self.err(name, "no 'location' given"));
        }
        Ok(e)
    }

    /// The file `location` names, refused unless it is inside the model's
    /// directory once symbolic links are resolved.
    fn file(&self, name: &str, location: &str) -> Result<PathBuf> {
        let outside = |why: &str| ImportError::ExternalOutside {
            model: self.model.clone(),
            tensor: name.to_string(),
            location: location.to_string(),
            why: why.to_string(),
        };
        let rel = Path::new(location);
        if !rel
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(outside("is not a relative path inside the model's directory"));
        }
        let path = self.dir.join(rel);
        let io = |e: std::io::Error| self.err(name, format!("{}: {e}", path.display()));
        let dir = self.dir.canonicalize().map_err(io)?;
        let real = path.canonicalize().map_err(io)?;
        if !real.starts_with(&dir) {
            return Err(outside(
                "leads outside the model's directory through a symbolic link",
            ));
        }
        if !real.is_file() {
            return Err(self.err(name, format!("{} is not a file", path.display())));
        }
        Ok(real)
    }

    /// Checks the SHA-1 of the whole file once per file.
    fn verify(&mut self, name: &str, file: &Path, want: &str) -> Result<()> {
        use sha1::{Digest, Sha1};
        if self.verified.contains(file) {
            return Ok(());
        }
        let io = |e: std::io::Error| self.err(name, format!("{}: {e}", file.display()));
        let mut f = std::fs::File::open(file).map_err(io)?;
        let mut h = Sha1::new();
        let mut buf = vec![0u8; CHUNK];
        loop {
            let k = f.read(&mut buf).map_err(io)?;
            if k == 0 {
                break;
            }
            h.update(&buf[..k]);
        }
        let got: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        if got != want {
            return Err(self.err(
                name,
                format!("{}: checksum {got}, the model says {want}", file.display()),
            ));
        }
        self.verified.insert(file.to_path_buf());
        Ok(())
    }

    /// The tensor `t` (dtype `dtype`, `n` elements of shape `shape`) from
    /// its external file.
    pub fn read(&mut self, t: &TensorProto, name: &str, dtype: DType, shape: &[usize]) -> Result<Tensor> {
        let e = self.entry(t, name)?;
        let file = self.file(name, &e.location)?;
        if let Some(sum) = &e.checksum {
            self.verify(name, &file, sum)?;
        }
        let n = vigil_engine::tensor::limit::numel(shape).map_err(|x| self.err(name, x.to_string()))?;
        let packed = vigil_engine::small::file_bits(dtype);
        let need = match packed {
            Some(bits) => crate::tensor::packed_len(bits, n).map(|b| b as u64),
            None => (n as u64).checked_mul(dtype.size() as u64),
        }
        .ok_or_else(|| self.err(name, format!("dims {shape:?} need more bytes than memory holds")))?;
        if let Some(len) = e.length.filter(|&l| l != need) {
            return Err(self.err(
                name,
                format!("'length' is {len} bytes, {n} elements of {dtype} need {need}"),
            ));
        }
        let io = |x: std::io::Error| self.err(name, format!("{}: {x}", file.display()));
        let size = std::fs::metadata(&file).map_err(io)?.len();
        let end = e.offset.checked_add(need).filter(|&end| end <= size);
        if end.is_none() {
            return Err(self.err(
                name,
                format!(
                    "{}: bytes {}..{} are past its end ({size} bytes)",
                    e.location,
                    e.offset,
                    e.offset as u128 + need as u128
                ),
            ));
        }
        vigil_engine::tensor::limit::check_alloc(dtype, n).map_err(|x| self.err(name, x.to_string()))?;
        let mut f = std::fs::File::open(&file).map_err(io)?;
        f.seek(SeekFrom::Start(e.offset)).map_err(io)?;
        let mut src = f.take(need);
        let built = match dtype {
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
                let bytes = decode(&mut src, need as usize, u8::from_le_bytes).map_err(io)?;
                return crate::tensor::small_from_bytes(d, shape, n, &bytes).map_err(|m| self.err(name, m));
            }
            DType::BF16 => Tensor::from_vec(
                shape,
                decode(&mut src, n, |b| {
                    vigil_engine::bf16::from_bits(u16::from_le_bytes(b))
                })
                .map_err(io)?,
            ),
            DType::F32 => Tensor::from_vec(shape, decode(&mut src, n, f32::from_le_bytes).map_err(io)?),
            DType::F64 => Tensor::from_vec(shape, decode(&mut src, n, f64::from_le_bytes).map_err(io)?),
            DType::F16 => Tensor::from_vec(
                shape,
                decode(&mut src, n, |b| {
                    vigil_engine::f16::from_bits(u16::from_le_bytes(b))
                })
                .map_err(io)?,
            ),
            DType::I64 => Tensor::from_vec(shape, decode(&mut src, n, i64::from_le_bytes).map_err(io)?),
            DType::I32 => Tensor::from_vec(shape, decode(&mut src, n, i32::from_le_bytes).map_err(io)?),
            DType::I16 => Tensor::from_vec(shape, decode(&mut src, n, i16::from_le_bytes).map_err(io)?),
            DType::I8 => Tensor::from_vec(shape, decode(&mut src, n, i8::from_le_bytes).map_err(io)?),
            DType::U64 => Tensor::from_vec(shape, decode(&mut src, n, u64::from_le_bytes).map_err(io)?),
            DType::U32 => Tensor::from_vec(shape, decode(&mut src, n, u32::from_le_bytes).map_err(io)?),
            DType::U16 => Tensor::from_vec(shape, decode(&mut src, n, u16::from_le_bytes).map_err(io)?),
            DType::U8 => Tensor::from_vec(shape, decode(&mut src, n, u8::from_le_bytes).map_err(io)?),
            DType::Bool => Tensor::from_vec(shape, decode(&mut src, n, |b: [u8; 1]| b[0] != 0).map_err(io)?),
        };
        built.map_err(|x| self.err(name, x.to_string()))
    }
}

/// `n` little-endian elements of `W` bytes from `src`, read a chunk at a
/// time into one reused buffer and decoded into the result: the bytes
/// pass through memory once.
fn decode<T: Element, const W: usize>(
    src: &mut impl Read,
    n: usize,
    from_le: impl Fn([u8; W]) -> T,
) -> std::io::Result<Vec<T>> {
    let mut out = Vec::with_capacity(n);
    let mut buf = vec![0u8; CHUNK.min(n * W).max(W)];
    while out.len() < n {
        let want = ((n - out.len()) * W).min(buf.len());
        src.read_exact(&mut buf[..want])?;
        out.extend(buf[..want].chunks_exact(W).map(|c| {
            let mut b = [0u8; W];
            b.copy_from_slice(c);
            from_le(b)
        }));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use onnx_protobuf::tensor_proto::{DataLocation, DataType};
    use onnx_protobuf::StringStringEntryProto;
    use protobuf::Enum;

    pub(crate) fn external(name: &str, dims: &[i64], dt: DataType, kv: &[(&str, &str)]) -> TensorProto {
        let mut t = TensorProto::new();
        t.name = name.into();
        t.dims = dims.to_vec();
        t.data_type = dt.value();
        t.data_location = DataLocation::EXTERNAL.into();
        for (k, v) in kv {
            let mut e = StringStringEntryProto::new();
            e.key = k.to_string();
            e.value = v.to_string();
            t.external_data.push(e);
        }
        t
    }

    fn f32s(t: &Tensor) -> Vec<f32> {
        t.to_array::<f32>().unwrap().iter().copied().collect()
    }

    #[test]
    fn reads_the_byte_range_at_offset_and_length() {
        let d = tempfile::tempdir().unwrap();
        let vals = [1.5f32, -2.0, 3.25, 1e-3];
        let mut bytes = vec![7u8; 12];
        bytes.extend(vals.iter().flat_map(|v| v.to_le_bytes()));
        std::fs::write(d.path().join("w.bin"), &bytes).unwrap();
        let mut x = ExternalData::new(&d.path().join("m.onnx"));
        let t = external(
            "w",
            &[2, 2],
            DataType::FLOAT,
            &[("location", "w.bin"), ("offset", "12"), ("length", "16")],
        );
        let got = x.read(&t, "w", DType::F32, &[2, 2]).unwrap();
        assert_eq!(got.shape(), &[2, 2]);
        assert_eq!(f32s(&got), vals);
        // A length that disagrees with the dims, a range past the end.
        let t = external(
            "w",
            &[2, 2],
            DataType::FLOAT,
            &[("location", "w.bin"), ("length", "8")],
        );
        assert!(matches!(
            x.read(&t, "w", DType::F32, &[2, 2]),
            Err(ImportError::External { .. })
        ));
        let t = external(
            "w",
            &[2, 2],
            DataType::FLOAT,
            &[("location", "w.bin"), ("offset", "13")],
        );
        let e = x.read(&t, "w", DType::F32, &[2, 2]).unwrap_err();
        assert!(matches!(e, ImportError::External { .. }), "{e}");
        assert!(e.to_string().contains("past its end"), "{e}");
        // A missing file names the model and the tensor.
        let t = external("v", &[1], DataType::FLOAT, &[("location", "none.bin")]);
        let e = x.read(&t, "v", DType::F32, &[1]).unwrap_err().to_string();
        assert!(
            e.contains("m.onnx") && e.contains("'v'") && e.contains("none.bin"),
            "{e}"
        );
    }

    #[test]
    fn a_location_outside_the_model_directory_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let inner = d.path().join("model");
        std::fs::create_dir(&inner).unwrap();
        std::fs::write(d.path().join("secret.bin"), [0u8; 4]).unwrap();
        let mut x = ExternalData::new(&inner.join("m.onnx"));
        let abs = d.path().join("secret.bin").display().to_string();
        let mut locations = vec!["../secret.bin".to_string(), abs];
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(d.path().join("secret.bin"), inner.join("link.bin")).unwrap();
            locations.push("link.bin".into());
        }
        for loc in locations {
            let t = external("w", &[1], DataType::FLOAT, &[("location", &loc)]);
            let e = x.read(&t, "w", DType::F32, &[1]).unwrap_err();
            assert!(matches!(e, ImportError::ExternalOutside { .. }), "{loc}: {e}");
            let line = e.to_string();
            assert!(
                line.contains("m.onnx") && line.contains("'w'") && !line.contains('\n'),
                "{line}"
            );
        }
    }

    #[test]
    fn checksum_is_the_sha1_of_the_file() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("w.bin"), b"abc").unwrap();
        // FIPS 180's test vector: SHA-1("abc").
        let good = "A9993E364706816ABA3E25717850C26C9CD0D89D";
        let t = external(
            "w",
            &[3],
            DataType::UINT8,
            &[("location", "w.bin"), ("checksum", good)],
        );
        let mut x = ExternalData::new(&d.path().join("m.onnx"));
        let got = x.read(&t, "w", DType::U8, &[3]).unwrap();
        assert_eq!(got.to_array::<u8>().unwrap().as_slice().unwrap(), b"abc");
        let bad = good.replace('A', "B");
        let t = external(
            "w",
            &[3],
            DataType::UINT8,
            &[("location", "w.bin"), ("checksum", &bad)],
        );
        let mut y = ExternalData::new(&d.path().join("m.onnx"));
        let e = y.read(&t, "w", DType::U8, &[3]).unwrap_err();
        assert!(
            matches!(e, ImportError::External { .. }) && e.to_string().contains("checksum"),
            "{e}"
        );
    }

    /// Offsets past 2^31 and 2^32 (what a model over 2 GB needs) on a
    /// sparse file: the file is 4.5 GB long but holds two small writes, so
    /// the test is cheap where the file system supports holes.
    #[test]
    fn offsets_past_4_gib_read_from_a_sparse_file() {
        use std::io::Write;
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("big.bin");
        let f = std::fs::File::create(&path).unwrap();
        let (at_2g, at_4g) = ((1u64 << 31) + 4, (1u64 << 32) + 8);
        f.set_len(at_4g + 64).unwrap();
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        for (at, v) in [(at_2g, 7.5f64), (at_4g, -0.25f64)] {
            f.seek(SeekFrom::Start(at)).unwrap();
            f.write_all(&v.to_le_bytes()).unwrap();
            f.write_all(&(v * 2.0).to_le_bytes()).unwrap();
        }
        drop(f);
        let mut x = ExternalData::new(&d.path().join("m.onnx"));
        for (at, v) in [(at_2g, 7.5f64), (at_4g, -0.25f64)] {
            let off = at.to_string();
            let t = external(
                "w",
                &[2],
                DataType::DOUBLE,
                &[("location", "big.bin"), ("offset", &off)],
            );
            let got = x.read(&t, "w", DType::F64, &[2]).unwrap();
            assert_eq!(got.to_array::<f64>().unwrap().as_slice().unwrap(), &[v, v * 2.0]);
        }
    }
}
