//! The `train` suite (whole training steps built with `build_step`) under
//! `vigil run` and `vigil debug`, the gradient check on those steps, and
//! the `train_mlp` example with `--debug`.

mod common;

#[allow(dead_code)]
#[path = "../examples/train_mlp.rs"]
mod train_mlp;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use common::{stderr, vigil};
use serde_json::Value;
use vigil::debugmode::{DebugConfig, DebugMode, GradRules};
use vigil::engine::{Graph, OpRegistry, Tensor};
use vigil::findings::Kind;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The case directories of suites/train, sorted.
fn cases() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("suites/train"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("graph.json").is_file())
        .collect();
    v.sort();
    v
}

/// A case's step graph and its inputs.
fn load(case: &Path) -> (Graph, HashMap<String, Tensor>) {
    let g = Graph::load(case.join("graph.json"), &OpRegistry::builtin()).unwrap();
    let feeds = g
        .inputs()
        .map(|v| {
            let name = g.var(v).name.clone();
            let t = Tensor::read_npy(case.join(format!("inputs/{name}.npy"))).unwrap();
            (name, t)
        })
        .collect();
    (g, feeds)
}

fn json(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: stderr: {}", stderr(o)))
}

#[test]
fn the_suite_passes_in_the_default_mode_with_zero_findings() {
    let n = cases().len();
    assert!(n >= 5, "{n} cases");
    let o = vigil(&["run", "suites/train", "--format", "json", "-q"]);
    let r = json(&o);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    assert_eq!(r["mode"], "debug");
    let s = &r["summary"];
    assert_eq!(s["cases"], n);
    assert_eq!(s["passed"], n, "{}", serde_json::to_string_pretty(&r).unwrap());
    assert_eq!(s["findings_by_kind"], serde_json::json!({}));
}

#[test]
fn every_case_passes_vigil_debug_with_every_check() {
    for case in cases() {
        let path = case.strip_prefix(root()).unwrap().to_str().unwrap().to_string();
        let o = vigil(&["debug", &path, "--format", "json"]);
        let r = json(&o);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{path}: {}",
            serde_json::to_string_pretty(&r).unwrap()
        );
        assert_eq!(r["summary"]["passed"], 1, "{path}");
        assert_eq!(r["summary"]["findings_by_kind"], serde_json::json!({}), "{path}");
        // The report says what the check covered: every value compared and
        // the extra runs (orders, buffers, finite differences). The step
        // graphs carry their in-place updates already, so the pass has
        // nothing left to rewrite.
        let d = &r["cases"][0]["debug"];
        let n = |k: &str| {
            d[k].as_u64()
                .unwrap_or_else(|| panic!("{path}: debug.{k} in {d}"))
        };
        assert!(
            n("compared") > 0 && n("compared") == n("exact") + n("tolerated"),
            "{path}: {d}"
        );
        assert_eq!(n("nodes"), n("compared"), "{path}: one value per node here: {d}");
        assert!(n("reruns") >= 20, "{path}: {d}");
        assert!(n("peak_lockstep_bytes") >= n("peak_inplace_bytes"), "{path}: {d}");
    }
}

#[test]
fn the_gradient_check_builds_the_steps_gradients_with_autodiff() {
    for case in cases() {
        let (g, feeds) = load(&case);
        let cfg = DebugConfig::default().with_checks("gradient").unwrap();
        let r = DebugMode::new(cfg).check(&g, &feeds).unwrap();
        assert!(r.findings.is_empty(), "{}: {:#?}", case.display(), r.findings);
        // Central differences probe every parameter: many runs beyond the two.
        assert!(
            r.stats.reruns >= 20,
            "{}: {} reruns",
            case.display(),
            r.stats.reruns
        );
    }
}

#[test]
fn a_wrong_relu_rule_shows_on_the_hidden_layer_of_a_step() {
    // relu's rule passes the gradient through unchanged: the hidden layer's
    // gradients are wrong (dead units get one), the output layer's are not.
    let (g, feeds) = load(&root().join("suites/train/mlp_sgd_f32"));
    let mut rules = vigil_autodiff::GradRegistry::builtin();
    rules.register("relu", |c| Ok(vec![Some(c.grad()?.clone())]));
    let cfg = DebugConfig {
        autodiff: GradRules(vigil_autodiff::Autodiff::new(OpRegistry::builtin(), rules)),
        ..DebugConfig::default().with_checks("gradient").unwrap()
    };
    let r = DebugMode::new(cfg).check(&g, &feeds).unwrap();
    assert!(
        r.findings.iter().all(|f| f.kind == Kind::GRADIENT_MISMATCH),
        "{:#?}",
        r.findings
    );
    assert!(r
        .findings
        .iter()
        .all(|f| f.details["gradient_from"] == "autodiff"));
    let params: BTreeSet<&str> = r
        .findings
        .iter()
        .map(|f| f.details["param"].as_str().unwrap())
        .collect();
    assert_eq!(
        params,
        BTreeSet::from(["b_hidden", "w_hidden"]),
        "{:#?}",
        r.findings
    );
}

#[test]
fn train_mlp_with_debug_runs_debugmode_on_the_step_and_writes_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = train_mlp::run(&train_mlp::Options {
        epochs: 3,
        seed: 1,
        debug_every: Some(10),
        out_dir: dir.path().to_path_buf(),
    })
    .unwrap();
    assert_eq!(out.findings, 0);
    let d = out.debug.expect("a debug outcome");
    // 120 training rows in batches of 16: 8 iterations an epoch, 24 in all,
    // so iterations 0, 10 and 20 run under DebugMode.
    assert_eq!((d.runs, d.findings, d.error.as_deref()), (3, 0, None));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&d.report).unwrap()).unwrap();
    assert_eq!(report["debug_runs"], 3);
    assert_eq!(report["findings"], serde_json::json!([]));
    assert!(report["error"].is_null());
    assert!(out.svg.is_file() && out.history.is_file());
}

#[test]
fn train_mlp_reaches_95_percent_for_three_seeds() {
    for seed in 1..=3 {
        let dir = tempfile::tempdir().unwrap();
        let out = train_mlp::run(&train_mlp::Options {
            epochs: 100,
            seed,
            debug_every: None,
            out_dir: dir.path().to_path_buf(),
        })
        .unwrap();
        assert_eq!(out.findings, 0, "seed {seed}");
        assert!(
            out.accuracy >= 0.95,
            "seed {seed}: test accuracy {}",
            out.accuracy
        );
        assert!(out.debug.is_none());
    }
}
