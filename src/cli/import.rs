//! `vigil import MODEL.onnx --out CASE_DIR`: an ONNX model as a
//! `vigil-graph/1` case (see docs/onnx.md).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use vigil_onnx::{import_path, source_for, Initializers, InputSource, Options};

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
    /// Specialize the model on this shape of input NAME (repeatable), as
    /// on a data set's input shapes: symbolic dims become fixed, and the
    /// shape arithmetic on them folds.
    #[arg(long = "shape", value_name = "NAME=D0,D1,...", value_parser = crate::onnx_suite::parse_shape)]
    shapes: Vec<(String, Vec<usize>)>,
    /// Whether float initializers become constants or parameters.
    #[arg(long, value_enum, default_value = "constants")]
    initializers_as: InitializersAs,
}

fn source(a: &ImportArgs) -> Result<InputSource> {
    match source_for(&a.model, a.data_set, a.random_inputs)? {
        Some(src) => Ok(src),
        None => bail!(
            "{}: no test_data_set_N/ beside the model; give --random-inputs SEED",
            a.model.display()
        ),
    }
}

pub fn run(a: ImportArgs) -> Result<ExitCode> {
    let src = source(&a)?;
    let opts = Options {
        initializers: match a.initializers_as {
            InitializersAs::Constants => Initializers::Constants,
            InitializersAs::Parameters => Initializers::Parameters,
        },
        shapes: a.shapes.clone(),
        ..Options::default()
    };
    // A data set's inputs stand in where an op needs an import-time
    // constant, as under `vigil run`.
    let model = import_path(&a.model, &opts, &src)?;
    crate::onnx_suite::write_test_case(&model, &src, &a.model, &a.out)?;
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
