//! Real models exported with torch's defaults (`scripts/export_models.py`:
//! the dynamo exporter, weights in `model.onnx.data`, symbolic batch and
//! sequence dims for the transformers, random weights, onnxruntime's outputs
//! as the expected ones), committed under tests/fixtures/onnx-models/. Each
//! must import, match and give no finding in plain, validate and debug mode,
//! as `vigil run` runs it.

use std::path::PathBuf;

use vigil::runner::{Mode, RunConfig, Suites, ToleranceOverrides};
use vigil_reports::Status;

fn fixtures() -> Option<PathBuf> {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/onnx-models");
    if d.is_dir() {
        Some(d)
    } else {
        println!("skipped: no exported models in {}", d.display());
        None
    }
}

#[test]
fn exported_models_pass_in_every_mode() {
    let Some(dir) = fixtures() else { return };
    let suites = Suites::discover(&[dir]).unwrap();
    assert!(!suites.cases.is_empty());
    let registry = vigil::default_registry();
    for mode in [Mode::Plain, Mode::Validate, Mode::Debug] {
        for c in &suites.cases {
            let r = suites.run_case(c, &RunConfig::new(mode, ToleranceOverrides::default()), &registry);
            assert_eq!(
                (r.status, r.findings.len()),
                (Status::Pass, 0),
                "{} in {}: {:?} {:?}",
                c.path,
                mode.name(),
                r.error,
                r.findings
            );
        }
    }
}
