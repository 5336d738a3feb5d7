//! Writing an imported model as a `vigil-graph/1` case directory:
//! `graph.json`, `constants/` and `parameters/` (values over
//! [`INLINE_LIMIT`] elements, as `.npy`), `inputs/*.npy` and
//! `expected/*.npy`.

use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use vigil_engine::graph::ValueDecl;
use vigil_engine::{DType, Tensor, TypeInfo};

use crate::error::{ImportError, Result};
use crate::import::Imported;
use crate::model::read_tensor_file;
use crate::tensor::to_tensor;

/// Values with at most this many elements are written inline in graph.json.
pub const INLINE_LIMIT: usize = 16;

/// The declaration of a constant or parameter: inline when small, a
/// `fill` when every element is one value (a folded ConstantOfShape), else
/// an `.npy` file under `constants/` or `parameters/`.
pub fn value_decl(name: &str, t: &Tensor, param: bool) -> Result<ValueDecl> {
    if t.size() <= INLINE_LIMIT {
        return Ok(ValueDecl::inline(name, t)?);
    }
    if let Some(d) = ValueDecl::fill_of(name, t)? {
        return Ok(d);
    }
    Ok(ValueDecl {
        name: name.to_string(),
        dtype: Some(t.dtype()),
        shape: Some(t.shape().to_vec()),
        data: None,
        npy: Some(format!(
            "{}/{name}.npy",
            if param { "parameters" } else { "constants" }
        )),
        fill: None,
    })
}

/// Where the case's inputs come from.
#[derive(Clone, Debug)]
pub enum InputSource {
    /// `input_K.pb` / `output_K.pb` of an ONNX test data set directory.
    DataSet(PathBuf),
    /// Uniform values in [0, 1) (floats) or 0..10 (integers) from a seed; no expected outputs.
    Random(u64),
    /// ONNX's dummy input for the `light` models (`arange(n) / n`,
    /// unknown dims as 1), with the expected outputs in these files.
    Dummy(Vec<PathBuf>),
}

/// The directory of the model file `model`: `.` for a bare file name
/// (whose `Path::parent` is the empty path, which lists nothing).
pub fn model_dir(model: &Path) -> PathBuf {
    match model.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Where a case made from the model file `model` takes its inputs:
/// `--random-inputs SEED` when `random` is given, else data set `N` (or
/// the first `test_data_set_*/` beside the model), else the onnx package's
/// `light` outputs beside it; `None` when there is none of these.
pub fn source_for(model: &Path, data_set: Option<usize>, random: Option<u64>) -> Result<Option<InputSource>> {
    if !model.is_file() {
        return Err(ImportError::Io {
            path: model.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such model file"),
        });
    }
    if let Some(seed) = random {
        return Ok(Some(InputSource::Random(seed)));
    }
    let dir = model_dir(model);
    if let Some(n) = data_set {
        let want = dir.join(format!("test_data_set_{n}"));
        if !want.is_dir() {
            return Err(ImportError::Io {
                path: want,
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such data set"),
            });
        }
        return Ok(Some(InputSource::DataSet(want)));
    }
    if let Some(first) = data_sets(&dir).into_iter().next() {
        return Ok(Some(InputSource::DataSet(first)));
    }
    Ok(light_outputs(model).map(InputSource::Dummy))
}

/// The `light_X_output_K.pb` files beside `light_X.onnx`, if any.
pub fn light_outputs(model: &Path) -> Option<Vec<PathBuf>> {
    let stem = model.file_stem()?.to_str()?;
    let dir = model_dir(model);
    let v: Vec<PathBuf> = (0..)
        .map(|k| dir.join(format!("{stem}_output_{k}.pb")))
        .take_while(|p| p.is_file())
        .collect();
    (!v.is_empty()).then_some(v)
}

/// One of ONNX's test-data sets beside a model, in name order.
pub fn data_sets(model_dir: &Path) -> Vec<PathBuf> {
    let model_dir = if model_dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        model_dir
    };
    let mut v: Vec<PathBuf> = std::fs::read_dir(model_dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("test_data_set_"))
        })
        .collect();
    v.sort();
    v
}

pub(crate) fn numbered(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    (0..)
        .map(|k| dir.join(format!("{prefix}_{k}.pb")))
        .take_while(|p| p.is_file())
        .collect()
}

/// The concrete shape a generated input gets (unknown dims are 1).
fn concrete(ty: &TypeInfo) -> Vec<usize> {
    ty.shape
        .as_ref()
        .map_or(Vec::new(), |s| s.iter().map(|&d| d.max(1) as usize).collect())
}

fn random_input(ty: &TypeInfo, rng: &mut rand_chacha::ChaCha8Rng) -> Result<Tensor> {
    let shape = concrete(ty);
    let n: usize = shape.iter().product();
    Ok(match ty.dtype {
        DType::F32 => Tensor::from_vec(&shape, (0..n).map(|_| rng.gen::<f32>()).collect())?,
        DType::F64 => Tensor::from_vec(&shape, (0..n).map(|_| rng.gen::<f64>()).collect())?,
        d @ DType::F16 | d @ DType::BF16 => {
            Tensor::from_vec(&shape, (0..n).map(|_| rng.gen::<f32>()).collect())?.cast(d)?
        }
        d if d.is_small_float() => {
            Tensor::from_vec(&shape, (0..n).map(|_| rng.gen::<f32>()).collect())?.cast(d)?
        }
        // 0 and 1, which the 2-bit integers hold.
        d if d.is_small_int() => {
            Tensor::from_vec(&shape, (0..n).map(|_| rng.gen_range(0..2i64)).collect())?.cast(d)?
        }
        DType::Bool => Tensor::from_vec(&shape, (0..n).map(|_| rng.gen::<bool>()).collect())?,
        // Integers: 0..10, which every integer dtype holds.
        d => Tensor::from_vec(&shape, (0..n).map(|_| rng.gen_range(0..10i64)).collect())?.cast(d)?,
    })
}

fn dummy_input(ty: &TypeInfo, name: &str) -> Result<Tensor> {
    if ty.dtype != DType::F32 {
        return Err(ImportError::BadValue {
            name: name.to_string(),
            msg: "ONNX's dummy inputs are float only".into(),
        });
    }
    let shape = concrete(ty);
    let n: usize = shape.iter().product();
    Ok(Tensor::from_vec(
        &shape,
        (0..n).map(|i| (i as f64 / n as f64) as f32).collect(),
    )?)
}

/// The inputs and expected outputs for `m` from `src`, by Vigil name.
#[allow(clippy::type_complexity)]
pub fn feeds(m: &Imported, src: &InputSource) -> Result<(Vec<(String, Tensor)>, Vec<(String, Tensor)>)> {
    let read = |files: &[PathBuf], names: &[(String, String)], what: &str| -> Result<Vec<(String, Tensor)>> {
        if files.len() != names.len() {
            return Err(ImportError::BadValue {
                name: files
                    .first()
                    .map_or_else(|| what.to_string(), |f| f.display().to_string()),
                msg: format!("{} {what} files for {} graph {what}s", files.len(), names.len()),
            });
        }
        files
            .iter()
            .zip(names)
            .map(|(f, (_, var))| {
                Ok((
                    var.clone(),
                    to_tensor(&read_tensor_file(f)?, &f.display().to_string())?,
                ))
            })
            .collect()
    };
    match src {
        InputSource::DataSet(dir) => Ok((
            read(&numbered(dir, "input"), &m.inputs, "input")?,
            read(&numbered(dir, "output"), &m.outputs, "output")?,
        )),
        InputSource::Random(seed) => {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(*seed);
            let ins = m
                .inputs
                .iter()
                .zip(&m.input_types)
                .map(|((_, var), ty)| Ok((var.clone(), random_input(ty, &mut rng)?)))
                .collect::<Result<_>>()?;
            Ok((ins, Vec::new()))
        }
        InputSource::Dummy(outputs) => {
            let ins = m
                .inputs
                .iter()
                .zip(&m.input_types)
                .map(|((onnx, var), ty)| Ok((var.clone(), dummy_input(ty, onnx)?)))
                .collect::<Result<_>>()?;
            Ok((ins, read(outputs, &m.outputs, "output")?))
        }
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> ImportError + '_ {
    move |source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn write_npy(dir: &Path, name: &str, t: &Tensor) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    t.write_npy(dir.join(format!("{name}.npy")))?;
    Ok(())
}

/// Writes the case directory `out` for `m` with inputs from `src`.
pub fn write_case(m: &Imported, src: &InputSource, out: &Path) -> Result<()> {
    std::fs::create_dir_all(out).map_err(io(out))?;
    for (decls, dir) in [
        (&m.file.constants, "constants"),
        (&m.file.parameters, "parameters"),
    ] {
        for d in decls.iter().filter(|d| d.npy.is_some()) {
            if let Some(t) = m.values.get(&d.name) {
                write_npy(&out.join(dir), &d.name, t)?;
            }
        }
    }
    let (ins, expected) = feeds(m, src)?;
    for (name, t) in &ins {
        write_npy(&out.join("inputs"), name, t)?;
    }
    for (name, t) in &expected {
        write_npy(&out.join("expected"), name, t)?;
    }
    let json = serde_json::to_string_pretty(&m.file).map_err(|e| ImportError::BadValue {
        name: "graph.json".into(),
        msg: e.to_string(),
    })?;
    let path = out.join("graph.json");
    std::fs::write(&path, json).map_err(io(&path))?;
    Ok(())
}
