//! `vigil import MODEL.onnx --out CASE_DIR`: an ONNX model as a
//! `vigil-graph/1` case (see docs/onnx.md).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use vigil_onnx::{data_sets, import_for, read_model, write_case, Initializers, InputSource, Options};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum InitializersAs {
    Constants,
    Parameters,
}

#[derive(Args)]
pub struct ImportArgs {
    /// The ONNX model.
    model: PathBuf,
    /// The case directory to write (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Which `test_data_set_N/` beside the model gives inputs and expected
    /// outputs (default: the first one).
    #[arg(long, value_name = "N", conflicts_with = "random_inputs")]
    data_set: Option<usize>,
    /// Generate inputs from SEED instead (no expected outputs).
    #[arg(long, value_name = "SEED")]
    random_inputs: Option<u64>,
    /// Whether float initializers become constants or parameters.
    #[arg(long, value_enum, default_value = "constants")]
    initializers_as: InitializersAs,
}

fn source(a: &ImportArgs) -> Result<InputSource> {
    if let Some(seed) = a.random_inputs {
        return Ok(InputSource::Random(seed));
    }
    let dir = a.model.parent().map(PathBuf::from).unwrap_or_default();
    let sets = data_sets(&dir);
    if let Some(n) = a.data_set {
        let want = dir.join(format!("test_data_set_{n}"));
        if !want.is_dir() {
            bail!("{}: no such data set", want.display());
        }
        return Ok(InputSource::DataSet(want));
    }
    if let Some(first) = sets.into_iter().next() {
        return Ok(InputSource::DataSet(first));
    }
    let stem = a
        .model
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let outs: Vec<PathBuf> = (0..)
        .map(|k| dir.join(format!("{stem}_output_{k}.pb")))
        .take_while(|p| p.is_file())
        .collect();
    if !outs.is_empty() {
        return Ok(InputSource::Dummy(outs));
    }
    bail!(
        "{}: no test_data_set_N/ beside the model; give --random-inputs SEED",
        a.model.display()
    )
}

pub fn run(a: ImportArgs) -> Result<ExitCode> {
    let src = source(&a)?;
    let opts = Options {
        initializers: match a.initializers_as {
            InitializersAs::Constants => Initializers::Constants,
            InitializersAs::Parameters => Initializers::Parameters,
        },
    };
    // A data set's inputs stand in where an op needs an import-time
    // constant, as under `vigil run`.
    let model = import_for(&read_model(&a.model)?, &opts, &src)?;
    write_case(&model, &src, &a.out)?;
    super::emit(&format!(
        "{}: {}, {}, {} -> {}\n",
        a.model.display(),
        vigil_reports::plural(model.file.nodes.len() as u64, "node"),
        vigil_reports::plural(model.inputs.len() as u64, "input"),
        vigil_reports::plural(model.outputs.len() as u64, "output"),
        a.out.display()
    ))?;
    Ok(ExitCode::SUCCESS)
}
