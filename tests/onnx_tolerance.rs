//! The tolerance policy for real models (docs/onnx.md, "Tolerances for real
//! models"): an output that misses ONNX's atol only by rounding passes once
//! judged against the f64 evaluation of the same graph, and a wrong result
//! still fails.

use std::path::Path;

use vigil::runner::{run_case, Mode, RunConfig, ToleranceOverrides};
use vigil::suite::CaseRef;
use vigil_reports::Status;

const K: usize = 4096;

/// `y = x · w` (a [1, K] by [K, 1] matmul) whose terms are about ±1000 and
/// cancel (the last one is minus the sum of the others), plus `bias` added to the result (0 for the correct graph; a
/// non-zero bias stands for a kernel that is off by it). The expected
/// output is what another f32 engine gives for the correct graph: the
/// products summed one by one in f32, the positive ones first.
fn write_case(dir: &Path, bias: f32) -> (f64, f32) {
    let mut state = 0x2545F4914F6CDD1Du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let x: Vec<f32> = (0..K)
        .map(|i| {
            let m = 1000.0 + next();
            if i % 2 == 0 {
                m
            } else {
                -m
            }
        })
        .collect();
    let mut x = x;
    let mut w: Vec<f32> = (0..K).map(|_| 1.0 + next() * 1e-3).collect();
    // The last term cancels the others, so the result is small.
    let rest: f64 = x[..K - 1]
        .iter()
        .zip(&w)
        .map(|(&a, &b)| a as f64 * b as f64)
        .sum();
    x[K - 1] = -rest as f32;
    w[K - 1] = 1.0;
    let exact: f64 = x.iter().zip(&w).map(|(&a, &b)| a as f64 * b as f64).sum();
    // The other engine adds the positive products first, then the negative
    // ones: its partial sums reach about 2e6, where f32's spacing is 0.25.
    let mut other = 0f32;
    for sign in [1.0f32, -1.0] {
        for (&a, &b) in x.iter().zip(&w).filter(|(&a, _)| a * sign > 0.0) {
            other += a * b;
        }
    }
    let graph = format!(
        r#"{{"format": "vigil-graph/1", "name": "cancel",
  "inputs": [{{"name": "x", "dtype": "f32", "shape": [1, {K}]}}, {{"name": "w", "dtype": "f32", "shape": [{K}, 1]}}],
  "constants": [{{"name": "bias", "dtype": "f32", "shape": [1, 1], "data": [{bias:e}]}}],
  "nodes": [
    {{"name": "dot", "op": "matmul", "inputs": ["x", "w"], "outputs": ["s"]}},
    {{"name": "shift", "op": "add", "inputs": ["s", "bias"], "outputs": ["y"]}}
  ],
  "outputs": ["y"]}}"#
    );
    std::fs::create_dir_all(dir.join("inputs")).unwrap();
    std::fs::create_dir_all(dir.join("expected")).unwrap();
    std::fs::write(dir.join("graph.json"), graph).unwrap();
    let t = |shape: &[usize], v: Vec<f32>| vigil::engine::Tensor::from_vec(shape, v).unwrap();
    t(&[1, K], x).write_npy(dir.join("inputs/x.npy")).unwrap();
    t(&[K, 1], w).write_npy(dir.join("inputs/w.npy")).unwrap();
    t(&[1, 1], vec![other])
        .write_npy(dir.join("expected/y.npy"))
        .unwrap();
    (exact, other)
}

fn run(dir: &Path, f64_reference: bool) -> vigil_reports::Case {
    let case = CaseRef {
        path: dir.display().to_string(),
        location: dir.to_path_buf(),
    };
    let mut cfg = RunConfig::new(
        Mode::Plain,
        ToleranceOverrides {
            rtol: Some(vigil::onnx_suite::ONNX_RTOL),
            atol: Some(vigil::onnx_suite::ONNX_ATOL),
        },
    );
    cfg.f64_reference = f64_reference;
    run_case(&case, &cfg, &vigil::default_registry())
}

#[test]
fn a_result_off_by_rounding_passes_against_the_f64_evaluation() {
    let tmp = tempfile::tempdir().unwrap();
    let (exact, other) = write_case(tmp.path(), 0.0);
    // The other engine's own error is rounding of terms near 1000, far past
    // atol 1e-7 and rtol 1e-3 of the small result.
    let own = (other as f64 - exact).abs();
    assert!(own > 1e-4 && own > 1e-3 * exact.abs(), "{own} {exact}");
    let plain = run(tmp.path(), false);
    assert_eq!(plain.status, Status::Fail, "{:?}", plain.findings);
    let judged = run(tmp.path(), true);
    assert_eq!(judged.status, Status::Pass, "{:?}", judged.findings);
    // The report keeps both sides' distance from the f64 evaluation.
    let errors = judged.outputs[0].f64_reference.unwrap();
    assert!((errors.expected - own).abs() <= 1e-3 * own, "{errors:?} {own}");
    assert!(errors.output < own, "{errors:?}");
    let atol = judged.outputs[0].atol.unwrap();
    assert!(
        atol > vigil::onnx_suite::ONNX_ATOL && atol <= 2.0 * own * 1.0001,
        "{atol} {own}"
    );
}

#[test]
fn a_wrong_result_still_fails_against_the_f64_evaluation() {
    let tmp = tempfile::tempdir().unwrap();
    // Off by 100, a tenth of one term: the f64 evaluation runs the same
    // wrong graph, so the reference looks far from it, farther than any
    // rounding of Vigil's, and nothing is loosened. (An error smaller than
    // the reference's own rounding cannot be told from rounding.)
    write_case(tmp.path(), 100.0);
    let r = run(tmp.path(), true);
    assert_eq!(r.status, Status::Fail, "{:?}", r.outputs);
    assert_eq!(r.outputs[0].atol, Some(vigil::onnx_suite::ONNX_ATOL));
    // Judged, and the reference found far from the f64 evaluation, which
    // the finding says.
    let errors = r.outputs[0].f64_reference.unwrap();
    assert!(errors.expected > 90.0 && errors.output < 1.0, "{errors:?}");
    let msg = &r.findings[0].message;
    assert!(
        msg.contains("f64 evaluation") && msg.contains("atol stays"),
        "{msg}"
    );
    assert!(
        r.findings.iter().any(|f| f.kind.as_str() == "output_mismatch"),
        "{:?}",
        r.findings
    );
}

/// `model_atol` on one element: the f64 evaluation at 0, the reference
/// off by 1e-5, Vigil off by `own` the other way.
fn loosened(own: f32) -> (f64, bool) {
    let t = |v: f32| vigil::engine::Tensor::from_vec(&[1], vec![v]).unwrap();
    let (exact, want, got) = (
        vigil::engine::Tensor::from_vec(&[1], vec![0.0f64]).unwrap(),
        t(1e-5),
        t(-own),
    );
    let m = vigil::runner::model_atol(&got, &want, &exact, 1e-7).unwrap();
    let (atol, errors) = (m.atol, m.errors);
    assert!(m.rounding);
    assert!((errors.expected - 1e-5).abs() < 1e-9 && (errors.output - own as f64).abs() < 1e-9);
    let c = vigil::engine::compare::compare(&got, &want, vigil::engine::compare::Tolerance::new(0.0, atol))
        .unwrap();
    (atol, c.mismatched == 0)
}

#[test]
fn vigils_own_error_counts_up_to_twice_the_references() {
    // Twice as far from the f64 evaluation as the reference, on the other
    // side of it: the errors add, and the output passes.
    let (atol, pass) = loosened(2e-5);
    assert!(pass && (atol - 3e-5).abs() < 1e-9, "{atol}");
    // Five times as far: only twice the reference's error counts.
    let (atol, pass) = loosened(5e-5);
    assert!(!pass && (atol - 3e-5).abs() < 1e-9, "{atol}");
}
