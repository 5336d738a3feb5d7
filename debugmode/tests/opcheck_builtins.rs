//! `opcheck` over every built-in op: zero findings, and every op checked
//! on samples it takes (a built-in op that turns out wrong is fixed, or
//! listed below with the reason).

use vigil_debugmode::{opcheck_with, OpcheckConfig};
use vigil_engine::OpRegistry;

/// Built-in ops `opcheck` cannot give a sample they take, with the reason.
/// Their node tests run under validate and debug instead
/// (tests/onnx_suites.rs).
const NO_SAMPLES: &[(&str, &str)] = &[
    (
        "col2im",
        "image_shape and block_shape must describe x's columns exactly",
    ),
    (
        "affine_grid",
        "size must name theta's batch and as many spatial axes as theta maps",
    ),
    (
        "non_max_suppression",
        "boxes need a last axis of 4; sampled dimensions stop at 3",
    ),
    ("lstm", "w needs 4·hidden_size rows; sampled dimensions stop at 3"),
    ("rnn", "x, w and r need related shapes ([seq, batch, in], [dirs, H, in], [dirs, H, H]) samples do not draw"),
    ("gru", "x, w and r need related shapes ([seq, batch, in], [dirs, 3·H, in], [dirs, 3·H, H]) samples do not draw"),
    ("rotary_embedding", "the rotated head size must be even and the cos/sin caches match it; samples do not draw that"),
    ("deform_conv", "offset must be [N, og·kH·kW·2, oH, oW] for x, w and the window; samples do not draw that"),
    ("roi_align", "rois need a last axis of 4; sampled dimensions stop at 3"),
    ("mel_weight_matrix", "three integer scalars and two float scalars; samples give every input one dtype"),
    (
        "reverse_sequence",
        "every length must lie within the time axis; sampled integers are -5..=5",
    ),
    (
        "image_decoder",
        "encoded_stream must hold a whole encoded image; sampled bytes never do",
    ),
];

#[test]
fn every_builtin_op_passes_opcheck() {
    let registry = OpRegistry::builtin();
    let cfg = OpcheckConfig {
        cases: 12,
        gradient_samples: 2,
        ..OpcheckConfig::default()
    };
    let mut failed = Vec::new();
    let mut names: Vec<&str> = registry.names().collect();
    names.sort();
    assert!(names.len() > 150, "{}", names.len());
    for op in names {
        let r = opcheck_with(&registry, op, &cfg).unwrap();
        if let Some(why) = &r.not_checked {
            failed.push(format!("{op}: not checked: {why}"));
        } else if !r.findings.is_empty() {
            let sample = r.failing.as_ref().map(|s| s.describe()).unwrap_or_default();
            let f = &r.findings[0];
            failed.push(format!("{op}: {} on {sample}: {}", f.kind, f.message));
        } else if r.ran == r.errors && !NO_SAMPLES.iter().any(|(o, _)| *o == op) {
            failed.push(format!(
                "{op}: no sample ran ({} refused, {} failed: {:?})",
                r.rejected, r.errors, r.first_error
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "{} ops fail opcheck:\n{}",
        failed.len(),
        failed.join("\n")
    );
}
