//! The onnx package's own test data through `vigil run`'s machinery: the
//! nine `light` models under plain, validate and debug, and the backend
//! node tests (`pytorch-operator`, `pytorch-converted`, `simple`) whose
//! ops Vigil imports. The data is found through `VIGIL_ONNX_DATA` (the
//! onnx package directory) or `python3 -c 'import onnx'`; without it each
//! test prints one skip line. `.ci/run` installs the package so CI runs them.
//!
//! The 1,884 generated node tests (`scripts/onnx_node_data.py OUT_DIR`, as
//! the wheel ships their generators but not their data) are found through
//! `VIGIL_ONNX_NODE_DATA` (that OUT_DIR) only: no Python is run for them.

use std::path::PathBuf;

use vigil::onnx_suite::{import_all, ONNX_ATOL, ONNX_RTOL};
use vigil::runner::{run_case, Mode, RunConfig, ToleranceOverrides};
use vigil::suite::CaseRef;
use vigil_reports::Status;

fn onnx_dir() -> Option<PathBuf> {
    if let Ok(d) = std::env::var("VIGIL_ONNX_DATA") {
        return Some(PathBuf::from(d)).filter(|p| p.join("backend/test/data").is_dir());
    }
    let out = std::process::Command::new("python3")
        .args(["-c", "import onnx, os; print(os.path.dirname(onnx.__file__))"])
        .output()
        .ok()?;
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (out.status.success() && dir.join("backend/test/data").is_dir()).then_some(dir)
}

fn data(sub: &str) -> Option<PathBuf> {
    match onnx_dir() {
        Some(d) => Some(d.join("backend/test/data").join(sub)),
        None => {
            println!("skipped: the onnx package's test data was not found (set VIGIL_ONNX_DATA or pip install onnx)");
            None
        }
    }
}

fn node_data() -> Option<PathBuf> {
    let dir = std::env::var("VIGIL_ONNX_NODE_DATA").ok().map(PathBuf::from);
    match dir.filter(|d| d.join("node").is_dir()) {
        Some(d) => Some(d.join("node")),
        None => {
            println!(
                "skipped: no generated ONNX node tests (set VIGIL_ONNX_NODE_DATA to the OUT_DIR of scripts/onnx_node_data.py)"
            );
            None
        }
    }
}

/// Runs every case (in parallel) and lists each that does not pass.
fn assert_all_pass_in_plain_mode(cases: &[CaseRef]) {
    use rayon::prelude::*;
    let registry = vigil::default_registry();
    let failing: Vec<String> = cases
        .par_iter()
        .map(|c| (c, run_case(c, &cfg(Mode::Plain), &registry)))
        .filter(|(_, r)| r.status != Status::Pass)
        .map(|(c, r)| {
            format!(
                "{}: {:?} {:?}",
                c.path,
                r.error,
                r.findings.first().map(|f| f.message.clone())
            )
        })
        .collect();
    assert!(
        failing.is_empty(),
        "{} of {} fail:\n{}",
        failing.len(),
        cases.len(),
        failing.join("\n")
    );
}

fn cfg(mode: Mode) -> RunConfig {
    RunConfig::new(
        mode,
        ToleranceOverrides {
            rtol: Some(ONNX_RTOL),
            atol: Some(ONNX_ATOL),
        },
    )
}

#[test]
fn the_nine_light_models_match_their_outputs_in_every_mode() {
    let Some(dir) = data("light") else { return };
    let cases = import_all(&[dir]).unwrap();
    assert!(cases.failed.is_empty(), "{:?}", cases.failed);
    assert_eq!(cases.cases.len(), 9);
    for mode in [Mode::Plain, Mode::Validate, Mode::Debug] {
        for c in &cases.cases {
            let r = run_case(c, &cfg(mode), &vigil::default_registry());
            assert_eq!(
                r.status,
                Status::Pass,
                "{} in {}: {:?} {:?}",
                c.path,
                mode.name(),
                r.error,
                r.findings
            );
        }
    }
}

/// Plain mode: under validate, test_operator_pow and test_operator_sqrt
/// also get the numerics listener's (correct) non_finite finding, since
/// their expected outputs hold NaN from negative inputs.
#[test]
fn every_imported_node_test_passes() {
    let Some(dir) = data("") else { return };
    let dirs: Vec<PathBuf> = ["pytorch-operator", "pytorch-converted", "simple"]
        .iter()
        .map(|s| dir.join(s))
        .collect();
    let cases = import_all(&dirs).unwrap();
    assert!(cases.cases.len() >= 90, "only {} imported", cases.cases.len());
    assert_all_pass_in_plain_mode(&cases.cases);
}

/// Every generated node test the importer takes (the table's supported
/// tests: its ops, dtypes and opset are Vigil's) matches ONNX's outputs;
/// every other one is refused with one line naming the node or value.
/// Plain mode, as above: under validate the numerics listener also (rightly)
/// flags the -inf of `test_reduce_log_sum*_empty_set`, which ONNX expects.
#[test]
fn every_supported_generated_node_test_passes() {
    let Some(dir) = node_data() else { return };
    let cases = import_all(&[dir]).unwrap();
    assert!(!cases.cases.is_empty(), "no node test imported");
    let multiline: Vec<&String> = cases
        .failed
        .iter()
        .map(|(_, e)| e)
        .filter(|e| e.contains('\n') || e.is_empty())
        .collect();
    assert!(multiline.is_empty(), "refusals must be one line: {multiline:?}");
    println!(
        "{} node tests imported, {} refused",
        cases.cases.len(),
        cases.failed.len()
    );
    assert_all_pass_in_plain_mode(&cases.cases);
}

/// The node tests of IsNaN, IsInf, Range, CumSum, CumProd, Trilu, GatherElements,
/// ScatterElements (and Scatter), ReduceProd, Hardmax, LayerNormalization,
/// RMSNormalization, Einsum, TopK, NegativeLogLikelihoodLoss,
/// SoftmaxCrossEntropyLoss, the quantized ops, GroupNormalization,
/// LpNormalization, OneHot, Compress, Attention, RotaryEmbedding,
/// TensorScatter and SwiGLU pass under validate and debug too, with no finding:
/// their kernels keep their declarations and write every output element.
#[test]
fn the_index_normalization_and_loss_node_tests_pass_in_every_mode() {
    let Some(dir) = node_data() else { return };
    const PREFIXES: [&str; 35] = [
        "test_isnan",
        "test_isinf",
        "test_range_",
        "test_cumsum",
        "test_cumprod",
        "test_tril",
        "test_triu",
        "test_gather_elements",
        "test_scatter_elements",
        "test_scatter_with",
        "test_reduce_prod",
        "test_hardmax",
        "test_layer_normalization",
        "test_rms_normalization",
        "test_scatter_without",
        "test_einsum",
        "test_nllloss",
        "test_sce",
        "test_top_k",
        "test_quantizelinear",
        "test_dequantizelinear",
        "test_dynamicquantizelinear",
        "test_matmulinteger",
        "test_convinteger",
        "test_qlinear",
        "test_group_normalization",
        "test_l1normalization",
        "test_l2normalization",
        "test_lpnormalization",
        "test_onehot",
        "test_compress",
        "test_attention",
        "test_rotary_embedding",
        "test_tensorscatter",
        "test_swiglu",
    ];
    let dirs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            PREFIXES.iter().any(|pre| name.starts_with(pre))
        })
        .collect();
    let cases = import_all(&dirs).unwrap();
    assert!(cases.cases.len() >= 297, "only {} imported", cases.cases.len());
    use rayon::prelude::*;
    let registry = vigil::default_registry();
    for mode in [Mode::Plain, Mode::Validate, Mode::Debug] {
        let bad: Vec<String> = cases
            .cases
            .par_iter()
            .map(|c| (c, run_case(c, &cfg(mode), &registry)))
            .filter(|(_, r)| r.status != Status::Pass || !r.findings.is_empty())
            .map(|(c, r)| format!("{}: {:?} {:?}", c.path, r.error, r.findings))
            .collect();
        assert!(
            bad.is_empty(),
            "{} in {}:\n{}",
            bad.len(),
            mode.name(),
            bad.join("\n")
        );
    }
}
