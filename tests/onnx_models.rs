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
    // A transformer with a mask, an audio encoder, a depthwise-conv CNN, a
    // vision transformer and a dynamically quantized transformer.
    for name in [
        "bert",
        "gpt2",
        "wav2vec2",
        "mobilenet_v3_small_half",
        "vit",
        "bert_dynamic_int8",
    ] {
        assert!(
            suites.cases.iter().any(|c| c.path.contains(&format!("/{name}/"))),
            "no case of {name}"
        );
    }
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

/// `vigil run --shape NAME=… --random-inputs SEED`: a model with symbolic
/// dims is specialized on the given shapes and fed generated inputs, one
/// case per model; a shape for an input the model lacks is an errored case.
#[test]
fn run_specializes_models_on_given_shapes_with_random_inputs() {
    use vigil::onnx_suite::ImportSettings;
    let Some(dir) = fixtures() else { return };
    let bert = dir.join("bert");
    let settings = ImportSettings {
        shapes: vec![
            ("input_ids".into(), vec![1, 5]),
            ("attention_mask".into(), vec![1, 5]),
        ],
        random_inputs: Some(3),
    };
    let suites = Suites::discover_with(std::slice::from_ref(&bert), &settings).unwrap();
    assert_eq!(suites.cases.len(), 1);
    assert!(
        suites.cases[0].path.ends_with("model.onnx"),
        "{}",
        suites.cases[0].path
    );
    let registry = vigil::default_registry();
    let r = suites.run_case(
        &suites.cases[0],
        &RunConfig::new(Mode::Validate, ToleranceOverrides::default()),
        &registry,
    );
    assert_eq!((r.status, r.findings.len()), (Status::Pass, 0), "{:?}", r.error);

    let settings = ImportSettings {
        shapes: vec![("no_such_input".into(), vec![1])],
        random_inputs: Some(0),
    };
    let suites = Suites::discover_with(&[bert], &settings).unwrap();
    let r = suites.run_case(
        &suites.cases[0],
        &RunConfig::new(Mode::Plain, ToleranceOverrides::default()),
        &registry,
    );
    assert_eq!(r.status, Status::Error);
    assert!(r.error.unwrap_or_default().contains("no_such_input"));
}
